"""tensorflow_estimator.python.estimator.tpu.tpu_context, over
estimator_rt.tpu_context (tf.estimator 2.15's TPU contexts, which a
TPUEstimator holds as `_ctx`) and tf.estimator's replica context of a
TPU program's summaries."""

import tensorflow as tf
from tensorflow.python.distribute import distribute_lib  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import summary_ops_v2  # pylint: disable=g-direct-tensorflow-import

# pylint: disable=unused-import,g-bad-import-order
from estimator_rt.tpu_context import _DEFAULT_COORDINATOR_JOB_NAME
from estimator_rt.tpu_context import _DEFAULT_JOB_NAME
from estimator_rt.tpu_context import _LOCAL_MASTERS
from estimator_rt.tpu_context import _NUM_CORES_TO_COMPUTATION_SHAPE
from estimator_rt.tpu_context import get_tpu_context as _get_tpu_context
from estimator_rt.tpu_context import InternalTPUContext as _InternalTPUContext
from estimator_rt.tpu_context import OneCoreTPUContext as _OneCoreTPUContext
from estimator_rt.tpu_context import TPUContext
# pylint: enable=unused-import,g-bad-import-order


class _TPUEstimatorReplicaContext(tf.distribute.ReplicaContext):
  """The replica context of one replica (`replica_id_in_sync`, a tensor in
  a TPU program) of a TPUEstimator's computation: while entered, TF2
  summaries record on replica 0 only. Variables are read and watched
  through the default strategy."""

  def __init__(self, replica_id_in_sync):
    super().__init__(None, replica_id_in_sync)
    # pylint: disable=protected-access
    self._thread_context = distribute_lib._DefaultReplicaThreadMode()
    self._strategy = self._thread_context.strategy
    # pylint: enable=protected-access

  def __enter__(self):

    def replica_id_is_zero():
      return tf.math.equal(self.replica_id_in_sync_group, tf.constant(0))

    summary_state = getattr(summary_ops_v2, '_summary_state', None)
    if summary_state is not None:
      self._summary_recording_distribution_strategy = (
          summary_state.is_recording_distribution_strategy)
      summary_state.is_recording_distribution_strategy = replica_id_is_zero

  def __exit__(self, exception_type, exception_value, traceback):
    summary_state = getattr(summary_ops_v2, '_summary_state', None)
    if summary_state is not None:
      summary_state.is_recording_distribution_strategy = (
          self._summary_recording_distribution_strategy)
