"""The tasks of a cluster as local processes: started, polled, stopped."""

import os
import signal
import subprocess
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence

from estimator_rt.launch.layout import TaskKey
from estimator_rt.launch.prefixed_output import copy_prefixed
from estimator_rt.launch.layout import chief_of
from estimator_rt.launch.layout import port_is_free
from estimator_rt.launch.layout import start_order
from estimator_rt.launch.layout import task_name
from estimator_rt.launch.layout import tf_config

# How long a SIGKILLed process may take to be reaped before the launcher
# gives up on it (a process stuck in the kernel).
_REAP_SECS = 30
_POLL_SECS = 0.1


def _signal_group(process: subprocess.Popen, signum: int) -> None:
  """Sends `signum` to the task's process group (it runs in its own)."""
  try:
    os.killpg(process.pid, signum)
  except ProcessLookupError:
    pass


class LocalCluster:
  """The task processes of one cluster: started, polled, stopped.

  Each task runs in its own process group (so a terminal's Ctrl-C reaches
  the launcher only, which decides what the tasks get). A task restarted
  gets a new process; `pid_history` keeps every one.

  Args:
    cluster: job -> addresses (see `make_cluster`).
    command: the command every task runs.
    env: extra environment for every task.
    output_lock: held while a line is written to stdout (shared with
      whoever else writes there).
  """

  def __init__(self, *, cluster: Dict[str, List[str]], command: List[str],
               env: Optional[Dict[str, str]] = None,
               output_lock: Optional[threading.Lock] = None):
    self.cluster = cluster
    self.command = command
    self._env = dict(env or {})
    self.processes: Dict[TaskKey, subprocess.Popen] = {}
    self.pid_history: Dict[TaskKey, List[int]] = {}
    self._threads: List[threading.Thread] = []
    self._lock = output_lock or threading.Lock()

  @property
  def chief_key(self) -> TaskKey:
    return chief_of(self.cluster)

  @property
  def keys(self) -> List[TaskKey]:
    """Every task, in start order: servers first, the chief last (the chief
    is the one that waits for the others)."""
    return start_order(self.cluster)

  def start(self, keys: Optional[Sequence[TaskKey]] = None) -> None:
    """Starts `keys` (default: every task), in start order."""
    wanted = set(self.keys if keys is None else keys)
    for key in (k for k in self.keys if k in wanted):
      self._start_one(key)

  def _start_one(self, key: TaskKey) -> None:
    env = dict(os.environ, **self._env)
    env['TF_CONFIG'] = tf_config(self.cluster, key)
    env['PYTHONUNBUFFERED'] = '1'
    process = subprocess.Popen(
        self.command, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    self.processes[key] = process
    self.pid_history.setdefault(key, []).append(process.pid)
    thread = threading.Thread(
        target=copy_prefixed, daemon=True,
        args=(process.stdout, task_name(key)), kwargs={'lock': self._lock})
    thread.start()
    self._threads.append(thread)

  def code(self, key: TaskKey) -> Optional[int]:
    """The exit code of `key`'s current process, None while it runs."""
    process = self.processes.get(key)
    return None if process is None else process.poll()

  def running(self, keys: Optional[Sequence[TaskKey]] = None
              ) -> List[TaskKey]:
    return [k for k in (self.keys if keys is None else keys)
            if k in self.processes and self.code(k) is None]

  def wait(self, keys: Sequence[TaskKey], *, secs: float,
           give_up: Callable[[], bool] = lambda: False) -> bool:
    """Waits up to `secs` for `keys` to exit, polling; returns early when
    `give_up()` turns true. Returns whether all of them exited."""
    deadline = time.monotonic() + secs
    while self.running(keys):
      if give_up() or time.monotonic() >= deadline:
        return False
      time.sleep(_POLL_SECS)
    return True

  def stop(self, keys: Optional[Sequence[TaskKey]] = None, *,
           kill_after: float,
           give_up: Callable[[], bool] = lambda: False) -> None:
    """SIGTERMs `keys` (default: every task), SIGKILLs what still runs
    after `kill_after` seconds (or once `give_up()` turns true) and reaps
    them."""
    keys = self.running(keys)
    for key in keys:
      _signal_group(self.processes[key], signal.SIGTERM)
    if self.wait(keys, secs=kill_after, give_up=give_up):
      return
    for key in self.running(keys):
      _signal_group(self.processes[key], signal.SIGKILL)
    for key in keys:
      try:
        self.processes[key].wait(timeout=_REAP_SECS)
      except subprocess.TimeoutExpired:
        pass  # Stuck in the kernel; its exit code stays None.

  def ports_free(self, keys: Sequence[TaskKey]) -> bool:
    return all(port_is_free(self.cluster[job][index])
               for job, index in keys)

  def close(self) -> None:
    """Lets the output of every process drain (bounded)."""
    for thread in self._threads:
      thread.join(timeout=5)

  def exit_codes(self) -> Dict[str, Optional[int]]:
    """Each task's current process: its exit code, None if it runs."""
    return {task_name(key): process.returncode
            for key, process in sorted(self.processes.items())}

  def pids(self) -> Dict[str, int]:
    return {task_name(key): process.pid
            for key, process in sorted(self.processes.items())}
