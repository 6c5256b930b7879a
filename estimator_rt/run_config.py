"""`RunConfig`: how and where an Estimator runs (not what it computes)."""

import dataclasses
import math
import os
import secrets
import tempfile
import time
from typing import Any, Optional, Union

from absl import logging
import tensorflow as tf

from estimator_rt import cluster
from estimator_rt import roles
from estimator_rt import strategies
from estimator_rt.errors import check_count
from estimator_rt.errors import MAX_INT32
from estimator_rt.errors import shorten
from estimator_rt.errors import UserInputError

_FROM_ENVIRONMENT = object()

ENGINES = ('auto', 'eager', 'graph')
AUTO_SHARD_POLICIES = ('AUTO', 'FILE', 'DATA', 'OFF')

# tf.estimator saved every 600 s when neither checkpoint option was set; the
# same default keeps long jobs' I/O low. Training always saves at its end.
DEFAULT_SAVE_CHECKPOINTS_SECS = 600

# keras.utils.set_random_seed seeds NumPy too, which takes 0 <= seed < 2**32.
MAX_SEED = 2**32 - 1


# Linux's limits (NAME_MAX, PATH_MAX): a longer local model_dir fails at its
# first write, after training has started, so it is refused up front.
_MAX_PATH_COMPONENT_BYTES = 255
_MAX_PATH_BYTES = 4095


def _check_model_dir(model_dir) -> None:
  """Refuses a model_dir that no filesystem call could create."""
  if model_dir is None:
    return
  if not isinstance(model_dir, str):
    raise UserInputError(
        f'RunConfig: model_dir={shorten(model_dir)} must be a string path.')
  if not model_dir:
    raise UserInputError(
        "RunConfig: model_dir='' is empty; give a directory or None.")
  if '\0' in model_dir:
    raise UserInputError(
        f'RunConfig: model_dir={shorten(model_dir)} contains a NUL '
        'character; give a plain directory path.')
  if '://' in model_dir:
    return  # Remote filesystems have their own rules; they answer at write.
  encoded = os.fsencode(model_dir)
  longest = max(len(part) for part in encoded.split(b'/'))
  if len(encoded) > _MAX_PATH_BYTES or longest > _MAX_PATH_COMPONENT_BYTES:
    raise UserInputError(
        f'RunConfig: model_dir={shorten(model_dir)} is too long for a local '
        f'path ({len(encoded)} bytes, a component of {longest}; the limits '
        f'are {_MAX_PATH_BYTES} and {_MAX_PATH_COMPONENT_BYTES}); give a '
        'shorter directory.')


def _check_seconds(name, value, *, allow_none: bool) -> None:
  """Refuses anything but a finite number > 0 (None too, if allowed)."""
  if value is None and allow_none:
    return
  if (isinstance(value, bool) or not isinstance(value, (int, float)) or
      not math.isfinite(value) or value <= 0):
    raise UserInputError(
        f'RunConfig: {name}={shorten(value)} must be a finite number > 0'
        + (' or None.' if allow_none else '.'))


def _check_positive_int(name, value, allow_none=True, allow_zero=False,
                        **bounds):
  check_count(f'RunConfig: {name}', value, allow_none=allow_none,
              allow_zero=allow_zero, **bounds)


def temporary_model_dir() -> str:
  """A new path for a temporary model_dir, not created here.

  Training creates it once every input has been validated, so a run
  refused for bad input leaves nothing behind. The random part keeps the
  name unguessable, as tempfile.mkdtemp's is.
  """
  name = time.strftime('estimator_rt_%Y%m%d_%H%M%S_') + secrets.token_hex(6)
  return os.path.join(tempfile.gettempdir(), name)


# The default of save_checkpoints_steps and save_checkpoints_secs, as
# tf.estimator's: both left at it save every 600 s; both None save only at
# the end of training.
USE_DEFAULT = object()


def _checkpoint_schedule(steps, secs):
  """(steps, secs) from tf.estimator's defaults (see USE_DEFAULT)."""
  if steps is USE_DEFAULT and secs is USE_DEFAULT:
    return None, DEFAULT_SAVE_CHECKPOINTS_SECS
  return (None if steps is USE_DEFAULT else steps,
          None if secs is USE_DEFAULT else secs)


# tf.estimator 2.15 parameters with no effect here, with their defaults:
# a different value gets one warning, naming it.
_NO_EFFECT = {
    'device_fn': (None, 'ops are placed by the strategy (or the graph '
                  'engine\'s placement)'),
    'protocol': (None, 'servers speak gRPC'),
    'experimental_distribute': (None, 'deprecated in tf.estimator; use '
                                'train_distribute and eval_distribute'),
    'experimental_max_worker_delay_secs': (None, 'workers start as soon as '
                                           'their servers are up'),
    'session_creation_timeout_secs': (7200, 'cluster waits have bounds of '
                                      'their own'),
    'keep_checkpoint_every_n_hours': (10000, 'keep_checkpoint_max decides '
                                      'which checkpoints stay'),
    'checkpoint_save_graph_def': (True, 'no graph.pbtxt is written'),
}
_warned = set()


def _warn_about_unused(config) -> None:
  for name, (default, why) in _NO_EFFECT.items():
    value = getattr(config, name)
    if value != default and name not in _warned and not (
        name == 'protocol' and value == 'grpc'):
      _warned.add(name)
      logging.warning('RunConfig: %s=%s has no effect in estimator_rt (%s).',
                      name, shorten(value), why)


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Where an Estimator writes and how it runs. Immutable; see `replace`.

  Attributes:
    model_dir: directory for checkpoints, summaries and exports. None lets
      the Estimator pick a fresh temporary directory.
    tf_random_seed: seeds Python, NumPy, TensorFlow and Keras before the
      model is built, so runs with the same seed start from the same weights.
      An integer in [0, 2**32 - 1] (what NumPy accepts), or None.
    save_summary_steps: write training scalars every this many steps
      (0 disables them). This and the other step counts are at most 2**53
      (`errors.MAX_COUNT`).
    save_checkpoints_steps: save a checkpoint every this many steps.
    save_checkpoints_secs: save a checkpoint every this many seconds. Setting
      both this and `save_checkpoints_steps` is an error; leaving both out
      saves every 600 seconds, and setting both to None saves only when
      training ends, as in tf.estimator. A checkpoint is always saved when
      training ends.
    session_config: a `tf.compat.v1.ConfigProto` for the graph engine's
      sessions (merged over its own: soft placement, every logical CPU);
      the eager engine has no session and ignores it.
    keep_checkpoint_max: how many recent checkpoints to keep (0 keeps all).
    log_step_count_steps: log step, loss, steps/s and ETA every this many
      steps (0 disables the log line).
    steps_per_loop: training steps run inside one compiled call. Hooks,
      logs, summaries and checkpoints happen between calls, and loops are cut
      short so those happen exactly at their step. Larger values amortize the
      per-call cost; tf.estimator in effect used 1. At most 2**31 - 1: the
      compiled loop counts its steps in a tf.int32.
    train_distribute: a `tf.distribute.Strategy` (or a
      `tf.compat.v1.distribute` one, taken as its TF2 equivalent), or a
      strategy name ('default', 'one_device', 'mirrored', 'central_storage',
      'multi_worker_mirrored', 'parameter_server'), or None for the
      default strategy; None in a TF_CONFIG cluster with ps tasks means
      'parameter_server', as in tf.estimator.
    eval_distribute: like `train_distribute`, for evaluation and prediction.
      None reuses the training strategy where that is correct (one process,
      not central_storage), else evaluates without distribution.
      tf.estimator always evaluated on one device unless told otherwise.
    auto_shard_policy: how a globally batched dataset is split across
      workers: 'AUTO', 'FILE', 'DATA' or 'OFF'.
    task_info: this process's place in a cluster (`cluster.TaskInfo`), or
      None for local training. By default it is read from the TF_CONFIG
      environment variable, as tf.estimator's RunConfig did.
    remote_cluster: standalone-client mode: job -> addresses of servers
      started with `run_server` ('worker', 'ps', and optionally one
      'evaluator' to evaluate on). This process drives them as a client
      from outside the cluster and alone reads and writes model_dir; it
      cannot be combined with a TF_CONFIG cluster.
    remote_connect_timeout_secs: how long a standalone client waits for
      every server to accept connections before failing.
    checkpoint_input: save the training input iterator's state in every
      checkpoint and restore it on resume, so that a run killed at any
      point and resumed sees each example of an epoch once and (with
      `tf_random_seed` and op determinism) ends with the weights of an
      uninterrupted run. Checkpoints then also hold the iterator's buffers
      (a shuffle buffer, prefetched batches): they grow accordingly. With
      a strategy (one_device, mirrored, multi_worker_mirrored) the runtime
      iterates the input_fn's global batches itself, on every worker, and
      each replica takes its rows: TensorFlow 2.21's distributed iterators
      are not checkpointable, and this way every worker's iterator is in
      the state the chief saves. Each worker then reads all of the input
      (no auto-sharding), and the input must give every worker the same
      order (seed its shuffle, or set `tf_random_seed`); input_fns that
      take an input_context are refused. parameter_server's per-worker
      datasets and a standalone client's remote ones cannot be saved:
      refused. The dataset must be checkpointable (no `from_generator`, no
      `py_function`), which is checked before anything is written.
      tf.estimator, Keras and Orbit restart the input from its beginning.
    jit_compile: compile each training step with XLA
      (`tf.function(jit_compile=True)`); the loop around the steps, which
      reads the input, stays a plain compiled function. A model_fn using an
      op XLA cannot compile fails on the first step, naming the op.
    keep_checkpoint_every_n_hours, device_fn, protocol,
      experimental_distribute, experimental_max_worker_delay_secs,
      session_creation_timeout_secs, checkpoint_save_graph_def:
      tf.estimator 2.15's, accepted; they have no effect here, and a value
      other than the default is named in one warning.
    engine: which engine runs the model_fn: 'auto' (the default: chosen
      by the rule in engine_choice.py, no setting needed), 'eager' (TF2
      model_fns, compiled loops) or 'graph' (TF1-style model_fns in a
      tf.Graph with a monitored session, as tf.estimator ran them).
  """

  model_dir: Optional[str] = None
  tf_random_seed: Optional[int] = None
  save_summary_steps: int = 100
  save_checkpoints_steps: Optional[int] = None
  save_checkpoints_secs: Optional[float] = None
  session_config: Any = None
  keep_checkpoint_max: int = 5
  keep_checkpoint_every_n_hours: float = 10000
  log_step_count_steps: int = 100
  train_distribute: Union[None, str, tf.distribute.Strategy] = None
  device_fn: Any = None
  protocol: Optional[str] = None
  eval_distribute: Union[None, str, tf.distribute.Strategy] = None
  experimental_distribute: Any = None
  experimental_max_worker_delay_secs: Optional[float] = None
  session_creation_timeout_secs: float = 7200
  checkpoint_save_graph_def: bool = True
  steps_per_loop: int = 100
  auto_shard_policy: str = 'AUTO'
  task_info: Optional[cluster.TaskInfo] = None
  remote_cluster: Optional[dict] = None
  remote_connect_timeout_secs: float = 60
  checkpoint_input: bool = False
  jit_compile: bool = False
  engine: str = 'auto'

  # tf.estimator 2.15's parameters in its positional order; this project's
  # own are keyword-only, so that positional arguments never shift meaning.
  def __init__(self, model_dir=None, tf_random_seed=None,
               save_summary_steps=100, save_checkpoints_steps=USE_DEFAULT,
               save_checkpoints_secs=USE_DEFAULT, session_config=None,
               keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000,
               log_step_count_steps=100, train_distribute=None,
               device_fn=None, protocol=None, eval_distribute=None,
               experimental_distribute=None,
               experimental_max_worker_delay_secs=None,
               session_creation_timeout_secs=7200,
               checkpoint_save_graph_def=True, *, steps_per_loop=100,
               auto_shard_policy='AUTO', task_info=_FROM_ENVIRONMENT,
               remote_cluster=None, remote_connect_timeout_secs=60,
               checkpoint_input=False, jit_compile=False, engine='auto'):
    if task_info is _FROM_ENVIRONMENT:
      task_info = cluster.parse_tf_config(os.environ.get('TF_CONFIG'))
    if remote_cluster is not None:
      if task_info is not None and not task_info.standalone_client:
        raise UserInputError(
            'RunConfig: remote_cluster is set and TF_CONFIG (or task_info) '
            'describes a cluster too; a standalone client is not part of a '
            'cluster. Unset TF_CONFIG or drop remote_cluster.')
      if task_info is None:
        task_info = cluster.client_task(remote_cluster)
    save_checkpoints_steps, save_checkpoints_secs = _checkpoint_schedule(
        save_checkpoints_steps, save_checkpoints_secs)
    if (train_distribute is None and task_info is not None and
        task_info.num_ps and not task_info.standalone_client):
      # tf.estimator 2.15 trained between-graph with the variables on the
      # ps tasks whenever TF_CONFIG had some and no strategy was given.
      train_distribute = cluster.PARAMETER_SERVER
    train_distribute = strategies.from_v1(train_distribute)
    eval_distribute = strategies.from_v1(eval_distribute)
    values = dict(locals())
    values.pop('self')
    for name, value in values.items():
      object.__setattr__(self, name, value)
    self._validate()
    _warn_about_unused(self)

  def _validate(self):
    _check_model_dir(self.model_dir)
    if self.tf_random_seed is not None and (
        isinstance(self.tf_random_seed, bool) or
        not isinstance(self.tf_random_seed, int) or
        not 0 <= self.tf_random_seed <= MAX_SEED):
      raise UserInputError(
          f'RunConfig: tf_random_seed={shorten(self.tf_random_seed)} must be '
          f'an integer from 0 to {MAX_SEED} (NumPy seeds are unsigned 32-bit) '
          'or None.')
    _check_positive_int('save_summary_steps', self.save_summary_steps,
                        allow_none=False, allow_zero=True)
    _check_positive_int('save_checkpoints_steps', self.save_checkpoints_steps)
    _check_seconds('save_checkpoints_secs', self.save_checkpoints_secs,
                   allow_none=True)
    if (self.save_checkpoints_steps is not None and
        self.save_checkpoints_secs is not None):
      raise UserInputError(
          'RunConfig: save_checkpoints_steps='
          f'{self.save_checkpoints_steps!r} and save_checkpoints_secs='
          f'{self.save_checkpoints_secs!r} are both set; set at most one.')
    _check_positive_int('keep_checkpoint_max', self.keep_checkpoint_max,
                        allow_none=False, allow_zero=True)
    _check_positive_int('log_step_count_steps', self.log_step_count_steps,
                        allow_none=False, allow_zero=True)
    _check_positive_int('steps_per_loop', self.steps_per_loop,
                        allow_none=False, maximum=MAX_INT32)
    for name in ('train_distribute', 'eval_distribute'):
      value = getattr(self, name)
      if not (value is None or isinstance(value, str) or
              isinstance(value, tf.distribute.Strategy)):
        raise UserInputError(
            f'RunConfig: {name}={shorten(value)} must be a '
            'tf.distribute.Strategy, a strategy name or None.')
    if self.task_info is not None and not isinstance(self.task_info,
                                                     cluster.TaskInfo):
      raise UserInputError(
          f'RunConfig: task_info={shorten(self.task_info)} must be a '
          'cluster.TaskInfo or None.')
    _check_seconds('remote_connect_timeout_secs',
                   self.remote_connect_timeout_secs, allow_none=False)
    if self.auto_shard_policy not in AUTO_SHARD_POLICIES:
      raise UserInputError(
          f'RunConfig: auto_shard_policy={shorten(self.auto_shard_policy)} '
          f'must be one of {AUTO_SHARD_POLICIES}.')
    if not isinstance(self.checkpoint_input, bool):
      raise UserInputError(
          f'RunConfig: checkpoint_input={shorten(self.checkpoint_input)} '
          'must be True or False.')
    if not isinstance(self.jit_compile, bool):
      raise UserInputError(
          f'RunConfig: jit_compile={shorten(self.jit_compile)} must be True '
          'or False.')
    if self.engine not in ENGINES:
      raise UserInputError(
          f'RunConfig: engine={shorten(self.engine)} must be one of '
          f'{ENGINES}.')

  @property
  def is_chief(self) -> bool:
    """Whether this process writes model_dir (always, when local)."""
    return self.task_info is None or self.task_info.is_chief

  @property
  def role(self) -> roles.Role:
    """This process's role (see roles.py), from its task and strategy."""
    return roles.decide(self.task_info,
                        strategies.name_of(self.train_distribute))

  @property
  def task_type(self) -> Optional[str]:
    return None if self.task_info is None else self.task_info.task_type

  @property
  def checkpoint_every_secs(self) -> Optional[float]:
    """Seconds between checkpoints (None: by steps, or only at the end)."""
    return self.save_checkpoints_secs

  def replace(self, **changes) -> 'RunConfig':
    """Returns a copy with `changes` applied (and validated)."""
    values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    unknown = set(changes) - set(values)
    if unknown:
      raise UserInputError(
          f'RunConfig.replace: unknown field(s) {sorted(unknown)}.')
    if ('save_checkpoints_steps' in changes and
        'save_checkpoints_secs' not in changes):
      values['save_checkpoints_secs'] = None
    if ('save_checkpoints_secs' in changes and
        'save_checkpoints_steps' not in changes):
      values['save_checkpoints_steps'] = None
    values.update(changes)
    return RunConfig(**values)

  # tf.estimator 2.15's RunConfig properties, from the task description.
  @property
  def cluster_spec(self) -> tf.train.ClusterSpec:
    return tf.train.ClusterSpec(
        {} if self.task_info is None else self.task_info.training_cluster)

  @property
  def task_id(self) -> int:
    return 0 if self.task_info is None else self.task_info.task_index

  @property
  def num_ps_replicas(self) -> int:
    return 0 if self.task_info is None else self.task_info.num_ps

  @property
  def num_worker_replicas(self) -> int:
    return 1 if self.task_info is None else self.task_info.num_workers

  @property
  def master(self) -> str:
    task = self.task_info
    if task is None or not task.address:
      return ''
    return f'{task.rpc_layer}://{task.address}'

  @property
  def evaluation_master(self) -> str:
    return ''

  @property
  def global_id_in_cluster(self) -> int:
    """The task's number over the chief, workers and ps, in that order (the
    evaluator gets none), as tf.estimator numbered them."""
    task = self.task_info
    if task is None:
      return 0
    order = [cluster.CHIEF, cluster.WORKER, cluster.PS]
    if task.task_type not in order:
      return -1
    before = sum(len(task.cluster.get(job, ()))
                 for job in order[:order.index(task.task_type)])
    return before + task.task_index

  @property
  def service(self) -> Optional[dict]:
    return None
