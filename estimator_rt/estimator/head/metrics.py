"""Evaluation metrics of the heads, from the Keras that runs the model_fn.

tf.estimator 2.15's heads made Keras metric objects, called their
`update_state` and returned them in `eval_metric_ops`. The heads here do
the same, with the metric classes of the engine that calls the model_fn:

  - the graph engine (a TF1-style model_fn built in a `tf.Graph`): Keras 2
    (`tf_keras`) metrics, whose `update_state` builds graph ops; a head's
    EVAL spec holds each as a `(value, update_op)` pair, as 2.15's
    EstimatorSpec made them (`as_eval_metric_ops`);
  - the eager engine (a model_fn traced by `tf.function`): Keras 3 metrics,
    which the engine resets and reduces across replicas.

A user model_fn that calls a head's `metrics()` and `update_metrics()`
itself gets the same objects and may put them in its EstimatorSpec.
"""

import tensorflow as tf

from estimator_rt.core import spec


def in_graph_engine() -> bool:
  """Whether the model_fn is being built in a TF1 graph (the graph engine)
  rather than run or traced by the eager engine."""
  return not tf.compat.v1.executing_eagerly_outside_functions()


def family():
  """The `metrics` module of the Keras that runs here (see the docstring)."""
  if in_graph_engine():
    import tf_keras  # pylint: disable=g-import-not-at-top
    return tf_keras.metrics
  import keras  # pylint: disable=g-import-not-at-top
  return keras.metrics


def _as_built_in(cls, base):
  """`cls` (a subclass of Keras metric class `base` that adds no state and
  no update ops of its own) made to be built as `base` is.

  In a graph, tf_keras builds the `update_state` of a metric class defined
  outside its own `metrics` package inside a `tf.function` (so that its
  users' TF1 metrics need no control dependencies): a function traced,
  AutoGraph-converted and called through a function op at every
  evaluation's build, where its own classes' updates are plain ops. 2.15's
  heads built these two metrics from plain ops (its accuracy baseline a
  built-in Mean, its v1 heads' AUC `tf.compat.v1.metrics.auc`), so `cls`
  is built as tf_keras' own: tf_keras tells those by their module.
  Keras 3 (the eager engine) wraps no metric: `cls` is left as it is."""
  if in_graph_engine():
    cls.__module__ = base.__module__
  return cls


def _baseline(label_mean):
  return tf.math.maximum(label_mean, 1. - label_mean)


def accuracy_baseline(*, name: str):
  """A metric of max(label mean, 1 - label mean): the accuracy of always
  predicting the more frequent class. Update it with the labels (and
  weights) as label/mean is updated.

  2.15 assigned label/mean's total and count to a Mean metric instead;
  max(total, count - total) / count is the same number, and a metric with
  its own state is reset and reduced across replicas like any other.
  """
  base = family().Mean

  class AccuracyBaseline(base):

    def result(self):
      return _baseline(super().result())

  return _as_built_in(AccuracyBaseline, base)(name=name)


def trapezoidal_auc(*, curve: str, name: str):
  """An AUC metric whose result is `tf.compat.v1.metrics.auc`'s (the
  trapezoidal rule over 200 thresholds, precision and recall smoothed by
  1e-6), what tf.estimator 2.15's v1 heads reported, the
  tf.compat.v1.estimator canned classifiers' included. For a PR curve it
  differs from Keras' AUC, which interpolates between thresholds (2.15's
  TF2 heads'). Update it as any AUC metric."""
  base = family().AUC

  class TrapezoidalAUC(base):

    def result(self):
      epsilon = 1.0e-6  # As tf.compat.v1.metrics.auc's compute_auc.
      tp, fp = self.true_positives, self.false_positives
      recall = (tp + epsilon) / (tp + self.false_negatives + epsilon)
      if curve == 'ROC':
        x, y = fp / (fp + self.true_negatives + epsilon), recall
      else:
        x, y = recall, (tp + epsilon) / (tp + fp + epsilon)
      return tf.reduce_sum((x[:-1] - x[1:]) * (y[:-1] + y[1:]) / 2.)

  return _as_built_in(TrapezoidalAUC, base)(curve=curve, name=name)


def update_auc(metric, labels, predictions, weights) -> None:
  """Updates an AUC (or a thresholded) metric with weights broadcast to the
  predictions' shape, as 2.15 did (a multi-label example's weight applies
  to each of its classes)."""
  predictions = tf.cast(predictions, tf.float32)
  if weights is not None:
    weights = tf.broadcast_to(tf.cast(weights, tf.float32),
                              tf.shape(predictions))
  metric.update_state(labels, predictions, sample_weight=weights)


def as_eval_metric_ops(eval_metrics, *, update_gives_value: bool = False):
  """`eval_metrics` (metric objects by key) as an EstimatorSpec's
  eval_metric_ops: in a graph, `(result, update_op)` pairs, as 2.15's
  EstimatorSpec made them (its tests and programs index them), the
  metrics' variables added to LOCAL_VARIABLES (initialized before each
  evaluation, never saved) and METRIC_VARIABLES; in the eager engine, the
  Keras 3 metric objects, which it resets and reduces itself. A value
  that is no metric object (a pair already) is kept. `update_gives_value`:
  each update op is the metric's value after it (tf.compat.v1.metrics',
  2.15's v1 heads' pairs), see spec.metric_object_as_pair."""
  if not in_graph_engine():
    return eval_metrics
  ops = {}
  for key, metric in eval_metrics.items():
    updates = getattr(metric, 'updates', None)
    if not updates or not callable(getattr(metric, 'result', None)):
      ops[key] = metric
      continue
    ops[key] = spec.metric_object_as_pair(
        metric, updates, update_gives_value=update_gives_value)
  return ops
