"""TPUEstimator's helpers around a session, as tf.estimator 2.15 had them:
none needs a TPU.

  - `ExamplesPerSecondHook`: a StepCounterHook that also reports
    examples/sec (the batch size times global_step/sec);
  - `InstallSignalHandlerHook`: Ctrl-C kills the process while the session
    runs (the default handler hung in TPU programs), the program's handler
    coming back at the end;
  - `PeriodicLogger`: an info log at most every so many seconds;
  - `OpQueueContext` (and `OpSignalOnceQueueContext`): a daemon thread fed
    iteration counts through a queue until told to stop, the controller
    2.15 ran its infeed and outfeed loops with.
"""

import queue
import signal
import threading
import time

from absl import logging
import tensorflow as tf


class PeriodicLogger:
  """`log` logs at info level, at most once every `seconds` seconds."""

  def __init__(self, seconds):
    self._log_every_n_seconds = seconds
    self._last_log_time = 0

  def log(self, msg, *args, **kw):
    if time.time() - self._last_log_time > self._log_every_n_seconds:
      self._last_log_time = time.time()
      logging.info(msg, *args, **kw)


class Signal:
  """The commands of an `OpQueueContext`'s queue (tf.estimator's
  `_SIGNAL`): negative; a positive number is an iteration count."""
  NEXT_BATCH = -1
  STOP = -2


class OpQueueContext:
  """A daemon thread running `target(self, *args)`, which reads the
  iteration counts sent to it with `read_iteration_counts` until `stop`
  (or `join`, which stops and waits for the thread)."""

  def __init__(self, name, target, args):
    self._name = name
    self._queue = queue.Queue()
    self._thread = threading.Thread(name=name, target=target,
                                    args=(self,) + tuple(args), daemon=True)
    self._thread.start()

  def stop(self):
    self._queue.put(Signal.STOP)

  def send_next_batch_signal(self, iterations):
    self._queue.put(iterations)

  def read_iteration_counts(self):
    """Yields the counts sent, until the stop signal."""
    while True:
      iterations = self._queue.get(block=True)
      logging.debug('%s read iterations %s', self._name, iterations)
      if iterations == Signal.STOP:
        logging.info('%s received shutdown signal, stopping.', self._name)
        return
      yield iterations

  def join(self):
    logging.info('Shutting down %s thread.', self._name)
    self.stop()
    self._thread.join()


class OpSignalOnceQueueContext(OpQueueContext):
  """An `OpQueueContext` that passes on only the first count it is sent
  (2.15's prediction loop ran once, until its stopping signal)."""

  def __init__(self, name, target, args):
    # Set before the thread starts: it may read it at once.
    self._has_signaled = False
    super().__init__(name, target, args)

  def send_next_batch_signal(self, iterations):
    if not self._has_signaled:
      self._queue.put(iterations)
      self._has_signaled = True


class ExamplesPerSecondHook(tf.compat.v1.train.StepCounterHook):
  """tf.estimator's StepCounterHook that reports, every `every_n_steps`
  steps or `every_n_secs` seconds, global_step/sec and examples/sec
  (`batch_size` examples a step): logged, and written as summaries (tags
  'global_step/sec', 'examples/sec') when it has a summary writer (or an
  `output_dir` to make one)."""

  def __init__(self, batch_size, every_n_steps=100, every_n_secs=None,
               output_dir=None, summary_writer=None):
    self._batch_size = batch_size
    super().__init__(every_n_steps=every_n_steps, every_n_secs=every_n_secs,
                     output_dir=output_dir, summary_writer=summary_writer)

  def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
    global_step_per_sec = elapsed_steps / elapsed_time
    examples_per_sec = self._batch_size * global_step_per_sec
    if self._summary_writer is not None:
      for tag, value in (('global_step/sec', global_step_per_sec),
                         ('examples/sec', examples_per_sec)):
        self._summary_writer.add_summary(
            tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(
                tag=tag, simple_value=value)]), global_step)
    logging.info('global_step/sec: %g', global_step_per_sec)
    logging.info('examples/sec: %g', examples_per_sec)


class InstallSignalHandlerHook(tf.compat.v1.train.SessionRunHook):
  """SIGINT (Ctrl-C) kills the process from the first step on; the
  handler in place when the hook was made is restored at the end."""

  def __init__(self):
    self._signal_fn = signal.getsignal(signal.SIGINT)

  def before_run(self, run_context):
    signal.signal(signal.SIGINT, signal.SIG_DFL)

  def end(self, session):
    signal.signal(signal.SIGINT, self._signal_fn)
