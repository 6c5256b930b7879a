# `make run` sets up the virtual environment and runs the default job;
# `make test` sets it up and runs the test suite. Both work on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: setup setup-test schedulers run test bench bench-quick bench-peers bench-distributed bench-canned bench-calls libraries libraries-215 clean

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

# Libraries whose own tests run on estimator_rt (scripts/tf_estimator_215/
# run_library_tests.py, run_easyrec.py) get an environment of their own,
# $(LIBRARIES_VENV), that sees everything of $(VENV) (a .pth file, as for
# $(RAY_VENV)): `make test` installs TF-GAN there, whose estimator tests
# tests/test_libraries.py runs; `make libraries` adds what the libraries the
# docs/libraries.md's table runs by script need. Their pinned TensorFlow and friends
# come from $(VENV) (--no-deps), the rest from pip, constrained to what
# $(VENV) has (nothing of it is replaced).
LIBRARIES_VENV := .venv-libraries
LIBRARIES_STAMP := $(LIBRARIES_VENV)/.installed
LIBRARIES_ALL_STAMP := $(LIBRARIES_VENV)/.installed-all
LIBRARY_TESTS := tensorflow-gan==2.1.0 tensorflow-probability==0.25.0 \
    tensorflow-hub==0.16.1
LIBRARY_TESTS_DEPS := cloudpickle decorator
# TF Lattice's canned estimators (2.0.13: 2.1.0 dropped them); a build of
# the Object Detection API (it has no release of its own) with what it
# imports; what TF-Ranking's tests import (TF-Ranking itself is in $(VENV));
# EasyRec's and the API's Python dependencies, and protoc.
LIBRARY_SCRIPTS := tensorflow-lattice==2.0.13 object-detection-by-ovi==0.0.1 \
    tf-models-official==2.15.0 tf-slim==1.1.0 lvis==0.5.3 gin-config==0.5.0 \
    opencv-python-headless==4.11.0.86 tensorflow-serving-api==2.15.1 \
    adanet==0.9.0 tensorflow-privacy==0.9.0 dp-accounting==0.4.3
LIBRARY_SCRIPTS_DEPS := pandas scikit-learn matplotlib graphviz future \
    pyyaml psutil pycocotools lxml contextlib2 grpcio-tools==1.85.1 \
    scipy mpmath
# The same on tf.estimator 2.15 (.venv-tf215, scripts/tf_estimator_215/
# make_venv.sh), made by `make libraries-215`, never by `make test`.
LIBRARIES_215_VENV := .venv-tf215-libraries
LIBRARIES_215_STAMP := $(LIBRARIES_215_VENV)/.installed
LIBRARY_TESTS_215 := tensorflow-gan==2.1.0 tensorflow-probability==0.23.0 \
    tensorflow-hub==0.16.1 $(LIBRARY_SCRIPTS) tensorflow-io==0.36.0 \
    $(LIBRARIES)
LIBRARY_TESTS_215_DEPS := decorator dm-tree matplotlib graphviz future \
    pyyaml psutil pycocotools lxml contextlib2 grpcio-tools==1.62.3 mpmath

setup-test: $(TEST_STAMP) $(RAY_STAMP) $(LIBRARIES_STAMP) schedulers

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

# make_libraries_venv VENV BASE_PYTHON: VENV sees BASE_PYTHON's packages,
# and a constraints file pins them for what pip installs into VENV.
define make_libraries_venv
	$(PYTHON) -m venv $(1)
	purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'; \
	echo "import site; site.addsitedir('$$($(2) -c "$$purelib")')" \
	    > "$$($(1)/bin/python -c "$$purelib")/estimator_rt_venv.pth"
	$(2) -m pip freeze --exclude-editable | grep '==' > $(1)/base-constraints.txt
endef

$(LIBRARIES_STAMP): $(TEST_STAMP)
	$(call make_libraries_venv,$(LIBRARIES_VENV),$(PY))
	$(LIBRARIES_VENV)/bin/python -m pip install --quiet --no-deps $(LIBRARY_TESTS)
	$(LIBRARIES_VENV)/bin/python -m pip install --quiet \
	    -c $(LIBRARIES_VENV)/base-constraints.txt $(LIBRARY_TESTS_DEPS)
	touch $(LIBRARIES_STAMP)

libraries: $(LIBRARIES_ALL_STAMP)

$(LIBRARIES_ALL_STAMP): $(LIBRARIES_STAMP)
	$(LIBRARIES_VENV)/bin/python -m pip install --quiet --no-deps \
	    $(LIBRARY_SCRIPTS) tensorflow-io==0.37.1
	$(LIBRARIES_VENV)/bin/python -m pip install --quiet \
	    -c $(LIBRARIES_VENV)/base-constraints.txt $(LIBRARY_SCRIPTS_DEPS)
	touch $(LIBRARIES_ALL_STAMP)

libraries-215: $(LIBRARIES_215_STAMP)

$(LIBRARIES_215_STAMP):
	bash scripts/tf_estimator_215/make_venv.sh
	$(call make_libraries_venv,$(LIBRARIES_215_VENV),.venv-tf215/bin/python)
	$(LIBRARIES_215_VENV)/bin/python -m pip install --quiet --no-deps $(LIBRARY_TESTS_215)
	$(LIBRARIES_215_VENV)/bin/python -m pip install --quiet \
	    -c $(LIBRARIES_215_VENV)/base-constraints.txt $(LIBRARY_TESTS_215_DEPS)
	touch $(LIBRARIES_215_STAMP)

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

# Every benchmark (scripts/bench/suite.py: eager and graph engines, TF1
# behaviour, canned estimators, calls, train_and_evaluate; about 20
# minutes on 2 quiet cores), each ratio beside the last recorded one in
# docs/benchmarks.json, a drop beyond the run's noise marked (exit 1).
# RECORD=1 writes this run's figures there (a quiet machine's only).
bench: setup
	bash scripts/tf_estimator_215/make_venv.sh
	$(PY) -m scripts.bench.suite $(if $(filter 1 yes true,$(RECORD)),--record)

# The runtime against the bare loop only (W1-W3; the old `make bench`).
bench-quick: setup
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

# What each call on one Estimator costs, against tf.estimator 2.15's.
bench-calls: setup
	bash scripts/tf_estimator_215/make_venv.sh
	$(PY) -m scripts.bench.calls

clean:
	rm -rf $(VENV) $(RAY_VENV) $(LIBRARIES_VENV) $(LIBRARIES_215_VENV) *.egg-info
