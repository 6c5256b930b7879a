"""RegressionHead, PoissonRegressionHead, LogisticRegressionHead
(tf.estimator 2.15's).

The loss is squared error (or `loss_fn`); the prediction is the logits, or
`inverse_link_fn(logits)` (then the logits are predicted too); evaluation
gives average_loss, prediction/mean and label/mean; exports
serving_default and regression (the prediction) and predict.
"""

import tensorflow as tf

from estimator_rt.errors import UserInputError
from estimator_rt.head import base_head
from estimator_rt.head import keys as keys_lib
from estimator_rt.head import metrics as metrics_lib
from estimator_rt import export as export_lib

_P = keys_lib.PredictionKeys
_M = keys_lib.MetricKeys


class RegressionHead(base_head.SingleHead):
  """A head for regression on `label_dimension` values; 2.15's signature.

  Args:
    label_dimension: values per example.
    weight_column: a feature key or numeric column weighting each example.
    loss_reduction: SUM_OVER_BATCH_SIZE (default), SUM or AUTO (reduced
      as SUM_OVER_BATCH_SIZE; not scaled for replicas, as in 2.15).
    loss_fn: `loss_fn(labels, logits)` -> unreduced loss, instead of
      squared error.
    inverse_link_fn: maps logits to predictions (e.g. tf.math.exp).
    name: appended to metric and summary keys ('/name').
  """

  def __init__(self, label_dimension=1, weight_column=None,
               loss_reduction=base_head.SUM_OVER_BATCH_SIZE, loss_fn=None,
               inverse_link_fn=None, name=None):
    if (isinstance(label_dimension, bool) or
        not isinstance(label_dimension, int) or label_dimension < 1):
      raise UserInputError(
          f'Invalid label_dimension {label_dimension}: it must be an int >= '
          '1, the number of values per example.')
    self._init_common(weight_column=weight_column,
                      loss_reduction=loss_reduction, loss_fn=loss_fn,
                      name=name)
    self._logits_dimension = label_dimension
    self._inverse_link_fn = inverse_link_fn

  # The unreduced loss has a value per label dimension, and so may the
  # weights (2.15's).
  _LOSS_DIMENSION_IS_LOGITS_DIMENSION = True
  _PER_LOGIT_WEIGHTS = True

  @property
  def logits_dimension(self) -> int:
    return self._logits_dimension

  def _processed_labels(self, logits, labels):
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels, logits, self._logits_dimension)
    if labels.dtype == tf.string:
      raise UserInputError('RegressionHead: labels must be numbers, got '
                           'strings.')
    return tf.cast(labels, tf.float32)

  def _default_loss(self, labels, logits):
    # 2.15's name (tf.compat.v1.losses.mean_squared_error's).
    with tf.name_scope('mean_squared_error'):
      return tf.math.squared_difference(logits, labels)

  def predictions(self, logits, keys=None):
    valid = (_P.PREDICTIONS, _P.LOGITS) if self._inverse_link_fn else (
        _P.PREDICTIONS,)
    if keys:
      self._check_prediction_keys(keys, valid)
    keys = keys or valid
    logits = base_head.check_logits_final_dim(logits, self._logits_dimension)
    out = {}
    with tf.name_scope('predictions'):
      if _P.PREDICTIONS in keys:
        # The logits themselves (or the inverse link's result), by their
        # own name, as 2.15 predicted them.
        out[_P.PREDICTIONS] = (self._inverse_link_fn(logits)
                               if self._inverse_link_fn else logits)
      if _P.LOGITS in keys:
        out[_P.LOGITS] = logits
    return out

  def metrics(self, regularization_losses=None):
    family = metrics_lib.family()
    key = self._summary_key
    with tf.name_scope('metrics'):
      metrics = {
          key(_M.LOSS_MEAN): family.Mean(name=_M.LOSS_MEAN),
          key(_M.PREDICTION_MEAN): family.Mean(name=_M.PREDICTION_MEAN),
          key(_M.LABEL_MEAN): family.Mean(name=_M.LABEL_MEAN),
      }
      if regularization_losses is not None:
        metrics[key(_M.LOSS_REGULARIZATION)] = family.Mean(
            name=_M.LOSS_REGULARIZATION)
    return metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    logits = base_head.check_logits_final_dim(logits, self._logits_dimension)
    predicted = self.predictions(logits, [_P.PREDICTIONS])[_P.PREDICTIONS]
    labels = self._processed_labels(logits, labels)
    unweighted, weights = self._unweighted_loss_and_weights(logits, labels,
                                                            features)
    return self._update_metrics_with(
        eval_metrics, predicted_value=predicted, labels=labels,
        weights=weights, unreduced_loss=unweighted,
        regularization_loss=(None if regularization_losses is None else
                             tf.math.add_n(regularization_losses)))

  def _update_metrics_with(self, eval_metrics, *, predicted_value, labels,
                           weights, unreduced_loss, regularization_loss):
    """Updates `eval_metrics` (from `metrics()`) with one batch's
    predictions, labels, weights, unreduced loss and regularization loss
    (None: no such metric); returns them. (2.15's v1 head's
    `_eval_metric_ops` takes these, see v1_head.py.)"""
    key = self._summary_key
    eval_metrics[key(_M.LOSS_MEAN)].update_state(unreduced_loss,
                                                 sample_weight=weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[key(_M.PREDICTION_MEAN)], predicted_value, weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[key(_M.LABEL_MEAN)], labels, weights)
    if regularization_loss is not None:
      eval_metrics[key(_M.LOSS_REGULARIZATION)].update_state(
          regularization_loss)
    return eval_metrics

  def _export_outputs(self, predictions):
    regression = export_lib.RegressionOutput(value=predictions[_P.PREDICTIONS])
    return {
        keys_lib.DEFAULT_SERVING_KEY: regression,
        keys_lib.REGRESS_SERVING_KEY: regression,
        keys_lib.PREDICT_SERVING_KEY: export_lib.PredictOutput(predictions),
    }


class PoissonRegressionHead(RegressionHead):
  """Poisson regression: log-Poisson loss on log-rate logits, predictions
  exp(logits); 2.15's signature."""

  def __init__(self, label_dimension=1, weight_column=None,
               loss_reduction=base_head.SUM_OVER_BATCH_SIZE,
               compute_full_loss=True, name=None):
    self._compute_full_loss = compute_full_loss
    super().__init__(label_dimension=label_dimension,
                     weight_column=weight_column,
                     loss_reduction=loss_reduction, loss_fn=self._poisson_loss,
                     inverse_link_fn=tf.math.exp, name=name)

  def _poisson_loss(self, labels, logits):
    return tf.nn.log_poisson_loss(targets=labels, log_input=logits,
                                  compute_full_loss=self._compute_full_loss)


class LogisticRegressionHead(RegressionHead):
  """Regression to a probability in [0, 1]: sigmoid cross-entropy loss,
  predictions sigmoid(logits); 2.15's signature."""

  def __init__(self, weight_column=None,
               loss_reduction=base_head.SUM_OVER_BATCH_SIZE, name=None):
    super().__init__(label_dimension=1, weight_column=weight_column,
                     loss_reduction=loss_reduction,
                     loss_fn=self._logistic_loss,
                     inverse_link_fn=tf.math.sigmoid, name=name)

  def _logistic_loss(self, labels, logits):
    labels = base_head.check_label_range(
        labels, 2, message='Labels must be in range [0, 1]')
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                   logits=logits)
