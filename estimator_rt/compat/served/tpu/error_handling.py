"""tensorflow_estimator.python.estimator.tpu.error_handling: tf.estimator's
ErrorRendezvous, which picks the most telling of the errors several threads
(a TPU's infeed, outfeed and training loop) raised.

estimator_rt runs no infeed threads; programs and libraries that ran their
own threads with it keep its semantics.
"""

import contextlib
import sys
import threading
import time

from absl import logging
import tensorflow as tf

# A cancelled session is what the other threads see after the first error.
_UNINTERESTING_ERRORS = (tf.errors.CancelledError,)
# MonitoredSession recovers from these itself.
_IGNORED_ERRORS = (tf.errors.AbortedError, tf.errors.UnavailableError)
_CHECK_NUMERIC_OP_NAME = 'CheckNumerics'
# How long a failed thread lets the others report a better error before it
# closes the session (which would otherwise keep the training loop waiting).
_CLOSE_SESSION_AFTER_SECS = 5


class ErrorRendezvous:
  """Collects the errors of `num_sources` sources until they are done.

  `raise_errors` re-raises, with its traceback, the first recorded error
  that is not a CancelledError, else the first recorded error, else
  nothing. Aborted and Unavailable errors are not recorded.
  """

  def __init__(self, num_sources):
    self._errors = {}  # source -> sys.exc_info(), or None when done.
    self._num_sources = num_sources
    self._session_cancel_timer = None

  def record_error(self, source, exc_info, session=None):
    """Records `exc_info` (a `sys.exc_info()`) as `source`'s error; with a
    `session`, closes it a few seconds later (once), so that the other
    threads stop waiting on it, unless the error is a CheckNumerics failure
    (the loop itself completed)."""
    value = exc_info[1]
    if isinstance(value, _IGNORED_ERRORS):
      return
    self._errors[source] = exc_info
    if getattr(getattr(value, 'op', None), 'type',
               None) == _CHECK_NUMERIC_OP_NAME:
      return
    if session is None or self._session_cancel_timer is not None:
      return

    def close_session():
      time.sleep(_CLOSE_SESSION_AFTER_SECS)
      logging.error('Closing session due to error %s', value)
      try:
        session.close()
      except Exception:  # pylint: disable=broad-except
        logging.error('Failed to close session after error. Other threads '
                      'may hang.')

    self._session_cancel_timer = threading.Thread(target=close_session,
                                                  daemon=True)
    self._session_cancel_timer.start()

  def record_done(self, source):
    """Marks `source` done, keeping an error it recorded."""
    logging.info('%s marked as finished', source)
    self._errors.setdefault(source, None)

  @contextlib.contextmanager
  def catch_errors(self, source, session=None):
    """Records an exception raised in the block as `source`'s error."""
    try:
      yield
    except Exception:  # pylint: disable=broad-except
      self.record_error(source, sys.exc_info(), session)

  def raise_errors(self, timeout_sec=0):
    """Waits up to `timeout_sec` seconds for every source to be done or
    failed, then re-raises the most telling error (see the class)."""
    for _ in range(timeout_sec):
      if len(self._errors) == self._num_sources:
        break
      time.sleep(1)
    kept = [info for info in self._errors.values() if info is not None]
    interesting = [info for info in kept
                   if not isinstance(info[1], _UNINTERESTING_ERRORS)]
    for _, value, traceback in interesting or kept:
      logging.warning('Reraising captured error')
      raise value.with_traceback(traceback)
