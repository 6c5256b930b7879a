"""TF1-style model_fns and input_fns for the graph engine's tests: the binary's
(by file path) and tf.estimator 2.15's construction and input conventions."""

import numpy as np
import tensorflow as tf

import estimator_rt


def model_fn(features, labels, mode):
  hidden = tf.compat.v1.layers.dense(features['x'], 8, activation=tf.nn.relu)
  predictions = tf.compat.v1.layers.dense(hidden, 1)
  if mode == estimator_rt.ModeKeys.PREDICT:
    return estimator_rt.EstimatorSpec(mode, predictions={'y': predictions})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  if mode == estimator_rt.ModeKeys.EVAL:
    return estimator_rt.EstimatorSpec(
        mode, loss=loss, eval_metric_ops={
            'mae': tf.compat.v1.metrics.mean_absolute_error(labels,
                                                            predictions)})
  train_op = tf.compat.v1.train.AdagradOptimizer(0.05).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return estimator_rt.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
  rng = np.random.RandomState(0)
  x = rng.uniform(-1, 1, (256, 4)).astype(np.float32)
  y = x.sum(axis=1, keepdims=True).astype(np.float32)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(32)


def linear_model_fn(features, labels, mode):
  """Zero-initialized, so that runs in different graphs start equal."""
  w = tf.compat.v1.get_variable('w', [4, 1],
                                initializer=tf.compat.v1.zeros_initializer())
  b = tf.compat.v1.get_variable('b', [1],
                                initializer=tf.compat.v1.zeros_initializer())
  predictions = tf.matmul(features['x'], w) + b
  if mode == estimator_rt.ModeKeys.PREDICT:
    return estimator_rt.EstimatorSpec(mode, predictions={'y': predictions})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return estimator_rt.EstimatorSpec(mode, loss=loss, train_op=train_op)


def double_batch_input_fn():
  """input_fn's elements two by two: one worker's view of two workers."""
  return input_fn().unbatch().batch(64)


def counting_model_fn(features, labels, mode):
  """Counts the global step; the features and labels are recorded."""
  counting_model_fn.seen = (features, labels, mode)
  return estimator_rt.EstimatorSpec(
      mode, loss=tf.constant(0.), predictions=tf.constant([[10.]]),
      train_op=tf.compat.v1.assign_add(
          tf.compat.v1.train.get_global_step(), 1))


def constant_input_fn():
  """Tensors, not a dataset: one batch of two examples."""
  return {'x': tf.constant([[1.], [2.]])}, tf.constant([[1.], [0.]])
