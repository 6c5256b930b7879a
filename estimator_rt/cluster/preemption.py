"""Preemption: SIGTERM (or SIGINT) saves at the next loop boundary and exits
with a code launchers read as "preempted, resumable".

Schedulers preempt with SIGTERM and a grace period before SIGKILL
(Kubernetes: 30 s by default; Slurm: `--signal`, KillWait). The first stop
signal during training asks the controller to stop at the end of the loop in
flight: it saves a checkpoint at that step (every synchronous worker agrees
on the step), logs one line, and the process exits with
`PREEMPTED_EXIT_CODE`. Training starts when `Estimator.train` starts
building the model and its loop: synchronous workers are signalled one
after another, and one still building must not leave the others stranded
in a collective. A second signal, or one that arrives while nothing is
being trained (start-up before train(), evaluation, export, an evaluator or
a server task), exits at once with the same code: the checkpoints on disk are intact,
so the same command resumes from the newest.

`PREEMPTED_EXIT_CODE` is 143, TensorFlow's own restartable exit code after a
preemption (failure_handling_util on GCE), and what a shell reports for a
process ended by SIGTERM (128 + 15).

How signals arrive: the binary calls `block_stop_signals()` first thing,
before TensorFlow starts any thread, so every thread inherits the mask and a
dedicated watcher thread receives the signals with `sigwait` at once,
whatever the main thread is doing (a compiled loop, a collective op, a
blocking RPC). In a program that did not block them (the Python API), a
plain `signal.signal` handler is installed for the duration of `train()`
where the signal still has Python's default (SIGTERM: SIG_DFL; SIGINT:
the handler that raises KeyboardInterrupt); it runs when the main thread
next returns to Python, i.e. after the compiled loop in flight. A handler
the program installed itself (or SIG_IGN) stays in place and sees the
signal, as it did with tf.estimator 2.15; the SIGINT error is a
KeyboardInterrupt too (`errors.PreemptedInterrupt`).
"""

import contextlib
import os
import signal
import sys
import threading
from typing import Iterator, Optional

from absl import logging

PREEMPTED_EXIT_CODE = 143
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _State:
  """What this process's signal handling knows (one per process)."""

  def __init__(self):
    self.lock = threading.Lock()
    self.watcher_thread: Optional[threading.Thread] = None
    self.training = 0  # Nesting depth of `training()` scopes.
    self.requested: Optional[str] = None  # Name of the first signal seen.


_state = _State()


def exit_at_once(code: int) -> None:
  """Flushes the log and the standard streams, then leaves with `code`.

  Not sys.exit: TensorFlow's threads (a collective waiting for a peer, a
  gRPC call) can hold an orderly shutdown for minutes, and a thread inside
  TensorFlow's C++ code when Python finalizes aborts the process.
  """
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)  # pylint: disable=protected-access


def _exit_now(reason: str) -> None:
  """Leaves the process at once with PREEMPTED_EXIT_CODE."""
  logging.warning('%s: exiting now with code %d; the checkpoints in model_dir '
                  'are intact and the same command resumes from the newest.',
                  reason, PREEMPTED_EXIT_CODE)
  exit_at_once(PREEMPTED_EXIT_CODE)


def _on_signal(signum: int) -> None:
  name = signal.Signals(signum).name
  with _state.lock:
    training = _state.training > 0
    first = _state.requested is None
    if training and first:
      _state.requested = name
  if training and first:
    logging.warning('%s received: training stops at the end of the loop in '
                    'flight, saves a checkpoint and exits with code %d (a '
                    'second signal exits at once).', name,
                    PREEMPTED_EXIT_CODE)
    return
  _exit_now(f'{name} received ' + ('again' if training else
                                   'outside training'))


def _watch(signals) -> None:
  while True:
    _on_signal(signal.sigwait(signals))


def block_stop_signals() -> None:
  """Routes SIGTERM and SIGINT of this process to a watcher thread.

  Call it before TensorFlow (or anything else) starts threads: threads
  inherit the blocked mask, so only the watcher's `sigwait` ever takes the
  signals. Blocking is kept across `exec` (the bind guard's relaunch).
  Idempotent.
  """
  with _state.lock:
    if _state.watcher_thread is not None:
      return
    signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
    thread = threading.Thread(target=_watch, args=(set(STOP_SIGNALS),),
                              name='estimator_rt-stop-signals', daemon=True)
    _state.watcher_thread = thread
  thread.start()


def _handler(signum, frame) -> None:
  del frame
  _on_signal(signum)


# What each stop signal's handler is when no one set it: the runtime's
# handler replaces these only. Any other (the program's own, SIG_IGN, or
# one set outside Python) is the program's choice and is left in place.
_PYTHON_DEFAULTS = {signal.SIGTERM: signal.SIG_DFL,
                    signal.SIGINT: signal.default_int_handler}


def _install_handlers() -> dict:
  """Installs `_handler` for each stop signal still at Python's default;
  returns {signal: the handler it replaced}."""
  previous = {}
  for signum in STOP_SIGNALS:
    if signal.getsignal(signum) is _PYTHON_DEFAULTS[signum]:
      previous[signum] = signal.signal(signum, _handler)
  return previous


@contextlib.contextmanager
def training() -> Iterator[None]:
  """Marks training in progress: a first stop signal is then a request
  (see `stop_requested`), not an immediate exit.

  Without `block_stop_signals()` it installs `signal.signal` handlers for
  its duration, for the signals whose handler is Python's default (main
  thread only; elsewhere signals keep their handlers), and restores the
  previous ones after. A handler the program set is left to run.
  """
  previous = {}
  if (_state.watcher_thread is None and
      threading.current_thread() is threading.main_thread()):
    previous = _install_handlers()
  with _state.lock:
    if _state.training == 0:
      _state.requested = None  # A request belongs to the training it stopped.
    _state.training += 1
  try:
    yield
  finally:
    with _state.lock:
      _state.training -= 1
    for signum, handler in previous.items():
      signal.signal(signum, handler)


@contextlib.contextmanager
def outside_training() -> Iterator[None]:
  """Within `training()`, marks work that is not training: the evaluation
  and export a saving listener runs after a checkpoint (train_and_evaluate's
  local loop, as tf.estimator's). A stop signal then exits at once, as it
  does outside training: nothing is in flight that a save would keep, and
  the checkpoint just saved is where the same command resumes."""
  with _state.lock:
    depth, _state.training = _state.training, 0
  try:
    yield
  finally:
    with _state.lock:
      _state.training = depth


def stop_requested() -> Optional[str]:
  """The name of the stop signal received during training, or None."""
  return _state.requested
