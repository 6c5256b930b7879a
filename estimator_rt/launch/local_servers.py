#!/usr/bin/env python3
"""Starts long-running servers (`estimator_rt.run_server`) on this machine.

    python scripts/start_local_servers.py --workers 2 --ps 1 [--evaluator] \
        --cluster_file /tmp/cluster.json

Each server is a background process on a free port with a 127.0.0.1
address; its log goes next to the cluster file. The cluster (for clients'
`--remote_cluster=@/tmp/cluster.json`) is written to --cluster_file, the
process ids to <cluster_file>.pids for scripts/stop_local_servers.py.
run_server keeps each server on its 127.0.0.1 address (the bind guard), so
nothing off this machine can reach them.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_local_cluster import make_cluster  # pylint: disable=g-import-not-at-top,wrong-import-position

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--workers', type=int, default=1)
  parser.add_argument('--ps', type=int, default=1)
  parser.add_argument('--evaluator', action='store_true',
                      help='Also start an evaluator server; clients then '
                      'evaluate on it.')
  parser.add_argument('--cluster_file', required=True)
  parser.add_argument('--startup_timeout_secs', type=float, default=120)
  args = parser.parse_args(argv)
  if args.workers < 1 or args.ps < 0:
    parser.error(f'--workers={args.workers} --ps={args.ps}: need at least '
                 'one worker')
  cluster = make_cluster(workers=args.workers, ps=args.ps, chief=False,
                         evaluator=args.evaluator)
  with open(args.cluster_file, 'w') as f:
    json.dump(cluster, f)
  env = dict(os.environ)
  env.pop('TF_CONFIG', None)
  env['PYTHONPATH'] = _REPO_ROOT + os.pathsep + env.get('PYTHONPATH', '')
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
  with open(args.cluster_file + '.pids', 'w') as f:
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


if __name__ == '__main__':
  sys.exit(main())
