#!/usr/bin/env python3
"""Launches a TF_CONFIG cluster as local processes on loopback ports.

    python scripts/launch_local_cluster.py --workers 2 --ps 1 --chief \
        --evaluator --max_restarts 3 -- python -m estimator_rt.main \
        --distribution_strategy=parameter_server --model_dir=/tmp/m ...

Every task runs the same command with its own TF_CONFIG, with free ports
on 127.0.0.1 as the cluster addresses; estimator_rt's bind guard keeps
each task's server on that loopback address (TensorFlow alone would
listen on every interface). Each output line is prefixed with the task's
role. When the chief ends (the `chief` task, or worker 0 without one) with
exit code 0, the job is done: the other tasks get `--grace_secs` to exit on
their own (an evaluator finishing its last evaluation, servers told by the
chief that training is done); whatever is still running then is stopped.

A task that ends before the job is done is judged by its exit code:

  0    finished (a server or evaluator ending on its own): nothing to do.
  2    bad input (flags, TF_CONFIG, model): restarting cannot help. The
       other tasks get `--grace_secs` to exit on their own, the rest are
       stopped, and the launcher exits 2.
  143  preempted (estimator_rt saved a checkpoint and asks to be resumed;
       a task killed by SIGTERM counts the same, 143 being 128 + SIGTERM):
       restarted, up to `--max_preemptions` times.
  else failed (any other code, or killed by a signal): restarted, up to
       `--max_restarts` times.

A restart runs the same command on the same ports and model_dir, so the
runtime resumes from the newest checkpoint. What is restarted:

  - the evaluator: alone (it only reads model_dir);
  - a worker of a parameter-server cluster: alone (TensorFlow's
    ClusterCoordinator hands its work to the other workers meanwhile and
    takes the worker back once a server answers at its address again);
  - any other task (a multi_worker_mirrored chief or worker, a ps, the
    parameter-server chief): every task but the evaluator. A collective
    cannot take a new member, and a lost ps or coordinator loses the
    cluster's state with it.

The tasks of the set that are still running are stopped first (SIGTERM,
which makes a training task save; SIGKILL after `--grace_secs`), and the
set starts again once its ports are free. Each restart is one `[launcher]`
line naming the task, its exit code, why, what restarts and the count.

When the limit for a loss is spent: a task the job can finish without (the
evaluator; a parameter-server worker while another worker runs) is left
out and the cluster carries on; otherwise the other tasks get
`--grace_secs` to exit on their own, the rest are stopped, and the
launcher exits with the lost task's code (128 + N for a task killed by
signal N, the shell's convention).

Exit codes: the chief's when the job is done (0); 2 bad input (from any
task, or the launcher's own arguments); the lost task's code when no
restart is left; 124 when `--timeout_secs` ran out. On SIGTERM or SIGINT
the launcher forwards SIGTERM to every task (a training task saves and
exits 143), SIGKILLs what remains after `--grace_secs` (at once on a second
signal) and exits 143 if the chief exited 143 (run the same command again
to resume), 0 if it had finished, else 128 + the signal.
`--status_file` receives every task's exit code and the restart history as
JSON; `--pid_file` the process id of each task's current process.
"""

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

TaskKey = Tuple[str, int]  # ('worker', 1)

# estimator_rt.preemption.PREEMPTED_EXIT_CODE, repeated here: importing
# estimator_rt would import TensorFlow into the launcher.
PREEMPTED_EXIT_CODE = 143
BAD_INPUT_EXIT_CODE = 2
TIMEOUT_EXIT_CODE = 124

# How a task's exit code is judged (see `exit_kind`).
FINISHED = 'finished'
BAD_INPUT = 'bad input'
PREEMPTED = 'preempted'
FAILED = 'failed'

# After the others had their grace period to exit on their own, how long a
# leftover gets between SIGTERM and SIGKILL.
_TERMINATE_SECS = 10
# How long a SIGKILLed process may take to be reaped before the launcher
# gives up on it (a process stuck in the kernel).
_REAP_SECS = 30
# How long a restart waits for the ports of the tasks it restarts to be
# free (a killed server's socket closes with it; anything else holding
# the port is not ours to wait for).
_PORT_WAIT_SECS = 60
_POLL_SECS = 0.1


# ------------------------------------------------------------- addresses
def free_ports(count: int) -> List[int]:
  """`count` distinct free TCP ports on 127.0.0.1.

  The sockets are held open until all ports are chosen, so the same port
  is never handed out twice; another process could still take one before
  the task binds it, which on a test machine is rare enough.
  """
  sockets = []
  try:
    for _ in range(count):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.bind(('127.0.0.1', 0))
      sockets.append(s)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def make_cluster(*, workers: int, ps: int, chief: bool,
                 evaluator: bool) -> Dict[str, List[str]]:
  """A cluster dict with a free loopback address for every task."""
  jobs = []
  if chief:
    jobs.append(('chief', 1))
  jobs += [('worker', workers), ('ps', ps)]
  if evaluator:
    jobs.append(('evaluator', 1))
  ports = iter(free_ports(sum(n for _, n in jobs)))
  return {job: [f'127.0.0.1:{next(ports)}' for _ in range(n)]
          for job, n in jobs if n}


def port_is_free(address: str) -> bool:
  """Whether a server could listen on `address` ('host:port') now.

  SO_REUSEADDR as TensorFlow's gRPC server sets it: connections of a
  killed server lingering in TIME_WAIT do not count, a listening socket
  does (also one opened with SO_REUSEPORT, which gRPC sets too: a new
  server would then share the port with the old one).
  """
  host, port = address.rsplit(':', 1)
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
      s.bind((host, int(port)))
      return True
    except OSError:
      return False


# ------------------------------------------------------------- the policy
def task_name(key: TaskKey) -> str:
  return f'{key[0]}:{key[1]}'


def chief_of(cluster: Dict[str, List[str]]) -> TaskKey:
  """The task whose exit code is the job's: `chief`, else worker 0."""
  return ('chief', 0) if 'chief' in cluster else ('worker', 0)


def exit_kind(code: int) -> str:
  """FINISHED (0), BAD_INPUT (2), PREEMPTED (143, or killed by SIGTERM,
  which a shell reports as 143 too) or FAILED (anything else, including
  being killed by another signal)."""
  if code == 0:
    return FINISHED
  if code == BAD_INPUT_EXIT_CODE:
    return BAD_INPUT
  if code in (PREEMPTED_EXIT_CODE, -signal.SIGTERM):
    return PREEMPTED
  return FAILED


def describe_exit(code: int) -> str:
  """'-9 (failed: killed by SIGKILL)', '143 (preempted)', '1 (failed)'."""
  if code < 0:
    try:
      name = signal.Signals(-code).name
    except ValueError:
      name = f'signal {-code}'
    return f'{code} ({exit_kind(code)}: killed by {name})'
  return f'{code} ({exit_kind(code)})'


def shell_code(code: int) -> int:
  """A Popen return code as a process exit status: -N becomes 128 + N."""
  return 128 - code if code < 0 else code


def restart_set(cluster: Dict[str, List[str]], lost: TaskKey
                ) -> List[TaskKey]:
  """The tasks to restart when `lost` ended before the job was done.

  The evaluator restarts alone: it only reads model_dir. A worker of a
  parameter-server cluster (one with ps tasks) restarts alone: the
  ClusterCoordinator re-dispatches its work to the other workers and takes
  it back when a server answers at its address again. Anything else
  restarts every task but the evaluator: a multi_worker_mirrored collective
  cannot take a new member, and a lost ps or chief takes the variables or
  the coordinator with it, so the cluster resumes from the newest
  checkpoint.
  """
  job = lost[0]
  if job == 'evaluator' or (job == 'worker' and 'ps' in cluster and
                            lost != chief_of(cluster)):
    return [lost]
  return [(j, i) for j, addresses in cluster.items() if j != 'evaluator'
          for i in range(len(addresses))]


def can_carry_on_without(cluster: Dict[str, List[str]], lost: TaskKey,
                         alive: Sequence[TaskKey]) -> bool:
  """Whether the job can still finish with `lost` gone for good: it is the
  evaluator, or a parameter-server worker while another worker is `alive`.
  """
  if lost == chief_of(cluster):
    return False
  if lost[0] == 'evaluator':
    return True
  return (lost[0] == 'worker' and 'ps' in cluster and
          any(k[0] == 'worker' and k != lost for k in alive))


def describe_set(cluster: Dict[str, List[str]], lost: TaskKey,
                 keys: Sequence[TaskKey]) -> str:
  """'all tasks', 'worker:1 alone' or 'the training tasks (...)'."""
  everyone = [(j, i) for j, addresses in cluster.items()
              for i in range(len(addresses))]
  if sorted(keys) == sorted(everyone):
    return 'all tasks'
  if list(keys) == [lost]:
    return f'{task_name(lost)} alone'
  return ('the training tasks (' + ', '.join(task_name(k) for k in keys) +
          '; the evaluator keeps running)')


# ------------------------------------------------------------- processes
def _pump(stream, prefix: str, lock: threading.Lock) -> None:
  for line in iter(stream.readline, ''):
    with lock:
      try:
        sys.stdout.write(f'[{prefix}] {line}')
        sys.stdout.flush()
      except (BrokenPipeError, ValueError):  # Nobody reads the output.
        pass
  stream.close()


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
    return sorted(((job, i) for job, addresses in self.cluster.items()
                   for i in range(len(addresses))),
                  key=lambda k: (k == self.chief_key, k))

  def start(self, keys: Optional[Sequence[TaskKey]] = None) -> None:
    """Starts `keys` (default: every task), in start order."""
    wanted = set(self.keys if keys is None else keys)
    for key in (k for k in self.keys if k in wanted):
      self._start_one(key)

  def _start_one(self, key: TaskKey) -> None:
    job, index = key
    env = dict(os.environ, **self._env)
    env['TF_CONFIG'] = json.dumps({'cluster': self.cluster,
                                   'task': {'type': job, 'index': index}})
    env['PYTHONUNBUFFERED'] = '1'
    process = subprocess.Popen(
        self.command, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    self.processes[key] = process
    self.pid_history.setdefault(key, []).append(process.pid)
    thread = threading.Thread(target=_pump, daemon=True, args=(
        process.stdout, task_name(key), self._lock))
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


# ------------------------------------------------------------- supervisor
class Supervisor:
  """Runs a `LocalCluster` to the end of the job, restarting lost tasks.

  Args:
    cluster: the tasks (not started yet).
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

  def __init__(self, cluster: LocalCluster, *, max_restarts: int,
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
        self.cluster.stop(kill_after=_TERMINATE_SECS)
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
    self.cluster.stop(kill_after=_TERMINATE_SECS)
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


# ------------------------------------------------------------- the binary
def _parse_args(argv) -> argparse.Namespace:
  parser = argparse.ArgumentParser(
      description=__doc__.split('\n\n')[0],
      usage='%(prog)s [options] -- command ...')
  parser.add_argument('--workers', type=int, default=1)
  parser.add_argument('--ps', type=int, default=0)
  parser.add_argument('--chief', action='store_true',
                      help='add a chief task (else worker 0 is the chief)')
  parser.add_argument('--evaluator', action='store_true',
                      help='add an evaluator task')
  parser.add_argument('--max_restarts', type=int, default=0,
                      help='restarts allowed for tasks that fail (exit '
                      'non-zero other than 2 and 143, or are killed by a '
                      'signal) before the job is done; 0: a failure ends '
                      'the run')
  parser.add_argument('--max_preemptions', type=int, default=100,
                      help='restarts allowed for tasks that are preempted '
                      '(exit 143), counted apart from --max_restarts')
  parser.add_argument('--grace_secs', type=float, default=120,
                      help='after the chief ends, how long the other tasks '
                      'get to exit on their own; when tasks are stopped (a '
                      'restart, the launcher signalled), how long between '
                      'SIGTERM and SIGKILL')
  parser.add_argument('--timeout_secs', type=float, default=None,
                      help='stop everything after this long in all '
                      '(restarts included); exit code 124')
  parser.add_argument('--status_file', default=None,
                      help='write every task\'s exit code and the restart '
                      'history here as JSON')
  parser.add_argument('--pid_file', default=None,
                      help='keep every task\'s current process id here as '
                      'JSON ({"worker:1": pid, ...}), rewritten at each '
                      'start')
  parser.add_argument('command', nargs=argparse.REMAINDER)
  args = parser.parse_args(argv)
  args.command = (args.command[1:] if args.command[:1] == ['--']
                  else args.command)
  if not args.command:
    parser.error('give the command every task runs after --')
  if args.workers < 0 or args.ps < 0 or (args.workers == 0 and
                                         not args.chief):
    parser.error(f'--workers={args.workers} --ps={args.ps}: need at least '
                 'one worker or a chief')
  for flag in ('max_restarts', 'max_preemptions'):
    if getattr(args, flag) < 0:
      parser.error(f'--{flag}={getattr(args, flag)}: must be 0 or more')
  for flag in ('grace_secs', 'timeout_secs'):
    value = getattr(args, flag)
    if value is not None and not (math.isfinite(value) and value >= 0):
      parser.error(f'--{flag}={value}: must be a finite number of seconds, '
                   '0 or more')
  return args


def _write_status(path: str, status: dict) -> None:
  with open(path, 'w') as f:
    json.dump(status, f)


def main(argv=None) -> int:
  args = _parse_args(argv)
  lock = threading.Lock()
  cluster = LocalCluster(
      cluster=make_cluster(workers=args.workers, ps=args.ps,
                           chief=args.chief, evaluator=args.evaluator),
      command=args.command, output_lock=lock)
  supervisor = Supervisor(
      cluster, max_restarts=args.max_restarts,
      max_preemptions=args.max_preemptions, grace_secs=args.grace_secs,
      timeout_secs=args.timeout_secs, pid_file=args.pid_file,
      output_lock=lock)
  supervisor.log(f'cluster: {json.dumps(cluster.cluster)}')
  signal.signal(signal.SIGINT, supervisor.on_signal)
  signal.signal(signal.SIGTERM, supervisor.on_signal)
  code = 1
  try:
    code = supervisor.run()
  finally:
    # Also after an exception in the launcher itself: no task outlives it.
    cluster.stop(kill_after=_TERMINATE_SECS)
    cluster.close()
    supervisor.log(f'exit codes: {json.dumps(cluster.exit_codes())}')
    if args.status_file:
      _write_status(args.status_file, supervisor.status(code))
  return code


if __name__ == '__main__':
  sys.exit(main())
