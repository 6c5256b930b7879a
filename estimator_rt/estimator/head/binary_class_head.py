"""BinaryClassHead: logistic regression's head (tf.estimator 2.15's).

One logit per example; the loss is sigmoid cross-entropy; predictions are
logits, logistic, probabilities (of [class 0, class 1]), class_ids,
classes, all_class_ids, all_classes; evaluation gives average_loss,
accuracy, precision, recall, auc, auc_precision_recall (Keras AUC, 200
thresholds), label/mean, prediction/mean, accuracy_baseline, and accuracy/
precision/recall at each of `thresholds`; exports serving_default and
classification (classes and scores), regression (the logistic) and
predict.
"""

import tensorflow as tf

from estimator_rt.core.errors import UserInputError
from estimator_rt.estimator.head import base_head
from estimator_rt.estimator.head import keys as keys_lib
from estimator_rt.estimator.head import metrics as metrics_lib
from estimator_rt.core import export_outputs as outputs_lib

_P = keys_lib.PredictionKeys
_M = keys_lib.MetricKeys


class BinaryClassHead(base_head.SingleHead):
  """A head for binary classification; tf.estimator 2.15's signature.

  Args:
    weight_column: a feature key or numeric column weighting each example.
    thresholds: floats in (0, 1) for the per-threshold metrics.
    label_vocabulary: the two label strings, when labels are strings.
    loss_reduction: SUM_OVER_BATCH_SIZE (default), SUM or AUTO (reduced
      as SUM_OVER_BATCH_SIZE; not scaled for replicas, as in 2.15).
    loss_fn: `loss_fn(labels, logits[, features])` -> unreduced loss, instead
      of sigmoid cross-entropy.
    name: appended to metric and summary keys ('/name').
  """

  def __init__(self, weight_column=None, thresholds=None,
               label_vocabulary=None,
               loss_reduction=base_head.SUM_OVER_BATCH_SIZE, loss_fn=None,
               name=None):
    if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                       (list, tuple)):
      raise UserInputError(
          'label_vocabulary should be a list or a tuple. Given type: '
          f'{type(label_vocabulary)}')
    thresholds = tuple(thresholds) if thresholds else ()
    for threshold in thresholds:
      if not 0. < threshold < 1.:
        raise UserInputError(
            f'thresholds not in (0, 1): {thresholds}. Each threshold is a '
            'probability above which an example is predicted positive.')
    self._init_common(weight_column=weight_column,
                      loss_reduction=loss_reduction, loss_fn=loss_fn,
                      name=name)
    self._thresholds = thresholds
    self._label_vocabulary = label_vocabulary

  @property
  def logits_dimension(self) -> int:
    return 1

  def _processed_labels(self, logits, labels):
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels, logits, 1)
    labels = base_head.label_ids(labels, self._label_vocabulary,
                                 head='BinaryClassHead')
    return base_head.check_label_range(tf.cast(labels, tf.float32), 2,
                                       v1_wording=self._V1_OP_NAMES)

  def _default_loss(self, labels, logits):
    if (labels.shape.is_fully_defined() and logits.shape.is_fully_defined()
        and labels.shape != logits.shape):
      # 2.15's message (its sigmoid loss op's, in a graph).
      raise UserInputError(
          'logits and labels must have the same shape '
          f'({logits.shape} vs {labels.shape}).')
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                   logits=logits)

  _VALID_KEYS = (_P.LOGITS, _P.LOGISTIC, _P.PROBABILITIES, _P.CLASS_IDS,
                 _P.CLASSES, _P.ALL_CLASS_IDS, _P.ALL_CLASSES)

  def predictions(self, logits, keys=None):
    if keys:
      self._check_prediction_keys(keys, self._VALID_KEYS)
    keys = keys or self._VALID_KEYS
    logits = base_head.check_logits_final_dim(logits, 1)
    out = {}
    with tf.name_scope('predictions'):
      if _P.LOGITS in keys:
        out[_P.LOGITS] = logits
      if _P.LOGISTIC in keys:
        out[_P.LOGISTIC] = tf.math.sigmoid(logits, name=_P.LOGISTIC)
      two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1,
                                   name='two_class_logits')
      if _P.PROBABILITIES in keys:
        out[_P.PROBABILITIES] = tf.nn.softmax(two_class_logits,
                                              name=_P.PROBABILITIES)
      base_head.add_class_predictions(out, keys, two_class_logits, 2,
                                      self._label_vocabulary)
    return out

  def metrics(self, regularization_losses=None):
    family = metrics_lib.family()
    key = self._summary_key
    with tf.name_scope('metrics'):
      metrics = {
          key(_M.LOSS_MEAN): family.Mean(name=_M.LOSS_MEAN),
          key(_M.ACCURACY): family.Accuracy(name=_M.ACCURACY),
          key(_M.PRECISION): family.Precision(name=_M.PRECISION),
          key(_M.RECALL): family.Recall(name=_M.RECALL),
          key(_M.PREDICTION_MEAN): family.Mean(name=_M.PREDICTION_MEAN),
          key(_M.LABEL_MEAN): family.Mean(name=_M.LABEL_MEAN),
          key(_M.AUC): self._auc(curve='ROC', name=_M.AUC),
          key(_M.AUC_PR): self._auc(curve='PR', name=_M.AUC_PR),
      }
      # The accuracy of always predicting the more frequent class.
      metrics[key(_M.ACCURACY_BASELINE)] = metrics_lib.accuracy_baseline(
          name=_M.ACCURACY_BASELINE)
      if regularization_losses is not None:
        metrics[key(_M.LOSS_REGULARIZATION)] = family.Mean(
            name=_M.LOSS_REGULARIZATION)
      for threshold in self._thresholds:
        for metric_key, cls in ((_M.ACCURACY_AT_THRESHOLD,
                                 family.BinaryAccuracy),
                                (_M.PRECISION_AT_THRESHOLD, family.Precision),
                                (_M.RECALL_AT_THRESHOLD, family.Recall)):
          name = key(metric_key % threshold)
          argument = ('threshold' if cls is family.BinaryAccuracy
                      else 'thresholds')
          metrics[name] = cls(name=name, **{argument: threshold})
    return metrics

  def _auc(self, *, curve: str, name: str):
    """The auc and auc_precision_recall metric (Keras' AUC, as 2.15's TF2
    heads; see v1.py for the v1 classifiers')."""
    return metrics_lib.family().AUC(curve=curve, name=name)

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    logits = base_head.check_logits_final_dim(logits, 1)
    predictions = self.predictions(logits, [_P.CLASS_IDS, _P.LOGISTIC])
    labels = self._processed_labels(logits, labels)
    unweighted, weights = self._unweighted_loss_and_weights(logits, labels,
                                                            features)
    return self._update_metrics_with(
        eval_metrics, labels=labels, logistic=predictions[_P.LOGISTIC],
        class_ids=predictions[_P.CLASS_IDS], weights=weights,
        unreduced_loss=unweighted,
        regularization_loss=(None if regularization_losses is None else
                             tf.math.add_n(regularization_losses)))

  def _update_metrics_with(self, eval_metrics, *, labels, logistic,
                           class_ids, weights, unreduced_loss,
                           regularization_loss):
    """Updates `eval_metrics` (from `metrics()`) with one batch's processed
    labels, predictions, weights, unreduced loss and regularization loss
    (None: no such metric); returns them. (2.15's v1 head's
    `_eval_metric_ops` takes these, see v1_head.py.)"""
    key = self._summary_key
    eval_metrics[key(_M.LOSS_MEAN)].update_state(unreduced_loss,
                                                 sample_weight=weights)
    for metric_key in (_M.ACCURACY, _M.PRECISION, _M.RECALL):
      eval_metrics[key(metric_key)].update_state(labels, class_ids,
                                                 sample_weight=weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[key(_M.PREDICTION_MEAN)], logistic, weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[key(_M.LABEL_MEAN)], labels, weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[key(_M.ACCURACY_BASELINE)], labels, weights)
    for metric_key in (_M.AUC, _M.AUC_PR):
      metrics_lib.update_auc(eval_metrics[key(metric_key)], labels, logistic,
                             weights)
    if regularization_loss is not None:
      eval_metrics[key(_M.LOSS_REGULARIZATION)].update_state(
          regularization_loss)
    for threshold in self._thresholds:
      for metric_key in (_M.ACCURACY_AT_THRESHOLD, _M.PRECISION_AT_THRESHOLD,
                         _M.RECALL_AT_THRESHOLD):
        eval_metrics[key(metric_key % threshold)].update_state(
            labels, logistic, sample_weight=weights)
    return eval_metrics

  def _export_outputs(self, predictions):
    classifier = base_head.classification_output(
        predictions[_P.PROBABILITIES], 2, self._label_vocabulary)
    return {
        keys_lib.DEFAULT_SERVING_KEY: classifier,
        keys_lib.CLASSIFY_SERVING_KEY: classifier,
        keys_lib.REGRESS_SERVING_KEY: outputs_lib.RegressionOutput(
            value=predictions[_P.LOGISTIC]),
        keys_lib.PREDICT_SERVING_KEY: outputs_lib.PredictOutput(predictions),
    }
