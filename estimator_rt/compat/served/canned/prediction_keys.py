"""tf.estimator 2.15's `canned/prediction_keys.py`: `PredictionKeys`, the
keys of the heads' predictions (estimator_rt's)."""

# pylint: disable=unused-import
from estimator_rt.estimator.head.keys import PredictionKeys
