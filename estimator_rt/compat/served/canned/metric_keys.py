"""tf.estimator 2.15's `canned/metric_keys.py`: `MetricKeys`, the keys of
the heads' and canned estimators' evaluation metrics (estimator_rt's)."""

# pylint: disable=unused-import
from estimator_rt.estimator.head.keys import MetricKeys
