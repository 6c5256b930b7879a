"""`Engine`: the interface both engines implement, and the policy they share.

An engine carries out `Estimator`'s train, evaluate, predict and export for
one way of running a model_fn: the eager engine (`eager/engine.py`) calls
a TF2 model_fn eagerly once and runs it in compiled loops; the graph engine
(`graph/engine.py`) builds a TF1-style model_fn into a `tf.Graph` that a
monitored session runs, as tf.estimator did. `engine_choice.py` says which
one runs a model_fn.

Training is written once, here (`Engine.train`): choose the checkpoint to
resume from, skip a finished model_dir, let the engine build everything
that can refuse (`_build_training`), only then write model_dir, and hand the
engine's inner loop to a `controller.TrainController`, which owns every
policy between loops (saves, summaries, logging, hooks, divergence,
preemption, agreement between synchronous workers). The engines differ in
their inner loop, their variables, placement and checkpoint format, never
in a policy.
"""

import abc
import dataclasses
import contextlib
import os
import tempfile
from typing import (Any, Callable, ContextManager, Dict, Iterable, Iterator,
                    List, Optional, Sequence, Tuple)

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.training import controller as controller_lib
from estimator_rt.export import saved_model as export_lib
from estimator_rt.training import hooks as hooks_lib
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.inputs import release
from estimator_rt.cluster import preemption
from estimator_rt.core import summaries
from estimator_rt.core import tf_log
from estimator_rt.core import user_fns
from estimator_rt.core.errors import as_count
from estimator_rt.core.errors import UserInputError
from estimator_rt.cluster.run_config import RunConfig

SessionRunHook = tf.compat.v1.train.SessionRunHook


@dataclasses.dataclass
class TrainingSetup:
  """What an engine built for training, before anything was written.

  Attributes:
    train_loop: the inner loop (see `controller.TrainLoop`).
    iterator: what `train_loop` consumes (None when it reads its input
      itself).
    checkpoint: what a save writes: an object with `write(prefix, options)`
      (a `tf.train.Checkpoint`, or the graph engine's Saver on its session).
    global_step: returns the global step, once `session` is open.
    max_to_keep: how many checkpoints to keep (0: all).
    agree: for synchronous workers, the per-loop agreement
      (`controller.agreement`); None when this process decides alone.
    io_device: the device checkpoint files are written from (None: the
      variables' own).
    session: opened around the whole of training (the graph engine's
      monitored session); closed after, also on errors.
    hooks: runtime hooks the engine adds (what stands in for SessionRunHooks
      it cannot run in a session).
    asynchronous: other tasks move the global step between this task's
      loops (see controller.TrainController).
    model_writes_loss: the model_fn's summaries, which the engine writes,
      hold a `loss` summary (see controller.TrainController).
    logs_updated_step: the global step is a reference variable (TF1
      behaviour): see controller.TrainController.
    raw_session: returns the training session a CheckpointSaverListener
      is given (2.15's), or None (the eager engine has none).
    saver_hook: a `tf.compat.v1.train.CheckpointSaverHook` among the
      SessionRunHooks the session runs (train's `hooks`, the model_fn's
      training hooks), or None. It saves, and the runtime does not: 2.15's
      Estimator made its own CheckpointSaverHook only when none was given,
      and gave the first one the saving listeners.
    input_let_go: once training ended normally, `iterator` ends on a
      thread of its own (inputs/release.py), not on the caller's.
    loop_beside: runs `train_loop` beside work of this thread (see
      controller.TrainController), or None.
  """

  train_loop: controller_lib.TrainLoop
  iterator: Any
  checkpoint: Any
  global_step: Callable[[], int]
  max_to_keep: int
  agree: Optional[Callable[[controller_lib.Decisions],
                           controller_lib.Decisions]] = None
  io_device: Optional[str] = None
  session: Callable[[], ContextManager] = contextlib.nullcontext
  hooks: List[hooks_lib.Hook] = dataclasses.field(default_factory=list)
  asynchronous: bool = False
  model_writes_loss: bool = False
  logs_updated_step: bool = False
  saver_hook: Any = None
  raw_session: Callable[[], Any] = lambda: None
  input_let_go: bool = False
  loop_beside: Optional[Callable[..., Any]] = None


def _listen_to_saver_hook(saver_hook, saving_listeners: Sequence[Any]
                          ) -> Sequence[Any]:
  """Gives a program's CheckpointSaverHook `saver_hook` (see
  `TrainingSetup`) the CheckpointSaverListeners among `saving_listeners`,
  as 2.15 did; returns the listeners left for the runtime's saves."""
  if saver_hook is None:
    return saving_listeners
  left = []
  for listener in saving_listeners:
    if isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
      if listener not in saver_hook._listeners:  # pylint: disable=protected-access
        saver_hook._listeners.append(listener)  # pylint: disable=protected-access
    else:
      left.append(listener)
  return left


def split_hooks(hooks: Iterable[Any]
                ) -> Tuple[List[hooks_lib.Hook], List[SessionRunHook]]:
  """(runtime hooks, SessionRunHooks) of a `hooks=` argument: the first run
  between loops (the controller), the second in a session. A SessionRunHook
  with an `as_runtime_hook()` method (tf.estimator 2.15's early stopping
  hooks, compat/served/early_stopping.py) runs as the runtime hook it
  returns (none if None), in either engine."""
  runtime, session = [], []
  for hook in hooks:
    if isinstance(hook, SessionRunHook) and hasattr(hook, 'as_runtime_hook'):
      replacement = hook.as_runtime_hook()
      if replacement is not None:
        runtime.append(hooks_lib.as_hook(replacement))
    elif isinstance(hook, SessionRunHook):
      session.append(hook)
    else:
      runtime.append(hooks_lib.as_hook(hook))
  return runtime, session


def refuse_endless(infinite: bool, *, what: str,
                   steps: Optional[int] = None) -> None:
  """Refuses an input that repeats forever where it would never end
  (`what`: 'evaluate' or 'predict'; evaluate with `steps` is bounded)."""
  if infinite and steps is None:
    raise UserInputError(
        f'{what}: the input_fn repeats forever'
        f'{" and steps=None" if what == "evaluate" else ""}, so it would '
        'never end; ' + ('pass steps, stop repeating, or give a hook that '
                         'requests a stop.' if what == 'evaluate' else
                         'return a finite dataset.'))


def check_predict_keys(predict_keys: Optional[Sequence[str]],
                       predicted: Iterable[str], *,
                       single: bool = False) -> Optional[List[str]]:
  """The keys to keep, or None for all, as tf.estimator 2.15 chose them:
  keys the model_fn does not predict are dropped while one it predicts is
  asked for (a program may ask every model for one list of keys); none it
  predicts, or any keys when it predicts a single tensor (`single`), is an
  error.

  The messages start with tf.estimator 2.15's phrases, which code matched.
  The dropped keys are named in one warning (2.15 dropped them in silence).
  """
  if not predict_keys:
    return None
  keys = list(predict_keys)
  if single:
    raise UserInputError(
        'predict_keys argument is not valid in case of non-dict predictions: '
        f'predict_keys={keys}, but the model_fn predicts a single tensor; '
        'pass predict_keys=None, or return a dict of predictions.')
  predicted = list(predicted)
  known = [key for key in keys if key in predicted]
  if not known:
    # 2.15 named the keys as `predictions.keys()` printed (dict_keys([...])).
    raise UserInputError(
        f'Expected to run at least one output from dict_keys({predicted}), '
        f'provided {keys}: predict_keys={keys} names none of the keys the '
        f'model_fn predicts ({sorted(predicted)}).')
  unknown = [key for key in keys if key not in predicted]
  if unknown:
    logging.warning('predict: predict_keys %s are not predicted by the '
                    'model_fn (it predicts %s); yielding the others, as '
                    'tf.estimator did.', unknown, sorted(predicted))
  return known


def yield_predictions(batches: Iterable[Dict[str, Any]], *, single: bool,
                      keys: Optional[List[str]],
                      yield_single_examples: bool) -> Iterator[Any]:
  """Prediction batches (dicts of arrays) as `Estimator.predict` yields
  them: per example or per batch, a dict, or the array alone when the
  model_fn predicted a single tensor."""
  for batch in batches:
    if keys:
      batch = {k: batch[k] for k in keys}
    if not yield_single_examples:
      yield batch['predictions'] if single else batch
      continue
    size = _batch_length(batch)
    for i in range(size):
      if single:
        yield batch['predictions'][i]
      else:
        yield {k: v[i] for k, v in batch.items()}


def _batch_length(batch: Dict[str, Any]) -> int:
  """The examples in a predictions batch, which every key must agree on to
  be split into examples (the message starts with 2.15's phrase)."""
  lengths = {key: len(value) for key, value in batch.items()}
  if len(set(lengths.values())) > 1:
    raise UserInputError(
        'Batch length of predictions should be same: the predictions have '
        f'batch lengths {lengths}; return predictions of one batch size, or '
        'predict with yield_single_examples=False.')
  return next(iter(lengths.values()))


def _is_number(value) -> bool:
  if isinstance(value, (tuple, list, dict)):
    return False  # A structure of values (a metric of several tensors).
  return np.ndim(value) == 0 and np.asarray(value).dtype.kind in 'biuf'


def _remove_if_empty(directory: str) -> None:
  if tf.io.gfile.isdir(directory) and not tf.io.gfile.listdir(directory):
    tf.io.gfile.rmtree(directory)


class Engine(abc.ABC):
  """Trains, evaluates, predicts with and exports one model_fn.

  The semantics are `Estimator`'s (see there). Subclasses implement
  `_build_training` (everything training needs, built and checked before
  anything is written) and the other modes.

  Args:
    model_fn: the user's model_fn (already checked).
    config: the Estimator's RunConfig, `model_dir` set.
    params: the params dict.
    warm_start_from: a warm_starting.WarmStartSettings, or None.
    temporary_model_dir: model_dir was made up (create it 0700).
  """

  def __init__(self, *, model_fn: Callable, config: RunConfig,
               params: Dict[str, Any], warm_start_from: Optional[Any],
               temporary_model_dir: bool):
    self._model_fn = model_fn
    self._config = config
    self._params = params
    self._warm_start_from = warm_start_from
    self._temporary_model_dir = temporary_model_dir
    # The features of the last input trained or evaluated on: what an
    # export infers its serving inputs from.
    self._features_spec = None

  @property
  def model_dir(self) -> str:
    return self._config.model_dir

  def _remember_features(self, element_spec) -> None:
    self._features_spec, _ = inputs.split_element(element_spec)

  # -------------------------------------------------------------- train
  @abc.abstractmethod
  def _build_training(self, input_fn: Callable, *, latest: Optional[str],
                      session_hooks: Sequence[SessionRunHook],
                      summary_writer: Optional[summaries.ScalarWriter]
                      ) -> TrainingSetup:
    """Builds training of `input_fn`, restored from checkpoint `latest` (or
    warm-started), and checks everything that can be refused (the inner
    loop is traced, if it is compiled) without writing anything.

    Args:
      latest: the checkpoint to resume from, or None.
      session_hooks: SessionRunHooks given to `train`.
      summary_writer: the writer of training scalars (None on a task that
        does not write), for what the engine writes itself.
    """

  def train(self, input_fn: Callable, *, hooks: Sequence[Any] = (),
            steps: Optional[int] = None, max_steps: Optional[int] = None,
            saving_listeners: Sequence[Callable] = (),
            before_writing: Optional[Callable[[], None]] = None) -> None:
    """See `Estimator.train`. `before_writing`, if given, is called once
    the training is built, before anything is written to model_dir (what
    it raises ends the call with nothing written); not when there is no
    training to run."""
    # The newest checkpoint that restores; newer damaged or non-finite ones
    # are skipped (never trained over from step 0), and if there are only
    # such, this refuses before anything is written.
    choice = checkpoints.choose_checkpoint(self.model_dir)
    start_step = (checkpoints.checkpoint_step(choice.path)
                  if choice.path else 0)
    if max_steps is not None and start_step >= max_steps:
      logging.info('Skipping training: checkpoint %s is already at step %d '
                   '>= max_steps=%d.', choice.path, start_step, max_steps)
      tf_log.info('Skipping training since max_steps has already saved.')
      return
    runtime_hooks, session_hooks = split_hooks(hooks)
    is_chief = self._config.is_chief
    if is_chief:
      # Where 2.15's first write failed (the model_dir is only written by
      # training and evaluation: predicting from a read-only one works).
      checkpoints.ensure_writable_dir(self.model_dir)
    writer = summaries.directory_writer(self.model_dir) if is_chief else None
    setup = self._build_training(input_fn, latest=choice.path,
                                 session_hooks=session_hooks,
                                 summary_writer=writer)
    if before_writing is not None:
      before_writing()
    # Everything is built and checked: from here on model_dir is written.
    made_model_dir = not tf.io.gfile.exists(self.model_dir)
    directory = self._prepare_checkpoint_dir(choice, setup)
    trained = False
    try:
      final_step = self._run_controller(
          setup, directory=directory, hooks=runtime_hooks + setup.hooks,
          resumed_step=start_step if choice.path else None,
          writer=writer, max_steps=max_steps, steps=steps,
          saving_listeners=saving_listeners if is_chief else ())
      trained = True
    finally:
      if writer is not None:
        # Kept open for the next train() or a program's own summaries, as
        # 2.15's FileWriterCache kept it (see summaries.directory_writer).
        writer.flush()
        summaries.leave_in_file_writer_cache(self.model_dir)
      if directory is not None and directory != self.model_dir:
        tf.io.gfile.rmtree(directory)
      if not trained and made_model_dir and directory == self.model_dir:
        # A run that failed before it wrote anything (diverged before its
        # first save) leaves no empty model_dir behind.
        _remove_if_empty(self.model_dir)
    logging.info('Training ended at global step %d (started at %d).',
                 final_step, start_step)
    if setup.input_let_go:
      # `setup` holds the last reference (the controller is gone).
      box, setup.iterator = [setup.iterator], None
      release.let_go(box)

  def _prepare_checkpoint_dir(self, choice: checkpoints.Choice,
                              setup: TrainingSetup) -> Optional[str]:
    """Where this task saves: model_dir for the chief (created, cleared of
    what interrupted saves left, damaged checkpoints set aside); a scratch
    directory for another synchronous worker (saving is part of their
    collective protocol, and every worker must cut its loops at the same
    steps); None for a task that does not save (between-graph workers)."""
    if not self._config.is_chief:
      if setup.agree is None:
        return None
      return tempfile.mkdtemp(prefix='estimator_rt_worker_')
    if self._temporary_model_dir:
      os.makedirs(self.model_dir, mode=0o700, exist_ok=True)  # As mkdtemp.
    tf.io.gfile.makedirs(self.model_dir)
    checkpoints.remove_leftovers(self.model_dir)
    checkpoints.set_aside(choice.skipped, self.model_dir)
    return self.model_dir

  def _run_controller(self, setup: TrainingSetup, *, directory: Optional[str],
                      hooks: List[hooks_lib.Hook],
                      resumed_step: Optional[int],
                      writer: Optional[summaries.ScalarWriter],
                      max_steps: Optional[int], steps: Optional[int],
                      saving_listeners: Sequence[Callable]) -> int:
    """Runs the controller over the engine's inner loop; the final step.

    `resumed_step` is the step of the checkpoint training resumed from
    (None: none), where no second save is made. `steps` more steps count
    from the global step the session starts at, as 2.15's StopAtStepHook
    counted them: the restored checkpoint's, or what a Scaffold's init_fn
    set (SavedModelEstimator starts at its SavedModel's step)."""
    saving_listeners = _listen_to_saver_hook(setup.saver_hook,
                                             saving_listeners)
    with setup.session():
      if steps is not None:
        max_steps = setup.global_step() + steps
      saver = None
      if directory is not None and setup.saver_hook is None:
        saver = checkpoints.CheckpointSaver(
            checkpoint=setup.checkpoint, directory=directory,
            max_to_keep=setup.max_to_keep,
            every_steps=as_count(self._config.save_checkpoints_steps),
            every_secs=self._config.checkpoint_every_secs,
            last_saved_step=resumed_step,
            io_device=setup.io_device)
        tf_log.info('Create CheckpointSaverHook.')
      # The step log (2.15's lines and the runtime's own) is the
      # controller's, at its counting steps: no hook cuts loops for it.
      controller = controller_lib.TrainController(
          train_loop=setup.train_loop, iterator=setup.iterator,
          global_step=setup.global_step,
          steps_per_loop=self._config.steps_per_loop,
          hooks=hooks, saver=saver, summary_writer=writer,
          save_summary_steps=as_count(self._config.save_summary_steps),
          log_step_count_steps=as_count(self._config.log_step_count_steps),
          model_writes_loss=setup.model_writes_loss,
          saving_listeners=saving_listeners, agree=setup.agree,
          stop_signal=preemption.stop_requested,
          max_loop_secs=controller_lib.DEFAULT_MAX_LOOP_SECS,
          asynchronous=setup.asynchronous,
          logs_updated_step=setup.logs_updated_step,
          listener_session=setup.raw_session,
          loop_beside=setup.loop_beside)
      final_step = controller.run(max_steps=max_steps)
    # Once the session is closed (its hooks' `end` run), as 2.15 logged it.
    tf_log.info('Loss for final step: %s.', controller.last_loss)
    return final_step

  # ----------------------------------------------------- the other modes
  @abc.abstractmethod
  def check_evaluation(self, input_fn: Callable, *,
                       steps: Optional[int] = None,
                       name: Optional[str] = None,
                       hooks: Sequence[Any] = ()) -> None:
    """Builds the evaluation of `input_fn` without running it (see
    `Estimator.evaluation_checked_in_training`); raises what `evaluate`
    would raise for these arguments."""

  @abc.abstractmethod
  def evaluate(self, input_fn: Callable, *, steps: Optional[int] = None,
               hooks: Sequence[Any] = (),
               checkpoint_path: Optional[str] = None,
               name: Optional[str] = None) -> Dict[str, Any]:
    """See `Estimator.evaluate`."""

  @abc.abstractmethod
  def predict(self, input_fn: Callable, *,
              predict_keys: Optional[Sequence[str]] = None,
              hooks: Sequence[Any] = (),
              checkpoint_path: Optional[str] = None,
              yield_single_examples: bool = True,
              refuse_endless_input: bool = False) -> Iterator[Any]:
    """See `Estimator.predict`."""

  @abc.abstractmethod
  def export_saved_model(self, export_dir_base: str, *,
                         serving_input_receiver_fn: Optional[Callable] = None,
                         checkpoint_path: Optional[str] = None,
                         input_fn: Optional[Callable] = None,
                         initialization_is_trained: bool = False) -> str:
    """See `Estimator.export_saved_model`; `initialization_is_trained`: see
    `_checkpoint_to_export`."""

  @abc.abstractmethod
  def export_saved_models(self, export_dir_base: str, *,
                          receiver_fn_map: Dict[str, Callable],
                          checkpoint_path: Optional[str] = None,
                          initialization_is_trained: bool = False) -> str:
    """See `Estimator.experimental_export_all_saved_models`
    (`receiver_fn_map`: {ModeKeys value: its input receiver fn}, checked
    by the Estimator)."""

  def _checkpoint_to_export(self, checkpoint_path: Optional[str], *,
                            initialization_is_trained: bool
                            ) -> Optional[str]:
    """The checkpoint an export restores: `checkpoint_path`, else model_dir's
    newest; with none there, warm_start_from's checkpoint (tf.estimator 2.15
    exported it), else None if `initialization_is_trained` (the model_fn's
    variables start trained: model_to_estimator's start as the Keras
    model's weights, which 2.15 warm-started from).

    Raises:
      UserInputError: none of these (a ValueError starting with 2.15's
        "Couldn't find trained model at"), or the named
        checkpoint cannot be used.
    """
    if not checkpoint_path and checkpoints.latest_checkpoint(
        self.model_dir) is None:
      if self._warm_start_from:
        return checkpoints.resolve_checkpoint(
            self._warm_start_from.ckpt_to_initialize_from,
            what='warm_start_from')
      if initialization_is_trained:
        logging.info('No checkpoint in model_dir %s: exporting the '
                     'variables\' initial values.', self.model_dir)
        return None
    return checkpoints.checkpoint_to_read(self.model_dir, checkpoint_path)

  def _finish_evaluation(self, results: Dict[str, Any], *,
                         name: Optional[str],
                         checkpoint_path: Optional[str], steps_run: int,
                         hooks: Sequence[Any], steps: Optional[int] = None,
                         graph: Optional[Callable[[], Tuple[bytes, Optional[bytes]]]]
                         = None) -> Dict[str, Any]:
    """What every evaluation ends with: its scalars written to
    model_dir/eval (or eval_<name>) at its global step (and `graph()`'s
    serialized GraphDef and MetaGraphDef, see `summaries.write_eval_results`),
    the runtime hooks' `end`, one log line. Returns `results`."""
    if steps:
      tf_log.info('Evaluation [%d/%d]', steps_run, steps)
    summaries.write_eval_results(self.model_dir, name, results,
                                 checkpoint_path=checkpoint_path, graph=graph)
    runtime_hooks, _ = split_hooks(hooks)
    for hook in runtime_hooks:
      hook.end(global_step=results['global_step'])
    logging.info('Evaluation of %s after %d steps: %s',
                 checkpoint_path or 'the initialized variables', steps_run,
                 ', '.join(f'{k} = {v:.6g}' if _is_number(v) else
                           f'{k} = {v!r:.80}' for k, v in results.items()))
    return results

  def _inferred_receiver(self, input_fn: Optional[Callable]
                         ) -> export_lib.ServingInputReceiver:
    """The serving inputs an export without a serving_input_receiver_fn
    gets: the features of `input_fn`'s dataset, else of the last input
    trained or evaluated on, with the batch dimension left open."""
    if input_fn is not None:
      result = user_fns.call_input_fn(input_fn, self._params, None,
                                      role='export input_fn',
                                      config=self._config, allow_tensors=True)
      self._remember_features(
          result.element_spec if isinstance(result, tf.data.Dataset) else
          tf.nest.map_structure(tf.type_spec_from_value, result))
    if self._features_spec is None:
      raise UserInputError(
          'export_saved_model: no serving_input_receiver_fn and no input_fn '
          'to infer the serving inputs from; pass one of them.')
    return export_lib.receiver_from_element_spec(self._features_spec)
