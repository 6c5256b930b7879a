# `make run` sets up the virtual environment and runs the default job;
# `make test` sets it up and runs the test suite. Both work on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: setup setup-test schedulers run test bench bench-peers bench-distributed bench-canned clean

setup: $(STAMP)

# The editable install also puts estimator_rt_compat.pth (the import hook
# that serves tf.estimator to every process of the environment, see
# estimator_rt/compat/startup.py) into $(VENV)'s site-packages.
$(STAMP): setup.cfg setup.py pyproject.toml estimator_rt/cluster/_bind_guard.c \
    estimator_rt_compat.pth
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Libraries built on tf.estimator that tests/test_libraries.py runs on
# estimator_rt. --no-deps: they pin TensorFlow releases that had
# tf.estimator, and need nothing the test environment lacks.
LIBRARIES := tensorflow-ranking==0.5.5 deepctr==0.9.4

# What only the tests need: Ray (the optional `ray` extra) for
# tests/test_ray.py, and a one-node Slurm (Debian's slurm-wlm and munge,
# installed as root if sbatch is missing) for tests/test_slurm.py, whose
# fixture starts the daemons and stops them afterwards.
#
# Ray gets an environment of its own, $(RAY_VENV), that sees everything
# of $(VENV) (a .pth file adds its site-packages) and adds Ray Train, which
# needs pandas and pyarrow: with pandas installed, Keras 3 imports it in
# every process that imports TensorFlow (0.3-0.5 s of CPU each, a few
# hundred processes in a test run); only the Ray tests' processes pay it.
RAY_VENV := .venv-ray
RAY_STAMP := $(RAY_VENV)/.installed
RAY_REQUIREMENT := ray[train]==2.60.0

setup-test: $(TEST_STAMP) $(RAY_STAMP) schedulers

$(TEST_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet --no-deps $(LIBRARIES)
	touch $(TEST_STAMP)

$(RAY_STAMP): $(TEST_STAMP)
	$(PYTHON) -m venv $(RAY_VENV)
	purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'; \
	echo "import site; site.addsitedir('$$($(PY) -c "$$purelib")')" \
	    > "$$($(RAY_VENV)/bin/python -c "$$purelib")/estimator_rt_venv.pth"
	$(RAY_VENV)/bin/python -m pip install --quiet '$(RAY_REQUIREMENT)'
	touch $(RAY_STAMP)

schedulers:
	sh scripts/slurm/local_slurm.sh install || echo "Slurm not installed \
	(needs root and apt-get): tests/test_slurm.py will skip"

run: setup
	$(PY) -m estimator_rt.main

# Three test processes (pytest-xdist) on the two cores the suite is made
# for: the multi-process tests spend much of their time waiting on their
# clusters (a lost task noticed, a grace period, servers coming up), and a
# third process fills that time. Each takes whole test files, so a file's
# module fixtures are built once; the slow multi-process files go first
# (tests/conftest.py) so that no process is left with a long tail.
#
# Bytecode is written and kept: the suite starts a few hundred Python
# processes, and compiling estimator_rt's modules from source costs each of
# them about 0.3 s of CPU (an environment that sets PYTHONDONTWRITEBYTECODE,
# as some containers do, would have every process compile them again).
TEST_PROCESSES ?= 3
test: setup setup-test
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m compileall -q estimator_rt \
	    model_fns input_fns scripts tests > /dev/null
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -n $(TEST_PROCESSES) \
	    --dist loadfile --no-loadscope-reorder --durations=25 tests

bench: setup
	$(PY) -m scripts.bench

# The peers: Keras fit, and tf.estimator 2.15 in its own environment
# (TensorFlow 2.15.1 + tensorflow-estimator 2.15.0), made here on demand,
# never by `make test`; make_venv.sh leaves a complete one as it is.
bench-peers: setup
	bash scripts/tf_estimator_215/make_venv.sh
	$(PY) -m scripts.bench --peers

# W2 on loopback clusters: bare TF2 program, runtime, standalone client.
bench-distributed: setup
	$(PY) -m scripts.bench --distributed

# The canned estimators against tf.estimator 2.15's, same program, same run.
bench-canned: setup
	bash scripts/tf_estimator_215/make_venv.sh
	$(PY) -m scripts.bench.canned

clean:
	rm -rf $(VENV) $(RAY_VENV) *.egg-info
