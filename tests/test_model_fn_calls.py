"""The model_fn and the input_fns are called as tf.estimator 2.15 called
them: once per graph it built, in the mode it built it for.

tests/legacy_programs/model_fn_calls.py is a tf.estimator program whose
model_fns and input_fns count their calls and mutate objects made outside
them (a Keras optimizer's `iterations`, which Keras lets a program set once;
a list). It runs unchanged through the compatibility runner in a fresh
process, through every entry point of the Python API: train (twice),
evaluate, predict, export, train_and_evaluate, a model_fn returning
training hooks (one step per session run), one with a variable initialized
from a tensor (which the in-graph loop once had to build twice), a
canned estimator and model_to_estimator. The counts, and what each call
returned, must be tf.estimator 2.15's
(tests/data/tf_estimator_215/model_fn_calls.json, recorded by
scripts/tf_estimator_215/model_fn_calls_reference.py). The binary and the
cluster roles are counted in tests/test_legacy_engine.py.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PROGRAM = os.path.join(HERE, 'legacy_programs', 'model_fn_calls.py')
with open(os.path.join(HERE, 'data', 'tf_estimator_215',
                       'model_fn_calls.json')) as f:
  REFERENCE = json.load(f)


def test_every_entry_point_calls_as_tf_estimator_2_15_did(tmp_path):
  done = subprocess.run(
      [sys.executable, '-m', 'estimator_rt.compat', PROGRAM, str(tmp_path)],
      capture_output=True, text=True, timeout=600, cwd=REPO,
      env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2'))
  results = [l for l in done.stdout.splitlines() if l.startswith('RESULT ')]
  assert done.returncode == 0 and results, done.stderr[-4000:]
  here = json.loads(results[-1][len('RESULT '):])
  reference = {k: v for k, v in REFERENCE.items() if not k.startswith('_')}
  assert sorted(here) == sorted(reference)
  differences = {name: (here[name], reference[name]) for name in reference
                 if here[name] != reference[name]}
  assert not differences, json.dumps(differences, indent=1)
