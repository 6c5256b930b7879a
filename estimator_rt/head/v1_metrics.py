"""The v1 heads' metric helpers (tf.estimator 2.15's `canned/head.py`):
`tf.compat.v1.metrics` with the weights broadcast and the names 2.15 gave
them, each returning a `(value, update_op)` pair.

Programs that wrote their own `eval_metric_ops` in a TF1-style model_fn
import these from `tensorflow.python.estimator.canned.head` (matrix
factorization and CTR models built their binary metrics from `_auc`,
`_indicator_labels_mean` and `_accuracy_baseline`). They build graph ops,
so they run in the graph engine; their variables are local metric
variables, reset before each evaluation.
"""

import tensorflow as tf


def _as_float(values, name):
  return tf.cast(values, name=name, dtype=tf.float32)


def _broadcast(weights, values):
  if weights is None:
    return None
  return tf.compat.v2.__internal__.ops.broadcast_weights(weights, values)


def indicator_labels_mean(labels, weights=None, name=None):
  """The weighted mean of the (0/1) labels, as float32 (`labels_mean`)."""
  with tf.compat.v1.name_scope(name, 'labels_mean', (labels, weights)) as scope:
    labels = _as_float(labels, 'labels')
    return tf.compat.v1.metrics.mean(labels, weights=_broadcast(weights, labels),
                                     name=scope)


def predictions_mean(predictions, weights=None, name=None):
  """The weighted mean of the predictions, as float32 (`predictions_mean`)."""
  with tf.compat.v1.name_scope(name, 'predictions_mean',
                               (predictions, weights)) as scope:
    predictions = _as_float(predictions, 'predictions')
    return tf.compat.v1.metrics.mean(
        predictions, weights=_broadcast(weights, predictions), name=scope)


def accuracy_baseline(labels_mean):
  """max(mean, 1 - mean) of a labels-mean pair (value and update op): the
  accuracy of always predicting the more frequent class."""
  with tf.compat.v1.name_scope(None, 'accuracy_baseline', labels_mean):
    value, update_op = labels_mean
    return (tf.math.maximum(value, 1. - value, name='value'),
            tf.math.maximum(update_op, 1 - update_op, name='update_op'))


def auc(labels, predictions, weights=None, curve='ROC', name=None):
  """tf.compat.v1.metrics.auc of the float32 predictions, the weights
  broadcast to them (`curve`: 'ROC' or 'PR')."""
  with tf.compat.v1.name_scope(name, 'auc',
                               (predictions, labels, weights)) as scope:
    predictions = _as_float(predictions, 'predictions')
    return tf.compat.v1.metrics.auc(
        labels=labels, predictions=predictions,
        weights=_broadcast(weights, predictions), curve=curve, name=scope)


def accuracy_at_threshold(labels, predictions, weights, threshold, name=None):
  """The accuracy of predicting 1 where predictions >= `threshold`."""
  with tf.compat.v1.name_scope(name, f'accuracy_at_{threshold}',
                               (predictions, labels, weights,
                                threshold)) as scope:
    thresholded = tf.compat.v1.to_float(
        tf.math.greater_equal(predictions, threshold))
    return tf.compat.v1.metrics.accuracy(
        labels=labels, predictions=thresholded, weights=weights, name=scope)


def _at_threshold(metric, default_name, labels, predictions, weights,
                  threshold, name):
  with tf.compat.v1.name_scope(name, default_name % threshold,
                               (predictions, labels, weights,
                                threshold)) as scope:
    value, update_op = metric(labels=labels, predictions=predictions,
                              thresholds=(threshold,), weights=weights,
                              name=scope)
    return tf.compat.v1.squeeze(value), tf.compat.v1.squeeze(update_op)


def precision_at_threshold(labels, predictions, weights, threshold,
                           name=None):
  """The precision of predicting 1 where predictions > `threshold`
  (tf.compat.v1.metrics.precision_at_thresholds), a scalar pair."""
  return _at_threshold(tf.compat.v1.metrics.precision_at_thresholds,
                       'precision_at_%s', labels, predictions, weights,
                       threshold, name)


def recall_at_threshold(labels, predictions, weights, threshold, name=None):
  """The recall of predicting 1 where predictions > `threshold`
  (tf.compat.v1.metrics.recall_at_thresholds), a scalar pair."""
  return _at_threshold(tf.compat.v1.metrics.recall_at_thresholds,
                       'recall_at_%s', labels, predictions, weights,
                       threshold, name)
