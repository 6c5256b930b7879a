"""tf.estimator 2.15's `extenders` module, over estimator_rt.extenders:
`add_metrics` and the two helpers it is made of (checking a metric_fn's
arguments, calling it with those it declares)."""

# pylint: disable=unused-import
from estimator_rt.extenders import _call_metric_fn
from estimator_rt.extenders import _verify_metric_fn_args
from estimator_rt.extenders import add_metrics
from estimator_rt.mode_keys import ModeKeys
# pylint: enable=unused-import
