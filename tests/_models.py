"""Tiny model_fns, input_fns and artifact readers shared by the core tests.

Everything here is deliberately small (a 4-feature regression, a Dense(8)
hidden layer) so that one train/evaluate round trip takes well under a
second. Initial weights come from NumPy with a fixed seed, not from Keras'
random initializers, so two Estimators built from the same factory start
from exactly the same weights whatever strategy they run under; the NumPy
forward pass (`np_forward`) lets tests recompute predictions and losses
from the weights read back from a checkpoint.
"""

import hashlib
import os
import re

import keras
import numpy as np
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.core import summaries

NUM_FEATURES = 4
HIDDEN = 8
TRUE_W = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)

_VALUE = '/.ATTRIBUTES/VARIABLE_VALUE'


# ---------------------------------------------------------------- data
def make_data(n, *, seed=0, w=TRUE_W, bias=0.5, noise=0.0):
  """x: (n, 4) float32, y = x @ w + bias (+ noise): (n, 1) float32."""
  rng = np.random.RandomState(seed)
  x = rng.randn(n, NUM_FEATURES).astype(np.float32)
  y = x @ np.asarray(w, np.float32) + np.float32(bias)
  if noise:
    y = y + noise * rng.randn(n, 1).astype(np.float32)
  return x, y.astype(np.float32)


def no_autotune(ds):
  """`ds` with tf.data autotuning off.

  Destroying many distributed (MirroredStrategy) iterators at once, as a
  garbage collection of accumulated tests does, took up to a minute here
  with autotuning on and a few seconds with it off (DESIGN.md saw the same
  stalls at process exit). Tests do not need autotuning.
  """
  options = tf.data.Options()
  options.autotune.enabled = False
  return ds.with_options(options)


def global_input_fn(x, y=None, *, batch_size, repeat=True, dict_features=True,
                    drop_remainder=False):
  """An input_fn without input_context: a globally batched dataset."""

  def input_fn():
    features = {'x': x} if dict_features else x
    elements = features if y is None else (features, y)
    ds = tf.data.Dataset.from_tensor_slices(elements)
    if repeat:
      ds = ds.repeat()
    return no_autotune(ds.batch(batch_size, drop_remainder=drop_remainder))

  return input_fn


def full_batch_input_fn(x, y):
  """The same whole-data batch forever: every step sees identical data, so
  a run that restarts its input (resume) matches an uninterrupted one."""

  def input_fn():
    return no_autotune(tf.data.Dataset.from_tensors(({'x': x}, y)).repeat())

  return input_fn


# ------------------------------------------------------------- models
def initial_weights(seed=0, hidden=HIDDEN):
  rng = np.random.RandomState(1000 + seed)
  return [(0.5 * rng.randn(NUM_FEATURES, hidden)).astype(np.float32),
          np.zeros([hidden], np.float32),
          (0.5 * rng.randn(hidden, 1)).astype(np.float32),
          np.zeros([1], np.float32)]


def const_init(value):
  value = np.asarray(value, np.float32)

  def init(shape, dtype=None):
    del shape
    return tf.constant(value, dtype=dtype or tf.float32)

  return init


def build_keras_model(weights):
  """A fresh Sequential (built on first call) starting at `weights`."""
  return keras.Sequential([
      keras.layers.Dense(weights[0].shape[1], activation='tanh',
                         kernel_initializer=const_init(weights[0]),
                         bias_initializer=const_init(weights[1])),
      keras.layers.Dense(1, kernel_initializer=const_init(weights[2]),
                         bias_initializer=const_init(weights[3])),
  ])


def make_optimizer(name, lr):
  if name == 'sgd':
    return keras.optimizers.SGD(lr)
  if name == 'adam':
    return keras.optimizers.Adam(lr)
  raise ValueError(name)


def make_model_fn(*, optimizer='sgd', lr=0.05, seed=0, dict_features=True,
                  single_prediction=False, calls=None):
  """A regression model_fn that rebuilds its Keras model on every call.

  Args:
    optimizer: 'sgd' or 'adam' (returned as EstimatorSpec.optimizer).
    lr: learning rate.
    seed: picks the NumPy initial weights.
    dict_features: features are {'x': x} (else the tensor x itself).
    single_prediction: PREDICT returns one tensor instead of a dict.
    calls: a list that gets (mode, static feature shape) per call.
  """
  weights = initial_weights(seed)

  # `params` is taken (and unused) so that tests may pass the input_fn's
  # batch size: an Estimator refuses params its model_fn does not take, as
  # tf.estimator 2.15's did.
  def model_fn(features, labels, mode, params=None):
    del params
    x = features['x'] if dict_features else features
    if calls is not None:
      calls.append((mode, tuple(x.shape)))
    out = build_keras_model(weights)(x)
    if mode == ert.ModeKeys.PREDICT:
      if single_prediction:
        return ert.EstimatorSpec(mode, predictions=out)
      return ert.EstimatorSpec(mode, predictions={'y': out,
                                                  'double': 2.0 * out})
    loss = tf.reduce_mean(tf.square(out - labels))
    if mode == ert.ModeKeys.EVAL:
      mae = keras.metrics.MeanAbsoluteError()
      mae.update_state(labels, out)
      mean_pred = keras.metrics.Mean()
      mean_pred.update_state(out)
      return ert.EstimatorSpec(mode, loss=loss, eval_metric_ops={
          'mae': mae, 'mean_prediction': mean_pred})
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=make_optimizer(optimizer, lr))

  return model_fn


def np_forward(weights, x):
  """NumPy forward pass of `build_keras_model`."""
  k1, b1, k2, b2 = weights
  return np.tanh(x @ k1 + b1) @ k2 + b2


def quiet_config(**overrides):
  """A RunConfig that cuts loops only where a test asks it to."""
  values = dict(save_summary_steps=0, log_step_count_steps=0,
                steps_per_loop=10, save_checkpoints_steps=10,
                keep_checkpoint_max=0)
  if ('save_checkpoints_secs' in overrides and
      'save_checkpoints_steps' not in overrides):
    values.pop('save_checkpoints_steps')
  values.update(overrides)
  return ert.RunConfig(**values)


# -------------------------------------------------------- checkpoints
def checkpoint_steps(model_dir):
  """Global steps of the `model.ckpt-<step>` checkpoints on disk."""
  steps = []
  for name in os.listdir(model_dir):
    match = re.fullmatch(r'model\.ckpt-(\d+)\.index', name)
    if match:
      steps.append(int(match.group(1)))
  return sorted(steps)


def ckpt_path(model_dir, step):
  return os.path.join(model_dir, f'model.ckpt-{step}')


def read_model_variables(path):
  """The model variables (model/0, model/1, ...) of a checkpoint, in order."""
  reader = tf.train.load_checkpoint(path)
  names = reader.get_variable_to_shape_map()
  count = sum(1 for k in names
              if re.fullmatch(r'model/\d+' + re.escape(_VALUE), k))
  return [reader.get_tensor(f'model/{i}{_VALUE}') for i in range(count)]


def read_global_step(path):
  """The global step a checkpoint holds, of either engine's format."""
  reader = tf.train.load_checkpoint(path)
  names = reader.get_variable_to_shape_map()
  key = 'global_step' + _VALUE if 'global_step' + _VALUE in names else (
      'global_step')
  return int(reader.get_tensor(key))


def saved_model_global_step(export_dir):
  """The global step stored in an exported SavedModel's variables
  (`export_dir` as str, or bytes as export_saved_model returns it)."""
  prefix = os.path.join(tf.compat.as_str_any(export_dir), 'variables',
                        'variables')
  reader = tf.train.load_checkpoint(prefix)
  keys = [k for k in reader.get_variable_to_shape_map()
          if k.startswith('global_step/')]
  assert len(keys) == 1, keys
  return int(reader.get_tensor(keys[0]))


def snapshot_tree(root):
  """{relative path: (size, mtime_ns, sha256)} for files, mtime_ns for
  directories (root included: creating or deleting an entry changes it)."""
  result = {'.': os.stat(root).st_mtime_ns}
  for dirpath, dirnames, filenames in os.walk(root):
    for d in dirnames:
      path = os.path.join(dirpath, d)
      result[os.path.relpath(path, root)] = os.stat(path).st_mtime_ns
    for f in filenames:
      path = os.path.join(dirpath, f)
      st = os.stat(path)
      with open(path, 'rb') as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
      result[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns,
                                             digest)
  return result


def eval_steps(logdir, tag='loss'):
  """Steps at which `tag` was written in `logdir`'s event files."""
  return [step for step, _ in summaries.read_scalars(logdir).get(tag, [])]


class SessionRunCounter(tf.compat.v1.train.SessionRunHook):
  """A SessionRunHook that counts the session runs it sees (`runs`)."""

  def __init__(self):
    self.runs = 0

  def after_run(self, run_context, run_values):
    del run_context, run_values
    self.runs += 1


class LoopRecorder:
  """A plain-callable hook that keeps every LoopResult it is given."""

  def __init__(self):
    self.results = []

  def __call__(self, result):
    self.results.append(result)
    return None

  @property
  def steps(self):
    return [r.global_step for r in self.results]
