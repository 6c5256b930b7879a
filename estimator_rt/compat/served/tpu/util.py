"""tensorflow_estimator.python.estimator.tpu.util, over estimator_rt.estimator.tpu.tpu_estimator:
tf.estimator's parsing of TPUConfig.iterations_per_loop and its positive
integer check, the ones TPUConfig validates with."""

# pylint: disable=unused-import,g-bad-import-order
from estimator_rt.compat.served.util import MultiHostDatasetInitializerHook
from estimator_rt.estimator.tpu.tpu_estimator import _ITERATIONS_PER_LOOP as _ITERATIONS_PER_LOOP_VALUE_REGEX
from estimator_rt.estimator.tpu.tpu_estimator import check_positive_integer
from estimator_rt.estimator.tpu.tpu_estimator import IterationsPerLoopCounter
from estimator_rt.estimator.tpu.tpu_estimator import parse_iterations_per_loop
# pylint: enable=unused-import,g-bad-import-order
