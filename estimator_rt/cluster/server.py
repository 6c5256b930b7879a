"""Standard TensorFlow servers for the worker and ps tasks, and how they
learn that training is over.

TensorFlow's servers never return from `join()`: tf.estimator's ps tasks
had to be killed. Here the chief, when training is done, puts a token in a
queue that lives on each worker and ps server (a shared-name FIFOQueue,
reached through a TF1 session on that server: TensorFlow's own runtime
carries the signal). Each server process waits on its queue and exits 0
when the token arrives. If instead the chief disappears (its port stops
answering) the server exits non-zero after a grace period, so a crashed
chief never leaves the cluster hanging.
"""

import os
import threading
import time
from typing import Callable, Dict, Iterable, List, Optional

from absl import logging
import tensorflow as tf

from estimator_rt.cluster import bind_guard
from estimator_rt.cluster.tf_config import ClusterConfigError
from estimator_rt.cluster.tf_config import cpu_device
from estimator_rt.cluster.tf_config import join_host_port
from estimator_rt.cluster.tf_config import reachable
from estimator_rt.cluster.tf_config import server_task
from estimator_rt.cluster.tf_config import split_host_port
from estimator_rt.cluster.tf_config import TaskInfo
from estimator_rt.cluster.tf_config import was_reachable
from estimator_rt.cluster.preemption import PREEMPTED_EXIT_CODE
from estimator_rt.core.errors import one_line

_DONE_QUEUE = 'estimator_rt_training_done'
# Exit code of a server whose chief vanished without saying it was done.
CHIEF_LOST_EXIT_CODE = 3


def run_server(task: Optional[TaskInfo] = None, *,
               bind_host: Optional[str] = None) -> tf.distribute.Server:
  """Starts a long-running standard server for a standalone-client cluster.

  The server waits for work: clients anywhere (`--remote_cluster`) drive
  training on it, one after another, without a restart. Call `join()` on
  the result to block, or keep the process alive yourself.

  It listens on its task's address and nothing wider, which needs the bind
  guard (see `bind_guard`) loaded in this process: `python -m
  estimator_rt.run_server` loads it for you; a program of your own must be
  started with `LD_PRELOAD=<bind_guard.library_path()>`, or pass
  `bind_host='0.0.0.0'` to listen on every interface knowingly.

  Args:
    task: the task to serve; None reads TF_CONFIG.
    bind_host: where to listen instead of the task's host in the cluster
      (this machine's address when the cluster names another one);
      '0.0.0.0' for every interface.

  Raises:
    ClusterConfigError: no cluster or task, or an evaluator task.
    bind_guard.BindGuardError: the address is not this machine's, or the
      guard is not loaded in this process.
  """
  task = server_task(task, tf_config=os.environ.get('TF_CONFIG'))
  name = f'{task.task_type}:{task.task_index}'
  listen_address = bind_guard.listen_address(task.address, bind_host,
                                             task_name=name)
  if listen_address is not None and not bind_guard.is_loaded():
    raise bind_guard.BindGuardError(
        f'run_server: {name} would listen on every interface, not only '
        f'{listen_address}, because this process was started without the '
        'bind guard. Start the server with `python -m estimator_rt.run_server`'
        ', or start Python with LD_PRELOAD='
        f'{bind_guard.library_path() or "<the built guard>"}, or pass '
        "bind_host='0.0.0.0' to listen on every interface.")
  return start_server(task, listen_address=listen_address)


def start_server(task: TaskInfo, *, listen_address: Optional[str] = None,
                 config: Optional[tf.compat.v1.ConfigProto] = None
                 ) -> tf.distribute.Server:
  """Starts this task's standard server on its port in the cluster.

  Args:
    task: the task to serve.
    listen_address: the numeric address to listen on, with the bind guard
      loaded; None takes the guard's restriction for this port if the
      process set one (`bind_guard.guard_this_process`), else listens on
      every interface (TensorFlow's own behaviour).
    config: the server's default session config (a strategy's collective
      settings), or None for TensorFlow's.

  Raises:
    bind_guard.BindGuardError: the server listens wider than
      `listen_address` (the guard did not act).
  """
  _, port = split_host_port(task.address)
  if listen_address is None:
    listen_address = bind_guard.restriction(port)
  else:
    bind_guard.restrict(listen_address, port)
  server = tf.distribute.Server(
      tf.train.ClusterSpec(task.runtime_cluster), job_name=task.task_type,
      task_index=task.task_index, protocol=task.rpc_layer, config=config,
      start=True)
  # What the kernel says, not what was asked: a guard that did not act must
  # not pass for one that did.
  listening = bind_guard.listening_addresses(port)
  wide = [a for a in listening if bind_guard.is_wildcard(a)]
  if listen_address is not None and (wide or not listening):
    raise bind_guard.BindGuardError(
        f'{task.task_type}:{task.task_index}: asked to listen on '
        f'{listen_address}:{port} only, but the kernel shows port {port} '
        f'listening on {listening or "nothing"}; not serving.')
  if listen_address is None:
    where = f'every interface, port {port}'
  else:
    where = ', '.join(join_host_port(a, port)
                      for a in listening) + ' only'
  logging.info('Serving %s:%d at %s, listening on %s.', task.task_type,
               task.task_index, task.address, where)
  return server


def _done_queue(job: str, index: int):
  with tf.device(cpu_device(job, index)):
    return tf.queue.FIFOQueue(1, [tf.int32], shapes=[[]],
                              shared_name=_DONE_QUEUE)


def _only_task(job: str, index: int) -> tf.compat.v1.ConfigProto:
  # A TF1 session's master contacts every task of the cluster when the
  # session is created, and waits, with no timeout, for one that is gone (a
  # lost worker). The done queue lives on one task: talk to that one only.
  return tf.compat.v1.ConfigProto(device_filters=[f'/job:{job}/task:{index}'])


def wait_until_training_done(server: tf.distribute.Server, task: TaskInfo,
                             *, chief_address: str,
                             startup_timeout_secs: float = 600,
                             chief_grace_secs: float = 30,
                             poll_secs: float = 2,
                             finished: Optional[Callable[[], bool]] = None
                             ) -> int:
  """Serves until the chief signals the end of training.

  A task that finds no chief (gone, or not up `_CHIEF_ABSENT_SECS` after this
  server) asks `finished` whether training is over: a task restarted after
  the chief gave up on it (lost, then back too late for the signal) then
  exits 0 instead of waiting out the chief's grace.

  Args:
    server: this task's running server.
    task: this task.
    chief_address: where the chief's server listens.
    startup_timeout_secs: give up if the chief never comes up.
    chief_grace_secs: how long the chief may be unreachable before this
      task gives up on it.
    poll_secs: how often to look at the queue and the chief.
    finished: whether model_dir holds the end of training (its checkpoint
      at max_steps); None: never looked at.

  Returns:
    0 when the chief signalled the end of training, PREEMPTED_EXIT_CODE
    when it signalled it was preempted (the cluster restarts and resumes),
    CHIEF_LOST_EXIT_CODE when it vanished.
  """
  graph = tf.Graph()
  with graph.as_default():
    queue = _done_queue(task.task_type, task.task_index)
    size, dequeue = queue.size(), queue.dequeue()
  started = time.time()
  chief_seen = False
  unreachable_since: Optional[float] = None
  with tf.compat.v1.Session(
      server.target, graph=graph,
      config=_only_task(task.task_type, task.task_index)) as session:
    while True:
      if _token_arrives(session, size, within_secs=poll_secs):
        token = int(session.run(dequeue))
        # Let the chief's enqueue call get its reply before this process
        # goes: gRPC may otherwise leave the chief waiting on it until its
        # own timeout.
        time.sleep(_REPLY_GRACE_SECS)
        if token == PREEMPTED_EXIT_CODE:
          logging.warning('The chief was preempted; %s:%d exits with code '
                          '%d.', task.task_type, task.task_index, token)
          return PREEMPTED_EXIT_CODE
        logging.info('The chief finished training; %s:%d exits.',
                     task.task_type, task.task_index)
        return 0
      now = time.time()
      if reachable(chief_address, timeout=2.0):
        chief_seen, unreachable_since = True, None
        continue
      if ((chief_seen or now - started > _CHIEF_ABSENT_SECS) and
          finished is not None and finished()):
        logging.info('The chief at %s is gone and model_dir holds the end of '
                     'training; %s:%d exits.', chief_address, task.task_type,
                     task.task_index)
        return 0
      if not chief_seen:
        if now - started > startup_timeout_secs:
          logging.error('The chief at %s never came up in %.0f s; giving up.',
                        chief_address, startup_timeout_secs)
          return CHIEF_LOST_EXIT_CODE
        continue
      unreachable_since = unreachable_since or now
      if now - unreachable_since > chief_grace_secs:
        logging.error('The chief at %s is gone and never signalled the end '
                      'of training; %s:%d exits with code %d.', chief_address,
                      task.task_type, task.task_index, CHIEF_LOST_EXIT_CODE)
        return CHIEF_LOST_EXIT_CODE


def _token_arrives(session, size, *, within_secs: float) -> bool:
  """Whether the done queue (its `size`) holds the token within
  `within_secs`. Looking, then taking: a dequeue cut short by a timeout
  can race with the enqueue and drop the token (seen on a busy server)."""
  deadline = time.time() + within_secs
  while not session.run(size):
    if time.time() >= deadline:
      return False
    time.sleep(_SIZE_POLL_SECS)
  return True


# How long a task waits for a chief it never saw before it asks whether
# training is already over (on a rerun of a finished job the chief comes up
# about when its servers do, and tells them itself).
_CHIEF_ABSENT_SECS = 5.0

# How often a server looks whether its done queue holds the token.
_SIZE_POLL_SECS = 0.25

# How long a server that accepted connections earlier may refuse them
# before it counts as lost (a refused connection is no transient: the
# process holding the port is gone; one more look covers a slow accept).
_LOST_CONFIRM_SECS = 1.0

# How long a server that was told training is done waits before exiting,
# so that the teller's call gets its reply.
_REPLY_GRACE_SECS = 0.5


def _send_token(job: str, index: int, address: str, token: int,
                deadline: float, done: threading.Event,
                calling: threading.Event) -> None:
  """Waits (until `deadline`) for the server to accept connections, then
  puts `token` in its done queue; sets `calling` just before the call and
  `done` when it is settled (the session's close may block afterwards, on
  a server that exits at once)."""
  # A server seen up earlier (the chief waited for it before training)
  # that now refuses connections is lost: skipped at once, not waited for.
  lost_after = time.time() + _LOST_CONFIRM_SECS if was_reachable(
      address) else deadline
  while not reachable(address, timeout=1.0):
    if time.time() >= min(deadline, lost_after):
      logging.warning('%s:%d at %s is not reachable (lost?); not telling it '
                      'that training is done.', job, index, address)
      done.set()
      return
    time.sleep(0.5)
  left_ms = int(max(1.0, deadline - time.time()) * 1000)
  graph = tf.Graph()
  with graph.as_default():
    enqueue = _done_queue(job, index).enqueue(token)
  try:
    with tf.compat.v1.Session(f'grpc://{address}', graph=graph,
                              config=_only_task(job, index)) as session:
      calling.set()
      session.run(enqueue,
                  options=tf.compat.v1.RunOptions(timeout_in_ms=left_ms))
      done.set()
  except tf.errors.OpError as e:
    logging.warning('Could not tell %s:%d at %s that training is done: %s',
                    job, index, address, one_line(e))
  done.set()


def note_servers_up(tasks: Iterable[tuple], *,
                    poll_secs: float = 1.0) -> threading.Event:
  """Looks, from a daemon thread, at each (job, index, address) server
  until each has accepted a connection once, so that `signal_training_done`
  later tells a lost server (up once, gone now) from one still starting.

  Returns:
    An event that stops the looking when set (at the end of training).
  """
  stop = threading.Event()
  pending = [address for _, _, address in tasks]

  def look():
    while pending and not stop.is_set():
      pending[:] = [a for a in pending if not reachable(a, timeout=0.5)]
      stop.wait(poll_secs)

  threading.Thread(target=look, name='note-servers-up', daemon=True).start()
  return stop


def signal_training_done(tasks: Iterable[tuple], *, timeout_secs: float = 30,
                         preempted: bool = False) -> None:
  """Tells each (job, index, address) server that training is over.

  With `preempted`, the servers exit with PREEMPTED_EXIT_CODE (the chief
  saved and stopped on a stop signal: the cluster is to be restarted), else
  with 0. Bounded by `timeout_secs` in all, the servers told in parallel
  from daemon threads: one still starting (a chief restarted on a finished
  model_dir is done at once) is waited for until then, one that accepted
  connections earlier in this process and refuses them now (a lost worker)
  is skipped at once, and one that stops
  answering mid-call is left behind (creating a session has no timeout of
  its own). A server not told notices the chief is gone and exits on its
  own.
  """
  token = PREEMPTED_EXIT_CODE if preempted else 1
  deadline = time.time() + timeout_secs
  senders = []
  for job, index, address in tasks:
    done, calling = threading.Event(), threading.Event()
    thread = threading.Thread(
        target=_send_token,
        args=(job, index, address, token, deadline, done, calling),
        name=f'done-signal-{job}-{index}', daemon=True)
    thread.start()
    senders.append((thread, done, calling, address,
                    f'{job}:{index} at {address}'))
  gone = set()
  for thread, done, calling, address, name in senders:
    while not done.wait(_SETTLE_POLL_SECS):
      if calling.is_set() and not reachable(address, timeout=0.5):
        # A server exits as soon as it has the token; gone in mid-call, it
        # was told (its reply was lost, and the call would wait it out).
        gone.add(thread)
        break
      if time.time() >= deadline + 5:
        logging.warning('%s did not take the end-of-training signal within '
                        '%.0f s; it exits on its own once this chief is '
                        'gone.', name, timeout_secs)
        break
  # Let each session finish closing (quick, unless its server vanished mid-
  # call): see rpcs_in_flight for why a thread must not outlive this.
  for thread, _, _, _, _ in senders:
    # A call to a server that is gone may never return: a short look.
    patience = 1 if thread in gone else 10
    thread.join(max(0.0, min(deadline + 5, time.time() + patience) -
                    time.time()))
    if thread.is_alive():
      linger(thread)


# How often the chief looks whether a server it is telling is still there.
_SETTLE_POLL_SECS = 0.2

# Threads still inside a TensorFlow RPC after their bound (done signals,
# closing a session whose peer went away), or that may enter one at any
# time (a ClusterCoordinator's).
_lingering: List[threading.Thread] = []
# Sessions left open on purpose: their peer vanished, and closing them
# would wait for it forever.
_abandoned: List[object] = []


def linger(thread: threading.Thread) -> None:
  """Records a thread left inside a TensorFlow RPC, or one that may call
  into one until the process ends (see rpcs_in_flight)."""
  _lingering.append(thread)


def abandon(session) -> None:
  """Keeps `session` open for good (see rpcs_in_flight): closing a session
  one of whose tasks is gone waits for that task without a bound."""
  _abandoned.append(session)


def rpcs_in_flight() -> bool:
  """Whether a thread is still blocked in a TensorFlow RPC, or a session
  was abandoned.

  Python's finalization stops such a daemon thread by unwinding it through
  TensorFlow's C++ frames, which aborts the process (SIGABRT, 'FATAL:
  exception not rethrown'), and would close an abandoned session, which
  hangs. A process for which this is True must leave with os._exit once
  its output is flushed.
  """
  return bool(_abandoned) or any(thread.is_alive() for thread in _lingering)


# The server of this process's task, once started by own_server.
_own_servers: Dict[str, tf.distribute.Server] = {}


def own_server(task: TaskInfo, *,
               config: Optional[tf.compat.v1.ConfigProto] = None
               ) -> tf.distribute.Server:
  """This process's server for `task`, started on the first call (with
  `config`, see start_server).

  For the graph engine's parameter-server training, where the chief and
  every worker run their own sessions on their own servers, and its
  multi-worker training under a strategy that started none (the eager
  engine's strategies start theirs themselves).
  """
  server = _own_servers.get(task.address)
  if server is None:
    server = _own_servers[task.address] = start_server(task, config=config)
  return server


def wait_for_tasks(tasks: Iterable[tuple], *, timeout_secs: float,
                   advice: str, prefix: str = '',
                   poll_secs: float = 1.0) -> None:
  """Waits until every (job, index, address) server accepts a connection.

  Creating a TF1 session, or connecting a strategy, waits without a bound
  for every task it names; this bounds that wait.

  Raises:
    ClusterConfigError: naming the first server still unreachable, then
      `advice`.
  """
  deadline = time.time() + timeout_secs
  pending = list(tasks)
  while True:
    pending = [t for t in pending if not reachable(t[2], timeout=1.0)]
    if not pending:
      return
    if time.time() >= deadline:
      job, index, address = pending[0]
      raise ClusterConfigError(
          f'{prefix}server {job}:{index} at {address} is not reachable after '
          f'{timeout_secs:g} s; {advice}')
    time.sleep(poll_secs)


def wait_until_gone(tasks: Iterable[tuple], *, timeout_secs: float,
                    poll_secs: float = 0.25) -> None:
  """Waits until no (job, index, address) server accepts connections any
  more (each exited), for `timeout_secs` at most; logs the ones left."""
  deadline = time.time() + timeout_secs
  pending = list(tasks)
  while pending:
    pending = [t for t in pending if reachable(t[2], timeout=0.5)]
    if pending and time.time() >= deadline:
      logging.warning('%s still running %.0f s after being told that '
                      'training is done.', ', '.join(
                          f'{job}:{index}' for job, index, _ in pending),
                      timeout_secs)
      return
    if pending:
      time.sleep(poll_secs)


def wait_until_reachable(task: TaskInfo, *, timeout_secs: float,
                         poll_secs: float = 1.0) -> None:
  """Waits until every server of `task`'s training cluster accepts a
  connection (other than this task's own address).

  tf.estimator's standalone client hung forever on a missing server; this
  gives up after `timeout_secs` and names the server.

  Raises:
    ClusterConfigError: naming the first server still unreachable.
  """
  wait_for_tasks(
      [(job, index, address)
       for job, addresses in sorted(task.runtime_cluster.items())
       for index, address in enumerate(addresses)
       if address != task.address],
      timeout_secs=timeout_secs, poll_secs=poll_secs, prefix='remote_cluster: ',
      advice='start it with `python -m estimator_rt.run_server` or fix the '
      'address.')
