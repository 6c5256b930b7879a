"""The task side of a Slurm job step: a task's TF_CONFIG, then the binary.

`scripts/slurm/estimator_rt.sbatch` runs, with one Slurm task per cluster
task,

    srun --distribution=block python -m estimator_rt.launch.slurm \
        --workers 2 --ps 1 --chief --evaluator -- \
        python -m estimator_rt.main ...

and this module turns the step's environment into each task's place in the
cluster, from what every task of the step knows alike:

  - `SLURM_PROCID` (0..N-1) is the task's position in `layout.task_keys`
    order: 0 is the chief (the `chief` task, else worker 0), then the
    workers, the ps tasks, the evaluator last. `SLURM_STEP_NUM_TASKS` (else
    `SLURM_NTASKS`) must equal the number of tasks the role flags give.
  - The node of every task: the step's node list (`SLURM_STEP_NODELIST`,
    else `SLURM_JOB_NODELIST`, expanded by `scontrol show hostnames`) and
    its tasks per node (`SLURM_STEP_TASKS_PER_NODE`, e.g. `2(x3),1`), laid
    out by block distribution (the first node's tasks first), which is why
    the sbatch script passes `--distribution=block`.
  - The port of every task: one block of `--ports_per_node` ports per job,
    chosen by the job id within `--port_base`..`--port_base + --port_span`,
    and within it the task's index among the tasks of its node. Tasks of
    one job sharing a node get different ports; two jobs on one node get
    different blocks unless their ids are `port_span / ports_per_node`
    apart (312 with the defaults). The same job keeps its ports when the
    sbatch script runs the step again after a preemption (the previous
    step's tasks have all ended by then: srun returns after its last task).
  - The host is the node's `NodeAddr` (`scontrol show node`: the address
    slurmctld itself reaches the node at, its name unless slurm.conf says
    otherwise), or with `--host=node_name` the node's name. It must resolve,
    on its own node too, to an address of that node that the others reach:
    the bind guard makes each server listen on that address only. (A node
    whose own name resolves to Debian's 127.0.1.1 would listen there; give
    such nodes a `NodeAddr`, or pass the binary `--bind_host=0.0.0.0`.)

`tf.distribute.cluster_resolver.SlurmClusterResolver` reads the same
variables, but is not used: it imports TensorFlow (seconds and hundreds of
MB per task, before the binary has even started, and the binary relaunches
itself under the bind guard anyway); it orders jobs alphabetically (the
evaluator would get rank 1, and the chief is not rank 0 for a layout
without `chief`), which breaks the `task_keys` order every launcher here
shares; it sorts the node names as strings (n10 before n2) while Slurm
numbers ranks in node-list order (n2 before n10), so past 9 nodes ranks
and addresses disagree; it gives every job the same ports (`port_base` +
the index on the node), so two jobs on one node collide; and without
`gpus_per_node` or CUDA_VISIBLE_DEVICES it runs `nvidia-smi`, failing on a
machine without one.

The command runs as a child; each of its output lines is written with the
task as a prefix (`[worker:1] ...`), and this process exits with the
child's code (128 + N if a signal N ended it). SIGTERM and SIGINT are *not*
passed on: Slurm signals every process of the step itself (`scancel
--signal`, a time limit, a preemption), and a second SIGTERM would make the
runtime exit at once instead of saving. With `--exit_code_dir`, each task
writes its exit code there as `<job>_<index>` (and the chief's also as
`chief`) if that directory exists on its node, for the sbatch script to
judge the step by the chief's code. With `--cluster_file`, task 0 writes
the cluster (JSON) there before starting, for a client outside the
allocation (`--remote_cluster=@FILE`) when the tasks are standalone
servers.

`--check` (in the batch script, before any step) checks the role flags
against the job's task count and prints where each task will run.

Bad arguments or environment: one `error: ...` line, exit 2. No TensorFlow
here: this process only starts the binary.
"""

import argparse
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from estimator_rt.launch.arguments import OneLineErrorParser
from estimator_rt.launch.arguments import add_command
from estimator_rt.launch.arguments import check_roles
from estimator_rt.launch.arguments import take_command
from estimator_rt.launch.exit_policy import BAD_INPUT_EXIT_CODE
from estimator_rt.launch.exit_policy import shell_code
from estimator_rt.launch.layout import TaskKey
from estimator_rt.launch.layout import add_role_flags
from estimator_rt.launch.layout import chief_of
from estimator_rt.launch.layout import cluster_dict
from estimator_rt.launch.layout import task_keys
from estimator_rt.launch.layout import task_name
from estimator_rt.launch.layout import tf_config
from estimator_rt.launch.prefixed_output import copy_prefixed

# Below Linux's ephemeral range (32768-60999), so that no outgoing
# connection of the machine holds a task's port by chance.
DEFAULT_PORT_BASE = 20000
DEFAULT_PORT_SPAN = 10000
DEFAULT_PORTS_PER_NODE = 32

NodeList = Callable[[str], List[str]]
NodeAddresses = Callable[[Sequence[str]], List[str]]


class SlurmEnvironmentError(ValueError):
  """The arguments or the Slurm environment make no task (exit 2)."""


def expand_tasks_per_node(text: str) -> List[int]:
  """Slurm's tasks-per-node notation as a list: '2(x3),1' -> [2, 2, 2, 1].

  Raises:
    SlurmEnvironmentError: `text` is not in that notation.
  """
  counts = []
  for part in text.split(','):
    match = re.fullmatch(r'(\d+)(?:\(x(\d+)\))?', part.strip())
    if not match:
      raise SlurmEnvironmentError(
          f'tasks per node {text!r}: expected Slurm\'s notation, e.g. '
          '"2(x3),1"')
    counts += [int(match.group(1))] * int(match.group(2) or 1)
  return counts


def _scontrol(args: Sequence[str]) -> str:
  try:
    result = subprocess.run(['scontrol', *args], capture_output=True,
                            text=True, timeout=60, check=False)
  except (OSError, subprocess.TimeoutExpired) as e:
    raise SlurmEnvironmentError(
        f'scontrol {" ".join(args)} failed ({e}): run this inside a Slurm '
        'job, with scontrol on PATH') from None
  if result.returncode != 0 or not result.stdout.strip():
    raise SlurmEnvironmentError(
        f'scontrol {" ".join(args)} exited {result.returncode}: '
        f'{result.stderr.strip()[:300]}')
  return result.stdout


def scontrol_node_addresses(names: Sequence[str]) -> List[str]:
  """The `NodeAddr` of each node in `names`, in the same order, from one
  `scontrol show node` call."""
  shown = _scontrol(['show', 'node', '-o', ','.join(names)])
  addresses = dict(re.findall(r'NodeName=(\S+).*?\bNodeAddr=(\S+)', shown))
  missing = [name for name in names if name not in addresses]
  if missing:
    raise SlurmEnvironmentError(
        f'scontrol show node gave no NodeAddr for {", ".join(missing)}; '
        'pass --host=node_name to use the node names')
  return [addresses[name] for name in names]


def scontrol_hostnames(nodelist: str) -> List[str]:
  """The host names of a Slurm node list ('n[1-3],m1'), in Slurm's order,
  from `scontrol show hostnames` (Slurm's own expansion)."""
  return _scontrol(['show', 'hostnames', nodelist]).split()


@dataclasses.dataclass(frozen=True)
class SlurmStep:
  """What every task of a step knows about it.

  Attributes:
    job_id: `SLURM_JOB_ID`.
    num_tasks: the step's task count.
    hosts: the step's nodes, in Slurm's order.
    tasks_per_node: how many of the step's tasks run on each of `hosts`.
    rank: this task's `SLURM_PROCID`; None outside a step (the batch
      script's `--check`).
  """
  job_id: int
  num_tasks: int
  hosts: Tuple[str, ...]
  tasks_per_node: Tuple[int, ...]
  rank: Optional[int] = None

  @classmethod
  def from_environ(cls, environ: Mapping[str, str], *,
                   expand: NodeList = scontrol_hostnames,
                   in_step: bool = True) -> 'SlurmStep':
    """Reads the step (`in_step`) or, in the batch script, the job.

    Raises:
      SlurmEnvironmentError: a variable is missing or malformed, or the
        step does not lay tasks out by block.
    """
    def get(*names: str) -> str:
      for name in names:
        if environ.get(name):
          return environ[name]
      if names[-1] == 'SLURM_NTASKS':
        raise SlurmEnvironmentError(
            'SLURM_NTASKS is not set: submit with --ntasks=N, N the number '
            'of tasks the role flags give')
      raise SlurmEnvironmentError(
          f'{names[0]} is not set: run this under srun in a Slurm job '
          '(scripts/slurm/estimator_rt.sbatch does)' if in_step else
          f'{names[-1]} is not set: run this in a Slurm batch job')

    def integer(*names: str) -> int:
      raw = get(*names)
      try:
        return int(raw)
      except ValueError:
        raise SlurmEnvironmentError(
            f'{names[0]}={raw[:50]!r} is not an integer') from None

    if in_step:
      distribution = environ.get('SLURM_DISTRIBUTION', 'block')
      if not distribution.startswith('block'):
        raise SlurmEnvironmentError(
            f'SLURM_DISTRIBUTION={distribution!r}: every task computes the '
            'others\' nodes assuming block distribution; run srun with '
            '--distribution=block')
      names = dict(tasks=('SLURM_STEP_NUM_TASKS', 'SLURM_NTASKS'),
                   nodes=('SLURM_STEP_NODELIST', 'SLURM_JOB_NODELIST'),
                   per_node=('SLURM_STEP_TASKS_PER_NODE',
                             'SLURM_TASKS_PER_NODE'))
    else:
      names = dict(tasks=('SLURM_NTASKS',), nodes=('SLURM_JOB_NODELIST',),
                   per_node=('SLURM_TASKS_PER_NODE',))
    hosts = tuple(expand(get(*names['nodes'])))
    per_node = tuple(expand_tasks_per_node(get(*names['per_node'])))
    if len(per_node) != len(hosts):
      raise SlurmEnvironmentError(
          f'{len(hosts)} nodes ({",".join(hosts)}) but tasks per node for '
          f'{len(per_node)}: {get(*names["per_node"])!r}')
    step = cls(job_id=integer('SLURM_JOB_ID'),
               num_tasks=integer(*names['tasks']), hosts=hosts,
               tasks_per_node=per_node,
               rank=integer('SLURM_PROCID') if in_step else None)
    if sum(per_node) != step.num_tasks:
      raise SlurmEnvironmentError(
          f'{names["tasks"][0]}={step.num_tasks} but the tasks per node '
          f'add up to {sum(per_node)}')
    if step.rank is not None and not 0 <= step.rank < step.num_tasks:
      raise SlurmEnvironmentError(
          f'SLURM_PROCID={step.rank} is out of range for '
          f'{step.num_tasks} tasks')
    return step


def task_slots(step: SlurmStep) -> List[Tuple[str, int]]:
  """(host, index among the tasks of that host) of every rank, by block
  distribution: the first host's tasks are ranks 0.., then the next's."""
  return [(host, local) for host, count in zip(step.hosts,
                                               step.tasks_per_node)
          for local in range(count)]


def job_port_block(*, job_id: int, port_base: int, port_span: int,
                   ports_per_node: int) -> int:
  """The first port of job `job_id`'s block (see the module docstring)."""
  return port_base + (job_id % (port_span // ports_per_node)) * ports_per_node


def step_addresses(step: SlurmStep, *,
                   port_base: int = DEFAULT_PORT_BASE,
                   port_span: int = DEFAULT_PORT_SPAN,
                   ports_per_node: int = DEFAULT_PORTS_PER_NODE
                   ) -> List[str]:
  """'host:port' of every rank of `step`.

  Raises:
    SlurmEnvironmentError: a node has more tasks than `ports_per_node`.
  """
  busiest = max(step.tasks_per_node)
  if busiest > ports_per_node:
    raise SlurmEnvironmentError(
        f'{busiest} tasks on one node but --ports_per_node={ports_per_node}:'
        f' pass --ports_per_node={busiest} or more (ERT_SLURM_PORTS_PER_NODE'
        ' in the sbatch script)')
  first = job_port_block(job_id=step.job_id, port_base=port_base,
                         port_span=port_span, ports_per_node=ports_per_node)
  return [f'{host}:{first + local}' for host, local in task_slots(step)]


def step_cluster(step: SlurmStep, keys: Sequence[TaskKey], **ports
                 ) -> Dict[str, List[str]]:
  """The TF_CONFIG cluster: rank i runs task `keys[i]` at its address.

  Raises:
    SlurmEnvironmentError: the step's task count is not `len(keys)`.
  """
  if step.num_tasks != len(keys):
    raise SlurmEnvironmentError(
        f'the job has {step.num_tasks} Slurm tasks but the role flags ask '
        f'for {len(keys)} ({", ".join(task_name(k) for k in keys)}): '
        f'submit with --ntasks={len(keys)}, or change the role flags')
  return cluster_dict(keys, step_addresses(step, **ports))


def write_atomically(path: str, text: str) -> None:
  """Writes `text` to `path` so that a reader sees all of it or none."""
  temporary = f'{path}.{os.getpid()}.tmp'
  with open(temporary, 'w') as f:
    f.write(text)
  os.replace(temporary, path)


def record_exit_code(directory: Optional[str], key: TaskKey, is_chief: bool,
                     code: int) -> None:
  """Writes `code` to `directory`/<job>_<index> (and /chief), if that
  directory exists here (it is made on the batch script's node only)."""
  if not directory or not os.path.isdir(directory):
    return
  names = [f'{key[0]}_{key[1]}'] + (['chief'] if is_chief else [])
  for name in names:
    write_atomically(os.path.join(directory, name), f'{code}\n')


def run_prefixed(command: Sequence[str], *, env: Mapping[str, str],
                 prefix: str) -> int:
  """Runs `command`, its output lines prefixed with `[prefix] `; returns its
  exit status (128 + N for signal N).

  Stop signals reaching this process are noted and not passed on: Slurm
  signals the command itself (see the module docstring). Handling them
  keeps this process alive to pass on the rest of the output and the code.
  """
  stop_signals = []
  previous = {signum: signal.signal(signum, lambda s, f: stop_signals.append(s))
              for signum in (signal.SIGTERM, signal.SIGINT)}
  try:
    process = subprocess.Popen(
        list(command), env=dict(env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, errors='replace')
  except OSError as e:
    print(f'[{prefix}] error: cannot run {command[0]!r}: {e}', flush=True)
    return 127
  try:
    copy_prefixed(process.stdout, prefix)
    return shell_code(process.wait())
  finally:
    for signum, handler in previous.items():
      signal.signal(signum, handler)


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
  parser = OneLineErrorParser(
      prog='python -m estimator_rt.launch.slurm',
      description=__doc__.split('\n\n')[0],
      usage='%(prog)s [options] -- command ...')
  add_role_flags(parser)
  parser.add_argument('--check', action='store_true',
                      help='in the batch script: check the role flags '
                      'against the job, print the layout, start nothing')
  parser.add_argument('--host', choices=('node_addr', 'node_name'),
                      default='node_addr',
                      help='each task\'s host in the cluster: its node\'s '
                      'NodeAddr (default) or its node\'s name')
  parser.add_argument('--port_base', type=int, default=DEFAULT_PORT_BASE)
  parser.add_argument('--port_span', type=int, default=DEFAULT_PORT_SPAN)
  parser.add_argument('--ports_per_node', type=int,
                      default=DEFAULT_PORTS_PER_NODE)
  parser.add_argument('--exit_code_dir', default=None,
                      help='each task writes its exit code here, if this '
                      'directory exists on its node')
  parser.add_argument('--cluster_file', default=None,
                      help='task 0 writes the cluster (JSON) here, for a '
                      'client\'s --remote_cluster=@FILE')
  add_command(parser)
  args = parser.parse_args(argv)
  take_command(parser, args, who='every task')
  check_roles(parser, args)
  if not 0 < args.port_base < 65536:
    parser.error(f'--port_base={args.port_base}: must be 1-65535')
  if not 0 < args.ports_per_node <= args.port_span:
    parser.error(f'--ports_per_node={args.ports_per_node} '
                 f'--port_span={args.port_span}: need 0 < ports_per_node <= '
                 'port_span')
  if args.port_base + args.port_span > 65536:
    parser.error(f'--port_base={args.port_base} --port_span='
                 f'{args.port_span}: the ports end above 65535')
  return args


def main(argv: Optional[Sequence[str]] = None,
         environ: Optional[Mapping[str, str]] = None,
         expand: NodeList = scontrol_hostnames,
         node_addresses: NodeAddresses = scontrol_node_addresses) -> int:
  args = parse_args(argv)  # Exits 2 with one line on bad flags.
  environ = os.environ if environ is None else environ
  keys = task_keys(workers=args.workers, ps=args.ps, chief=args.chief,
                   evaluator=args.evaluator)
  ports = dict(port_base=args.port_base, port_span=args.port_span,
               ports_per_node=args.ports_per_node)
  try:
    step = SlurmStep.from_environ(environ, expand=expand,
                                  in_step=not args.check)
    if args.host == 'node_addr':
      step = dataclasses.replace(step,
                                 hosts=tuple(node_addresses(step.hosts)))
    cluster = step_cluster(step, keys, **ports)
  except SlurmEnvironmentError as e:
    print(f'error: {e}', file=sys.stderr)
    return BAD_INPUT_EXIT_CODE
  addresses = step_addresses(step, **ports)
  if args.check:
    print(f'[sbatch] job {step.job_id}, {len(keys)} tasks: '
          + ', '.join(f'{task_name(k)} at {a}'
                      for k, a in zip(keys, addresses)), flush=True)
    return 0
  key = keys[step.rank]
  prefix = task_name(key)
  if args.cluster_file and step.rank == 0:
    write_atomically(args.cluster_file, json.dumps(cluster) + '\n')
  print(f'[{prefix}] estimator_rt.launch.slurm: Slurm task {step.rank} of '
        f'{step.num_tasks} is {prefix} at {addresses[step.rank]}', flush=True)
  env = dict(environ, TF_CONFIG=tf_config(cluster, key), PYTHONUNBUFFERED='1')
  code = run_prefixed(args.command, env=env, prefix=prefix)
  record_exit_code(args.exit_code_dir, key, key == chief_of(cluster), code)
  print(f'[{prefix}] estimator_rt.launch.slurm: {prefix} exited {code}',
        flush=True)
  return code


if __name__ == '__main__':
  sys.exit(main())
