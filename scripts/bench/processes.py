"""Where the benchmark's children run, and with what environment.

Every child is `python -m scripts.bench.<module>` started in the
repository root, with the root first on PYTHONPATH: the project's packages
and this one import from the checkout, under this Python or the
tf.estimator 2.15 one alike. Standard library only.
"""

import os
import sys
from typing import Dict, List

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
