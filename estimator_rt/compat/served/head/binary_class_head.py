"""tf.estimator 2.15's `head/binary_class_head.py`: `BinaryClassHead`, estimator_rt's."""

# pylint: disable=unused-import
from estimator_rt.estimator.head.binary_class_head import BinaryClassHead
from estimator_rt.core.mode_keys import ModeKeys
