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
    create a new one, which waits too. The training session
    (`session_loop.SessionLoop`) does not recover, and leaves a session
    whose peer vanished open (`server.abandon`: the process leaves with
    os._exit); it closes any other session within a bound.
"""

import tensorflow as tf

from estimator_rt import server as server_lib
from estimator_rt import tf_errors
from estimator_rt.errors import TaskLostError

# How long a task waits for the ps tasks to accept connections.
PS_WAIT_SECS = 300
# How long a worker waits for the chief to initialize or restore the
# variables (the chief may still be starting, or restoring a big model).
WORKER_WAIT_SECS = 600


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
      raise tf_errors.from_cause(TaskLostError, (
          f'The chief did not initialize the variables on the ps tasks within '
          f'{WORKER_WAIT_SECS} s; is it running (same TF_CONFIG cluster)?'
      ), e) from e
