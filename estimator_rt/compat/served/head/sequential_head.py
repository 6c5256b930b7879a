"""tf.estimator 2.15's `head/sequential_head.py`: `SequentialHeadWrapper`
(a head over each real step of a sequence, which its RNN estimators used),
its private base class and flattening helper, estimator_rt's."""

# pylint: disable=unused-import
from estimator_rt.estimator.head.sequential_head import _flatten_tensor
from estimator_rt.estimator.head.sequential_head import _SequentialHead
from estimator_rt.estimator.head.sequential_head import SequentialHeadWrapper
from estimator_rt.core.mode_keys import ModeKeys
