"""Distribution strategies by name.

One-process strategies need only the local devices; the multi-worker ones
(`multi_worker_mirrored`, `parameter_server`) also need this task's place
in the cluster (a `cluster.TaskInfo`). `multi_worker_mirrored` must be
created before TensorFlow runs its first op (it configures collectives for
the whole process).
"""

import json
from typing import Optional, Union

import tensorflow as tf

from estimator_rt.cluster import tf_config as cluster
from estimator_rt.core.errors import UserInputError

LOCAL_STRATEGY_NAMES = ('default', 'one_device', 'mirrored',
                        'central_storage')
MULTI_WORKER_STRATEGY_NAMES = (cluster.MULTI_WORKER_MIRRORED,
                               cluster.PARAMETER_SERVER)
STRATEGY_NAMES = LOCAL_STRATEGY_NAMES + MULTI_WORKER_STRATEGY_NAMES


def configure_cpu_devices(count: int) -> None:
  """Splits the host CPU into `count` logical devices.

  This lets `mirrored` and `central_storage` run several replicas on a
  machine without GPUs (as the tests do). It must run before TensorFlow
  initializes its devices, i.e. before the first op or strategy.

  Raises:
    UserInputError: `count` is not a positive integer, or TensorFlow's
      devices are already initialized with a different layout.
  """
  if isinstance(count, bool) or not isinstance(count, int) or count < 1:
    raise UserInputError(
        f'num_cpu_devices={count!r} must be an integer >= 1.')
  cpu = tf.config.list_physical_devices('CPU')[0]
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * count)
  except RuntimeError as e:
    if len(tf.config.list_logical_devices('CPU')) != count:
      raise UserInputError(
          f'num_cpu_devices={count}: TensorFlow already initialized its '
          'devices; set this before any TensorFlow op runs.') from e


def _compute_devices(num_gpus: Optional[int]) -> list:
  gpus = tf.config.list_logical_devices('GPU')
  if num_gpus is None:
    num_gpus = len(gpus)
  if num_gpus > len(gpus):
    raise UserInputError(
        f'num_gpus={num_gpus} but this machine has {len(gpus)} GPU(s).')
  if num_gpus > 0:
    return [d.name for d in gpus[:num_gpus]]
  return [d.name for d in tf.config.list_logical_devices('CPU')]


def _resolver(task: Optional[cluster.TaskInfo]):
  if task is None:
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec({}))
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec(task.runtime_cluster), task_type=task.task_type,
      task_id=task.task_index, rpc_layer=task.rpc_layer)


_LOCAL_STRATEGIES = {}


def _make_local(name: str, devices: list) -> tf.distribute.Strategy:
  if name == 'mirrored':
    return tf.distribute.MirroredStrategy(devices=devices)
  return tf.distribute.experimental.CentralStorageStrategy(
      compute_devices=devices, parameter_device='/cpu:0')


def make_strategy(name: str, *, num_gpus: Optional[int] = None,
                  task: Optional[cluster.TaskInfo] = None
                  ) -> tf.distribute.Strategy:
  """Creates a strategy by name.

  Args:
    name: 'default' (no distribution), 'one_device' (the first GPU, else
      the CPU), 'mirrored' (synchronous replicas on every GPU, or on every
      logical CPU device when there is no GPU), or 'central_storage'
      (variables on the CPU, computation replicated like 'mirrored').
      Multi-worker: 'multi_worker_mirrored' (synchronous all-reduce
      across the chief and workers, TensorFlow's collective ops) or
      'parameter_server' (variables on ps tasks, this task coordinates).
    num_gpus: how many GPUs to use; None uses all; 0 forces the CPU.
    task: this task's place in the cluster (multi-worker strategies only;
      the evaluator is left out of the cluster the strategy sees).

  Raises:
    UserInputError: an unknown name, more GPUs than the machine has, or a
      cluster that does not fit the strategy.
  """
  if num_gpus is not None and (isinstance(num_gpus, bool) or
                               not isinstance(num_gpus, int) or num_gpus < 0):
    raise UserInputError(f'num_gpus={num_gpus!r} must be an integer >= 0.')
  if name in ('mirrored', 'central_storage'):
    # One object per name and device set for the whole process: two
    # strategies with collectives number their collective instances from
    # the same start, and the runtime then mixes up their all-reduces
    # (seen as "Shape mismatch in the collective instance 100").
    key = (name, tuple(_compute_devices(num_gpus)))
    if key not in _LOCAL_STRATEGIES:
      _LOCAL_STRATEGIES[key] = _make_local(name, list(key[1]))
    return _LOCAL_STRATEGIES[key]
  if name == 'default':
    return tf.distribute.get_strategy()
  if name == 'one_device':
    return tf.distribute.OneDeviceStrategy(_compute_devices(num_gpus)[0])
  if name == cluster.MULTI_WORKER_MIRRORED:
    if task is not None:
      cluster.check_strategy(task, name)
      if task.single_node:
        task = None  # One worker, no server (TaskInfo.single_node).
    # One per process: its collective ops are configured once, and both
    # engines (the eager one and the graph one) must use that one.
    key = (name, None if task is None else json.dumps(task.as_tf_config(),
                                                       sort_keys=True))
    if key not in _LOCAL_STRATEGIES:
      _LOCAL_STRATEGIES[key] = tf.distribute.MultiWorkerMirroredStrategy(
          cluster_resolver=_resolver(task))
    return _LOCAL_STRATEGIES[key]
  if name == cluster.PARAMETER_SERVER:
    if task is None:
      raise UserInputError(
          f'distribution strategy {name!r} needs a cluster with chief, '
          'worker and ps tasks (TF_CONFIG); none is set.')
    cluster.check_strategy(task, name)
    if cluster.MASTER in task.cluster:
      # TensorFlow's coordinator knows no 'master' job; tf.estimator 2.15
      # ran one for between-graph training only (a TF1-style model_fn).
      raise UserInputError(
          "TF_CONFIG cluster has a 'master' job (tf.estimator's legacy name "
          'for the chief): it runs between-graph parameter-server training '
          'of a TF1-style model_fn, as tf.estimator did; a TF2 model_fn\'s '
          "parameter-server training needs the job named 'chief' (with an "
          'evaluator task to evaluate).')
    return tf.distribute.experimental.ParameterServerStrategy(_resolver(task))
  raise UserInputError(
      f'distribution strategy {name!r} is not one of {STRATEGY_NAMES}.')


def resolve_strategy(value: Union[None, str, tf.distribute.Strategy], *,
                     task: Optional[cluster.TaskInfo] = None
                     ) -> tf.distribute.Strategy:
  """A strategy from a RunConfig field: None, a name, or a strategy."""
  if value is None:
    return tf.distribute.get_strategy()
  if isinstance(value, str):
    return make_strategy(value, task=task)
  return value


# tf.compat.v1.distribute classes -> the name of their TF2 equivalent.
_V1_NAMES = {
    'MirroredStrategyV1': 'mirrored',
    'OneDeviceStrategyV1': 'one_device',
    'CentralStorageStrategyV1': 'central_storage',
    'CollectiveAllReduceStrategyV1': cluster.MULTI_WORKER_MIRRORED,
    'ParameterServerStrategyV1': cluster.PARAMETER_SERVER,
}


def from_v1(value):
  """A `tf.compat.v1.distribute` strategy as what this runtime runs: the
  TF2 strategy of the same kind on the same devices, or the name of a
  multi-worker one (created by the tasks that train); anything else as it
  is. tf.estimator took the V1 classes; TF2 code takes the V2 ones."""
  name = _V1_NAMES.get(type(value).__name__)
  if name is None or not isinstance(value, tf.compat.v1.distribute.Strategy):
    return value
  devices = list(value.extended.worker_devices)
  if name == 'mirrored':
    return tf.distribute.MirroredStrategy(devices=devices)
  if name == 'one_device':
    return tf.distribute.OneDeviceStrategy(devices[0])
  return name


def name_of(value: Union[None, str, tf.distribute.Strategy]) -> str:
  """The strategy name for a RunConfig field (for cluster checks)."""
  if value is None:
    return 'default'
  if isinstance(value, str):
    return value
  if isinstance(value, tf.distribute.MultiWorkerMirroredStrategy):
    return cluster.MULTI_WORKER_MIRRORED
  if isinstance(value, tf.distribute.experimental.ParameterServerStrategy):
    return cluster.PARAMETER_SERVER
  return type(value).__name__


def is_central_storage(strategy: tf.distribute.Strategy) -> bool:
  return isinstance(strategy,
                    tf.distribute.experimental.CentralStorageStrategy)


def is_parameter_server(strategy: tf.distribute.Strategy) -> bool:
  return isinstance(strategy,
                    tf.distribute.experimental.ParameterServerStrategy)


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
  """Whether `strategy` spans several processes (workers or ps)."""
  return isinstance(strategy, (
      tf.distribute.MultiWorkerMirroredStrategy,
      tf.distribute.experimental.ParameterServerStrategy))
