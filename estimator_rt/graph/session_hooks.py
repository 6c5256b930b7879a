"""The graph engine's own SessionRunHooks.

They do for a monitored session what `controller.TrainController` does for
compiled loops: save checkpoints by steps or seconds (never from
non-finite weights), stop on a NaN loss, log progress, stop at the end of
the step in flight on SIGTERM/SIGINT, and read the input from its start.
"""

import time
from typing import Callable, List, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt import checkpoints
from estimator_rt import preemption
from estimator_rt.errors import NanLossError
from estimator_rt import hooks as hooks_lib
from estimator_rt.hooks import Hook
from estimator_rt.hooks import LoopResult

SessionRunHook = tf.compat.v1.train.SessionRunHook
SessionRunArgs = tf.compat.v1.train.SessionRunArgs


class InputInitializerHook(SessionRunHook):
  """Initializes the input iterator once the session exists."""

  def __init__(self, initializer: tf.Operation):
    self._initializer = initializer

  def after_create_session(self, session, coord):
    del coord
    session.run(self._initializer)


class RunOnceHook(SessionRunHook):
  """Runs `op` once the session exists (after the Scaffold's init_fn and
  the restore), e.g. to make mirrored copies equal."""

  def __init__(self, op: tf.Operation):
    self._op = op

  def after_create_session(self, session, coord):
    del coord
    session.run(self._op)


class SaverWriter:
  """Gives a name-based `Saver` the `write(prefix, options)` method
  `checkpoints.CheckpointSaver` calls, on the session in use."""

  def __init__(self, saver: tf.compat.v1.train.Saver):
    self._saver = saver
    self.session = None

  def write(self, prefix: str, options=None) -> str:
    del options  # Written by this process's session, where it runs.
    return self._saver.save(self.session, prefix, write_meta_graph=False,
                            write_state=False)


class GuardedSaverHook(SessionRunHook):
  """Saves by steps or seconds and at the end, and only finite weights.

  Args:
    saver: the `checkpoints.CheckpointSaver` (rotation, state file, errors).
    writer: the `SaverWriter` it writes with.
    listeners: `fn(checkpoint_path, global_step)` after each save but the
      last; one returning True stops training (as the eager engine's).
  """

  def __init__(self, *, saver: checkpoints.CheckpointSaver,
               writer: SaverWriter, listeners: Sequence[Callable] = ()):
    self._saver = saver
    self._writer = writer
    self._listeners = list(listeners)
    self._all_finite = None
    self._global_step = None

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()
    floats = [v for v in tf.compat.v1.global_variables()
              if v.dtype.base_dtype.is_floating]
    self._all_finite = tf.reduce_all(
        [tf.reduce_all(tf.math.is_finite(v)) for v in floats]
        or [tf.constant(True)])

  def after_create_session(self, session, coord):
    del coord
    self._writer.session = session

  def before_run(self, run_context):
    return SessionRunArgs(self._global_step)

  def after_run(self, run_context, run_values):
    step = int(run_values.results)
    if self._saver.is_due(step):
      path = self._save(run_context.session, step)
      if path and any(bool(listener(path, step))
                      for listener in self._listeners):
        run_context.request_stop()

  def end(self, session):
    self._save(session, int(session.run(self._global_step)))

  def _save(self, session, step: int) -> Optional[str]:
    if not session.run(self._all_finite):
      last = self._saver.last_saved_step
      raise NanLossError(
          f'Training diverged: model variables became NaN or infinite by '
          f'global step {step}. Nothing was saved from the diverged '
          f'weights; ' + ('no checkpoint had been saved yet' if last is None
                          else f'the newest checkpoint, at step {last}, is '
                          'the last finite one') +
          '. Lower the learning rate, check the input, or clip gradients.')
    path = self._saver.save(step)
    if path:
      logging.info('Saved checkpoint %s', path)
    return path


class LossGuardHook(SessionRunHook):
  """Raises NanLossError on a non-finite loss (before anything is saved
  from that step) and logs step, loss and steps/s every N steps."""

  def __init__(self, *, loss: tf.Tensor, every_steps: int,
               last_saved_step: Callable[[], Optional[int]]):
    self._loss = loss
    self._every_steps = every_steps
    self._last_saved_step = last_saved_step
    self._global_step = None
    self._last_log = None

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return SessionRunArgs((self._loss, self._global_step))

  def after_run(self, run_context, run_values):
    loss, step = run_values.results
    if not np.isfinite(loss):
      last = self._last_saved_step()
      kept = ('no checkpoint had been saved yet' if last is None else
              f'the newest checkpoint, at step {last}, is the last finite '
              'one')
      raise NanLossError(
          f'Training diverged: the loss was {loss} at global step {step}. '
          f'Nothing was saved from the diverged weights; {kept}. Lower the '
          'learning rate, check the input, or clip gradients; the same '
          'command then resumes.')
    if not self._every_steps:
      return
    now = time.time()
    if self._last_log is None:
      self._last_log = (now, step)
    elif step - self._last_log[1] >= self._every_steps:
      rate = (step - self._last_log[1]) / max(now - self._last_log[0], 1e-9)
      logging.info('global step %d: loss = %.6g (%.1f steps/s)', step, loss,
                   rate)
      self._last_log = (now, step)


class PreemptionHook(SessionRunHook):
  """Stops training after the step in flight when a stop signal came; the
  engine then raises PreemptedError (the saver hook saves at `end`).

  With an `agreement` (synchronous workers), a signalled worker raises its
  flag and every worker stops after the step in which the flags' sum is
  seen, all at the same step.

  Attributes:
    signal_name: the signal that stopped training (or 'a stop signal on
      another worker'), None if none did.
    global_step: the global step training ended at (None if the session
      ended by an error).
  """

  def __init__(self, *, agreement=None):
    self._agreement = agreement
    self._raised = False
    self.signal_name = None
    self.global_step = None

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    fetches = {'step': self._global_step}
    if self._agreement is not None:
      fetches['agreed'] = self._agreement[1]
    return SessionRunArgs(fetches)

  def after_run(self, run_context, run_values):
    self.global_step = int(run_values.results['step'])
    name = preemption.stop_requested()
    if self._agreement is None:
      if name:
        self.signal_name = name
        run_context.request_stop()
      return
    if name and not self._raised:
      self._raised = True
      self.signal_name = name
      run_context.session.run(self._agreement[0])
    if run_values.results['agreed'] > 0:
      self.signal_name = self.signal_name or 'a stop signal on another worker'
      run_context.request_stop()

  def end(self, session):
    # Read after the last step: a fetch in the step itself may be taken
    # before or after the step's increment.
    self.global_step = int(session.run(self._global_step))


class RuntimeHookAdapter(SessionRunHook):
  """Runs an estimator_rt `Hook` (or callable) in a monitored session,
  every session run being a loop of one step."""

  def __init__(self, hook: Hook, *, max_steps: Optional[int],
               loss: Optional[tf.Tensor]):
    self._hook = hook
    self._max_steps = max_steps
    self._given_loss = loss
    self._global_step = None
    self._loss = None
    self._started = None

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()
    self._loss = (self._given_loss if self._given_loss is not None
                  else tf.constant(float('nan')))

  def after_create_session(self, session, coord):
    del coord
    self._hook.begin(global_step=int(session.run(self._global_step)),
                     max_steps=self._max_steps)

  def before_run(self, run_context):
    self._started = time.time()
    return SessionRunArgs((self._global_step, self._loss))

  def after_run(self, run_context, run_values):
    step, loss = run_values.results
    result = LoopResult(global_step=int(step), steps=1, loss=float(loss),
                        all_finite=True,
                        elapsed_secs=time.time() - self._started,
                        max_steps=self._max_steps)
    if self._hook.after_loop(result):
      run_context.request_stop()

  def end(self, session):
    self._hook.end(global_step=int(session.run(self._global_step)))


def as_session_hooks(hooks: Sequence, *, max_steps: Optional[int],
                     loss: Optional[tf.Tensor]) -> List[SessionRunHook]:
  """SessionRunHooks as they are; estimator_rt hooks (and callables)
  adapted, seeing `loss` as the loop's loss."""
  adapted = []
  for hook in hooks:
    if isinstance(hook, SessionRunHook):
      adapted.append(hook)
    else:
      adapted.append(RuntimeHookAdapter(hooks_lib.as_hook(hook),
                                        max_steps=max_steps, loss=loss))
  return adapted
