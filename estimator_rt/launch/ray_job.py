"""Launches a TF_CONFIG cluster on Ray, one Ray actor per task.

    python -m estimator_rt.launch.ray_job --address=auto --workers 2 \
        --ps 1 --chief --evaluator --cpus_per_task 2 -- \
        python -m estimator_rt.main --distribution_strategy=parameter_server \
        --model_dir=/shared/m ...

Every task (chief, worker, ps, evaluator) is a Ray actor holding
`--cpus_per_task` CPUs and `--gpus_per_task` GPUs; it picks a free port on
its node's Ray address, and once every actor has one, runs the command as
a subprocess with its TF_CONFIG (Ray's CUDA_VISIBLE_DEVICES tells it its
GPUs). Each output line comes back to this process prefixed with the
task's role. parameter_server with ps and evaluator tasks runs this way,
which Ray Train's TensorflowTrainer cannot do (it makes workers only; see
`python -m estimator_rt.launch.ray_train` for that route).

The command must run on every node as given: the same paths, the package
installed, a `--model_dir` every node sees. Each task's environment is the
one its Ray node was started with, plus `--env NAME=VALUE` (or `--env
NAME`: this process's value), and its working directory is this
process's, where it exists on the node.

`--address`: `auto` (the Ray cluster this machine belongs to, or
RAY_ADDRESS), `host:port` (its GCS address), or `local` (a new Ray
instance on this machine, stopped at the end; `--ray_num_cpus` sets its
CPU count, and the tasks listen on 127.0.0.1; started once more if Ray's
fixed 30 s startup wait runs out on a loaded machine). Each task's address
is its node's address in the Ray cluster unless `--task_host` says
otherwise.

What happens when a task ends is what `estimator_rt.launch.local` does
(see its docstring and docs/launchers.md): 2 is bad input, never restarted; 143
(preempted) restarts apart from `--max_restarts`; a restarted task runs
again in the same actor, on the same node and port. Exit codes: the
chief's when the job is done (0); 2 bad input (from a task, or these
arguments; also when nothing answers at `--address` (checked with one
TCP connection first: Ray's own connect retries for minutes), when Ray
cannot place every task in `--placement_timeout_secs`, or when ray is not
installed); the lost task's code when no restart is left; 124
`--timeout_secs` ran out; on SIGTERM or SIGINT every task gets SIGTERM,
and the exit code is 143 if the chief saved and exited 143, else 128 + the
signal. A task whose actor is lost (its node died) counts as exit code 1,
and cannot be restarted: the job then ends (unless the task is one the
job can do without, as the evaluator).

Ray 2.60 turns token authentication on for a Ray instance it starts
(`--address=local`, or `ray.init()`), writing the token to
~/.ray/auth_token on first use; a driver on the same machine (same HOME)
finds it there.
"""

import argparse
import json
import os
import signal
import socket
import sys
from typing import Optional, Sequence

from estimator_rt.launch.arguments import add_command
from estimator_rt.launch.arguments import add_supervision_flags
from estimator_rt.launch.arguments import check_roles
from estimator_rt.launch.arguments import check_seconds
from estimator_rt.launch.arguments import check_supervision_flags
from estimator_rt.launch.arguments import take_command
from estimator_rt.launch.exit_policy import BAD_INPUT_EXIT_CODE
from estimator_rt.launch.layout import add_role_flags
from estimator_rt.launch import ray_local

_GCS_CONNECT_SECS = 10


def _parse_args(argv) -> argparse.Namespace:
  parser = argparse.ArgumentParser(
      prog='python -m estimator_rt.launch.ray_job',
      description=__doc__.split('\n\n')[0],
      usage='%(prog)s [options] -- command ...')
  parser.add_argument('--address', default='auto',
                      help="the Ray cluster: 'auto', 'host:port', or "
                      "'local' (start one on 127.0.0.1, stopped at the end)")
  add_role_flags(parser)
  parser.add_argument('--cpus_per_task', type=float, default=1.0,
                      help='Ray CPUs each task holds (fractions allowed)')
  parser.add_argument('--gpus_per_task', type=float, default=0.0,
                      help='Ray GPUs each task holds')
  parser.add_argument('--spread', action='store_true',
                      help='place the tasks on as many nodes as possible')
  parser.add_argument('--task_host', default=None,
                      help="every task's address; default: each node's "
                      "address in the Ray cluster, 127.0.0.1 with "
                      '--address=local')
  parser.add_argument('--ray_num_cpus', type=float, default=None,
                      help="with --address=local: the new instance's CPUs "
                      '(default: this machine\'s)')
  parser.add_argument('--env', action='append', default=[],
                      metavar='NAME[=VALUE]',
                      help='environment for every task; NAME alone passes '
                      "this process's value (repeatable)")
  add_supervision_flags(parser)
  parser.add_argument('--placement_timeout_secs', type=float, default=300,
                      help='how long Ray gets to place every task')
  add_command(parser)
  args = parser.parse_args(argv)
  take_command(parser, args)
  check_roles(parser, args)
  check_supervision_flags(parser, args)
  check_seconds(parser, args, 'placement_timeout_secs', 'cpus_per_task',
                'gpus_per_task', 'ray_num_cpus')
  if args.ray_num_cpus is not None and args.address != 'local':
    parser.error(f'--ray_num_cpus={args.ray_num_cpus:g} needs '
                 f"--address=local (got --address={args.address}): an "
                 'existing cluster has its own CPUs')
  args.env = _parse_env(parser, args.env)
  return args


def _parse_env(parser, items):
  env = {}
  for item in items:
    name, has_value, value = item.partition('=')
    if not name:
      parser.error(f'--env={item}: give NAME=VALUE or NAME')
    if not has_value:
      if name not in os.environ:
        parser.error(f'--env={name}: {name} is not set here; give '
                     f'--env={name}=VALUE')
      value = os.environ[name]
    env[name] = value
  return env


def main(argv: Optional[Sequence[str]] = None) -> int:
  args = _parse_args(argv)
  try:
    # pylint: disable=g-import-not-at-top
    from estimator_rt.launch import ray_cluster
  except ImportError as e:
    print(f'error: --address={args.address}: cannot import ray ({e}); '
          "install it with pip install 'estimator_rt[ray]'", file=sys.stderr)
    return BAD_INPUT_EXIT_CODE
  import ray  # pylint: disable=g-import-not-at-top
  init_kwargs = {}
  if args.address == 'local':
    # A new instance for this run, on this machine alone: the tasks can
    # listen on loopback only (Ray itself takes the machine's address on
    # Linux). No dashboard.
    init_kwargs = {'include_dashboard': False}
    if args.task_host is None:
      args.task_host = '127.0.0.1'
    if args.ray_num_cpus is not None:
      init_kwargs['num_cpus'] = args.ray_num_cpus
  problem = _gcs_problem(args.address)
  if problem:
    print(f'error: --address={args.address}: {problem}', file=sys.stderr)
    return BAD_INPUT_EXIT_CODE
  try:
    if args.address == 'local':
      ray_local.start_local_ray(ray.init, **init_kwargs)
    else:
      ray.init(address=args.address, **init_kwargs)
  except ConnectionError as e:  # No Ray cluster at --address.
    print(f'error: --address={args.address}: {e}', file=sys.stderr)
    return BAD_INPUT_EXIT_CODE
  try:
    # Until the tasks start, a stop signal unwinds (the actors placed so
    # far are killed, a local Ray is stopped); ray.init's own handler
    # would exit 15.
    signal.signal(signal.SIGINT, _stop_before_start)
    signal.signal(signal.SIGTERM, _stop_before_start)

    def handle_signals(supervisor):
      # From now on the supervisor stops the tasks (SIGTERM, then SIGKILL
      # after --grace_secs) and sets the exit code.
      signal.signal(signal.SIGINT, supervisor.on_signal)
      signal.signal(signal.SIGTERM, supervisor.on_signal)

    status = ray_cluster.run_on_ray(
        command=args.command, workers=args.workers, ps=args.ps,
        chief=args.chief, evaluator=args.evaluator, env=args.env,
        cpus_per_task=args.cpus_per_task, gpus_per_task=args.gpus_per_task,
        spread=args.spread, host=args.task_host,
        max_restarts=args.max_restarts,
        max_preemptions=args.max_preemptions, grace_secs=args.grace_secs,
        timeout_secs=args.timeout_secs,
        placement_timeout_secs=args.placement_timeout_secs,
        pid_file=args.pid_file, on_started=handle_signals)
  except ray_cluster.PlacementError as e:
    print(f'error: {e}', file=sys.stderr)
    return BAD_INPUT_EXIT_CODE
  finally:
    ray.shutdown()  # Stops a local instance; disconnects from any other.
  if args.status_file:
    with open(args.status_file, 'w') as f:
      json.dump(status, f)
  return status['exit_code']


def _gcs_problem(address: str) -> str:
  """Why nothing answers at a 'host:port' address, '' if something does
  (or the address is 'auto', 'local' or a ray:// one, which Ray resolves).

  Ray's own connect retries for minutes when nothing listens there.
  """
  host, sep, port = address.rpartition(':')
  if not sep or '://' in address or not port.isdigit():
    return ''
  try:
    with socket.create_connection((host.strip('[]'), int(port)),
                                  timeout=_GCS_CONNECT_SECS):
      return ''
  except OSError as e:
    return (f'no Ray cluster answers there ({e.strerror or e}); give the '
            "head's GCS address (ray start --head prints it), 'auto' or "
            "'local'")


def _stop_before_start(signum, frame):
  del frame
  raise SystemExit(128 + signum)


if __name__ == '__main__':
  sys.exit(main())
