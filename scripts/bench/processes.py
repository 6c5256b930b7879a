"""Where the benchmark's children run, and with what environment.

Every child is `python -m scripts.bench.<module>` started in the
repository root, with the root first on PYTHONPATH: the project's packages
and this one import from the checkout, under this Python or the
tf.estimator 2.15 one alike; `run_child_process` runs one and reads its
result line (`protocol`). Standard library only.
"""

import os
import subprocess
import sys
import time
from typing import Dict, List

from scripts.bench.protocol import read_result
from scripts.bench.protocol import RESULT_PREFIX

# scripts/bench/processes.py -> the repository root.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def child_env() -> Dict[str, str]:
  """The environment of every child: the same for every side."""
  env = dict(os.environ)
  env['PYTHONPATH'] = REPO_ROOT + (
      os.pathsep + env['PYTHONPATH'] if env.get('PYTHONPATH') else '')
  # TensorFlow's C++ INFO/WARNING lines only add noise to stderr.
  env['TF_CPP_MIN_LOG_LEVEL'] = '2'
  # Unbuffered, so that a child killed on timeout still leaves its output.
  env['PYTHONUNBUFFERED'] = '1'
  return env


def module_command(module: str, *args: str,
                   python: str = sys.executable) -> List[str]:
  """`python -m scripts.bench.<module> args...` (run it in REPO_ROOT)."""
  return [python, '-m', f'scripts.bench.{module}', *args]


class ChildError(RuntimeError):
  """A benchmark child failed, timed out, or printed no result."""


def run_child_process(command: List[str], label: str, *, timeout_s: float,
                      env: Dict[str, str]) -> tuple:
  """Runs a child in REPO_ROOT; returns (its result dict, the wall time it
  was started at).

  Raises:
    ChildError: the child exited non-zero, ran past `timeout_s` (it is
      killed) or printed no result line; the message starts with `label`.
  """
  # Wall clock, not perf_counter: the child reports time.time() and the two
  # clocks must be the same one across processes.
  launched = time.time()
  process = subprocess.Popen(command, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env,
                             cwd=REPO_ROOT)
  try:
    stdout, stderr = process.communicate(timeout=timeout_s)
  except subprocess.TimeoutExpired:
    process.kill()
    stdout, stderr = process.communicate()
    raise ChildError(
        f'{label} ran past {timeout_s} s and was killed; stderr '
        f'tail:\n{stderr[-3000:]}') from None
  if process.returncode != 0:
    raise ChildError(
        f'{label} exited with {process.returncode}; stderr tail:\n'
        f'{stderr[-3000:]}')
  result = read_result(stdout)
  if result is None:
    raise ChildError(
        f'{label} printed no {RESULT_PREFIX.strip()} line; '
        f'stdout tail:\n{stdout[-2000:]}\nstderr tail:\n{stderr[-2000:]}')
  return result, launched
