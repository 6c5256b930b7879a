"""tf1_classifier's model_fn and input_fns, counting their calls per task.

For the binary and the cluster roles (tests/test_legacy_engine.py): each
call appends `<task> <what>` to the file named by the environment variable
CALLS_FILE (`<task>` from TF_CONFIG, `local` without one; `<what>` is
`model_fn:<mode>` or `input_fn:<name>`), so a test can compare each task's
calls with what tf.estimator 2.15 made: one per graph it built (a training
task's TRAIN graph, an evaluator's graph per evaluation, an export's).
"""

import json
import os
import sys

# Loaded by file path (--model_fn=.../counted_tf1_classifier.py:model_fn):
# its neighbour comes from this directory.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tf1_classifier  # pylint: disable=g-import-not-at-top,wrong-import-position

PARAMS = tf1_classifier.PARAMS


def _task() -> str:
  task = json.loads(os.environ.get('TF_CONFIG') or '{}').get('task')
  return f'{task["type"]}:{task["index"]}' if task else 'local'


def _record(what: str) -> None:
  with open(os.environ['CALLS_FILE'], 'a') as f:
    f.write(f'{_task()} {what}\n')


def model_fn(features, labels, mode, params):
  _record(f'model_fn:{mode}')
  return tf1_classifier.model_fn(features, labels, mode, params)


def train_input_fn(params):
  _record('input_fn:train')
  return tf1_classifier.train_input_fn(params)


def eval_input_fn(params):
  _record('input_fn:eval')
  return tf1_classifier.eval_input_fn(params)


def read_calls(path: str) -> dict:
  """{task: {what: count}} from a CALLS_FILE."""
  calls = {}
  if not os.path.exists(path):
    return calls
  with open(path) as f:
    for line in f:
      task, what = line.split()
      calls.setdefault(task, {}).setdefault(what, 0)
      calls[task][what] += 1
  return calls
