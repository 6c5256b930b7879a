# `make run` sets up the virtual environment and runs the default job;
# `make test` sets it up and runs the test suite. Both work on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test bench clean

setup: $(STAMP)

$(STAMP): setup.cfg setup.py pyproject.toml estimator_rt/_bind_guard.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: setup
	$(PY) -m estimator_rt.main

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) scripts/benchmark.py

clean:
	rm -rf $(VENV) *.egg-info
