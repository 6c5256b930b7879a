"""Starts and stops long-running servers (`estimator_rt.run_server`) on
this machine.

    python -m estimator_rt.launch.local_servers start --workers 2 --ps 1 \
        [--evaluator] --cluster_file /tmp/cluster.json
    python -m estimator_rt.launch.local_servers stop \
        --cluster_file /tmp/cluster.json

`start`: each server is a background process on a free port with a
127.0.0.1 address; its log goes next to the cluster file. The cluster (for
clients' `--remote_cluster=@/tmp/cluster.json`) is written to
--cluster_file, the process ids to <cluster_file>.pids for `stop`.
run_server keeps each server on its 127.0.0.1 address (the bind guard), so
nothing off this machine can reach them. Once every server's log says
`Serving`, the cluster is printed as JSON and the exit code is 0; 1 if a
server did not start in --startup_timeout_secs (its log named).

`stop`: SIGTERM to every server of <cluster_file>.pids (the servers exit
0), then SIGKILL for any still running after --timeout_secs; removes the
pid file, prints how many servers it stopped and exits 0.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Optional, Sequence

from estimator_rt.launch import stopping
from estimator_rt.launch.layout import make_cluster

# The directory holding this estimator_rt package: the servers import the
# same one as this process, run from a checkout or installed.
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _pid_file(cluster_file: str) -> str:
  return cluster_file + '.pids'


def start(args: argparse.Namespace) -> int:
  """Starts the servers `args` ask for; see the module doc."""
  cluster = make_cluster(workers=args.workers, ps=args.ps, chief=False,
                         evaluator=args.evaluator)
  with open(args.cluster_file, 'w') as f:
    json.dump(cluster, f)
  env = dict(os.environ)
  env.pop('TF_CONFIG', None)
  env['PYTHONPATH'] = _PACKAGE_ROOT + os.pathsep + env.get('PYTHONPATH', '')
  logs, pids = {}, {}
  for job, addresses in cluster.items():
    for index in range(len(addresses)):
      log = f'{args.cluster_file}.{job}{index}.log'
      process = subprocess.Popen(
          [sys.executable, '-m', 'estimator_rt.run_server',
           f'--cluster=@{args.cluster_file}', f'--job_name={job}',
           f'--task_index={index}'],
          stdout=open(log, 'w'), stderr=subprocess.STDOUT, env=env,
          start_new_session=True)
      logs[f'{job}:{index}'] = log
      pids[f'{job}:{index}'] = process.pid
  with open(_pid_file(args.cluster_file), 'w') as f:
    json.dump(pids, f)
  deadline = time.time() + args.startup_timeout_secs
  for task, log in logs.items():
    while 'Serving' not in open(log).read():
      if time.time() > deadline:
        print(f'{task} did not start; see {log}', file=sys.stderr)
        return 1
      time.sleep(0.5)
  print(json.dumps(cluster))
  return 0


def stop(args: argparse.Namespace) -> int:
  """Stops the servers `start` started for `args.cluster_file`."""
  pid_file = _pid_file(args.cluster_file)
  with open(pid_file) as f:
    pids = json.load(f)
  killed = stopping.stop_pids(pids.values(), grace_secs=args.timeout_secs)
  for task, pid in pids.items():
    if pid in killed:
      print(f'{task} (pid {pid}) ignored SIGTERM; killed it',
            file=sys.stderr)
  os.remove(pid_file)
  print(f'stopped {len(pids)} server(s)')
  return 0


def _parse_args(argv) -> argparse.Namespace:
  parser = argparse.ArgumentParser(
      prog='python -m estimator_rt.launch.local_servers',
      description=__doc__.split('\n\n')[0])
  commands = parser.add_subparsers(dest='action', required=True,
                                   metavar='{start,stop}')
  starting = commands.add_parser(
      'start', help='start the servers and write the cluster file')
  starting.add_argument('--workers', type=int, default=1)
  starting.add_argument('--ps', type=int, default=1)
  starting.add_argument('--evaluator', action='store_true',
                        help='Also start an evaluator server; clients then '
                        'evaluate on it.')
  starting.add_argument('--cluster_file', required=True)
  starting.add_argument('--startup_timeout_secs', type=float, default=120)
  stop_parser = commands.add_parser(
      'stop', help='stop the servers `start` started')
  stop_parser.add_argument('--cluster_file', required=True)
  stop_parser.add_argument('--timeout_secs', type=float, default=10)
  args = parser.parse_args(argv)
  if args.action == 'start' and (args.workers < 1 or args.ps < 0):
    starting.error(f'--workers={args.workers} --ps={args.ps}: need at '
                   'least one worker')
  return args


def main(argv: Optional[Sequence[str]] = None) -> int:
  args = _parse_args(argv)
  return start(args) if args.action == 'start' else stop(args)


if __name__ == '__main__':
  sys.exit(main())
