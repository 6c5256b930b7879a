"""Hooks: code that runs between compiled training loops.

A hook is an object with any of the methods below, or a plain callable,
which is treated as `after_loop`. The outer loop calls them in order:

* `begin(*, global_step, max_steps)`: once, before the first loop.
* `next_step_limit(global_step) -> int | None`: the step at which the next
  loop must end so that this hook sees that exact step (e.g. 100 for a
  hook that acts every 100 steps). None means no constraint.
* `after_loop(result) -> bool | None`: after each loop, with a
  `LoopResult`. Returning True asks training to stop (it saves a checkpoint
  and ends normally). Raising stops training without saving.
* `end(*, global_step)`: once, after the last loop, if training ended
  normally.
"""

import dataclasses
import datetime
import time
from typing import Any, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.core import summaries
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError


@dataclasses.dataclass(frozen=True)
class LoopResult:
  """What one compiled training loop did.

  Attributes:
    global_step: the global step after the loop.
    steps: training steps the loop ran.
    loss: the loss of its last step (mean over replicas).
    all_finite: whether every step's loss was finite (always True: the
      controller raises NanLossError before hooks see a diverged loop).
    elapsed_secs: wall time of the loop, including fetching its results.
    max_steps: the step training runs up to (None: until input ends).
  """

  global_step: int
  steps: int
  loss: float
  all_finite: bool
  elapsed_secs: float
  max_steps: Optional[int]


class Hook:
  """Base class with no-op methods; subclass and override what you need."""

  def begin(self, *, global_step: int, max_steps: Optional[int]) -> None:
    pass

  def next_step_limit(self, global_step: int) -> Optional[int]:
    del global_step
    return None

  def after_loop(self, result: LoopResult) -> Optional[bool]:
    del result
    return None

  def end(self, *, global_step: int) -> None:
    pass


class _CallableHook(Hook):

  def __init__(self, fn):
    self._fn = fn

  def after_loop(self, result):
    return self._fn(result)


class _DuckTypedHook(Hook):
  """Calls the hook methods an object has; Hook's no-ops stand in for the
  ones it lacks."""

  def __init__(self, hook):
    self._hook = hook

  def begin(self, *, global_step, max_steps):
    if hasattr(self._hook, 'begin'):
      self._hook.begin(global_step=global_step, max_steps=max_steps)

  def next_step_limit(self, global_step):
    if hasattr(self._hook, 'next_step_limit'):
      return self._hook.next_step_limit(global_step)
    return None

  def after_loop(self, result):
    if hasattr(self._hook, 'after_loop'):
      return self._hook.after_loop(result)
    return None

  def end(self, *, global_step):
    if hasattr(self._hook, 'end'):
      self._hook.end(global_step=global_step)


HOOK_METHODS = ('begin', 'next_step_limit', 'after_loop', 'end')


def as_hook(hook) -> Hook:
  """A Hook from a Hook, an object with some Hook methods, or a callable."""
  if isinstance(hook, Hook):
    return hook
  if any(hasattr(hook, m) for m in HOOK_METHODS):
    return _DuckTypedHook(hook)
  if callable(hook):
    return _CallableHook(hook)
  # 2.15's phrase and exception class (TypeError), which code matched.
  raise UserTypeError(
      f'Hooks must be a SessionRunHook, given: {hook!r}: each of hooks must '
      'be a tf.compat.v1.train.SessionRunHook, an estimator_rt hook object '
      'or a callable.')


def check_hooks(hooks) -> list:
  """`hooks` as a list, each a SessionRunHook or what `as_hook` takes.

  Estimator.train, evaluate and predict check them first, as tf.estimator
  2.15 did: a bad hook is reported before the model_fn or input_fn runs.

  Raises:
    UserTypeError: one is neither.
  """
  hooks = list(hooks or ())
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      as_hook(hook)
  return hooks


def _next_multiple(step: int, every: int) -> int:
  return (step // every + 1) * every


def log_progress(*, step: int, max_steps: Optional[int], loss: float,
                 rate: Optional[float]) -> None:
  """Logs the runtime's progress line, `step 200/1000, loss = 0.31, 2510.4
  steps/s, ETA 0:00:01` (`rate` None: the first line of a run, with no
  interval to measure yet), on absl's logger: `LoggingHook`'s line, and the
  one the training loop logs at its step-counting steps."""
  message = f'step {step}'
  if max_steps:
    message += f'/{max_steps}'
  message += f', loss = {loss:.6g}'
  if rate is not None:
    message += f', {rate:.1f} steps/s'
    if max_steps and rate > 0:
      message += f', ETA {_eta(max_steps - step, rate)}'
  logging.info(message)


def _eta(steps_left: int, steps_per_sec: float) -> str:
  seconds = steps_left / steps_per_sec
  # timedelta overflows past ~2.7 million years (max_steps near 2**63).
  if seconds > 100 * 365 * 86400:
    return 'over 100 years'
  return str(datetime.timedelta(seconds=round(seconds)))


class LoggingHook(Hook):
  """Logs step, loss, steps/s and the ETA every `every_steps` steps."""

  def __init__(self, *, every_steps: int):
    self._every = every_steps
    self._last_time = None
    self._last_step = None

  def begin(self, *, global_step, max_steps):
    self._last_time = time.time()
    self._last_step = global_step

  def next_step_limit(self, global_step):
    return _next_multiple(global_step, self._every)

  def after_loop(self, result):
    step = result.global_step
    if step % self._every and step != result.max_steps:
      return None
    now = time.time()
    rate = (step - self._last_step) / max(now - self._last_time, 1e-9)
    self._last_time, self._last_step = now, step
    log_progress(step=step, max_steps=result.max_steps, loss=result.loss,
                 rate=rate)
    return None


class NanLossHook(Hook):
  """Accepted for code written against tf.estimator's NanTensorHook; does
  nothing more.

  Both engines' training loop already stops at the first non-finite loss,
  checks every model and optimizer variable after each loop, and raises
  `NanLossError` before anything is saved from that state (see
  `controller.divergence_error`), with or without this hook: a hook only
  ever sees finite loops.
  """


class StopAtStepHook(Hook):
  """Stops training after `num_steps` more steps or at `last_step`.

  Exactly one of the two must be given.
  """

  def __init__(self, *, num_steps: Optional[int] = None,
               last_step: Optional[int] = None):
    if (num_steps is None) == (last_step is None):
      raise UserInputError(
          f'StopAtStepHook: give exactly one of num_steps={num_steps!r} and '
          f'last_step={last_step!r}.')
    self._num_steps = num_steps
    self._last_step = last_step

  def begin(self, *, global_step, max_steps):
    if self._num_steps is not None:
      self._last_step = global_step + self._num_steps

  def next_step_limit(self, global_step):
    return self._last_step

  def after_loop(self, result):
    return result.global_step >= self._last_step


class EarlyStoppingHook(Hook):
  """Stops training when an evaluation metric stops improving.

  It reads the evaluation event files (model_dir/eval or eval_<name>), so
  it works both with local train_and_evaluate and with a separate evaluator
  task. Training stops when the best value of `metric_name` was reached
  more than `max_steps_without_improvement` steps before the newest
  evaluation.

  Args:
    model_dir: the Estimator's model_dir.
    metric_name: an evaluation metric, e.g. 'loss' or 'accuracy'.
    max_steps_without_improvement: patience, in global steps.
    higher_is_better: True for accuracy-like metrics, False for losses.
    min_steps: never stop before this global step.
    eval_name: the EvalSpec name whose results to read.
  """

  def __init__(self, *, model_dir: str, metric_name: str,
               max_steps_without_improvement: int,
               higher_is_better: bool = False, min_steps: int = 0,
               eval_name: Optional[str] = None):
    if max_steps_without_improvement <= 0:
      raise UserInputError(
          'EarlyStoppingHook: max_steps_without_improvement='
          f'{max_steps_without_improvement!r} must be > 0.')
    self._eval_dir = summaries.eval_dir(model_dir, eval_name)
    self._metric = metric_name
    self._patience = max_steps_without_improvement
    self._sign = 1.0 if higher_is_better else -1.0
    self._min_steps = min_steps
    self._seen_state = None
    self.stopped_at_step = None

  def should_stop(self) -> bool:
    """Whether the evaluations so far say training should stop."""
    # Called after every loop: read the event files only when they changed.
    state = summaries.event_files_state(self._eval_dir)
    if state == self._seen_state:
      return False
    self._seen_state = state
    points = summaries.read_scalars(self._eval_dir).get(self._metric, [])
    if not points:
      return False
    best_step, best = None, None
    for step, value in points:
      if best is None or self._sign * value > self._sign * best:
        best_step, best = step, value
    newest = points[-1][0]
    return newest >= self._min_steps and newest - best_step > self._patience

  def after_loop(self, result):
    if self.should_stop():
      logging.info('Early stopping at step %d: %s has not improved for more '
                   'than %d steps.', result.global_step, self._metric,
                   self._patience)
      self.stopped_at_step = result.global_step
      return True
    return None


class SavingListener:
  """Called around every checkpoint save of training (the controller's).

  Wraps a plain callable `fn(checkpoint_path, global_step)` (its
  `after_save`, given a Python int) or a
  `tf.compat.v1.train.CheckpointSaverListener`, whose `begin()`,
  `before_save(session, step)`, `after_save(session, step)` and
  `end(session, step)` keep tf.estimator's order and arguments: the
  training session (`session()`: the graph engine's; None in the eager
  engine, which has none) and the step as an `np.int64`, as 2.15's
  CheckpointSaverHook read it with `session.run`. `after_save` returning
  True asks training to stop.
  """

  def __init__(self, listener, session=lambda: None):
    self._listener = listener
    self._session = session
    self._tf_listener = isinstance(
        listener, tf.compat.v1.train.CheckpointSaverListener)
    if not (self._tf_listener or callable(listener)):
      # 2.15's phrase and exception class (TypeError), which code matched.
      raise UserTypeError(
          'saving_listeners must be a list of CheckpointSaverListener, '
          f'given: {listener!r}: each listener must be a '
          'tf.compat.v1.train.CheckpointSaverListener or a callable '
          'fn(checkpoint_path, global_step).')

  def begin(self) -> None:
    if self._tf_listener:
      self._listener.begin()

  def before_save(self, step: int) -> None:
    if self._tf_listener:
      self._listener.before_save(self._session(), np.int64(step))

  def after_save(self, path: str, step: int) -> bool:
    if self._tf_listener:
      return bool(self._listener.after_save(self._session(), np.int64(step)))
    return bool(self._listener(path, step))

  def end(self, step: int) -> None:
    if self._tf_listener:
      self._listener.end(self._session(), np.int64(step))

  def runs_beside_training(self) -> bool:
    """Whether its `after_save` may run beside the next training loop
    (see controller.TrainController's `loop_beside`): only a listener of
    the runtime's own that says so (train_and_evaluate's evaluation, which
    never asks to stop and touches nothing training uses)."""
    says = getattr(self._listener, 'runs_beside_training', None)
    return bool(says()) if callable(says) else False


def check_saving_listeners(saving_listeners) -> list:
  """`saving_listeners` as a list, each one SavingListener takes; checked
  before training starts, as tf.estimator 2.15 did.

  Raises:
    UserTypeError: one is neither a CheckpointSaverListener nor a callable.
  """
  listeners = list(saving_listeners or ())
  for listener in listeners:
    SavingListener(listener)
  return listeners


def check_listeners_have_saves(saving_listeners: Sequence[Any],
                               hooks: Sequence[Any], config) -> None:
  """Refuses saving listeners where nothing saves during training, as
  tf.estimator 2.15 did: there they were called by the CheckpointSaverHook,
  which RunConfig's save_checkpoints_steps or save_checkpoints_secs made
  (or the caller passed).

  Raises:
    ValueError: `saving_listeners` is not empty, `config` saves neither by
      steps nor by seconds, and no hook is a CheckpointSaverHook.
  """
  if not saving_listeners or (config.save_checkpoints_steps or
                              config.save_checkpoints_secs):
    return
  if any(isinstance(hook, tf.compat.v1.train.CheckpointSaverHook)
         for hook in hooks):
    return
  raise UserInputError(
      'There should be a CheckpointSaverHook to use saving_listeners. Please '
      'set one of the RunConfig.save_checkpoints_steps or '
      'RunConfig.save_checkpoints_secs: the RunConfig has both None, so no '
      f'checkpoint is saved during training for saving_listeners='
      f'{shorten(list(saving_listeners))} to follow.')
