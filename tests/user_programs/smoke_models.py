"""The user code of the smoke matrix (tests/test_user_paths.py).

Written as users write it: this module imports TensorFlow first and binds
`tf1 = tf.compat.v1` before estimator_rt is imported (the order that once
broke TF1-style layers outside the compatibility runner). It holds the three
kinds of model users bring, all tiny and on the same data:

  - `tf2_model_fn`: the TF2 contract (Keras 3 layers, a Keras optimizer);
  - `tf1_model_fn`: TF1-style (`tf1.layers.dense`, a v1 optimizer's
    `minimize(global_step=...)`, `tf1.metrics.accuracy`);
  - `canned_estimator`: a DNNClassifier, as the binary's estimator factory
    (`fn(config, params)`).

With SMOKE_TF1_BEHAVIOR=1 in the environment it starts as TF1 programs did,
`tf.compat.v1.disable_v2_behavior()` first (the matrix's TF1-behaviour
column: the TF1-style and canned models).
"""

import os

import tensorflow as tf

tf1 = tf.compat.v1
if os.environ.get('SMOKE_TF1_BEHAVIOR') == '1':
  tf1.disable_v2_behavior()

import keras  # pylint: disable=g-import-not-at-top,g-bad-import-order
import numpy as np  # pylint: disable=g-import-not-at-top,g-bad-import-order

import estimator_rt as ert  # pylint: disable=g-import-not-at-top

NUM_FEATURES = 4
_WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


def _data(count: int, seed: int):
  x = np.random.RandomState(seed).rand(count, NUM_FEATURES).astype(np.float32)
  y = (x @ _WEIGHTS > 1.25).astype(np.int32)
  return x, y


def input_fn(params=None):
  """Training batches of 16, repeating."""
  del params
  x, y = _data(256, seed=0)
  return tf.data.Dataset.from_tensor_slices(
      ({'x': x}, y)).repeat().batch(16, drop_remainder=True)


def eval_input_fn(params=None):
  """64 examples in 4 batches, then the input ends."""
  del params
  x, y = _data(64, seed=1)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(16)


def _predictions(logits):
  return {'class': tf.argmax(logits, 1),
          'probabilities': tf.nn.softmax(logits)}


def tf2_model_fn(features, labels, mode, params):
  del params
  model = keras.Sequential([keras.layers.Dense(8, activation='relu'),
                            keras.layers.Dense(2)])
  logits = model(features['x'])
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions=_predictions(logits))
  loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
      labels, logits, from_logits=True))
  if mode == ert.ModeKeys.EVAL:
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(labels, logits)
    return ert.EstimatorSpec(mode, loss=loss,
                             eval_metric_ops={'accuracy': accuracy})
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=keras.optimizers.SGD(0.1))


def tf1_model_fn(features, labels, mode, params):
  del params
  hidden = tf1.layers.dense(features['x'], 8, activation=tf.nn.relu)
  logits = tf1.layers.dense(hidden, 2)
  predictions = _predictions(logits)
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions=predictions)
  loss = tf1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == ert.ModeKeys.EVAL:
    return ert.EstimatorSpec(mode, loss=loss, eval_metric_ops={
        'accuracy': tf1.metrics.accuracy(labels, predictions['class'])})
  train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf1.train.get_global_step())
  return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)


def feature_columns():
  return [tf.feature_column.numeric_column('x', shape=(NUM_FEATURES,))]


def canned_estimator(config, params):
  """The binary's estimator factory."""
  del params
  return ert.DNNClassifier(hidden_units=[8], feature_columns=feature_columns(),
                           config=config)


MODEL_FNS = {'tf2': tf2_model_fn, 'tf1': tf1_model_fn}
