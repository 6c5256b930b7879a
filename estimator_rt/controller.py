"""The outer training loop: how many steps each compiled loop runs, and
what happens between loops (hooks, summaries, checkpoints).

Each loop is cut short so that every event lands exactly on its step: a
checkpoint every N steps is saved at step N, a summary every M steps is
written at step M, a hook asking to see step K sees step K.
"""

import dataclasses
import time
from typing import Callable, Iterable, List, Optional

from absl import logging
import tensorflow as tf

from estimator_rt.checkpoints import CheckpointSaver
from estimator_rt.errors import NanLossError
from estimator_rt.errors import PreemptedError
from estimator_rt.hooks import Hook
from estimator_rt.hooks import LoopResult
from estimator_rt.preemption import PREEMPTED_EXIT_CODE
from estimator_rt.summaries import ScalarWriter

# A listener is called after each checkpoint save with (path, global_step);
# returning True asks training to stop (train_and_evaluate's evaluation uses
# this for early stopping decisions made at save time).
SavingListener = Callable[[str, int], Optional[bool]]


# A stop signal waits for the loop in flight; loops that would take over
# twice this long are cut to about this long (with the save after it, well
# inside Kubernetes' default 30 s grace period), while loops of fast steps
# keep their length.
DEFAULT_MAX_LOOP_SECS = 5.0


@dataclasses.dataclass(frozen=True)
class Decisions:
  """What the controller decided after a loop (agreed across synchronous
  workers by `TrainController`'s `agree`).

  Attributes:
    stop: stop training normally (a hook, a listener, the input ended).
    save: save a checkpoint at this step.
    preempt: save and stop with PreemptedError (a stop signal).
    loop_cap: the most steps the next loop may run.
  """

  stop: bool
  save: bool
  preempt: bool
  loop_cap: int


class TrainController:
  """Runs compiled training loops up to a step, with everything around them.

  Args:
    train_loop: compiled `(iterator, num_steps) -> (loss, steps,
      loss_finite, state_finite, global_step)` (see loops.make_train_loop).
    iterator: the distributed iterator it consumes.
    global_step: the global step variable.
    steps_per_loop: most steps in one compiled call.
    hooks: Hook objects, called in order.
    saver: saves checkpoints, or None (a worker that must not write).
    summary_writer: writes training scalars, or None.
    save_summary_steps: write scalars every this many steps (0: never).
    saving_listeners: called after each checkpoint save.
    agree: for synchronous multi-worker training, maps this worker's
      `Decisions` to the cluster's (a flag is set if any worker sets it;
      the loop cap is the same number everywhere). Every worker must run
      the same loops and save at the same steps: their steps are collective
      operations. Loop lengths depend on steps and on agreed values only;
      decisions that depend on time, signals or hooks go through this
      function.
    stop_signal: returns the name of a stop signal (SIGTERM) received
      during training, or None (see preemption.py). When it is set, training
      saves at the end of the loop in flight and raises PreemptedError.
    max_loop_secs: cut loops so that one takes about this long at most
      (from the previous loop's time per step; the first two loops run
      `steps_per_loop`, as the first one's time is mostly tracing), which
      bounds the time from a stop signal to the save. None:
      `steps_per_loop` alone decides.
  """

  def __init__(self, *, train_loop: Callable, iterator, global_step,
               steps_per_loop: int, hooks: Iterable[Hook],
               saver: Optional[CheckpointSaver],
               summary_writer: Optional[ScalarWriter],
               save_summary_steps: int,
               saving_listeners: Iterable[SavingListener] = (),
               agree: Optional[Callable[['Decisions'], 'Decisions']] = None,
               stop_signal: Optional[Callable[[], Optional[str]]] = None,
               max_loop_secs: Optional[float] = DEFAULT_MAX_LOOP_SECS):
    self._train_loop = train_loop
    self._iterator = iterator
    self._global_step = global_step
    self._steps_per_loop = steps_per_loop
    self._hooks: List[Hook] = list(hooks)
    self._saver = saver
    self._writer = summary_writer
    self._summary_every = save_summary_steps
    self._listeners = list(saving_listeners)
    self._agree = agree
    self._stop_signal = stop_signal
    self._max_loop_secs = max_loop_secs

  def _loop_cap(self, steps_run: int, elapsed: float) -> int:
    """Steps the next loop may run so that it takes about max_loop_secs."""
    if self._max_loop_secs is None or steps_run <= 0:
      return self._steps_per_loop
    per_step = max(elapsed, 1e-9) / steps_run
    cap = max(1, int(self._max_loop_secs / per_step))
    # Only loops that would take over twice the budget are cut, so that a
    # momentary stall of a fast model (a busy machine) moves no boundary.
    return cap if 2 * cap <= self._steps_per_loop else self._steps_per_loop

  def _loop_end(self, step: int, max_steps: Optional[int], cap: int) -> int:
    limits = [step + cap]
    if max_steps is not None:
      limits.append(max_steps)
    if self._saver is not None:
      limits.append(self._saver.next_save_step(step))
    if self._summary_every:
      # Also without a writer (a non-chief worker): every worker must cut
      # its loops at the same steps.
      limits.append((step // self._summary_every + 1) * self._summary_every)
    for hook in self._hooks:
      limits.append(hook.next_step_limit(step))
    return min(limit for limit in limits if limit is not None and limit > step)

  def _save(self, step: int, *, notify: bool = True) -> bool:
    """Saves a checkpoint; returns whether a listener asked to stop.

    `notify=False` skips the listeners (an evaluation after a preemption
    save would eat the grace period)."""
    path = self._saver.save(step)
    if path is None:
      return False
    logging.info('Saved checkpoint %s', path)
    stop = False
    for listener in (self._listeners if notify else ()):
      stop = bool(listener(path, step)) or stop
    return stop

  def _preempt(self, step: int) -> PreemptedError:
    """Saves at `step` (every synchronous worker does, at the same step)
    and returns the error that ends training."""
    self._save(step, notify=False)
    if self._writer is not None:
      self._writer.flush()
    name = (self._stop_signal() if self._stop_signal else None) or (
        'a stop signal on another worker')
    message = (f'Preempted ({name}) at global step {step}: checkpoint saved; '
               f'exiting with code {PREEMPTED_EXIT_CODE}. Run the same '
               'command again to resume from it.')
    logging.warning(message)
    return PreemptedError(message, global_step=step)

  def _divergence(self, *, loss: float, loss_finite: bool, loop_start: int,
                  step: int) -> NanLossError:
    last = self._saver.last_saved_step if self._saver is not None else None
    if not loss_finite:
      what = f'the loss was {loss} at global step {step}'
    else:
      what = (f'model variables became NaN or infinite in global steps '
              f'{loop_start + 1}-{step} while the loss stayed finite (last '
              f'loss {loss:.6g}): look for NaN or infinite input values, or '
              'a gradient that bypasses the loss')
    if last is None:
      kept = 'no checkpoint had been saved yet'
      again = 'starts again from the initial weights'
    else:
      kept = f'the newest checkpoint, at step {last}, is the last finite one'
      again = 'resumes from that checkpoint'
    return NanLossError(
        f'Training diverged: {what}. Nothing was saved from the diverged '
        f'weights; {kept}. Lower the learning rate, check the input, or clip '
        f'gradients; the same command then {again}.')

  def run(self, *, max_steps: Optional[int]) -> int:
    """Trains up to global step `max_steps` (None: until the input ends).

    Returns:
      The global step when training ended.

    Raises:
      PreemptedError: a stop signal arrived (see `stop_signal`); a
        checkpoint was saved at the returned error's global_step.
      NanLossError: a loss, or a model or optimizer variable, became NaN or
        infinite. Nothing is saved from that state: the compiled loop stops
        at the first diverged loss, and its result is checked before hooks
        and saves, so model_dir's newest checkpoint is the last finite one.
      Whatever a hook raises; no checkpoint is saved for the loop that
        raised.
    """
    step = int(self._global_step.numpy())
    logging.info('Training from global step %d up to %s, %d steps per '
                 'compiled loop at most.', step,
                 'the end of input' if max_steps is None else max_steps,
                 self._steps_per_loop)
    for hook in self._hooks:
      hook.begin(global_step=step, max_steps=max_steps)
    stop = False
    cap = self._steps_per_loop
    loops_run = 0
    while not stop and (max_steps is None or step < max_steps):
      loop_end = self._loop_end(step, max_steps, cap)
      requested = loop_end - step
      start = time.time()
      loss, steps_run, loss_finite, state_finite, new_step = (
          self._train_loop(self._iterator, tf.constant(requested, tf.int32)))
      loss = float(loss)
      steps_run = int(steps_run)
      elapsed = time.time() - start
      # The variable's value, not step + steps_run: under parameter-server
      # training a worker lost mid-loop has its steps run again elsewhere,
      # and the checkpoint's name must be the step it holds.
      loop_start, step = step, int(new_step)
      if not (bool(loss_finite) and bool(state_finite)):
        # Every synchronous worker computed the same flags from the same
        # reduced loss and identical variables, so all of them stop here.
        raise self._divergence(loss=loss, loss_finite=bool(loss_finite),
                               loop_start=loop_start, step=step)
      if steps_run < requested:
        logging.info('Input ended after global step %d.', step)
        stop = True
      if steps_run == 0:
        break
      result = LoopResult(global_step=step, steps=steps_run, loss=loss,
                          all_finite=True, elapsed_secs=elapsed,
                          max_steps=max_steps)
      for hook in self._hooks:
        stop = bool(hook.after_loop(result)) or stop
      if (self._writer is not None and self._summary_every and
          (step % self._summary_every == 0 or stop or step == max_steps)):
        self._writer.write({'loss': loss,
                            'global_step/sec': steps_run / max(elapsed, 1e-9)},
                           step)
      decisions = Decisions(
          stop=stop, save=self._saver is not None and self._saver.is_due(step),
          preempt=bool(self._stop_signal and self._stop_signal()),
          # The first loop's time is mostly tracing, not steps.
          loop_cap=(self._loop_cap(steps_run, elapsed) if loops_run else
                    self._steps_per_loop))
      loops_run += 1
      if self._agree is not None:
        decisions = self._agree(decisions)
      stop, cap = decisions.stop, decisions.loop_cap
      if decisions.preempt:
        raise self._preempt(step)
      if decisions.save:
        stop = self._save(step) or stop
    if self._saver is not None:
      self._save(step)
    if self._writer is not None:
      self._writer.flush()
    for hook in self._hooks:
      hook.end(global_step=step)
    return step
