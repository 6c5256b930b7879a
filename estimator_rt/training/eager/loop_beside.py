"""Work done on the main thread while a compiled loop's call runs.

A compiled function's call spends most of its time in TensorFlow's C++
runtime (instantiating the function and Grappler's rewrites at the first
call, the steps at every call), which releases Python's global interpreter
lock; the machine's other cores and the Python interpreter sit idle
meanwhile. The eager engine's local training uses that time for what it
would otherwise do on the main thread alone, between two calls:

- beside the first call, tracing the first evaluation of
  train_and_evaluate (see `EagerEngine._evaluation_warm_up`), whose
  compilation then goes on beside the next calls (`CompilingAhead`).
  Local train_and_evaluate of W2's MLP: its first evaluation took about
  0.15 s after the first checkpoint, of which this leaves about 0.03 s.
- before the first call, the training loop's own compilation
  (`CompilingAhead`, a call of 0 steps) beside the first checkpoint and
  train_and_evaluate's check of the evaluation.
- beside the call after a checkpoint (or after the short loop that
  follows it), train_and_evaluate's evaluation of that checkpoint (see
  controller.TrainController's `loop_beside`). It reads the checkpoint's
  files into variables of its own, which the training loop does not
  touch; W2's evaluations then cost about 5-10 ms of wall time each
  instead of 25-30 ms.

The call runs on a helper thread; the work stays on the main thread, so a
model_fn the work calls runs where every other call of it runs, with the
program's thread-local settings (Keras 3's dtype policy among them), and
the program's log lines keep their order. The helper runs an already
traced concrete function only: it never traces, so it never calls user
code.
"""

import contextlib
import threading
from typing import Callable, Optional, TypeVar

from absl import logging
from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import

import tensorflow as tf

T = TypeVar('T')


def _start(call: Callable[[], None], *, daemon: bool) -> threading.Thread:
  """`call()` started on a helper thread, in this thread's device scope."""
  device = context.context().device_name

  def run():
    with tf.device(device) if device else contextlib.nullcontext():
      call()

  helper = threading.Thread(target=run, name='estimator_rt-loop-beside',
                            daemon=daemon)
  helper.start()
  return helper


def run_alongside(call: Callable[[], T], work: Callable[[], None]) -> T:
  """Runs `call()` on a helper thread while this thread runs `work()`.

  Returns once both are done: `call`'s result, or `call`'s error raised
  here. The helper runs in this thread's device scope. `work` is expected
  to handle its own errors; if it raises anyway (a KeyboardInterrupt), the
  error propagates once `call` has ended, so that nothing runs the loop
  behind the caller's back.
  """
  outcome = {}

  def run():
    try:
      outcome['result'] = call()
    except BaseException as e:  # pylint: disable=broad-except
      outcome['error'] = e  # Raised on the caller's thread, below.

  helper = _start(run, daemon=True)  # Joined below.
  try:
    work()
  finally:
    helper.join()
  if 'error' in outcome:
    raise outcome['error']
  return outcome['result']


class CompilingAhead:
  """A compiled function's first call made ahead, for 0 steps, on a helper
  thread: TensorFlow instantiates the function and runs Grappler's
  rewrites at its first call (C++ that releases the interpreter lock),
  which then overlaps what the main thread does until the function's
  first real call. A loop of 0 steps reads no input and changes no
  variable. Its error is only logged: the first real call meets it again
  and reports it as it always did.

  Args:
    call: the 0-step call of an already traced concrete function (the
      helper must not trace: see the module docstring).
    what: what is compiled, for the log.
  """

  def __init__(self, call: Callable[[], None], *, what: str):

    def quietly():
      try:
        call()
      except Exception as e:  # pylint: disable=broad-except
        logging.debug('Compiling %s ahead failed (%s); its first call '
                      'compiles it.', what, e)

    # Not a daemon: a program that ends before the first real call (a
    # refused start, exit code 2) waits for it rather than tearing down
    # TensorFlow's runtime under a compilation. It reads no input, so it
    # ends on its own.
    self._helper: Optional[threading.Thread] = _start(quietly, daemon=False)

  def wait(self) -> None:
    """Returns once the 0-step call ended (at once after the first time).
    Not bounded: the call reads no input, so it waits on no other task."""
    if self._helper is not None:
      self._helper.join()
      self._helper = None
