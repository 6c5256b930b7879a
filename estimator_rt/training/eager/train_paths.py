"""One object per way of running training steps.

`Estimator.train` does the same things whatever runs the steps: choose the
checkpoint, build the model, restore, then let a `TrainController` drive
compiled loops and saves. What differs between the ways of running steps
is owned here, one class each, behind the same small interface:

  - `StrategyPath`: a `tf.distribute` strategy in this process (default,
    one_device, mirrored, central storage, multi_worker_mirrored).
  - `ParameterServerPath`: a parameter-server chief (or an asynchronous
    standalone client), scheduling the loops on the workers through a
    `ClusterCoordinator`.
  - `InGraphClientPath`: a standalone client replicating each step over
    remote workers itself (see in_graph.py).

Each owns its input (how the input_fn's dataset reaches the replicas),
its compiled loop, where new variables go, where checkpoint files are read
and written from, and the agreement between synchronous workers.
`make_train_path` picks one from the RunConfig.
"""

import contextlib
import threading
from typing import Any, Callable, ContextManager, Optional, Tuple

import tensorflow as tf

from estimator_rt.cluster import tf_config as cluster
from estimator_rt.training.eager import executor_choice
from estimator_rt.training.eager import in_graph
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.training.eager import loops
from estimator_rt.cluster import server as server_lib
from estimator_rt.cluster import strategies
from estimator_rt.training import controller
from estimator_rt.core.errors import UserInputError
from estimator_rt.cluster.run_config import RunConfig


class StrategyPath:
  """Training steps run by a `tf.distribute` strategy in this process.

  Args:
    config: the Estimator's RunConfig.
    strategy: the strategy the steps run under.
  """

  def __init__(self, *, config: RunConfig, strategy: tf.distribute.Strategy):
    self._config = config
    self.strategy = strategy

  @property
  def name(self) -> str:
    """The strategy's name, for messages."""
    return strategies.name_of(self._config.training_strategy)

  @property
  def checkpoint_io_device(self) -> Optional[str]:
    """Where checkpoint files are read and written from; None: here."""
    return None

  def placement(self) -> ContextManager:
    """The context the model's variables are created in."""
    return contextlib.nullcontext()

  def make_input(self, input_fn: Callable, params: dict, *,
                 replicate: bool) -> inputs.DistributedInput:
    """The input_fn's data, ready for this path's loop.

    Args:
      replicate: checkpoint_input: every worker iterates the global batches
        itself and each replica takes its rows (see inputs.make_input).
    """
    # checkpoint_input saves the iterator: its state stays the user's
    # pipeline's, with no prefetch buffer of the runtime's in it.
    return inputs.make_input(
        self.strategy, input_fn, params,
        auto_shard_policy=self._config.auto_shard_policy,
        role='train input_fn', replicate=replicate,
        overlap=not replicate, config=self._config)

  def make_loop(self, graph, data: inputs.DistributedInput,
                input_fn: Callable, params: dict, *,
                iterator: Optional[Any] = None,
                replicate: bool = False) -> Tuple[Callable, Any]:
    """The compiled `train_loop(iterator, num_steps)`, traced (see
    loops.CompiledTrainLoop.trace), and its iterator.

    Args:
      iterator: an iterator over `data` made earlier (checkpoint_input
        makes it before the restore); None: one is made here.
      replicate: as for `make_input`.
    """
    del input_fn, params
    if self._config.jit_compile and self.strategy.num_replicas_in_sync > 1:
      raise UserInputError(
          f'RunConfig: jit_compile=True with {self.name} training over '
          f'{self.strategy.num_replicas_in_sync} replicas: not supported '
          '(an XLA-compiled step is placed on one device, and TensorFlow '
          'refuses its access to the other replicas\' variables). Use the '
          'default or one_device strategy, or turn jit_compile off.')
    train_loop = loops.make_train_loop(
        graph, infinite_input=data.infinite, split_global_batch=replicate,
        jit_compile=self._config.jit_compile,
        executor=executor_choice.choose(
            strategy=self.strategy, jit_compile=self._config.jit_compile,
            variables=graph.model_variables, sample=data.sample))
    if iterator is None:
      iterator = iter(data.dataset)
    train_loop.trace(iterator)
    return train_loop, iterator

  def agreement(self) -> Optional[Callable[[controller.Decisions],
                                           controller.Decisions]]:
    """For synchronous multi-worker training: a function that makes the
    decisions any worker takes every worker's (see TrainController); None
    when this process decides alone."""
    task = self._config.task_info
    if (task is None or task.num_workers < 2 or
        not isinstance(self.strategy,
                       tf.distribute.MultiWorkerMirroredStrategy)):
      return None
    strategy = self.strategy

    @tf.function
    def sum_over_workers(values):
      per_replica = strategy.run(lambda: tf.identity(values))
      return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica,
                             axis=None)

    return controller.agreement(
        lambda values: sum_over_workers(tf.constant(values, tf.int64)).numpy(),
        replicas=strategy.num_replicas_in_sync)

  def check_same_input_everywhere(self, sample) -> None:
    """checkpoint_input with several workers: each reads the whole global
    batches and takes its rows, which is only right if every worker's
    input gives the same batches (a seeded shuffle). One gather of the
    first batch's fingerprint tells; every worker refuses if they differ.
    """
    if self.agreement() is None:
      return
    strategy = self.strategy

    @tf.function
    def gather(value):
      per_replica = strategy.run(lambda: tf.reshape(value, [1]))
      return strategy.gather(per_replica, axis=0)

    fingerprints = gather(inputs.fingerprint(sample)).numpy()
    if fingerprints.min() != fingerprints.max():
      raise UserInputError(
          'checkpoint_input=True with several workers: the workers\' train '
          'input_fns gave different first batches. Every worker reads the '
          'whole global batches and takes its rows, so the input must give '
          'every worker the same order: seed the shuffle (shuffle(..., '
          'seed=N)) or set tf_random_seed (--tf_random_seed), or turn '
          'checkpoint_input off.')


class ParameterServerPath(StrategyPath):
  """A parameter-server chief: variables on the ps tasks, each compiled loop
  scheduled on a worker by a `ClusterCoordinator`, which re-dispatches the
  loops of a lost worker to the others."""

  def __init__(self, *, config: RunConfig, strategy: tf.distribute.Strategy):
    super().__init__(config=config, strategy=strategy)
    before = set(threading.enumerate())
    self._coordinator = (
        tf.distribute.experimental.coordinator.ClusterCoordinator(strategy))
    # The coordinator's threads (one per worker, and its recovery thread)
    # run for the life of the process and call workers at any time: when a
    # restarted worker comes back after training ended, they rebuild its
    # resources while this process exits. Recorded, so that the binary
    # leaves with os._exit rather than abort (see server.rpcs_in_flight).
    # An already made coordinator (the strategy keeps one) started none.
    for thread in set(threading.enumerate()) - before:
      server_lib.linger(thread)

  @property
  def checkpoint_io_device(self) -> Optional[str]:
    # The variables live on the ps tasks; model_dir is read and written
    # from the chief's own CPU.
    task = self._config.task_info
    return cluster.cpu_device(task.task_type, task.task_index)

  def make_input(self, input_fn, params, *, replicate):
    del replicate  # Refused on this path (checkpoint_input_problem).
    return inputs.make_input(
        self.strategy, input_fn, params,
        auto_shard_policy=self._config.auto_shard_policy,
        role='train input_fn', coordinator=self._coordinator,
        config=self._config)

  def make_loop(self, graph, data, input_fn, params, *, iterator=None,
                replicate=False):
    del input_fn, params, iterator, replicate
    if self._config.jit_compile:
      raise UserInputError(
          'RunConfig: jit_compile=True with parameter_server training: not '
          'supported (its variables live on the ps tasks, out of reach of '
          'an XLA-compiled step). Turn jit_compile off.')
    train_loop = loops.make_train_loop(graph, infinite_input=data.infinite)
    coordinated = loops.make_coordinated_train_loop(
        train_loop, self._coordinator,
        num_workers=len(self._config.task_info.cluster[cluster.WORKER]),
        global_step=graph.global_step)
    return coordinated, iter(data.dataset)


class InGraphClientPath(StrategyPath):
  """A standalone client's synchronous training: each step replicated over
  the remote workers by the client itself, no tf.distribute strategy (see
  in_graph.py)."""

  def __init__(self, *, config: RunConfig,
               replication: in_graph.InGraphReplication):
    super().__init__(config=config, strategy=tf.distribute.get_strategy())
    self._replication = replication

  @property
  def checkpoint_io_device(self) -> Optional[str]:
    task = self._config.task_info
    return cluster.cpu_device(task.task_type, task.task_index)

  def placement(self):
    return self._replication.placement()

  def make_input(self, input_fn, params, *, replicate):
    del replicate  # Refused on this path (checkpoint_input_problem).
    # Only the sample and spec: each worker reads its own shard (make_loop).
    return inputs.make_input(
        self.strategy, input_fn, params,
        auto_shard_policy=self._config.auto_shard_policy,
        role='train input_fn', sample_only=True, config=self._config)

  def make_loop(self, graph, data, input_fn, params, *, iterator=None,
                replicate=False):
    del iterator, replicate
    if self._config.jit_compile:
      raise UserInputError(
          'RunConfig: jit_compile=True with a synchronous standalone client: '
          'not supported (each step spans the remote workers\' devices). '
          'Turn jit_compile off.')
    inputs.require_repeating(
        data.infinite, what='synchronous standalone-client training')
    train_loop = self._replication.make_train_loop(graph)
    iterators = self._replication.make_iterators(input_fn, params,
                                                 self._config)
    train_loop.trace(iterators)
    return train_loop, iterators


def checkpoint_input_problem(config: RunConfig) -> Optional[str]:
  """Why `config.checkpoint_input` cannot work on the path `config` trains
  on, as a sentence naming the path; None if it can. Decided from the
  config alone, before connecting to any cluster."""
  task = config.task_info
  name = strategies.name_of(config.training_strategy)
  if task is not None and task.standalone_client:
    return ('standalone client training: its input iterators live on the '
            'remote workers and are not checkpointable from the client')
  if name == cluster.PARAMETER_SERVER:
    return (f'{name} training: the per-worker datasets of a '
            'ClusterCoordinator are not checkpointable')
  return None


def make_train_path(config: RunConfig) -> StrategyPath:
  """The path `config` trains on; a standalone client connects to its
  servers first (bounded by `config.remote_connect_timeout_secs`)."""
  task = config.task_info
  name = strategies.name_of(config.training_strategy)
  if task is not None and task.standalone_client:
    server_lib.wait_until_reachable(
        task, timeout_secs=config.remote_connect_timeout_secs)
    if name != cluster.PARAMETER_SERVER:
      return InGraphClientPath(
          config=config, replication=in_graph.InGraphReplication(task=task))
    # Asynchronous: a parameter-server coordinator outside the cluster.
    return ParameterServerPath(
        config=config,
        strategy=strategies.resolve_strategy(config.training_strategy,
                                             task=task))
  strategy = strategies.resolve_strategy(config.training_strategy, task=task)
  if strategies.is_parameter_server(strategy):
    return ParameterServerPath(config=config, strategy=strategy)
  return StrategyPath(config=config, strategy=strategy)
