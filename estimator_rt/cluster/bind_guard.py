"""The bind guard: a server listens on the address its cluster gives it.

TensorFlow's gRPC server binds the wildcard address (`0.0.0.0:<port>`,
dual-stack `[::]:<port>` on Linux) whatever host the cluster names, and has
no option to change that: a server meant for `127.0.0.1:2222` would take
work from every network the machine is on. TensorFlow servers run any graph
sent to them, so that matters.

The guard is a small C library (`_bind_guard.c`, built when the package is
installed) that the process preloads (`LD_PRELOAD`). It turns the server's
wildcard bind on its port into a bind of the one address asked for, and
fails the bind rather than listen wider. `python -m estimator_rt.run_server`
relaunches itself with the guard preloaded; `listening_addresses` then
reads back from the kernel what the server really listens on, so a guard
that did not act is caught, not assumed.

The address to listen on is the task's host in the cluster, resolved to a
numeric address of this machine, or `--bind_host` when the cluster names a
host this machine does not own (a service name in front of a pod, a NAT
address). `--bind_host=0.0.0.0` listens on every interface, knowingly.
"""

import glob
import ipaddress
import os
import socket
import sys
from typing import List, NoReturn, Optional, Sequence

from estimator_rt.cluster.tf_config import ClusterConfigError
from estimator_rt.cluster.tf_config import split_host_port

ADDRESS_VARIABLE = 'ESTIMATOR_RT_BIND_ADDRESS'
PORT_VARIABLE = 'ESTIMATOR_RT_BIND_PORT'
# Set in the relaunched process, so a guard that failed to load is reported
# instead of relaunching forever.
_RELAUNCHED_VARIABLE = 'ESTIMATOR_RT_BIND_GUARD_RELAUNCHED'

# Hosts meaning "every interface" in --bind_host.
WILDCARD_HOSTS = ('0.0.0.0', '::', '[::]', '*')

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class BindGuardError(ClusterConfigError):
  """The server cannot be kept to the address asked for."""


def library_path() -> Optional[str]:
  """The built guard library, or None when it was not built (no Linux or no
  C compiler at install time)."""
  built = sorted(glob.glob(os.path.join(_PACKAGE_DIR, '_bind_guard*.so')))
  return built[0] if built else None


def is_loaded() -> bool:
  """Whether the guard library is mapped into this process."""
  path = library_path()
  if path is None:
    return False
  mapped_path = os.path.realpath(path)
  try:
    with open('/proc/self/maps') as maps:
      return any(line.rstrip().endswith(mapped_path) for line in maps)
  except OSError:
    return False


def listen_address(task_address: str, bind_host: Optional[str], *,
                   task_name: str) -> Optional[str]:
  """The numeric address this task's server must listen on.

  Args:
    task_address: the task's 'host:port' in the cluster.
    bind_host: overrides the cluster's host; one of WILDCARD_HOSTS means
      every interface.
    task_name: 'worker:0' etc., for errors.

  Returns:
    A numeric IPv4 or IPv6 address of this machine, or None for every
    interface.

  Raises:
    BindGuardError: the host does not resolve, or is not an address of this
      machine.
  """
  if bind_host is not None and bind_host.strip() in WILDCARD_HOSTS:
    return None
  host = bind_host.strip('[] ') if bind_host else split_host_port(
      task_address)[0]
  where = (f'--bind_host={bind_host!r}' if bind_host else
           f"{task_name}'s address {task_address!r}")
  try:
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
  except (socket.gaierror, UnicodeError) as e:
    # UnicodeError: a name the IDNA codec refuses (too long, non-ASCII).
    reason = e.strerror if isinstance(e, socket.gaierror) else 'not a host name'
    raise BindGuardError(
        f'{where[:200]}: host {host[:100]!r} does not resolve ({reason}); '
        'give a host name or address of this machine.') from e
  # IPv4 first: a dual-stack server socket narrowed to an IPv4 address
  # takes IPv4 connections, which is what a name like 'localhost' is
  # normally dialled with.
  candidates = sorted({info[4][0] for info in infos},
                      key=lambda a: ipaddress.ip_address(a).version)
  for candidate in candidates:
    if _is_local(candidate):
      return candidate
  raise BindGuardError(
      f'{where}: host {host!r} ({", ".join(candidates)}) is not an address of '
      'this machine, so its server cannot listen there. Pass '
      "--bind_host=<this machine's address on the cluster's network> (for "
      'example the pod IP behind a service name), or --bind_host=0.0.0.0 to '
      'listen on every interface.')


def _is_local(address: str) -> bool:
  family = socket.AF_INET6 if ':' in address else socket.AF_INET
  with socket.socket(family, socket.SOCK_STREAM) as probe:
    try:
      probe.bind((address, 0))
    except OSError:
      return False
  return True


def restrict(address: str, port: int) -> None:
  """Tells the loaded guard to narrow the wildcard bind on `port`."""
  os.environ[ADDRESS_VARIABLE] = address
  os.environ[PORT_VARIABLE] = str(port)


def restriction(port: int) -> Optional[str]:
  """The address the guard narrows `port` to in this process, or None."""
  if os.environ.get(PORT_VARIABLE) != str(port) or not is_loaded():
    return None
  return os.environ.get(ADDRESS_VARIABLE)


def guard_this_process(task_address: str, bind_host: Optional[str], *,
                       task_name: str, module: str) -> Optional[str]:
  """Keeps the server this process will start to its address.

  Call before TensorFlow is imported: when the guard is not loaded yet, this
  relaunches the process (`python -m module` with the same arguments) with
  it preloaded, and does not return.

  Args:
    task_address: this task's 'host:port' in the cluster.
    bind_host: see `listen_address`.
    task_name: 'worker:0' etc., for errors.
    module: the binary to relaunch ('estimator_rt.run_server').

  Returns:
    The address the server will listen on, or None for every interface.

  Raises:
    BindGuardError: see `listen_address` and `relaunch_with_guard`.
  """
  address = listen_address(task_address, bind_host, task_name=task_name)
  if address is not None and not is_loaded():
    relaunch_with_guard(module, sys.argv[1:])
  forget_preload()
  if address is not None:
    restrict(address, split_host_port(task_address)[1])
  return address


def relaunch_with_guard(module: str, args: Sequence[str]) -> NoReturn:
  """Replaces this process with `python -m module args` under the guard.

  Raises:
    BindGuardError: the guard is not built, or a relaunch did not load it.
  """
  path = library_path()
  if path is None:
    raise BindGuardError(
        'the bind guard (estimator_rt/cluster/_bind_guard.c) is not built, so the '
        'server cannot be kept to its address: reinstall estimator_rt with '
        'a C compiler present (pip install -e .), or pass '
        '--bind_host=0.0.0.0 to listen on every interface.')
  if os.environ.get(_RELAUNCHED_VARIABLE):
    raise BindGuardError(
        f'the bind guard {path} did not load (LD_PRELOAD was ignored); '
        'pass --bind_host=0.0.0.0 to listen on every interface.')
  env = dict(os.environ)
  env['LD_PRELOAD'] = os.pathsep.join(
      p for p in (path, env.get('LD_PRELOAD')) if p)
  env[_RELAUNCHED_VARIABLE] = '1'
  sys.stdout.flush()
  sys.stderr.flush()
  os.execve(sys.executable, [sys.executable, '-m', module, *args], env)


def forget_preload() -> None:
  """Drops the guard from LD_PRELOAD, so processes this one starts do not
  inherit it (it is already loaded here)."""
  path = library_path()
  kept = [p for p in os.environ.get('LD_PRELOAD', '').split(os.pathsep)
          if p and p != path]
  if kept:
    os.environ['LD_PRELOAD'] = os.pathsep.join(kept)
  else:
    os.environ.pop('LD_PRELOAD', None)
  os.environ.pop(_RELAUNCHED_VARIABLE, None)


def listening_addresses(port: int) -> List[str]:
  """The addresses with a TCP socket listening on `port`, read from the
  kernel (/proc/net/tcp and tcp6); '0.0.0.0' or '::' means every interface.
  IPv4-mapped IPv6 addresses are given as IPv4 ones. Each address once:
  gRPC can hold more than one listening socket on one address and port
  (a CI run saw 127.0.0.1 listed twice).
  """
  found = []
  for table in ('/proc/net/tcp', '/proc/net/tcp6'):
    try:
      with open(table) as f:
        rows = f.read().splitlines()[1:]
    except OSError:
      continue
    for row in rows:
      fields = row.split()
      local, state = fields[1], fields[3]
      address_hex, port_hex = local.split(':')
      if state != '0A' or int(port_hex, 16) != port:  # 0A: LISTEN.
        continue
      address = _kernel_address(address_hex)
      # A dual-stack socket narrowed to an IPv4 address shows it mapped.
      mapped = getattr(address, 'ipv4_mapped', None)
      text = str(mapped or address)
      if text not in found:
        found.append(text)
  return found


def _kernel_address(hex_text: str):
  # The kernel prints each 32-bit word of the address in host byte order.
  words = [bytes.fromhex(hex_text[i:i + 8]) for i in range(0, len(hex_text), 8)]
  raw = b''.join(word[::-1] if sys.byteorder == 'little' else word
                 for word in words)
  return ipaddress.ip_address(raw)


def is_wildcard(address: str) -> bool:
  """Whether a listening address takes connections on every interface."""
  return ipaddress.ip_address(address).is_unspecified
