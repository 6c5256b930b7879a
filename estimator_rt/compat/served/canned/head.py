"""tf.estimator 2.15's `canned/head.py`: the v1 heads. `_Head`, the v1 head
interface libraries subclass, `LossSpec`, the binary, multi-class and
regression heads of the tf.compat.v1.estimator canned estimators (their
classes and factory functions) and the helpers code built on them calls,
over estimator_rt.head (see estimator_rt/head/v1_head.py)."""

# pylint: disable=unused-import,invalid-name
from estimator_rt.head import base_head as _base_head
from estimator_rt.head import keys as _keys
from estimator_rt.head import v1_head as _v1_head
from estimator_rt.head import v1_metrics as _v1_metrics
from estimator_rt.mode_keys import ModeKeys

_DEFAULT_SERVING_KEY = _keys.DEFAULT_SERVING_KEY
_CLASSIFY_SERVING_KEY = _keys.CLASSIFY_SERVING_KEY
_REGRESS_SERVING_KEY = _keys.REGRESS_SERVING_KEY
_PREDICT_SERVING_KEY = _keys.PREDICT_SERVING_KEY

LossSpec = _v1_head.LossSpec
_Head = _v1_head.V1Head
_summary_key = _v1_head.summary_key
_create_eval_metrics_tuple = _base_head.create_eval_metrics_tuple
_append_update_ops = _v1_head.append_update_ops

# The v1 heads' metric helpers, which programs' own eval_metric_ops call.
_indicator_labels_mean = _v1_metrics.indicator_labels_mean
_predictions_mean = _v1_metrics.predictions_mean
_accuracy_baseline = _v1_metrics.accuracy_baseline
_auc = _v1_metrics.auc
_accuracy_at_threshold = _v1_metrics.accuracy_at_threshold
_precision_at_threshold = _v1_metrics.precision_at_threshold
_recall_at_threshold = _v1_metrics.recall_at_threshold

_BinaryLogisticHeadWithSigmoidCrossEntropyLoss = _v1_head.BinaryLogisticHead
_MultiClassHeadWithSoftmaxCrossEntropyLoss = _v1_head.MultiClassSoftmaxHead
_RegressionHeadWithMeanSquaredErrorLoss = _v1_head.MeanSquaredErrorHead
_binary_logistic_head_with_sigmoid_cross_entropy_loss = (
    _v1_head.binary_logistic_head)
_multi_class_head_with_softmax_cross_entropy_loss = _v1_head.multi_class_head
_regression_head = _v1_head.regression_head
_binary_logistic_or_multi_class_head = (
    _v1_head.binary_logistic_or_multi_class_head)

_check_dense_labels_match_logits_and_reshape = (
    _base_head.check_dense_labels_match_logits_and_reshape)
_get_weights_and_check_match_logits = (
    _base_head.get_weights_and_check_match_logits)
_check_logits_final_dim = _base_head.check_logits_final_dim
_validate_loss_fn_args = _base_head.validate_loss_fn_args
_validate_n_classes = _base_head.validate_n_classes
_call_loss_fn = _base_head.call_loss_fn
_all_class_ids = _base_head.all_class_ids
_all_classes = _base_head.all_classes
_classification_output = _base_head.classification_output


def _assert_range(labels, n_classes, message=None):
  """2.15's: `labels`, checked to lie in [0, n_classes - 1]."""
  return _base_head.check_label_range(labels, n_classes, message=message)
