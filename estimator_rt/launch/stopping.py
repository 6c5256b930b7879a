"""Stopping processes known by pid: SIGTERM, a grace period, then SIGKILL.

For processes the launchers hold no handle of: servers `local_servers
start` left running, the processes a failed local Ray start left behind
(`ray_local`). Launched tasks are stopped through their supervisors.
"""

import os
import signal
import time
from typing import Iterable, List

# How long SIGKILLed processes get to be gone (a bound: nothing here waits
# without one).
_KILLED_EXIT_SECS = 2.0


def stop_pids(pids: Iterable[int], *, grace_secs: float) -> List[int]:
  """SIGTERM to each of `pids` alive, then SIGKILL to those still alive
  after `grace_secs`; reaps those that are this process's children.

  Returns:
    The pids that had to be SIGKILLed, in the order given.
  """
  pids = list(pids)
  for pid in pids:
    _signal(pid, signal.SIGTERM)
  deadline = time.monotonic() + grace_secs
  running = [pid for pid in pids if alive(pid)]
  while running and time.monotonic() < deadline:
    time.sleep(0.1)
    running = [pid for pid in running if alive(pid)]
  for pid in running:
    _signal(pid, signal.SIGKILL)
  # SIGKILL cannot be ignored; the wait reaps the children among them.
  deadline = time.monotonic() + _KILLED_EXIT_SECS
  left = list(running)
  while left and time.monotonic() < deadline:
    left = [pid for pid in left if alive(pid)]
    if left:
      time.sleep(0.05)
  return running


def alive(pid: int) -> bool:
  """Whether process `pid` still runs. A child of this process that ended
  is reaped; a zombie (where /proc tells) does not run."""
  try:
    if os.waitpid(pid, os.WNOHANG)[0] == pid:
      return False
  except ChildProcessError:  # Not this process's child.
    pass
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # Someone else's process: it exists.
    return True
  try:
    with open(f'/proc/{pid}/stat') as f:
      return f.read().rpartition(')')[2].split()[0] != 'Z'
  except (OSError, IndexError):  # No /proc: kill(pid, 0) said it exists.
    return True


def _signal(pid: int, signum: int) -> None:
  try:
    os.kill(pid, signum)
  except ProcessLookupError:  # Ended already.
    pass
