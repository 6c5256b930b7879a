"""tf.estimator 2.15's `head/binary_class_head.py`: `BinaryClassHead`, estimator_rt's."""

# pylint: disable=unused-import
from estimator_rt.head.binary_class_head import BinaryClassHead
from estimator_rt.mode_keys import ModeKeys
