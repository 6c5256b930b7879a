"""tf.estimator 2.15's `head/base_head.py`: the Head base class and the
helpers its heads, its canned estimators and libraries built on it call
(shape and label checks, the train op, summaries, TPU metric tuples), with
2.15's names and signatures, over estimator_rt.head."""

# pylint: disable=unused-import
from estimator_rt.head.base_head import call_loss_fn
from estimator_rt.head.base_head import check_dense_labels_match_logits_and_reshape
from estimator_rt.head.base_head import check_label_range
from estimator_rt.head.base_head import check_logits_final_dim
from estimator_rt.head.base_head import check_prediction_keys
from estimator_rt.head.base_head import classification_output
from estimator_rt.head.base_head import all_class_ids
from estimator_rt.head.base_head import all_classes
from estimator_rt.head.base_head import create_estimator_spec_summary
from estimator_rt.head.base_head import create_estimator_spec_train_op
from estimator_rt.head.base_head import create_eval_metrics_tuple
from estimator_rt.head.base_head import get_weights_and_check_match_logits
from estimator_rt.head.base_head import Head
from estimator_rt.head.base_head import update_metric_with_broadcast_weights
from estimator_rt.head.base_head import validate_loss_fn_args
from estimator_rt.head.base_head import validate_loss_reduction
from estimator_rt.head.base_head import validate_n_classes
from estimator_rt.head.base_head import validate_trainable_variables
from estimator_rt.head.base_head import validate_update_ops
from estimator_rt.head.base_head import validate_v2_optimizer
from estimator_rt.head import checks as _checks
from estimator_rt.head import keys as _keys

DEFAULT_SERVING_KEY = _keys.DEFAULT_SERVING_KEY
CLASSIFY_SERVING_KEY = _keys.CLASSIFY_SERVING_KEY
REGRESS_SERVING_KEY = _keys.REGRESS_SERVING_KEY
PREDICT_SERVING_KEY = _keys.PREDICT_SERVING_KEY

# 2.15's messages, which heads built on these raise (labels=None:
# MultiLabelHead-like subclasses) and format.
_LABEL_NONE_ERR_MSG = _checks.LABEL_NONE_ERR_MSG
_SPARSE_LABEL_ERR_MSG = _checks.SPARSE_LABEL_ERR_MSG
_MISMATCHED_LABEL_DIM_ERR_MSG = _checks.MISMATCHED_LABEL_DIM_ERR_MSG
_LABEL_SHAPE_ERR_MSG = _checks.LABEL_SHAPE_ERR_MSG
_VALIDATION_ERROR_MSG = _checks.VALIDATION_ERROR_MSG
