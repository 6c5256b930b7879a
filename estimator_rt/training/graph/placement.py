"""Where a graph-engine model's ops and variables go, one class per strategy.

Each placement answers the same questions for `model.build` and the
engine: in which scope variables are created, how the model_fn is called
(once, or once per replica on its share of the batch), how the replicas'
losses, metrics and predictions become one, and which session target and
config the monitored session uses.
"""

import contextlib
from typing import Any, Callable, ContextManager, Dict, List, Optional

import tensorflow as tf

from estimator_rt.cluster import tf_config as cluster
from estimator_rt.cluster import server as server_lib
from estimator_rt.cluster import strategies
from estimator_rt.core.errors import UserInputError


def session_config() -> tf.compat.v1.ConfigProto:
  """Soft placement, as tf.estimator's default session config had it (an op
  with no kernel on the device asked for runs where it has one), and every
  logical CPU device: an explicit ConfigProto does not inherit the logical
  devices the process configured, and mirrored replicas on CPU:1 would be
  placed on CPU:0, where a collective all-reduce of two waits forever."""
  return tf.compat.v1.ConfigProto(
      allow_soft_placement=True,
      device_count={'CPU': len(tf.config.list_logical_devices('CPU'))})


class SingleDevicePlacement:
  """Everything in this process, on one device (or where TensorFlow puts it).

  Args:
    device: the device for every op and variable; None: TensorFlow's choice
      (the default strategy).
  """

  num_replicas = 1
  multi_worker = False
  between_graph = False

  def __init__(self, *, device: Optional[str] = None):
    self._device = device

  @property
  def name(self) -> str:
    return 'default' if self._device is None else 'one_device'

  def _scope(self) -> ContextManager:
    return (tf.device(self._device) if self._device is not None
            else contextlib.nullcontext())

  def variable_scope(self) -> ContextManager:
    return self._scope()

  def call_for_each_replica(self, fn: Callable,
                            batches: Callable[[], Any]) -> List[Any]:
    """[fn(features, labels)] for the next batch of `batches()`."""
    with self._scope():
      return [fn(*batches())]

  def mean_loss(self, losses: List[tf.Tensor]) -> tf.Tensor:
    return losses[0]

  def group(self, ops: List[Any]) -> tf.Operation:
    return ops[0] if len(ops) == 1 else tf.group(*ops)

  def sync_replicas_op(self) -> Optional[tf.Operation]:
    return None

  def shard(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
    return dataset

  def input_context(self) -> Optional[tf.distribute.InputContext]:
    """What an input_fn that declares `input_context` gets: nothing without
    a strategy (tf.estimator 2.15 passed none), one pipeline for one
    device."""
    if self._device is None:
      return None
    return tf.distribute.InputContext()

  def agreement_sum(self):
    """(an int64 placeholder of 4 values, their sum over every replica of
    every worker) for the controller's per-loop agreement of synchronous
    workers (`controller.agreement`); None when this process decides
    alone."""
    return None

  def merge_metrics(self, metrics: List[Dict[str, Any]]) -> Dict[str, Any]:
    return dict(metrics[0])

  def concat_predictions(self, predictions: List[Dict[str, tf.Tensor]]
                         ) -> Dict[str, tf.Tensor]:
    return dict(predictions[0])

  @property
  def master(self) -> str:
    return ''

  def session_config(self) -> tf.compat.v1.ConfigProto:
    return session_config()


class MirroredPlacement:
  """In-graph replicas, as tf.estimator ran MirroredStrategy: each replica
  calls the model_fn (`call_for_each_replica`) on its own element of the
  input_fn's dataset, whose batch is thus the per-replica batch, as it was
  with tf.estimator's train_distribute; variables are mirrored and saved once under
  their plain names, so checkpoints are interchangeable with
  undistributed ones. tf.compat.v1 optimizers sum the replicas' gradients;
  inside `_scale_loss_for_estimator_enabled` (tf.estimator's switch) they
  first divide each replica's mean loss by the number of replicas, so N
  replicas on batch B train as one on N*B.

  A CentralStorageStrategy runs the same way, as tf.estimator ran it: its
  variables are one copy on its parameter device, which every replica
  reads and the optimizer's merged update writes.

  Args:
    strategy: a MirroredStrategy or a CentralStorageStrategy.
  """

  def __init__(self, *, strategy: tf.distribute.Strategy):
    self._strategy = strategy
    # This process's replicas (all of them, but under multi_worker_mirrored).
    self.num_replicas = len(strategy.extended.worker_devices)
    if strategies.is_central_storage(strategy):
      self.name = 'central_storage'

  name = 'mirrored'
  multi_worker = False
  between_graph = False

  def variable_scope(self) -> ContextManager:
    return self._strategy.scope()

  def _per_replica(self, values: List[Any]):
    """Replica i's value is values[i], placed on its device."""
    devices = self._strategy.extended.worker_devices

    def replica_value(context):
      # Replica ids count every worker's replicas; this process's come in
      # a block of len(devices).
      index = context.replica_id_in_sync_group % len(devices)
      with tf.device(devices[index]):
        return tf.nest.map_structure(tf.identity, values[index])

    return self._strategy.experimental_distribute_values_from_function(
        replica_value)

  def call_for_each_replica(self, fn: Callable,
                            batches: Callable[[], Any]) -> List[Any]:
    """fn(features, labels) on every replica, each on its own next element
    of the input (tf.estimator's way: the input_fn's batch is per replica)."""
    elements = [batches() for _ in range(self.num_replicas)]
    features = self._per_replica([f for f, _ in elements])
    labels = (None if elements[0][1] is None else
              self._per_replica([l for _, l in elements]))
    with self._strategy.scope(), \
        self._strategy._scale_loss_for_estimator_enabled():  # pylint: disable=protected-access
      # Not converted by AutoGraph (a graph-mode strategy would convert
      # it): a model_fn's error then leaves as it is raised.
      grouped = self._strategy.extended.call_for_each_replica(
          tf.autograph.experimental.do_not_convert(fn),
          args=(features, labels))
    return list(self._strategy.experimental_local_results(grouped))

  def mean_loss(self, losses: List[tf.Tensor]) -> tf.Tensor:
    with self._strategy.scope():
      per_replica = self._strategy.experimental_distribute_values_from_function(
          lambda context: losses[context.replica_id_in_sync_group %
                                 len(losses)])
      return self._strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica,
                                   axis=None)

  def group(self, ops: List[Any]) -> tf.Operation:
    return self._strategy.group(ops)

  def sync_replicas_op(self) -> Optional[tf.Operation]:
    """Copies each mirrored variable's first copy into the others. Run once
    the session is ready: a Scaffold's init_fn running an assign the
    model_fn built in a replica's context sets that replica's copy only,
    and copies that start apart stay apart (every replica applies the same
    update to its own copy)."""
    copies = []
    for variable in tf.compat.v1.global_variables():
      values = getattr(variable, 'values', None)
      if values and len(values) > 1:
        first = values[0].read_value()
        copies += [other.assign(first) for other in values[1:]]
    return tf.group(*copies) if copies else None

  def merge_metrics(self, metrics: List[Dict[str, Any]]) -> Dict[str, Any]:
    # The value tensors are built once, across replicas (merge_call): the
    # first replica's are the whole evaluation's. Every replica updates.
    return {name: (value, self._strategy.group([m[name][1] for m in metrics]))
            for name, (value, _) in metrics[0].items()}

  def concat_predictions(self, predictions: List[Dict[str, tf.Tensor]]
                         ) -> Dict[str, tf.Tensor]:
    return {name: tf.concat([p[name] for p in predictions], axis=0)
            for name in predictions[0]}

  @property
  def master(self) -> str:
    return ''

  def session_config(self) -> tf.compat.v1.ConfigProto:
    return session_config()

  def shard(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
    return dataset

  def input_context(self) -> tf.distribute.InputContext:
    """One input pipeline whose elements the replicas take in turn."""
    return tf.distribute.InputContext(
        num_input_pipelines=1, input_pipeline_id=0,
        num_replicas_in_sync=self.num_replicas)

  def agreement_sum(self):
    return None


class MultiWorkerPlacement(MirroredPlacement):
  """multi_worker_mirrored for TF1-style model_fns: every training task
  builds the same graph and runs it in a session on its own server (the
  one the MultiWorkerMirroredStrategy started), with the strategy's
  collective ops; gradients are all-reduced across all workers' replicas.
  Each worker reads its shard of the input_fn's dataset (every
  num_workers-th element), and each replica an element of it.

  Args:
    strategy: the process's MultiWorkerMirroredStrategy.
    task: this task's place in the cluster.
  """

  def __init__(self, *, strategy: tf.distribute.Strategy, task):
    super().__init__(strategy=strategy)
    self._task = task
    self._worker_index, self._num_workers = _training_task_number(task)
    if not getattr(strategy.extended, '_std_server_started', False):
      # A strategy made while eager execution was off (under TF1
      # behaviour, by a program or by name after its modules turned it
      # off) starts no server; 2.15's distribute coordinator started the
      # task's standard server with the strategy's session config: so does
      # this. (The binary makes its strategy before any user module runs,
      # eagerly: its server also runs TensorFlow's coordination service,
      # which such a server does not join; see docs/clusters.md.)
      server_lib.own_server(task, config=self.session_config())

  name = 'multi_worker_mirrored'
  multi_worker = True  # Synchronous workers in several processes.

  @property
  def master(self) -> str:
    return f'{task_rpc(self._task)}://{self._task.address}'

  def session_config(self) -> tf.compat.v1.ConfigProto:
    return self._strategy.extended._update_config_proto(session_config())  # pylint: disable=protected-access

  def shard(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
    return dataset.shard(self._num_workers, self._worker_index)

  def input_context(self) -> tf.distribute.InputContext:
    """A pipeline per worker, this worker's replicas taking its elements in
    turn."""
    return tf.distribute.InputContext(
        num_input_pipelines=self._num_workers,
        input_pipeline_id=self._worker_index,
        num_replicas_in_sync=self.replicas_in_sync)

  def agreement_sum(self):
    """The controller's agreement as one small all-reduce in the graph, run
    once per loop with the strategy's collective ops (see
    SingleDevicePlacement.agreement_sum)."""
    values = tf.compat.v1.placeholder(tf.int64, [4], name='agreement')
    with self._strategy.scope():
      per_replica = self._strategy.experimental_distribute_values_from_function(
          lambda context: tf.identity(values))
      agreed = self._strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica,
                                     axis=None)
    return values, agreed

  @property
  def replicas_in_sync(self) -> int:
    """Every worker's replicas: what `agreement_sum` adds up over."""
    return self._strategy.num_replicas_in_sync


class ParameterServerPlacement(SingleDevicePlacement):
  """parameter_server for TF1-style model_fns, as tf.estimator ran it:
  between-graph and asynchronous.

  The chief and every worker build the same graph on their own, with
  every variable on a ps task (round robin in creation order, TensorFlow's
  `replica_device_setter`, so each task finds each variable on the same
  ps) and every other op on their own CPU, and each runs steps in a
  session on its own server: a step reads the variables, computes, and
  updates them, without waiting for the other tasks. The global step is
  one of those variables, so every task stops at max_steps. The chief
  initializes or restores the variables and writes model_dir; the
  workers wait until it has. Each task reads its shard of the input
  (every (1 + workers)-th element).

  Args:
    task: this task's place in the cluster (chief or worker).
  """

  name = 'parameter_server'
  between_graph = True

  def __init__(self, *, task):
    device = cluster.cpu_device(task.task_type, task.task_index)
    super().__init__(device=device)
    self._task = task
    self._task_number, self._num_tasks = _training_task_number(task)
    self._ps = list(task.cluster.get(cluster.PS, ()))

  def _scope(self) -> ContextManager:
    # Variables (by op type) to the ps tasks, everything else here.
    return tf.compat.v1.device(tf.compat.v1.train.replica_device_setter(
        cluster=tf.train.ClusterSpec({cluster.PS: self._ps}),
        worker_device=self._device))

  def shard(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
    return dataset.shard(self._num_tasks, self._task_number)

  def input_context(self) -> tf.distribute.InputContext:
    """A pipeline per training task (the chief and the workers)."""
    return tf.distribute.InputContext(
        num_input_pipelines=self._num_tasks,
        input_pipeline_id=self._task_number, num_replicas_in_sync=1)

  @property
  def ps_tasks(self) -> List[tuple]:
    """(job, index, address) of each ps task."""
    return [(cluster.PS, index, address)
            for index, address in enumerate(self._ps)]

  @property
  def master(self) -> str:
    return f'{task_rpc(self._task)}://{self._task.address}'

  def session_config(self) -> tf.compat.v1.ConfigProto:
    config = session_config()
    # The session sees the ps tasks and this task only: it neither waits
    # for nor notices the other workers (lost or late ones included).
    task = self._task
    config.device_filters.extend(
        ['/job:ps', f'/job:{task.task_type}/task:{task.task_index}'])
    return config


def _training_task_number(task) -> tuple:
  """(this task's number, how many train) among the chief and the workers,
  the chief first: which shard of the input it reads."""
  order = list(task.cluster.get(task.chief_job, ())) + list(
      task.cluster.get(cluster.WORKER, ()))
  return order.index(task.address), len(order)


def task_rpc(task) -> str:
  return getattr(task, 'rpc_layer', None) or 'grpc'


def _is_parameter_server_training_task(name: Optional[str], task) -> bool:
  return (name in (cluster.PARAMETER_SERVER, 'ParameterServerStrategy') and
          task is not None and not task.standalone_client and
          task.task_type in (cluster.CHIEF, cluster.MASTER, cluster.WORKER))


_MIRRORED_NAMES = ('mirrored', 'MirroredStrategy', 'central_storage',
                   'CentralStorageStrategy')
_SUPPORTED = (None, 'default', '_DefaultDistributionStrategy', 'one_device',
              'OneDeviceStrategy', cluster.MULTI_WORKER_MIRRORED
              ) + _MIRRORED_NAMES


# The strategy classes the graph engine places, a program's subclasses of
# them included (tf.estimator ran any strategy).
_KINDS = ((tf.distribute.experimental.CentralStorageStrategy,
           'central_storage'),
          (tf.distribute.MirroredStrategy, 'mirrored'),
          (tf.distribute.OneDeviceStrategy, 'one_device'))


def _name_of(strategy: Any) -> str:
  """`strategies.name_of`, a subclass of a class in _KINDS named as it."""
  for cls, name in _KINDS:
    if isinstance(strategy, cls):
      return name
  return strategies.name_of(strategy)


def training_refusal(strategy: Any, *, task=None) -> Optional[str]:
  """Why the graph engine cannot train with `strategy` (a RunConfig's
  train_distribute: a name, a strategy object or None) on `task`, or None.
  Nothing is built."""
  name = _name_of(strategy)
  if name in _SUPPORTED or _is_parameter_server_training_task(name, task):
    return None
  return (f'RunConfig: train_distribute={name!r} is not supported for '
          'TF1-style model_fns (graph engine)'
          f'{" without a TF_CONFIG cluster" if task is None else ""}; use '
          'default, one_device, mirrored, or in a TF_CONFIG cluster '
          'multi_worker_mirrored or parameter_server.')


def make_placement(strategy: Any, *, for_training: bool, task=None):
  """The placement for a RunConfig's train_distribute (a name, a strategy
  object or None).

  Raises:
    UserInputError: a strategy the graph engine does not run
      (`training_refusal`), naming why.
  """
  name = _name_of(strategy)
  if name in (None, 'default', '_DefaultDistributionStrategy'):
    return SingleDevicePlacement()
  if name in ('one_device', 'OneDeviceStrategy'):
    device = None
    if isinstance(strategy, tf.distribute.Strategy):
      device = strategy.extended.worker_devices[0]
    return SingleDevicePlacement(device=device or '/cpu:0')
  if not for_training:
    # Evaluation and prediction run undistributed (tf.estimator's default;
    # eval_distribute is not honoured by the graph engine).
    return SingleDevicePlacement()
  refusal = training_refusal(strategy, task=task)
  if refusal is not None:
    raise UserInputError(refusal)
  if name in _MIRRORED_NAMES:
    return MirroredPlacement(strategy=strategies.resolve_strategy(strategy))
  if name == cluster.MULTI_WORKER_MIRRORED and (task is None or
                                                task.single_node):
    # One worker (no TF_CONFIG cluster, or a one-node one): its replicas
    # are this process's devices, which MirroredStrategy runs in-graph
    # (tf.estimator ran such programs so too).
    return MirroredPlacement(strategy=tf.distribute.MirroredStrategy())
  if name == cluster.MULTI_WORKER_MIRRORED:
    return MultiWorkerPlacement(
        strategy=strategies.resolve_strategy(strategy, task=task), task=task)
  return ParameterServerPlacement(task=task)
