"""Launches a TF_CONFIG cluster as local processes on loopback ports.

    python -m estimator_rt.launch.local --workers 2 --ps 1 --chief \
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
import signal
import sys
import threading
from typing import Optional, Sequence

from estimator_rt.launch.arguments import add_command
from estimator_rt.launch.arguments import add_supervision_flags
from estimator_rt.launch.arguments import check_roles
from estimator_rt.launch.arguments import check_supervision_flags
from estimator_rt.launch.arguments import take_command
from estimator_rt.launch.layout import add_role_flags
from estimator_rt.launch.layout import make_cluster
from estimator_rt.launch.local_processes import LocalCluster
from estimator_rt.launch.supervisor import Supervisor
from estimator_rt.launch.supervisor import TERMINATE_SECS


# ------------------------------------------------------------- the binary
def _parse_args(argv) -> argparse.Namespace:
  parser = argparse.ArgumentParser(
      prog='python -m estimator_rt.launch.local',
      description=__doc__.split('\n\n')[0],
      usage='%(prog)s [options] -- command ...')
  add_role_flags(parser)
  add_supervision_flags(parser)
  add_command(parser)
  args = parser.parse_args(argv)
  take_command(parser, args)
  check_roles(parser, args)
  check_supervision_flags(parser, args)
  return args


def _write_status(path: str, status: dict) -> None:
  with open(path, 'w') as f:
    json.dump(status, f)


def main(argv: Optional[Sequence[str]] = None) -> int:
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
    cluster.stop(kill_after=TERMINATE_SECS)
    cluster.close()
    supervisor.log(f'exit codes: {json.dumps(cluster.exit_codes())}')
    if args.status_file:
      _write_status(args.status_file, supervisor.status(code))
  return code


if __name__ == '__main__':
  sys.exit(main())
