"""The pod side of a Kubernetes job: a task's TF_CONFIG, then the binary.

Each pod of the Indexed Job that `scripts/kubernetes/render.py` writes runs

    python -m estimator_rt.launch.kubernetes --workers 2 --ps 1 --chief \
        --evaluator --job_name NAME --service NAME [--domain .NS.svc] \
        --port 2222 -- python -m estimator_rt.main ...

and this module turns the pod's environment into the task's place in the
cluster:

  - `JOB_COMPLETION_INDEX` (set by Kubernetes in every pod of an Indexed
    Job) is the task's position in `layout.task_keys` order: 0 is the
    chief (the `chief` task, else worker 0), then the workers, the ps
    tasks, the evaluator last.
  - Task i is at `<job_name>-<i>.<service><domain>:<port>`: a pod of an
    Indexed Job has the host name `<job_name>-<i>`, and with the pod's
    `subdomain` set to a headless Service of that name, the name resolves
    to the pod's IP inside the cluster. The name is stable across pod
    restarts, the IP is not, which is why the cluster names the host.
  - The server must listen on the pod's own address: the downward API puts
    `status.podIP` in `POD_IP`, passed on as `--bind_host` (the bind guard
    would otherwise resolve the host name, which a restarted pod may not
    find in DNS yet).

With `--given_tf_config` (a Kubeflow TFJob, whose operator writes
TF_CONFIG itself) the cluster and the task come from TF_CONFIG as given.

The command runs as a child; each of its output lines is written with the
task as a prefix (`[worker:1] ...`), SIGTERM and SIGINT are passed on to it
(this process is PID 1 in the container, the one the kubelet signals at
preemption; the binary saves and exits 143), and this process exits with
the child's code (128 + N if a signal N ended it). Bad arguments or
environment, or a command that cannot start: one line on stderr, exit 2,
which the Job's podFailurePolicy turns into a failed job rather than a
retry.

No TensorFlow here: this process only starts the binary.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from estimator_rt.launch.arguments import OneLineErrorParser
from estimator_rt.launch.arguments import add_command
from estimator_rt.launch.arguments import check_roles
from estimator_rt.launch.arguments import take_command
from estimator_rt.launch.exit_policy import BAD_INPUT_EXIT_CODE
from estimator_rt.launch.exit_policy import shell_code
from estimator_rt.launch.layout import TaskKey
from estimator_rt.launch.layout import add_role_flags
from estimator_rt.launch.layout import cluster_dict
from estimator_rt.launch.layout import task_keys
from estimator_rt.launch.layout import task_name
from estimator_rt.launch.layout import tf_config
from estimator_rt.launch.prefixed_output import copy_prefixed

INDEX_VARIABLE = 'JOB_COMPLETION_INDEX'
POD_IP_VARIABLE = 'POD_IP'
DEFAULT_PORT = 2222


class PodEnvironmentError(ValueError):
  """The arguments or the pod's environment make no task (exit 2)."""


def task_host(*, job_name: str, service: str, index: int,
              domain: str = '') -> str:
  """The stable DNS name of the pod of Indexed Job `job_name` at `index`,
  under the headless Service `service` (`domain`: '' to rely on the pod's
  DNS search path, or e.g. '.default.svc.cluster.local')."""
  return f'{job_name}-{index}.{service}{domain}'


def indexed_job_cluster(*, workers: int, ps: int, chief: bool,
                        evaluator: bool, job_name: str, service: str,
                        port: int, domain: str = ''
                        ) -> Dict[str, List[str]]:
  """The TF_CONFIG cluster of an Indexed Job: task i (in `task_keys` order)
  at its pod's stable name, every task on the same `port`."""
  keys = task_keys(workers=workers, ps=ps, chief=chief, evaluator=evaluator)
  return cluster_dict(keys, [
      f'{task_host(job_name=job_name, service=service, index=i, domain=domain)}'
      f':{port}' for i in range(len(keys))])


def key_of_index(keys: Sequence[TaskKey], raw_index: Optional[str]
                 ) -> TaskKey:
  """The task of `JOB_COMPLETION_INDEX` `raw_index` among `keys`.

  Raises:
    PodEnvironmentError: the index is missing, not an integer or out of
      range (the Job's completions and the role flags disagree).
  """
  if raw_index is None:
    raise PodEnvironmentError(
        f'{INDEX_VARIABLE} is not set: run this in a pod of an Indexed Job '
        '(completionMode: Indexed), or pass --given_tf_config when TF_CONFIG '
        'is already set (a TFJob).')
  try:
    index = int(raw_index)
  except ValueError:
    raise PodEnvironmentError(
        f'{INDEX_VARIABLE}={raw_index[:50]!r} is not an integer.') from None
  if not 0 <= index < len(keys):
    raise PodEnvironmentError(
        f'{INDEX_VARIABLE}={index} is out of range for the {len(keys)} tasks '
        'the role flags give: make the Job\'s completions and parallelism '
        f'{len(keys)}, or change the role flags.')
  return keys[index]


def key_of_tf_config(raw: Optional[str]) -> TaskKey:
  """The task TF_CONFIG names (for the log prefix; the binary checks the
  rest of TF_CONFIG itself)."""
  try:
    task = json.loads(raw or '')['task']
    return (str(task['type']), int(task['index']))
  except (ValueError, KeyError, TypeError):
    raise PodEnvironmentError(
        f'--given_tf_config: TF_CONFIG={(raw or "")[:200]!r} has no '
        '"task": {"type": ..., "index": ...}; the TFJob operator sets it '
        'in each pod.') from None


def with_bind_host(command: Sequence[str], pod_ip: Optional[str]
                   ) -> List[str]:
  """`command` plus `--bind_host=<pod_ip>`, unless it already gives one or
  there is no pod IP (then the bind guard resolves the task's host)."""
  command = list(command)
  if not pod_ip or any(arg == '--bind_host' or arg.startswith('--bind_host=')
                       for arg in command):
    return command
  return command + [f'--bind_host={pod_ip}']


def task_and_tf_config(args: argparse.Namespace, environ: Mapping[str, str]
                       ) -> Tuple[TaskKey, str]:
  """This pod's task and the TF_CONFIG the command gets.

  Raises:
    PodEnvironmentError: see `key_of_index`, `key_of_tf_config`.
  """
  if args.given_tf_config:
    return key_of_tf_config(environ.get('TF_CONFIG')), environ['TF_CONFIG']
  cluster = indexed_job_cluster(
      workers=args.workers, ps=args.ps, chief=args.chief,
      evaluator=args.evaluator, job_name=args.job_name, service=args.service,
      port=args.port, domain=args.domain)
  keys = task_keys(workers=args.workers, ps=args.ps, chief=args.chief,
                   evaluator=args.evaluator)
  key = key_of_index(keys, environ.get(INDEX_VARIABLE))
  return key, tf_config(cluster, key)


def run_prefixed(command: Sequence[str], *, env: Mapping[str, str],
                 prefix: str) -> int:
  """Runs `command`, its output lines prefixed with `[prefix] `, stop
  signals passed on; returns its exit status (128 + N for signal N).

  Raises:
    PodEnvironmentError: the command cannot be started (not found, not
      executable): restarting the pod cannot help.
  """
  try:
    process = subprocess.Popen(
        list(command), env=dict(env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, errors='replace')
  except OSError as e:
    raise PodEnvironmentError(
        f'cannot run {command[0][:200]!r}: {e.strerror}; check the command '
        'after -- and that the image has it.') from None

  def forward(signum, frame=None):
    del frame
    if process.poll() is None:
      process.send_signal(signum)

  # As PID 1 this process ignores signals it has no handler for, so without
  # these the kubelet's SIGTERM would go unanswered until SIGKILL.
  signal.signal(signal.SIGTERM, forward)
  signal.signal(signal.SIGINT, forward)
  copy_prefixed(process.stdout, prefix)
  return shell_code(process.wait())


def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
  parser = OneLineErrorParser(
      prog='python -m estimator_rt.launch.kubernetes',
      description=__doc__.split('\n\n')[0],
      usage='%(prog)s [options] -- command ...')
  add_role_flags(parser)
  parser.add_argument('--job_name', default=None,
                      help='the Indexed Job\'s name (pods are <job_name>-<i>)')
  parser.add_argument('--service', default=None,
                      help='the headless Service the pods\' subdomain names')
  parser.add_argument('--domain', default='',
                      help='appended to <job_name>-<i>.<service>, e.g. '
                      '".default.svc.cluster.local"; default: none (the '
                      'pod\'s DNS search path completes the name)')
  parser.add_argument('--port', type=int, default=DEFAULT_PORT,
                      help='the port every task listens on')
  parser.add_argument('--given_tf_config', action='store_true',
                      help='TF_CONFIG is already set (a Kubeflow TFJob): take '
                      'the task from it instead of deriving it')
  add_command(parser)
  args = parser.parse_args(argv)
  take_command(parser, args, who='the task')
  if not args.given_tf_config:
    check_roles(parser, args)
    for flag in ('job_name', 'service'):
      if not getattr(args, flag):
        parser.error(f'--{flag} is required (or --given_tf_config)')
    if not 0 < args.port < 65536:
      parser.error(f'--port={args.port}: must be 1-65535')
  return args


def main(argv: Optional[Sequence[str]] = None) -> int:
  args = _parse_args(argv)  # Exits 2 with one line on bad flags.
  try:
    key, config = task_and_tf_config(args, os.environ)
    env = dict(os.environ, TF_CONFIG=config, PYTHONUNBUFFERED='1')
    command = with_bind_host(args.command, os.environ.get(POD_IP_VARIABLE))
    return run_prefixed(command, env=env, prefix=task_name(key))
  except PodEnvironmentError as e:
    print(f'error: {e}', file=sys.stderr)
    return BAD_INPUT_EXIT_CODE


if __name__ == '__main__':
  sys.exit(main())
