#!/usr/bin/env python3
"""Launches a TF_CONFIG cluster as local processes on loopback ports.

    python scripts/launch_local_cluster.py --workers 2 --ps 1 --chief \
        --evaluator -- python -m estimator_rt.main \
        --distribution_strategy=parameter_server --model_dir=/tmp/m ...

Every task runs the same command with its own TF_CONFIG, with free ports
on 127.0.0.1 as the cluster addresses; estimator_rt's bind guard keeps
each task's server on that loopback address (TensorFlow alone would
listen on every interface). Each output line is prefixed with the task's
role. When the chief ends (the `chief`
task, or worker 0 without one), the other tasks get `--grace_secs` to exit
on their own (an evaluator finishing its last evaluation, servers told by
the chief that training is done); whatever is still running then is
stopped. Ctrl-C stops everything. The launcher exits with the chief's exit
status, and `--status_file` receives every task's exit code as JSON.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Tuple

# How long a task gets between SIGTERM and SIGKILL.
_TERMINATE_SECS = 10


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


def _pump(stream, prefix: str, lock: threading.Lock) -> None:
  for line in iter(stream.readline, ''):
    with lock:
      sys.stdout.write(f'[{prefix}] {line}')
      sys.stdout.flush()
  stream.close()


def _stop(process: subprocess.Popen) -> None:
  """SIGTERM the task's process group, SIGKILL it if it lingers."""
  if process.poll() is not None:
    return
  try:
    os.killpg(process.pid, signal.SIGTERM)
  except ProcessLookupError:
    return
  try:
    process.wait(timeout=_TERMINATE_SECS)
  except subprocess.TimeoutExpired:
    try:
      os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
    process.wait()


class LocalCluster:
  """The task processes of one cluster.

  Args:
    cluster: job -> addresses (see `make_cluster`).
    command: the command every task runs.
    env: extra environment for every task.
  """

  def __init__(self, *, cluster: Dict[str, List[str]], command: List[str],
               env: Optional[Dict[str, str]] = None):
    self.cluster = cluster
    self.command = command
    self._env = dict(env or {})
    self.processes: Dict[Tuple[str, int], subprocess.Popen] = {}
    self._threads: List[threading.Thread] = []
    self._lock = threading.Lock()

  @property
  def chief_key(self) -> Tuple[str, int]:
    return ('chief', 0) if 'chief' in self.cluster else ('worker', 0)

  def start(self) -> None:
    # Servers first, the chief last: the chief is the one that waits.
    order = sorted(((job, i) for job, addresses in self.cluster.items()
                    for i in range(len(addresses))),
                   key=lambda k: (k == self.chief_key, k))
    for job, index in order:
      tf_config = {'cluster': self.cluster,
                   'task': {'type': job, 'index': index}}
      env = dict(os.environ, **self._env)
      env['TF_CONFIG'] = json.dumps(tf_config)
      env['PYTHONUNBUFFERED'] = '1'
      process = subprocess.Popen(
          self.command, env=env, stdout=subprocess.PIPE,
          stderr=subprocess.STDOUT, text=True, start_new_session=True)
      self.processes[(job, index)] = process
      thread = threading.Thread(target=_pump, daemon=True, args=(
          process.stdout, f'{job}:{index}', self._lock))
      thread.start()
      self._threads.append(thread)

  def wait(self, *, grace_secs: float,
           timeout_secs: Optional[float] = None) -> int:
    """Waits for the chief, then `grace_secs` for the rest; stops leftovers.

    Returns:
      The chief's exit code (124 if `timeout_secs` passed first).
    """
    chief = self.processes[self.chief_key]
    try:
      code = chief.wait(timeout=timeout_secs)
    except subprocess.TimeoutExpired:
      self.stop_all()
      return 124
    deadline = time.time() + grace_secs
    for process in self.processes.values():
      remaining = deadline - time.time()
      if remaining > 0 and process.poll() is None:
        try:
          process.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
          pass
    self.stop_all()
    return code

  def stop_all(self) -> None:
    for process in self.processes.values():
      _stop(process)
    for thread in self._threads:
      thread.join(timeout=5)

  def exit_codes(self) -> Dict[str, Optional[int]]:
    return {f'{job}:{index}': process.returncode
            for (job, index), process in sorted(self.processes.items())}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__.split('\n\n')[0],
      usage='%(prog)s [options] -- command ...')
  parser.add_argument('--workers', type=int, default=1)
  parser.add_argument('--ps', type=int, default=0)
  parser.add_argument('--chief', action='store_true',
                      help='add a chief task (else worker 0 is the chief)')
  parser.add_argument('--evaluator', action='store_true',
                      help='add an evaluator task')
  parser.add_argument('--grace_secs', type=float, default=120,
                      help='after the chief ends, how long the other tasks '
                      'get to exit on their own')
  parser.add_argument('--timeout_secs', type=float, default=None,
                      help='stop everything if the chief runs this long')
  parser.add_argument('--status_file', default=None,
                      help='write every task\'s exit code here as JSON')
  parser.add_argument('command', nargs=argparse.REMAINDER)
  args = parser.parse_args(argv)
  command = args.command[1:] if args.command[:1] == ['--'] else args.command
  if not command:
    parser.error('give the command every task runs after --')
  if args.workers < 0 or args.ps < 0 or (args.workers == 0 and
                                         not args.chief):
    parser.error(f'--workers={args.workers} --ps={args.ps}: need at least '
                 'one worker or a chief')
  cluster = LocalCluster(
      cluster=make_cluster(workers=args.workers, ps=args.ps,
                           chief=args.chief, evaluator=args.evaluator),
      command=command)
  print(f'[launcher] cluster: {json.dumps(cluster.cluster)}', flush=True)

  def interrupted(signum, frame):
    del frame
    print(f'[launcher] signal {signum}: stopping all tasks', flush=True)
    cluster.stop_all()
    sys.exit(128 + signum)

  signal.signal(signal.SIGINT, interrupted)
  signal.signal(signal.SIGTERM, interrupted)
  cluster.start()
  code = cluster.wait(grace_secs=args.grace_secs,
                      timeout_secs=args.timeout_secs)
  codes = cluster.exit_codes()
  print(f'[launcher] exit codes: {json.dumps(codes)}', flush=True)
  if args.status_file:
    with open(args.status_file, 'w') as f:
      json.dump({'chief': code, 'tasks': codes}, f)
  return code


if __name__ == '__main__':
  sys.exit(main())
