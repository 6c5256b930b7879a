"""What TPUEstimator(use_tpu=True) checked against the TPU system before it
built anything for it.

tf.estimator's TPU context asked the TensorFlow master for its TPU system
(how many cores, on how many hosts) and refused, with ValueErrors, a
TPUConfig or a batch size that did not fit it. estimator_rt runs no TPU
program, but a program written for one and run where TensorFlow sees TPU
cores (a TPU VM: its master is this process) should still meet those
errors before estimator_rt's refusal. `check_against_local_tpus` does that:

  - only for a master that is this process ('' or 'local'): TensorFlow
    lists its devices at once, while 2.15 waited for a remote master with
    minutes of retries, which estimator_rt does not do only to refuse;
  - only when TensorFlow lists TPU cores: with none (2.15: "Cannot find
    any TPU cores in the system"), the refusal that follows says more;
  - without the TPU topology (2.15 asked for it with num_cores_per_replica
    set; finding it initializes the TPU system).
"""

from typing import Optional

from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys

# Masters that are this process.
_LOCAL_MASTERS = ('', 'local')

# tf.estimator's InputPipelineConfig values (estimator_rt.tpu's, which
# imports this module).
_PER_HOST_V2 = 3
_BROADCAST = 4


def query_tpu_system(master: str, cluster_def=None):
  """TensorFlow's TPU system metadata for `master` (its TPU cores, hosts
  and devices; no TPU cores on a CPU machine), queried without the
  topology, for a master that is this process.

  Raises:
    ValueError: a remote master: 2.15 contacted it, with minutes of
      retries, to run a TPU program, which estimator_rt does not run.
  """
  if master not in _LOCAL_MASTERS:
    raise UserInputError(
        f'The TPU system of master {master!r} is not queried: estimator_rt '
        'runs no TPU program (tf.estimator contacted a remote TPU master to '
        "run one); pass use_tpu=False, or a local master ('').")
  # TensorFlow's own query, the one tf.estimator 2.15 made (private to
  # TensorFlow; its public form, tf.tpu.experimental.initialize_tpu_system,
  # initializes the TPU system, which a refusal must not do).
  from tensorflow.python.tpu import tpu_system_metadata  # pylint: disable=g-import-not-at-top
  return tpu_system_metadata._query_tpu_system_metadata(  # pylint: disable=protected-access
      master, cluster_def=cluster_def, query_topology=False)


def local_tpu_system(master: str, cluster_def=None):
  """TensorFlow's TPU system metadata for `master` if it is this process
  and TensorFlow lists TPU cores there, else None."""
  if master not in _LOCAL_MASTERS:
    return None
  metadata = query_tpu_system(master, cluster_def)
  return metadata if metadata.num_cores else None


def num_replicas(per_replica: Optional[int], metadata) -> int:
  """The replicas of the TPU system `metadata`: its cores, or its cores
  over `per_replica` (TPUConfig.num_cores_per_replica, with model
  parallelism).

  Raises:
    ValueError: more cores per replica than the system has.
  """
  num_cores = metadata.num_cores
  if not per_replica:
    return num_cores
  if per_replica > num_cores:
    raise UserInputError(
        'The num of cores required by the model parallelism, specified by '
        'TPUConfig.num_cores_per_replica, is larger than the total num of '
        f'TPU cores in the system. num_cores_per_replica: {per_replica}, '
        f'num cores in the system: {num_cores}')
  # num_cores_per_replica is a power of 2 (TPUConfig), as TPU core counts
  # are: it divides the system's cores.
  return num_cores // per_replica


def check_configuration(config, mode: str, batch_size: Optional[int],
                        metadata) -> None:
  """tf.estimator 2.15's checks of `config`'s TPUConfig and the mode's
  `batch_size` against the TPU system `metadata`.

  Raises:
    ValueError: TPUConfig.num_shards is not the system's replica count;
      num_cores_per_replica above the cores of one host (but in PER_HOST_V2
      mode); a batch size not divisible by the replicas (but in BROADCAST
      mode); evaluation or prediction over several hosts in a mode that
      feeds them separately.
  """
  tpu_config = config.tpu_config
  replicas = num_replicas(tpu_config.num_cores_per_replica, metadata)
  how = ('; estimator_rt checks this as tf.estimator did, against the TPU '
         'cores TensorFlow lists here, before its refusal to run on a TPU.')
  if tpu_config.num_shards and tpu_config.num_shards != replicas:
    raise UserInputError(
        'TPUConfig.num_shards is not set correctly. According to TPU system '
        f'metadata for Tensorflow master ({config.master!r}): num_replicas '
        f'should be ({replicas}), got ({tpu_config.num_shards}). For '
        'non-model-parallelism, num_replicas should be the total num of TPU '
        'cores in the system. For model-parallelism, the total number of TPU '
        'cores should be num_cores_per_replica * num_replicas. Please set it '
        'accordingly or leave it as `None`' + how)
  per_host_v2 = tpu_config.per_host_input_for_training == _PER_HOST_V2
  broadcast = tpu_config.per_host_input_for_training == _BROADCAST
  per_replica = tpu_config.num_cores_per_replica
  if (per_replica and not per_host_v2 and
      per_replica > metadata.num_of_cores_per_host):
    raise UserInputError(
        'Except the PER_HOST_V2 mode, the num of cores required by model '
        'parallelism specified by TPUConfig.num_cores_per_replica should be '
        'less than or equal to the num_cores_per_host. num_cores_per_replica: '
        f'{per_replica}, num_cores_per_host: {metadata.num_of_cores_per_host}'
        + how)
  name = {ModeKeys.TRAIN: 'train', ModeKeys.EVAL: 'eval'}.get(mode, 'predict')
  if batch_size is not None and batch_size % replicas and not broadcast:
    raise UserInputError(
        f'{name} batch size {batch_size} must be divisible by number of '
        f'replicas {replicas}' + how)
  hosts = metadata.num_hosts
  if mode == ModeKeys.EVAL and hosts != 1 and not (broadcast or per_host_v2):
    raise UserInputError(
        'TPUEstimator.evaluate is only supported under three conditions: 1. '
        'num_hosts=1; 2. BROADCAST mode; 3. PER_HOST_V2 mode. mode: '
        f'{tpu_config.per_host_input_for_training}; num_hosts: {hosts}; '
        f'num_replicas=1:{replicas}' + how)
  if mode == ModeKeys.PREDICT and hosts != 1 and not (
      broadcast or (replicas == 1 and per_host_v2)):
    raise UserInputError(
        'TPUEstimator.predict is only supported under three conditions: 1. '
        'num_hosts=1; 2. BROADCAST mode; 3. PER_HOST_V2 mode with '
        f'num_replicas=1. mode: {tpu_config.per_host_input_for_training}; '
        f'num_hosts: {hosts}; num_replicas=1:{replicas}' + how)


def check_against_local_tpus(config, mode: str,
                             batch_size: Optional[int]) -> None:
  """`check_configuration` against the TPU system of the mode's master
  (evaluation_master for EVAL), if it is this process and has TPU cores;
  nothing otherwise (see the module docstring)."""
  master = config.evaluation_master if mode == ModeKeys.EVAL else config.master
  cluster_def = None
  if config.session_config is not None and (
      config.session_config.cluster_def.job):
    cluster_def = config.session_config.cluster_def
  metadata = local_tpu_system(master, cluster_def)
  if metadata is not None:
    check_configuration(config, mode, batch_size, metadata)
