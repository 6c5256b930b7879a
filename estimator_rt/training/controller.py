"""The outer training loop, for both engines: how many steps each inner
loop runs, and what happens between loops (hooks, logging, summaries,
checkpoints, divergence, preemption, agreement between workers).

As in Orbit (`orbit/controller.py` drives any trainer's `train(num_steps)`),
an engine supplies only the inner loop, `train_loop(iterator, num_steps)`:
the eager engine compiled steps (`eager/loops.py`), the graph engine a
session loop over an open monitored session (`graph/session_loop.py`).
Every policy around it is written here, once.

Each loop is cut short so that every event lands exactly on its step: a
checkpoint every N steps is saved at step N, summaries every M steps are
written at the run's first step and every M steps after it (`Schedule`, as
tf.estimator 2.15's hooks wrote them), a hook asking to see step K sees
step K.
"""

import dataclasses
import time
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from absl import logging

from estimator_rt.core.checkpoints import CheckpointSaver
from estimator_rt.core.errors import NanLossError
from estimator_rt.core.errors import PreemptedError
from estimator_rt.core.errors import PreemptedInterrupt
from estimator_rt.training.hooks import Hook
from estimator_rt.training.hooks import log_progress
from estimator_rt.training.hooks import LoopResult
from estimator_rt.training.hooks import SavingListener
from estimator_rt.cluster.preemption import PREEMPTED_EXIT_CODE
from estimator_rt.core import tf_log
from estimator_rt.core.summaries import ScalarWriter
from estimator_rt.core.tf_errors import NanLossDuringTrainingError



# A stop signal waits for the loop in flight; loops that would take over
# twice this long are cut to about this long (with the save after it, well
# inside Kubernetes' default 30 s grace period), while loops of fast steps
# keep their length.
DEFAULT_MAX_LOOP_SECS = 5.0


# What an inner loop returns: the last step's loss (mean over the global
# batch), how many steps it ran, whether every loss was finite, whether
# every model and optimizer variable is finite after it, and the global step
# it ended at.
LoopOutput = Tuple[Any, Any, Any, Any, Any]
# The inner loop: runs up to `num_steps` training steps (a Python int),
# stopping early when the input ends, when the steps cannot go on (a
# SessionRunHook asked to stop), or right after the first step whose loss is
# not finite.
TrainLoop = Callable[[Any, int], LoopOutput]


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


@dataclasses.dataclass(frozen=True)
class Schedule:
  """The steps at which something recurring is due in one training run
  (one `train()` call), as tf.estimator 2.15's hooks' SecondOrStepTimer
  fired: at the run's first step, then every `every` steps after it. From
  step 0 every 100: steps 1, 101, 201; resumed at 150: 151, 251. So a run
  shorter than `every` still gets one. `every` 0 or None: never.

  The training summaries (the model_fn's, `loss`) and the step counting
  (`global_step/sec`, the step log lines: due from the second on, the first
  starts the clock) follow it; the graph engine's loops ask it whether a
  loop ends where summaries are due.
  """

  start: int
  every: Optional[int]

  def due(self, step: int) -> bool:
    return (bool(self.every) and step > self.start and
            (step - self.start - 1) % self.every == 0)

  def next_after(self, step: int) -> Optional[int]:
    """The first due step after `step`, or None."""
    if not self.every:
      return None
    first = self.start + 1
    if step < first:
      return first
    return first + ((step - first) // self.every + 1) * self.every


def agreement(sum_over_replicas: Callable[[List[int]], Sequence[int]], *,
              replicas: int) -> Callable[[Decisions], Decisions]:
  """The `agree` function of synchronous workers, from a function that sums
  a vector of 4 ints over every replica of every worker (one small
  all-reduce, in whichever engine): a flag any worker sets is set for all,
  and the loop cap becomes the mean of the workers' caps, the same number
  everywhere."""

  def agree(decisions: Decisions) -> Decisions:
    total = sum_over_replicas([int(decisions.stop), int(decisions.save),
                               int(decisions.preempt), decisions.loop_cap])
    return Decisions(stop=total[0] > 0, save=total[1] > 0,
                     preempt=total[2] > 0,
                     loop_cap=max(1, int(total[3]) // replicas))

  return agree


def divergence_error(*, loss: float, loss_finite: bool, loop_start: int,
                     step: int, last_saved_step: Optional[int]
                     ) -> NanLossError:
  """The one error of a diverged training, in either engine."""
  if not loss_finite:
    what = f'the loss was {loss} at global step {step}'
  else:
    what = (f'model variables became NaN or infinite in global steps '
            f'{loop_start + 1}-{step} while the loss stayed finite (last '
            f'loss {loss:.6g}): look for NaN or infinite input values, or '
            'a gradient that bypasses the loss')
  if last_saved_step is None:
    kept = 'no checkpoint had been saved yet'
    again = 'starts again from the initial weights'
  else:
    kept = (f'the newest checkpoint, at step {last_saved_step}, is the last '
            'finite one')
    again = 'resumes from that checkpoint'
  # 2.15's NanTensorHook's phrase first, for a loss that is not finite.
  return NanLossDuringTrainingError(
      ('' if loss_finite else 'NaN loss during training. ') +
      f'Training diverged: {what}. Nothing was saved from the diverged '
      f'weights; {kept}. Lower the learning rate, check the input, or clip '
      f'gradients; the same command then {again}.')


def preempted_error(*, signal_name: Optional[str], step: int
                    ) -> PreemptedError:
  """The one error (and log line) of a training stopped by a signal, after
  its checkpoint at `step` was saved."""
  message = (f'Preempted ({signal_name or "a stop signal on another worker"}'
             f') at global step {step}: checkpoint saved; exiting with code '
             f'{PREEMPTED_EXIT_CODE}. Run the same command again to resume '
             'from it.')
  logging.warning(message)
  error_class = (PreemptedInterrupt if signal_name == 'SIGINT' else
                 PreemptedError)
  return error_class(message, global_step=step)


class TrainController:
  """Runs inner training loops up to a step, with everything around them.

  Args:
    train_loop: the engine's inner loop (see `TrainLoop`).
    iterator: what it consumes (None when it reads its input itself).
    global_step: returns the global step now (read at the start, and
      before each save when `asynchronous`).
    steps_per_loop: most steps in one inner loop.
    hooks: Hook objects, called in order.
    saver: saves checkpoints, or None (a worker that must not write).
    summary_writer: writes training scalars, or None.
    save_summary_steps: write the `loss` scalar on this `Schedule` (0:
      never); the engine writes the model_fn's summaries on the same one.
    log_step_count_steps: count steps on this `Schedule` (0: never):
      `global_step/sec` and the step log line.
    model_writes_loss: the model_fn's summaries hold a `loss` summary
      (a canned head's): the controller does not write another (2.15 added
      one only to a graph without it).
    saving_listeners: `fn(path, global_step)` called after each checkpoint
      save, or `tf.compat.v1.train.CheckpointSaverListener`s (see
      hooks.SavingListener); one returning True asks training to stop
      (train_and_evaluate's evaluation uses this for early stopping
      decisions made at save time).
    agree: for synchronous multi-worker training, maps this worker's
      `Decisions` to the cluster's (see `agreement`). Every worker must run
      the same loops and save at the same steps: their steps are collective
      operations. Loop lengths depend on steps and on agreed values only;
      decisions that depend on time, signals or hooks go through this
      function.
    stop_signal: returns the name of a stop signal (SIGTERM) received
      during training, or None (see preemption.py). When it is set, training
      saves at the end of the loop in flight and raises PreemptedError.
    max_loop_secs: cut loops so that one takes about this long at most
      (from the previous loop's time per step; the first two loops run
      `steps_per_loop`, as the first one's time may include tracing), which
      bounds the time from a stop signal to the save. None:
      `steps_per_loop` alone decides.
    asynchronous: other tasks move the global step between this task's
      loops (between-graph parameter-server training): a checkpoint is
      named by the global step read right before it is written, the step
      it holds, not by the end of the last loop, and the next loop counts
      from that step.
    listener_session: returns the session CheckpointSaverListeners are
      given (see hooks.SavingListener; None where there is none).
    loop_beside: `loop_beside(iterator, num_steps, work)` runs the inner
      loop as `train_loop` does, beside `work()` on this thread (the eager
      engine's local loop, eager/loop_beside.py), or None. With it, what a
      save's last listeners do when they say they may run beside training
      (`SavingListener.runs_beside_training`: train_and_evaluate's
      evaluation), and the step log after it, run beside the next loop:
      in the order they ran before, on this thread, all of it done before
      anything after that loop (hooks, summaries, the next save).
    logs_updated_step: the step log line names the global step after the
      step it logs, not the one it started from: 2.15's LoggingTensorHook
      fetched the global step beside the train op, and a reference
      variable's value (TF1 behaviour) is read when the run ends, a
      resource variable's when the read runs, before the update.
  """

  def __init__(self, *, train_loop: TrainLoop, iterator,
               global_step: Callable[[], int], steps_per_loop: int,
               hooks: Iterable[Hook], saver: Optional[CheckpointSaver],
               summary_writer: Optional[ScalarWriter],
               save_summary_steps: int,
               log_step_count_steps: int = 0,
               model_writes_loss: bool = False,
               saving_listeners: Iterable[Any] = (),
               agree: Optional[Callable[[Decisions], Decisions]] = None,
               stop_signal: Optional[Callable[[], Optional[str]]] = None,
               max_loop_secs: Optional[float] = DEFAULT_MAX_LOOP_SECS,
               asynchronous: bool = False,
               logs_updated_step: bool = False,
               listener_session: Callable[[], Any] = lambda: None,
               loop_beside: Optional[Callable[..., LoopOutput]] = None):
    self._train_loop = train_loop
    self._loop_beside = loop_beside
    self._logs_updated_step = logs_updated_step
    self._asynchronous = asynchronous
    self._iterator = iterator
    self._global_step = global_step
    self._steps_per_loop = steps_per_loop
    self._hooks: List[Hook] = list(hooks)
    self._saver = saver
    self._writer = summary_writer
    self._summary_every = save_summary_steps
    self._count_every = log_step_count_steps
    self._model_writes_loss = model_writes_loss
    # Set when `run` starts (their start is its first global step).
    self._summaries = self._counts = Schedule(0, 0)
    self._last_count: Optional[Tuple[int, float]] = None  # (step, time)
    # The loss of the last step run, as the inner loop returned it (None
    # before the first loop); converted only when a line prints it.
    self._last_loss = None
    self._listeners = [SavingListener(l, listener_session)
                       for l in saving_listeners]
    self._agree = agree
    self._stop_signal = stop_signal
    self._max_loop_secs = max_loop_secs

  @property
  def last_loss(self):
    """The loss of the last step run, as 2.15 printed it (a NumPy scalar
    of the loss's dtype, see tf_log.number), or None before any step."""
    return tf_log.number(self._last_loss)

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
    # Also without a writer (a non-chief worker): every worker must cut its
    # loops at the same steps.
    limits.append(self._summaries.next_after(step))
    limits.append(self._counts.next_after(step))
    for hook in self._hooks:
      limits.append(hook.next_step_limit(step))
    return min(limit for limit in limits if limit is not None and limit > step)

  def _save(self, step: int, *, notify: bool = True) -> bool:
    """Saves a checkpoint; returns whether a listener asked to stop.

    `notify=False` skips the listeners (an evaluation after a preemption
    save would eat the grace period). The step saved at is then the saver's
    `last_saved_step` (later than `step` when asynchronous)."""
    stop, deferred = self._save_deferring(step, notify=notify, defer=False)
    assert deferred is None
    return stop

  def _save_deferring(self, step: int, *, notify: bool, defer: bool
                      ) -> Tuple[bool, Optional[Callable[[], bool]]]:
    """`_save`; with `defer`, the after_save calls of its last listeners
    that may run beside training are returned instead of made (see
    `loop_beside`): (stop, what is left to call, or None)."""
    listeners = self._listeners if notify else ()
    if self._asynchronous:
      step = max(step, self._global_step())
    if step != self._saver.last_saved_step:
      if listeners:
        tf_log.info('Calling checkpoint listeners before saving checkpoint '
                    '%d...', step)
      for listener in listeners:
        listener.before_save(step)
    path = self._saver.save(step)
    if path is None:
      return False, None
    tf_log.info('Saving checkpoints for %d into %s.', step,
                path.rsplit('-', 1)[0])
    logging.info('Saved checkpoint %s', path)
    if self._writer is not None:
      self._writer.write_session_log('CHECKPOINT', step, checkpoint_path=path)
    if listeners:
      tf_log.info('Calling checkpoint listeners after saving checkpoint '
                  '%d...', step)
    now = list(listeners)
    if defer and self._loop_beside is not None:
      while now and now[-1].runs_beside_training():
        now.pop()
    later = listeners[len(now):]
    stop = False
    for listener in now:
      stop = listener.after_save(path, step) or stop
    if not later:
      return stop, None
    def after_save():
      stopped = False
      for listener in later:
        stopped = listener.after_save(path, step) or stopped
      return stopped
    return stop, after_save

  def _preempt(self, step: int) -> PreemptedError:
    """Saves at `step` (every synchronous worker does, at the same step)
    and returns the error that ends training."""
    if self._saver is not None:
      self._save(step, notify=False)
      step = self._saver.last_saved_step
    if self._writer is not None:
      self._writer.flush()
    return preempted_error(
        signal_name=self._stop_signal() if self._stop_signal else None,
        step=step)

  def _run_loop(self, step: int, requested: int,
                beside: Optional[Callable[[], None]] = None):
    """Runs one inner loop (beside `beside()`, see `loop_beside`); returns
    (LoopResult, ended early).

    Raises:
      NanLossError: the loop diverged (checked before any hook or save).
    """
    start = time.time()
    if beside is None:
      output = self._train_loop(self._iterator, requested)
    else:
      output = self._loop_beside(self._iterator, requested, beside)
    loss, steps_run, loss_finite, state_finite, new_step = output
    elapsed = time.time() - start
    raw_loss = loss
    loss, steps_run, new_step = float(loss), int(steps_run), int(new_step)
    if not (bool(loss_finite) and bool(state_finite)):
      # Every synchronous worker computed the same flags from the same
      # reduced loss and identical variables, so all of them stop here.
      raise divergence_error(
          loss=loss, loss_finite=bool(loss_finite), loop_start=step,
          step=new_step,
          last_saved_step=(self._saver.last_saved_step
                           if self._saver is not None else None))
    # The global step's value, not step + steps_run: in parameter-server
    # training other tasks (or a lost worker's steps run again elsewhere)
    # move it too, and the checkpoint's name must be the step it holds. A
    # loop that ends before its target step ran out of input (or a
    # SessionRunHook stopped its session).
    ended = new_step < step + requested
    if ended:
      logging.info('Training input ended (or a hook stopped the session) '
                   'after global step %d.', new_step)
    self._last_loss = raw_loss
    return LoopResult(global_step=new_step, steps=steps_run, loss=loss,
                      all_finite=True, elapsed_secs=elapsed,
                      max_steps=None), ended

  def _after_loop(self, result: LoopResult, loop_start: int, stop: bool,
                  first: bool) -> Decisions:
    """Hooks and summaries after a loop; returns this worker's decisions."""
    del loop_start  # Unused.
    for hook in self._hooks:
      stop = bool(hook.after_loop(result)) or stop
    step = result.global_step
    self._write_loss(result)
    return Decisions(
        stop=stop, save=self._saver is not None and self._saver.is_due(step),
        preempt=bool(self._stop_signal and self._stop_signal()),
        # The first loop's time may be mostly tracing, not steps.
        loop_cap=(self._steps_per_loop if first else
                  self._loop_cap(result.steps, result.elapsed_secs)))

  def _write_loss(self, result: LoopResult) -> None:
    """The `loss` scalar of the loop that gave `result`, if due."""
    if (self._writer is not None and not self._model_writes_loss and
        self._summaries.due(result.global_step)):
      self._writer.write({'loss': result.loss}, result.global_step)

  def _count_steps(self, step: int, max_steps: Optional[int],
                   raw_loss: Any = None) -> None:
    """At a step of the step-counting schedule: 2.15's LoggingTensorHook
    line (the loss of the step, and the global step it started from, or
    ended at: see `logs_updated_step`), and from the second on
    `global_step/sec` since the previous one, logged and written (2.15's
    StepCounterHook); and the runtime's own progress line
    (`hooks.log_progress`). All of them at the same loop ends, so that
    logging costs no loop of its own. `raw_loss`: the loss of the loop
    that ended at `step`, as it returned it (None: the last loop's)."""
    now = time.time()
    logged = step if self._logs_updated_step else step - 1
    # As 2.15 printed it.
    loss = self.last_loss if raw_loss is None else tf_log.number(raw_loss)
    rate = None
    if self._last_count is None:
      tf_log.info('loss = %s, step = %s', loss, logged)
    else:
      last_step, last_time = self._last_count
      rate = (step - last_step) / max(now - last_time, 1e-9)
      tf_log.info('global_step/sec: %g', rate)
      tf_log.info('loss = %s, step = %s (%.3f sec)', loss, logged,
                  now - last_time)
      if self._writer is not None:
        self._writer.write({'global_step/sec': rate}, step)
    log_progress(step=step, max_steps=max_steps, loss=loss, rate=rate)
    self._last_count = (step, now)

  def _save_and_count(self, step: int, max_steps: Optional[int], *,
                      save: bool, stopped: List[bool]
                      ) -> Tuple[int, bool, Optional[Callable[[], None]]]:
    """After a loop's hooks: the save if `save`, then the step log if it is
    due. Returns (the step the next loop starts from, whether a listener
    asked to stop, what runs beside the next loop or None: the after_save
    calls `_save_deferring` left and the step log after them, appending to
    `stopped` whether one of those listeners asked to stop)."""
    stop, after_save = False, None
    if save:
      stop, after_save = self._save_deferring(
          step, notify=True, defer=not self._asynchronous)
      if self._asynchronous:
        # The save read the global step anew (other tasks' steps since the
        # loop ended) and named the checkpoint by it; the inner loop counts
        # its next target from the newest step it saw, so the next loop is
        # asked for from that step too (else it ran past max_steps by what
        # the others did meanwhile).
        step = max(step, self._saver.last_saved_step)
    # After the save, as 2.15's hooks ran: its CheckpointSaverHook (and the
    # listeners) first, then StepCounterHook, then LoggingTensorHook.
    counts = self._counts.due(step)
    if after_save is None:
      if counts:
        self._count_steps(step, max_steps)
      return step, stop, None

    raw_loss = self._last_loss

    def after_save_and_count():
      stopped.append(after_save())
      if counts:
        self._count_steps(step, max_steps, raw_loss)
    return step, stop, after_save_and_count

  def _loop_beside_or_not(self, step: int, requested: int,
                          beside: Optional[Callable[[], None]],
                          stopped: List[bool]):
    """`_run_loop` beside `beside` (or alone): (its LoopResult, whether it
    ended early or a listener beside it asked to stop, whether its time is
    its steps' alone: a loop's time that holds what ran beside it says
    nothing of the steps' pace, and the cap then stays)."""
    result, stop = self._run_loop(step, requested, beside)
    if beside is None:
      return result, stop, True
    return result, stopped.pop() or stop, False

  def _short_loop_first(self, step: int, requested: int,
                        beside: Callable[[], None],
                        max_steps: Optional[int], stopped: List[bool]):
    """Runs a short loop now, before `beside` (what follows a save, see
    `_save_and_count`), which the loop could hide little of (to a summary
    or step-log step: 2.15's schedules end one step after a save). Returns
    (its LoopResult, whether it ended early, what runs beside the next loop
    or None): `beside`, then this loop's summary and step log, when nothing
    of that work can change the next loop (no hooks, no save due, no end);
    else None, and `beside` and its stop were run and folded in here.

    What `beside` does (an evaluation) comes before this loop's steps in
    2.15's order: a loop that fails has it run before its error is raised.
    """
    try:
      result, ended = self._run_loop(step, requested)
    except Exception:  # An interrupt goes at once.
      beside()
      raise
    new_step = result.global_step
    if (ended or result.steps == 0 or self._hooks or
        self._agree is not None or
        (max_steps is not None and new_step >= max_steps) or
        (self._saver is not None and self._saver.is_due(new_step))):
      beside()
      return result, stopped.pop() or ended, None
    raw_loss = self._last_loss
    result = dataclasses.replace(result, max_steps=max_steps)

    def beside_then_this_loops_work():
      beside()
      self._write_loss(result)
      if self._counts.due(new_step):
        self._count_steps(new_step, max_steps, raw_loss)
    return result, ended, beside_then_this_loops_work

  def _log_last_progress(self, step: int, max_steps: Optional[int]) -> None:
    """The runtime's progress line once more when training reached
    `max_steps` off the counting schedule (2.15 logged nothing there)."""
    if (not self._count_every or step != max_steps or
        self._last_count is None or self._last_count[0] == step or
        self.last_loss is None):
      return
    last_step, last_time = self._last_count
    log_progress(step=step, max_steps=max_steps, loss=self.last_loss,
                 rate=(step - last_step) / max(time.time() - last_time,
                                               1e-9))

  def run(self, *, max_steps: Optional[int]) -> int:
    """Trains up to global step `max_steps` (None: until the input ends).

    Returns:
      The global step when training ended.

    Raises:
      PreemptedError: a stop signal arrived (see `stop_signal`); a
        checkpoint was saved at the returned error's global_step.
      NanLossError: a loss, or a model or optimizer variable, became NaN or
        infinite. Nothing is saved from that state: the inner loop stops
        at the first diverged loss, and its result is checked before hooks
        and saves, so model_dir's newest checkpoint is the last finite one.
      Whatever a hook raises; no checkpoint is saved for the loop that
        raised.
    """
    step = self._global_step()
    logging.info('Training from global step %d up to %s, %d steps per '
                 'loop at most.', step,
                 'the end of input' if max_steps is None else max_steps,
                 self._steps_per_loop)
    self._summaries = Schedule(step, self._summary_every)
    self._counts = Schedule(step, self._count_every)
    self._last_count = None
    for hook in self._hooks:
      hook.begin(global_step=step, max_steps=max_steps)
    for listener in self._listeners:
      listener.begin()
    if self._writer is not None:
      self._writer.write_session_log('START', step)
    if self._saver is not None and self._saver.saves_at_start():
      # The state training starts from, as tf.estimator's CheckpointSaverHook
      # saved it when its session started (listeners see it too, as there;
      # a stop they ask for here was ignored there, and is here).
      self._save(step)
    stop = False
    cap = self._steps_per_loop
    first = True
    # What runs beside the next loop (`loop_beside`); `from_save`: a save
    # left it (`_short_loop_first` may carry it on). Sets `stopped`.
    beside, stopped, from_save = None, [], False
    while not stop and (max_steps is None or step < max_steps):
      requested = self._loop_end(step, max_steps, cap) - step
      if beside is not None and from_save and 2 * requested < cap:
        result, stop, beside = self._short_loop_first(
            step, requested, beside, max_steps, stopped)
        step, from_save, paced = result.global_step, False, True
        if beside is not None:
          continue
      else:
        result, stop, paced = self._loop_beside_or_not(
            step, requested, beside, stopped)
        beside = None
      if result.steps == 0:
        break
      result = dataclasses.replace(result, max_steps=max_steps)
      decisions = self._after_loop(result, step, stop, first)
      step, first = result.global_step, False
      if self._agree is not None:
        decisions = self._agree(decisions)
      stop = decisions.stop
      cap = decisions.loop_cap if paced else cap
      if decisions.preempt:
        raise self._preempt(step)
      step, saved_stop, beside = self._save_and_count(
          step, max_steps, save=decisions.save, stopped=stopped)
      stop, from_save = saved_stop or stop, beside is not None
    if beside is not None:
      beside()  # No loop followed: it runs now, where it ran before.
    self._log_last_progress(step, max_steps)
    if self._saver is not None:
      self._save(step)
      step = self._saver.last_saved_step
    if self._writer is not None:
      self._writer.flush()
    for hook in self._hooks:
      hook.end(global_step=step)
    for listener in self._listeners:
      listener.end(step)
    return step
