"""Shared test set-up.

The whole pytest process gets 2 logical CPU devices so that `mirrored` and
`central_storage` run 2 replicas without a GPU; this must happen before any
TensorFlow op runs, hence at import time here.
"""

import os
import subprocess
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')

import pytest  # pylint: disable=g-import-not-at-top

from estimator_rt.cluster import strategies  # pylint: disable=g-import-not-at-top

strategies.configure_cpu_devices(2)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_python(args, *, timeout=180, env=None, cwd=None):
  """Runs `python args...` in a fresh process; returns CompletedProcess.

  Bounded by `timeout` seconds (the process is killed past it). The repo
  root is on PYTHONPATH so `estimator_rt`, `model_fns` and `input_fns`
  import as in an installed checkout. `env`: variables to set on top of
  this process's environment; a value of None leaves that variable out
  (a user's shell without it).
  """
  full_env = dict(os.environ)
  full_env['PYTHONPATH'] = REPO_ROOT + os.pathsep + full_env.get(
      'PYTHONPATH', '')
  full_env.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')
  for name, value in (env or {}).items():
    if value is None:
      full_env.pop(name, None)
    else:
      full_env[name] = value
  return subprocess.run([sys.executable] + list(args), capture_output=True,
                        text=True, timeout=timeout, env=full_env,
                        cwd=cwd or REPO_ROOT, check=False)


@pytest.fixture
def python_runner():
  return run_python


# The test files that take longest (multi-process clusters, schedulers,
# fresh processes per case), slowest first, from `make test`'s durations.
# `make test` runs three test processes that each take whole files in
# collection order (-n 3 --dist loadfile --no-loadscope-reorder): handing
# out the long files first keeps one process from picking up a long file
# when the others have nothing left.
SLOWEST_FILES = (
    'test_slurm.py',
    'test_ray.py',
    'test_user_paths.py',
    'test_kubernetes.py',
    'test_launcher_restarts.py',
    'test_model_dir_faults.py',
    'test_standalone.py',
    'test_exact_resume.py',
    'test_preemption.py',
    'test_legacy_engine.py',
    'test_installed.py',
)


def pytest_collection_modifyitems(session, config, items):
  del session, config  # Unused.
  rank = {name: i for i, name in enumerate(SLOWEST_FILES)}
  # A stable sort: files keep their tests' order, the rest their own.
  items.sort(key=lambda item: rank.get(os.path.basename(str(item.fspath)),
                                       len(rank)))
