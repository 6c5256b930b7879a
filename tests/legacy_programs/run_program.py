r"""Runs one legacy program's main() and prints what came out as JSON.

    # tf.estimator 2.15 (the environment scripts/tf_estimator_215/make_venv.sh
    # makes; `estimator_rt` is then scripts/tf_estimator_215/shim/):
    .venv-tf215/bin/python tests/legacy_programs/run_program.py tf1_classifier
    # estimator_rt on current TensorFlow:
    .venv/bin/python tests/legacy_programs/run_program.py tf1_classifier

The programs say `import estimator_rt` and nothing else decides which
estimator they get: this runner puts the shim first on sys.path when the
TensorFlow it runs on is older than 2.16 (it still has tf.estimator), and the
repository root otherwise. So one file runs unchanged on both.

After main() returns, the exported SavedModel is loaded in a fresh process of
the same interpreter and its serving_default signature is called on the
program's SERVING_EXAMPLE.

Output, on stdout: `RESULT {json}` on success (exit 0), or `FAILED <error
type>: <first line of the message>` (exit 1) with the traceback on stderr.
"""

import argparse
import importlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
_SHIM_DIR = os.path.join(_REPO_ROOT, 'scripts', 'tf_estimator_215', 'shim')

PROGRAMS = ('seed_readme', 'tf1_classifier', 'keras_layers_v1_optimizer',
            'feature_columns_iris', 'hooks_and_scaffold')


def choose_estimator_path():
  """Puts the right `estimator_rt` first on sys.path; returns its name."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  major, minor = (int(part) for part in tf.__version__.split('.')[:2])
  if (major, minor) < (2, 16):
    sys.path.insert(0, _SHIM_DIR)
    return f'tf.estimator (TensorFlow {tf.__version__})'
  sys.path.insert(0, _REPO_ROOT)
  return f'estimator_rt (TensorFlow {tf.__version__})'


def use_strategy(name):
  """Makes every RunConfig the program creates train under strategy `name`
  (the programs themselves stay as a tf.estimator user wrote them)."""
  import estimator_rt  # pylint: disable=g-import-not-at-top
  from estimator_rt.cluster import strategies  # pylint: disable=g-import-not-at-top
  if name == 'mirrored':
    strategies.configure_cpu_devices(2)
  program_config = estimator_rt.RunConfig

  class RunConfig(program_config):

    def __init__(self, **fields):
      fields.setdefault('train_distribute', name)
      super().__init__(**fields)

  estimator_rt.RunConfig = RunConfig


def to_jsonable(value):
  """numpy scalars and arrays, bytes and nested containers -> JSON types."""
  if isinstance(value, dict):
    return {str(key): to_jsonable(item) for key, item in sorted(value.items())}
  if isinstance(value, (list, tuple)):
    return [to_jsonable(item) for item in value]
  if isinstance(value, bytes):
    return value.decode('utf-8', 'replace')
  if hasattr(value, 'tolist'):  # numpy arrays and scalars
    return to_jsonable(value.tolist())
  if isinstance(value, float):
    return round(value, 6)
  return value


_LOAD_AND_SERVE = r'''
import json, sys
import numpy as np
import tensorflow as tf
export_dir, example = sys.argv[1], json.loads(sys.argv[2])
loaded = tf.saved_model.load(export_dir)
serve = loaded.signatures['serving_default']
inputs = {}
for name, spec in serve.structured_input_signature[1].items():
  if spec.dtype == tf.string:  # serialized protos, carried as latin-1 text
    inputs[name] = tf.constant([text.encode('latin-1')
                                for text in example[name]])
  else:
    inputs[name] = tf.constant(np.array(example[name]), dtype=spec.dtype)
outputs = serve(**inputs)
def readable(tensor):
  if tensor.dtype.is_floating:
    return np.round(tensor.numpy().astype(float), 6).tolist()
  if tensor.dtype == tf.string:
    return [text.decode() for text in tensor.numpy().ravel()]
  return tensor.numpy().tolist()
print(json.dumps({'signatures': sorted(loaded.signatures.keys()),
                  'serving_default': {k: readable(v)
                                      for k, v in sorted(outputs.items())}}))
'''


def serve_in_fresh_process(export_dir, example):
  """Loads export_dir in a new process and calls serving_default once."""
  result = subprocess.run(
      [sys.executable, '-c', _LOAD_AND_SERVE, export_dir, json.dumps(example)],
      capture_output=True, text=True, timeout=300, check=False,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  if result.returncode != 0:
    last_line = (result.stderr.strip().splitlines() or ['(no output)'])[-1]
    return {'load_failed': last_line}
  return json.loads(result.stdout.strip().splitlines()[-1])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('program', choices=PROGRAMS)
  parser.add_argument('--model_dir', default=None,
                      help='default: a new temporary directory')
  parser.add_argument('--train_steps', type=int, default=None,
                      help="default: the program's own")
  parser.add_argument('--train_distribute', default=None,
                      help='estimator_rt only: a strategy name every '
                      "RunConfig the program makes gets (as if it said "
                      'RunConfig(train_distribute=...)); mirrored runs over '
                      '2 logical CPU devices')
  args = parser.parse_args()

  estimator_name = choose_estimator_path()
  if args.train_distribute:
    use_strategy(args.train_distribute)
  # Under TensorFlow 2.15, Keras 2 layers without a seed (tf.compat.v1.layers,
  # tf.keras.layers) draw their initializers' seeds from Python's `random`
  # and ignore RunConfig.tf_random_seed; seeding it makes their runs repeat.
  random.seed(0)
  sys.path.insert(0, _HERE)
  model_dir = args.model_dir or tempfile.mkdtemp(prefix=args.program + '_')
  try:
    program = importlib.import_module(args.program)
    start = time.monotonic()
    if args.train_steps is None:
      outcome = program.main(model_dir)
    else:
      outcome = program.main(model_dir, train_steps=args.train_steps)
    seconds = time.monotonic() - start
  except Exception as error:  # pylint: disable=broad-except
    traceback.print_exc()
    message = (str(error).strip().splitlines() or [''])[0]
    print(f'FAILED {type(error).__name__}: {message}')
    sys.exit(1)

  outcome = to_jsonable(outcome)
  outcome['served'] = serve_in_fresh_process(outcome['export_dir'],
                                             program.SERVING_EXAMPLE)
  outcome['estimator'] = estimator_name
  outcome['main_seconds'] = round(seconds, 1)
  outcome['model_dir'] = model_dir
  print('RESULT ' + json.dumps(outcome, sort_keys=True))


if __name__ == '__main__':
  main()
