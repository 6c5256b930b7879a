r"""Runs the library programs of tests/libraries/ under tf.estimator 2.15.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.libraries_reference

Each program (tests/libraries/<name>_program.py) uses one library built on
tf.estimator (TF-Ranking, DeepCTR, TF-GAN, AdaNet) as its users do. This
runs each in the 2.15 environment (the library installed there with
`pip install --no-deps`) and records its `RESULT {json}` line, or the last
line of the error it ended with, into
tests/data/tf_estimator_215/libraries.json, which tests/test_libraries.py
compares estimator_rt's runs with.
"""

import json
import os
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
PROGRAMS = os.path.join(_REPO, 'tests', 'libraries')
OUTPUT = os.path.join(_REPO, 'tests', 'data', 'tf_estimator_215',
                      'libraries.json')
NAMES = ('tfranking', 'deepctr', 'tfgan', 'adanet')


def run(name: str) -> dict:
  """The program's RESULT, or {'error': its last line}."""
  with tempfile.TemporaryDirectory() as model_dir:
    done = subprocess.run(
        [sys.executable, os.path.join(PROGRAMS, f'{name}_program.py'),
         model_dir], capture_output=True, text=True, timeout=900,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  for line in done.stdout.splitlines():
    if line.startswith('RESULT '):
      return json.loads(line[len('RESULT '):])
  lines = [l for l in done.stderr.splitlines() if l.strip()]
  return {'error': lines[-1] if lines else f'exit {done.returncode}'}


def main() -> None:
  version = subprocess.run(
      [sys.executable, '-c', 'import tensorflow as tf; print(tf.__version__)'],
      capture_output=True, text=True, check=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')).stdout.split()[-1]
  if tuple(int(p) for p in version.split('.')[:2]) >= (2, 16):
    sys.exit(f'error: TensorFlow {version} has no tf.estimator; run this with '
             '.venv-tf215/bin/python (scripts/tf_estimator_215/make_venv.sh).')
  results = {name: run(name) for name in NAMES}
  with open(OUTPUT, 'w') as f:
    json.dump(results, f, indent=1, sort_keys=True)
    f.write('\n')
  print(json.dumps(results, indent=1))


if __name__ == '__main__':
  main()
