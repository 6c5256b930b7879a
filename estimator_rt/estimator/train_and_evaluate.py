"""`train_and_evaluate`: train, evaluate each new checkpoint, export; and
the role each task of a TF_CONFIG cluster plays in it.

Its shape is tf.estimator 2.15's, names included (this module is also
`tensorflow_estimator.python.estimator.training` under the compatibility
layer): `train_and_evaluate` makes a `_TrainingExecutor`, whose `run()`
calls `run_<task type>()` (`run_local` without a cluster); local training
evaluates from a `CheckpointSaverListener` (`_NewCheckpointListenerForEvaluate`)
after new checkpoints, the evaluator task in a loop
(`_start_continuous_evaluation`), both through `_TrainingExecutor._Evaluator`
and a `_ContinuousEvalListener`. What each cluster task does (chief,
worker, ps: see roles.py) is estimator_rt's: the roles decided once from
the task and the strategy; a ps exits when the chief is done; workers of a
TF2 model_fn in parameter-server training serve the chief's coordinator.

Where estimator_rt differs from 2.15 on purpose (each is in
docs/differences.md): evaluation never at step 0 and always of the final
checkpoint, with a final export even when the input ended before
max_steps; an evaluator that looks for new checkpoints every
`_POLL_SECS` and does not hold the final one back for `throttle_secs`;
no worker start delays; `EvalSpec.start_delay_secs` defaults to 0; hooks
may also be estimator_rt hooks and saving listeners callables.

`train_and_evaluate` returns what 2.15's returned (locally, the final
evaluation's metrics and what each exporter returned then; None in a
cluster); `train_and_evaluate_all`, estimator_rt's own
`estimator_rt.train_and_evaluate`, runs the same executor and returns
(metrics, every export path) in every role.
"""

import collections
import contextlib
import json
import numbers
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf
from tensorflow.python.training import basic_session_run_hooks

from estimator_rt.core import checkpoints
from estimator_rt.core import tf_log
from estimator_rt.cluster import tf_config as cluster
from estimator_rt.training import engine_choice
from estimator_rt.estimator import evaluator as evaluator_lib
from estimator_rt.training import hooks as hooks_lib
from estimator_rt.cluster import preemption
from estimator_rt.cluster import roles
from estimator_rt.cluster import server as server_lib
from estimator_rt.estimator import stand_in_tasks
from estimator_rt.core.errors import as_count
from estimator_rt.core.errors import check_comparable
from estimator_rt.core.errors import check_positive_count
from estimator_rt.core.errors import MAX_INT32
from estimator_rt.core.errors import one_line
from estimator_rt.core.errors import PreemptedError
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import TaskLostError
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError
from estimator_rt.cluster.preemption import PREEMPTED_EXIT_CODE

# tf.estimator 2.15's constants. The runtime's workers are not delayed (see
# the module docstring); a stand-in estimator's are (stand_in_tasks.py).
_MAX_DELAY_SECS = stand_in_tasks.MAX_DELAY_SECS
_DELAY_SECS_PER_WORKER = stand_in_tasks.DELAY_SECS_PER_WORKER
_TF_CONFIG_ENV = 'TF_CONFIG'
_ENVIRONMENT_KEY = 'environment'
_ENVIRONMENT_GOOGLE_VALUE = 'google'
_TRAINER_JOBS = stand_in_tasks.TRAINER_JOBS
_GLOBAL_STEP = tf.compat.v1.GraphKeys.GLOBAL_STEP  # 'global_step'

# How often the evaluator task looks for a new checkpoint when it found
# none (tf.estimator waited throttle_secs).
_POLL_SECS = evaluator_lib.POLL_SECS


class ChiefLostError(RuntimeError):
  """A server task's chief vanished before it signalled the end of training."""


# ---------------------------------------------------------------------------
# The specs.


def _validate_input_fn(input_fn):
  if not callable(input_fn):
    raise UserTypeError(
        f'`input_fn` must be callable, given: {shorten(input_fn)}')


def _is_hook(hook) -> bool:
  """A SessionRunHook (2.15's only kind), or an estimator_rt hook: a Hook,
  an object with some of its methods, or a callable."""
  return (isinstance(hook, tf.compat.v1.train.SessionRunHook) or
          isinstance(hook, hooks_lib.Hook) or callable(hook) or
          any(hasattr(hook, m) for m in hooks_lib.HOOK_METHODS))


def _validate_hooks(hooks) -> tuple:
  hooks = tuple(hooks or [])
  for hook in hooks:
    if not _is_hook(hook):
      raise UserTypeError(
          'All hooks must be `SessionRunHook` instances, given: '
          f'{shorten(hook)} (or estimator_rt hooks: a Hook, an object with '
          f'some of {list(hooks_lib.HOOK_METHODS)}, or a callable).')
  return hooks


def _validate_saving_listeners(saving_listeners) -> tuple:
  saving_listeners = tuple(saving_listeners or [])
  for listener in saving_listeners:
    if not (isinstance(listener, tf.compat.v1.train.CheckpointSaverListener)
            or callable(listener)):
      raise UserTypeError(
          'All saving_listeners must be `CheckpointSaverListener` instances, '
          f'given: {shorten(listener)} (or a callable fn(checkpoint_path, '
          'global_step)).')
  return saving_listeners


def _is_exporter(exporter) -> bool:
  from estimator_rt.export import exporters as exporters_lib  # pylint: disable=g-import-not-at-top
  return isinstance(exporter, exporters_lib.Exporter)


def _validate_exporters(exporters) -> tuple:
  """`exporters` (an Exporter, an iterable of them, or None) as a tuple of
  Exporters with unique, non-empty string names."""
  if not exporters:
    return ()
  if _is_exporter(exporters):
    exporters = [exporters]
  try:
    exporters = list(exporters)
  except TypeError:
    exporters = None
  if exporters is None or not all(_is_exporter(e) for e in exporters):
    raise UserTypeError(
        '`exporters` must be an Exporter, an iterable of Exporter, or '
        f'`None`, found {shorten(exporters)}.')
  names = []
  for exporter in exporters:
    if not exporter.name:
      raise UserInputError(
          'An Exporter cannot have a name that is `None` or empty. All '
          f'exporter names: {[e.name for e in exporters]}')
    if not isinstance(exporter.name, str):
      raise UserInputError(
          f'An Exporter must have a string name. Given: '
          f'{type(exporter.name)}')
    if exporter.name in names:
      raise UserInputError(
          '`exporters` must have unique names. Such a name cannot be `None`. '
          f'All exporter names: {[e.name for e in exporters]}')
    names.append(exporter.name)
  return tuple(exporters)


def _check_secs(where: str, value, *, phrase: str):
  # Any real number, NumPy's too, as 2.15 took (it compared and slept);
  # what `value < 0` cannot compare (None too) is its TypeError.
  check_comparable(where, value, '<', expected='a number >= 0')
  if (isinstance(value, bool) or not isinstance(value, numbers.Real) or
      value != value or value < 0):
    raise UserInputError(f'{phrase}, given: {shorten(value)} ({where}).')


class TrainSpec(
    collections.namedtuple(
        'TrainSpec', ['input_fn', 'max_steps', 'hooks', 'saving_listeners'])):
  """What to train on and for how long (tf.estimator 2.15's TrainSpec).

  Attributes:
    input_fn: the training input_fn.
    max_steps: train up to this global step (None: until the input ends);
      a number > 0, as in 2.15: 421.875 trains to step 422.
    hooks: hooks for training: `tf.compat.v1.train.SessionRunHook`s, or
      estimator_rt hooks (see hooks.py).
    saving_listeners: run after each checkpoint save:
      `tf.compat.v1.train.CheckpointSaverListener`s, or callables
      `fn(checkpoint_path, global_step)`.
  """

  def __new__(cls, input_fn, max_steps=None, hooks=None,
              saving_listeners=None):
    _validate_input_fn(input_fn)
    # Kept as given, as 2.15 kept it; it counts as `as_count` makes it
    # (421.875 trains to step 422; training is final at a step >= it).
    check_positive_count('TrainSpec: max_steps', as_count(max_steps),
                         phrase='Must specify max_steps > 0')
    return super().__new__(
        cls, input_fn=input_fn, max_steps=max_steps,
        hooks=_validate_hooks(hooks),
        saving_listeners=_validate_saving_listeners(saving_listeners))


class EvalSpec(
    collections.namedtuple('EvalSpec', [
        'input_fn', 'steps', 'name', 'hooks', 'exporters', 'start_delay_secs',
        'throttle_secs'
    ])):
  """What to evaluate on, how often, and what to export (tf.estimator
  2.15's EvalSpec).

  Attributes:
    input_fn: the evaluation input_fn.
    steps: batches per evaluation (None: until the input ends); 2.5 runs
      3, as in 2.15.
    name: evaluation name; summaries go to model_dir/eval_<name>.
    hooks: hooks run during each evaluation.
    exporters: an Exporter, an iterable of them, or None; run after each
      evaluation.
    start_delay_secs: a separate evaluator task waits this long before its
      first evaluation (unused in local mode). Default 0: tf.estimator's 120
      only delayed the first result, since the evaluator waits for a
      checkpoint anyway.
    throttle_secs: evaluate a new checkpoint only if this many seconds
      passed since the last evaluation began. The final checkpoint is
      always evaluated, and never held back.
  """

  def __new__(cls, input_fn, steps=100, name=None, hooks=None,
              exporters=None, start_delay_secs=0, throttle_secs=600):
    _validate_input_fn(input_fn)
    # Kept as given (2.15's); evaluate runs `as_count(steps)` batches.
    check_positive_count('EvalSpec: steps', as_count(steps, cap=MAX_INT32),
                         phrase='Must specify steps > 0', maximum=MAX_INT32)
    if name is not None and not isinstance(name, str):
      # str(), as 2.15's message formatted it (`given: 3`).
      raise UserTypeError(f'`name` must be string, given: {name} '
                          f'(EvalSpec: name={shorten(name)}).')
    hooks = _validate_hooks(hooks)
    exporters = _validate_exporters(exporters)
    _check_secs('EvalSpec: start_delay_secs', start_delay_secs,
                phrase='Must specify start_delay_secs >= 0')
    _check_secs('EvalSpec: throttle_secs', throttle_secs,
                phrase='Must specify throttle_secs >= 0')
    return super().__new__(
        cls, input_fn=input_fn, steps=steps, name=name, hooks=hooks,
        exporters=exporters, start_delay_secs=start_delay_secs,
        throttle_secs=throttle_secs)


def _assert_eval_spec(eval_spec):
  """Raises if `eval_spec` is not an EvalSpec."""
  if not isinstance(eval_spec, EvalSpec):
    raise UserTypeError(
        '`eval_spec` must have type `tf.estimator.EvalSpec`. Got: '
        f'{type(eval_spec)}')


def _is_google_env() -> bool:
  """tf.estimator 2.15's: whether TF_CONFIG says the environment is
  Google's (where it did not start servers itself)."""
  try:
    tf_config = json.loads(os.environ.get(_TF_CONFIG_ENV) or '{}')
  except ValueError:
    return False
  return (isinstance(tf_config, dict) and
          tf_config.get(_ENVIRONMENT_KEY) == _ENVIRONMENT_GOOGLE_VALUE)


# ---------------------------------------------------------------------------
# train_and_evaluate.


def _runtime_config(config) -> bool:
  """Whether `config` is a RunConfig this runtime made (not a stand-in
  object exposing 2.15's properties)."""
  from estimator_rt.cluster import run_config as run_config_lib  # pylint: disable=g-import-not-at-top
  return isinstance(vars(config).get('_distributed') if hasattr(
      config, '__dict__') else None, run_config_lib._Distributed)  # pylint: disable=protected-access


def train_and_evaluate(estimator, train_spec, eval_spec):
  """Trains, evaluating after new checkpoints, then evaluates and exports.

  tf.estimator 2.15's function (`tf.estimator.train_and_evaluate`); see
  the module docstring. Locally (no cluster, or a standalone client: the
  only process of its job) evaluation runs in this process after each new
  checkpoint, never at step 0 and never twice for one checkpoint, at most
  once per `eval_spec.throttle_secs`; after training the final checkpoint
  is evaluated (if it was not already) and the exporters run with
  `is_the_final_export=True`. In a TF_CONFIG cluster each task runs its
  role (roles.py); the evaluator task evaluates and exports.

  Returns:
    What 2.15 returned: locally, (metrics of the final evaluation, what
    each exporter returned at it: an export directory as bytes, or None
    for one that did not export); None in a cluster.

  Raises:
    UserInputError (a ValueError; UserTypeError, also a TypeError, where
      2.15 raised TypeError): bad specs, estimator or TF_CONFIG.
  """
  return _executor(estimator, train_spec, eval_spec).run()


def train_and_evaluate_all(estimator, train_spec, eval_spec
                           ) -> Tuple[Optional[Dict[str, Any]], List[str]]:
  """estimator_rt's `train_and_evaluate` (`estimator_rt.train_and_evaluate`,
  the binary's): runs as `train_and_evaluate` does, and returns more.

  Returns:
    (metrics of the last evaluation, the paths (str) of every export
    written during the run), in every role: (None, []) for a cluster task
    that does not evaluate.

  Raises:
    As `train_and_evaluate`.
  """
  executor = _executor(estimator, train_spec, eval_spec)
  executor.run()
  metrics, paths = executor.outcome
  return metrics, [tf.compat.as_str_any(path) for path in paths]


def _executor(estimator, train_spec, eval_spec) -> '_TrainingExecutor':
  """The executor of a `train_and_evaluate` call, with its arguments and
  this process's role checked (nothing run yet)."""
  _assert_eval_spec(eval_spec)  # Fails fast, before anything else.
  executor = _TrainingExecutor(
      estimator=estimator, train_spec=train_spec, eval_spec=eval_spec)
  config = estimator.config
  if config.task_type == 'evaluator' and config.task_id > 0:
    raise UserInputError(
        'For distributed training, there can only be one `evaluator` task '
        f'(with task id 0).  Given task id {config.task_id}')
  if not getattr(config, '_distribute_coordinator_mode', None):
    tf_log.info('Not using Distribute Coordinator.')  # 2.15's line.
  if _runtime_config(config) and not stand_in_tasks.is_stand_in(estimator):
    role = config.role  # The runtime's reading of the cluster, or its error.
    if role.task is not None:
      cluster.check_strategy(role.task, role.strategy_name)
      logging.info('Running as %s. Role: %s', role.task.describe(),
                   role.describe())
  return executor


class _StopAtSecsHook(tf.compat.v1.train.SessionRunHook):
  """Stops given secs after begin is called (tf.estimator 2.15's)."""

  def __init__(self, stop_after_secs):
    self._stop_after_secs = stop_after_secs
    self._start_time = None

  def begin(self):
    self._start_time = time.time()

  def after_run(self, run_context, run_values):
    del run_values
    if time.time() - self._start_time >= self._stop_after_secs:
      run_context.request_stop()


class _NewCheckpointListenerForEvaluate(
    tf.compat.v1.train.CheckpointSaverListener):
  """Evaluates (and exports) after new checkpoints, at most once per
  `eval_throttle_secs`, and the final one at the end of training.

  Never at step 0 (tf.estimator skipped the save made when training began,
  which estimator_rt does not make). At the end, a checkpoint evaluated
  already but not exported as final (the input ended before max_steps)
  gets its final export.
  """

  def __init__(self, evaluator, eval_throttle_secs, continuous_eval_listener):
    self._evaluator = evaluator
    self._eval_throttle_secs = eval_throttle_secs
    self._continuous_eval_listener = continuous_eval_listener
    self.eval_result, self.export_results = None, None
    self.began = False

  def begin(self):
    self._timer = basic_session_run_hooks.SecondOrStepTimer(
        every_secs=self._eval_throttle_secs)
    self._is_first_run = True
    self.began = True

  def after_save(self, session, global_step_value):
    del session  # Unused; required by the signature.
    if self._is_first_run:
      self._is_first_run = False
      if not global_step_value:
        return  # The save made when training began: nothing trained yet.
    if global_step_value == 0:
      return
    if not self._continuous_eval_listener.before_eval():
      logging.info('Exiting training and evaluation loop, as requested by '
                   '_ContinuousEvalListener.before_eval.')
      return True
    if self._timer.should_trigger_for_step(global_step_value):
      self._evaluate(global_step_value)
      if not self._continuous_eval_listener.after_eval(self.eval_result):
        logging.info('Exiting evaluation, as requested by '
                     '_ContinuousEvalListener.after_eval.')
        return True
    else:
      logging.info('Skip the current checkpoint eval due to throttle secs '
                   '(%s secs).', self._eval_throttle_secs)
    return None

  def runs_beside_training(self) -> bool:
    """Its evaluations may run while training goes on (see
    controller.TrainController's `loop_beside`): they read the checkpoint
    just saved, into variables of their own, and only a continuous
    evaluation listener of a program's own (which may ask to stop) needs
    training to wait for them."""
    return type(self._continuous_eval_listener) is _ContinuousEvalListener  # pylint: disable=unidiomatic-typecheck

  def end(self, session, global_step_value):
    del session
    if global_step_value != self._timer.last_triggered_step():
      if self._continuous_eval_listener.before_eval():
        self._evaluate(global_step_value, is_final=True)
        self._continuous_eval_listener.after_eval(self.eval_result)
    elif (self.eval_result is not None and
          self.eval_result.status == _EvalStatus.EVALUATED and
          not self._evaluator.is_final_export_triggered):
      # The input ended before max_steps: the last checkpoint, evaluated
      # already, is the final one; exporters that export only a final
      # checkpoint (FinalExporter) get it now, and what they return stands
      # for them in `export_results` (an exporter that exported this
      # checkpoint already returns None here and keeps its first result).
      results = self._evaluator._export_eval_result(self.eval_result, True)  # pylint: disable=protected-access
      self.export_results = [
          new if new is not None else old
          for new, old in zip(results, self.export_results or
                              [None] * len(results))]

  def _evaluate(self, global_step_value, *, is_final=None):
    self._timer.update_last_triggered_step(global_step_value)
    with preemption.outside_training():
      self.eval_result, self.export_results = (
          self._evaluator.evaluate_and_export(is_final=is_final))
    if self.eval_result.status != _EvalStatus.EVALUATED:
      # Training always ends with a new checkpoint.
      raise RuntimeError('There was no new checkpoint after the training. '
                         f'Eval status: {self.eval_result.status}')


class _TrainingExecutor(object):
  """Runs `Estimator` training and evaluation for this process's task
  (tf.estimator 2.15's class, over estimator_rt's roles)."""

  def __init__(self, estimator, train_spec, eval_spec, train_hooks=None,
               continuous_eval_listener=None):
    from estimator_rt.estimator import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
    if not isinstance(estimator, estimator_lib.Estimator):
      raise UserTypeError(
          '`estimator` must have type `tf.estimator.Estimator`. Got: '
          f'{type(estimator)}')
    self._estimator = estimator
    if not isinstance(train_spec, TrainSpec):
      raise UserTypeError(
          '`train_spec` must have type `tf.estimator.TrainSpec`. Got: '
          f'{type(train_spec)}')
    self._train_spec = train_spec
    if eval_spec and not isinstance(eval_spec, EvalSpec):
      raise UserTypeError(
          '`eval_spec` must be either `None` or have type '
          f'`tf.estimator.EvalSpec`. Got: {type(eval_spec)}')
    self._eval_spec = eval_spec
    self._train_hooks = _validate_hooks(train_hooks)
    if (continuous_eval_listener and
        not isinstance(continuous_eval_listener, _ContinuousEvalListener)):
      raise UserTypeError('`continuous_eval_listener` must have type '
                          '`_ContinuousEvalListener`.')
    self._continuous_eval_listener = (
        continuous_eval_listener or _ContinuousEvalListener())
    # (metrics of the last evaluation, every export path written), in
    # every role, once `run` returned: what estimator_rt's own
    # train_and_evaluate returns.
    self.outcome: Tuple[Optional[Dict[str, Any]], List[Any]] = (None, [])

  @property
  def estimator(self):
    return self._estimator

  def run(self):
    """Runs `run_local` without a cluster (or as a standalone client), else
    `run_<task type>` (`run_chief`, `run_worker`, `run_ps`,
    `run_evaluator`).

    Returns:
      `run_local`'s value, or None in a cluster (as 2.15's); `outcome`
      holds what the task did.

    Raises:
      UserInputError: the config names no task type, or one with no
        `run_` method.
    """
    config = self._estimator.config
    if isinstance(getattr(config, 'remote_cluster', None), dict):
      logging.info('Running training and evaluation as a standalone client '
                   'of a remote cluster.')
      return self.run_local()
    if not config.cluster_spec and config.task_type != 'evaluator':
      tf_log.info('Running training and evaluation locally '
                  '(non-distributed).')
      return self.run_local()
    if not config.task_type:
      raise UserInputError(
          '`estimator.config` must have task_type set. This usually means '
          'TF_CONFIG environment is not set correctly.')
    if config.task_type == 'local':
      raise UserInputError(
          '`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and '
          '`task` properties in TF_CONFIG absent triggers train and evaluate '
          '`Estimator` locally (non-distributed).')
    available_tasks = [
        x for x in dir(self) if x.startswith('run_') and x != 'run_local' and
        callable(getattr(self, x))]
    task_to_run = 'run_' + config.task_type
    if task_to_run not in available_tasks:
      raise UserInputError(
          f'Task type {config.task_type} is not supported. Supported task '
          f'types are {[x[len("run_"):] for x in available_tasks]}')
    self.outcome = getattr(self, task_to_run)()
    return None

  def run_chief(self):
    """The chief: trains (synchronous strategies) or coordinates
    (parameter_server), is the only writer of model_dir, and tells the
    servers when training is done. It does not evaluate (2.15 neither):
    the evaluator task does."""
    return self._start_distributed_training(
        saving_listeners=self._train_spec.saving_listeners)

  def run_worker(self):
    """A worker: trains (synchronous strategies; worker 0 of a cluster
    without a chief is the chief), or serves the chief's coordinator
    (parameter_server, TF2 model_fn), or trains between-graph then serves
    (parameter_server, TF1-style model_fn)."""
    return self._start_distributed_training(
        saving_listeners=self._train_spec.saving_listeners)

  def run_master(self):
    """tf.estimator's legacy `master` job: a chief that also evaluates each
    new checkpoint (at most once per throttle_secs) and the final one, as
    2.15's did.

    A cluster of that one task (cluster.py) runs as 2.15 ran it, in one
    process that trains and evaluates: the local procedure. With other
    tasks (between-graph training with ps tasks) it is the chief, with the
    evaluation as a saving listener; so is a stand-in estimator's
    (stand_in_tasks.py). Returns (the last evaluation's metrics, every
    export path).
    """
    _assert_eval_spec(self._eval_spec)
    if (not stand_in_tasks.is_stand_in(self._estimator) and
        self._estimator.config.task_info is None):
      logging.info('Running the one-task `master` cluster locally: '
                   'training, and evaluation after each checkpoint.')
      self.run_local()
      return self.outcome
    evaluator = _TrainingExecutor._Evaluator(self._estimator, self._eval_spec,
                                             self._train_spec.max_steps)
    listener_for_eval = _NewCheckpointListenerForEvaluate(
        evaluator, self._eval_spec.throttle_secs,
        self._continuous_eval_listener)
    self._start_distributed_training(
        saving_listeners=tuple(self._train_spec.saving_listeners) +
        (listener_for_eval,))
    return evaluator.last_metrics, evaluator.export_paths

  def run_evaluator(self):
    """The evaluator: evaluates each newest checkpoint once, exports, and
    ends after the checkpoint at max_steps."""
    return self._start_continuous_evaluation()

  def run_ps(self):
    """A ps: serves the variables until the chief signals the end of
    training (tf.estimator's ps served forever)."""
    return self._start_distributed_training()

  def run_local(self):
    """Trains and evaluates in this process; returns (metrics of the final
    evaluation, what each exporter returned at it), as 2.15's did, and
    sets `outcome`."""
    _assert_eval_spec(self._eval_spec)
    # A bad eval input_fn or EVAL-mode model_fn fails once the training is
    # built, before it writes anything to model_dir. Asked of the estimator's
    # class: a stand-in for an Estimator (a program's Mock(spec=Estimator),
    # as 2.15's own tests pass) has every attribute, and is not asked.
    checking = (self._estimator.evaluation_checked_in_training(
        self._eval_spec.input_fn, steps=self._eval_spec.steps,
        name=self._eval_spec.name, hooks=self._eval_spec.hooks)
                if callable(getattr(type(self._estimator),
                                    'evaluation_checked_in_training', None))
                else contextlib.nullcontext())
    train_hooks = list(self._train_spec.hooks) + list(self._train_hooks)
    config = self._estimator.config
    tf_log.info(
        'Start train and evaluate loop. The evaluate will happen after every '
        'checkpoint. Checkpoint frequency is determined based on RunConfig '
        'arguments: save_checkpoints_steps %s or save_checkpoints_secs %s.',
        getattr(config, 'save_checkpoints_steps', None),
        getattr(config, 'save_checkpoints_secs', None))
    evaluator = _TrainingExecutor._Evaluator(self._estimator, self._eval_spec,
                                             self._train_spec.max_steps)
    listener_for_eval = _NewCheckpointListenerForEvaluate(
        evaluator, self._eval_spec.throttle_secs,
        self._continuous_eval_listener)
    saving_listeners = tuple(self._train_spec.saving_listeners) + (
        listener_for_eval,)
    with checking:
      self._estimator.train(
          input_fn=self._train_spec.input_fn,
          max_steps=self._train_spec.max_steps,
          hooks=train_hooks,
          saving_listeners=saving_listeners)
    if not listener_for_eval.began:
      # Training ran no loop (model_dir's checkpoint is at max_steps
      # already): the newest checkpoint is the final one.
      if self._continuous_eval_listener.before_eval():
        result, _ = evaluator.evaluate_and_export(is_final=True)
        if result.status != _EvalStatus.EVALUATED:
          raise RuntimeError('There was no new checkpoint after the '
                             f'training. Eval status: {result.status}')
        listener_for_eval.eval_result = result
        self._continuous_eval_listener.after_eval(result)
    eval_result = listener_for_eval.eval_result or _EvalResult(
        status=_EvalStatus.MISSING_CHECKPOINT)
    self.outcome = (eval_result.metrics, evaluator.export_paths)
    return eval_result.metrics, listener_for_eval.export_results

  def _start_distributed_training(self, saving_listeners=None):
    """This cluster task's part in training (see roles.py)."""
    config = self._estimator.config
    if stand_in_tasks.is_stand_in(self._estimator):
      # No runtime role for it: 2.15's procedure (see stand_in_tasks).
      if config.task_type == cluster.PS:
        stand_in_tasks.serve(self._estimator)
      else:
        stand_in_tasks.train(
            self._estimator, self._train_spec, extra_hooks=self._train_hooks,
            saving_listeners=saving_listeners,
            start_server=not _is_google_env())
      return None, []
    problem = stand_in_tasks.server_config_problem(config)
    if problem:
      raise RuntimeError(problem)
    if not _runtime_config(config):
      raise UserInputError(
          f'estimator.config={shorten(config)} is not a RunConfig: a cluster '
          'task runs from the RunConfig of TF_CONFIG (tf.estimator.RunConfig).')
    role = config.role  # The runtime's reading of the cluster, or its error.
    task = role.task
    if task is not None:
      cluster.check_strategy(task, role.strategy_name)
    hooks = list(self._train_spec.hooks) + list(self._train_hooks)
    if role.kind in (roles.LOCAL, roles.STANDALONE_CLIENT):
      self.run_local()
      return self.outcome
    if role.kind == roles.EVALUATOR:
      return self._start_continuous_evaluation()
    if role.kind in (roles.PS, roles.WORKER):
      # A parameter-server worker's part depends on the model_fn's engine.
      engine = (self._estimator.training_engine(self._train_spec.input_fn)
                if role.kind == roles.WORKER and
                role.strategy_name == cluster.PARAMETER_SERVER else None)
      if role.trains_between_graph(engine):
        return _run_between_graph_worker(self._estimator, self._train_spec,
                                         task, hooks)
      if role.serves(engine):
        return _run_server(task, finished=_training_finished(
            self._estimator.model_dir, self._train_spec.max_steps))
    return _run_training_task(self._estimator, self._train_spec, role,
                              hooks=hooks, saving_listeners=saving_listeners)

  def _start_continuous_evaluation(self):
    """Evaluates new checkpoints until the one at max_steps; returns (the
    last evaluation's metrics, every export path)."""
    _assert_eval_spec(self._eval_spec)
    start_delay_secs = self._eval_spec.start_delay_secs
    if start_delay_secs:
      logging.info('Waiting %f secs before starting eval.', start_delay_secs)
      time.sleep(start_delay_secs)
    latest_eval_result = None
    evaluator = _TrainingExecutor._Evaluator(self._estimator, self._eval_spec,
                                             self._train_spec.max_steps)
    should_early_stop = False
    while not should_early_stop:
      if evaluator.is_final_export_triggered:
        logging.info('Exiting evaluation, global_step=%s >= train '
                     'max_steps=%s', evaluator.last_global_step,
                     self._train_spec.max_steps)
        break
      if (latest_eval_result is not None and
          latest_eval_result.status == _EvalStatus.NO_NEW_CHECKPOINT and
          evaluator.final_checkpoint_unusable()):
        logging.warning('The final checkpoint is unusable; the last '
                        'evaluation (step %s) stands as the final one.',
                        evaluator.last_global_step)
        break
      latest_eval_result, should_early_stop = self._execute_evaluator_once(
          evaluator, self._continuous_eval_listener,
          self._eval_spec.throttle_secs)
    return evaluator.last_metrics, evaluator.export_paths

  def _execute_evaluator_once(self, evaluator, continuous_eval_listener,
                              throttle_secs):
    """One look for a new checkpoint, evaluated (and exported) if there is
    one; then the wait before the next look: until `throttle_secs` after
    this evaluation began (cut short when the final checkpoint appears), or
    `_POLL_SECS` when there was nothing new. Returns (the _EvalResult,
    whether the continuous-eval listener asked to stop)."""
    _assert_eval_spec(self._eval_spec)
    if not continuous_eval_listener.before_eval():
      logging.info('Exiting evaluation, as requested by '
                   '_ContinuousEvalListener.before_eval.')
      return None, True
    start = time.time()
    eval_result, _ = evaluator.evaluate_and_export()
    if not self._continuous_eval_listener.after_eval(eval_result):
      logging.info('Exiting evaluation, as requested by '
                   '_ContinuousEvalListener.after_eval.')
      return eval_result, True
    if eval_result.status == _EvalStatus.EVALUATED:
      if not evaluator.is_final_export_triggered:
        evaluator.wait_for_throttle(start, throttle_secs)
    else:
      if throttle_secs == 0:
        evaluator.warn_throttle_zero()
      time.sleep(_POLL_SECS)
    return eval_result, False

  class _Evaluator(object):
    """Evaluates the newest checkpoint (if new) and runs the exporters."""

    def __init__(self, estimator, eval_spec, max_training_steps):
      self._estimator = estimator
      _assert_eval_spec(eval_spec)
      self._eval_spec = eval_spec
      self._is_final_export_triggered = False
      self._previous_ckpt_path = None
      self._last_warning_time = 0
      self._warned_throttle_zero = False
      self._max_training_steps = max_training_steps
      self._evaluated_steps: List[int] = []
      # exporter name -> the checkpoint it last exported: no checkpoint is
      # exported twice by one exporter.
      self._exported: Dict[str, Any] = {}
      self.last_metrics: Optional[Dict[str, Any]] = None
      self.export_paths: List[Any] = []

    @property
    def is_final_export_triggered(self):
      return self._is_final_export_triggered

    @property
    def last_global_step(self):
      return None if self.last_metrics is None else self.last_metrics.get(
          _GLOBAL_STEP)

    def _model_dir(self) -> Optional[str]:
      model_dir = getattr(self._estimator, 'model_dir', None)
      return model_dir if isinstance(model_dir, str) else None

    def final_checkpoint_unusable(self) -> bool:
      """Whether training is over but its final checkpoint cannot be read
      (damaged after it was written): then no better one will come."""
      return evaluator_lib.final_checkpoint_unusable(
          self._model_dir(), self._max_training_steps)

    def evaluate_and_export(self, *, is_final=None):
      """Evaluates the newest checkpoint unless it was evaluated already,
      then runs the exporters (`is_the_final_export`: `is_final`, or by
      default whether its global step reached max_steps).

      Returns:
        (an _EvalResult, what each exporter returned).
      """
      latest_ckpt_path = self._estimator.latest_checkpoint()
      if not latest_ckpt_path:
        self._log_err_msg('Estimator is not trained yet. Will start an '
                          'evaluation when a checkpoint is ready.')
        return _EvalResult(status=_EvalStatus.MISSING_CHECKPOINT), []
      step = _step_of(latest_ckpt_path)
      if step == 0 and self._max_training_steps != 0 and not is_final:
        # The save training makes when it begins (tf.estimator's
        # CheckpointSaverHook wrote it too): nothing trained yet, and
        # train_and_evaluate never evaluates step 0 while training goes on.
        # Training that ended there (its input ended at once) has it as its
        # final checkpoint, which 2.15 evaluated: so is it here.
        self._log_err_msg('Estimator is not trained yet (its checkpoint is '
                          'at step 0). Will start an evaluation when a '
                          'trained checkpoint is ready.')
        return _EvalResult(status=_EvalStatus.MISSING_CHECKPOINT), []
      if (latest_ckpt_path == self._previous_ckpt_path or
          (step is not None and step in self._evaluated_steps)):
        self._log_err_msg(
            'No new checkpoint ready for evaluation. Skip the current '
            'evaluation pass as evaluation results are expected to be same '
            'for the same checkpoint.')
        return _EvalResult(status=_EvalStatus.NO_NEW_CHECKPOINT), []
      try:
        metrics = self._estimator.evaluate(
            input_fn=self._eval_spec.input_fn,
            steps=self._eval_spec.steps,
            name=self._eval_spec.name,
            checkpoint_path=latest_ckpt_path,
            hooks=self._eval_spec.hooks)
      except Exception as e:  # pylint: disable=broad-except
        if not evaluator_lib.vanished(latest_ckpt_path):
          raise
        # The chief deleted it (keep_checkpoint_max) between our listing
        # and our reading: a newer one exists, and that is the one to
        # evaluate. Whatever the error says, a checkpoint whose files are
        # gone is the explanation.
        logging.warning('Checkpoint %s vanished while being evaluated (%s: '
                        '%s); moving on to a newer one.', latest_ckpt_path,
                        type(e).__name__, one_line(e))
        return _EvalResult(status=_EvalStatus.NO_NEW_CHECKPOINT), []
      # _EvalResult validates the metrics.
      eval_result = _EvalResult(
          status=_EvalStatus.EVALUATED, metrics=metrics,
          checkpoint_path=latest_ckpt_path)
      if is_final is None:
        is_final = bool(
            self._max_training_steps and
            (eval_result.metrics[_GLOBAL_STEP] >= self._max_training_steps or
             self.final_checkpoint_unusable()))
      self._last_warning_time = 0
      self._previous_ckpt_path = latest_ckpt_path
      if step is not None:
        self._evaluated_steps.append(step)
      self.last_metrics = metrics
      export_results = self._export_eval_result(eval_result, is_final)
      if is_final:
        logging.debug('Calling exporter with the `is_the_final_export=True`.')
        self._is_final_export_triggered = True
      return eval_result, export_results

    def wait_for_throttle(self, start: float, throttle_secs: float) -> None:
      """Waits until `throttle_secs` after `start`, looking every
      `_POLL_SECS` whether the final checkpoint was written (it is not held
      back)."""
      while True:
        remaining = throttle_secs - (time.time() - start)
        if remaining <= 0:
          return
        if self._model_dir() is None or not self._max_training_steps:
          logging.info('Waiting %f secs before starting next eval run.',
                       remaining)
          time.sleep(remaining)
          return
        time.sleep(min(_POLL_SECS, remaining))
        if evaluator_lib.newest_step(self._model_dir()) >= (
            self._max_training_steps):
          return

    def warn_throttle_zero(self) -> None:
      if not self._warned_throttle_zero:
        self._warned_throttle_zero = True
        tf.compat.v1.logging.warning(
            'EvalSpec.throttle_secs is set as 0: every new checkpoint is '
            'evaluated (the evaluator looks for one every %s s). Please '
            'consider to increase it if evaluations fall behind training.',
            _POLL_SECS)

    def _log_err_msg(self, message):
      """Logs warning `message`, at most once every 10 minutes."""
      current_time = time.time()
      if current_time - self._last_warning_time > 600:
        tf.compat.v1.logging.warning(message)
        self._last_warning_time = current_time

    def _export_eval_result(self, eval_result, is_the_final_export):
      """Runs each exporter of the EvalSpec on `eval_result`'s checkpoint,
      unless it exported that checkpoint already; returns what each
      returned."""
      export_dir_base = os.path.join(
          tf.compat.as_str_any(self._estimator.model_dir), 'export')
      export_results = []
      for exporter in self._eval_spec.exporters:
        if self._exported.get(exporter.name) == eval_result.checkpoint_path:
          export_results.append(None)
          continue
        path = exporter.export(
            estimator=self._estimator,
            export_path=os.path.join(export_dir_base,
                                     tf.compat.as_str_any(exporter.name)),
            checkpoint_path=eval_result.checkpoint_path,
            eval_result=eval_result.metrics,
            is_the_final_export=is_the_final_export)
        export_results.append(path)
        if path:
          logging.info('Exporter %r wrote %s', exporter.name,
                       tf.compat.as_str_any(path))
          self._exported[exporter.name] = eval_result.checkpoint_path
          self.export_paths.append(path)
      return export_results


def _step_of(path) -> Optional[int]:
  """The global step in a checkpoint path's name, or None."""
  if not isinstance(path, str):
    return None
  try:
    return checkpoints.checkpoint_step(path)
  except Exception:  # pylint: disable=broad-except
    return None


class _EvalStatus(object):
  """The status of an evaluation event: EVALUATED (a new checkpoint was
  evaluated), MISSING_CHECKPOINT (none yet), NO_NEW_CHECKPOINT (none since
  the last evaluation)."""

  EVALUATED = 'evaluated'
  MISSING_CHECKPOINT = 'missing checkpoint'
  NO_NEW_CHECKPOINT = 'no new checkpoint'


class _EvalResult(
    collections.namedtuple('EvalResult',
                           ['status', 'metrics', 'checkpoint_path'])):
  """The result of an evaluation event (tf.estimator 2.15's)."""

  def __new__(cls, status, metrics=None, checkpoint_path=None):
    if status != _EvalStatus.EVALUATED:
      if metrics:
        raise UserInputError(
            f'metrics must be `None` if status is not {_EvalStatus.EVALUATED}'
            f'; got status {status}, metrics {shorten(metrics)}')
      if checkpoint_path:
        raise UserInputError(
            'checkpoint must be `None` if status is not '
            f'{_EvalStatus.EVALUATED}; got status {status}, checkpoint_path '
            f'{checkpoint_path}')
      return super().__new__(cls, status, metrics, checkpoint_path)
    if not metrics:
      raise UserInputError(
          'Internal error: `Estimator.evaluate` should never return empty '
          'metrics.')
    if not isinstance(metrics, dict):
      raise UserTypeError(
          f'`Estimator.evaluate` should return dict. Given {type(metrics)}.')
    if _GLOBAL_STEP not in metrics:
      raise UserInputError(
          'Internal error: `Estimator.evaluate` result should have '
          f'`global_step` in result. Given {shorten(metrics)}')
    if not checkpoint_path:
      raise UserInputError(
          'Internal error: `checkpoint_path` should never be empty.')
    return super().__new__(cls, status, metrics, checkpoint_path)


class _ContinuousEvalListener(object):
  """Interface for listeners that take action before or after evaluation."""

  def before_eval(self):
    """Called before evaluation: False skips it and stops the continuous
    evaluation."""
    return True

  def after_eval(self, eval_result):
    """Called after each evaluation pass with its _EvalResult: False stops
    the continuous evaluation."""
    del eval_result
    return True


# ---------------------------------------------------------------------------
# The cluster roles' procedures.


def _run_server(task, *, finished: Callable[[], bool]
                ) -> Tuple[None, List[str]]:
  """ps, and workers of parameter-server training: serve until done."""
  server = server_lib.start_server(task)
  return _end_as_told(task, server_lib.wait_until_training_done(
      server, task, chief_address=task.chief_address,
      finished=finished))


def _training_finished(model_dir: str, max_steps: Optional[int]
                       ) -> Callable[[], bool]:
  """Whether `model_dir`'s newest checkpoint is at `max_steps` (never, with
  no max_steps): what a server task that finds its chief gone asks."""

  def finished() -> bool:
    if max_steps is None:
      return False
    try:
      path = checkpoints.latest_checkpoint(model_dir)
    except (UserInputError, ValueError, OSError, tf.errors.OpError):
      return False
    return path is not None and checkpoints.checkpoint_step(path) >= max_steps

  return finished


def _end_as_told(task, code: int) -> Tuple[None, List[str]]:
  """Ends a server task by what its wait for the chief returned (see
  wait_until_training_done)."""
  if code == PREEMPTED_EXIT_CODE:
    raise PreemptedError(
        f'{task.task_type}:{task.task_index}: the chief was preempted and '
        'saved; restart the cluster to resume.', global_step=-1)
  if code:
    raise ChiefLostError(
        f'{task.task_type}:{task.task_index}: the chief at '
        f'{task.chief_address} stopped without finishing '
        'training.')
  return None, []


class _StopWhenSet(tf.compat.v1.train.SessionRunHook):
  """Stops training after the step in which `event` is found set."""

  def __init__(self, event: threading.Event):
    self._event = event

  def after_run(self, run_context, run_values):
    del run_values
    if self._event.is_set():
      run_context.request_stop()


class _ChiefWatch:
  """Waits, in a thread, for the chief's end-of-training signal on this
  task's server (as `_run_server` does), and stops training when it comes.

  Attributes:
    hook: a SessionRunHook that stops training once the signal came.
  """

  def __init__(self, task):
    self._task = task
    self._code = None
    self._arrived = threading.Event()
    self._trained = threading.Event()
    server = server_lib.own_server(task)
    self._thread = threading.Thread(
        target=self._wait, args=(server,), name='chief-watch', daemon=True)
    self._thread.start()
    self.hook = _StopWhenSet(self._arrived)

  def training_ended(self) -> None:
    """Says that this task's training call has returned (or raised)."""
    self._trained.set()

  def _wait(self, server) -> None:
    self._code = server_lib.wait_until_training_done(
        server, self._task, chief_address=self._task.chief_address)
    self._arrived.set()
    # The hook stops training after a step; a task still starting (waiting
    # up to minutes for a ps task that is gone, or for the chief's variables)
    # runs no step to see it, and must not outlive the job for that.
    if self._trained.wait(_STOP_AFTER_SIGNAL_SECS):
      return
    code = self._code
    logging.warning(
        '%s:%d had not started training when the chief signalled the end of '
        'it (still waiting for the ps tasks or the variables); exiting with '
        'code %d.', self._task.task_type, self._task.task_index,
        code if code in (0, PREEMPTED_EXIT_CODE) else 1)
    preemption.exit_at_once(code if code in (0, PREEMPTED_EXIT_CODE) else 1)

  def code(self, timeout: Optional[float] = None) -> Optional[int]:
    """The signal's exit code (see wait_until_training_done), waiting up to
    `timeout` (None: until it comes, which is bounded by the chief's
    disappearance); None if it has not come."""
    self._arrived.wait(timeout)
    return self._code


def _run_between_graph_worker(estimator, train_spec, task, hooks):
  """A worker of parameter_server training of a TF1-style model_fn: trains
  on its own (graph engine, between-graph) until max_steps, then serves
  until the chief signals the end, exiting as `_run_server` does."""
  watch = _ChiefWatch(task)
  try:
    estimator.train(train_spec.input_fn, hooks=list(hooks) + [watch.hook],
                    max_steps=train_spec.max_steps)
  except TaskLostError:
    # The chief tells the ps tasks that training is over once the workers
    # are gone, or WORKERS_GONE_SECS after telling them: a slow worker can
    # still lose its ps mid-step then, and was told first.
    if watch.code(timeout=_PS_GONE_GRACE_SECS) is None:
      raise
  finally:
    watch.training_ended()
  return _end_as_told(task, watch.code())


# How long a worker whose step failed on a vanished ps waits for the
# chief's end-of-training signal, which explains it.
_PS_GONE_GRACE_SECS = 10

# How long a between-graph worker told that training is over may take to
# stop on its own (a step in flight, closing its session) before it leaves
# at once.
_STOP_AFTER_SIGNAL_SECS = 10


def _run_training_task(estimator, train_spec, role, *, hooks,
                       saving_listeners):
  """The chief, or a worker of synchronous (MWMS) training."""
  task = role.task
  preempted = False
  looking = (server_lib.note_servers_up(_server_tasks(task))
             if role.signals_servers else None)
  try:
    estimator.train(input_fn=train_spec.input_fn,
                    max_steps=train_spec.max_steps, hooks=hooks,
                    saving_listeners=saving_listeners)
  except PreemptedError:
    preempted = True
    raise
  finally:
    if looking is not None:
      looking.set()
    if role.signals_servers:
      # Success or not, the servers must not wait for a chief that is done;
      # after a preemption they exit as preempted too, so that a launcher
      # restarts the whole cluster.
      _signal_servers(task, preempted=preempted,
                      between_graph=estimator.chosen_engine == engine_choice.GRAPH)
  return None, []


def evaluate_final_checkpoint(estimator, eval_spec: EvalSpec
                              ) -> Tuple[Optional[Dict[str, Any]], List[str]]:
  """Evaluates the newest checkpoint of `estimator.model_dir` and runs the
  exporters as a final export, in this process.

  For a job that can have no evaluator task (Ray Train's workers-only
  TF_CONFIG): its chief calls this after `train_and_evaluate`, as the one
  process that evaluates. Evaluation is not a chief's part otherwise (see
  `roles.Role.evaluates_in_process`).

  Returns:
    (the metrics, the export paths written).
  """
  evaluator = _TrainingExecutor._Evaluator(estimator, eval_spec, None)  # pylint: disable=protected-access
  result, _ = evaluator.evaluate_and_export(is_final=True)
  return result.metrics, [tf.compat.as_str_any(path)
                          for path in evaluator.export_paths]


def _signal_servers(task, *, preempted: bool, between_graph: bool) -> None:
  """Tells the workers and the ps tasks that training is over.

  Between-graph workers (graph engine) still have a session using the ps
  tasks when the chief is done; a ps that exits before a worker's session
  is closed can lose that worker the signal. Those workers are told
  first, and the ps tasks once the workers are gone (or after
  WORKERS_GONE_SECS).
  """
  def tasks_of(job):
    return _server_tasks(task, jobs=(job,))
  if not between_graph:
    server_lib.signal_training_done(
        tasks_of(cluster.WORKER) + tasks_of(cluster.PS), preempted=preempted)
    return
  server_lib.signal_training_done(tasks_of(cluster.WORKER),
                                  preempted=preempted)
  server_lib.wait_until_gone(tasks_of(cluster.WORKER),
                             timeout_secs=WORKERS_GONE_SECS)
  server_lib.signal_training_done(tasks_of(cluster.PS), preempted=preempted)


def _server_tasks(task, *, jobs=(cluster.WORKER, cluster.PS)
                  ) -> List[Tuple[str, int, str]]:
  """(job, index, address) of each server of `jobs` in `task`'s cluster."""
  return [(job, index, address) for job in jobs
          for index, address in enumerate(task.cluster.get(job, ()))]


# How long a between-graph chief waits for told workers to exit before it
# tells the ps tasks (a worker closes its session within 30 s).
WORKERS_GONE_SECS = 60
