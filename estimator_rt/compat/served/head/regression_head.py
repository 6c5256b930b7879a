"""tf.estimator 2.15's `head/regression_head.py`: the regression heads,
estimator_rt's."""

# pylint: disable=unused-import
from estimator_rt.estimator.head.regression_head import LogisticRegressionHead
from estimator_rt.estimator.head.regression_head import PoissonRegressionHead
from estimator_rt.estimator.head.regression_head import RegressionHead
from estimator_rt.core.mode_keys import ModeKeys
