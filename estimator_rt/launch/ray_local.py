"""Starts a local Ray instance (`ray_job --address=local`), once more if
Ray's own startup wait runs out.

Ray waits a fixed 30 s for its new raylet to register with its GCS
(`raylet_start_wait_time_s` in ray/_private/node.py, not configurable),
and raises a plain Exception when it does not. On a loaded machine (two
cores running other TensorFlow processes) that wait can run out although
nothing is wrong. A failed start leaves its processes running (its
gcs_server, raylet and their helpers: the Node that knew them was never
returned, so `ray.shutdown()` cannot stop them); they are stopped here
before the one retry, so the retry competes with nothing of its own.
"""

import os
import sys
from typing import Callable, Dict, Set

from estimator_rt.launch import stopping

# Ray's message when its raylet did not register in time (Ray 2.x).
_STARTUP_TIMEOUT_MESSAGE = 'timed out during startup'

# Starts in all: the first, and one retry.
START_ATTEMPTS = 2

# How long the failed start's processes get to exit on SIGTERM before
# SIGKILL.
_STOP_GRACE_SECS = 5.0


def start_local_ray(init: Callable[..., object], **init_kwargs) -> None:
  """Calls `init(address='local', **init_kwargs)`, retrying once after a
  startup timeout.

  Args:
    init: `ray.init`.
    **init_kwargs: passed to every call of `init`.

  Raises:
    Whatever `init` raised on the last attempt, or at once for anything
    but Ray's startup timeout.
  """
  for attempt in range(1, START_ATTEMPTS + 1):
    before = descendant_pids(os.getpid())
    try:
      init(address='local', **init_kwargs)
      return
    except Exception as e:  # pylint: disable=broad-except
      # Ray raises a bare Exception for this one case; anything else
      # (a bad argument, a missing binary) is not helped by a retry.
      if (_STARTUP_TIMEOUT_MESSAGE not in str(e)
          or attempt == START_ATTEMPTS):
        raise
      stopping.stop_pids(descendant_pids(os.getpid()) - before,
                         grace_secs=_STOP_GRACE_SECS)
      print(f'warning: --address=local: Ray did not start in time ({e}); '
            f'stopped what it started, starting it again '
            f'(attempt {attempt + 1} of {START_ATTEMPTS})',
            file=sys.stderr, flush=True)


def descendant_pids(pid: int) -> Set[int]:
  """The live descendants of process `pid` (children, theirs, ...), read
  from /proc; empty where there is no /proc."""
  children: Dict[int, Set[int]] = {}
  try:
    entries = os.listdir('/proc')
  except OSError:
    return set()
  for entry in entries:
    if not entry.isdigit():
      continue
    try:
      with open(f'/proc/{entry}/stat') as f:
        # The command name (field 2) is in parentheses and may hold
        # spaces; the parent pid is the second field after it.
        parent = int(f.read().rpartition(')')[2].split()[1])
    except (OSError, IndexError, ValueError):  # Exited meanwhile.
      continue
    children.setdefault(parent, set()).add(int(entry))
  found, stack = set(), [pid]
  while stack:
    for child in children.get(stack.pop(), ()):
      if child not in found:
        found.add(child)
        stack.append(child)
  return found
