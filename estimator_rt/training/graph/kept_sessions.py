"""Sessions the graph engine keeps open from one call to the next.

tf.estimator 2.15 opened a session for every `train`, `evaluate` and
`predict`, restored the newest checkpoint into it, initialized what the
checkpoint does not hold, had Grappler optimize each of its `session.run`
signatures, and closed it: most of a short call's time (a 10-step `train`,
a one-batch `evaluate`, a one-example `predict`). Here a call leaves its
graph and session open for the next call of the same mode, and that call
runs in them when it builds the same graph (graph_identity.py):

  - the input_fn and the model_fn are still called as 2.15 called them,
    each call building its graph afresh (programs count those calls); the
    new graph is compared with the kept one and dropped;
  - the newest checkpoint on disk is restored into the kept session unless
    it is the one the session already holds (the same files, unchanged
    since: a training call's own final save, an evaluation of the same
    checkpoint); local variables, lookup tables and the input start again,
    as in a new session (the input's iterator is replaced right after the
    call that used it, on a thread of its own that the next call waits
    for: a used tf.data iterator under autotuning takes longer to replace
    the longer it sits idle);
  - SessionRunHooks see a session made for them: `begin`,
    `after_create_session`, each run, `end`.

Only plain calls keep their session: one device, a checkpoint to restore
(no warm start), no Scaffold of the model_fn's with its own ops or
`init_fn`, no SessionRunHooks of the model_fn's (they hold the new graph's
tensors), no queue runners, no seeded stateful random op that runs each
call (training/graph_identity.py's `runs_seeded_random_ops`). What is kept
is bounded by `kept_state.kept_bytes()` of variables (1 GiB;
ESTIMATOR_RT_KEPT_SESSIONS_MB sets it, 0 keeps none), the least recently
used dropped first, and closed with the engine.
"""

import dataclasses
import threading
from typing import Any, Callable, Dict, Optional, Tuple

import tensorflow as tf
from tensorflow.python.client import session as session_lib  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.core import checkpoints
from estimator_rt.core import tf_log
from estimator_rt.training import kept_state

def variable_bytes(graph: tf.Graph) -> int:
  """The bytes of `graph`'s variables (those of unknown shape count 0)."""
  return kept_state.variables_bytes(
      graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES) +
      graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES))


def plain_scaffold(scaffold) -> bool:
  """Whether a model_fn's `scaffold` adds nothing a new session would run
  differently (None, or one with no ops, feeds, init_fn or Saver)."""
  if scaffold is None:
    return True
  return all(getattr(scaffold, name, None) is None for name in (
      'init_op', 'init_feed_dict', 'init_fn', 'ready_op',
      'ready_for_local_init_op', 'local_init_op', 'saver', 'summary_op'))


# How long a call waits for a kept session's input to start again
# (`InputRestart`; milliseconds as a rule): a run still going after this
# is cut off by its own timeout, and the session is not used again.
RESTART_WAIT_SECS = 60


class InputRestart:
  """A kept graph's input iterator started again on a thread of its own,
  right after the call that read it: the call returns without waiting, and
  the next call that takes the session waits for it (`succeeded`).

  Args:
    session: the kept session.
    initializer: the input iterator's initializer op.
  """

  def __init__(self, session, initializer):
    self._failed = False
    # Not a daemon: a process that exits meanwhile waits the few
    # milliseconds rather than tear TensorFlow down under a running step;
    # the run's own timeout bounds that wait.
    self._thread = threading.Thread(
        target=self._run, args=(session, initializer),
        name='estimator_rt_input_restart')
    self._thread.start()

  def _run(self, session, initializer) -> None:
    try:
      session.run(initializer, options=tf.compat.v1.RunOptions(
          timeout_in_ms=RESTART_WAIT_SECS * 1000))
    except Exception:  # pylint: disable=broad-except
      self._failed = True  # The session is then not used again.

  def succeeded(self) -> bool:
    """Waits (at most RESTART_WAIT_SECS) for the run; whether it ended
    without an error."""
    self._thread.join(RESTART_WAIT_SECS)
    return not self._thread.is_alive() and not self._failed


@dataclasses.dataclass
class Kept:
  """A graph and its open session, kept after a call of `mode`.

  Attributes:
    mode: the ModeKeys value of the call that made it.
    input_key: the fingerprint of the graph's input part (what the
      input_fn built).
    model_key: the fingerprint of the rest (what the model_fn built).
    graph: the graph, finalized.
    session: its session, open.
    parts: what the engine built in the graph and runs again (its
      Scaffold, finalized, among them).
    holds: the `checkpoints.content_id` of the checkpoint the session's
      variables hold, or None if not known.
    nbytes: the bytes of its variables.
    restart: its input started again after the call that kept it, None if
      it was not read or has no iterator to start.
  """

  mode: str
  input_key: str
  model_key: str
  graph: tf.Graph
  session: Any
  parts: Any
  holds: Optional[Tuple]
  nbytes: int = 0
  restart: Optional[InputRestart] = None

  def ready(self) -> bool:
    """Waits for the input's restart; whether the session can be used."""
    restart, self.restart = self.restart, None
    return restart is None or restart.succeeded()

  def close(self) -> None:
    self.ready()  # Not closed under a run still going.
    try:
      self.session.close()
    except Exception:  # pylint: disable=broad-except
      pass  # Closing what is no longer used must not fail a call.


class Keeper:
  """The kept sessions of one engine, at most one per mode, within
  `budget` bytes of variables (default `kept_state.kept_bytes()`). `take` hands one
  out to one call at a time."""

  def __init__(self, budget: Optional[int] = None):
    self._budget = kept_state.kept_bytes() if budget is None else budget
    self._kept: Dict[str, Kept] = {}  # In order of use, oldest first.
    self._lock = threading.Lock()

  def take(self, mode: str, matches: Callable[[Kept], bool]
           ) -> Optional[Kept]:
    """The kept session of `mode` if `matches` accepts it (it is then the
    caller's until `keep`), else None."""
    with self._lock:
      kept = self._kept.get(mode)
      if kept is None or not matches(kept):
        return None
      del self._kept[mode]
    if not kept.ready():
      kept.close()
      return None
    return kept

  def input_key(self, mode: str) -> Optional[str]:
    """The input part's fingerprint of the kept graph of `mode` (it stays
    kept), or None if none is kept."""
    with self._lock:
      kept = self._kept.get(mode)
      return None if kept is None else kept.input_key

  @property
  def keeps(self) -> bool:
    """Whether anything may be kept (a budget above 0)."""
    return self._budget > 0

  def keep(self, kept: Kept) -> None:
    """Keeps `kept` for the next call of its mode (closing the one it
    replaces, and the oldest others beyond the budget)."""
    if kept.nbytes > self._budget:
      kept.close()
      return
    with self._lock:
      old = self._kept.pop(kept.mode, None)
      self._kept[kept.mode] = kept
      dropped = [old] if old is not None else []
      while sum(k.nbytes for k in self._kept.values()) > self._budget:
        oldest = next(iter(self._kept))
        dropped.append(self._kept.pop(oldest))
    for each in dropped:
      each.close()

  def drop_all(self) -> None:
    with self._lock:
      kept, self._kept = list(self._kept.values()), {}
    for each in kept:
      each.close()

  def __del__(self):
    self.drop_all()


class _LeftOpen(session_lib.SessionInterface):
  """A session as a MonitoredSession sees it, whose `close` leaves it
  open (the Keeper closes it)."""

  def __init__(self, session):
    self._session = session

  @property
  def graph(self):
    return self._session.graph

  @property
  def sess_str(self):
    return self._session.sess_str

  def run(self, *args, **kwargs):
    return self._session.run(*args, **kwargs)

  def partial_run_setup(self, *args, **kwargs):
    return self._session.partial_run_setup(*args, **kwargs)

  def partial_run(self, *args, **kwargs):
    return self._session.partial_run(*args, **kwargs)

  def __getattr__(self, name):
    return getattr(self._session, name)

  def close(self) -> None:
    pass


class KeepingCreator(tf.compat.v1.train.SessionCreator):
  """`creator`'s session, which MonitoredSession's close leaves open;
  `session` is it, once created."""

  def __init__(self, creator):
    self._creator = creator
    self.session = None

  def create_session(self):
    self.session = self._creator.create_session()
    return _LeftOpen(self.session)


class ReusingCreator(tf.compat.v1.train.SessionCreator):
  """The session of `kept`, as a new one of the call: the checkpoint at
  `checkpoint_path` restored into it unless it holds it already
  (`kept.holds`), then `local_init_op` run (local variables, lookup tables,
  as a new session initializes them)."""

  def __init__(self, kept: Kept, *, saver, checkpoint_path: str,
               local_init_op):
    self._kept = kept
    self._saver = saver
    self._path = checkpoint_path
    self._local_init_op = local_init_op
    self.session = kept.session

  def create_session(self):
    session = self._kept.session
    if not checkpoints.still_holds(self._kept.holds, self._path):
      self._saver.restore(session, self._path)
      self._kept.holds = checkpoints.content_id(self._path)
    else:
      # The Saver's line, which 2.15's new session logged at every call.
      tf_log.info('Restoring parameters from %s', self._path)
    if self._local_init_op is not None:
      session.run(self._local_init_op)
    return _LeftOpen(session)
