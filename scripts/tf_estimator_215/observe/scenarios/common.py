"""What the scenarios share: tiny seeded data, model_fns as programs write
them, and a hook and a saving listener that note every call they receive.

Everything here uses tf.estimator's public names only, and runs under
TensorFlow 2.15 and 2.21, in both behaviours.
"""

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215.observe import describe as describe_lib

FEATURES = 2
ROWS = 16
BATCH = 4
SEED = 7


def data(seed: int = 0, rows: int = ROWS):
  """(x, y_regression, y_class): float32 features, a float target and 0/1
  labels, from a seeded NumPy generator."""
  x = np.random.RandomState(seed).uniform(-1, 1, (rows, FEATURES)).astype(
      np.float32)
  y = (x @ np.array([[1.5], [-0.5]], np.float32) + 0.25).astype(np.float32)
  return x, y, (y > 0.25).astype(np.int64)


def input_fn(labels: str = 'reg', repeat: bool = True, seed: int = 0):
  """An input_fn of a Dataset of ({'x': ...}, labels) batches."""
  def fn():
    x, y_reg, y_class = data(seed)
    y = y_reg if labels == 'reg' else y_class
    ds = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
    return (ds.repeat() if repeat else ds).batch(BATCH)
  return fn


def predict_input_fn():
  x, _, _ = data(seed=3, rows=6)
  return tf.data.Dataset.from_tensor_slices({'x': x}).batch(4)


def columns():
  return [tf.feature_column.numeric_column('x', shape=(FEATURES,))]


def run_config(model_dir: str, **kwargs):
  kwargs.setdefault('tf_random_seed', SEED)
  kwargs.setdefault('log_step_count_steps', 2)
  return tf.estimator.RunConfig(model_dir=model_dir, **kwargs)


def tf1_model_fn(features, labels, mode, params, config):
  """A TF1-style model_fn: get_variable, a v1 optimizer's minimize, v1
  metrics, export outputs; `params['lr']` its learning rate."""
  del config
  x = features['x'] if isinstance(features, dict) else features
  w = tf.compat.v1.get_variable(
      'w', [FEATURES, 1], initializer=tf.compat.v1.constant_initializer(0.1))
  b = tf.compat.v1.get_variable(
      'b', [1], initializer=tf.compat.v1.zeros_initializer())
  y = tf.matmul(x, w) + b
  predictions = {'y': y, 'twice': 2.0 * y}
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions=predictions,
                                      export_outputs={
                                          'serving_default':
                                              tf.estimator.export
                                              .RegressionOutput(y)})
  loss = tf.compat.v1.losses.mean_squared_error(labels, y)
  metrics = {'mae': tf.compat.v1.metrics.mean_absolute_error(labels, y)}
  train_op = tf.compat.v1.train.GradientDescentOptimizer(
      params.get('lr', 0.1)).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
  tf.compat.v1.summary.scalar('my_loss', loss)
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                    eval_metric_ops=metrics,
                                    predictions=predictions)


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, FEATURES], name='x')
  return tf.estimator.export.ServingInputReceiver({'x': x}, {'x': x})


def _kind(obj) -> str:
  return describe_lib.type_name(type(obj))


class RecordingHook(tf.estimator.SessionRunHook):
  """A SessionRunHook that notes each call (name and what it was given),
  fetches the global step, and reads it after each run."""

  def __init__(self):
    self.calls = []

  def begin(self):
    super().begin()
    self._step = tf.compat.v1.train.get_global_step()
    self.calls.append(['begin', _kind(self._step)])

  def after_create_session(self, session, coord):
    self.calls.append(['after_create_session', _kind(session), _kind(coord)])

  def before_run(self, run_context):
    self.calls.append(['before_run', _kind(run_context),
                       describe_lib.describe(run_context.original_args)[
                           'type']])
    return tf.estimator.SessionRunArgs({'step': self._step})

  def after_run(self, run_context, run_values):
    # The fetched step races the train op's increment in the same run (on
    # 2.15 too: 1 run in 40 read it after), so what is noted is its type
    # and the step a read after the run sees.
    self.calls.append(['after_run', _kind(run_values),
                       _kind(run_values.results['step']),
                       int(run_context.session.run(self._step))])

  def end(self, session):
    self.calls.append(['end', _kind(session)])


class RecordingListener(tf.estimator.CheckpointSaverListener):
  """A CheckpointSaverListener that notes each call and its step."""

  def __init__(self):
    self.calls = []

  def begin(self):
    self.calls.append(['begin'])

  def before_save(self, session, global_step_value):
    self.calls.append(['before_save', _kind(session),
                       describe_lib.describe(global_step_value)])

  def after_save(self, session, global_step_value):
    self.calls.append(['after_save', _kind(session),
                       describe_lib.describe(global_step_value)])

  def end(self, session, global_step_value):
    self.calls.append(['end', _kind(session),
                       describe_lib.describe(global_step_value)])


def first(iterable, n: int = 3) -> list:
  """The first `n` items of `iterable` (a predict generator)."""
  out = []
  for item in iterable:
    out.append(item)
    if len(out) == n:
      break
  return out
