"""TF_CONFIG: parsed once, validated before anything starts, immutable.

TF_CONFIG is the JSON environment variable tf.estimator and tf.distribute
read to learn the cluster and this process's place in it:

    {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"],
                 "ps": ["host2:2222"], "evaluator": ["host3:2222"]},
     "task": {"type": "worker", "index": 0}}

Differences from tf.estimator, on purpose: the evaluator may be listed in
`cluster` or left out of it (tf.estimator wanted one or the other depending
on the strategy); a string index such as "1" is accepted; every mistake is
reported as one line naming the field and the value (cut short if long),
before any server starts. Addresses are checked strictly: a DNS name of at
most 253 characters, a dotted IPv4 address or a bracketed IPv6 address, and
a port 1-65535. Runaway values are refused before they are looked at
closely: TF_CONFIG (or a remote_cluster file) over MAX_CONFIG_CHARS, more
than MAX_TASKS tasks, JSON nested too deeply.
"""

import dataclasses
import ipaddress
import json
import re
import socket
from typing import Dict, List, Mapping, Optional, Tuple

from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError

CHIEF = 'chief'
WORKER = 'worker'
PS = 'ps'
EVALUATOR = 'evaluator'
JOB_NAMES = (CHIEF, WORKER, PS, EVALUATOR)
# tf.estimator's legacy name for the chief (its `master` also evaluated),
# taken in a cluster without a chief job; see validate_cluster.
MASTER = 'master'

# Strategies by what they need from a cluster.
MULTI_WORKER_MIRRORED = 'multi_worker_mirrored'
PARAMETER_SERVER = 'parameter_server'

# TF_CONFIG is one environment variable (Linux caps one at 128 KiB); the
# bound also applies to a --remote_cluster file, and keeps a runaway value
# from being parsed, or echoed, whole.
MAX_CONFIG_CHARS = 1 << 20
# Far more tasks than any cluster this runtime starts; a longer list is a
# generated mistake, refused before each address is checked.
MAX_TASKS = 10_000
# DNS: a name of at most 253 characters, in labels of at most 63.
MAX_HOST_CHARS = 253
_HOST_LABEL = re.compile(r'[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?')
_DIGITS = re.compile(r'[0-9]+')
_RPC_LAYER = re.compile(r'[A-Za-z0-9+._-]{1,32}')


class ClusterConfigError(UserInputError):
  """TF_CONFIG (or a cluster flag) is malformed or inconsistent."""


def _fail(message: str):
  raise ClusterConfigError(message)


def host_problem(host: str) -> Optional[str]:
  """What is wrong with `host` as a cluster host, or None if nothing.

  A host is a DNS name (at most 253 characters, labels of letters, digits,
  '-' and '_', at most 63 each), a dotted IPv4 address, or an IPv6 address
  in brackets ('[::1]').
  """
  if len(host) > MAX_HOST_CHARS + 2:  # Room for an IPv6 host's brackets.
    return (f'the host is {len(host)} characters; a host has at most '
            f'{MAX_HOST_CHARS}')
  if host.startswith('['):
    if not host.endswith(']'):
      return 'an IPv6 host opens "[" but does not close it'
    try:
      ipaddress.IPv6Address(host[1:-1])
    except ValueError:
      return f'{host[1:-1]!r} in brackets is not an IPv6 address'
    return None
  if not host:
    return 'the host is empty'
  if ':' in host:
    return 'an IPv6 host goes in brackets, e.g. "[::1]:2222"'
  name = host[:-1] if host.endswith('.') else host  # A fully qualified name.
  if len(name) > MAX_HOST_CHARS:
    return (f'the host is {len(name)} characters; a host has at most '
            f'{MAX_HOST_CHARS}')
  labels = name.split('.')
  if _DIGITS.fullmatch(labels[-1]):
    # All-digit last label: only a dotted IPv4 address (resolvers would
    # read '1234' or '1.2.3' as some other IPv4 address).
    try:
      ipaddress.IPv4Address(name)
    except ValueError:
      return f'{name!r} is neither a host name nor an IPv4 address'
    return None
  for label in labels:
    if not _HOST_LABEL.fullmatch(label):
      return (f'{shorten(label, limit=40)} is not a host name label (1-63 '
              "letters, digits, '-' or '_', not starting or ending with '-')")
  return None


def _address_problem(address: str) -> Optional[str]:
  """What is wrong with 'host:port' or '[ipv6]:port', or None."""
  if address.startswith('['):
    closing = address.find(']')
    if closing < 0:
      return 'an IPv6 host opens "[" but does not close it'
    host, rest = address[:closing + 1], address[closing + 1:]
    if not rest.startswith(':'):
      return 'there is no ":port" after the IPv6 host'
    port = rest[1:]
  else:
    host, colon, port = address.rpartition(':')
    if not colon:
      return 'there is no ":port"'
  if not (_DIGITS.fullmatch(port) and len(port) <= 5 and
          0 < int(port) < 65536):
    return f'port {shorten(port, limit=20)} is not a number in 1-65535'
  return host_problem(host)


def check_address(address, *, where: str) -> str:
  """Checks `host:port` (or `[ipv6]:port`); returns it.

  The host must pass `host_problem` and the port be 1..65535.

  Raises:
    ClusterConfigError: naming `where` and the (shortened) value.
  """
  if not isinstance(address, str):
    _fail(f'{where}={shorten(address)} must be a "host:port" string.')
  problem = _address_problem(address)
  if problem:
    _fail(f'{where}={shorten(address)} is not a valid "host:port" address: '
          f'{problem}.')
  return address


def split_host_port(address: str) -> Tuple[str, int]:
  """('host', port) of a 'host:port' or '[ipv6]:port' address."""
  host, port = address.rsplit(':', 1)
  return host.strip('[]'), int(port)


def reachable(address: str, *, timeout: float) -> bool:
  """Whether something accepts a TCP connection at 'host:port' (or
  '[ipv6]:port') within `timeout` seconds. An address that does is
  remembered (see `was_reachable`)."""
  try:
    with socket.create_connection(split_host_port(address), timeout=timeout):
      _seen_reachable.add(address)
      return True
  except OSError:
    return False


def was_reachable(address: str) -> bool:
  """Whether `reachable(address)` was ever True in this process: a server
  that accepted connections before and refuses them now has gone away (a
  lost task), where one never seen may still be starting."""
  return address in _seen_reachable


# The addresses `reachable` found accepting connections in this process.
_seen_reachable = set()


def join_host_port(host: str, port: int) -> str:
  """'host:port', with an IPv6 host in brackets."""
  return f'[{host}]:{port}' if ':' in host else f'{host}:{port}'


def _parse_index(value, *, where: str) -> int:
  if isinstance(value, bool):
    _fail(f'{where}={value!r} must be an integer.')
  if isinstance(value, str) and re.fullmatch(r'\s*-?[0-9]+\s*', value):
    digits = value.strip().lstrip('-')
    if len(digits) > len(str(MAX_TASKS)):
      _fail(f'{where}={shorten(value)} is out of range: a cluster has at '
            f'most {MAX_TASKS} tasks.')
    value = int(value)
  if not isinstance(value, int):
    _fail(f'{where}={shorten(value)} must be an integer (or a string of '
          'digits).')
  if value < 0:
    _fail(f'{where}={shorten(value)} must be >= 0.')
  return value


def cpu_device(job: str, index: int) -> str:
  """The CPU device name of task `job:index` of the cluster."""
  return f'/job:{job}/replica:0/task:{index}/device:CPU:0'


def validate_cluster(cluster, *, where: str = 'TF_CONFIG cluster'
                     ) -> Dict[str, Tuple[str, ...]]:
  """Checks a cluster dict (job -> list of addresses); returns a clean copy.

  Raises:
    ClusterConfigError: not a dict, an unknown job, a malformed or
      duplicate address, two chiefs, or more than one evaluator.
  """
  if not isinstance(cluster, Mapping):
    _fail(f'{where} must be a JSON object mapping job names to address '
          f'lists, got {type(cluster).__name__}: {shorten(cluster)}')
  jobs = {}
  for job, addresses in cluster.items():
    if job == MASTER:
      if CHIEF in cluster:
        _fail(f"{where} has both a 'master' and a 'chief' job; 'master' is "
              "tf.estimator's legacy name for the chief: keep one.")
      if EVALUATOR in cluster:
        # tf.estimator 2.15's rule: its master evaluated.
        _fail(f"{where} has a 'master' job and an 'evaluator': the master "
              'evaluates each new checkpoint itself (tf.estimator 2.15 '
              "refused an evaluator beside it); drop the evaluator, or name "
              "the master 'chief'.")
    elif job not in JOB_NAMES:
      _fail(f'{where} has unknown job {shorten(job)}; jobs are '
            f'{list(JOB_NAMES)}.')
    if isinstance(addresses, str):
      addresses = [addresses]
    if not isinstance(addresses, (list, tuple)) or not addresses:
      _fail(f'{where}[{job!r}]={shorten(addresses)} must be a non-empty list '
            'of "host:port" addresses.')
    jobs[job] = addresses
  num_tasks = sum(len(addresses) for addresses in jobs.values())
  if num_tasks > MAX_TASKS:
    _fail(f'{where} lists {num_tasks} tasks; at most {MAX_TASKS} are '
          'accepted.')
  clean = {}
  seen = {}
  for job, addresses in jobs.items():
    for i, address in enumerate(addresses):
      if (num_tasks == 1 and job in ('chief', 'master') and
          isinstance(address, str)):
        # One chief or master: no server listens there (see
        # TaskInfo.single_node), so any name is taken, as 2.15 took
        # 'fake_chief'. (A cluster of one worker 2.15 refused: it has no
        # chief.)
        continue
      check_address(address, where=f'{where}[{job!r}][{i}]')
      if address in seen:
        _fail(f'{where}: address {address!r} is used by both '
              f'{seen[address]} and {job}:{i}; every task needs its own '
              'host:port.')
      seen[address] = f'{job}:{i}'
    clean[job] = tuple(addresses)
  if len(clean.get(CHIEF, ())) > 1:
    _fail(f'{where}[{CHIEF!r}] lists {len(clean[CHIEF])} chiefs; a cluster '
          'has at most one.')
  if len(clean.get(MASTER, ())) > 1:
    _fail(f'{where}[{MASTER!r}] lists {len(clean[MASTER])} tasks; a cluster '
          'has at most one master (the chief).')
  if len(clean.get(EVALUATOR, ())) > 1:
    _fail(f'{where}[{EVALUATOR!r}] lists {len(clean[EVALUATOR])} '
          'evaluators; a cluster has at most one.')
  return clean


@dataclasses.dataclass(frozen=True)
class TaskInfo:
  """This process's place in a cluster.

  Attributes:
    cluster: job -> addresses, as given (the evaluator included if listed).
    task_type: 'chief', 'worker', 'ps' or 'evaluator'; or 'master',
      tf.estimator's legacy chief (see `chief_job`).
    task_index: index within the job.
    rpc_layer: the protocol ('grpc' unless TF_CONFIG says otherwise).
    standalone_client: this process is a client driving long-running
      servers (`remote_cluster`), not a task the cluster was started with:
      it must not tell the servers to exit when it is done.
  """

  cluster: Mapping[str, Tuple[str, ...]]
  task_type: str
  task_index: int
  rpc_layer: str = 'grpc'
  standalone_client: bool = False

  @property
  def training_cluster(self) -> Dict[str, List[str]]:
    """The cluster without the evaluator: what strategies and servers see.

    The evaluator never joins training, so it must not be in the cluster
    the training tasks connect to (they would wait for it).
    """
    return {job: list(addresses) for job, addresses in self.cluster.items()
            if job != EVALUATOR}

  @property
  def runtime_cluster(self) -> Dict[str, List[str]]:
    """The cluster this task's own TensorFlow server knows.

    The training cluster, except for a standalone client (it also connects
    to the evaluator server of its remote_cluster, to evaluate there) and
    an evaluator server started by run_server (it must find itself).
    """
    if self.standalone_client or self.task_type == EVALUATOR:
      return {job: list(addresses) for job, addresses in self.cluster.items()}
    return self.training_cluster

  @property
  def single_node(self) -> bool:
    """The cluster is this one task (a chief or master): no TensorFlow
    server is started and its address is never used, as in tf.estimator
    2.15 (whose session master was '' for a one-node cluster and which
    started no server then); training runs in this process alone."""
    return sum(len(addresses) for addresses in self.cluster.values()) == 1

  @property
  def chief_job(self) -> str:
    """The chief's job: 'chief', or 'master' in a legacy cluster (the
    servers keep that job name, which device names and filters use)."""
    return MASTER if MASTER in self.cluster else CHIEF

  @property
  def chief_address(self) -> Optional[str]:
    """The chief's address (None: no chief job, worker 0 is the chief)."""
    addresses = self.cluster.get(self.chief_job)
    return addresses[0] if addresses else None

  @property
  def is_legacy_master(self) -> bool:
    """This task is a legacy `master`: the chief, which also evaluates."""
    return self.task_type == MASTER

  @property
  def num_workers(self) -> int:
    """Training workers, the chief included."""
    return (len(self.cluster.get(self.chief_job, ())) +
            len(self.cluster.get(WORKER, ())))

  @property
  def num_ps(self) -> int:
    return len(self.cluster.get(PS, ()))

  @property
  def has_evaluator(self) -> bool:
    return EVALUATOR in self.cluster or self.task_type == EVALUATOR

  @property
  def is_chief(self) -> bool:
    """The chief, or worker 0 when there is no chief job."""
    if self.task_type == self.chief_job:
      return True
    return (self.task_type == WORKER and self.task_index == 0 and
            self.chief_job not in self.cluster)

  @property
  def address(self) -> Optional[str]:
    """This task's address (None for an evaluator left out of `cluster`)."""
    addresses = self.cluster.get(self.task_type)
    return addresses[self.task_index] if addresses else None

  def as_tf_config(self) -> dict:
    """TF_CONFIG for this task as TensorFlow's resolvers expect it."""
    return {'cluster': self.training_cluster,
            'task': {'type': self.task_type, 'index': self.task_index},
            'rpc_layer': self.rpc_layer}

  def describe(self) -> str:
    jobs = ', '.join(f'{len(v)} {k}' for k, v in self.cluster.items())
    return (f'{self.task_type}:{self.task_index}'
            f'{" (chief)" if self.is_chief and self.task_type != CHIEF else ""}'
            f' at {self.address or "(not in cluster)"} in a cluster of {jobs}')


def load_json(raw, *, what: str):
  """The JSON value of `raw`, bounded in size and nesting."""
  if not isinstance(raw, str):
    _fail(f'{what} must be JSON text, got {type(raw).__name__}: '
          f'{shorten(raw)}')
  if len(raw) > MAX_CONFIG_CHARS:
    _fail(f'{what} is {len(raw)} characters; at most {MAX_CONFIG_CHARS} are '
          f'accepted: {shorten(raw)}')
  try:
    return json.loads(raw)
  except json.JSONDecodeError as e:
    _fail(f'{what} is not valid JSON ({e.msg} at column {e.colno}): '
          f'{shorten(raw, limit=120)}')
  except RecursionError:
    _fail(f'{what} is nested too deeply to be a cluster description: '
          f'{shorten(raw)}')
  except ValueError as e:  # A number of more than 4300 digits.
    _fail(f'{what} is not usable JSON ({str(e).split(";")[0][:100]}): '
          f'{shorten(raw)}')


def parse_tf_config(raw: Optional[str]) -> Optional[TaskInfo]:
  """Parses TF_CONFIG; None when unset or without a cluster (local mode).

  Raises:
    ClusterConfigError: naming the offending field and value.
  """
  if raw is None or not raw.strip():
    return None
  config = load_json(raw, what='TF_CONFIG')
  if not isinstance(config, dict):
    _fail(f'TF_CONFIG must be a JSON object, got {type(config).__name__}: '
          f'{shorten(raw)}')
  if 'cluster' not in config or config['cluster'] in (None, {}):
    task = config.get('task')
    if task and not (isinstance(task, Mapping) and
                     task.get('type', WORKER) == WORKER and
                     str(task.get('index', 0)).strip() == '0'):
      # tf.estimator 2.15 took a task without a cluster for local training
      # only if it was worker 0.
      _fail('TF_CONFIG has a "task" but no "cluster": give both, or neither '
            'for local training (without a cluster, the task must be '
            f'worker 0; got {shorten(task)}).')
    return None
  if _is_one_master(config['cluster'], config.get('task')):
    # tf.estimator 2.15 ran a cluster of one `master` task (the single-node
    # TF_CONFIG of hosted training services) in one process: its session
    # master was '' for a one-node cluster, no server started, and
    # run_master trained and evaluated after each checkpoint, as the local
    # role does.
    return None
  cluster = validate_cluster(config['cluster'])
  task = config.get('task')
  if not isinstance(task, Mapping):
    _fail(f'TF_CONFIG "task" must be an object like {{"type": "worker", '
          f'"index": 0}}, got {shorten(task)}.')
  task_type = task.get('type')
  if task_type is None:
    _fail('TF_CONFIG task has no "type"; give one of '
          f'{list(JOB_NAMES)}.')
  if task_type not in JOB_NAMES and not (task_type == MASTER and
                                         MASTER in cluster):
    _fail(f'TF_CONFIG task type={shorten(task_type)} is not one of '
          f'{list(JOB_NAMES)}.')
  if task_type == EVALUATOR and MASTER in cluster:
    _fail("TF_CONFIG task type='evaluator' in a cluster with a 'master' job: "
          'the master evaluates each new checkpoint itself (tf.estimator '
          "2.15 refused an evaluator beside it); name the master 'chief' to "
          'run an evaluator task.')
  if task_type not in cluster and task_type != EVALUATOR:
    _fail(f'TF_CONFIG task type={task_type!r} is not a job in the cluster '
          f'(jobs: {sorted(cluster)}).')
  if 'index' not in task:
    _fail(f'TF_CONFIG task {{"type": {task_type!r}}} has no "index".')
  index = _parse_index(task['index'], where='TF_CONFIG task index')
  if task_type == EVALUATOR and index > 0:
    _fail(f'TF_CONFIG task index={shorten(index)} for the evaluator; there '
          'is one evaluator, index 0.')
  if task_type in cluster and index >= len(cluster[task_type]):
    _fail(f'TF_CONFIG task index={shorten(index)} is out of range: job '
          f'{task_type!r} has {len(cluster[task_type])} task(s), indices '
          f'0..{len(cluster[task_type]) - 1}.')
  rpc_layer = config.get('rpc_layer') or 'grpc'
  if not isinstance(rpc_layer, str) or not _RPC_LAYER.fullmatch(rpc_layer):
    _fail(f'TF_CONFIG rpc_layer={shorten(rpc_layer)} must be a protocol name '
          'like "grpc".')
  return TaskInfo(cluster=cluster, task_type=task_type, task_index=index,
                  rpc_layer=rpc_layer)


def _is_one_master(cluster, task) -> bool:
  """Whether TF_CONFIG is tf.estimator's legacy one-task cluster: a single
  `master` job of one address, and this process its task 0."""
  if not (isinstance(cluster, Mapping) and set(cluster) == {'master'} and
          isinstance(task, Mapping) and task.get('type') == 'master'):
    return False
  addresses = cluster['master']
  if isinstance(addresses, str):
    addresses = [addresses]
  if not isinstance(addresses, (list, tuple)) or len(addresses) != 1:
    return False
  if not isinstance(addresses[0], str):
    check_address(addresses[0], where="TF_CONFIG cluster['master'][0]")
  # Any name otherwise: no server listens there (see TaskInfo.single_node).
  return _parse_index(task.get('index'), where='TF_CONFIG task index') == 0


def check_strategy(task: TaskInfo, strategy_name: str) -> None:
  """Checks that the cluster's shape fits the distribution strategy.

  Raises:
    ClusterConfigError: no chief or worker at all, ps tasks the strategy
      cannot use, a parameter server strategy without ps or workers, or
      several training tasks under a one-process strategy.
  """
  if MASTER in task.cluster and strategy_name == MULTI_WORKER_MIRRORED:
    _fail(f"TF_CONFIG cluster has a 'master' job (tf.estimator's legacy name "
          'for the chief, for between-graph training with ps tasks); '
          f'--distribution_strategy={MULTI_WORKER_MIRRORED!r} needs it named '
          "'chief'.")
  if not task.num_workers:
    if strategy_name == MULTI_WORKER_MIRRORED:
      _fail(f'--distribution_strategy={MULTI_WORKER_MIRRORED!r} needs '
            '"chief" or "worker" tasks in the TF_CONFIG cluster; it has '
            'none.')
    _fail('TF_CONFIG cluster has no "chief" or "worker" task: nothing would '
          'train, and an evaluator would wait for checkpoints forever.')
  if (task.num_ps and strategy_name != PARAMETER_SERVER and
      not task.standalone_client):
    _fail(f'TF_CONFIG has {task.num_ps} ps task(s) but '
          f'--distribution_strategy={strategy_name!r} cannot use them; use '
          f'{PARAMETER_SERVER!r} or remove the "ps" job.')
  if strategy_name == PARAMETER_SERVER:
    where = 'remote_cluster' if task.standalone_client else (
        'the TF_CONFIG cluster')
    if not task.num_ps:
      _fail(f'--distribution_strategy={PARAMETER_SERVER!r} needs "ps" tasks '
            f'in {where}; it has none.')
    if not task.cluster.get(WORKER):
      _fail(f'--distribution_strategy={PARAMETER_SERVER!r} needs "worker" '
            f'tasks in {where}; it has none.')
    if task.chief_job not in task.cluster:
      _fail(f'--distribution_strategy={PARAMETER_SERVER!r} needs a "chief" '
            '(the coordinator) in the TF_CONFIG cluster; it has none.')
  elif task.standalone_client:
    pass  # Synchronous standalone client: replicates in-graph over workers.
  elif strategy_name != MULTI_WORKER_MIRRORED and task.num_workers > 1:
    _fail(f'TF_CONFIG has {task.num_workers} training tasks but '
          f'--distribution_strategy={strategy_name!r} trains in one process; '
          f'use {MULTI_WORKER_MIRRORED!r} or {PARAMETER_SERVER!r}.')


def _is_loopback(address: str) -> bool:
  host, _ = split_host_port(address)
  return host in ('localhost', '::1') or host.startswith('127.')


def server_task(task: Optional[TaskInfo], *, tf_config: Optional[str]
                ) -> TaskInfo:
  """The task a long-running server (`run_server`) serves: `task`, else the
  one TF_CONFIG describes. A worker, a ps, or an evaluator (a standalone
  client evaluates on the evaluator server of its remote_cluster).

  Raises:
    ClusterConfigError: no cluster or task, or a chief task (in
      standalone-client mode the client is the chief).
  """
  if task is None:
    task = parse_tf_config(tf_config)
    if task is None:
      _fail('run_server: no cluster: set TF_CONFIG (with "cluster" and '
            '"task") or pass --cluster, --job_name and --task_index.')
  if task.task_type == CHIEF:
    _fail("run_server: task type='chief' is not a server; in "
          'standalone-client mode the client is the chief. Serve "worker", '
          '"ps" or "evaluator" tasks.')
  if task.address is None:
    _fail(f"run_server: task type={task.task_type!r} index="
          f'{task.task_index} has no address in the cluster.')
  # A one-node cluster's address is not checked when it is parsed (no
  # server is started for it in training); a server listens there.
  check_address(task.address, where=f'run_server: {task.task_type}:'
                f'{task.task_index} address')
  return task


def _source_address_towards(address: str) -> str:
  """This machine's address on its route to `address`: a UDP socket is
  connected there, which picks a route and a source address and sends
  nothing. This host's name when there is no route (the reachability check
  then names the server)."""
  try:
    family, _, _, _, sockaddr = socket.getaddrinfo(
        *split_host_port(address), type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
      probe.connect(sockaddr)
      return probe.getsockname()[0]
  except OSError:
    return socket.gethostname()


def client_task(remote_cluster, *, client_port: Optional[int] = None
                ) -> TaskInfo:
  """The TaskInfo of a standalone client driving `remote_cluster`.

  The client joins the cluster as its chief (the coordinator), at a free
  port on this machine: 127.0.0.1 when every server is on loopback, else
  this machine's address on the route to the first server (what the
  servers see it as; this host's name may resolve to a loopback address).

  Raises:
    ClusterConfigError: a malformed cluster, one that names a chief (the
      client is the chief), or one without workers.
  """
  clean = validate_cluster(remote_cluster, where='remote_cluster')
  if CHIEF in clean:
    _fail('remote_cluster lists a "chief"; the client is the chief. List only '
          'the "worker" and "ps" servers (and optionally an "evaluator" '
          'server to evaluate on).')
  if not clean.get(WORKER):
    _fail('remote_cluster has no "worker" servers to train on.')
  if client_port is None:
    with socket.socket() as probe:
      probe.bind(('', 0))
      client_port = probe.getsockname()[1]
  servers = [a for addresses in clean.values() for a in addresses]
  host = ('127.0.0.1' if all(_is_loopback(a) for a in servers) else
          _source_address_towards(servers[0]))
  address = join_host_port(host, client_port)
  return TaskInfo(cluster={**clean, CHIEF: (address,)},
                  task_type=CHIEF, task_index=0, standalone_client=True)
