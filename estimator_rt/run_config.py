"""`RunConfig`: how and where an Estimator runs (not what it computes)."""

import dataclasses
import os
from typing import Optional, Union

import tensorflow as tf

from estimator_rt import cluster
from estimator_rt.errors import check_count
from estimator_rt.errors import UserInputError

_FROM_ENVIRONMENT = object()

AUTO_SHARD_POLICIES = ('AUTO', 'FILE', 'DATA', 'OFF')

# tf.estimator saved every 600 s when neither checkpoint option was set; the
# same default keeps long jobs' I/O low. Training always saves at its end.
DEFAULT_SAVE_CHECKPOINTS_SECS = 600


def _check_positive_int(name, value, allow_none=True, allow_zero=False):
  check_count(f'RunConfig: {name}', value, allow_none=allow_none,
              allow_zero=allow_zero)


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Where an Estimator writes and how it runs. Immutable; see `replace`.

  Attributes:
    model_dir: directory for checkpoints, summaries and exports. None lets
      the Estimator pick a fresh temporary directory.
    tf_random_seed: seeds Python, NumPy, TensorFlow and Keras before the
      model is built, so runs with the same seed start from the same weights.
    save_summary_steps: write training scalars every this many steps
      (0 disables them).
    save_checkpoints_steps: save a checkpoint every this many steps.
    save_checkpoints_secs: save a checkpoint every this many seconds. Setting
      both this and `save_checkpoints_steps` is an error; setting neither
      saves every 600 seconds, as tf.estimator did. A checkpoint is always
      saved when training ends.
    keep_checkpoint_max: how many recent checkpoints to keep (0 keeps all).
    log_step_count_steps: log step, loss, steps/s and ETA every this many
      steps (0 disables the log line).
    steps_per_loop: training steps run inside one compiled call. Hooks,
      logs, summaries and checkpoints happen between calls, and loops are cut
      short so those happen exactly at their step. Larger values amortize the
      per-call cost; tf.estimator in effect used 1.
    train_distribute: a `tf.distribute.Strategy`, or a strategy name
      ('default', 'one_device', 'mirrored', 'central_storage'), or None for
      the default strategy.
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
  """

  model_dir: Optional[str] = None
  tf_random_seed: Optional[int] = None
  save_summary_steps: int = 100
  save_checkpoints_steps: Optional[int] = None
  save_checkpoints_secs: Optional[float] = None
  keep_checkpoint_max: int = 5
  log_step_count_steps: int = 100
  steps_per_loop: int = 100
  train_distribute: Union[None, str, tf.distribute.Strategy] = None
  eval_distribute: Union[None, str, tf.distribute.Strategy] = None
  auto_shard_policy: str = 'AUTO'
  task_info: Optional[cluster.TaskInfo] = None
  remote_cluster: Optional[dict] = None
  remote_connect_timeout_secs: float = 60

  # Keyword-only construction: positional arguments would silently shift
  # meaning as fields are added.
  def __init__(self, *, model_dir=None, tf_random_seed=None,
               save_summary_steps=100, save_checkpoints_steps=None,
               save_checkpoints_secs=None, keep_checkpoint_max=5,
               log_step_count_steps=100, steps_per_loop=100,
               train_distribute=None, eval_distribute=None,
               auto_shard_policy='AUTO', task_info=_FROM_ENVIRONMENT,
               remote_cluster=None, remote_connect_timeout_secs=60):
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
    values = dict(locals())
    values.pop('self')
    for name, value in values.items():
      object.__setattr__(self, name, value)
    self._validate()

  def _validate(self):
    if self.model_dir is not None and not isinstance(self.model_dir, str):
      raise UserInputError(
          f'RunConfig: model_dir={self.model_dir!r} must be a string path.')
    if self.model_dir == '':
      raise UserInputError(
          "RunConfig: model_dir='' is empty; give a directory or None.")
    if self.tf_random_seed is not None and (
        isinstance(self.tf_random_seed, bool) or
        not isinstance(self.tf_random_seed, int)):
      raise UserInputError(
          f'RunConfig: tf_random_seed={self.tf_random_seed!r} must be an '
          'integer or None.')
    _check_positive_int('save_summary_steps', self.save_summary_steps,
                        allow_none=False, allow_zero=True)
    _check_positive_int('save_checkpoints_steps', self.save_checkpoints_steps)
    if self.save_checkpoints_secs is not None and (
        isinstance(self.save_checkpoints_secs, bool) or
        not isinstance(self.save_checkpoints_secs, (int, float)) or
        self.save_checkpoints_secs <= 0):
      raise UserInputError(
          f'RunConfig: save_checkpoints_secs={self.save_checkpoints_secs!r} '
          'must be a number > 0 or None.')
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
                        allow_none=False)
    for name in ('train_distribute', 'eval_distribute'):
      value = getattr(self, name)
      if not (value is None or isinstance(value, str) or
              isinstance(value, tf.distribute.Strategy)):
        raise UserInputError(
            f'RunConfig: {name}={value!r} must be a tf.distribute.Strategy, '
            'a strategy name or None.')
    if self.task_info is not None and not isinstance(self.task_info,
                                                     cluster.TaskInfo):
      raise UserInputError(
          f'RunConfig: task_info={self.task_info!r} must be a '
          'cluster.TaskInfo or None.')
    if (isinstance(self.remote_connect_timeout_secs, bool) or
        not isinstance(self.remote_connect_timeout_secs, (int, float)) or
        self.remote_connect_timeout_secs <= 0):
      raise UserInputError(
          'RunConfig: remote_connect_timeout_secs='
          f'{self.remote_connect_timeout_secs!r} must be a number > 0.')
    if self.auto_shard_policy not in AUTO_SHARD_POLICIES:
      raise UserInputError(
          f'RunConfig: auto_shard_policy={self.auto_shard_policy!r} must be '
          f'one of {AUTO_SHARD_POLICIES}.')

  @property
  def is_chief(self) -> bool:
    """Whether this process writes model_dir (always, when local)."""
    return self.task_info is None or self.task_info.is_chief

  @property
  def task_type(self) -> Optional[str]:
    return None if self.task_info is None else self.task_info.task_type

  @property
  def checkpoint_every_secs(self) -> Optional[float]:
    """Seconds between checkpoints, after applying the default."""
    if self.save_checkpoints_steps is not None:
      return None
    if self.save_checkpoints_secs is None:
      return DEFAULT_SAVE_CHECKPOINTS_SECS
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
