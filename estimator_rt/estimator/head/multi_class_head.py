"""MultiClassHead: softmax classification over n_classes (tf.estimator
2.15's head).

The loss is sparse softmax cross-entropy; predictions are logits,
probabilities, class_ids, classes, all_class_ids, all_classes; evaluation
gives average_loss and accuracy; exports serving_default and classification
(classes and scores) and predict.
"""

import tensorflow as tf

from estimator_rt.core.errors import UserInputError
from estimator_rt.estimator.head import base_head
from estimator_rt.estimator.head import keys as keys_lib
from estimator_rt.estimator.head import metrics as metrics_lib
from estimator_rt.core import export_outputs as outputs_lib

_P = keys_lib.PredictionKeys
_M = keys_lib.MetricKeys


class MultiClassHead(base_head.SingleHead):
  """A head for classification into `n_classes` (> 2); 2.15's signature.

  Args:
    n_classes: the number of classes, > 2 (use BinaryClassHead for 2).
    weight_column: a feature key or numeric column weighting each example.
    label_vocabulary: the class strings, when labels are strings.
    loss_reduction: SUM_OVER_BATCH_SIZE (default), SUM or AUTO (reduced
      as SUM_OVER_BATCH_SIZE; not scaled for replicas, as in 2.15).
    loss_fn: `loss_fn(labels, logits)` -> unreduced loss [batch, 1].
    name: appended to metric and summary keys ('/name').
  """

  def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
               loss_reduction=base_head.SUM_OVER_BATCH_SIZE, loss_fn=None,
               name=None):
    if n_classes is None:
      raise UserInputError(
          'n_classes cannot be None: give the number of classes (> 2).')
    if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                       (list, tuple)):
      raise UserInputError(
          'label_vocabulary should be a list or a tuple. Given type: '
          f'{type(label_vocabulary)}')
    if label_vocabulary is not None and len(label_vocabulary) != n_classes:
      raise UserInputError(
          '"label_vocabulary" does not have "n_classes" items. '
          f'len(label_vocabulary)={len(label_vocabulary)}, '
          f'n_classes={n_classes}, label_vocabulary={label_vocabulary}')
    self._init_common(weight_column=weight_column,
                      loss_reduction=loss_reduction, loss_fn=loss_fn,
                      name=name)
    self._n_classes = base_head.validate_n_classes(n_classes)
    self._label_vocabulary = label_vocabulary

  @property
  def logits_dimension(self) -> int:
    return self._n_classes

  def _processed_labels(self, logits, labels):
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels, logits, 1)
    if self._label_vocabulary is None:
      if not labels.dtype.is_integer:
        raise UserInputError(
            f'Labels dtype should be integer. Instead got {labels.dtype}. '
            '(Give label_vocabulary for string labels.)')
    elif labels.dtype != tf.string:
      raise UserInputError(
          'Labels dtype should be string if there is a vocabulary. Instead '
          f'got {labels.dtype}')
    labels = base_head.label_ids(labels, self._label_vocabulary,
                                 head='MultiClassHead')
    return base_head.check_label_range(labels, self._n_classes,
                                       v1_wording=self._V1_OP_NAMES)

  def _default_loss(self, labels, logits):
    # 2.15's names (tf.compat.v1.losses.sparse_softmax_cross_entropy's).
    with tf.name_scope('sparse_softmax_cross_entropy_loss'):
      losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=tf.squeeze(labels, -1), logits=logits, name='xentropy')
    # Per example, [batch, 1] like the weights.
    return tf.expand_dims(losses, -1)

  _VALID_KEYS = (_P.LOGITS, _P.PROBABILITIES, _P.CLASS_IDS, _P.CLASSES,
                 _P.ALL_CLASS_IDS, _P.ALL_CLASSES)

  def predictions(self, logits, keys=None):
    if keys:
      self._check_prediction_keys(keys, self._VALID_KEYS)
    keys = keys or self._VALID_KEYS
    logits = base_head.check_logits_final_dim(logits, self._n_classes)
    out = {}
    with tf.name_scope('predictions'):
      if _P.LOGITS in keys:
        out[_P.LOGITS] = logits
      if self._V1_OP_NAMES:
        # 2.15's v1 head made them in this order, which numbers the names
        # (class_ids is predictions/ExpandDims_2 there).
        self._v1_class_predictions(out, keys, logits)
        return out
      if _P.PROBABILITIES in keys:
        out[_P.PROBABILITIES] = tf.nn.softmax(logits, name=_P.PROBABILITIES)
      base_head.add_class_predictions(out, keys, logits, self._n_classes,
                                      self._label_vocabulary)
    return out

  def _v1_class_predictions(self, out, keys, logits) -> None:
    """Adds the predictions of `keys` but the logits to `out`, in the order
    2.15's v1 head made them: all_class_ids, all_classes, class_ids,
    classes, probabilities."""
    for key, make in (
        (_P.ALL_CLASS_IDS, lambda: base_head.all_class_ids(
            logits, self._n_classes)),
        (_P.ALL_CLASSES, lambda: base_head.all_classes(
            logits, self._n_classes, self._label_vocabulary))):
      if key in keys:
        out[key] = make()
    base_head.add_class_predictions(
        out, [key for key in keys if key in (_P.CLASS_IDS, _P.CLASSES)],
        logits, self._n_classes, self._label_vocabulary)
    if _P.PROBABILITIES in keys:
      out[_P.PROBABILITIES] = tf.nn.softmax(logits, name=_P.PROBABILITIES)

  def metrics(self, regularization_losses=None):
    family = metrics_lib.family()
    key = self._summary_key
    with tf.name_scope('metrics'):
      metrics = {key(_M.LOSS_MEAN): family.Mean(name=_M.LOSS_MEAN),
                 key(_M.ACCURACY): family.Accuracy(name=_M.ACCURACY)}
      if regularization_losses is not None:
        metrics[key(_M.LOSS_REGULARIZATION)] = family.Mean(
            name=_M.LOSS_REGULARIZATION)
    return metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    logits = base_head.check_logits_final_dim(logits, self._n_classes)
    class_ids = self.predictions(logits, [_P.CLASS_IDS])[_P.CLASS_IDS]
    label_ids = self._processed_labels(logits, labels)
    unweighted, weights = self._unweighted_loss_and_weights(
        logits, label_ids, features)
    return self._update_metrics_with(
        eval_metrics, labels=label_ids, class_ids=class_ids, weights=weights,
        unreduced_loss=unweighted,
        regularization_loss=(None if regularization_losses is None else
                             tf.math.add_n(regularization_losses)))

  def _update_metrics_with(self, eval_metrics, *, labels, class_ids, weights,
                           unreduced_loss, regularization_loss):
    """Updates `eval_metrics` (from `metrics()`) with one batch's label ids,
    class ids, weights, unreduced loss and regularization loss (None: no
    such metric); returns them. (2.15's v1 head's `_eval_metric_ops`
    takes these, see v1_head.py.)"""
    key = self._summary_key
    eval_metrics[key(_M.LOSS_MEAN)].update_state(unreduced_loss,
                                                 sample_weight=weights)
    eval_metrics[key(_M.ACCURACY)].update_state(labels, class_ids,
                                                sample_weight=weights)
    if regularization_loss is not None:
      eval_metrics[key(_M.LOSS_REGULARIZATION)].update_state(
          regularization_loss)
    return eval_metrics

  def _export_outputs(self, predictions):
    classifier = base_head.classification_output(
        predictions[_P.PROBABILITIES], self._n_classes,
        self._label_vocabulary)
    return {
        keys_lib.DEFAULT_SERVING_KEY: classifier,
        keys_lib.CLASSIFY_SERVING_KEY: classifier,
        keys_lib.PREDICT_SERVING_KEY: outputs_lib.PredictOutput(predictions),
    }
