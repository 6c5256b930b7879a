"""Sessions of between-graph training (the graph engine's parameter_server):
each task runs its own session on its own server, sharing the variables
on the ps tasks.

Three things differ from a session of one process, each because a peer
can vanish:

  - Creating a session waits, without a bound, for every task its device
    filters name: `prepare` first waits, with one, for the ps tasks.
  - A worker's session must not initialize the variables (the chief does,
    or restores them): `WorkerSessionCreator` waits until they are
    initialized, looking every half second (TensorFlow's own worker
    creator looks every 30 s), for at most `WORKER_WAIT_SECS`.
  - When a ps task is gone, `session.run` fails at once with
    UnavailableError, but closing the session then waits for the task
    forever, and a monitored session that recovers from the error would
    create a new one, which waits too. `run_steps` does not recover, and
    leaves a session whose peer vanished open (`server.abandon`: the
    process leaves with os._exit); it closes any other session within a
    bound.
"""

import sys
import threading
from typing import List

from absl import logging
import tensorflow as tf
from tensorflow.python.training import monitored_session  # pylint: disable=g-direct-tensorflow-import

from estimator_rt import server as server_lib
from estimator_rt.errors import TaskLostError

# How long a task waits for the ps tasks to accept connections.
PS_WAIT_SECS = 300
# How long a worker waits for the chief to initialize or restore the
# variables (the chief may still be starting, or restoring a big model).
WORKER_WAIT_SECS = 600
# How long closing a session (the hooks' end, the chief's final save
# included) may take before the session is abandoned.
CLOSE_BOUND_SECS = {True: 600, False: 30}  # By is_chief.

# The errors of a step whose peer (a ps task) is gone.
_PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError,
                tf.errors.CancelledError)


def prepare(placement, task) -> None:
  """Starts this task's server and waits until the ps tasks answer.

  Raises:
    ClusterConfigError: a ps task did not answer within PS_WAIT_SECS.
  """
  server_lib.own_server(task)
  server_lib.wait_for_tasks(
      placement.ps_tasks, timeout_secs=PS_WAIT_SECS,
      advice='parameter_server training keeps its variables there; start '
      'it with the same TF_CONFIG cluster, or fix its address.')


class WorkerSessionCreator(tf.compat.v1.train.WorkerSessionCreator):
  """A worker's session: ready once the chief has initialized or restored
  the variables (looked at every half second, for WORKER_WAIT_SECS)."""

  def __init__(self, *, scaffold, master: str,
               config: tf.compat.v1.ConfigProto):
    super().__init__(scaffold=scaffold, master=master, config=config,
                     max_wait_secs=WORKER_WAIT_SECS)

  def _get_session_manager(self):
    if self._session_manager is None:
      self._session_manager = tf.compat.v1.train.SessionManager(
          local_init_op=self._scaffold.local_init_op,
          local_init_feed_dict=self._scaffold.local_init_feed_dict,
          ready_op=self._scaffold.ready_op,
          ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
          graph=tf.compat.v1.get_default_graph(),
          recovery_wait_secs=0.5)
    return self._session_manager

  def create_session(self):
    try:
      return super().create_session()
    except tf.errors.DeadlineExceededError as e:
      raise TaskLostError(
          f'The chief did not initialize the variables on the ps tasks within '
          f'{WORKER_WAIT_SECS} s; is it running (same TF_CONFIG cluster)?'
      ) from e


def run_steps(creator, hooks: List[tf.compat.v1.train.SessionRunHook],
              train_op, *, is_chief: bool) -> None:
  """Runs `train_op` until a hook stops it, then ends the hooks and closes
  the session within CLOSE_BOUND_SECS.

  Raises:
    TaskLostError: a step failed because a task it reads or writes is gone
      (the session is abandoned).
  """
  session = monitored_session._MonitoredSession(  # pylint: disable=protected-access
      session_creator=creator, hooks=hooks, should_recover=False)
  ran = 0
  try:
    while not session.should_stop():
      session.run(train_op)
      ran += 1
  except _PEER_ERRORS as e:
    server_lib.abandon(session)
    raise TaskLostError(
        f'A step failed because a task of the cluster is gone ('
        f'{type(e).__name__}: {e.message.splitlines()[0]}); the last '
        'checkpoint in model_dir is kept: restart the cluster to resume '
        'from it.') from e
  except BaseException:
    _close_within(session, sys.exc_info(), is_chief=is_chief)
    raise
  logging.info('This task ran %d steps of its own.', ran)
  _close_within(session, (None, None, None), is_chief=is_chief)


def _close_within(session, exc_info, *, is_chief: bool) -> None:
  """Ends the hooks (without an exception) and closes the session in a
  thread, waiting CLOSE_BOUND_SECS at most; re-raises what that raised."""
  raised = []
  # The default graph is per thread: the hooks' end builds nothing, but
  # running a Saver needs to see its graph (a thread starts in eager mode).
  graph = tf.compat.v1.get_default_graph()

  def close():
    try:
      with graph.as_default():
        session.__exit__(*exc_info)
    except BaseException as e:  # pylint: disable=broad-except
      raised.append(e)

  thread = threading.Thread(target=close, name='close-session', daemon=True)
  thread.start()
  thread.join(CLOSE_BOUND_SECS[is_chief])
  if thread.is_alive():
    logging.warning('Closing the training session took more than %d s (a '
                    'task of the cluster is gone?); leaving it open.',
                    CLOSE_BOUND_SECS[is_chief])
    server_lib.linger(thread)
    server_lib.abandon(session)
    return
  if raised and exc_info[0] is None:
    raise raised[0]
