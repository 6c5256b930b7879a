"""tf.estimator 2.15's `head/multi_class_head.py`: `MultiClassHead`, estimator_rt's."""

# pylint: disable=unused-import
from estimator_rt.head.multi_class_head import MultiClassHead
from estimator_rt.mode_keys import ModeKeys
