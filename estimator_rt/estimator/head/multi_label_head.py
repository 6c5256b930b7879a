"""MultiLabelHead: independent yes/no decisions for each of `n_classes`
classes (tf.estimator 2.15's head).

The loss is sigmoid cross-entropy per class, averaged over the classes of
an example; predictions are logits, probabilities (one sigmoid per class)
and classes (every class name, per example); evaluation gives
average_loss, auc and auc_precision_recall (over every example and class),
accuracy/precision/recall at each of `thresholds`, and probability_mean,
auc and auc_precision_recall of each class in
`classes_for_class_based_metrics`; exports serving_default and
classification (classes and scores) and predict.
"""

import tensorflow as tf

from estimator_rt.core import export_outputs as outputs_lib
from estimator_rt.core.errors import UserInputError
from estimator_rt.estimator.head import base_head
from estimator_rt.estimator.head import checks
from estimator_rt.estimator.head import keys as keys_lib
from estimator_rt.estimator.head import metrics as metrics_lib

_P = keys_lib.PredictionKeys
_M = keys_lib.MetricKeys


class MultiLabelHead(base_head.SingleHead):
  """A head for multi-label classification; tf.estimator 2.15's signature.

  Labels are either a dense integer indicator tensor [batch, n_classes] of
  0s and 1s, or a `SparseTensor` of the class ids present in each example
  (strings of `label_vocabulary` when it is given).

  Args:
    n_classes: the number of classes, > 1.
    weight_column: a feature key or numeric column weighting each example
      (every class of it alike).
    thresholds: floats in (0, 1): accuracy, precision and recall are
      reported with each as the probability above which a class is
      predicted present.
    label_vocabulary: the class strings, when sparse labels are strings;
      also names the classes in predictions and per-class metric keys.
    loss_reduction: SUM_OVER_BATCH_SIZE (default), SUM or AUTO (reduced
      as SUM_OVER_BATCH_SIZE; not scaled for replicas, as in 2.15).
    loss_fn: `loss_fn(labels, logits[, features])` -> unreduced loss of
      shape [batch, 1], instead of the mean sigmoid cross-entropy.
    classes_for_class_based_metrics: class ids (or strings of
      `label_vocabulary`) to report probability_mean, auc and
      auc_precision_recall of, each on its own.
    name: appended to metric and summary keys ('/name').

  Raises:
    ValueError: an argument is out of range (the message names it).
  """

  def __init__(self, n_classes, weight_column=None, thresholds=None,
               label_vocabulary=None,
               loss_reduction=base_head.SUM_OVER_BATCH_SIZE, loss_fn=None,
               classes_for_class_based_metrics=None, name=None):
    if n_classes is None or n_classes < 2:
      raise UserInputError(
          'n_classes must be > 1 for multi-label classification. Given: '
          f'{n_classes}')
    thresholds = tuple(thresholds) if thresholds else ()
    for threshold in thresholds:
      if not 0. < threshold < 1.:
        raise UserInputError(
            f'thresholds must be in (0, 1) range. Given: {threshold}')
    if label_vocabulary is not None:
      if not isinstance(label_vocabulary, (list, tuple)):
        raise UserInputError(
            'label_vocabulary must be a list or tuple. Given type: '
            f'{type(label_vocabulary)}')
      if len(label_vocabulary) != n_classes:
        raise UserInputError(
            f'Length of label_vocabulary must be n_classes ({n_classes}). '
            f'Given: {len(label_vocabulary)}')
    self._init_common(weight_column=weight_column,
                      loss_reduction=loss_reduction, loss_fn=loss_fn,
                      name=name)
    self._n_classes = n_classes
    self._thresholds = thresholds
    self._label_vocabulary = label_vocabulary
    self._class_ids = self._class_ids_for_metrics(
        classes_for_class_based_metrics)

  def _class_ids_for_metrics(self, classes):
    if not classes:
      return ()
    classes = tuple(classes)
    if isinstance(classes[0], str):
      if not self._label_vocabulary:
        raise UserInputError(
            'label_vocabulary must be provided when '
            'classes_for_class_based_metrics are strings.')
      # list.index's ValueError ("'z' is not in list") names a missing one,
      # as in 2.15.
      return tuple(list(self._label_vocabulary).index(c) for c in classes)
    for class_id in classes:
      if class_id < 0 or class_id >= self._n_classes:
        raise UserInputError(
            'All classes_for_class_based_metrics must be in range [0, '
            f'{self._n_classes - 1}]. Given: {class_id}')
    return classes

  @property
  def logits_dimension(self) -> int:
    return self._n_classes

  def _class_label(self, class_id) -> str:
    """How class `class_id` is named in its metric keys."""
    if self._label_vocabulary is None:
      return None
    return self._label_vocabulary[class_id]

  def _processed_labels(self, logits, labels):
    """Labels as an int64 indicator [D0, ... DN, n_classes], from a dense
    0/1 indicator or a SparseTensor of class ids (strings of the
    vocabulary), checked."""
    if labels is None:
      raise UserInputError(checks.LABEL_NONE_MESSAGE)
    if isinstance(labels, tf.SparseTensor):
      values = labels.values
      if labels.dtype == tf.string:
        if self._label_vocabulary is None:
          raise UserInputError(
              'MultiLabelHead: labels are strings; give label_vocabulary.')
        ids = base_head.label_ids(values, self._label_vocabulary,
                                  head='MultiLabelHead')
        indicator = tf.sparse.to_indicator(
            tf.SparseTensor(labels.indices, ids, labels.dense_shape),
            self._n_classes)
      else:
        if not values.dtype.is_integer:
          raise UserInputError(
              f'Labels dtype should be integer. Instead got {values.dtype}.')
        checked = base_head.check_label_range(
            values, self._n_classes,
            message=('labels must be an integer SparseTensor with values in '
                     f'[0, {self._n_classes})'))
        with tf.control_dependencies(
            [] if tf.executing_eagerly() else [checked]):
          indicator = tf.sparse.to_indicator(labels, self._n_classes)
      labels = tf.cast(indicator, tf.int64)
    else:
      labels = base_head.check_label_range(
          labels, 2,
          message='labels must be an integer indicator Tensor with values '
          'in [0, 1]')
    return base_head.check_dense_labels_match_logits_and_reshape(
        labels, logits, self._n_classes)

  def _default_loss(self, labels, logits):
    per_class = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(labels, logits.dtype), logits=logits)
    # One loss per example: the mean over its classes.
    return tf.math.reduce_mean(per_class, axis=-1, keepdims=True)

  _VALID_KEYS = (_P.LOGITS, _P.PROBABILITIES, _P.CLASSES)

  def predictions(self, logits, keys=None):
    """logits, probabilities (sigmoid of each logit) and classes (every
    class name, as ClassificationOutput takes them)."""
    if keys:
      self._check_prediction_keys(keys, self._VALID_KEYS)
    keys = keys or self._VALID_KEYS
    logits = base_head.check_logits_final_dim(logits, self._n_classes)
    out = {}
    with tf.name_scope('predictions'):
      if _P.LOGITS in keys:
        out[_P.LOGITS] = logits
      if _P.PROBABILITIES in keys:
        out[_P.PROBABILITIES] = tf.math.sigmoid(logits,
                                                name=_P.PROBABILITIES)
      if _P.CLASSES in keys:
        out[_P.CLASSES] = base_head.all_classes(logits, self._n_classes,
                                                self._label_vocabulary)
    return out

  def _class_keys(self, class_id):
    """The per-class metric keys (probability mean, auc, auc pr)."""
    label = self._class_label(class_id)
    if label is None:
      names = (_M.PROBABILITY_MEAN_AT_CLASS % class_id,
               _M.AUC_AT_CLASS % class_id, _M.AUC_PR_AT_CLASS % class_id)
    else:
      names = (_M.PROBABILITY_MEAN_AT_NAME % label, _M.AUC_AT_NAME % label,
               _M.AUC_PR_AT_NAME % label)
    return tuple(self._summary_key(n) for n in names)

  def metrics(self, regularization_losses=None):
    family = metrics_lib.family()
    key = self._summary_key
    with tf.name_scope('metrics'):
      metrics = {
          key(_M.LOSS_MEAN): family.Mean(name=_M.LOSS_MEAN),
          key(_M.AUC): family.AUC(name=_M.AUC),
          key(_M.AUC_PR): family.AUC(curve='PR', name=_M.AUC_PR),
      }
      if regularization_losses is not None:
        metrics[key(_M.LOSS_REGULARIZATION)] = family.Mean(
            name=_M.LOSS_REGULARIZATION)
      for threshold in self._thresholds:
        accuracy = key(_M.ACCURACY_AT_THRESHOLD % threshold)
        precision = key(_M.PRECISION_AT_THRESHOLD % threshold)
        recall = key(_M.RECALL_AT_THRESHOLD % threshold)
        metrics[accuracy] = family.BinaryAccuracy(name=accuracy,
                                                  threshold=threshold)
        metrics[precision] = family.Precision(name=precision,
                                              thresholds=threshold)
        metrics[recall] = family.Recall(name=recall, thresholds=threshold)
      for class_id in self._class_ids:
        mean_key, auc_key, auc_pr_key = self._class_keys(class_id)
        metrics[mean_key] = family.Mean(name=mean_key)
        metrics[auc_key] = family.AUC(name=auc_key)
        metrics[auc_pr_key] = family.AUC(curve='PR', name=auc_pr_key)
    return metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    key = self._summary_key
    logits = base_head.check_logits_final_dim(logits, self._n_classes)
    labels = self._processed_labels(logits, labels)
    unweighted, weights = self._unweighted_loss_and_weights(logits, labels,
                                                            features)
    probabilities = self.predictions(logits,
                                     [_P.PROBABILITIES])[_P.PROBABILITIES]
    eval_metrics[key(_M.LOSS_MEAN)].update_state(unweighted,
                                                 sample_weight=weights)
    # Over every (example, class): the [batch, 1] weights as they are, as
    # 2.15 passed them (Keras broadcasts them over the classes).
    for metric_key in (_M.AUC, _M.AUC_PR):
      eval_metrics[key(metric_key)].update_state(labels, probabilities,
                                                 sample_weight=weights)
    if regularization_losses is not None:
      eval_metrics[key(_M.LOSS_REGULARIZATION)].update_state(
          tf.math.add_n(regularization_losses))
    for threshold in self._thresholds:
      for metric_key in (_M.ACCURACY_AT_THRESHOLD, _M.PRECISION_AT_THRESHOLD,
                         _M.RECALL_AT_THRESHOLD):
        eval_metrics[key(metric_key % threshold)].update_state(
            labels, probabilities, sample_weight=weights)
    for class_id in self._class_ids:
      mean_key, auc_key, auc_pr_key = self._class_keys(class_id)
      class_probabilities = probabilities[..., class_id:class_id + 1]
      class_labels = labels[..., class_id:class_id + 1]
      base_head.update_metric_with_broadcast_weights(
          eval_metrics[mean_key], class_probabilities, weights)
      for metric_key in (auc_key, auc_pr_key):
        eval_metrics[metric_key].update_state(
            class_labels, class_probabilities, sample_weight=weights)
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
