"""The tasks of a cluster as Ray actors: placed, started, polled, stopped.

One Ray actor per task (chief, worker, ps, evaluator), holding the task's
Ray resources (`num_cpus`, `num_gpus`) for the whole run. Each actor picks
a free port on its own node (`layout.reserve_port`, on the node's Ray IP
address, 127.0.0.1 on a cluster started with that address) and keeps it
reserved until every actor has one, so no two tasks of a node get the
same port; the driver lays the addresses out as a TF_CONFIG cluster. Each
actor then runs the task's command as a subprocess with its TF_CONFIG, in
its own process group, and keeps its output lines; the driver polls every
actor, prints each line prefixed with the task's role (`[worker:1] ...`)
and learns the exit codes.

`RayCluster` has the task-group interface `supervisor.Supervisor` drives
(see that module), so restarts, preemptions and bad input are handled as
the local launcher handles them. A restart runs the command again in the
same actor, on the same node and port, so the cluster never changes.
`run_on_ray` is the whole launcher as one function.

estimator_rt's bind guard (docs/standalone-clients.md) makes each
server listen on its node's address only, which is the address Ray knows
the node by: TensorFlow servers take work from anyone who reaches them, so
a Ray cluster on a network others can reach needs a firewall anyway.

Not handled: a task whose actor dies (its node lost) counts as failed
with exit code 1, and a restart of it fails again, because a new actor
would get another address and the cluster every other task was given
would no longer hold.
"""

import collections
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import threading
import time
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

import ray

from estimator_rt.launch.layout import TaskKey
from estimator_rt.launch.layout import chief_of
from estimator_rt.launch.layout import cluster_dict
from estimator_rt.launch.layout import port_is_free
from estimator_rt.launch.layout import reserve_port
from estimator_rt.launch.layout import start_order
from estimator_rt.launch.layout import task_keys
from estimator_rt.launch.layout import task_name
from estimator_rt.launch.layout import tf_config
from estimator_rt.launch.supervisor import Supervisor
from estimator_rt.launch.supervisor import TERMINATE_SECS

# What a task whose actor is gone (its node or its worker process died)
# reports as exit code: a failure, as the supervisor reads it.
ACTOR_LOST_EXIT_CODE = 1
# An actor keeps at most this many unread output lines; a driver that
# stops polling loses the oldest ones, not the task's progress.
_MAX_BUFFERED_LINES = 100_000
_POLL_SECS = 0.2
_RAY_CALL_SECS = 120  # A Ray call to a live actor answers well before.
_REAP_SECS = 30
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
  """In the task's process before exec: SIGKILL it if the actor dies (a
  killed actor runs no clean-up, and the task is in its own session)."""
  try:
    ctypes.CDLL('libc.so.6', use_errno=True).prctl(
        _PR_SET_PDEATHSIG, signal.SIGKILL)
  except OSError:
    pass  # Not Linux: the actor's own stop() is the only clean-up.
  os.setsid()


class TaskProcess:
  """Inside one Ray actor: one task's address and its process.

  Methods return at once (the driver polls); the process's output is read
  by a thread into a buffer that `poll` empties.
  """

  def __init__(self, name: str):
    self._name = name
    self._reserved: Optional[socket.socket] = None
    self._process: Optional[subprocess.Popen] = None
    self._reader: Optional[threading.Thread] = None
    self._lines: Deque[str] = collections.deque(maxlen=_MAX_BUFFERED_LINES)

  def reserve_address(self, host: Optional[str] = None) -> str:
    """Picks a free port on `host` (default: this node's address in the
    Ray cluster) and holds it until `start`; returns 'host:port'."""
    if not host:
      node_id = ray.get_runtime_context().get_node_id()
      host = next(node['NodeManagerAddress'] for node in ray.nodes()
                  if node['NodeID'] == node_id)
    self._reserved = reserve_port(host)
    return f'{host}:{self._reserved.getsockname()[1]}'

  def start(self, command: List[str], env: Dict[str, str],
            cwd: Optional[str]) -> int:
    """Starts `command` with `env` over the actor's environment (which
    carries Ray's CUDA_VISIBLE_DEVICES for the task's GPUs); returns its
    pid. `cwd` is used if it exists on this node."""
    if self._reserved is not None:
      self._reserved.close()  # The task's server binds it next.
      self._reserved = None
    if self._process is not None and self._process.poll() is None:
      raise RuntimeError(f'{self._name} still runs as pid '
                         f'{self._process.pid}: stop it before a restart')
    self._lines.clear()
    self._process = subprocess.Popen(
        command, env=dict(os.environ, **env),
        cwd=cwd if cwd and os.path.isdir(cwd) else None,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        errors='replace', preexec_fn=_die_with_parent)
    self._reader = threading.Thread(target=self._read, daemon=True,
                                     args=(self._process.stdout,))
    self._reader.start()
    return self._process.pid

  def _read(self, stream) -> None:
    for line in iter(stream.readline, ''):
      self._lines.append(line.rstrip('\n'))
    stream.close()

  def poll(self) -> Tuple[Optional[int], List[str]]:
    """(exit code or None while it runs, the output lines since the last
    poll). The exit code is given only once the output is all read, so
    the driver never sees a task end before its last lines."""
    code = None if self._process is None else self._process.poll()
    if code is not None and self._reader is not None:
      self._reader.join(timeout=5)
      if self._reader.is_alive():
        code = None  # Output still draining (a grandchild holds the pipe?).
    lines = []
    while self._lines:
      lines.append(self._lines.popleft())
    return code, lines

  def send_signal(self, signum: int) -> None:
    """Sends `signum` to the task's process group."""
    if self._process is not None and self._process.poll() is None:
      try:
        os.killpg(self._process.pid, signum)
      except ProcessLookupError:
        pass

  def port_is_free(self, address: str) -> bool:
    return port_is_free(address)

  def shutdown(self) -> None:
    """SIGKILLs whatever still runs of the task, and reaps it."""
    self.send_signal(signal.SIGKILL)
    if self._process is not None:
      try:
        self._process.wait(timeout=_REAP_SECS)
      except subprocess.TimeoutExpired:
        pass
    if self._reserved is not None:
      self._reserved.close()


_TaskActor = ray.remote(TaskProcess)


class PlacementError(RuntimeError):
  """Ray could not place every task's actor in time."""


class RayCluster:
  """The tasks of one cluster, each in its own Ray actor.

  The constructor places the actors (they hold their resources until
  `close`) and gathers their addresses into `cluster`; nothing runs until
  `start`. Needs `ray.init` done.

  Args:
    keys: the tasks (`layout.task_keys`).
    command: the command every task runs.
    env: extra environment for every task (the rest is the actor's: the
      environment the Ray node was started with, plus Ray's own variables).
    cwd: every task's working directory, where it exists on the node.
    cpus_per_task, gpus_per_task: each actor's Ray resources; fractions
      are allowed (several small tasks on one CPU).
    spread: place the actors on as many nodes as possible (Ray's SPREAD
      strategy) rather than filling one node first.
    host: every task's address (e.g. '127.0.0.1' when the Ray cluster is
      this machine alone); None: each node's address in the Ray cluster
      (Ray on Linux never uses a loopback address for a node).
    placement_timeout_secs: how long to wait for Ray to place every actor
      (it waits for resources forever otherwise).
    output_lock: held while a line is written to stdout.
  """

  def __init__(self, *, keys: Sequence[TaskKey], command: List[str],
               env: Optional[Dict[str, str]] = None,
               cwd: Optional[str] = None, cpus_per_task: float = 1.0,
               gpus_per_task: float = 0.0, spread: bool = False,
               host: Optional[str] = None,
               placement_timeout_secs: float = 300,
               output_lock: Optional[threading.Lock] = None):
    self.command = list(command)
    self._env = dict(env or {}, PYTHONUNBUFFERED='1')
    self._cwd = cwd
    self._lock = output_lock or threading.Lock()
    self._state_lock = threading.RLock()
    self._codes: Dict[TaskKey, Optional[int]] = {}
    self._pids: Dict[TaskKey, int] = {}
    self.pid_history: Dict[TaskKey, List[int]] = {}
    self._lost = set()
    options = {'num_cpus': cpus_per_task, 'num_gpus': gpus_per_task,
               # Each actor runs one task; Ray must not bring it back
               # somewhere else on its own (the address would change).
               'max_restarts': 0}
    if spread:
      options['scheduling_strategy'] = 'SPREAD'
    self._actors = {key: _TaskActor.options(
        name=None, **options).remote(task_name(key)) for key in keys}
    try:
      addresses = self._call_all(
          {k: actor.reserve_address.remote(host)
           for k, actor in self._actors.items()},
          timeout=placement_timeout_secs)
    except ray.exceptions.GetTimeoutError:
      for actor in self._actors.values():  # Placed or not: nothing runs.
        ray.kill(actor)
      raise PlacementError(
          f'Ray placed fewer than {len(keys)} task actors in '
          f'{placement_timeout_secs:g} s (each asks for '
          f'num_cpus={cpus_per_task:g}, num_gpus={gpus_per_task:g}; the '
          f'cluster has {ray.cluster_resources()}): lower --cpus_per_task '
          '/ cpus_per_task or --gpus_per_task / gpus_per_task, or add '
          'nodes') from None
    self.cluster = cluster_dict(list(keys), [addresses[k] for k in keys])
    self._closed = threading.Event()
    self._pump = threading.Thread(target=self._pump_output, daemon=True)
    self._pump.start()

  @staticmethod
  def _call_all(refs: Dict[TaskKey, 'ray.ObjectRef'], *,
                timeout: float = _RAY_CALL_SECS) -> Dict[TaskKey, object]:
    keys = list(refs)
    values = ray.get([refs[k] for k in keys], timeout=timeout)
    return dict(zip(keys, values))

  # ------------------------------------------------- the group interface
  @property
  def chief_key(self) -> TaskKey:
    return chief_of(self.cluster)

  @property
  def keys(self) -> List[TaskKey]:
    """Every task, in start order: servers first, the chief last."""
    return start_order(self.cluster)

  def start(self, keys: Optional[Sequence[TaskKey]] = None) -> None:
    """Starts `keys` (default: every task), in start order, each in its
    actor."""
    wanted = set(self.keys if keys is None else keys)
    with self._state_lock:
      for key in (k for k in self.keys if k in wanted):
        env = dict(self._env, TF_CONFIG=tf_config(self.cluster, key))
        try:
          pid = ray.get(self._actors[key].start.remote(
              self.command, env, self._cwd), timeout=_RAY_CALL_SECS)
        except (ray.exceptions.RayActorError,
                ray.exceptions.GetTimeoutError) as e:
          self._actor_lost(key, e)
          continue
        self._codes[key] = None
        self._pids[key] = pid
        self.pid_history.setdefault(key, []).append(pid)

  def code(self, key: TaskKey) -> Optional[int]:
    """The exit code of `key`'s current process, None while it runs (as
    of the last poll, at most `_POLL_SECS` old)."""
    return self._codes.get(key)

  def running(self, keys: Optional[Sequence[TaskKey]] = None
              ) -> List[TaskKey]:
    return [k for k in (self.keys if keys is None else keys)
            if k in self._codes and self._codes[k] is None]

  def wait(self, keys: Sequence[TaskKey], *, secs: float,
           give_up: Callable[[], bool] = lambda: False) -> bool:
    """Waits up to `secs` for `keys` to exit; returns early when
    `give_up()` turns true. Returns whether all of them exited."""
    deadline = time.monotonic() + secs
    while True:
      self._poll()
      if not self.running(keys):
        return True
      if give_up() or time.monotonic() >= deadline:
        return False
      time.sleep(_POLL_SECS)

  def stop(self, keys: Optional[Sequence[TaskKey]] = None, *,
           kill_after: float,
           give_up: Callable[[], bool] = lambda: False) -> None:
    """SIGTERMs `keys` (default: every task), SIGKILLs what still runs
    after `kill_after` seconds (or once `give_up()` turns true), and waits
    (bounded) until the actors saw them exit."""
    self._poll()
    keys = self.running(keys)
    self._signal(keys, signal.SIGTERM)
    if self.wait(keys, secs=kill_after, give_up=give_up):
      return
    self._signal(self.running(keys), signal.SIGKILL)
    self.wait(keys, secs=_REAP_SECS)

  def ports_free(self, keys: Sequence[TaskKey]) -> bool:
    try:
      return all(self._call_all({
          k: self._actors[k].port_is_free.remote(self.cluster[k[0]][k[1]])
          for k in keys if k not in self._lost}).values())
    except ray.exceptions.RayError:
      return True  # A lost actor: starting it fails and says so.

  def exit_codes(self) -> Dict[str, Optional[int]]:
    """Each started task's current process: its exit code, None if it
    runs."""
    return {task_name(k): self._codes[k] for k in sorted(self._codes)}

  def pids(self) -> Dict[str, int]:
    """Each task's current process id, on its own node."""
    return {task_name(k): pid for k, pid in sorted(self._pids.items())}

  def close(self) -> None:
    """Prints the last output, then kills every task still running and
    every actor (releasing their resources)."""
    self._closed.set()
    self._pump.join(timeout=_RAY_CALL_SECS)
    self._poll()
    actors = self._actors
    refs = [a.shutdown.remote() for k, a in actors.items()
            if k not in self._lost]
    try:
      ray.get(refs, timeout=_REAP_SECS + 10)
    except ray.exceptions.RayError:
      pass  # Actors already gone take their tasks with them (pdeathsig).
    for actor in actors.values():
      ray.kill(actor)

  # ------------------------------------------------------------ internals
  def _signal(self, keys: Sequence[TaskKey], signum: int) -> None:
    refs = [self._actors[k].send_signal.remote(signum) for k in keys
            if k not in self._lost]
    try:
      ray.get(refs, timeout=_RAY_CALL_SECS)
    except ray.exceptions.RayError:
      pass  # The next poll marks the lost actors.

  def _pump_output(self) -> None:
    while not self._closed.wait(_POLL_SECS):
      self._poll()

  def _poll(self) -> None:
    """Asks every actor whose task ran for its exit code and new output;
    prints the output, prefixed with the task's role."""
    with self._state_lock:
      keys = [k for k in self._codes if k not in self._lost]
      refs = {k: self._actors[k].poll.remote() for k in keys}
      ready, _ = ray.wait(list(refs.values()), num_returns=len(refs),
                          timeout=_RAY_CALL_SECS)
      ready = set(ready)
      for key, ref in refs.items():
        if ref not in ready:
          continue  # A slow node; asked again next time.
        try:
          code, lines = ray.get(ref)
        except ray.exceptions.RayActorError as e:
          self._actor_lost(key, e)
          continue
        self._print(task_name(key), lines)
        if self._codes.get(key) is None:
          self._codes[key] = code

  def _actor_lost(self, key: TaskKey, error: Exception) -> None:
    self._lost.add(key)
    self._codes[key] = ACTOR_LOST_EXIT_CODE
    self._print('launcher', [
        f'{task_name(key)}: its Ray actor is gone ({type(error).__name__}); '
        f'counted as exit code {ACTOR_LOST_EXIT_CODE}'])

  def _print(self, prefix: str, lines: Sequence[str]) -> None:
    if not lines:
      return
    with self._lock:
      try:
        print('\n'.join(f'[{prefix}] {line}' for line in lines), flush=True)
      except (BrokenPipeError, ValueError):  # Nobody reads the output.
        pass


def run_on_ray(*, command: Sequence[str], workers: int, ps: int = 0,
               chief: bool = False, evaluator: bool = False,
               address: Optional[str] = None,
               env: Optional[Dict[str, str]] = None,
               cwd: Optional[str] = None, cpus_per_task: float = 1.0,
               gpus_per_task: float = 0.0, spread: bool = False,
               host: Optional[str] = None,
               max_restarts: int = 0, max_preemptions: int = 100,
               grace_secs: float = 120,
               timeout_secs: Optional[float] = None,
               placement_timeout_secs: float = 300,
               pid_file: Optional[str] = None,
               init_kwargs: Optional[dict] = None,
               on_started: Optional[Callable[[object], None]] = None
               ) -> dict:
  """Runs `command` as every task of a TF_CONFIG cluster on Ray, to the end
  of the job; returns every task's exit code.

  The roles are those of `estimator_rt.launch.local` (`workers`,
  `ps`, `chief`, `evaluator`), and so is what happens when a task ends
  early (see `supervisor.Supervisor`: 2 is never restarted, 143 restarts
  apart from the `max_restarts` budget, a restart keeps every address).

  Args:
    command: what every task runs, e.g. `['python', '-m',
      'estimator_rt.main', '--distribution_strategy=parameter_server',
      ...]`; it must run on every node (same paths, same environment).
    address: the Ray cluster to use (`ray.init(address=...)`: 'auto', a
      'host:port', or 'local' for a new local instance, which is stopped
      at the end). Ignored when `ray.init` was already called in this
      process; that connection is left open.
    env, cwd, cpus_per_task, gpus_per_task, spread, host,
      placement_timeout_secs: see `RayCluster`. `cwd` defaults to this
      process's working directory.
    max_restarts, max_preemptions, grace_secs, timeout_secs, pid_file:
      see `supervisor.Supervisor`.
    init_kwargs: more `ray.init` arguments (e.g. `num_cpus` for a local
      instance).
    on_started: called with the `Supervisor` before the tasks start (a
      caller that handles signals passes them to its `on_signal`).

  Returns:
    `Supervisor.status`: 'exit_code' (the chief's when the job is done; 2
    bad input; the lost task's code when no restart was left; 124 when
    `timeout_secs` ran out), 'tasks' (each task's last exit code),
    'chief', 'restarts' and the pids of every process each task ran.

  Raises:
    ValueError: the role counts make no cluster.
    PlacementError: Ray had no room for every task's actor in time.
  """
  keys = task_keys(workers=workers, ps=ps, chief=chief, evaluator=evaluator)
  lock = threading.Lock()
  with _connected(address, init_kwargs), contextlib.closing(RayCluster(
      keys=keys, command=list(command), env=env, cwd=cwd or os.getcwd(),
      cpus_per_task=cpus_per_task, gpus_per_task=gpus_per_task,
      spread=spread, host=host,
      placement_timeout_secs=placement_timeout_secs,
      output_lock=lock)) as group:
    supervisor = Supervisor(
        group, max_restarts=max_restarts, max_preemptions=max_preemptions,
        grace_secs=grace_secs, timeout_secs=timeout_secs, pid_file=pid_file,
        output_lock=lock)
    return supervisor.status(_supervise(group, supervisor, on_started))


@contextlib.contextmanager
def _connected(address: Optional[str], init_kwargs: Optional[dict]):
  """Connects to Ray unless this process already is; a connection made
  here is closed (and a 'local' instance stopped) on the way out."""
  owns_ray = not ray.is_initialized()
  if owns_ray:
    ray.init(address=address, **(init_kwargs or {}))
  try:
    yield
  finally:
    if owns_ray:
      ray.shutdown()


def _supervise(group: RayCluster, supervisor: Supervisor,
               on_started: Optional[Callable[[object], None]]) -> int:
  """Runs the job under `supervisor`; its exit code. No task outlives
  this, also after an exception in the launcher itself."""
  supervisor.log(f'cluster: {json.dumps(group.cluster)}')
  if on_started is not None:
    on_started(supervisor)
  try:
    return supervisor.run()
  finally:
    group.stop(kill_after=TERMINATE_SECS)
    supervisor.log(f'exit codes: {json.dumps(group.exit_codes())}')
