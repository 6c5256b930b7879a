r"""What tf.estimator 2.15 left in a model_dir: the files after train,
evaluate and export, and what its event files hold.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.model_dir_listing

Three programs (PROGRAMS), each on a new model_dir with 2.15's default
RunConfig (but a graph seed): a small TF1-style model_fn (`tf1`:
`get_variable`, a v1 optimizer's `minimize(global_step=...)`,
`tf.compat.v1.metrics`), a canned estimator (`canned`: a DNNClassifier on a
numeric column) and a TF2-style model_fn (`tf2`: a Keras layer, its
gradients from a `tf.GradientTape` applied by the train_op, a Keras
metric). Each one runs `train(steps=TRAIN_STEPS)`, then `evaluate`, then
`export_saved_model` into model_dir/export, and after each of the three
the model_dir is listed (`listing`): every file and directory, by its path
relative to model_dir with the parts that vary from run to run normalized
(`normalize`: event files' time and host, exports' timestamps), and for
every event file the kinds of records it holds (`event_kinds`: the graph,
the meta graph, session logs, summary tags).

The TF1-style model_fn names its input and output (`FEATURES_NAME`,
`PREDICTIONS_NAME`) as a program that freezes its graph from a `.meta` file
does; tests/test_model_dir_contents.py serves a model_dir written by
estimator_rt that way.

Importable under TensorFlow 2.15 and 2.21: `record_program` takes a
tf.estimator-shaped namespace (`tf.estimator` under 2.15; estimator_rt's
`estimator_rt.compat.namespaces.v2()` here), and
tests/test_model_dir_contents.py records estimator_rt's model_dirs with it
and compares. Run as a script (under 2.15 only), it writes
tests/data/tf_estimator_215/model_dir_listing.json.
"""

import json
import os
import re
import sys
import tempfile

import numpy as np
import tensorflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_PATH = os.path.join(os.path.dirname(os.path.dirname(_HERE)),
                              'tests', 'data', 'tf_estimator_215',
                              'model_dir_listing.json')
TRAIN_STEPS = 30
STAGES = ('train', 'evaluate', 'export')
NUM_FEATURES = 4
# The names a freezing program looks its tensors up by.
FEATURES_NAME = 'features_x'
PREDICTIONS_NAME = 'predictions'
EXPORT_DIR = 'export'


def _data(rows: int, seed: int):
  x = np.random.RandomState(seed).uniform(
      -1, 1, (rows, NUM_FEATURES)).astype(np.float32)
  y = x.sum(axis=1, keepdims=True).astype(np.float32)
  return x, y


def train_input_fn():
  x, y = _data(256, seed=0)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(32)


def eval_input_fn():
  x, y = _data(64, seed=1)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(32)


def classes_input_fn(input_fn):
  """`input_fn`'s data with labels 0/1 (for the classifier)."""
  return lambda: input_fn().map(
      lambda f, y: (f, tf.cast(y > 0, tf.int64)))


def serving_input_receiver_fn(est):
  def receiver_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, NUM_FEATURES], name='x')
    return est.export.ServingInputReceiver({'x': x}, {'x': x})
  return receiver_fn


def tf1_model_fn_for(est):
  """A TF1-style model_fn (graph-only APIs), its input and output named."""
  modes = est.ModeKeys

  def tf1_model_fn(features, labels, mode):
    x = tf.identity(features['x'], name=FEATURES_NAME)
    hidden_w = tf.compat.v1.get_variable('hidden/kernel', [NUM_FEATURES, 8])
    hidden_b = tf.compat.v1.get_variable(
        'hidden/bias', [8], initializer=tf.compat.v1.zeros_initializer())
    out_w = tf.compat.v1.get_variable('out/kernel', [8, 1])
    out_b = tf.compat.v1.get_variable(
        'out/bias', [1], initializer=tf.compat.v1.zeros_initializer())
    hidden = tf.nn.relu(tf.matmul(x, hidden_w) + hidden_b)
    predictions = tf.identity(tf.matmul(hidden, out_w) + out_b,
                              name=PREDICTIONS_NAME)
    if mode == modes.PREDICT:
      return est.EstimatorSpec(mode, predictions={'y': predictions})
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    if mode == modes.EVAL:
      return est.EstimatorSpec(mode, loss=loss, eval_metric_ops={
          'mae': tf.compat.v1.metrics.mean_absolute_error(labels,
                                                          predictions)})
    train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

  return tf1_model_fn


def tf2_model_fn_for(est):
  """A TF2-style model_fn (it runs eagerly too): a Keras layer, gradients
  from a tape, applied by the train_op, and a Keras metric."""
  modes = est.ModeKeys

  def tf2_model_fn(features, labels, mode):
    layer = tf.keras.layers.Dense(1)
    with tf.GradientTape() as tape:
      predictions = layer(features['x'])
      if mode == modes.PREDICT:
        return est.EstimatorSpec(mode, predictions={'y': predictions})
      loss = tf.reduce_mean(tf.square(predictions - labels))
    if mode == modes.EVAL:
      mae = tf.keras.metrics.MeanAbsoluteError()
      mae.update_state(labels, predictions)
      return est.EstimatorSpec(mode, loss=loss, eval_metric_ops={'mae': mae})
    variables = layer.trainable_variables
    gradients = tape.gradient(loss, variables)
    updates = [v.assign_sub(0.1 * g) for v, g in zip(variables, gradients)]
    with tf.control_dependencies(updates):
      train_op = tf.compat.v1.train.get_global_step().assign_add(1)
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

  return tf2_model_fn


def build(est, name: str, model_dir: str, **run_config):
  """(estimator, train input_fn, eval input_fn) of program `name`; the
  RunConfig also gets `run_config` (estimator_rt's `engine=` for one)."""
  config = est.RunConfig(model_dir=model_dir, tf_random_seed=1, **run_config)
  if name == 'tf1':
    return (est.Estimator(tf1_model_fn_for(est), config=config),
            train_input_fn, eval_input_fn)
  if name == 'tf2':
    return (est.Estimator(tf2_model_fn_for(est), config=config),
            train_input_fn, eval_input_fn)
  if name == 'canned':
    column = tf.feature_column.numeric_column('x', shape=(NUM_FEATURES,))
    return (est.DNNClassifier(hidden_units=[8], feature_columns=[column],
                              config=config),
            classes_input_fn(train_input_fn), classes_input_fn(eval_input_fn))
  raise ValueError(f'unknown program {name!r}')


PROGRAMS = ('tf1', 'canned', 'tf2')

_NORMALIZED = (
    # events.out.tfevents.<unix time>.<host>[.<pid>.<n>.v2 and the like]
    (re.compile(r'(^|/)events\.out\.tfevents\.[^/]*$'),
     r'\1events.out.tfevents.*'),
    # An export's directory: its unix time (or one more than the last).
    (re.compile(r'(^|/)' + EXPORT_DIR + r'/\d+(/|$)'),
     r'\1' + EXPORT_DIR + r'/<timestamp>\2'),
)


def normalize(relative_path: str) -> str:
  """`relative_path` with the parts that vary from run to run replaced."""
  for pattern, replacement in _NORMALIZED:
    relative_path = pattern.sub(replacement, relative_path)
  return relative_path


def event_kinds(path: str) -> list:
  """The kinds of records an event file holds, sorted: `graph_def`,
  `meta_graph_def`, `session_log:<STATUS>`, `summary:<tag>`, ..."""
  kinds = set()
  for record in tf.compat.v1.train.summary_iterator(path):
    which = record.WhichOneof('what')
    if which == 'summary':
      kinds.update(f'summary:{value.tag}' for value in record.summary.value)
    elif which == 'session_log':
      kinds.add('session_log:' + tf.compat.v1.SessionLog.SessionStatus.Name(
          record.session_log.status))
    elif which is not None:
      kinds.add(which)
  return sorted(kinds)


def listing(model_dir: str) -> dict:
  """{normalized relative path: what it is}: 'dir', 'file', or for an
  event file the kinds of records it holds (several event files of one
  directory merge under one name). Read through tf.io.gfile."""
  found = {}
  for directory, subdirs, files in tf.io.gfile.walk(model_dir):
    relative = os.path.relpath(directory, model_dir)
    relative = '' if relative == '.' else relative + '/'
    for subdir in subdirs:
      found[normalize(relative + subdir.rstrip('/'))] = 'dir'
    for name in files:
      key = normalize(relative + name)
      if key.endswith('events.out.tfevents.*'):
        kinds = set(found.get(key, ()))
        kinds.update(event_kinds(os.path.join(directory, name)))
        found[key] = sorted(kinds)
      else:
        found[key] = 'file'
  return dict(sorted(found.items()))


def record_program(est, name: str, model_dir: str, **run_config) -> dict:
  """Runs program `name` with namespace `est` in `model_dir` (new), its
  RunConfig also given `run_config`; returns {stage: listing after it} and
  the checkpoint steps the state file names."""
  estimator, train, evaluate = build(est, name, model_dir, **run_config)
  record = {}
  estimator.train(train, steps=TRAIN_STEPS)
  record['train'] = listing(model_dir)
  record['metrics'] = {
      key: float(value) for key, value in estimator.evaluate(evaluate).items()}
  record['evaluate'] = listing(model_dir)
  estimator.export_saved_model(os.path.join(model_dir, EXPORT_DIR),
                               serving_input_receiver_fn(est))
  record['export'] = listing(model_dir)
  state = tf.train.get_checkpoint_state(model_dir)
  record['state_file'] = [os.path.basename(p)
                          for p in state.all_model_checkpoint_paths]
  return record


def main():
  if not hasattr(tf, 'estimator'):
    sys.exit('Run this under TensorFlow 2.15 (.venv-tf215/bin/python).')
  work = tempfile.mkdtemp(prefix='model_dir_listing_')
  programs = {name: record_program(tf.estimator, name,
                                   os.path.join(work, name))
              for name in PROGRAMS}
  reference = {
      'command': ('.venv-tf215/bin/python -m '
                  'scripts.tf_estimator_215.model_dir_listing'),
      'tensorflow': tf.__version__,
      'programs': programs,
  }
  with open(REFERENCE_PATH, 'w') as f:
    json.dump(reference, f, indent=1, sort_keys=True)
    f.write('\n')
  print(f'Wrote {REFERENCE_PATH}')


if __name__ == '__main__':
  main()
