"""`Estimator`: train, evaluate, predict and export one model_fn."""

import contextlib
import functools
import itertools
import os
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.training import engine_choice
from estimator_rt.export import saved_model as export_lib
from estimator_rt.training import hooks as hooks_lib
from estimator_rt.core import log_handlers
from estimator_rt.estimator import overrides
from estimator_rt.cluster import preemption
from estimator_rt.estimator import protected_methods
from estimator_rt.cluster import session_threads
from estimator_rt.core import summaries
from estimator_rt.core import tf_errors
from estimator_rt.core import tf_log
from estimator_rt.core import user_fns
from estimator_rt.estimator import warm_starting
from estimator_rt.cluster.tf_config import ClusterConfigError
from estimator_rt.core.errors import as_count
from estimator_rt.core.errors import check_positive_count
from estimator_rt.core.errors import EagerModelFnError
from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import InputFnError
from estimator_rt.core.errors import MAX_INT32
from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.cluster.run_config import get_default_session_config
from estimator_rt.cluster.run_config import path_to_str
from estimator_rt.cluster.run_config import RunConfig


def checked_config(config: Optional[RunConfig]) -> RunConfig:
  """`config`, or a default RunConfig for None.

  Raises:
    UserInputError: it is not a RunConfig (2.15's ValueError and phrase).
  """
  config = RunConfig() if config is None else config
  if not isinstance(config, RunConfig):
    raise UserInputError(
        'config must be an instance of `RunConfig`, but provided '
        f'{shorten(config)}: give a tf.estimator.RunConfig '
        '(estimator_rt.RunConfig), or None.')
  return config


def config_with_model_dir(config: RunConfig,
                          model_dir: Optional[str]) -> RunConfig:
  """`config` with the model_dir an Estimator writes: `model_dir` (a path
  or PathLike; it must agree with `config.model_dir` if both are set), or
  `config.model_dir`, or else a new temporary directory. An empty
  model_dir is none, as in 2.15.

  The temporary directory is made now, by tempfile.mkdtemp, as 2.15 did
  (programs and 2.15's tests patch it to choose the directory); the
  command line names its temporary model_dir itself, and creates it only
  once the input is valid (main.py).

  Raises:
    UserInputError: `model_dir` and `config.model_dir` differ (2.15's
      ValueError and phrase).
  """
  model_dir = path_to_str(model_dir)
  if (model_dir and config.model_dir and
      os.path.normpath(model_dir) != os.path.normpath(config.model_dir)):
    raise UserInputError(
        '`model_dir` are set both in constructor and `RunConfig`, but with '
        f'different values. In constructor: {model_dir!r}, in `RunConfig`: '
        f'{config.model_dir!r}. Give one of them.')
  model_dir = model_dir or config.model_dir
  if not model_dir:
    model_dir = tempfile.mkdtemp()
    logging.warning('Using temporary folder as model directory: %s',
                    model_dir)
  return config.replace(model_dir=model_dir)


# What next() returns after the last prediction.
_END = object()

# The RunConfig properties tf.estimator 2.15's "Using config" line showed,
# in its order (its RunConfig's private attributes).
_LOGGED_CONFIG = (
    'model_dir', 'tf_random_seed', 'save_summary_steps',
    'save_checkpoints_steps', 'save_checkpoints_secs', 'session_config',
    'keep_checkpoint_max', 'keep_checkpoint_every_n_hours',
    'log_step_count_steps', 'train_distribute', 'device_fn', 'protocol',
    'eval_distribute', 'experimental_distribute',
    'experimental_max_worker_delay_secs', 'session_creation_timeout_secs',
    'checkpoint_save_graph_def', 'service', 'cluster_spec', 'task_type',
    'task_id', 'global_id_in_cluster', 'master', 'evaluation_master',
    'is_chief', 'num_ps_replicas', 'num_worker_replicas')


def _config_as_215_logged_it(config: RunConfig) -> Dict[str, Any]:
  return {f'_{name}': getattr(config, name, None) for name in _LOGGED_CONFIG}


class Estimator(protected_methods.ProtectedMethods):
  """Trains, evaluates, predicts with and exports a `model_fn`.

  Semantics follow tf.estimator: `train` trains *up to* a global step and
  resumes from model_dir's latest checkpoint; `evaluate` and `predict` use
  the latest checkpoint (or one you name); everything is written under
  model_dir.

  Two engines run model_fns (see engine_choice.py for the rule that picks
  one, without any setting): TF2 model_fns run eagerly-built and compiled
  (eager/engine.py); TF1-style model_fns (`tf.compat.v1` optimizers'
  `minimize`, `tf.compat.v1.metrics`, placeholders, `Scaffold`,
  `SessionRunHook`s) run in a `tf.Graph` with a monitored session, as
  tf.estimator ran them (graph/engine.py). Both run under one training loop
  (controller.py) of up to `config.steps_per_loop` steps per loop, with
  runtime hooks between loops. A model_dir holding another model's
  checkpoint is refused before anything is written.

  tf.estimator 2.15's protected helpers that subclasses call
  (`_call_input_fn`, `_get_iterator_from_input_fn`, `_call_model_fn`, ...)
  are inherited from protected_methods.py.

  Args:
    model_fn: `model_fn(features, labels, mode, params, config)` returning
      an `EstimatorSpec`; `labels`, `mode`, `params`, `config` optional.
    model_dir: where checkpoints, summaries and exports go. Overrides
      `config.model_dir`; if both are None a temporary directory is used.
    config: a `RunConfig`.
    params: a dict passed to model_fn and input_fn (`batch_size` is the
      global batch size); any other value is passed as given, as 2.15
      passed it (None: `{}`).
    warm_start_from: a model_dir or checkpoint path whose model variables
      initialize a model_dir that has no checkpoint yet, or a
      `WarmStartSettings` (see warm_starting.py).
  """

  # Whether the model_fn's variables start trained, so that an export with
  # no checkpoint in model_dir exports their initial values (see
  # keras/model_to_estimator.py); otherwise it needs a checkpoint, or
  # warm_start_from's, as tf.estimator 2.15's did.
  _initialization_is_trained = False
  # What each call's work runs in, and each prediction is made in: a
  # function returning a context manager (model_to_estimator's Estimator
  # runs eagerly even when called from a graph context).
  _work_context = staticmethod(contextlib.nullcontext)

  def __init__(self, model_fn: Callable, model_dir: Optional[str] = None,
               config: Optional[RunConfig] = None,
               params: Optional[Dict[str, Any]] = None,
               warm_start_from: Optional[str] = None):
    log_handlers.use_root_handler()
    # The subclass first, then the config, then the model_fn, as
    # tf.estimator 2.15 checked them; the messages start with 2.15's
    # phrases, which code matched. Called on the class, as 2.15 did, so
    # that a subclass's override of the check is what runs.
    self.__class__._assert_members_are_not_overridden(self)  # pylint: disable=protected-access
    if config is None:
      tf_log.info('Using default config.')
    config = checked_config(config)
    self._model_fn = user_fns.check_model_fn(model_fn)
    user_fns.check_takes_params(model_fn, params)
    self._temporary_model_dir = not (model_dir or config.model_dir)
    config = config_with_model_dir(config, model_dir)
    model_dir = config.model_dir
    self._config = config
    # Any value, as 2.15 took (the model_fn gets `params or {}`); a dict is
    # copied.
    self._params = dict(params) if isinstance(params, dict) else (
        params or {})
    self._warm_start_from = warm_starting.settings_of(warm_start_from)
    # The attributes tf.estimator 2.15's Estimator set, which its
    # subclasses read (AdaNet's Estimator reads _model_dir).
    self._model_dir = self._config.model_dir
    tf_log.info('Using config: %s', _config_as_215_logged_it(self._config))
    # 2.15 filled in its default session config (soft placement, one
    # round of graph rewrites) for subclasses to read; the graph engine
    # makes the config of its sessions itself (graph/engine.py).
    self._session_config = (self._config.session_config or
                            get_default_session_config())
    # Before anything below runs an op: TensorFlow fixes its thread pools
    # when its runtime starts.
    session_threads.apply(self._config.session_config)
    self._device_fn = self._config.device_fn
    self._train_distribution = self._config.train_distribute
    self._eval_distribution = self._config.eval_distribute
    self._warm_start_settings = self._warm_start_from
    self._engines = {}
    # Which engine the model_fn turned out to need, once known.
    self._kind = None
    # The engine the last call ran in (for a role's shutdown).
    self._last_kind = None
    # What the next train checks before it writes (see
    # `evaluation_checked_in_training`), given its engine.
    self._evaluation_check = None
    # A training task of a multi-worker strategy configures its collective
    # ops when the eager engine is made (before TensorFlow runs any op);
    # choosing the engine runs ops, so that engine exists first.
    try:
      role = self._config.role
    except ClusterConfigError:
      # A cluster the runtime cannot run (port 0, an unknown job) is refused
      # when this Estimator first trains, evaluates or predicts (the engine
      # reads the role), before anything is written: tf.estimator 2.15 made
      # Estimators of any TF_CONFIG, and code reads their config (2.15's
      # InMemoryEvaluatorHook refuses a cluster by its properties).
      role = None
    if role is not None and role.creates_strategy_first:
      self._engine_of(engine_choice.EAGER)

  def _assert_members_are_not_overridden(self) -> None:
    """Raises ValueError if this object's class overrides a member of
    Estimator (2.15's rule, see overrides.py); a subclass that overrides
    this method skips the check."""
    overrides.check_not_overridden(Estimator, self)

  def _engine_of(self, kind: str):
    engine = self._engines.get(kind)
    if engine is None:
      engine = engine_choice.make_engine(
          kind, model_fn=self._model_fn, config=self._config,
          params=self._params, warm_start_from=self._warm_start_from,
          temporary_model_dir=self._temporary_model_dir)
      self._engines[kind] = engine
    return engine

  def _run(self, work: Callable, *, checkpoint_path: Optional[str] = None,
           input_fn: Optional[Callable] = None, training: bool = False):
    """`work(engine)` in the engine engine_choice.choose_engine names; with
    none named yet (nothing written), the model_fn's first call decides
    (`_run_first`, engine_choice.py's rule 3). In `_work_context()`."""
    with self._work_context():
      return self._run_in_engine(work, checkpoint_path=checkpoint_path,
                                 input_fn=input_fn, training=training)

  def _run_in_engine(self, work: Callable, *,
                     checkpoint_path: Optional[str],
                     input_fn: Optional[Callable], training: bool):
    """`_run`'s work, in its context."""
    kind = self._kind or engine_choice.choose_engine(
        config=self._config, model_dir=self.model_dir,
        checkpoint_path=checkpoint_path)
    if kind is None and not tf.executing_eagerly():
      # The program called tf.compat.v1.disable_eager_execution(): only a
      # graph can run its model_fn, as with tf.estimator.
      kind = self._kind = engine_choice.GRAPH
    if kind is None:
      return self._run_first(work, input_fn=input_fn, training=training)
    self._last_kind = kind
    try:
      return work(self._engine_of(kind))
    except GraphModelFnError as e:
      if e.eager_error is not None:
        # The engine is settled: this is the model_fn's own failure.
        raise e.eager_error from e.__cause__
      if kind == engine_choice.EAGER and self._config.engine == 'auto':
        raise UserInputError(
            f'model_dir {self.model_dir!r} holds checkpoints of a TF2 '
            'model_fn (written by the eager engine), but this model_fn is '
            f'TF1-style ({e.reason}) and runs in the graph engine, whose '
            'checkpoints are name-based. Train it in a new model_dir.'
        ) from e
      raise

  def _run_first(self, work: Callable, *, input_fn: Optional[Callable],
                 training: bool):
    """`work(engine)` for a model_fn whose engine nothing written names
    (engine_choice.py's rule 3): the model_fn's first call is the graph
    engine's build, as tf.estimator's always was, and what it returns
    decides. The eager engine's build call decides instead where the graph
    engine cannot run the RunConfig, where the model_fn holds Keras 3
    objects made outside it (a graph would build their weights), or where it
    warm-starts from the eager engine's checkpoint.

    Args:
      work: what to do, given an engine.
      input_fn: the input of `work`, if it trains.
      training: `work` trains: a TRAIN-mode spec settles the engine for
        good (an EVAL or PREDICT one without TF2-only fields runs in either).
    """
    name = user_fns.fn_name(self._model_fn)
    why_eager = (self._engine_of(engine_choice.GRAPH).unsupported() or
                 engine_choice.keras3_state_reason(self._model_fn) or
                 engine_choice.eager_warm_start_reason(self._warm_start_from))
    if why_eager is not None:
      return self._run_eager_first(work, input_fn=input_fn)
    self._last_kind = engine_choice.GRAPH
    try:
      result = work(self._engine_of(engine_choice.GRAPH))
    except EagerModelFnError as e:
      logging.info('model_fn %s is a TF2 model_fn (%s): running it in the '
                   'eager engine.', name, e.reason)
      self._kind = self._last_kind = engine_choice.EAGER
      return work(self._engine_of(engine_choice.EAGER))
    except UserInputError as graph_error:
      if not isinstance(graph_error, (ModelFnError, InputFnError)):
        raise
      # It fails in a graph: a TF2 model_fn (or input_fn) that only runs
      # eagerly (it reads a tensor's value, or wants the InputContext the
      # eager engine gives), or a broken one.
      result = self._run_eager_after(work, graph_error)
      logging.info('model_fn %s does not build in a graph (%s): running it '
                   'in the eager engine.', name, graph_error)
      self._kind = engine_choice.EAGER
      return result
    if training:
      self._settle_in_graph()
    return result

  def _settle_in_graph(self) -> None:
    """The model_fn's TRAIN-mode call built the graph engine's graph (which
    said so in its log line): that is its engine from now on."""
    self._kind = engine_choice.GRAPH

  def _run_eager_after(self, work: Callable, graph_error: UserInputError):
    """`work` in the eager engine, after the graph engine's build raised
    `graph_error`; where the eager call shows the model_fn is TF1-style (or
    fails as it did in the graph), the graph's error is the one reported,
    with the shapes of the batch the eager call saw."""
    self._last_kind = engine_choice.EAGER
    try:
      return work(self._engine_of(engine_choice.EAGER))
    except GraphModelFnError as eager_error:
      if eager_error.first_batch is not None and (
          type(graph_error) is ModelFnError):
        raise ModelFnError(
            f'{graph_error} (on its first batch: {eager_error.first_batch})'
        ) from graph_error
      raise graph_error from graph_error.__cause__
    except InputFnError:
      if isinstance(graph_error, InputFnError):
        raise graph_error from graph_error.__cause__
      raise

  def _run_eager_first(self, work: Callable, *, input_fn: Optional[Callable]):
    """Rule 3 where the graph engine cannot run the RunConfig: the eager
    engine's build call decides, and a model_fn that does not run eagerly
    goes to the graph engine (which then refuses the RunConfig in its
    words)."""
    kind = None
    if input_fn is not None and self._config.role.asks_model_fn_first:
      kind = self._probe(input_fn)
    self._last_kind = kind or engine_choice.EAGER
    try:
      return work(self._engine_of(kind or engine_choice.EAGER))
    except GraphModelFnError as e:
      if kind is not None:
        raise
      logging.info('model_fn %s does not run eagerly (%s): running it in the '
                   'graph engine.', user_fns.fn_name(self._model_fn), e.reason)
      self._kind = self._last_kind = engine_choice.GRAPH
      return work(self._engine_of(engine_choice.GRAPH))

  def _probe(self, input_fn: Callable) -> str:
    """Rule 3 of engine_choice.py asked outside any strategy (see
    role.asks_model_fn_first): the engine, remembered."""
    reason = engine_choice.graph_reason(
        model_fn=self._model_fn, input_fn=input_fn, params=self._params,
        config=self._config)
    self._kind = engine_choice.GRAPH if reason else engine_choice.EAGER
    if reason:
      logging.info('model_fn %s is TF1-style (%s): running it in the graph '
                   'engine.', user_fns.fn_name(self._model_fn), reason)
    return self._kind

  @property
  def chosen_engine(self) -> Optional[str]:
    """The engine (engine_choice.EAGER or engine_choice.GRAPH) the last call ran in,
    None before the first."""
    return self._last_kind

  def training_engine(self, input_fn: Callable) -> str:
    """Which engine trains this model_fn on `input_fn`: engine_choice.EAGER or
    engine_choice.GRAPH, by engine_choice.py's rule. When nothing written
    tells, the graph engine builds the training of `input_fn` (the
    model_fn's TRAIN-mode call tf.estimator made in every training task)
    and keeps it for `train`; or, where rule 3 asks the eager engine first,
    the model_fn is called once eagerly on the input's first element.
    Nothing is written. A cluster task's role depends on it."""
    kind = self._kind or engine_choice.choose_engine(config=self._config,
                                                     model_dir=self.model_dir)
    if kind is not None:
      return kind
    if (self._engine_of(engine_choice.GRAPH).unsupported() or
        engine_choice.keras3_state_reason(self._model_fn)):
      return self._probe(input_fn)
    try:
      self._engine_of(engine_choice.GRAPH).prepare_training(input_fn)
    except EagerModelFnError as e:
      logging.info('model_fn %s is a TF2 model_fn (%s): running it in the '
                   'eager engine.', user_fns.fn_name(self._model_fn), e.reason)
      self._kind = engine_choice.EAGER
    except (ModelFnError, InputFnError):
      # It fails in a graph: the eager call tells (see `_run_first`).
      return self._probe(input_fn)
    else:
      self._settle_in_graph()
    return self._kind

  @property
  def model_dir(self) -> str:
    return self._config.model_dir

  @property
  def config(self) -> RunConfig:
    return self._config

  def with_model_fn(self, model_fn: Callable) -> 'Estimator':
    """A new Estimator of `model_fn` with this one's model_dir, config,
    params and warm start (what tf.estimator's add_metrics made)."""
    return Estimator(model_fn, model_dir=self.model_dir, config=self._config,
                     params=self._params,
                     warm_start_from=self._warm_start_from)

  @property
  def params(self) -> Dict[str, Any]:
    return (dict(self._params) if isinstance(self._params, dict) else
            self._params)

  @property
  def model_fn(self) -> Callable:
    """The model_fn bound to `params`, as tf.estimator 2.15 returned it:
    `model_fn(features, labels, mode, config)`, whichever of these the
    given model_fn declares."""
    model_fn, params = self._model_fn, self.params

    def public_model_fn(features, labels, mode, config):
      return user_fns.call_model_fn(model_fn, features, labels, mode, params,
                                    config)

    # Errors name the user's function (user_fns.fn_name), not this one; no
    # __wrapped__, which would give it the user's signature.
    for name in ('__module__', '__qualname__', '__name__'):
      if isinstance(getattr(model_fn, name, None), str):
        setattr(public_model_fn, name, getattr(model_fn, name))
    return public_model_fn

  def latest_checkpoint(self) -> Optional[str]:
    """Path of the newest usable checkpoint in model_dir, or None.

    Usable means every tensor reads back and is finite (see
    checkpoints.problem_with); newer checkpoints that are not are skipped
    with a warning, whatever the `checkpoint` state file says.

    Raises:
      UnusableCheckpointsError: model_dir holds checkpoints but none is
        usable.
    """
    return checkpoints.latest_checkpoint(self.model_dir)

  @property
  def train_strategy(self) -> tf.distribute.Strategy:
    """The strategy TF2 model_fns train under (a standalone client connects
    to its servers first)."""
    return self._engine_of(engine_choice.EAGER).train_strategy

  @property
  def eval_strategy(self) -> tf.distribute.Strategy:
    """The strategy TF2 model_fns evaluate and predict under."""
    return self._engine_of(engine_choice.EAGER).eval_strategy

  # -------------------------------------------------------------- train
  def train(self, input_fn: Callable,
            hooks: Optional[Sequence[Any]] = None,
            steps: Optional[int] = None, max_steps: Optional[int] = None,
            saving_listeners: Optional[Sequence[Callable]] = None
            ) -> 'Estimator':
    """Trains up to `max_steps`, or `steps` more steps, or until input ends.

    A model_dir whose latest checkpoint is already at or past `max_steps`
    trains 0 steps and returns. A checkpoint is saved at the end.

    Args:
      input_fn: `input_fn(params, input_context)` returning a dataset.
      hooks: estimator_rt Hooks or callables, run between training loops;
        `tf.compat.v1.train.SessionRunHook`s, run around every step in the
        graph engine (the eager engine runs StopAtStepHook, NanTensorHook
        and StepCounterHook as runtime hooks and refuses others).
      steps: train this many more steps. Exclusive with `max_steps`.
      max_steps: train up to this global step.
      saving_listeners: `fn(checkpoint_path, global_step)` after each save.

    Returns:
      self, for chaining.

    Raises:
      UserInputError: bad arguments, model_fn or input_fn results, or an
        incompatible checkpoint in model_dir; nothing is written then.
      UnusableCheckpointsError: model_dir holds checkpoints and none of
        them restores (a UserInputError: nothing is written).
      NanLossError: a loss or a variable became NaN or infinite; nothing
        is saved from that state, so the newest checkpoint is the last
        finite one.
      CheckpointSaveError: a save failed (disk full, permissions); the
        checkpoints saved before are intact.
      PreemptedError: SIGTERM or SIGINT arrived; a checkpoint was saved at
        the end of the loop in flight (see preemption.py).
    """
    # A float or NumPy count as 2.15 ran it: `steps=200 / 16` trained 13.
    steps, max_steps = as_count(steps), as_count(max_steps)
    check_positive_count('train: steps', steps,
                         phrase='Must specify steps > 0')
    check_positive_count('train: max_steps', max_steps,
                         phrase='Must specify max_steps > 0')
    if steps is not None and max_steps is not None:
      raise UserInputError(
          f'Can not provide both steps and max_steps (train: steps={steps}, '
          f'max_steps={max_steps}); give one.')
    # A stop signal from here on is a request honoured at the end of the
    # first loop, not an exit at once, also while the model and its loop are
    # built (in either engine): synchronous workers are signalled one after
    # another, and one still building when its signal comes must not leave
    # the others stranded in a collective; at a loop end they agree to save
    # and stop together.
    task_type = self._config.task_type
    if task_type in ('evaluator', 'ps'):
      # 2.15's phrase first: such a task never trains itself.
      raise UserInputError(
          'Train has been called wrong configuration: config.task_type='
          f'{task_type!r} (from TF_CONFIG) names a task that does not train '
          '(an evaluator evaluates, a ps serves variables); call '
          'tf.estimator.train_and_evaluate, which runs each task\'s part.')
    hooks = hooks_lib.check_hooks(hooks)
    saving_listeners = hooks_lib.check_saving_listeners(saving_listeners)
    hooks_lib.check_listeners_have_saves(saving_listeners, hooks,
                                         self._config)
    # The one check `evaluation_checked_in_training` asked for, if any.
    check, self._evaluation_check = getattr(self, '_evaluation_check',
                                            None), None
    with preemption.training():
      self._run(lambda engine: engine.train(
          input_fn, hooks=hooks, steps=steps,
          max_steps=max_steps,
          saving_listeners=saving_listeners,
          before_writing=check and functools.partial(check, engine)),
                input_fn=input_fn, training=True)
    return self

  # ----------------------------------------------------------- evaluate
  @contextlib.contextmanager
  def evaluation_checked_in_training(self, input_fn: Callable, *,
                                     steps: Optional[int] = None,
                                     name: Optional[str] = None,
                                     hooks: Optional[Sequence[Any]] = None
                                     ) -> Iterator[None]:
    """Within: the next `train` builds the evaluation of `input_fn` (without
    running it) once its own training is built, in the engine that trains,
    before it writes anything to model_dir.

    train_and_evaluate trains within it, so that an eval input_fn or an
    EVAL-mode model_fn that fails does so before anything is written, and
    the evaluation is built once, in the engine that runs it (the graph is
    kept for the evaluations that follow). Built before the training, a
    TF2 model_fn's evaluation was built in the graph engine first and
    thrown away when the TRAIN-mode call chose the eager engine; built
    after it, the model_fn is called in TRAIN mode first, as tf.estimator
    2.15's train_and_evaluate called it. A `train` that has no steps to run
    builds nothing (its evaluation of the newest checkpoint follows).
    Nothing is checked for a subclass from outside estimator_rt that
    overrides `evaluate` (a library's): the check could not set up what
    its `evaluate` sets up around the evaluation (the params, the model_fn
    or the state it changes), so it could refuse, or build for the first
    evaluation, what that `evaluate` never would; each evaluation is its
    `evaluate`'s, as in 2.15, which had no such check.

    Raises:
      UserInputError: what `evaluate` would raise for these arguments.
    """
    if overrides.defined_outside_runtime(self, 'evaluate'):
      yield
      return
    steps = as_count(steps, cap=MAX_INT32)
    hooks = hooks_lib.check_hooks(hooks)
    self._evaluation_check = lambda engine: self._check_evaluation_in(
        engine, input_fn, steps=steps, name=name, hooks=hooks)
    try:
      yield
    finally:
      self._evaluation_check = None

  def _check_evaluation_in(self, engine, input_fn: Callable, **kwargs
                           ) -> None:
    """`engine.check_evaluation(input_fn, **kwargs)`, as `evaluate` would
    build that evaluation (TPUEstimator: with its eval batch size)."""
    engine.check_evaluation(input_fn, **kwargs)

  def evaluate(self, input_fn: Callable, steps: Optional[int] = None,
               hooks: Optional[Sequence[Any]] = None,
               checkpoint_path: Optional[str] = None,
               name: Optional[str] = None) -> Dict[str, Any]:
    """Evaluates a checkpoint on `steps` batches (or until input ends).

    Metrics are reset before and reduced across replicas after the
    evaluation, and written as scalars to model_dir/eval (or eval_<name>)
    at the checkpoint's global step.

    Returns:
      A dict with 'loss' (mean over examples), each metric's result and
      'global_step'.
    """
    # 2.15 evaluated up to the next whole one.
    steps = as_count(steps, cap=MAX_INT32)
    check_positive_count('evaluate: steps', steps,
                         phrase='Must specify steps > 0', maximum=MAX_INT32)
    self.eval_dir(name)  # Refuses a name 2.15 could not join to 'eval_'.
    hooks = hooks_lib.check_hooks(hooks)
    start = time.time()
    tf_log.info('Starting evaluation at %s',
                time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime()))
    results = self._run(lambda engine: engine.evaluate(
        input_fn, steps=steps, hooks=hooks,
        checkpoint_path=checkpoint_path,
        name=name), checkpoint_path=checkpoint_path)
    tf_log.info('Inference Time : %.5fs', time.time() - start)
    tf_log.info('Finished evaluation at %s',
                time.strftime('%Y-%m-%d-%H:%M:%S', time.localtime()))
    return results

  # ------------------------------------------------------------ predict
  def predict(self, input_fn: Callable,
              predict_keys: Optional[Sequence[str]] = None,
              hooks: Optional[Sequence[Any]] = None,
              checkpoint_path: Optional[str] = None,
              yield_single_examples: bool = True, *,
              refuse_endless_input: bool = False) -> Iterator[Any]:
    """Yields predictions for every example (or batch) of `input_fn`.

    Labels in the input are ignored. With `yield_single_examples`, yields
    one dict per example (or one array if the model_fn returned a single
    tensor); otherwise one per batch. An input that repeats forever yields
    forever, as tf.estimator's did (code takes what it needs:
    `next(predict(...))`, `itertools.islice`).

    Args:
      refuse_endless_input: refuse an input that repeats forever instead
        (UserInputError), as the binary's predict mode does: it prints
        every prediction.
    """
    hooks = hooks_lib.check_hooks(hooks)
    return self._predictions(lambda engine: engine.predict(
        input_fn, predict_keys=predict_keys, hooks=hooks,
        checkpoint_path=checkpoint_path,
        yield_single_examples=yield_single_examples,
        refuse_endless_input=refuse_endless_input),
                             checkpoint_path=checkpoint_path)

  def _predictions(self, predict: Callable, *,
                   checkpoint_path: Optional[str]) -> Iterator[Any]:
    """The predictions `predict(engine)` (an engine's generator) yields, in
    the engine `_run` picks, from the first next() on (as tf.estimator's
    predict ran). The first prediction is made inside `_run`, so that a
    model_fn that turns out TF1-style there goes to the graph engine, as
    in train and evaluate (with no checkpoint in model_dir, or only an
    object-based one of another layout, no engine is named before)."""
    first = []

    def started(engine):
      predictions = predict(engine)
      first.extend(itertools.islice(predictions, 1))
      return predictions

    predictions = self._run(started, checkpoint_path=checkpoint_path)
    yield from first
    try:
      while True:
        # Each prediction in `_work_context()`, and only while it is made:
        # the caller's code between two of them runs in its own context.
        with self._work_context():
          prediction = next(predictions, _END)
        if prediction is _END:
          return
        yield prediction
    finally:
      close = getattr(predictions, 'close', None)
      if close is not None:
        close()

  # ------------------------------------------------------------- export
  def export_saved_model(self, export_dir_base: str,
                         serving_input_receiver_fn: Optional[Callable] = None,
                         assets_extra: Optional[Dict[str, str]] = None,
                         as_text: bool = False,
                         checkpoint_path: Optional[str] = None,
                         experimental_mode: str = ModeKeys.PREDICT, *,
                         input_fn: Optional[Callable] = None) -> bytes:
    """Exports the graph of one mode (PREDICT by default) as a SavedModel.

    For PREDICT, the signature's inputs come from
    `serving_input_receiver_fn` (returning a `ServingInputReceiver`); if
    None, from the features of `input_fn`'s dataset, or of the last
    dataset this Estimator trained or evaluated on, with the batch
    dimension left open. TRAIN and EVAL (`experimental_mode`) are
    `experimental_export_all_saved_models` of that mode alone.

    Args:
      export_dir_base: the export goes to `<export_dir_base>/<unix time>`.
      serving_input_receiver_fn: see above (required for TRAIN and EVAL: a
        receiver of features and labels, e.g.
        `build_raw_supervised_input_receiver_fn`).
      assets_extra: {destination path under `assets.extra/`: source file},
        copied into the export, as tf.estimator did.
      as_text: also write `saved_model.pbtxt` beside `saved_model.pb`.
      checkpoint_path: the checkpoint to export (default: the newest).
      experimental_mode: the `ModeKeys` value of the graph to export.
      input_fn: this project's: the features to infer the inputs from.

    Returns:
      The export directory, `<export_dir_base>/<unix time>`, as bytes, as
      tf.estimator returned it (programs `.decode()` it).
    """
    if experimental_mode != ModeKeys.PREDICT:
      if not serving_input_receiver_fn:
        # 2.15's phrase: only PREDICT's inputs can be inferred here.
        raise UserInputError(
            'An input_receiver_fn must be defined: export_saved_model('
            f'experimental_mode={experimental_mode!r}) needs a receiver of '
            'features and labels (tf.estimator.experimental.'
            'build_raw_supervised_input_receiver_fn).')
      return self.experimental_export_all_saved_models(
          export_dir_base, {experimental_mode: serving_input_receiver_fn},
          assets_extra=assets_extra, as_text=as_text,
          checkpoint_path=checkpoint_path)
    checkpoint_path = self._export_checkpoint(checkpoint_path)
    export_dir = self._run(lambda engine: engine.export_saved_model(
        export_dir_base, serving_input_receiver_fn=serving_input_receiver_fn,
        checkpoint_path=checkpoint_path, input_fn=input_fn,
        initialization_is_trained=self._initialization_is_trained),
                           checkpoint_path=checkpoint_path)
    export_lib.add_extras(export_dir, assets_extra=assets_extra,
                          as_text=as_text)
    return tf.compat.as_bytes(export_dir)

  def _export_checkpoint(self, checkpoint_path: Optional[str]
                         ) -> Optional[str]:
    """The checkpoint an export names: `checkpoint_path`, else, for a
    subclass that overrides `latest_checkpoint` (2.15 allowed it, and
    exported what it returns: SavedModelEstimator's falls back on its
    SavedModel's variables), what that returns; else None (the engine
    takes model_dir's newest, or warm_start_from's)."""
    if checkpoint_path or (type(self).latest_checkpoint is
                           Estimator.latest_checkpoint):
      return checkpoint_path
    return self.latest_checkpoint()

  def export_savedmodel(self, export_dir_base: str,
                        serving_input_receiver_fn: Callable,
                        assets_extra: Optional[Dict[str, str]] = None,
                        as_text: bool = False,
                        checkpoint_path: Optional[str] = None,
                        strip_default_attrs: bool = False) -> bytes:
    """tf.estimator's deprecated name of `export_saved_model`."""
    del strip_default_attrs  # TF2 SavedModels never hold default attrs.
    return self.export_saved_model(
        export_dir_base, serving_input_receiver_fn, assets_extra=assets_extra,
        as_text=as_text, checkpoint_path=checkpoint_path)

  def experimental_export_all_saved_models(
      self, export_dir_base: str, input_receiver_fn_map: Dict[str, Callable],
      assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
      checkpoint_path: Optional[str] = None) -> bytes:
    """Exports one SavedModel with a MetaGraph per mode of
    `input_receiver_fn_map`, as tf.estimator 2.15 did.

    Each mode's graph is built afresh from its receiver fn (TRAIN and EVAL:
    a receiver of features and labels, such as
    `build_raw_supervised_input_receiver_fn` or
    `build_supervised_input_receiver_fn_from_input_fn` make; PREDICT: a
    serving receiver) and the model_fn in that mode, with the variables of
    the checkpoint, and tagged 'train', 'eval' or 'serve'. The variables
    are saved once. TRAIN's and EVAL's signature ('train', 'eval') returns
    the loss, the predictions and the metrics, and TRAIN's MetaGraph keeps
    the train op: `SavedModelEstimator` trains and evaluates from them (see
    graph/saved_model.py). TF1-style model_fns only (graph engine); a TF2
    model_fn exports PREDICT.

    Args:
      export_dir_base: the export goes to `<export_dir_base>/<unix time>`.
      input_receiver_fn_map: {ModeKeys value: its input receiver fn}.
      assets_extra, as_text, checkpoint_path: as for `export_saved_model`.

    Returns:
      The export directory, as bytes (as for `export_saved_model`).

    Raises:
      UserInputError: (a ValueError) the map has no mode with a receiver
        fn (2.15's phrase), or a key that is not a mode (2.15 skipped
        such keys in silence; a misspelt mode is refused here), or TRAIN
        or EVAL for a TF2 model_fn.
    """
    if not isinstance(input_receiver_fn_map, dict):
      raise UserInputError(
          'experimental_export_all_saved_models: input_receiver_fn_map must '
          'be a dict of ModeKeys value -> input receiver fn, got '
          f'{shorten(input_receiver_fn_map)}.')
    unknown = sorted(map(str, set(input_receiver_fn_map) - set(
        (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT))))
    if unknown:
      raise UserInputError(
          f'experimental_export_all_saved_models: input_receiver_fn_map has '
          f'keys {unknown} that are not modes; its keys are '
          f'{ModeKeys.TRAIN!r}, {ModeKeys.EVAL!r} and {ModeKeys.PREDICT!r}.')
    receiver_fn_map = {mode: fn for mode, fn in input_receiver_fn_map.items()
                       if fn}
    if not receiver_fn_map:
      raise UserInputError(
          'No valid modes for exporting found. Got '
          f'{list(input_receiver_fn_map)}: give an input receiver fn for '
          'one mode at least.')
    checkpoint_path = self._export_checkpoint(checkpoint_path)
    export_dir = self._run(lambda engine: engine.export_saved_models(
        export_dir_base, receiver_fn_map=receiver_fn_map,
        checkpoint_path=checkpoint_path,
        initialization_is_trained=self._initialization_is_trained),
                           checkpoint_path=checkpoint_path)
    export_lib.add_extras(export_dir, assets_extra=assets_extra,
                          as_text=as_text)
    return tf.compat.as_bytes(export_dir)

  def eval_dir(self, name: Optional[str] = None) -> str:
    """Where evaluation `name` writes its summaries (model_dir/eval or
    eval_<name>)."""
    return summaries.eval_dir(self.model_dir, name)

  # ---------------------------------------------------------- variables
  def get_variable_names(self) -> List[str]:
    """Names of the variables in model_dir's latest checkpoint.

    For a graph-engine model_dir these are the graph's variable names
    (`dense/kernel`), as tf.estimator returned them; for an eager-engine
    one, the model variables' names as the model_fn created them.
    """
    return sorted(engine_choice.checkpoint_variables(self._latest_or_fail()))

  def get_variable_value(self, name: str) -> np.ndarray:
    """The value of variable `name` in model_dir's latest checkpoint
    (`name` may be its tensor name, `name:0`).

    Raises:
      UserInputError: no checkpoint yet, or no variable of that name (the
        message lists the names there are).
    """
    values = engine_choice.checkpoint_variables(self._latest_or_fail())
    if name not in values and name.endswith(':0') and name[:-2] in values:
      # A variable's tensor name (`optimizer.iterations.name`), which
      # tf.estimator 2.15 took too (tf.train.load_variable drops the ':0').
      name = name[:-2]
    if name not in values:
      # 2.15's words and class (the checkpoint reader's NotFoundError).
      raise tf_errors.with_tf_class(UserInputError, tf.errors.NotFoundError)(
          f'Key {name} not found in checkpoint: get_variable_value: '
          f'name={name!r} is not a variable of the latest checkpoint; it has '
          f'{sorted(values)}.')
    return values[name]()

  def _latest_or_fail(self) -> str:
    latest = self.latest_checkpoint()
    if latest is None:
      raise UserInputError(
          # 2.15's words first.
          f'Could not find trained model in model_dir: {self.model_dir}. '
          'It has no checkpoint yet; train first.')
    return latest
