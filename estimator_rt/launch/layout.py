"""Where each task of a TF_CONFIG cluster runs and what TF_CONFIG it gets.

Every launcher (local processes, Slurm, Kubernetes, Ray) takes the roles
the same way, `--workers N --ps M --chief --evaluator`, and lays them out
with `task_keys`; what differs between launchers is only where the
addresses come from. No TensorFlow here: a launcher must not pay for it.
"""

import argparse
import json
import random
import socket
from typing import Dict, List, Optional, Sequence, Tuple

TaskKey = Tuple[str, int]  # ('worker', 1)

# The order of the jobs in a task list: the chief first, the evaluator
# last (a launcher that numbers tasks 0..N-1 gives the chief task 0).
JOB_ORDER = ('chief', 'worker', 'ps', 'evaluator')


def add_role_flags(parser: argparse.ArgumentParser) -> None:
  """Adds `--workers`, `--ps`, `--chief` and `--evaluator` to `parser`."""
  parser.add_argument('--workers', type=int, default=1,
                      help='number of worker tasks')
  parser.add_argument('--ps', type=int, default=0,
                      help='number of parameter server tasks')
  parser.add_argument('--chief', action='store_true',
                      help='add a chief task (else worker 0 is the chief)')
  parser.add_argument('--evaluator', action='store_true',
                      help='add an evaluator task')


def role_counts_problem(*, workers: int, ps: int, chief: bool,
                        evaluator: bool) -> str:
  """What is wrong with the role counts, '' if nothing.

  A cluster needs a chief or at least one worker; a parameter-server
  cluster (ps > 0) needs at least one worker to run the steps.
  """
  del evaluator  # Always fine: 0 or 1.
  if workers < 0 or ps < 0:
    return (f'--workers={workers} --ps={ps}: the counts must be 0 or more')
  if workers == 0 and not chief:
    return (f'--workers={workers} --ps={ps}: need at least one worker or '
            'a chief')
  if ps and not workers:
    return (f'--workers={workers} --ps={ps}: a parameter-server cluster '
            'needs at least one worker to run the steps')
  return ''


def task_keys(*, workers: int, ps: int, chief: bool,
              evaluator: bool) -> List[TaskKey]:
  """Every task of the cluster, chief first, then workers, ps, evaluator.

  Raises:
    ValueError: the counts make no cluster (see `role_counts_problem`).
  """
  problem = role_counts_problem(workers=workers, ps=ps, chief=chief,
                                evaluator=evaluator)
  if problem:
    raise ValueError(problem)
  counts = {'chief': int(chief), 'worker': workers, 'ps': ps,
            'evaluator': int(evaluator)}
  return [(job, i) for job in JOB_ORDER for i in range(counts[job])]


def cluster_dict(keys: Sequence[TaskKey], addresses: Sequence[str]
                 ) -> Dict[str, List[str]]:
  """The TF_CONFIG `cluster` of `keys`, each at the address of the same
  position in `addresses` ('host:port')."""
  if len(keys) != len(addresses):
    raise ValueError(f'{len(keys)} tasks but {len(addresses)} addresses: '
                     f'{list(addresses)}')
  cluster: Dict[str, List[str]] = {}
  for (job, index), address in zip(keys, addresses):
    tasks = cluster.setdefault(job, [])
    if index != len(tasks):
      raise ValueError(f'task {job}:{index} out of order in {list(keys)}')
    tasks.append(address)
  return cluster


def tf_config(cluster: Dict[str, List[str]], key: TaskKey) -> str:
  """The TF_CONFIG (JSON) of task `key` in `cluster`."""
  return json.dumps({'cluster': cluster,
                     'task': {'type': key[0], 'index': key[1]}})


def task_name(key: TaskKey) -> str:
  return f'{key[0]}:{key[1]}'


def chief_of(cluster: Dict[str, List[str]]) -> TaskKey:
  """The task whose exit code is the job's: `chief`, else worker 0."""
  return ('chief', 0) if 'chief' in cluster else ('worker', 0)


def start_order(cluster: Dict[str, List[str]]) -> List[TaskKey]:
  """Every task, in the order to start them: servers first, the chief last
  (the chief is the one that waits for the others)."""
  chief = chief_of(cluster)
  return sorted(((job, i) for job, addresses in cluster.items()
                 for i in range(len(addresses))),
                key=lambda k: (k == chief, k))


# The first port the kernel gives the local end of an outgoing connection
# (and a bind to port 0) when /proc does not say.
_DEFAULT_FIRST_EPHEMERAL_PORT = 32768
# The ports handed out, when the kernel's ephemeral range starts above
# them: above Ray's worker ports (10002-19999 by default, which a Ray head
# refuses to overlap) and below Kubernetes' NodePorts (30000-32767).
_CHOSEN_PORTS = (20000, 30000)


def _first_ephemeral_port() -> int:
  """Where the kernel's range for outgoing connections' ports starts."""
  try:
    with open('/proc/sys/net/ipv4/ip_local_port_range') as f:
      return int(f.read().split()[0])
  except (OSError, ValueError, IndexError):
    return _DEFAULT_FIRST_EPHEMERAL_PORT


def reserve_port(host: str = '127.0.0.1', *,
                 chooser: Optional[random.Random] = None) -> socket.socket:
  """A TCP socket bound to a free port of `host`, for a task to bind later.

  The port is chosen at random in `_CHOSEN_PORTS`, below the kernel's
  ephemeral range: a port in that range can be taken, between the choice
  and the task's bind, by any outgoing connection on the machine (the
  local end of every gRPC client's connection is one), and the task then
  fails with "Could not start gRPC server". When no port tried there is
  free, the kernel picks one (port 0). The caller closes the socket just
  before the task starts.
  """
  chooser = chooser or random.Random()  # From os.urandom, not the seed.
  candidates = range(_CHOSEN_PORTS[0],
                     min(_CHOSEN_PORTS[1], _first_ephemeral_port()))
  for port in chooser.sample(candidates, min(len(candidates), 50)) + [0]:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
      s.bind((host, port))
      return s
    except OSError:
      s.close()
      if port == 0:  # Nothing free at all: the kernel's own error.
        raise
  raise AssertionError('unreachable: the bind to port 0 returns or raises')


def free_ports(count: int) -> List[int]:
  """`count` distinct free TCP ports on 127.0.0.1 (see `reserve_port`).

  The sockets are held open until all ports are chosen, so the same port
  is never handed out twice.
  """
  chooser = random.Random()
  sockets = []
  try:
    for _ in range(count):
      sockets.append(reserve_port(chooser=chooser))
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def make_cluster(*, workers: int, ps: int, chief: bool,
                 evaluator: bool) -> Dict[str, List[str]]:
  """A cluster dict with a free loopback address for every task."""
  keys = task_keys(workers=workers, ps=ps, chief=chief, evaluator=evaluator)
  return cluster_dict(keys, [f'127.0.0.1:{port}'
                             for port in free_ports(len(keys))])


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
