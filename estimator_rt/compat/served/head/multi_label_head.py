"""tf.estimator 2.15's `head/multi_label_head.py`: `MultiLabelHead`, estimator_rt's."""

# pylint: disable=unused-import
from estimator_rt.estimator.head.multi_label_head import MultiLabelHead
from estimator_rt.core.mode_keys import ModeKeys
