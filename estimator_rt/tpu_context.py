"""What a TPUEstimator knows of its TPU computation: tf.estimator 2.15's
TPU contexts.

`InternalTPUContext` holds a TPUEstimator's settings (its tpu.RunConfig,
batch sizes, `use_tpu`, `eval_on_tpu`, embedding spec) and, for the mode
`with_mode` gives it, answers what 2.15's `_InternalTPUContext` answered:
whether the mode runs on the CPU, the batch sizes its input_fn and
model_fn see, the TPU job, host and device placement, the input pipeline
mode. `TPUContext` is the view of it a program's input_fn and model_fn
got in `params['context']`.

Without a TPU (`use_tpu=False`, or evaluation with `eval_on_tpu=False`)
every answer is 2.15's and no TPU is asked for anything. The answers about
the TPU system itself (its cores and hosts) come, as in 2.15, from
TensorFlow's query of the master's devices: done for a master that is
this process ('' or 'local'), where TensorFlow lists its devices at once
(none are TPU cores on a CPU machine), and refused in one line for a
remote master, which 2.15 contacted with minutes of retries to run a TPU
program that estimator_rt does not run. `OneCoreTPUContext` (2.15's, for
`TPUConfig(num_shards=1)`) knows its system without asking: one core on
one host.
"""

import contextlib
import copy
from typing import Optional

from absl import logging
import tensorflow as tf

from estimator_rt import tpu_system
from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys

# tf.estimator's values.
_DEFAULT_JOB_NAME = 'tpu_worker'
_DEFAULT_COORDINATOR_JOB_NAME = 'coordinator'
_LOCAL_MASTERS = ('', 'local')
# TPU cores of one replica -> the computation shape of its device
# assignment (model parallelism).
_NUM_CORES_TO_COMPUTATION_SHAPE = {
    1: [1, 1, 1, 1],
    2: [1, 1, 1, 2],
    4: [1, 2, 1, 2],
    8: [2, 2, 1, 2],
    16: [4, 2, 1, 2],
    32: [4, 4, 1, 2],
    64: [8, 4, 1, 2],
    128: [8, 8, 1, 2],
}

# tf.estimator's InputPipelineConfig values (estimator_rt.tpu's, which
# imports this module).
_PER_SHARD_V1 = 1
_PER_HOST_V2 = 3
_BROADCAST = 4
_SLICED = 5


def master_job(master: str, cluster_def) -> Optional[str]:
  """tf.estimator's TPU job for `master` in `cluster_def` (a ClusterDef or
  None): None for a local master; 'tpu_worker' without a cluster; the
  cluster's one job, or its one job besides 'coordinator'.

  Raises:
    ValueError: a job named 'tpu_worker' in the cluster, or no job to infer.
  """
  if master in _LOCAL_MASTERS:
    return None
  if not cluster_def or not cluster_def.job:
    return _DEFAULT_JOB_NAME
  names = {job.name for job in cluster_def.job}
  if _DEFAULT_JOB_NAME in names:
    raise UserInputError(
        'Currently, tpu_worker is not an allowed job name (session_config.'
        f'cluster_def jobs: {sorted(names)}).')
  if len(names) == 1:
    return cluster_def.job[0].name
  if len(names) == 2 and _DEFAULT_COORDINATOR_JOB_NAME in names:
    return (names - {_DEFAULT_COORDINATOR_JOB_NAME}).pop()
  raise UserInputError(
      f'Could not infer TPU job name (session_config.cluster_def jobs: '
      f'{sorted(names)}).')


class InternalTPUContext:
  """tf.estimator 2.15's `_InternalTPUContext`: a TPUEstimator's settings,
  and for one mode (`with_mode`) what its TPU computation is made of (see
  the module docstring).

  If `use_tpu` is False every mode runs on the CPU (`eval_on_tpu` is then
  ignored, with a warning); with `eval_on_tpu` False evaluation does.
  """

  def __init__(self, config, train_batch_size, eval_batch_size,
               predict_batch_size, use_tpu, eval_on_tpu=True,
               embedding_config_spec=None):
    self._config = config
    self._train_batch_size = train_batch_size
    self._eval_batch_size = eval_batch_size
    self._predict_batch_size = predict_batch_size
    self._use_tpu = use_tpu
    logging.info('_TPUContext: eval_on_tpu %s', eval_on_tpu)
    if not use_tpu and eval_on_tpu:
      logging.warning('eval_on_tpu ignored because use_tpu is False.')
    self._eval_on_tpu = eval_on_tpu
    self._model_parallelism_enabled = (
        use_tpu and config.tpu_config.num_cores_per_replica)
    self._mode = None
    per_replica = config.tpu_config.num_cores_per_replica
    self._computation_shape = (
        _NUM_CORES_TO_COMPUTATION_SHAPE[per_replica]
        if self._model_parallelism_enabled else None)
    # Shared by the copies `with_mode` makes: keyed by master (or mode),
    # they hold for the life of the process.
    self._lazy_tpu_system_metadata_dict = {}
    self._lazy_device_assignment_dict = {}
    self._lazy_validation_dict = {}
    self._embedding_config_spec = embedding_config_spec
    self._lazy_embedding_config_dict = {}

  # ------------------------------------------------------------ the mode
  def _assert_mode(self) -> str:
    if self._mode is None:
      raise RuntimeError(
          '`mode` needs to be set via contextmanager `with_mode`.')
    return self._mode

  @contextlib.contextmanager
  def with_mode(self, mode: str):
    """A copy of this context for `mode` (sharing what it learnt)."""
    context = copy.copy(self)
    context._mode = mode  # pylint: disable=protected-access
    yield context

  @property
  def mode(self) -> str:
    return self._assert_mode()

  @property
  def config(self):
    return self._config

  # ------------------------------------------------------- the TPU system
  def _get_master_address(self) -> str:
    mode = self._assert_mode()
    return (self._config.evaluation_master if mode == ModeKeys.EVAL else
            self._config.master)

  def _get_tpu_system_metadata(self):
    """The mode's master's TPU system (cached per master).

    Raises:
      ValueError: a remote master (see the module docstring).
    """
    master = self._get_master_address()
    metadata = self._lazy_tpu_system_metadata_dict.get(master)
    if metadata is None:
      cluster_def = None
      session_config = self._config.session_config
      if session_config and session_config.cluster_def.job:
        cluster_def = session_config.cluster_def
      metadata = tpu_system.query_tpu_system(master, cluster_def)
      self._lazy_tpu_system_metadata_dict[master] = metadata
    return metadata

  def _get_device_assignment(self):
    """The device assignment of model parallelism.

    Raises:
      ValueError: always here: it needs the TPU topology, which TensorFlow
        finds only by initializing the TPU system.
    """
    raise UserInputError(
        'TPUContext.device_assignment (TPUConfig.num_cores_per_replica='
        f'{self._config.tpu_config.num_cores_per_replica}) needs the TPU '
        "system's topology, which TensorFlow finds by initializing the TPU "
        'system: estimator_rt runs no TPU program; pass use_tpu=False.')

  @property
  def model_parallelism_enabled(self):
    return self._model_parallelism_enabled

  @property
  def device_assignment(self):
    return (self._get_device_assignment()
            if self._model_parallelism_enabled else None)

  @property
  def num_of_cores_per_host(self) -> int:
    return self._get_tpu_system_metadata().num_of_cores_per_host

  @property
  def num_cores(self) -> int:
    return self._get_tpu_system_metadata().num_cores

  @property
  def num_hosts(self) -> int:
    return self._get_tpu_system_metadata().num_hosts

  @property
  def num_of_replicas_per_host(self) -> int:
    """The replicas of one host (0 when a replica spans hosts)."""
    if self.model_parallelism_enabled:
      return self.num_replicas // self.num_hosts
    return self.num_of_cores_per_host

  @property
  def num_replicas(self) -> int:
    """The TPU system's cores, over num_cores_per_replica with model
    parallelism.

    Raises:
      ValueError: more cores per replica than the system has.
    """
    per_replica = (self._config.tpu_config.num_cores_per_replica
                   if self.model_parallelism_enabled else None)
    return tpu_system.num_replicas(per_replica,
                                   self._get_tpu_system_metadata())

  # --------------------------------------------------- settings, by mode
  @property
  def tensor_core_embedding_columns(self):
    if self._embedding_config_spec:
      return self._embedding_config_spec.tensor_core_feature_columns
    return None

  @property
  def embedding_config(self):
    """The TPU embedding of the mode: None unless a TPU runs (use_tpu) with
    an embedding_config_spec, which estimator_rt refuses before any mode
    runs (TPUEstimator(use_tpu=True) runs no TPU program)."""
    master = self._get_master_address()
    if master not in self._lazy_embedding_config_dict:
      if self._use_tpu and self._embedding_config_spec:
        raise UserInputError(
            'TPUEstimator(use_tpu=True, embedding_config_spec=...): TPU '
            'embedding tables live on TPU hardware; estimator_rt runs no TPU '
            'program: pass use_tpu=False (the feature columns then embed on '
            'the CPU, as in tf.estimator).')
      self._lazy_embedding_config_dict[master] = None
    return self._lazy_embedding_config_dict[master]

  @property
  def allow_per_host_v2_parallel_get_next(self):
    return self._config.tpu_config.experimental_allow_per_host_v2_parallel_get_next

  @property
  def feed_hook(self):
    return self._config.tpu_config.experimental_feed_hook

  @property
  def input_partition_dims(self):
    return self._config.tpu_config.input_partition_dims

  def is_input_sharded_per_core(self) -> bool:
    """Whether the input_fn runs once per core (training, PER_SHARD_V1)."""
    mode = self._assert_mode()
    return (mode == ModeKeys.TRAIN and
            self._config.tpu_config.per_host_input_for_training ==
            _PER_SHARD_V1)

  def is_input_per_host_with_iterators(self) -> bool:
    """Whether the input_fn runs per host, in PER_HOST_V2 mode."""
    return self._config.tpu_config.per_host_input_for_training == _PER_HOST_V2

  def is_input_broadcast_with_iterators(self) -> bool:
    """Whether one input_fn call feeds every core (BROADCAST, or SLICED
    outside training)."""
    return (self._config.tpu_config.per_host_input_for_training == _BROADCAST
            or self.is_input_slice_broadcast_to_all_cores())

  def is_input_slice_broadcast_to_all_cores(self) -> bool:
    mode = self._assert_mode()
    return (mode != ModeKeys.TRAIN and
            self._config.tpu_config.eval_training_input_configuration ==
            _SLICED)

  def is_replica_across_hosts(self) -> bool:
    """Whether a replica needs more cores than a host has."""
    per_replica = self._config.tpu_config.num_cores_per_replica
    return (per_replica is not None and
            per_replica > self._get_tpu_system_metadata().num_of_cores_per_host)

  def is_running_on_cpu(self, is_export_mode=False) -> bool:
    """Whether the mode's input_fn and model_fn run on the CPU: always
    without use_tpu, for evaluation with eval_on_tpu False, and for an
    export. On a TPU, the configuration is first checked against the TPU
    system (see `_validate_tpu_configuration`)."""
    on_cpu = self._is_running_on_cpu(is_export_mode)
    if not on_cpu:
      self._validate_tpu_configuration()
    return on_cpu

  def _is_running_on_cpu(self, is_export_mode) -> bool:
    mode = self._assert_mode()
    if not self._use_tpu:
      return True
    if mode == ModeKeys.EVAL and not self._eval_on_tpu:
      logging.info('_is_running_on_cpu: eval_on_tpu disabled')
      return True
    return bool(is_export_mode)

  @property
  def global_batch_size(self) -> Optional[int]:
    """The batch size the TPUEstimator was given for the mode."""
    return {ModeKeys.TRAIN: self._train_batch_size,
            ModeKeys.EVAL: self._eval_batch_size,
            ModeKeys.PREDICT: self._predict_batch_size}.get(
                self._assert_mode())

  @property
  def batch_size_for_input_fn(self) -> Optional[int]:
    """params['batch_size'] for the input_fn: the global batch size on the
    CPU and in broadcast modes; on a TPU, its share per replica (per-core
    and PER_HOST_V2 input, replicas across hosts) or per host."""
    global_batch_size = self.global_batch_size
    if self.is_running_on_cpu() or self.is_input_broadcast_with_iterators():
      return global_batch_size
    if (self.is_input_sharded_per_core() or
        self.is_input_per_host_with_iterators() or
        self.is_replica_across_hosts()):
      return global_batch_size // self.num_replicas
    return global_batch_size // self.num_hosts

  @property
  def batch_size_for_model_fn(self) -> Optional[int]:
    """params['batch_size'] for the model_fn: the global batch size on the
    CPU and with broadcast (unsliced) input, else its share per replica."""
    global_batch_size = self.global_batch_size
    if (self.is_running_on_cpu() or
        (self.is_input_broadcast_with_iterators() and
         not self.is_input_slice_broadcast_to_all_cores())):
      return global_batch_size
    return global_batch_size // self.num_replicas

  # ------------------------------------------------------------ placement
  @property
  def master_job(self) -> Optional[str]:
    """The TPU job: TPUConfig.tpu_job_name, else the one `master_job`
    infers from the mode's master (evaluation_master for EVAL) and the
    session config's cluster_def.

    Raises:
      ValueError: the job cannot be inferred.
    """
    config = self._config
    if config.tpu_config.tpu_job_name:
      return config.tpu_config.tpu_job_name
    master = self._get_master_address()
    cluster_def = (config.session_config.cluster_def
                   if config.session_config else None)
    try:
      return master_job(master, cluster_def)
    except UserInputError as e:
      raise UserInputError(
          f'{e} Please specify a tpu_job_name as part of your TPUConfig.'
      ) from None

  @property
  def tpu_host_placement_function(self):
    """fn(replica_id=None, host_id=None): the CPU device of a host (given,
    or the host of a replica) in the TPU job; the local CPU without one."""
    master = self.master_job

    def placement_function(_sentinal=None, replica_id=None, host_id=None):  # pylint: disable=invalid-name
      assert _sentinal is None
      if replica_id is not None and host_id is not None:
        raise RuntimeError(
            'replica_id and host_id can have only one non-None value.')
      if master is None:
        return '/replica:0/task:0/device:CPU:0'
      if replica_id is not None:
        if self.model_parallelism_enabled:
          return self.device_assignment.host_device(replica=replica_id,
                                                    job=master)
        host_id = replica_id / self.num_of_cores_per_host
      return '/job:%s/task:%d/device:CPU:0' % (master, host_id)

    return placement_function

  @property
  def tpu_device_placement_function(self):
    """fn(i): the TPU device of replica i."""
    master = self.master_job
    job_device = '' if master is None else f'/job:{master}'

    def placement_function(i):
      if self.model_parallelism_enabled:
        return self.device_assignment.tpu_device(replica=i, job=master)
      per_host = self.num_of_cores_per_host
      return '%s/task:%d/device:TPU:%d' % (job_device, i / per_host,
                                           i % per_host)

    return placement_function

  def tpu_ordinal_function(self, host_id):
    """fn(shard index in the host): the TPU ordinal its infeed goes to."""

    def ordinal_function(shard_index_in_host):
      if self.model_parallelism_enabled:
        replica = self.device_assignment.lookup_replicas(
            host_id, 0)[shard_index_in_host]
        return self.device_assignment.tpu_ordinal(replica=replica)
      return shard_index_in_host % self.num_of_cores_per_host

    return ordinal_function

  def device_for_replica(self, replica_id):
    """(the CPU device of the replica's host, the replica's ordinal there)."""
    master = self.master_job
    if self.model_parallelism_enabled:
      return (self.device_assignment.host_device(replica=replica_id,
                                                 job=master),
              self.device_assignment.tpu_ordinal(replica=replica_id))
    job_device = '' if master is None else f'/job:{master}'
    per_host = self.num_of_replicas_per_host
    assert per_host > 0, f'Got num_of_replicas_per_host: {per_host}'
    host_device = '%s/task:%d/device:CPU:0' % (job_device,
                                               replica_id / per_host)
    return host_device, replica_id % per_host

  # ----------------------------------------------------------- validation
  def _validate_tpu_configuration(self) -> None:
    """2.15's checks of the configuration and the mode's batch size
    against the TPU system (once per mode).

    Raises:
      RuntimeError: the TPU system has no TPU cores.
      ValueError: see tpu_system.check_configuration; no eval or predict
        batch size for a TPU evaluation or prediction.
    """
    mode = self._assert_mode()
    if self._lazy_validation_dict.get(mode):
      return
    metadata = self._get_tpu_system_metadata()
    if not metadata.num_cores:
      raise RuntimeError(
          'Cannot find any TPU cores in the system. Please double check '
          'Tensorflow master address and TPU worker(s). Available devices '
          f'are {metadata.devices}.')
    for batch_mode, size, method in (
        (ModeKeys.EVAL, self._eval_batch_size, 'evaluate'),
        (ModeKeys.PREDICT, self._predict_batch_size, 'predict')):
      if mode == batch_mode and size is None:
        name = 'eval' if method == 'evaluate' else method
        raise UserInputError(
            f'{name}_batch_size in TPUEstimator constructor cannot be `None` '
            f'if .{method} is running on TPU.')
    tpu_system.check_configuration(self._config, mode, self.global_batch_size,
                                   metadata)
    self._lazy_validation_dict[mode] = True


class OneCoreTPUContext(InternalTPUContext):
  """tf.estimator 2.15's `_OneCoreTPUContext`: the context of
  TPUConfig(num_shards=1), whose TPU system is one core on one host
  (never queried)."""

  def __init__(self, config, train_batch_size, eval_batch_size,
               predict_batch_size, use_tpu):
    super().__init__(config, train_batch_size, eval_batch_size,
                     predict_batch_size, use_tpu)

  def _get_tpu_system_metadata(self):
    master = self._get_master_address()
    metadata = self._lazy_tpu_system_metadata_dict.get(master)
    if metadata is None:
      metadata = tf.tpu.experimental.TPUSystemMetadata(
          num_cores=1, num_hosts=1, num_of_cores_per_host=1, topology=None,
          devices=[])
      self._lazy_tpu_system_metadata_dict[master] = metadata
    return metadata


def get_tpu_context(config, train_batch_size, eval_batch_size,
                    predict_batch_size, use_tpu, eval_on_tpu,
                    embedding_config_spec) -> InternalTPUContext:
  """tf.estimator 2.15's `_get_tpu_context`: a `OneCoreTPUContext` for
  TPUConfig(num_shards=1) without num_cores_per_replica (with a warning),
  else an `InternalTPUContext`.

  Raises:
    ValueError: num_shards=1 with an embedding_config_spec.
  """
  if (config.tpu_config.num_shards == 1 and
      config.tpu_config.num_cores_per_replica is None):
    if embedding_config_spec is not None:
      raise UserInputError('Setting TPUConfig.num_shards==1 is unsupported '
                           'when embedding_config_spec is not None.')
    logging.warning(
        'Setting TPUConfig.num_shards==1 is an unsupported behavior. '
        'Please fix as soon as possible (leaving num_shards as None.)')
    return OneCoreTPUContext(config, train_batch_size, eval_batch_size,
                             predict_batch_size, use_tpu)
  return InternalTPUContext(config, train_batch_size, eval_batch_size,
                            predict_batch_size, use_tpu, eval_on_tpu,
                            embedding_config_spec)


class TPUContext:
  """tf.estimator's TPUContext: what `params['context']` told an input_fn
  (`call_from_input_fn`) or a model_fn of its TPU computation, read from
  the TPUEstimator's `InternalTPUContext`."""

  def __init__(self, internal_ctx, input_device=None, invocation_index=None,
               call_from_input_fn=True, host_id=None):
    self._internal_ctx = internal_ctx
    self._input_device = input_device
    self._invocation_index = invocation_index
    self._call_from_input_fn = call_from_input_fn
    self._host_id = host_id

  def _check_called_from(self, input_fn: bool) -> None:
    if self._call_from_input_fn != input_fn:
      raise RuntimeError('This TPUContext instance must not be called from '
                         f'{"model_fn" if input_fn else "input_fn"}.')

  def current_input_fn_deployment(self):
    """(the input_fn's host device, its invocation index, the input_fn
    invocations in all, the replicas one invocation feeds).

    Raises:
      RuntimeError: called from a model_fn.
    """
    self._check_called_from(input_fn=True)
    ctx = self._internal_ctx
    if ctx.is_input_sharded_per_core():
      total, consumed = ctx.num_hosts * ctx.num_of_replicas_per_host, 1
    elif ctx.is_input_broadcast_with_iterators():
      total, consumed = 1, ctx.num_replicas
    elif ctx.is_replica_across_hosts():
      total, consumed = ctx.num_replicas, 1
    else:
      total, consumed = ctx.num_hosts, ctx.num_of_replicas_per_host
    return self._input_device, self._invocation_index, total, consumed

  @property
  def num_replicas(self) -> int:
    return self._internal_ctx.num_replicas

  @property
  def num_hosts(self) -> int:
    return self._internal_ctx.num_hosts

  @property
  def current_host(self):
    """The input_fn's host index.

    Raises:
      RuntimeError: called from a model_fn.
    """
    self._check_called_from(input_fn=True)
    return self._host_id

  @property
  def num_of_replicas_per_host(self) -> int:
    if self._internal_ctx.model_parallelism_enabled:
      raise UserInputError(
          'num_of_replicas_per_host is not supported for model_parallelism')
    return self._internal_ctx.num_of_replicas_per_host

  @property
  def device_assignment(self):
    """The model_fn's device assignment.

    Raises:
      RuntimeError: called from an input_fn.
    """
    self._check_called_from(input_fn=False)
    return self._internal_ctx.device_assignment

  def device_for_replica(self, replica_id):
    return self._internal_ctx.device_for_replica(replica_id)

  @property
  def tpu_host_placement_function(self):
    """fn(host_id): the CPU device of that host."""

    def placement_function(host_id):
      return self._internal_ctx.tpu_host_placement_function(host_id=host_id)

    return placement_function
