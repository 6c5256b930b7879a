"""The bind guard: run_server listens on its cluster address and no wider.

TensorFlow alone listens on every interface. These tests read what the
kernel says is listening, and dial a second loopback address (127.0.0.2,
which reaches this machine too) that a wildcard server would answer and a
server kept to 127.0.0.1 must refuse.
"""

import json
import socket
import textwrap

import pytest

from conftest import run_python
from estimator_rt.cluster import bind_guard
from _cluster import address_not_of_this_machine
from _cluster import launcher
from _cluster import reachable
from _cluster import start_run_server
from _cluster import terminate
from _cluster import wait_for

pytestmark = pytest.mark.skipif(
    bind_guard.library_path() is None,
    reason='the bind guard is not built (pip install -e . builds it)')


def _free_ports(count):
  # Held together while chosen, so they differ from each other.
  return launcher().free_ports(count)


def _accepts(host, port):
  return reachable(f'{host}:{port}')


def _guarded_env(address, port):
  return {'LD_PRELOAD': bind_guard.library_path(),
          bind_guard.ADDRESS_VARIABLE: address,
          bind_guard.PORT_VARIABLE: str(port)}


def test_guard_narrows_only_the_wildcard_bind_of_its_port():
  port, other = _free_ports(2)
  script = textwrap.dedent(f'''
      import errno, json, socket
      out = {{}}
      def bound(family, host, port, dual=False):
        s = socket.socket(family)
        if dual:
          s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        try:
          s.bind((host, port))
          return list(s.getsockname()[:2])
        except OSError as e:
          return errno.errorcode[e.errno]
        finally:
          s.close()
      out['ipv4_wildcard'] = bound(socket.AF_INET, '0.0.0.0', {port})
      out['ipv6_wildcard'] = bound(socket.AF_INET6, '::', {port}, dual=True)
      out['other_port'] = bound(socket.AF_INET, '0.0.0.0', {other})
      out['explicit'] = bound(socket.AF_INET, '127.0.0.1', {port})
      print(json.dumps(out))
  ''')
  result = run_python(['-c', script], timeout=60,
                      env=_guarded_env('127.0.0.1', port))
  assert result.returncode == 0, result.stderr
  out = json.loads(result.stdout)
  assert out['ipv4_wildcard'] == ['127.0.0.1', port]
  assert out['ipv6_wildcard'] == ['::ffff:127.0.0.1', port]
  # Other ports and explicit addresses pass through untouched.
  assert out['other_port'] == ['0.0.0.0', other]
  assert out['explicit'] == ['127.0.0.1', port]


def test_guard_fails_the_bind_rather_than_listen_wider():
  port, = _free_ports(1)
  script = textwrap.dedent(f'''
      import errno, socket
      s = socket.socket(socket.AF_INET)
      try:
        s.bind(('0.0.0.0', {port}))
        print('bound', s.getsockname())
      except OSError as e:
        print(errno.errorcode[e.errno])
  ''')
  # An IPv6 address cannot narrow an IPv4 socket; a malformed one narrows
  # nothing. Both must refuse, not fall back to the wildcard.
  for address in ('::1', 'not-an-address'):
    result = run_python(['-c', script], timeout=60,
                        env=_guarded_env(address, port))
    assert result.stdout.strip() == 'EADDRNOTAVAIL', (address, result)


def test_listening_addresses_reads_the_kernel():
  with socket.socket() as narrow, socket.socket() as wide:
    narrow.bind(('127.0.0.1', 0))
    narrow.listen()
    wide.bind(('0.0.0.0', 0))
    wide.listen()
    narrow_port, wide_port = narrow.getsockname()[1], wide.getsockname()[1]
    assert bind_guard.listening_addresses(narrow_port) == ['127.0.0.1']
    assert bind_guard.listening_addresses(wide_port) == ['0.0.0.0']
    assert bind_guard.is_wildcard('0.0.0.0')
    assert not bind_guard.is_wildcard('127.0.0.1')
  assert bind_guard.listening_addresses(narrow_port) == []


def test_listen_address_resolves_the_cluster_host_or_bind_host():
  assert bind_guard.listen_address('127.0.0.1:5', None,
                                   task_name='worker:0') == '127.0.0.1'
  assert bind_guard.listen_address('localhost:5', None,
                                   task_name='worker:0') == '127.0.0.1'
  elsewhere = address_not_of_this_machine()
  assert bind_guard.listen_address(f'{elsewhere}:5', '127.0.0.2',
                                   task_name='worker:0') == '127.0.0.2'
  for wildcard in ('0.0.0.0', '::'):
    assert bind_guard.listen_address('127.0.0.1:5', wildcard,
                                     task_name='ps:0') is None
  with pytest.raises(bind_guard.BindGuardError,
                     match=f"worker:1's address '{elsewhere}:5'.*"
                           r'not an address of this machine.*--bind_host'):
    bind_guard.listen_address(f'{elsewhere}:5', None, task_name='worker:1')
  with pytest.raises(bind_guard.BindGuardError,
                     match=r"--bind_host='no-such-host.invalid'.*resolve"):
    bind_guard.listen_address('127.0.0.1:5', 'no-such-host.invalid',
                              task_name='worker:0')


def _start_server(tmp_path, port, *extra):
  log = tmp_path / f'server{port}.log'
  process = start_run_server(
      log, cluster_flag=json.dumps({'worker': [f'127.0.0.1:{port}']}),
      job='worker', index=0, extra=extra)
  return process, log


def test_run_server_listens_on_its_address_only_unless_told_otherwise(
    tmp_path):
  narrow_port, wide_port = _free_ports(2)
  narrow, narrow_log = _start_server(tmp_path, narrow_port)
  wide, wide_log = _start_server(tmp_path, wide_port, '--bind_host=0.0.0.0')
  try:
    for log in (narrow_log, wide_log):
      wait_for(lambda log=log: 'Serving' in log.read_text(), timeout=90,
               what=f'the server of {log.name} to start')
    assert bind_guard.listening_addresses(narrow_port) == ['127.0.0.1']
    assert _accepts('127.0.0.1', narrow_port)
    assert not _accepts('127.0.0.2', narrow_port)
    assert f'listening on 127.0.0.1:{narrow_port} only' in (
        narrow_log.read_text())
    # --bind_host=0.0.0.0 is TensorFlow's own behaviour, with a warning:
    # the same probe then gets through.
    assert _accepts('127.0.0.2', wide_port)
    assert 'listening on every interface' in wide_log.read_text()
  finally:
    codes = terminate({'narrow': narrow, 'wide': wide})
  assert codes == {'narrow': 0, 'wide': 0}, (narrow_log.read_text()[-2000:],
                                             wide_log.read_text()[-2000:])


def test_run_server_refuses_a_host_that_is_not_this_machine():
  elsewhere = address_not_of_this_machine()
  result = run_python(
      ['-m', 'estimator_rt.run_server',
       f'--cluster={{"worker": ["{elsewhere}:2222"]}}', '--job_name=worker',
       '--task_index=0'], timeout=60, env={'TF_CONFIG': ''})
  assert result.returncode == 2, result.stderr[-2000:]
  errors = [l for l in result.stderr.splitlines() if l.startswith('error:')]
  assert len(errors) == 1, result.stderr[-2000:]
  assert f"worker:0's address '{elsewhere}:2222'" in errors[0]
  assert '--bind_host' in errors[0]


def test_run_server_function_needs_the_guard_or_an_explicit_wildcard():
  port, wide_port = _free_ports(2)
  script = textwrap.dedent(f'''
      import json, os, sys
      import estimator_rt as ert
      from estimator_rt.cluster import bind_guard
      from estimator_rt.cluster import tf_config as cluster
      task = cluster.parse_tf_config(json.dumps({{
          'cluster': {{'worker': ['127.0.0.1:{port}'],
                      'ps': ['127.0.0.1:{wide_port}']}},
          'task': {{'type': sys.argv[1], 'index': 0}}}}))
      try:
        server = ert.run_server(task, bind_host=sys.argv[2] or None)
      except bind_guard.BindGuardError as e:
        print('refused:', e)
      else:
        port = int(server.target.rsplit(':')[-1])
        listening = bind_guard.listening_addresses(port)
        print('serving', server.target, 'wildcard' if any(
            bind_guard.is_wildcard(a) for a in listening) else listening)
      sys.stdout.flush()
      os._exit(0)
  ''')
  unguarded = run_python(['-c', script, 'worker', ''], timeout=120,
                         env={'TF_CONFIG': ''})
  assert 'refused: run_server: worker:0 would listen on every interface' in (
      unguarded.stdout), unguarded.stderr[-2000:]
  assert 'LD_PRELOAD=' in unguarded.stdout
  wide = run_python(['-c', script, 'ps', '0.0.0.0'], timeout=120,
                    env={'TF_CONFIG': ''})
  assert f'serving grpc://127.0.0.1:{wide_port} wildcard' in wide.stdout, (
      wide.stderr[-2000:])
  guarded = run_python(['-c', script, 'worker', ''], timeout=120,
                       env={'TF_CONFIG': '',
                            'LD_PRELOAD': bind_guard.library_path()})
  assert f'serving grpc://127.0.0.1:{port} [\'127.0.0.1\']' in (
      guarded.stdout), guarded.stderr[-2000:]
