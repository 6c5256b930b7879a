"""Evaluation metrics of the heads, in the form the running engine takes.

tf.estimator 2.15's heads made Keras metric objects and called their
`update_state`. Here the same objects are made from the Keras that runs:

  - in the graph engine (a TF1-style model_fn in a `tf.Graph`), Keras 2
    (`tf_keras`) metrics, whose `update_state` returns an op and records it
    in `metric.updates`; `engine_metric_ops` turns each into the
    `(value, update_op)` pair the graph engine evaluates, and puts its
    variables in the LOCAL_VARIABLES and METRIC_VARIABLES collections (so
    they are initialized for each evaluation and never saved, as
    `tf.compat.v1.metrics` variables are);
  - in the eager engine, Keras 3 metrics, returned as objects (the engine
    resets and reduces them).

`DerivedMetric` is a metric computed from another's result
(accuracy_baseline from label/mean), with no state of its own.
"""

from typing import Any, Callable, Dict

import tensorflow as tf


def in_graph_engine() -> bool:
  """Whether the model_fn is being built in a TF1 graph (the graph engine)
  rather than traced by the eager engine."""
  return not tf.compat.v1.executing_eagerly_outside_functions()


def family():
  """The metrics module of the Keras that runs here (see the docstring)."""
  if in_graph_engine():
    import tf_keras  # pylint: disable=g-import-not-at-top
    return tf_keras.metrics
  import keras  # pylint: disable=g-import-not-at-top
  return keras.metrics


class DerivedMetric:
  """A metric whose value is `fn(source.result())`; updating it does
  nothing (its source is updated)."""

  def __init__(self, source: Any, fn: Callable[[tf.Tensor], tf.Tensor], *,
               name: str):
    self.source = source
    self.fn = fn
    self.name = name

  def update_state(self, *args, **kwargs):
    del args, kwargs

  def result(self):
    return self.fn(self.source.result())


def _baseline(label_mean):
  return tf.math.maximum(label_mean, 1. - label_mean)


def accuracy_baseline(label_mean_metric, *, name: str):
  """max(label mean, 1 - label mean): the accuracy of always predicting
  the more frequent class. In the graph engine, derived from the
  label/mean metric (updating it does nothing); in the eager engine, a
  Keras 3 metric of its own, updated with the labels like label/mean (so
  the engine can reset and reduce it)."""
  if in_graph_engine():
    return DerivedMetric(label_mean_metric, _baseline, name=name)
  import keras  # pylint: disable=g-import-not-at-top

  class AccuracyBaseline(keras.metrics.Mean):

    def result(self):
      return _baseline(super().result())

  return AccuracyBaseline(name=name)


def engine_metric_ops(eval_metrics: Dict[str, Any]) -> Dict[str, Any]:
  """`eval_metrics` (key -> updated metric) as EstimatorSpec's
  eval_metric_ops for the engine that runs (see the module docstring)."""
  if not in_graph_engine():
    return {key: metric for key, metric in eval_metrics.items()
            if not isinstance(metric, DerivedMetric)}
  ops = {}
  for key, metric in eval_metrics.items():
    if isinstance(metric, DerivedMetric):
      ops[key] = (metric.result(), tf.no_op())
      continue
    for variable in metric.variables:
      for collection in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                         tf.compat.v1.GraphKeys.METRIC_VARIABLES):
        if variable not in tf.compat.v1.get_collection(collection):
          tf.compat.v1.add_to_collection(collection, variable)
    updates = list(metric.updates)
    ops[key] = (metric.result(),
                tf.group(*updates) if updates else tf.no_op())
  return ops


def update_with_broadcast_weights(metric, values, weights) -> None:
  """A mean metric updated with `weights` broadcast to `values`' shape."""
  values = tf.cast(values, tf.float32)
  if weights is not None:
    weights = tf.broadcast_to(tf.cast(weights, tf.float32),
                              tf.shape(values))
  metric.update_state(values, sample_weight=weights)
