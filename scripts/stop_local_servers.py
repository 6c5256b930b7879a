#!/usr/bin/env python3
"""Stops the servers scripts/start_local_servers.py started.

    python scripts/stop_local_servers.py --cluster_file /tmp/cluster.json

SIGTERM (the servers exit 0), then SIGKILL for any still running after
--timeout_secs. Removes the pid file.
"""

import argparse
import json
import os
import signal
import sys
import time


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  return True


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--cluster_file', required=True)
  parser.add_argument('--timeout_secs', type=float, default=10)
  args = parser.parse_args(argv)
  pid_file = args.cluster_file + '.pids'
  with open(pid_file) as f:
    pids = json.load(f)
  for pid in pids.values():
    if _alive(pid):
      os.kill(pid, signal.SIGTERM)
  deadline = time.time() + args.timeout_secs
  while any(_alive(p) for p in pids.values()) and time.time() < deadline:
    time.sleep(0.2)
  for task, pid in pids.items():
    if _alive(pid):
      print(f'{task} (pid {pid}) ignored SIGTERM; killing it',
            file=sys.stderr)
      os.kill(pid, signal.SIGKILL)
  os.remove(pid_file)
  print(f'stopped {len(pids)} server(s)')
  return 0


if __name__ == '__main__':
  sys.exit(main())
