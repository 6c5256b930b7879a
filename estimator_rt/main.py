"""The estimator_rt binary: `python -m estimator_rt.main --model_fn=... ...`.

Runs train, evaluate, train_and_evaluate, predict or export for a model_fn
and input_fns named as `module:attr` (or `path/to/file.py:attr`). With no
flags at all it trains the MLP classifier on the handwritten digits that
ship in input_fns/data/ into a fresh model_dir, evaluates it, exports it and
prints the final metrics and the export path.

Exit codes: 0 success; 2 bad input (flags, TF_CONFIG, model_fn or input_fn
results, an incompatible model_dir), reported as one line on stderr with
nothing written to model_dir; 143 preempted (SIGTERM/SIGINT: a checkpoint
was saved at the end of the loop in flight, or nothing was being trained),
resumable by running the same command again; 1 anything else (e.g. a
diverged loss, a failed save).
"""

import functools
import json
import math
import os
import sys
from typing import Optional

# TensorFlow's C++ INFO lines (CPU feature notes, device placement) drown
# the training log; users who want them set the variable themselves.
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')

from absl import flags  # pylint: disable=g-import-not-at-top
from absl import logging

from estimator_rt.core import cli  # pylint: disable=g-import-not-at-top

MODES = ('train', 'evaluate', 'train_and_evaluate', 'predict', 'export')
STRATEGIES = ('default', 'one_device', 'mirrored', 'central_storage',
              'multi_worker_mirrored', 'parameter_server')
EXPORTERS = ('latest', 'best', 'final')

DEFAULT_MODEL_FN = 'model_fns.mlp:model_fn'
DEFAULT_INPUT_FN = 'input_fns.digits:train_input_fn'
DEFAULT_EVAL_INPUT_FN = 'input_fns.digits:eval_input_fn'
# The default job's global batch size (the digits input_fns require one).
DEFAULT_JOB_PARAMS = {'batch_size': 128}

FLAGS = flags.FLAGS
flags.DEFINE_string('model_fn', DEFAULT_MODEL_FN,
                    'The model_fn, as module.path:attr or file.py:attr; or '
                    'an estimator factory fn(config, params) returning an '
                    'Estimator, such as a canned DNNClassifier (see '
                    'model_fns/canned.py).')
flags.DEFINE_string('input_fn', DEFAULT_INPUT_FN,
                    'The training (or predict/export) input_fn.')
flags.DEFINE_string('eval_input_fn', None,
                    'The evaluation input_fn (default: the digits eval split '
                    'when --input_fn is the default, else --input_fn).')
flags.DEFINE_string('params', None,
                    'JSON dict of params, or @path/to/params.json. Merged '
                    "over the model_fn module's DEFAULT_PARAMS, if any "
                    '(and batch_size=128 for the default digits input).')
flags.DEFINE_string('model_dir', None,
                    'Where checkpoints, summaries and exports go (default: a '
                    'fresh temporary directory).')
flags.DEFINE_enum('mode', 'train_and_evaluate', MODES, 'What to run.')
flags.DEFINE_integer('max_steps', 1000, 'Train up to this global step.',
                     lower_bound=1)
flags.DEFINE_integer('eval_steps', None,
                     'Batches per evaluation (default: until the eval input '
                     'ends).', lower_bound=1)
flags.DEFINE_integer('save_checkpoints_steps', None,
                     'Save a checkpoint every this many steps.', lower_bound=1)
flags.DEFINE_float('save_checkpoints_secs', None,
                   'Save a checkpoint every this many seconds (default 600 '
                   'when neither this nor --save_checkpoints_steps is set).')
flags.DEFINE_integer('keep_checkpoint_max', 5,
                     'Checkpoints to keep (0 keeps all).', lower_bound=0)
flags.DEFINE_integer('save_summary_steps', 100,
                     'Write training scalars every this many steps.',
                     lower_bound=0)
flags.DEFINE_integer('log_step_count_steps', 100,
                     'Log progress every this many steps.', lower_bound=0)
flags.DEFINE_float('throttle_secs', 600,
                   'train_and_evaluate: at most one evaluation per this many '
                   'seconds.', lower_bound=0)
flags.DEFINE_integer('steps_per_loop', 100,
                     'Training steps per compiled call.', lower_bound=1)
# The bounds NumPy's seed takes (keras.utils.set_random_seed seeds it too).
flags.DEFINE_integer('tf_random_seed', None, 'Seed for reproducible runs.',
                     lower_bound=0, upper_bound=2**32 - 1)
flags.DEFINE_enum('distribution_strategy', 'default', STRATEGIES,
                  'The distribution strategy.')
flags.DEFINE_integer('num_gpus', None,
                     'GPUs to use (default: all; 0 forces the CPU).',
                     lower_bound=0)
# More replicas than this on one CPU only divide the same cores further; a
# huge value made MirroredStrategy spin for minutes before failing.
MAX_CPU_DEVICES = 256
flags.DEFINE_integer('num_cpu_devices', None,
                     'Split the CPU into this many logical devices, so '
                     'mirrored strategies get several replicas without a '
                     f'GPU (at most {MAX_CPU_DEVICES}).', lower_bound=1,
                     upper_bound=MAX_CPU_DEVICES)
flags.DEFINE_integer('intra_op_threads', None,
                     "Threads of TensorFlow's intra-op pool (one op's work "
                     "split up; default: TensorFlow's choice). 1 speeds up "
                     "small models with Adam on CPU (TensorFlow 2.16+'s "
                     'kernel splits even small variables).', lower_bound=1)
flags.DEFINE_integer('inter_op_threads', None,
                     "Threads of TensorFlow's inter-op pool (ops run side by "
                     "side; default: TensorFlow's choice).", lower_bound=1)
flags.DEFINE_enum('auto_shard_policy', 'AUTO', ('AUTO', 'FILE', 'DATA', 'OFF'),
                  'How a globally batched dataset is sharded across workers.')
flags.DEFINE_bool('checkpoint_input', False,
                  'Save the training input iterator in every checkpoint and '
                  'resume it exactly (local, one_device, mirrored, '
                  'multi_worker_mirrored; with a strategy every worker reads '
                  'the global batches); checkpoints then hold its buffers '
                  'too.')
flags.DEFINE_bool('deterministic_ops', False,
                  'Turn on TensorFlow op determinism '
                  '(tf.config.experimental.enable_op_determinism): with '
                  '--tf_random_seed, the same run gives the same weights. '
                  'Some ops get slower; ops without a deterministic kernel '
                  'raise.')
flags.DEFINE_bool('jit_compile', False,
                  'Compile each training step with XLA.')
flags.DEFINE_enum('engine', 'auto', ['auto', 'eager', 'graph'],
                  'Which engine runs the model_fn. auto (no need to choose): '
                  'TF1-style model_fns (tf.compat.v1 optimizers, metrics, '
                  'placeholders, Scaffold, SessionRunHooks) run in a '
                  'tf.Graph as tf.estimator ran them, TF2 ones compiled; '
                  'see estimator_rt/training/engine_choice.py.')
flags.DEFINE_list('exporters', ['final'],
                  f'Exporters for train_and_evaluate, any of {EXPORTERS}.')
flags.DEFINE_string('export_dir', None,
                    '--mode=export: the export base directory (default '
                    'model_dir/export/saved_model).')
flags.DEFINE_bool('check_config', False,
                  'Validate TF_CONFIG and the flags, print the role this '
                  'process would take and what it would do, and exit 0 '
                  'without starting anything.')
flags.DEFINE_string('remote_cluster', None,
                    'Standalone-client mode: JSON (or @file) mapping "worker" '
                    'and "ps" (and optionally "evaluator", to evaluate on) to '
                    'the addresses of servers started with `python -m '
                    'estimator_rt.run_server`; this process drives them. Not '
                    'with a TF_CONFIG cluster.')
flags.DEFINE_float('remote_connect_timeout_secs', 60,
                   'How long a standalone client waits for every server to '
                   'accept connections before failing.', lower_bound=0.1)
flags.DEFINE_string(
    'bind_host', None,
    "A cluster task's server (chief, worker, ps) listens on the host TF_CONFIG "
    'gives it and nothing wider. This names another address of this machine '
    'instead (when TF_CONFIG names a service or NAT address), or 0.0.0.0 for '
    'every interface.')
flags.DEFINE_string('checkpoint_path', None,
                    'evaluate/predict/export: the checkpoint to use (default '
                    'the latest in model_dir).')


def _check_flags() -> None:
  """Checks what absl's bounds do not: the upper bounds of counts and that
  durations are finite, naming the flag. Runs before anything starts.

  Raises:
    UserInputError: naming the flag, its value and the bound.
  """
  from estimator_rt.core import errors  # pylint: disable=g-import-not-at-top
  for name, maximum in (('max_steps', errors.MAX_COUNT),
                        ('eval_steps', errors.MAX_INT32),
                        ('steps_per_loop', errors.MAX_INT32),
                        ('save_checkpoints_steps', errors.MAX_COUNT),
                        ('keep_checkpoint_max', errors.MAX_COUNT),
                        ('save_summary_steps', errors.MAX_COUNT),
                        ('log_step_count_steps', errors.MAX_COUNT)):
    # absl already enforced the lower bounds and the integer type.
    errors.check_count(f'--{name}', FLAGS[name].value, allow_zero=True,
                       maximum=maximum)
  for name in ('save_checkpoints_secs', 'throttle_secs',
               'remote_connect_timeout_secs'):
    value = FLAGS[name].value
    if value is not None and not math.isfinite(value):
      raise errors.UserInputError(
          f'--{name}={value} must be a finite number of seconds.')
  _check_bind_host()
  # Read now, before TensorFlow is imported: a typo in --params is refused
  # in a fraction of a second instead of after seconds of imports.
  _parsed_params()


def _parsed_params() -> Optional[dict]:
  """--params as a dict (None when not given), read once.

  Raises:
    UserInputError: it is not JSON (or @file of JSON), or not an object.
  """
  from estimator_rt.core.errors import UserInputError  # pylint: disable=g-import-not-at-top
  spec = FLAGS.params
  if spec is None:
    return None
  if _PARSED_PARAMS.get('spec') != spec:
    parsed = cli.load_json_flag(spec, flag='params')
    if not isinstance(parsed, dict):
      raise UserInputError(
          f'--params must be a JSON object (a dict of params), got '
          f'{type(parsed).__name__}.')
    _PARSED_PARAMS.update(spec=spec, value=parsed)
  return dict(_PARSED_PARAMS['value'])


# --params as last read by _parsed_params: {'spec': flag value, 'value': dict}.
_PARSED_PARAMS = {}


def _check_bind_host() -> None:
  """--bind_host is a wildcard, a host name or an IP address (IPv6 with or
  without brackets)."""
  from estimator_rt.cluster import bind_guard  # pylint: disable=g-import-not-at-top
  from estimator_rt.cluster import tf_config as cluster  # pylint: disable=g-import-not-at-top
  from estimator_rt.core import errors  # pylint: disable=g-import-not-at-top
  host = FLAGS.bind_host
  if host is None or host.strip() in bind_guard.WILDCARD_HOSTS:
    return
  bare = host.strip('[] ')
  problem = cluster.host_problem(f'[{bare}]' if ':' in bare else bare)
  if problem:
    raise errors.UserInputError(
        f'--bind_host={errors.shorten(host)} is not a valid host: '
        f'{problem}. Give an address of this machine, or 0.0.0.0.')


def _load_params(model_fn) -> dict:
  """The model_fn module's DEFAULT_PARAMS, updated with --params."""
  module = sys.modules.get(getattr(model_fn, '__module__', ''), None)
  params = dict(getattr(module, 'DEFAULT_PARAMS', {}) or {})
  params.update(_parsed_params() or {})
  return params


def _exporters(names, ert):
  from estimator_rt.core.errors import UserInputError  # pylint: disable=g-import-not-at-top
  made = []
  for name in names:
    if name == 'latest':
      made.append(ert.LatestExporter())
    elif name == 'best':
      # Under export/best, as the flag names it (the class's default
      # directory is tf.estimator's, 'best_exporter').
      made.append(ert.BestExporter('best'))
    elif name == 'final':
      made.append(ert.FinalExporter())
    else:
      raise UserInputError(
          f'--exporters: {name!r} is not one of {EXPORTERS}.')
  return made


def _jsonable(value):
  import numpy as np  # pylint: disable=g-import-not-at-top
  if isinstance(value, dict):
    return {k: _jsonable(v) for k, v in value.items()}
  array = np.asarray(value)
  if array.dtype.kind in 'SO':
    return (array.astype(str).tolist())
  return array.tolist()


def _starts_a_server(task) -> bool:
  """Every cluster task starts a TensorFlow server but an evaluator and the
  task of a one-node cluster (as in tf.estimator 2.15); so does a
  standalone client (as the chief)."""
  from estimator_rt.cluster import tf_config as cluster  # pylint: disable=g-import-not-at-top
  return (task is not None and task.task_type != cluster.EVALUATOR and
          bool(task.address) and not task.single_node)


def _listen_description(task) -> Optional[str]:
  """Where this task's server would listen, for --check_config."""
  from estimator_rt.cluster import bind_guard  # pylint: disable=g-import-not-at-top
  from estimator_rt.cluster import tf_config as cluster  # pylint: disable=g-import-not-at-top
  if not _starts_a_server(task):
    return None
  port = cluster.split_host_port(task.address)[1]
  address = bind_guard.listen_address(
      task.address, FLAGS.bind_host,
      task_name=f'{task.task_type}:{task.task_index}')
  if address is None:
    return f'every interface, port {port}'
  return f'{cluster.join_host_port(address, port)} only'


def _keep_server_to_its_address(task) -> None:
  """Relaunches under the bind guard when this task starts a server."""
  from estimator_rt.cluster import bind_guard  # pylint: disable=g-import-not-at-top
  if not _starts_a_server(task):
    return
  address = bind_guard.guard_this_process(
      task.address, FLAGS.bind_host,
      task_name=f'{task.task_type}:{task.task_index}',
      module='estimator_rt.main')
  if address is None:
    logging.warning('--bind_host=%s: %s:%d listens on every interface.',
                    FLAGS.bind_host, task.task_type, task.task_index)


def _resolve_task():
  """(task, remote_cluster) from TF_CONFIG or --remote_cluster, checked
  against the strategy flag and --mode; task is None when local.

  Raises:
    UserInputError: naming the flag or field that is wrong.
  """
  from estimator_rt.cluster import tf_config as cluster  # pylint: disable=g-import-not-at-top
  from estimator_rt.core.errors import UserInputError  # pylint: disable=g-import-not-at-top
  task = cluster.parse_tf_config(os.environ.get('TF_CONFIG'))
  strategy_name = FLAGS.distribution_strategy
  remote_cluster = None
  if FLAGS.remote_cluster is not None:
    remote_cluster = cli.load_json_flag(FLAGS.remote_cluster,
                                        flag='remote_cluster')
    if task is not None:
      raise UserInputError(
          '--remote_cluster is set and TF_CONFIG describes a cluster too; a '
          'standalone client is not part of a cluster. Unset TF_CONFIG.')
    if strategy_name not in (cluster.PARAMETER_SERVER, 'mirrored'):
      raise UserInputError(
          f'--remote_cluster with --distribution_strategy={strategy_name!r}: '
          "use 'parameter_server' (asynchronous) or 'mirrored' (synchronous, "
          'replicated in-graph over the remote workers).')
    task = cluster.client_task(remote_cluster)
  if task is not None:
    cluster.check_strategy(task, strategy_name)
    if FLAGS.mode != 'train_and_evaluate' and not task.standalone_client:
      raise UserInputError(
          f'--mode={FLAGS.mode}: with a TF_CONFIG cluster every task runs '
          '--mode=train_and_evaluate (unset TF_CONFIG to run this mode '
          'locally).')
  elif strategy_name == cluster.PARAMETER_SERVER:
    raise UserInputError(
        '--distribution_strategy=parameter_server needs a TF_CONFIG cluster '
        'with chief, worker and ps tasks; TF_CONFIG is not set.')
  if task is not None and not task.standalone_client and not FLAGS.model_dir:
    raise UserInputError(
        '--model_dir is required with a TF_CONFIG cluster: every task must '
        'name the same (shared) model_dir.')
  return task, remote_cluster


def _print_check_config(role) -> None:
  """What --check_config prints: the task, the strategy and the role."""
  task = role.task
  if task:
    where = task.describe()
  elif os.environ.get('TF_CONFIG', '').strip():
    where = 'no cluster to join (local)'
  else:
    where = 'not set (local)'
  print(f'TF_CONFIG: {where}')
  print(f'strategy: {role.strategy_name}')
  print(f'role: {role.describe()}')
  listens = _listen_description(task)
  if listens:
    print(f'listens on: {listens}')


def _prepare_process(role):
  """Sets this process up before user code is imported; returns the
  strategy for RunConfig (an object, or a name the Estimator resolves).

  It may relaunch the process under the bind guard (before TensorFlow is
  imported), sizes TensorFlow's thread pools, splits the CPU into logical
  devices, turns on op determinism, and creates a multi_worker_mirrored
  strategy before any op runs.
  """
  _keep_server_to_its_address(role.task)
  from estimator_rt.cluster import session_threads  # pylint: disable=g-import-not-at-top
  from estimator_rt.cluster import strategies  # pylint: disable=g-import-not-at-top
  # Before any op runs (the strategy, the user's modules): TensorFlow fixes
  # its pools when its runtime starts.
  session_threads.size_pools(
      {'intra_op_parallelism_threads': FLAGS.intra_op_threads,
       'inter_op_parallelism_threads': FLAGS.inter_op_threads},
      asked_by='--intra_op_threads/--inter_op_threads')
  if FLAGS.num_cpu_devices:
    strategies.configure_cpu_devices(FLAGS.num_cpu_devices)
  if FLAGS.deterministic_ops:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.experimental.enable_op_determinism()
  name = role.strategy_name
  if role.creates_strategy_first:
    # Collective ops must be configured before any TensorFlow op runs, and
    # importing user modules may run some.
    return strategies.make_strategy(name, task=role.task)
  if name in strategies.MULTI_WORKER_STRATEGY_NAMES or (
      role.task is not None and role.task.standalone_client):
    # By name: only the tasks that train create it (an evaluator or a ps
    # must not join training), and a standalone client's Estimator sets up
    # the remote devices; the Estimator knows when.
    return name
  return strategies.make_strategy(name, num_gpus=FLAGS.num_gpus)


def _build_estimator(role, strategy, remote_cluster):
  """(estimator, input_fn, eval_input_fn) from the flags."""
  import estimator_rt as ert  # pylint: disable=g-import-not-at-top
  from estimator_rt.estimator import estimator_factory  # pylint: disable=g-import-not-at-top
  from estimator_rt.core import user_fns  # pylint: disable=g-import-not-at-top
  model_fn = user_fns.load_callable(FLAGS.model_fn, flag='model_fn')
  input_fn = user_fns.load_callable(FLAGS.input_fn, flag='input_fn')
  eval_spec = FLAGS.eval_input_fn
  if eval_spec is None:
    eval_spec = (DEFAULT_EVAL_INPUT_FN if FLAGS.input_fn == DEFAULT_INPUT_FN
                 else FLAGS.input_fn)
  eval_input_fn = user_fns.load_callable(eval_spec, flag='eval_input_fn')
  params = _load_params(model_fn)
  if FLAGS.input_fn == DEFAULT_INPUT_FN:
    params = {**DEFAULT_JOB_PARAMS, **params}
  model_dir = FLAGS.model_dir
  if model_dir is None:
    from estimator_rt.cluster.run_config import temporary_model_dir  # pylint: disable=g-import-not-at-top
    model_dir = temporary_model_dir()
    logging.info('Using fresh model_dir %s', model_dir)
  config = ert.RunConfig(
      model_dir=model_dir, tf_random_seed=FLAGS.tf_random_seed,
      save_summary_steps=FLAGS.save_summary_steps,
      save_checkpoints_steps=_or_default(FLAGS.save_checkpoints_steps),
      save_checkpoints_secs=_or_default(FLAGS.save_checkpoints_secs),
      keep_checkpoint_max=FLAGS.keep_checkpoint_max,
      log_step_count_steps=FLAGS.log_step_count_steps,
      steps_per_loop=FLAGS.steps_per_loop, train_distribute=strategy,
      auto_shard_policy=FLAGS.auto_shard_policy, task_info=role.task,
      remote_cluster=remote_cluster,
      remote_connect_timeout_secs=FLAGS.remote_connect_timeout_secs,
      checkpoint_input=FLAGS.checkpoint_input,
      jit_compile=FLAGS.jit_compile, engine=FLAGS.engine)
  if estimator_factory.is_estimator_factory(model_fn):
    # A canned estimator (or any Estimator) built by the user's factory,
    # with the config the flags and TF_CONFIG made.
    estimator = estimator_factory.call_estimator_factory(
        model_fn, config=config, params=params)
    # Its Estimator has params of its own (a canned one: none); the input_fns
    # still get the job's (--params: batch_size, ...).
    input_fn = _with_params(input_fn, params)
    eval_input_fn = _with_params(eval_input_fn, params)
  elif user_fns.takes_params(model_fn):
    estimator = ert.Estimator(model_fn, config=config, params=params)
  else:
    # An Estimator refuses params its model_fn does not take, as
    # tf.estimator's did; the input_fns still get the job's.
    estimator = ert.Estimator(model_fn, config=config)
    input_fn = _with_params(input_fn, params)
    eval_input_fn = _with_params(eval_input_fn, params)
  return estimator, input_fn, eval_input_fn


def _with_params(input_fn, params):
  """`input_fn` called with `params` whatever params its Estimator has; the
  same declared arguments (the runtime passes only those). One that takes
  no params is left as it is (numpy_input_fn's stays what the runtime
  recognizes)."""
  from estimator_rt.core import user_fns  # pylint: disable=g-import-not-at-top
  if not user_fns.declared_args(input_fn) & {'params', '*'}:
    return input_fn

  @functools.wraps(input_fn)
  def with_params(**kwargs):
    if 'params' in kwargs:
      kwargs['params'] = params
    return input_fn(**kwargs)

  return with_params


def _or_default(value):
  """An unset checkpoint flag leaves RunConfig's default (every 600 s)."""
  from estimator_rt.cluster import run_config  # pylint: disable=g-import-not-at-top
  return run_config.USE_DEFAULT if value is None else value


def _train(estimator, input_fn, eval_input_fn) -> None:
  del eval_input_fn
  estimator.train(input_fn, max_steps=FLAGS.max_steps)
  print(f'Trained to {estimator.latest_checkpoint()}')


def _evaluate(estimator, input_fn, eval_input_fn) -> None:
  del input_fn
  metrics = estimator.evaluate(eval_input_fn, steps=FLAGS.eval_steps,
                               checkpoint_path=FLAGS.checkpoint_path)
  print('Metrics: ' + json.dumps(_jsonable(metrics)))


def _train_and_evaluate(estimator, input_fn, eval_input_fn) -> None:
  import estimator_rt as ert  # pylint: disable=g-import-not-at-top
  metrics, exports = ert.train_and_evaluate(
      estimator, ert.TrainSpec(input_fn, max_steps=FLAGS.max_steps),
      ert.EvalSpec(eval_input_fn, steps=FLAGS.eval_steps,
                   throttle_secs=FLAGS.throttle_secs,
                   exporters=_exporters(FLAGS.exporters, ert)))
  if metrics is not None:
    print('Final metrics: ' + json.dumps(_jsonable(metrics)))
  print(f'model_dir: {estimator.model_dir}')
  for path in exports:
    print(f'Exported: {path}')


def _predict(estimator, input_fn, eval_input_fn) -> None:
  del eval_input_fn
  # Every prediction is printed: an input that repeats forever is refused.
  for prediction in estimator.predict(
      input_fn, checkpoint_path=FLAGS.checkpoint_path,
      refuse_endless_input=True):
    print(json.dumps(_jsonable(prediction)))


def _export(estimator, input_fn, eval_input_fn) -> None:
  del eval_input_fn
  base = FLAGS.export_dir or os.path.join(estimator.model_dir, 'export',
                                          'saved_model')
  path = estimator.export_saved_model(
      base, checkpoint_path=FLAGS.checkpoint_path, input_fn=input_fn)
  print(f'Exported: {path.decode()}')


# --mode -> what runs it, given (estimator, input_fn, eval_input_fn).
_MODES = {
    'train': _train,
    'evaluate': _evaluate,
    'train_and_evaluate': _train_and_evaluate,
    'predict': _predict,
    'export': _export,
}


def run(argv) -> int:
  """Runs the job the flags describe; returns the process exit code."""
  del argv
  # First, before TensorFlow starts any thread: SIGTERM/SIGINT go to one
  # watcher thread, which turns them into a save-and-exit-143 (preemption).
  from estimator_rt.cluster import preemption  # pylint: disable=g-import-not-at-top
  preemption.block_stop_signals()
  from estimator_rt.cluster import roles  # pylint: disable=g-import-not-at-top
  _check_flags()
  task, remote_cluster = _resolve_task()
  role = roles.decide(task, FLAGS.distribution_strategy)
  if FLAGS.check_config:
    _print_check_config(role)
    return 0
  strategy = _prepare_process(role)
  estimator, input_fn, eval_input_fn = _build_estimator(role, strategy,
                                                        remote_cluster)
  _MODES[FLAGS.mode](estimator, input_fn, eval_input_fn)
  return 0


def _main(argv) -> None:
  from estimator_rt.core.errors import PreemptedError  # pylint: disable=g-import-not-at-top
  from estimator_rt.core.errors import UserInputError  # pylint: disable=g-import-not-at-top
  try:
    code = run(argv)
  except UserInputError as e:
    cli.fail(str(e))
  except (Exception, PreemptedError) as e:  # pylint: disable=broad-except
    from estimator_rt.core import errors  # pylint: disable=g-import-not-at-top
    from estimator_rt.cluster import preemption  # pylint: disable=g-import-not-at-top
    from estimator_rt.estimator.train_and_evaluate import ChiefLostError  # pylint: disable=g-import-not-at-top
    if isinstance(e, errors.PreemptedError):
      # Already logged as one line. An orderly TensorFlow shutdown can take
      # longer than the grace period that is left.
      _leave(preemption.PREEMPTED_EXIT_CODE, at_once=True)
    if isinstance(e, (errors.NanLossError, errors.CheckpointSaveError,
                      errors.ExportWriteError,
                      errors.TaskLostError, ChiefLostError)):
      print(f'error: {e}', file=sys.stderr)
      _leave(1)
    raise
  _leave(code)


def _leave(code: int, *, at_once: bool = False) -> None:
  """Exits with `code`; with os._exit when `at_once`, or when a thread is
  still inside a TensorFlow RPC (see server.rpcs_in_flight): Python's own
  shutdown would abort the process then."""
  from estimator_rt.cluster import preemption  # pylint: disable=g-import-not-at-top
  server = sys.modules.get('estimator_rt.cluster.server')
  if at_once or (server is not None and server.rpcs_in_flight()):
    preemption.exit_at_once(code)
  sys.exit(code)


def main_entry():
  cli.run(_main)


if __name__ == '__main__':
  main_entry()
