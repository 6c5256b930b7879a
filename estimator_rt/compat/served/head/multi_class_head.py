"""tf.estimator 2.15's `head/multi_class_head.py`: `MultiClassHead`, estimator_rt's."""

# pylint: disable=unused-import
from estimator_rt.estimator.head.multi_class_head import MultiClassHead
from estimator_rt.core.mode_keys import ModeKeys
