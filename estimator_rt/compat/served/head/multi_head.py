"""tf.estimator 2.15's `head/multi_head.py`: `MultiHead`, estimator_rt's."""

# pylint: disable=unused-import
from estimator_rt.head.multi_head import MultiHead
from estimator_rt.head.multi_head import _no_op_train_fn
from estimator_rt.head.multi_head import default_export_output as _default_export_output
from estimator_rt.mode_keys import ModeKeys
