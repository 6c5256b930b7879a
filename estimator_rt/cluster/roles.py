"""The role this process plays, decided once from its task and strategy.

Every place that acts on a role or describes one asks a `Role`: the binary
(which strategy to create before any op runs, what --check_config prints),
the Estimator (whether to ask the model_fn for its engine before a strategy
connects), the eager engine (whether its strategy must exist at once) and
`train_and_evaluate` (what this task runs).

| role              | what it does                                            |
|-------------------|---------------------------------------------------------|
| local             | trains; evaluates after checkpoints; exports            |
| standalone client | drives remote servers; evaluates and exports locally    |
| chief             | trains (synchronous) or coordinates (parameter_server); |
|                   | the only writer of model_dir; never evaluates (but      |
|                   | tf.estimator's legacy `master`, a chief that does)      |
| worker            | synchronous: trains; parameter_server: a server (a      |
|                   | TF1-style model_fn: trains between-graph, then serves)  |
| ps                | a server holding variables                              |
| evaluator         | evaluates each new checkpoint, exports                  |

This module imports no TensorFlow: the binary describes a role before it
imports TensorFlow.
"""

import dataclasses
from typing import Optional

from estimator_rt.cluster import tf_config as cluster

LOCAL = 'local'
STANDALONE_CLIENT = 'standalone client'
CHIEF = 'chief'
WORKER = 'worker'
PS = 'ps'
EVALUATOR = 'evaluator'

# What an engine choice (engine_choice.EAGER / GRAPH) is called here, for
# the parameter-server worker whose role depends on it.
GRAPH_ENGINE = 'graph'


@dataclasses.dataclass(frozen=True)
class Role:
  """This process's role.

  Attributes:
    task: its place in a cluster (None: local).
    strategy_name: the training strategy's name (strategies.name_of).
  """

  task: Optional[cluster.TaskInfo]
  strategy_name: str

  @property
  def kind(self) -> str:
    """LOCAL, STANDALONE_CLIENT, CHIEF, WORKER, PS or EVALUATOR (worker 0
    of a cluster without a chief job is the CHIEF)."""
    task = self.task
    if task is None:
      return LOCAL
    if task.standalone_client:
      return STANDALONE_CLIENT
    if task.task_type in (cluster.PS, cluster.EVALUATOR):
      return task.task_type
    return CHIEF if task.is_chief else WORKER

  @property
  def _parameter_server(self) -> bool:
    return self.strategy_name == cluster.PARAMETER_SERVER

  @property
  def _training_task(self) -> bool:
    return self.kind in (CHIEF, WORKER)

  @property
  def creates_strategy_first(self) -> bool:
    """A training process of multi_worker_mirrored: its strategy must exist
    before TensorFlow runs any op (it configures the collective ops then),
    so before user modules are imported and before any engine runs."""
    return (self.strategy_name == cluster.MULTI_WORKER_MIRRORED and
            self.kind in (LOCAL, CHIEF, WORKER))

  @property
  def asks_model_fn_first(self) -> bool:
    """Whether the engine must be decided by calling the model_fn outside
    any strategy, before the eager engine starts: multi_worker_mirrored
    tasks, whose eager build call runs collective ops (variable
    broadcasts) that would leave a graph engine's session out of step with
    its peers'; and parameter_server chiefs and workers, whose eager engine
    would connect this process to the cluster (the graph engine's tasks run
    servers of their own)."""
    return self._training_task and self.strategy_name in (
        cluster.MULTI_WORKER_MIRRORED, cluster.PARAMETER_SERVER)

  @property
  def evaluates_in_process(self) -> bool:
    """Whether train_and_evaluate evaluates in this process: local, or a
    standalone client (the only process of its job). A chief never does,
    as in tf.estimator 2.15: the evaluator task is often left out of the
    cluster spec (tf.estimator's own layout), so the chief cannot know
    whether one runs, and two evaluations of one checkpoint would race for
    the same export directory. tf.estimator's legacy `master` is the
    exception, as in 2.15: a cluster with one has no evaluator task."""
    return self.kind in (LOCAL, STANDALONE_CLIENT) or (
        self.task is not None and self.task.is_legacy_master)

  def serves(self, engine: Optional[str]) -> bool:
    """Whether this task is a server until the chief ends training: a ps,
    or a parameter-server worker of a TF2 model_fn (the chief schedules
    its work)."""
    return self.kind == PS or (self.kind == WORKER and self._parameter_server
                               and engine != GRAPH_ENGINE)

  def trains_between_graph(self, engine: Optional[str]) -> bool:
    """A parameter-server worker of a TF1-style model_fn: it trains on its
    own (asynchronously, variables on the ps tasks), then serves."""
    return (self.kind == WORKER and self._parameter_server and
            engine == GRAPH_ENGINE)

  @property
  def signals_servers(self) -> bool:
    """The parameter-server chief tells the servers when training ends."""
    return self.kind == CHIEF and self._parameter_server

  def describe(self) -> str:
    """What this process will do, in words (--check_config, the log)."""
    return _DESCRIPTIONS[self.kind](self)


def decide(task: Optional[cluster.TaskInfo], strategy_name: str) -> Role:
  """The role of a process with `task` (None: local) training with the
  strategy named `strategy_name`."""
  return Role(task=task, strategy_name=strategy_name)


def _address(role: Role) -> str:
  return role.task.address or '(no address: not listed in the cluster)'


def _describe_local(role: Role) -> str:
  del role
  return ('local: trains in this process, evaluates after each new '
          'checkpoint, then evaluates the final one and exports.')


def _describe_evaluator(role: Role) -> str:
  del role
  return ('evaluator: waits for checkpoints in model_dir, evaluates the '
          'newest unseen one each time, writes eval summaries, runs the '
          'exporters, and exits 0 after the checkpoint at max_steps.')


def _describe_ps(role: Role) -> str:
  return (f'ps: runs a standard TensorFlow server at {_address(role)} (it '
          'holds the variables) until the chief signals the end of '
          'training, then exits 0; exits non-zero if the chief disappears '
          'first.')


def _describe_client(role: Role) -> str:
  task = role.task
  where_eval = (f'on the evaluator server at '
                f'{task.cluster[cluster.EVALUATOR][0]}'
                if task.has_evaluator else 'in this process')
  how = ('coordinates asynchronous parameter-server training'
         if role.strategy_name == cluster.PARAMETER_SERVER else
         'runs synchronous training replicated in-graph over')
  return (f'standalone client: {how} the remote servers '
          f'({len(task.cluster[cluster.WORKER])} worker(s), {task.num_ps} '
          f'ps), writes model_dir locally, evaluates each new checkpoint '
          f'(at most once per throttle_secs) and the final one {where_eval}'
          ', exports, and leaves the servers running for the next client.')


def _describe_chief(role: Role) -> str:
  task = role.task
  if task.is_legacy_master:
    return (f'master (tf.estimator\'s legacy chief): trains between-graph at '
            f'{_address(role)} with {len(task.cluster.get(cluster.WORKER, ()))}'
            f' worker(s), variables on {task.num_ps} ps (a TF1-style '
            'model_fn), writes checkpoints and summaries to model_dir, '
            'evaluates each new checkpoint (at most once per throttle_secs) '
            'and the final one, exports; then tells the servers that '
            'training is done.')
  if role.strategy_name == cluster.PARAMETER_SERVER:
    return (f'chief: coordinates parameter-server training (schedules '
            f'compiled loops on {len(task.cluster[cluster.WORKER])} '
            f'worker(s), variables on {task.num_ps} ps; a TF1-style model_fn '
            'instead trains here and on each worker asynchronously), writes '
            'checkpoints and summaries to model_dir (an evaluator task '
            'evaluates and exports); then tells the servers that training '
            'is done.')
  return (f'chief: trains with {role.strategy_name} as one of '
          f'{task.num_workers} workers at {_address(role)} and is the only '
          'writer of model_dir (an evaluator task evaluates and exports).')


def _describe_worker(role: Role) -> str:
  if role.strategy_name == cluster.PARAMETER_SERVER:
    return (f'worker: runs a standard TensorFlow server at {_address(role)}, '
            'on which the chief schedules computation (TF2 model_fn); or, for '
            'a TF1-style model_fn, trains there asynchronously on its own '
            'shard of the input with the variables on the ps tasks, up to '
            'max_steps. Then serves until the chief signals the end of '
            'training and exits 0; exits non-zero if the chief disappears '
            'first.')
  return (f'worker: trains with {role.strategy_name} as one of '
          f'{role.task.num_workers} workers at {_address(role)}; its '
          'checkpoints go to a scratch directory removed at exit; exits 0 '
          'when training ends.')


_DESCRIPTIONS = {
    LOCAL: _describe_local,
    STANDALONE_CLIENT: _describe_client,
    CHIEF: _describe_chief,
    WORKER: _describe_worker,
    PS: _describe_ps,
    EVALUATOR: _describe_evaluator,
}
