"""Runs a cluster's tasks to the end of the job, restarting lost tasks.

`Supervisor` holds the policy (see `exit_policy`) and drives any task
group with the interface of `local_processes.LocalCluster`: `cluster`,
`chief_key`, `keys`, `start(keys)`, `code(key)`, `running(keys)`,
`wait(keys, secs=, give_up=)`, `stop(keys, kill_after=, give_up=)`,
`ports_free(keys)`, `exit_codes()`, `pids()`, `pid_history`. Local
processes and Ray actors are two such groups.
"""

import json
import os
import signal
import threading
import time
from typing import List, Optional, Sequence, Tuple

from estimator_rt.launch.exit_policy import BAD_INPUT
from estimator_rt.launch.exit_policy import FAILED
from estimator_rt.launch.exit_policy import FINISHED
from estimator_rt.launch.exit_policy import PREEMPTED
from estimator_rt.launch.exit_policy import PREEMPTED_EXIT_CODE
from estimator_rt.launch.exit_policy import TIMEOUT_EXIT_CODE
from estimator_rt.launch.exit_policy import can_carry_on_without
from estimator_rt.launch.exit_policy import describe_exit
from estimator_rt.launch.exit_policy import describe_set
from estimator_rt.launch.exit_policy import exit_kind
from estimator_rt.launch.exit_policy import restart_set
from estimator_rt.launch.exit_policy import shell_code
from estimator_rt.launch.layout import TaskKey
from estimator_rt.launch.layout import port_is_free
from estimator_rt.launch.layout import task_name

# After the others had their grace period to exit on their own, how long a
# leftover gets between SIGTERM and SIGKILL.
TERMINATE_SECS = 10
# How long a restart waits for the ports of the tasks it restarts to be
# free (a killed server's socket closes with it; anything else holding
# the port is not ours to wait for).
_PORT_WAIT_SECS = 60
_POLL_SECS = 0.1


class Supervisor:
  """Runs a task group to the end of the job, restarting lost tasks.

  Args:
    cluster: the tasks (not started yet): a `local_processes.LocalCluster`
      or anything with its interface (see the module docstring).
    max_restarts: restarts allowed for failures (see `exit_kind`).
    max_preemptions: restarts allowed for preemptions, counted apart.
    grace_secs: how long tasks get to exit on their own at the end, and
      between SIGTERM and SIGKILL when they are stopped for a restart or
      because the launcher was signalled.
    timeout_secs: stop everything after this long in all (restarts
      included); None: no limit.
    pid_file: rewritten with every task's current process id (JSON) each
      time tasks start; None: not written.
    output_lock: shared with the cluster, so launcher lines never split a
      task's line.
  """

  def __init__(self, cluster, *, max_restarts: int,
               max_preemptions: int, grace_secs: float,
               timeout_secs: Optional[float] = None,
               pid_file: Optional[str] = None,
               output_lock: Optional[threading.Lock] = None):
    self.cluster = cluster
    self.max_restarts = max_restarts
    self.max_preemptions = max_preemptions
    self.grace_secs = grace_secs
    self.timeout_secs = timeout_secs
    self.pid_file = pid_file
    self.failure_restarts = 0
    self.preemption_restarts = 0
    self.history: List[dict] = []
    self.left_out: List[str] = []
    self._lock = output_lock or threading.Lock()
    self._signals: List[int] = []  # Stop signals the launcher received.
    self._settled = set()  # Tasks whose exit was dealt with.

  # --------------------------------------------------------- entry points
  def on_signal(self, signum: int, frame=None) -> None:
    """Signal handler: the run loop stops the cluster (see `_interrupted`).
    A second signal cuts every remaining grace period short."""
    del frame
    self._signals.append(signum)

  def run(self) -> int:
    """Starts every task and supervises them until the job ends.

    Returns:
      The launcher's exit code (see the module docstring).
    """
    start = time.monotonic()
    self.cluster.start()
    self._write_pids()
    while True:
      if self._signals:
        return self._interrupted()
      if (self.timeout_secs is not None and
          time.monotonic() - start > self.timeout_secs):
        self.log(f'--timeout_secs={self.timeout_secs:g} ran out: stopping '
                 'all tasks')
        self.cluster.stop(kill_after=TERMINATE_SECS)
        return TIMEOUT_EXIT_CODE
      ended = self._unsettled_exits()
      if not ended:
        time.sleep(_POLL_SECS)
        continue
      code = self._handle(*self._first_cause(ended))
      if code is not None:
        return code

  def status(self, exit_code: int) -> dict:
    """What `--status_file` receives."""
    return {'chief': self.cluster.code(self.cluster.chief_key),
            'exit_code': exit_code,
            'tasks': self.cluster.exit_codes(),
            'restarts': self.history,
            'failure_restarts': self.failure_restarts,
            'preemption_restarts': self.preemption_restarts,
            'left_out': self.left_out,
            'pids': {task_name(k): v for k, v in
                     sorted(self.cluster.pid_history.items())}}

  def log(self, message: str) -> None:
    with self._lock:
      print(f'[launcher] {message}', flush=True)

  # ------------------------------------------------------------ decisions
  def _unsettled_exits(self) -> List[Tuple[TaskKey, int]]:
    return [(k, self.cluster.code(k)) for k in self.cluster.keys
            if k not in self._settled and self.cluster.code(k) is not None]

  @staticmethod
  def _first_cause(ended: List[Tuple[TaskKey, int]]) -> Tuple[TaskKey, int]:
    """Of the tasks seen ended in the same poll, the one to act on: bad
    input first (never restarted), then a failure (the conservative
    reading: it uses the failure budget), then the rest."""
    order = {BAD_INPUT: 0, FAILED: 1, PREEMPTED: 2, FINISHED: 3}
    return min(ended, key=lambda e: order[exit_kind(e[1])])

  def _handle(self, key: TaskKey, code: int) -> Optional[int]:
    """Acts on `key` having exited with `code`; returns the launcher's exit
    code if that ends the run, else None."""
    kind = exit_kind(code)
    name = f'{task_name(key)} exited {describe_exit(code)}'
    if kind == FINISHED:
      if key == self.cluster.chief_key:
        self.log(f'{name}: the job is done')
        return self._end(0)
      self._settled.add(key)
      return None
    if kind == BAD_INPUT:
      self.log(f'{name}: restarting cannot help; stopping all tasks, exit '
               f'code {code}')
      return self._end(code)
    if self._restarts_left(kind):
      self._restart(key, code, kind)
      return None
    spent = self._budget_text(kind)
    if can_carry_on_without(self.cluster.cluster, key,
                            self.cluster.running()):
      self.log(f'{name}: not restarted ({spent}); the cluster carries on '
               'without it')
      self._settled.add(key)
      self.left_out.append(task_name(key))
      return None
    self.log(f'{name}: not restarted ({spent}); stopping all tasks, exit '
             f'code {shell_code(code)}')
    return self._end(shell_code(code))

  def _restarts_left(self, kind: str) -> bool:
    if kind == PREEMPTED:
      return self.preemption_restarts < self.max_preemptions
    return self.failure_restarts < self.max_restarts

  def _budget_text(self, kind: str) -> str:
    if kind == PREEMPTED:
      return (f'--max_preemptions={self.max_preemptions} used up')
    return f'--max_restarts={self.max_restarts} used up'

  # -------------------------------------------------------------- actions
  def _restart(self, key: TaskKey, code: int, kind: str) -> None:
    """Stops what still runs of `key`'s restart set and starts the set
    again on the same ports."""
    keys = restart_set(self.cluster.cluster, key)
    if kind == PREEMPTED:
      self.preemption_restarts += 1
      count = (f'preemption restart {self.preemption_restarts} of at most '
               f'{self.max_preemptions}')
    else:
      self.failure_restarts += 1
      count = f'restart {self.failure_restarts} of {self.max_restarts}'
    self.log(f'{task_name(key)} exited {describe_exit(code)}: restarting '
             f'{describe_set(self.cluster.cluster, key, keys)} ({count})')
    survivors = self.cluster.running(keys)
    # SIGTERM first: a training task saves a checkpoint at the end of the
    # loop in flight, so less work is lost than with SIGKILL.
    self.cluster.stop(survivors, kill_after=self.grace_secs,
                      give_up=lambda: bool(self._signals))
    self.history.append({
        'task': task_name(key), 'exit_code': code, 'reason': kind,
        'restarted': [task_name(k) for k in keys],
        'stopped': {task_name(k): self.cluster.code(k) for k in survivors},
        'failure_restarts': self.failure_restarts,
        'preemption_restarts': self.preemption_restarts})
    if self._signals:
      return  # The run loop stops everything.
    if not self._wait_ports(keys):
      self.log('ports still taken after %d s: %s; starting anyway (a task '
               'that cannot listen fails and counts as a failure)' % (
                   _PORT_WAIT_SECS, ', '.join(
                       self.cluster.cluster[j][i] for j, i in keys
                       if not port_is_free(self.cluster.cluster[j][i]))))
    self._settled.difference_update(keys)
    self.cluster.start(keys)
    self._write_pids()

  def _wait_ports(self, keys: Sequence[TaskKey]) -> bool:
    deadline = time.monotonic() + _PORT_WAIT_SECS
    while not self.cluster.ports_free(keys):
      if self._signals or time.monotonic() >= deadline:
        return False
      time.sleep(_POLL_SECS)
    return True

  def _end(self, code: int) -> int:
    """Gives every task still running `grace_secs` to exit on its own,
    stops the rest, returns `code`."""
    self.cluster.wait(self.cluster.keys, secs=self.grace_secs,
                      give_up=lambda: bool(self._signals))
    if self._signals:
      return self._interrupted()
    self.cluster.stop(kill_after=TERMINATE_SECS)
    return code

  def _interrupted(self) -> int:
    """The launcher got SIGTERM or SIGINT: every task gets SIGTERM (a
    training task saves and exits 143), then SIGKILL after `grace_secs` or
    at a second signal."""
    signum = self._signals[0]
    self.log(f'{signal.Signals(signum).name}: sending SIGTERM to all tasks '
             f'(SIGKILL after {self.grace_secs:g} s or at a second signal)')
    self.cluster.stop(kill_after=self.grace_secs,
                      give_up=lambda: len(self._signals) > 1)
    chief = self.cluster.code(self.cluster.chief_key)
    if chief in (0, PREEMPTED_EXIT_CODE):
      return chief
    return 128 + signum

  def _write_pids(self) -> None:
    if not self.pid_file:
      return
    partial = f'{self.pid_file}.tmp{os.getpid()}'
    with open(partial, 'w') as f:
      json.dump(self.cluster.pids(), f)
    os.replace(partial, self.pid_file)  # Readers never see half a file.
