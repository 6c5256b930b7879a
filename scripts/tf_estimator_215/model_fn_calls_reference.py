r"""Records how often tf.estimator 2.15 calls a program's model_fn and
input_fns, entry point by entry point.

    .venv-tf215/bin/python scripts/tf_estimator_215/model_fn_calls_reference.py

Runs tests/legacy_programs/model_fn_calls.py (a tf.estimator program) on
tf.estimator 2.15 in a fresh process and writes what it printed to
tests/data/tf_estimator_215/model_fn_calls.json, which
tests/test_model_fn_calls.py compares estimator_rt's figures with.
"""

import json
import os
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
PROGRAM = os.path.join(_REPO_ROOT, 'tests', 'legacy_programs',
                       'model_fn_calls.py')
OUTPUT = os.path.join(_REPO_ROOT, 'tests', 'data', 'tf_estimator_215',
                      'model_fn_calls.json')


def main() -> int:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith('2.15'):
    sys.exit(f'run this with tf.estimator 2.15 (TensorFlow {tf.__version__} '
             'here): .venv-tf215/bin/python ...')
  with tempfile.TemporaryDirectory() as model_dirs:
    done = subprocess.run(
        [sys.executable, PROGRAM, model_dirs], capture_output=True, text=True,
        timeout=900, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'),
        check=False)
  lines = [l for l in done.stdout.splitlines() if l.startswith('RESULT ')]
  if done.returncode or not lines:
    sys.exit(done.stderr[-3000:])
  result = json.loads(lines[-1][len('RESULT '):])
  result['_made_with'] = f'tensorflow {tf.__version__}'
  with open(OUTPUT, 'w') as f:
    json.dump(result, f, indent=1, sort_keys=True)
    f.write('\n')
  print('wrote', OUTPUT)
  return 0


if __name__ == '__main__':
  sys.exit(main())
