"""`RunConfig`: how and where an Estimator runs (not what it computes).

Its API is tf.estimator 2.15's: the same constructor, properties,
`replace()` rules and error messages, and TF_CONFIG read by 2.15's rules
(`cluster`, `task`, `session_master`, `eval_session_master`, `service`,
`model_dir`; a `master` job; job names of any kind), so a program written
for 2.15 sees the values it saw there. The runtime's own, stricter reading
of the cluster (tf_config.py: addresses with a real port, the job names it
can run, one evaluator) is kept for when the cluster is used: a TF_CONFIG
that 2.15 accepted and the runtime cannot run makes a RunConfig, and an
Estimator made with it refuses it in one line (`task_info`).
"""

import copy
import dataclasses
import json
import math
import numbers
import os
import secrets
import tempfile
import time
from typing import Any, Optional, Union

from absl import logging
import tensorflow as tf

from estimator_rt.cluster import tf_config as cluster
from estimator_rt.cluster import roles
from estimator_rt.cluster import strategies
from estimator_rt.core.errors import as_count
from estimator_rt.core.errors import check_comparable
from estimator_rt.core.errors import check_count
from estimator_rt.core.errors import MAX_INT32
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError

_FROM_ENVIRONMENT = object()

ENGINES = ('auto', 'eager', 'graph')
AUTO_SHARD_POLICIES = ('AUTO', 'FILE', 'DATA', 'OFF')

# tf.estimator saved every 600 s when neither checkpoint option was set; the
# same default keeps long jobs' I/O low. Training always saves at its end.
DEFAULT_SAVE_CHECKPOINTS_SECS = 600



# Linux's limits (NAME_MAX, PATH_MAX): a longer local model_dir fails at its
# first write, after training has started, so it is refused up front.
_MAX_PATH_COMPONENT_BYTES = 255
_MAX_PATH_BYTES = 4095

# TF_CONFIG's keys, as tf.estimator 2.15 read them.
_TF_CONFIG_ENV = 'TF_CONFIG'
_TASK_ENV_KEY = 'task'
_TASK_TYPE_KEY = 'type'
_TASK_ID_KEY = 'index'
_CLUSTER_KEY = 'cluster'
_SERVICE_KEY = 'service'
_SESSION_MASTER_KEY = 'session_master'
_EVAL_SESSION_MASTER_KEY = 'eval_session_master'
_MODEL_DIR_KEY = 'model_dir'
_LOCAL_MASTER = ''
_GRPC_SCHEME = 'grpc://'

_SAVE_CKPT_ERR = (
    '`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set.')


class TaskType(object):
  """tf.estimator 2.15's task types (the jobs of a TF_CONFIG cluster)."""
  MASTER = 'master'
  PS = 'ps'
  WORKER = 'worker'
  CHIEF = 'chief'
  EVALUATOR = 'evaluator'


# The properties 2.15's `replace` changes; this project's own keyword-only
# fields may be replaced too.
_DEFAULT_REPLACEABLE_LIST = [
    'model_dir', 'tf_random_seed', 'save_summary_steps',
    'save_checkpoints_steps', 'save_checkpoints_secs', 'session_config',
    'keep_checkpoint_max', 'keep_checkpoint_every_n_hours',
    'log_step_count_steps', 'train_distribute', 'device_fn', 'protocol',
    'eval_distribute', 'experimental_distribute',
    'experimental_max_worker_delay_secs', 'session_creation_timeout_secs',
    'checkpoint_save_graph_def'
]
_OWN_REPLACEABLE = [
    'steps_per_loop', 'auto_shard_policy', 'task_info', 'remote_cluster',
    'remote_connect_timeout_secs', 'checkpoint_input', 'jit_compile', 'engine'
]


def get_default_session_config() -> tf.compat.v1.ConfigProto:
  """tf.estimator's default session config: soft placement, one meta
  optimizer iteration."""
  from tensorflow.core.protobuf import rewriter_config_pb2  # pylint: disable=g-import-not-at-top
  rewrite_opts = rewriter_config_pb2.RewriterConfig(
      meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)
  graph_opts = tf.compat.v1.GraphOptions(rewrite_options=rewrite_opts)
  return tf.compat.v1.ConfigProto(
      allow_soft_placement=True, graph_options=graph_opts)


def path_to_str(path):
  """A `PathLike` as its string, anything else as it is (as 2.15)."""
  if hasattr(path, '__fspath__'):
    path = tf.compat.as_str_any(path.__fspath__())
  return path


def _check_model_dir(model_dir) -> None:
  """Refuses a model_dir that no filesystem call could create."""
  if model_dir is None:
    return
  if not isinstance(model_dir, str):
    raise UserInputError(
        f'RunConfig: model_dir={shorten(model_dir)} must be a string path.')
  if not model_dir:
    raise UserInputError(
        "model_dir should be non-empty (RunConfig: model_dir=''); give a "
        'directory or None.')
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


def _is_number(value) -> bool:
  # NumPy's numbers too, as 2.15 took them.
  return (not isinstance(value, bool) and isinstance(value, numbers.Real) and
          math.isfinite(value))


# The step counts (save_summary_steps, save_checkpoints_steps,
# log_step_count_steps) are kept as given, as 2.15 kept them (2.0,
# np.float32(2.5)); 2.15 took any number > 0 (its timers fired at the first
# step at or past one), and they count as `errors.as_count` makes them
# (the engines read them through it).


def _whole(value):
  """A NumPy integer as an int (checked as one), anything else as it is."""
  if isinstance(value, numbers.Integral) and not isinstance(value, bool):
    return int(value)
  return value


def _check_seconds(name, value, *, allow_none: bool, allow_zero: bool = False,
                   phrase: str = '') -> None:
  """Refuses anything but a finite number > 0 (>= 0, None, if allowed).
  `phrase` is tf.estimator 2.15's message, which the error starts with;
  what 2.15's check (`value > 0`, `>= 0`) could not compare, its
  TypeError."""
  if value is None and allow_none:
    return
  check_comparable(f'RunConfig: {name}', value, '>=' if allow_zero else '>')
  if not _is_number(value) or value < 0 or (value == 0 and not allow_zero):
    bound = '>= 0' if allow_zero else '> 0'
    raise UserInputError(
        (f'{phrase} (' if phrase else '') +
        f'RunConfig: {name}={shorten(value)} must be a finite number {bound}'
        + (' or None' if allow_none else '') + (').' if phrase else '.'))


def _check_positive_int(name, value, allow_none=True, allow_zero=False,
                        phrase='', compared=None, **bounds):
  """errors.check_count, with tf.estimator 2.15's message in front; what
  2.15's check (`value >= 0`, `> 0`, or `compared`) could not compare, its
  TypeError."""
  if value is not None:
    check_comparable(f'RunConfig: {name}', value,
                     compared or ('>=' if allow_zero else '>'))
  try:
    check_count(f'RunConfig: {name}', value, allow_none=allow_none,
                allow_zero=allow_zero, **bounds)
  except UserInputError as e:
    if not phrase:
      raise
    raise UserInputError(f'{phrase} ({e})') from None


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
_USE_DEFAULT = USE_DEFAULT  # tf.estimator 2.15's name.


def _checkpoint_schedule(steps, secs):
  """(steps, secs) from tf.estimator's defaults (see USE_DEFAULT)."""
  if steps is USE_DEFAULT and secs is USE_DEFAULT:
    return None, DEFAULT_SAVE_CHECKPOINTS_SECS
  if secs is USE_DEFAULT:
    return steps, None
  if steps is USE_DEFAULT:
    return None, secs
  if steps is not None and secs is not None:
    raise UserInputError(
        f'{_SAVE_CKPT_ERR} (RunConfig: save_checkpoints_steps={steps!r}, '
        f'save_checkpoints_secs={secs!r}); set at most one.')
  return steps, secs


# tf.estimator 2.15 parameters with no effect here, with their defaults:
# a different value gets one warning, naming it.
_NO_EFFECT = {
    'device_fn': (None, 'ops are placed by the strategy (or the graph '
                  'engine\'s placement)'),
    'protocol': (None, 'servers speak gRPC'),
    'experimental_max_worker_delay_secs': (None, 'workers start as soon as '
                                           'their servers are up'),
    'session_creation_timeout_secs': (7200, 'cluster waits have bounds of '
                                      'their own'),
    'keep_checkpoint_every_n_hours': (10000, 'keep_checkpoint_max decides '
                                      'which checkpoints stay'),
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


# ---------------------------------------------------------------------------
# TF_CONFIG, as tf.estimator 2.15 read it.


def _read_tf_config() -> dict:
  """TF_CONFIG as a dict ({} when unset), bounded in size and nesting."""
  raw = os.environ.get(_TF_CONFIG_ENV)
  if raw is None or not raw.strip():
    return {}
  value = cluster.load_json(raw, what='TF_CONFIG')
  if not isinstance(value, dict):
    raise cluster.ClusterConfigError(
        f'TF_CONFIG must be a JSON object, got {type(value).__name__}: '
        f'{shorten(raw)}')
  return value


def _get_model_dir(tf_config: dict, model_dir):
  """model_dir, or TF_CONFIG's `model_dir` (2.15's rules)."""
  if model_dir == '':
    raise UserInputError(
        "model_dir should be non-empty (RunConfig: model_dir=''); give a "
        'directory or None.')
  in_tf_config = tf_config.get(_MODEL_DIR_KEY)
  if in_tf_config == '':
    raise UserInputError(
        'model_dir in TF_CONFIG should be non-empty (TF_CONFIG: '
        '"model_dir": ""); give a directory or leave the key out.')
  if in_tf_config:
    if model_dir and in_tf_config != model_dir:
      raise UserInputError(
          '`model_dir` provided in RunConfig construct, if set, must have the '
          'same value as the model_dir in TF_CONFIG. model_dir: '
          f'{shorten(model_dir)}, TF_CONFIG["model_dir"]: '
          f'{shorten(in_tf_config)}.')
    logging.info('Using model_dir in TF_CONFIG: %s', in_tf_config)
  return model_dir or in_tf_config


def _cluster_spec_of(value) -> tf.train.ClusterSpec:
  try:
    return tf.train.ClusterSpec(value or {})
  except (TypeError, ValueError) as e:
    raise cluster.ClusterConfigError(
        f'TF_CONFIG cluster={shorten(value)} is not a cluster (job -> list '
        f'of "host:port" addresses): {str(e).splitlines()[0][:120]}'
    ) from None


def _lenient_cluster_spec(value) -> tf.train.ClusterSpec:
  try:
    return tf.train.ClusterSpec(value or {})
  except (TypeError, ValueError):
    return tf.train.ClusterSpec({})


def _one_line_spec(spec: tf.train.ClusterSpec) -> str:
  return shorten(spec.as_dict(), limit=160)


def _validate_service(service):
  if service is not None and not isinstance(service, dict):
    raise UserTypeError(
        'If "service" is set in TF_CONFIG, it must be a dict. Given '
        f'{type(service)} (TF_CONFIG: "service": {shorten(service)}).')
  return service


def _task_index(value) -> int:
  try:
    return int(value)
  except (TypeError, ValueError):
    raise cluster.ClusterConfigError(
        f'TF_CONFIG task index={shorten(value)} must be an integer.'
    ) from None


def _validate_task_type_and_task_id(cluster_spec: tf.train.ClusterSpec,
                                    task_env: dict, chief_task_type: str):
  """2.15's checks of the task against the cluster; (task_type, task_id).

  Raises:
    ClusterConfigError (a ValueError): the cluster has not one
      `chief_task_type` task, or `task_env` names no task of it.
  """
  spec, chief_job = cluster_spec, chief_task_type
  if chief_job not in spec.jobs:
    raise cluster.ClusterConfigError(
        f'If "cluster" is set in TF_CONFIG, it must have one "{chief_job}" '
        f'node (TF_CONFIG cluster: {_one_line_spec(spec)}).')
  if len(spec.job_tasks(chief_job)) > 1:
    raise cluster.ClusterConfigError(
        f'The "cluster" in TF_CONFIG must have only one "{chief_job}" node '
        f'(it lists {len(spec.job_tasks(chief_job))}).')
  task_type = task_env.get(_TASK_TYPE_KEY)
  task_id = task_env.get(_TASK_ID_KEY)
  if not task_type:
    raise cluster.ClusterConfigError(
        'If "cluster" is set in TF_CONFIG, task type must be set (give '
        '"task": {"type": ..., "index": ...}).')
  if task_id is None:
    raise cluster.ClusterConfigError(
        'If "cluster" is set in TF_CONFIG, task index must be set (TF_CONFIG '
        f'task: {shorten(task_env)}).')
  task_id = _task_index(task_id)
  if task_id < 0:
    raise cluster.ClusterConfigError(
        f'Task index must be non-negative number (TF_CONFIG task index='
        f'{task_id}).')
  if task_type == TaskType.EVALUATOR:
    return task_type, task_id
  if task_type not in spec.jobs:
    raise cluster.ClusterConfigError(
        f'{task_type} is not a valid task_type in the cluster_spec: '
        f'{_spec_as_215_showed_it(spec)} {_FROM_TF_CONFIG_NOTE}')
  if not 0 <= task_id < len(spec.job_tasks(task_type)):
    raise cluster.ClusterConfigError(
        f'{task_id} is not a valid task_id for task_type {task_type} in the '
        f'cluster_spec: {_spec_as_215_showed_it(spec)} '
        f'{_FROM_TF_CONFIG_NOTE} (Job {task_type!r} has '
        f'{len(spec.job_tasks(task_type))} task(s).)')
  return task_type, task_id


_FROM_TF_CONFIG_NOTE = ('Note that these values may be coming from the '
                        'TF_CONFIG environment variable.')


def _spec_as_215_showed_it(spec: tf.train.ClusterSpec) -> str:
  """`ClusterSpec({...})`, as 2.15's messages showed a cluster (on lines
  of their own there; the runtime's messages are one line, and compare by
  their words), cut short for a big one."""
  text = str(spec)
  return text if len(text) <= 400 else text[:397] + '...'


def _get_global_id_in_cluster(cluster_spec: tf.train.ClusterSpec,
                              task_type: str, task_id: int,
                              chief_task_type: str) -> int:
  """2.15's global id: the chief (or master) first, then the other jobs
  alphabetically, the ps tasks last; 0 for a task type the cluster does not
  have (a task the runtime does not count)."""
  spec, chief_job = cluster_spec, chief_task_type
  order = [chief_job] if chief_job in spec.jobs else []
  order += [job for job in sorted(spec.jobs)
            if job not in (chief_job, TaskType.PS)]
  if TaskType.PS in spec.jobs:
    order.append(TaskType.PS)
  next_id = 0
  for job in order:
    if job == task_type:
      return next_id + task_id
    next_id += len(spec.job_tasks(job))
  return 0


def _get_session_master(cluster_spec: tf.train.ClusterSpec, task_type: str,
                        task_id: int, tf_config: dict) -> str:
  """The master of a task's sessions: TF_CONFIG's `session_master`, else ''
  (a direct session) for a cluster of one task, else the task's own
  grpc:// address ('' for a task not in the cluster)."""
  if _SESSION_MASTER_KEY in tf_config:
    return tf_config[_SESSION_MASTER_KEY]
  jobs = cluster_spec.jobs
  if len(jobs) == 1 and len(cluster_spec.job_tasks(jobs[0])) == 1:
    return _LOCAL_MASTER  # One node: a direct session, no RPC.
  if task_type in jobs and 0 <= task_id < len(
      cluster_spec.job_tasks(task_type)):
    return _GRPC_SCHEME + cluster_spec.job_tasks(task_type)[task_id]
  return _LOCAL_MASTER


def _get_eval_session_master(task_type: Optional[str], tf_config: dict) -> str:
  """The evaluator's master: TF_CONFIG's `eval_session_master` (default
  ''); '' for other tasks."""
  if task_type == TaskType.EVALUATOR:
    return tf_config.get(_EVAL_SESSION_MASTER_KEY, _LOCAL_MASTER)
  return _LOCAL_MASTER


def _count_ps(cluster_spec: tf.train.ClusterSpec) -> int:
  """The number of ps tasks."""
  return len(cluster_spec.as_dict().get(TaskType.PS, []))


def _count_worker(cluster_spec: tf.train.ClusterSpec,
                  chief_task_type: str) -> int:
  """The number of training workers, the chief included."""
  as_dict = cluster_spec.as_dict()
  return (len(as_dict.get(TaskType.WORKER, [])) +
          len(as_dict.get(chief_task_type, [])))


@dataclasses.dataclass(frozen=True)
class _Distributed:
  """What 2.15's RunConfig derived from TF_CONFIG."""
  cluster_spec: tf.train.ClusterSpec
  task_type: Optional[str]
  task_id: int
  master: str
  evaluation_master: str
  is_chief: bool
  num_ps_replicas: int
  num_worker_replicas: int
  global_id_in_cluster: Optional[int]
  service: Optional[dict]


def _local_settings(tf_config: dict, service) -> _Distributed:
  """No cluster: the task must be worker 0 (2.15's rule)."""
  task_env = tf_config.get(_TASK_ENV_KEY) or {}
  if not isinstance(task_env, dict):
    raise cluster.ClusterConfigError(
        f'TF_CONFIG "task" must be an object like {{"type": "worker", '
        f'"index": 0}}, got {shorten(task_env)}.')
  task_type = task_env.get(_TASK_TYPE_KEY, TaskType.WORKER)
  task_id = _task_index(task_env.get(_TASK_ID_KEY, 0))
  if task_type != TaskType.WORKER:
    raise cluster.ClusterConfigError(
        'If "cluster" is not set in TF_CONFIG, task type must be WORKER '
        f'(TF_CONFIG task type={shorten(task_type)}); give a "cluster" too, '
        'or leave "task" out for local training.')
  if task_id != 0:
    raise cluster.ClusterConfigError(
        'If "cluster" is not set in TF_CONFIG, task index must be 0 '
        f'(TF_CONFIG task index={task_id}).')
  return _Distributed(
      cluster_spec=tf.train.ClusterSpec({}), task_type=task_type,
      task_id=task_id,
      master=tf_config.get(_SESSION_MASTER_KEY, _LOCAL_MASTER),
      evaluation_master=tf_config.get(_EVAL_SESSION_MASTER_KEY,
                                      _LOCAL_MASTER),
      is_chief=True, num_ps_replicas=0, num_worker_replicas=1,
      global_id_in_cluster=0, service=service)


def _settings_of(spec: tf.train.ClusterSpec, task_type: str, task_id: int,
                 tf_config: dict, service) -> _Distributed:
  """The properties of task `task_type:task_id` of cluster `spec`."""
  chief_job = TaskType.MASTER if TaskType.MASTER in spec.jobs else (
      TaskType.CHIEF)
  if task_type == TaskType.EVALUATOR:
    # Not part of the training cluster.
    return _Distributed(
        cluster_spec=tf.train.ClusterSpec({}), task_type=task_type,
        task_id=task_id, master=_LOCAL_MASTER,
        evaluation_master=tf_config.get(_EVAL_SESSION_MASTER_KEY,
                                        _LOCAL_MASTER),
        is_chief=False, num_ps_replicas=0, num_worker_replicas=0,
        global_id_in_cluster=None, service=service)
  jobs = spec.jobs
  return _Distributed(
      cluster_spec=spec, task_type=task_type, task_id=task_id,
      master=_get_session_master(spec, task_type, task_id, tf_config),
      evaluation_master=_get_eval_session_master(task_type, tf_config),
      is_chief=(task_type == chief_job or (
          task_type == TaskType.WORKER and task_id == 0 and
          chief_job not in jobs)),
      num_ps_replicas=_count_ps(spec),
      num_worker_replicas=_count_worker(spec, chief_job),
      global_id_in_cluster=_get_global_id_in_cluster(spec, task_type,
                                                     task_id, chief_job),
      service=service)


def settings_from_tf_config(tf_config: dict, *, validate: bool
                            ) -> _Distributed:
  """The distributed properties of a TF_CONFIG dict.

  With `validate`, 2.15's checks of a TF_CONFIG used without a distribution
  strategy (one chief or master, a task type and index in the cluster);
  without, the properties of whatever task it names (2.15 did not check a
  cluster given with a strategy), or a local worker's when it names none.
  """
  service = _validate_service(tf_config.get(_SERVICE_KEY))
  spec = _cluster_spec_of(tf_config.get(_CLUSTER_KEY))
  if not spec.jobs:
    return _local_settings(tf_config, service)
  task_env = tf_config.get(_TASK_ENV_KEY) or {}
  if not isinstance(task_env, dict):
    raise cluster.ClusterConfigError(
        f'TF_CONFIG "task" must be an object like {{"type": "worker", '
        f'"index": 0}}, got {shorten(task_env)}.')
  if TaskType.MASTER in spec.jobs:
    # Legacy clusters: the master is the chief.
    if TaskType.CHIEF in spec.jobs:
      raise cluster.ClusterConfigError(
          'If `master` node exists in `cluster`, job `chief` is not supported '
          f'(TF_CONFIG cluster: {_one_line_spec(spec)}).')
    task_type, task_id = _validate_task_type_and_task_id(
        spec, task_env, TaskType.MASTER)
    if task_type == TaskType.EVALUATOR:
      raise cluster.ClusterConfigError(
          'If `master` node exists in `cluster`, task_type `evaluator` is not '
          'supported.')
    return _settings_of(spec, task_type, task_id, tf_config, service)
  if validate:
    task_type, task_id = _validate_task_type_and_task_id(
        spec, task_env, TaskType.CHIEF)
  else:
    task_type = task_env.get(_TASK_TYPE_KEY)
    task_id = task_env.get(_TASK_ID_KEY)
    if not task_type or task_id is None:
      # 2.15's placeholders until its distribute coordinator took over.
      settings = _local_settings({}, service)
      return dataclasses.replace(settings, cluster_spec=spec)
    task_id = _task_index(task_id)
  return _settings_of(spec, task_type, task_id, tf_config, service)


def _settings_of_task(task: cluster.TaskInfo) -> _Distributed:
  """The distributed properties of a TaskInfo given to the constructor."""
  if task.standalone_client:
    # As tf.estimator's standalone client: a local chief whose cluster is
    # the remote one.
    settings = _local_settings({}, None)
    return dataclasses.replace(settings, cluster_spec=tf.train.ClusterSpec(
        {job: list(a) for job, a in task.cluster.items()
         if job != cluster.CHIEF}))
  spec = tf.train.ClusterSpec(
      {job: list(addresses) for job, addresses in task.cluster.items()})
  return _settings_of(spec, task.task_type, task.task_index, {}, None)


def _default_session_config_distributed(task_type, task_id):
  """2.15's session config for between-graph training: each training task
  sees the ps tasks and itself; None for an evaluator or another job."""
  filters = {
      TaskType.MASTER: ['/job:ps', '/job:master'],
      TaskType.CHIEF: ['/job:ps', '/job:chief'],
      TaskType.WORKER: ['/job:ps', f'/job:worker/task:{task_id}'],
      TaskType.PS: ['/job:ps', '/job:worker', '/job:chief', '/job:master'],
  }.get(task_type)
  if filters is None:
    return None
  config = get_default_session_config()
  config.device_filters.extend(filters)
  return config


def _has_a_strategy(train_distribute, eval_distribute,
                    experimental_distribute) -> bool:
  """2.15 went its distribute coordinator's way with a strategy (TPU ones
  excepted) or an experimental_distribute."""
  def is_one(value):
    return (value is not None and
            not type(value).__name__.startswith('TPUStrategy'))
  return bool(is_one(train_distribute) or is_one(eval_distribute) or
              experimental_distribute)


def _check_not_tf2_parameter_server(train_distribute, eval_distribute):
  for value in (train_distribute, eval_distribute):
    if (value is not None and type(value) is
        tf.distribute.experimental.ParameterServerStrategy):
      raise UserInputError(
          'Please use `tf.compat.v1.distribute.experimental.'
          'ParameterServerStrategy` for parameter server strategy with '
          "estimator (or train_distribute='parameter_server'): the runtime "
          'makes the TF2 strategy itself, from TF_CONFIG.')


def _device_fn_problem(device_fn) -> bool:
  if not callable(device_fn):
    return True
  from tensorflow.python.util import function_utils  # pylint: disable=g-import-not-at-top
  try:
    return set(function_utils.fn_args(device_fn)) != {'op'}
  except (TypeError, ValueError):
    return True


def _validate_save_ckpt_with_replaced_keys(new_copy, replaced_keys) -> None:
  """The checkpoint schedule of a RunConfig whose `replaced_keys` were just
  replaced: setting one of save_checkpoints_steps and save_checkpoints_secs
  to a value sets the other to None.

  Raises:
    UserInputError (a ValueError): both were replaced, with values.
  """
  steps = new_copy.save_checkpoints_steps
  secs = new_copy.save_checkpoints_secs
  if ('save_checkpoints_steps' in replaced_keys and
      'save_checkpoints_secs' in replaced_keys):
    if steps is not None and secs is not None:
      raise UserInputError(
          f'{_SAVE_CKPT_ERR} (RunConfig.replace: save_checkpoints_steps='
          f'{steps!r}, save_checkpoints_secs={secs!r}); set at most one.')
  elif 'save_checkpoints_steps' in replaced_keys and steps is not None:
    _set_field(new_copy, 'save_checkpoints_secs', None)
  elif 'save_checkpoints_secs' in replaced_keys and secs is not None:
    _set_field(new_copy, 'save_checkpoints_steps', None)


def _validate_properties(run_config) -> None:
  """2.15's checks of a RunConfig's values (and of this project's own).

  Raises:
    UserInputError (a ValueError): one is invalid, named with its value.
  """
  run_config._validate()  # pylint: disable=protected-access


def _set_field(config, name: str, value) -> None:
  """Sets field `name` of the frozen `config`.

  A subclass may make a field a read-only property (tf.estimator 2.15's
  tests and programs override `model_dir` so); 2.15 kept its values in
  private attributes, so the subclass's property won and construction and
  replace() still worked. Here the value goes to the instance dict, which
  the property shadows in the same way.
  """
  if isinstance(getattr(type(config), name, None), property):
    config.__dict__[name] = value
  else:
    object.__setattr__(config, name, value)


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Where an Estimator writes and how it runs. Immutable; see `replace`.

  tf.estimator 2.15's constructor, properties and validation; TF_CONFIG is
  read as 2.15 read it (see the module docstring).

  Attributes:
    model_dir: directory for checkpoints, summaries and exports (a string or
      a PathLike), or TF_CONFIG's `model_dir`. None lets the Estimator pick a
      fresh temporary directory.
    tf_random_seed: seeds Python, NumPy, TensorFlow and Keras before the
      model is built, so runs with the same seed start from the same weights.
      Any integer, as 2.15 took (TensorFlow reduces a graph seed modulo
      2**31 - 1), or None; the eager engine seeds NumPy with it modulo
      2**32.
    save_summary_steps: write training scalars every this many steps (0 or
      None: none). This and the other step counts count as 2**53
      (`errors.MAX_COUNT`, a step no run reaches) when larger.
    save_checkpoints_steps: save a checkpoint every this many steps (0 or
      None: not by steps).
    save_checkpoints_secs: save a checkpoint every this many seconds (0 or
      None: not by time). Setting both this and `save_checkpoints_steps` is
      an error; leaving both out saves every 600 seconds, and setting both
      to None saves only when training ends, as in tf.estimator. A
      checkpoint is always saved when training ends.
    session_config: a `tf.compat.v1.ConfigProto` for the graph engine's
      sessions (merged over its own: soft placement, every logical CPU);
      the eager engine has no session and ignores it. In a TF_CONFIG
      cluster without a strategy it defaults, as in 2.15, to device filters
      that let a training task see the ps tasks and itself.
    keep_checkpoint_max: how many recent checkpoints to keep (0 or None:
      all).
    log_step_count_steps: log step, loss, steps/s and the ETA (and 2.15's
      `loss = ...` and `global_step/sec` lines) at the first step of each
      training run and every this many steps after it, as 2.15's hooks
      did, at the loop ends summaries use too (0 or None: never).
    steps_per_loop: training steps run inside one compiled call. Hooks,
      logs, summaries and checkpoints happen between calls, and loops are cut
      short so those happen exactly at their step. Larger values amortize the
      per-call cost; tf.estimator in effect used 1. At most 2**31 - 1: the
      compiled loop counts its steps in a tf.int32.
    train_distribute: a `tf.distribute.Strategy` (or a
      `tf.compat.v1.distribute` one, taken as its TF2 equivalent), or a
      strategy name ('default', 'one_device', 'mirrored', 'central_storage',
      'multi_worker_mirrored', 'parameter_server'), or None for the
      default strategy; None in a TF_CONFIG cluster with ps tasks trains
      as 'parameter_server', as tf.estimator did (`training_strategy`; the
      property stays None, as 2.15's). A TF2 ParameterServerStrategy
      object is refused, as 2.15 refused it (the runtime makes its own).
    eval_distribute: like `train_distribute`, for evaluation and prediction.
      None reuses the training strategy where that is correct (one process,
      not central_storage), else evaluates without distribution.
      tf.estimator always evaluated on one device unless told otherwise.
    experimental_distribute: a `DistributeConfig`; its train_distribute and
      eval_distribute are used as those arguments (giving both is an
      error, as in 2.15), its remote_cluster as `remote_cluster`.
    auto_shard_policy: how a globally batched dataset is split across
      workers: 'AUTO', 'FILE', 'DATA' or 'OFF'.
    task_info: this process's place in a cluster (`cluster.TaskInfo`), or
      None for local training. By default it is read from the TF_CONFIG
      environment variable, by the runtime's rules (tf_config.py); a
      TF_CONFIG that 2.15's rules accept and these refuse makes a RunConfig
      whose `task_info` raises that refusal (so does making an Estimator).
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
    checkpoint_save_graph_def: write graph.pbtxt when training starts and
      a MetaGraphDef beside each checkpoint (`model.ckpt-<step>.meta`), as
      tf.estimator 2.15 did (default True); see graph/graph_files.py. The
      graph goes into the training event file either way.
    keep_checkpoint_every_n_hours, device_fn, protocol,
      experimental_max_worker_delay_secs, session_creation_timeout_secs:
      tf.estimator 2.15's, validated as 2.15 validated them; they have no
      effect here, and a value other than the default is named in one
      warning.
    engine: which engine runs the model_fn: 'auto' (the default: chosen
      by the rule in engine_choice.py, no setting needed), 'eager' (TF2
      model_fns, compiled loops) or 'graph' (TF1-style model_fns in a
      tf.Graph with a monitored session, as tf.estimator ran them).

  Properties (2.15's): `cluster_spec`, `task_type` ('worker' when local),
  `task_id`, `master`, `evaluation_master`, `is_chief`,
  `num_ps_replicas`, `num_worker_replicas`, `global_id_in_cluster`,
  `service`, as 2.15 derived them from TF_CONFIG.
  """

  model_dir: Optional[str] = None
  tf_random_seed: Optional[int] = None
  save_summary_steps: Optional[int] = 100
  save_checkpoints_steps: Optional[int] = None
  save_checkpoints_secs: Optional[float] = None
  session_config: Any = None
  keep_checkpoint_max: Optional[int] = 5
  keep_checkpoint_every_n_hours: Optional[float] = 10000
  log_step_count_steps: Optional[int] = 100
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
    save_checkpoints_steps, save_checkpoints_secs = _checkpoint_schedule(
        save_checkpoints_steps, save_checkpoints_secs)
    _check_not_tf2_parameter_server(train_distribute, eval_distribute)
    if experimental_distribute is not None:
      (train_distribute, eval_distribute,
       remote_cluster) = self._from_distribute_config(
           experimental_distribute, train_distribute, eval_distribute,
           remote_cluster)
    user_strategy = _has_a_strategy(train_distribute, eval_distribute,
                                    experimental_distribute)
    tf_config = {}
    if task_info is _FROM_ENVIRONMENT:
      tf_config = _read_tf_config()
      if tf_config:
        logging.info('TF_CONFIG environment variable: %s',
                     shorten(tf_config, limit=400))
    model_dir = _get_model_dir(tf_config, path_to_str(model_dir))
    values = dict(
        model_dir=model_dir, tf_random_seed=tf_random_seed,
        save_summary_steps=save_summary_steps,
        save_checkpoints_steps=save_checkpoints_steps,
        save_checkpoints_secs=save_checkpoints_secs,
        session_config=session_config,
        keep_checkpoint_max=keep_checkpoint_max,
        keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
        log_step_count_steps=log_step_count_steps,
        train_distribute=strategies.from_v1(train_distribute),
        device_fn=device_fn, protocol=protocol,
        eval_distribute=strategies.from_v1(eval_distribute),
        experimental_distribute=experimental_distribute,
        experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
        session_creation_timeout_secs=session_creation_timeout_secs,
        checkpoint_save_graph_def=checkpoint_save_graph_def,
        steps_per_loop=steps_per_loop, auto_shard_policy=auto_shard_policy,
        remote_cluster=remote_cluster,
        remote_connect_timeout_secs=remote_connect_timeout_secs,
        checkpoint_input=checkpoint_input, jit_compile=jit_compile,
        engine=engine)
    for name, value in values.items():
      _set_field(self, name, value)
    self._validate()
    self._init_cluster(tf_config, task_info, user_strategy=user_strategy)
    _warn_about_unused(self)

  @staticmethod
  def _from_distribute_config(distribute_config, train_distribute,
                              eval_distribute, remote_cluster):
    """train_distribute, eval_distribute and remote_cluster, with those of
    an experimental_distribute DistributeConfig (2.15: giving one in both
    places is an error)."""
    train = getattr(distribute_config, 'train_distribute', None)
    evaluate = getattr(distribute_config, 'eval_distribute', None)
    remote = getattr(distribute_config, 'remote_cluster', None)
    if train is not None:
      if train_distribute is not None:
        raise UserInputError(
            'Either `train_distribute` or`experimental_distribute.'
            'train_distribute` can be set (RunConfig got both).')
      train_distribute = train
    if evaluate is not None:
      if eval_distribute is not None:
        raise UserInputError(
            'Either `eval_distribute` or`experimental_distribute.'
            'eval_distribute` can be set (RunConfig got both).')
      eval_distribute = evaluate
    _check_not_tf2_parameter_server(train_distribute, eval_distribute)
    if remote is not None and train_distribute is not None:
      if remote_cluster is not None:
        raise UserInputError(
            'RunConfig: remote_cluster and experimental_distribute.'
            'remote_cluster are both set; give one.')
      if isinstance(remote, tf.train.ClusterSpec):
        remote = remote.as_dict()
      remote_cluster = remote
    return train_distribute, eval_distribute, remote_cluster

  # --------------------------------------------------------------- cluster
  def _init_cluster(self, tf_config: dict, task_info, *,
                    user_strategy: bool) -> None:
    """The cluster: 2.15's properties, the runtime's TaskInfo (or why the
    runtime cannot run it), and 2.15's distribute coordinator mode."""
    task_error = None
    if task_info is _FROM_ENVIRONMENT:
      # 2.15: a strategy took TF_CONFIG's cluster unchecked (its distribute
      # coordinator did), a master cluster and local training excepted.
      spec = _cluster_spec_of(tf_config.get(_CLUSTER_KEY))
      validate = not (user_strategy and spec.jobs and
                      TaskType.MASTER not in spec.jobs)
      settings = settings_from_tf_config(tf_config, validate=validate)
      task_info = None
      try:
        task_info = cluster.parse_tf_config(
            json.dumps(tf_config) if tf_config else None)
      except cluster.ClusterConfigError as e:
        task_error = e
    else:
      settings = None
    if self.remote_cluster is not None:
      if task_error is not None or (task_info is not None and
                                    not task_info.standalone_client):
        raise UserInputError(
            'Cannot set both "cluster_spec" of TF_CONFIG and `experimental_'
            'distribute.remote_cluster` (RunConfig: remote_cluster is set '
            'and TF_CONFIG or task_info describes a cluster; a standalone '
            'client is not part of a cluster). Unset TF_CONFIG or drop '
            'remote_cluster.')
      if task_info is None:
        try:
          task_info = cluster.client_task(self.remote_cluster)
        except cluster.ClusterConfigError as e:
          # 2.15 took a remote cluster unchecked: refused when used.
          task_error = e
      if task_info is not None:
        settings = _settings_of_task(task_info)
      else:
        settings = dataclasses.replace(
            _local_settings({}, None),
            cluster_spec=_lenient_cluster_spec(self.remote_cluster))
    if task_info is not None and not isinstance(task_info, cluster.TaskInfo):
      raise UserInputError(
          f'RunConfig: task_info={shorten(task_info)} must be a '
          'cluster.TaskInfo or None.')
    if settings is None:
      settings = (_local_settings({}, None) if task_info is None else
                  _settings_of_task(task_info))
    object.__setattr__(self, '_task', task_info)
    object.__setattr__(self, '_task_error', task_error)
    object.__setattr__(self, '_distributed', settings)
    # tf.estimator 2.15 trained between-graph with the variables on the ps
    # tasks whenever TF_CONFIG had some and no strategy was given; its
    # train_distribute stayed None (see `training_strategy`).
    object.__setattr__(
        self, '_strategy_of_cluster',
        cluster.PARAMETER_SERVER if (
            task_info is not None and task_info.num_ps and
            not task_info.standalone_client) else None)
    if user_strategy:
      self._init_distribute_coordinator_mode(tf_config)
    elif not (task_info is not None and task_info.standalone_client):
      self._maybe_overwrite_session_config_for_distributed_training()

  def _maybe_overwrite_session_config_for_distributed_training(self) -> None:
    """2.15's default session config of a between-graph cluster task (one
    with TF_CONFIG's cluster and no session_config): device filters that
    let it see the ps tasks and itself. tf.estimator's subclasses override
    it (tpu.RunConfig, whose TPU programs are in-graph, keeps None)."""
    if self.session_config is None and self.cluster_spec.jobs:
      _set_field(self, 'session_config',
                 _default_session_config_distributed(self.task_type,
                                                     self.task_id))

  def _init_distribute_coordinator_mode(self, tf_config: dict) -> None:
    """2.15's `_distribute_coordinator_mode`: STANDALONE_CLIENT for a
    remote cluster, INDEPENDENT_WORKER for a TF_CONFIG cluster with a
    training strategy, else None. Only this attribute is kept of 2.15's
    distribute coordinator: the runtime's roles (roles.py) do its work."""
    from tensorflow.python.distribute import distribute_coordinator as dc  # pylint: disable=g-import-not-at-top
    spec = _cluster_spec_of(tf_config.get(_CLUSTER_KEY))
    if self.train_distribute is not None and self.remote_cluster is not None:
      mode = dc.CoordinatorMode.STANDALONE_CLIENT
    elif (not spec.jobs or TaskType.MASTER in spec.jobs or
          self.train_distribute is None):
      mode = None
    else:
      mode = dc.CoordinatorMode.INDEPENDENT_WORKER
    object.__setattr__(self, '_distribute_coordinator_mode', mode)

  @property
  def task_info(self) -> Optional[cluster.TaskInfo]:
    """This process's place in the cluster, as the runtime runs it (None:
    local).

    Raises:
      ClusterConfigError: TF_CONFIG describes a cluster that 2.15's rules
        accept and the runtime's refuse (tf_config.py), in one line.
    """
    if self._task_error is not None:
      raise self._task_error
    return self._task

  def _validate(self):
    """tf.estimator 2.15's checks of its fields, with its messages first,
    then the project's own (`_validate_own`).

    Raises:
      UserInputError (UserTypeError, a TypeError, where 2.15's comparison
        raised TypeError): a value is invalid, named with it.
    """
    _check_model_dir(self.model_dir)
    # Any int, as 2.15 took it: TensorFlow reduces a graph seed modulo
    # 2**31 - 1 (random_seed.get_seed), so 2**70 or -2**63 - 1 seeds a run
    # (2.15 trained with them).
    if self.tf_random_seed is not None and (
        isinstance(self.tf_random_seed, bool) or
        not isinstance(self.tf_random_seed, int)):
      raise UserInputError(
          f'tf_random_seed must be integer (RunConfig: tf_random_seed='
          f'{shorten(self.tf_random_seed)} must be an integer or None).')
    _check_positive_int('save_summary_steps',
                        as_count(self.save_summary_steps), allow_zero=True,
                        phrase='save_summary_steps should be >= 0')
    _check_positive_int('save_checkpoints_steps',
                        as_count(self.save_checkpoints_steps),
                        allow_zero=True,
                        phrase='save_checkpoints_steps should be >= 0')
    _check_seconds('save_checkpoints_secs', self.save_checkpoints_secs,
                   allow_none=True, allow_zero=True,
                   phrase='save_checkpoints_secs should be >= 0')
    if (self.session_config is not None and
        not isinstance(self.session_config, tf.compat.v1.ConfigProto)):
      raise UserInputError(
          'session_config must be instance of ConfigProto (RunConfig: '
          f'session_config={shorten(self.session_config)}; give a '
          'tf.compat.v1.ConfigProto or None).')
    # A float is refused here; 2.15 took it and failed when its Saver was
    # made, at the start of training.
    _check_positive_int('keep_checkpoint_max',
                        _whole(self.keep_checkpoint_max), allow_zero=True,
                        phrase='keep_checkpoint_max should be >= 0')
    _check_seconds('keep_checkpoint_every_n_hours',
                   self.keep_checkpoint_every_n_hours, allow_none=True,
                   phrase='keep_checkpoint_every_n_hours should be > 0')
    # 2.15 wanted > 0; 0 turns the log line off here (the binary's flag
    # cannot be None).
    _check_positive_int('log_step_count_steps',
                        as_count(self.log_step_count_steps),
                        allow_zero=True, compared='>',
                        phrase='log_step_count_steps should be > 0')
    if (self.experimental_max_worker_delay_secs is not None and
        (isinstance(self.experimental_max_worker_delay_secs, bool) or
         not isinstance(self.experimental_max_worker_delay_secs, int))):
      raise UserInputError(
          'experimental_max_worker_delay_secs must be an integer if set '
          '(RunConfig: experimental_max_worker_delay_secs='
          f'{shorten(self.experimental_max_worker_delay_secs)}).')
    _check_seconds('session_creation_timeout_secs',
                   self.session_creation_timeout_secs, allow_none=True,
                   phrase='session_creation_timeout_secs should be > 0')
    if self.device_fn is not None and _device_fn_problem(self.device_fn):
      raise UserInputError(
          'device_fn must be callable with exactly one argument "op". '
          f'(RunConfig: device_fn={shorten(self.device_fn)}).')
    if self.protocol not in (None, 'grpc', 'grpc+verbs'):
      raise UserInputError(
          'protocol should be grpc or grpc+verbs (RunConfig: protocol='
          f'{shorten(self.protocol)}).')
    self._validate_own()

  def _validate_own(self):
    """The checks of this project's own fields (and of the strategies)."""
    _check_positive_int('steps_per_loop', self.steps_per_loop,
                        allow_none=False, maximum=MAX_INT32)
    for name in ('train_distribute', 'eval_distribute'):
      value = getattr(self, name)
      if not (value is None or isinstance(value, str) or
              isinstance(value, tf.distribute.Strategy)):
        raise UserInputError(
            f'RunConfig: {name}={shorten(value)} must be a '
            'tf.distribute.Strategy, a strategy name or None.')
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
  def training_strategy(self) -> Union[None, str, tf.distribute.Strategy]:
    """The strategy the runtime trains with: `train_distribute`, else
    'parameter_server' in a TF_CONFIG cluster with ps tasks (as 2.15
    trained there), else None (the default strategy)."""
    if self.train_distribute is not None:
      return self.train_distribute
    return getattr(self, '_strategy_of_cluster', None)

  @property
  def role(self) -> roles.Role:
    """This process's role (see roles.py), from its task and strategy.

    Raises:
      ClusterConfigError: see `task_info`.
    """
    return roles.decide(self.task_info,
                        strategies.name_of(self.training_strategy))

  @property
  def checkpoint_every_secs(self) -> Optional[float]:
    """Seconds between checkpoints (None: by steps, or only at the end)."""
    return self.save_checkpoints_secs or None

  def replace(self, **kwargs) -> 'RunConfig':
    """A copy with `kwargs` applied and validated (tf.estimator 2.15's
    rules).

    The properties 2.15 allowed to replace, and this project's own
    keyword-only fields, may be replaced. Setting one of
    `save_checkpoints_steps` and `save_checkpoints_secs` to a value sets
    the other to None; setting both to values is an error.

    Raises:
      UserInputError (a ValueError): a property that cannot be replaced,
        or an invalid value.
    """
    allowed = _DEFAULT_REPLACEABLE_LIST + _OWN_REPLACEABLE
    for key in kwargs:
      if key not in allowed:
        raise UserInputError(
            f'Replacing {key} is not supported. Allowed properties are '
            f'{allowed}.')
    new = copy.copy(self)
    changes = dict(kwargs)
    if 'model_dir' in changes:
      changes['model_dir'] = path_to_str(changes['model_dir'])
    if 'train_distribute' in changes or 'eval_distribute' in changes:
      _check_not_tf2_parameter_server(changes.get('train_distribute'),
                                      changes.get('eval_distribute'))
      for key in ('train_distribute', 'eval_distribute'):
        if key in changes:
          changes[key] = strategies.from_v1(changes[key])
    task_info = changes.pop('task_info', _FROM_ENVIRONMENT)
    for key, value in changes.items():
      _set_field(new, key, value)
    _validate_save_ckpt_with_replaced_keys(new, kwargs)
    new._validate()  # pylint: disable=protected-access
    if task_info is not _FROM_ENVIRONMENT or 'remote_cluster' in kwargs:
      if task_info is _FROM_ENVIRONMENT:
        task_info = None if 'remote_cluster' in kwargs else self._task
      _set_field(new, 'remote_cluster', new.remote_cluster)
      new._init_cluster({}, task_info, user_strategy=False)  # pylint: disable=protected-access
    return new

  # tf.estimator 2.15's properties, from TF_CONFIG (or task_info).
  @property
  def cluster_spec(self) -> tf.train.ClusterSpec:
    return self._distributed.cluster_spec

  @property
  def task_type(self) -> Optional[str]:
    return self._distributed.task_type

  @property
  def task_id(self) -> int:
    return self._distributed.task_id

  @property
  def master(self) -> str:
    return self._distributed.master

  @property
  def evaluation_master(self) -> str:
    return self._distributed.evaluation_master

  @property
  def is_chief(self) -> bool:
    """Whether this process writes model_dir: local, the chief (or
    master), or worker 0 of a cluster without either."""
    return self._distributed.is_chief

  @property
  def num_ps_replicas(self) -> int:
    return self._distributed.num_ps_replicas

  @property
  def num_worker_replicas(self) -> int:
    return self._distributed.num_worker_replicas

  @property
  def global_id_in_cluster(self) -> Optional[int]:
    """The task's number in the training cluster: the chief first, then the
    other jobs alphabetically, the ps tasks last (None: the evaluator), as
    tf.estimator numbered them."""
    return self._distributed.global_id_in_cluster

  @property
  def service(self) -> Optional[dict]:
    """TF_CONFIG's `service` dict, or None."""
    return self._distributed.service


_FIELD_NAMES = frozenset(field.name for field in dataclasses.fields(RunConfig))


def _run_config_setattr(self, name: str, value) -> None:
  """RunConfig's fields stay frozen (use `replace`), as 2.15's properties
  had no setters; other attributes may be set, as on 2.15's RunConfig
  (programs and tests tag a config, `config.i_am_test = True`), and 2.15's
  private storage of a field (`_session_config`) sets that field.

  Raises:
    dataclasses.FrozenInstanceError (an AttributeError): `name` is a field.
  """
  if name in _FIELD_NAMES:
    raise dataclasses.FrozenInstanceError(
        f'cannot assign to field {name!r}: RunConfig is immutable; use '
        f'config.replace({name}=...).')
  if name.startswith('_') and name[1:] in _FIELD_NAMES:
    _set_field(self, name[1:], value)
  else:
    object.__setattr__(self, name, value)


# A frozen dataclass may not define __setattr__ in its body.
RunConfig.__setattr__ = _run_config_setattr
