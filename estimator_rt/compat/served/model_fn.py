"""tf.estimator 2.15's `model_fn` module: its private names that code
(and 2.15's testing modules' mock heads) use, over estimator_rt's objects.
Its public names (EstimatorSpec, ...) come from module_paths.json.
"""

from estimator_rt import tpu

# 2.15's base of TPUEstimatorSpec, with the same fields and
# `as_estimator_spec()`; here the public class itself (a TPUEstimatorSpec
# is one, as it was in 2.15).
_TPUEstimatorSpec = tpu.TPUEstimatorSpec
