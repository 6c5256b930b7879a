"""tf.estimator 2.15's `inputs/queues/feeding_queue_runner`: a QueueRunner
whose enqueue threads feed values (numpy arrays, DataFrame columns) into
placeholders.

A TF1 `tf.compat.v1.train.QueueRunner` runs each enqueue op in a thread of
its own until the queue closes; `_FeedingQueueRunner` gives each enqueue op
a feed function, called before every run for the `feed_dict` of that run,
which is how `feeding_functions._enqueue_data` pushes rows of in-memory
data into a queue. Graph mode only, as every QueueRunner.
"""

import threading

import tensorflow as tf

_QueueRunner = tf.compat.v1.train.queue_runner.QueueRunner


class _FeedingQueueRunner(_QueueRunner):
  """A QueueRunner whose enqueue op `i` runs with `feed_fns[i]()` as its
  feed_dict (or none, where the feed function is None).

  Unlike a QueueRunner, it cannot be made from or saved as a
  QueueRunnerDef: its feed functions are Python objects.
  """

  def __init__(self, queue=None, enqueue_ops=None, close_op=None,
               cancel_op=None, feed_fns=None,
               queue_closed_exception_types=None):
    """A runner of `enqueue_ops` into `queue`.

    Args:
      queue: the `Queue` the enqueue ops fill.
      enqueue_ops: the ops to run, each in a thread of its own.
      close_op: closes the queue, keeping pending enqueues (default: the
        queue's close()).
      cancel_op: closes the queue and cancels pending enqueues (default: the
        queue's close(cancel_pending_enqueues=True)).
      feed_fns: None, or one function per enqueue op returning the feed_dict
        of its next run.
      queue_closed_exception_types: the exceptions of an enqueue op that mean
        the queue was closed (its thread then ends); default
        (tf.errors.OutOfRangeError, tf.errors.CancelledError).

    Raises:
      ValueError: `feed_fns` is given and is not as long as `enqueue_ops`.
    """
    if queue_closed_exception_types is None:
      # A feed function signals its data's end with OutOfRangeError, and a
      # cancelled enqueue raises CancelledError: both end the thread.
      queue_closed_exception_types = (tf.errors.OutOfRangeError,
                                      tf.errors.CancelledError)
    super().__init__(
        queue, enqueue_ops, close_op, cancel_op,
        queue_closed_exception_types=queue_closed_exception_types)
    if feed_fns is None:
      feed_fns = [None] * len(enqueue_ops)
    elif len(feed_fns) != len(enqueue_ops):
      raise ValueError(
          'If feed_fns is not None, it must have the same length as '
          f'enqueue_ops (got {len(feed_fns)} feed_fns for '
          f'{len(enqueue_ops)} enqueue_ops).')
    self._feed_fns = list(feed_fns)

  def _run(self, sess, enqueue_op, feed_fn, coord=None):  # pylint: disable=arguments-differ
    """Runs `enqueue_op` with `feed_fn()`'s feeds until the queue closes, the
    feed function runs out (OutOfRangeError) or `coord` says stop.

    The last of the session's threads to end on a closed queue closes it, so
    that its consumers see OutOfRangeError once the queue is empty. Another
    error goes to `coord`, or without one is logged, kept in
    `exceptions_raised` and re-raised.
    """
    counted_out = False
    try:
      while not (coord and coord.should_stop()):
        try:
          sess.run(enqueue_op,
                   feed_dict=None if feed_fn is None else feed_fn())
        except self._queue_closed_exception_types:  # pylint: disable=catching-non-exception
          with self._lock:
            self._runs_per_session[sess] -= 1
            counted_out = True
            last = self._runs_per_session[sess] == 0
          if last:
            try:
              sess.run(self._close_op)
            except Exception as e:  # pylint: disable=broad-except
              # The queue may already be closed or the session gone.
              tf.compat.v1.logging.vlog(1, 'Ignored exception: %s', str(e))
          return
    except Exception as e:  # pylint: disable=broad-except
      if coord:
        coord.request_stop(e)
      else:
        tf.compat.v1.logging.error('Exception in QueueRunner: %s', str(e))
        with self._lock:
          self._exceptions_raised.append(e)
        raise
    finally:
      if not counted_out:
        with self._lock:
          self._runs_per_session[sess] -= 1

  def create_threads(self, sess, coord=None, daemon=False, start=False):
    """The threads running the enqueue ops (each with its feed function) in
    `sess`, and with `coord` one more that cancels the queue when `coord`
    stops; none while threads of an earlier call still run in `sess`.

    Args:
      sess: the Session the ops run in.
      coord: an optional `tf.train.Coordinator` the threads report errors to
        and stop with; the threads are registered with it.
      daemon: make the threads daemon threads.
      start: start the threads (otherwise the caller starts them).

    Returns:
      The list of threads.
    """
    with self._lock:
      if self._runs_per_session.get(sess, 0) > 0:
        return []
      self._runs_per_session[sess] = len(self._enqueue_ops)
      self._exceptions_raised = []
    threads = [
        threading.Thread(target=self._run, args=(sess, op, feed_fn, coord),
                         name=f'FeedingQueueRunnerThread-{op.name}')
        for op, feed_fn in zip(self._enqueue_ops, self._feed_fns)
    ]
    if coord:
      threads.append(threading.Thread(
          target=self._close_on_stop, args=(sess, self._cancel_op, coord),
          name=f'FeedingQueueRunnerThread-{self.name}-close_on_stop'))
    for thread in threads:
      if coord:
        coord.register_thread(thread)
      thread.daemon = daemon
      if start:
        thread.start()
    return threads

  def _init_from_proto(self, queue_runner_def, import_scope=None):
    raise NotImplementedError(
        f'{type(self).__name__} does not support initialization from proto '
        '(its feed functions are Python objects).')

  def to_proto(self, export_scope=None):
    raise NotImplementedError(
        f'{type(self).__name__} does not support serialization to proto '
        '(its feed functions are Python objects).')
