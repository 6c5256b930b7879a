"""TF_CONFIG: every mistake is one line naming the field and the value,
before anything starts; `--check_config` states the role and starts nothing.

The whole table of mistakes runs as unit tests of `cluster.parse_tf_config`
and `cluster.check_strategy`; a handful also go through the binary (exit 2,
exactly one `error: ` line, model_dir never created).
"""

import json
import os
import socket

import pytest

import _cluster
from conftest import run_python
from estimator_rt.cluster import roles
from estimator_rt.cluster import strategies
from estimator_rt.cluster import tf_config as cluster
from estimator_rt.core.errors import UserInputError

A, B, C, D, E = (f'127.0.0.1:{port}' for port in range(23001, 23006))


def _config(cluster_spec, task_type='worker', index=0, **extra):
  task = {'type': task_type, 'index': index}
  return json.dumps({'cluster': cluster_spec, 'task': task, **extra})


def _raw(obj):
  return json.dumps(obj)


# (id, raw TF_CONFIG, substrings the one-line message must contain)
BAD_TF_CONFIGS = [
    ('not_json', '{"cluster": {"worker": ["127.0.0.1:1"]', [
        'TF_CONFIG is not valid JSON', 'column']),
    ('not_an_object', '[1, 2]', ['TF_CONFIG must be a JSON object', 'list']),
    ('cluster_not_a_dict', _raw({'cluster': [A], 'task': {
        'type': 'worker', 'index': 0}}), [
            'TF_CONFIG cluster must be a JSON object', 'list', repr([A])]),
    ('cluster_a_string', _raw({'cluster': 'worker', 'task': {
        'type': 'worker', 'index': 0}}), [
            'TF_CONFIG cluster must be a JSON object', "'worker'"]),
    ('unknown_job', _config({'worker': [A], 'trainer': [B]}), [
        "unknown job 'trainer'"]),
    ('empty_job', _config({'worker': [A], 'ps': []}), [
        "TF_CONFIG cluster['ps']=[]", 'non-empty list']),
    ('task_without_cluster', _raw({'task': {'type': 'chief', 'index': 0}}),
     ['"task" but no "cluster"', 'worker 0', "'chief'"]),
    ('worker_1_without_cluster', _raw({'task': {'type': 'worker',
                                                'index': 1}}),
     ['"task" but no "cluster"', 'worker 0']),
    ('no_task', _raw({'cluster': {'worker': [A]}}), [
        'TF_CONFIG "task"', 'None']),
    ('task_not_an_object', _raw({'cluster': {'worker': [A]},
                                 'task': 'worker'}), [
        'TF_CONFIG "task"', "'worker'"]),
    ('type_missing', _raw({'cluster': {'worker': [A]}, 'task': {'index': 0}}),
     ['task has no "type"']),
    ('type_unknown', _config({'worker': [A]}, 'master'), [
        "type='master'", 'is not one of']),
    ('type_not_in_cluster', _config({'worker': [A]}, 'ps'), [
        "type='ps' is not a job in the cluster", "['worker']"]),
    ('index_missing', _raw({'cluster': {'worker': [A]},
                            'task': {'type': 'worker'}}), [
        'has no "index"', "'worker'"]),
    ('index_negative', _config({'worker': [A]}, index=-1), [
        'TF_CONFIG task index=-1', '>= 0']),
    ('index_negative_string', _config({'worker': [A]}, index='-1'), [
        'TF_CONFIG task index=-1', '>= 0']),
    ('index_float', _config({'worker': [A, B]}, index=1.5), [
        'TF_CONFIG task index=1.5', 'integer']),
    ('index_word', _config({'worker': [A, B]}, index='one'), [
        "TF_CONFIG task index='one'", 'integer']),
    ('index_bool', _config({'worker': [A, B]}, index=True), [
        'TF_CONFIG task index=True', 'integer']),
    ('index_null', _config({'worker': [A, B]}, index=None), [
        'TF_CONFIG task index=None', 'integer']),
    ('index_out_of_range', _config({'worker': [A, B]}, index=2), [
        'TF_CONFIG task index=2 is out of range', "'worker' has 2",
        '0..1']),
    ('two_chiefs', _config({'chief': [A, B], 'worker': [C]}), [
        "TF_CONFIG cluster['chief'] lists 2 chiefs"]),
    ('two_evaluators', _config({'worker': [A], 'evaluator': [B, C]}), [
        "TF_CONFIG cluster['evaluator'] lists 2 evaluators"]),
    ('evaluator_index_1_outside_cluster',
     _config({'worker': [A]}, 'evaluator', 1), [
         'TF_CONFIG task index=1 for the evaluator']),
    ('evaluator_index_1_inside_cluster',
     _config({'worker': [A], 'evaluator': [B]}, 'evaluator', 1), [
         'TF_CONFIG task index=1 for the evaluator']),
    ('duplicate_address_in_a_job', _config({'worker': [A, A]}), [
        f"address '{A}' is used by both worker:0 and worker:1"]),
    ('duplicate_address_across_jobs',
     _config({'chief': [A], 'worker': [B], 'ps': [A]}, 'ps'), [
         f"address '{A}' is used by both chief:0 and ps:0"]),
    ('rpc_layer_not_a_string', _config({'worker': [A]}, rpc_layer=5), [
        'TF_CONFIG rpc_layer=5']),
    # tf.estimator's legacy `master`: one task, the chief, which evaluates.
    ('master_index_1', _config({'master': [A]}, 'master', 1), [
        'TF_CONFIG task index=1 is out of range', "job 'master' has 1"]),
    ('master_of_two', _config({'master': [A, B]}, 'master'), [
        "cluster['master'] lists 2 tasks", 'at most one master']),
    ('master_and_chief', _config({'master': [A], 'chief': [B],
                                  'worker': [C]}, 'master'), [
        "both a 'master' and a 'chief' job"]),
    ('master_with_an_evaluator',
     _config({'master': [A], 'evaluator': [B]}, 'master'), [
         "a 'master' job and an 'evaluator'", 'evaluates each new checkpoint',
         "name the master 'chief'"]),
    ('evaluator_task_beside_a_master',
     _config({'master': [A], 'worker': [B], 'ps': [C]}, 'evaluator'), [
         "task type='evaluator' in a cluster with a 'master' job"]),
    # A one-node cluster's address is never used (2.15 started no server):
    # test_guards.py runs 'fake_chief'; not a string is still refused.
    ('one_master_address_not_a_string', _config({'master': [5]}, 'master'),
     ["TF_CONFIG cluster['master'][0]=5"]),
]

MALFORMED_ADDRESSES = [
    'localhost', 'localhost:', ':2222', 'localhost:0', 'localhost:65536',
    'localhost:123456', 'http://localhost:2222', 'local host:2222',
    '::1:2222', '[::1]', 'localhost:22a2', '', 2222, None,
    '127.0.0.1:2222\n',
]


def _check_one_line(error, fragments):
  message = str(error)
  assert '\n' not in message, message
  for fragment in fragments:
    assert fragment in message, (fragment, message)


@pytest.mark.parametrize('raw,fragments',
                         [case[1:] for case in BAD_TF_CONFIGS],
                         ids=[case[0] for case in BAD_TF_CONFIGS])
def test_bad_tf_config_is_one_line_naming_field_and_value(raw, fragments):
  with pytest.raises(cluster.ClusterConfigError) as raised:
    cluster.parse_tf_config(raw)
  assert isinstance(raised.value, UserInputError)  # The binary's exit 2.
  _check_one_line(raised.value, fragments)


@pytest.mark.parametrize('address', MALFORMED_ADDRESSES)
def test_malformed_address_is_rejected_naming_the_entry(address):
  raw = _config({'worker': [A, address]})
  with pytest.raises(cluster.ClusterConfigError) as raised:
    cluster.parse_tf_config(raw)
  _check_one_line(raised.value, ["TF_CONFIG cluster['worker'][1]",
                                 repr(address)])


# (id, cluster, task type, strategy, substrings of the error)
BAD_SHAPES = [
    ('ps_with_multi_worker_mirrored', {'worker': [A, B], 'ps': [C]},
     'worker', 'multi_worker_mirrored', [
         '1 ps task(s)', "--distribution_strategy='multi_worker_mirrored' "
         'cannot use them']),
    ('ps_with_mirrored', {'chief': [A], 'worker': [B], 'ps': [C, D]},
     'chief', 'mirrored', ['2 ps task(s)', "'mirrored' cannot use them"]),
    ('ps_with_default', {'worker': [A], 'ps': [B]}, 'ps', 'default', [
        '1 ps task(s)', "'default' cannot use them"]),
    ('parameter_server_without_ps', {'chief': [A], 'worker': [B]}, 'chief',
     'parameter_server', ['needs "ps" tasks']),
    ('parameter_server_without_chief', {'worker': [A, B], 'ps': [C]},
     'worker', 'parameter_server', ['needs a "chief"']),
    ('parameter_server_without_workers', {'chief': [A], 'ps': [B]}, 'chief',
     'parameter_server', ['needs "worker" tasks']),
    ('multi_worker_mirrored_without_workers', {'evaluator': [A]},
     'evaluator', 'multi_worker_mirrored', [
         "'multi_worker_mirrored' needs \"chief\" or \"worker\" tasks"]),
    ('one_process_strategy_with_two_workers', {'chief': [A], 'worker': [B]},
     'worker', 'default', ['2 training tasks', "'default' trains in one "
                           'process']),
    ('mirrored_with_two_workers', {'worker': [A, B]}, 'worker', 'mirrored',
     ['2 training tasks', "'mirrored' trains in one process"]),
]


@pytest.mark.parametrize('spec,task_type,strategy,fragments',
                         [case[1:] for case in BAD_SHAPES],
                         ids=[case[0] for case in BAD_SHAPES])
def test_cluster_shape_the_strategy_cannot_use(spec, task_type, strategy,
                                               fragments):
  task = cluster.parse_tf_config(_config(spec, task_type))
  with pytest.raises(cluster.ClusterConfigError) as raised:
    cluster.check_strategy(task, strategy)
  _check_one_line(raised.value, fragments)


@pytest.mark.parametrize('spec,task_type,strategy', [
    ({'worker': [A, B]}, 'worker', 'multi_worker_mirrored'),
    ({'chief': [A], 'worker': [B], 'evaluator': [C]}, 'chief',
     'multi_worker_mirrored'),
    ({'chief': [A], 'worker': [B, C], 'ps': [D], 'evaluator': [E]}, 'ps',
     'parameter_server'),
    ({'worker': [A], 'evaluator': [B]}, 'worker', 'default'),
    ({'chief': [A]}, 'chief', 'mirrored'),
])
def test_cluster_shapes_that_fit(spec, task_type, strategy):
  cluster.check_strategy(cluster.parse_tf_config(_config(spec, task_type)),
                         strategy)


@pytest.mark.parametrize('raw', [
    None, '', '  ', '{}', '{"cluster": {}}', '{"cluster": null}',
    # tf.estimator 2.15: a task without a cluster is local if it is worker 0.
    '{"task": {"type": "worker", "index": 0}}', '{"task": {"index": 0}}',
    '{"model_dir": "/tmp/m", "environment": "cloud"}'])
def test_no_cluster_is_local(raw):
  assert cluster.parse_tf_config(raw) is None


@pytest.mark.parametrize('raw', [
    _config({'master': [A]}, 'master'), _config({'master': A}, 'master', '0')])
def test_a_cluster_of_one_master_task_is_local(raw):
  """tf.estimator 2.15 ran it in one process (session master '', no
  server) that trained and evaluated: the local role."""
  assert cluster.parse_tf_config(raw) is None


def test_a_master_with_other_tasks_is_the_chief_that_evaluates():
  """tf.estimator 2.15's legacy between-graph cluster: the `master` keeps
  its job name (device names and filters use it) and is the chief, which
  also evaluates; a worker of that cluster is not."""
  spec = {'master': [A], 'worker': [B, C], 'ps': [D]}
  master = cluster.parse_tf_config(_config(spec, 'master'))
  worker = cluster.parse_tf_config(_config(spec, 'worker', 0))
  assert master.task_type == 'master' and master.is_chief
  assert master.is_legacy_master and master.address == A
  assert master.cluster['master'] == (A,) and 'chief' not in master.cluster
  assert not worker.is_chief and worker.chief_address == A
  assert master.num_workers == worker.num_workers == 3
  cluster.check_strategy(master, cluster.PARAMETER_SERVER)
  master_role = roles.decide(master, cluster.PARAMETER_SERVER)
  worker_role = roles.decide(worker, cluster.PARAMETER_SERVER)
  assert master_role.kind == roles.CHIEF and master_role.evaluates_in_process
  assert master_role.signals_servers
  assert 'master' in master_role.describe()
  assert not worker_role.evaluates_in_process
  # TensorFlow's ClusterCoordinator (a TF2 model_fn's parameter-server
  # training) knows no 'master' job: one line, before any connection.
  with pytest.raises(UserInputError) as raised:
    strategies.make_strategy(cluster.PARAMETER_SERVER, task=master)
  _check_one_line(raised.value, [
      "has a 'master' job", "a TF2 model_fn's parameter-server training "
      "needs the job named 'chief'"])


def test_string_index_and_address_forms_are_accepted():
  task = cluster.parse_tf_config(_config(
      {'chief': A, 'worker': [B, '[::1]:23009']}, index='1'))
  assert task.task_index == 1 and isinstance(task.task_index, int)
  assert task.cluster == {'chief': (A,), 'worker': (B, '[::1]:23009')}
  assert task.address == '[::1]:23009'
  assert task.rpc_layer == 'grpc'
  assert not task.is_chief and task.num_workers == 3
  assert task.as_tf_config()['task'] == {'type': 'worker', 'index': 1}


def test_evaluator_inside_or_outside_the_cluster():
  inside = cluster.parse_tf_config(_config(
      {'worker': [A, B], 'evaluator': [C]}, 'evaluator', '0'))
  outside = cluster.parse_tf_config(_config({'worker': [A, B]}, 'evaluator'))
  for task in (inside, outside):
    assert task.task_type == 'evaluator' and task.task_index == 0
    assert task.has_evaluator and not task.is_chief
    # Training tasks never see the evaluator (they would wait for it).
    assert task.training_cluster == {'worker': [A, B]}
    assert task.as_tf_config()['cluster'] == {'worker': [A, B]}
    assert task.num_workers == 2
  assert inside.address == C and f'evaluator:0 at {C}' in inside.describe()
  assert outside.address is None
  assert '(not in cluster)' in outside.describe()


def test_chief_is_the_chief_job_else_worker_0():
  with_chief = {'chief': [A], 'worker': [B, C]}
  assert cluster.parse_tf_config(_config(with_chief, 'chief')).is_chief
  assert not cluster.parse_tf_config(_config(with_chief, 'worker')).is_chief
  workers = {'worker': [A, B]}
  worker0 = cluster.parse_tf_config(_config(workers, 'worker', 0))
  assert worker0.is_chief and '(chief)' in worker0.describe()
  assert not cluster.parse_tf_config(_config(workers, 'worker', 1)).is_chief


# --------------------------------------------------------- the binary
def _binary(tmp_path, tf_config, *flags, timeout=120):
  model_dir = str(tmp_path / 'model')
  result = run_python(
      ['-m', 'estimator_rt.main', f'--model_dir={model_dir}', '--max_steps=5']
      + list(flags), env={'TF_CONFIG': tf_config}, timeout=timeout)
  return result, model_dir


_ELSEWHERE = _cluster.address_not_of_this_machine()

BINARY_CASES = [
    ('not_json', '{"cluster": ', 'default', ['TF_CONFIG is not valid JSON']),
    ('unknown_job', _config({'worker': [A], 'trainer': [B]}), 'default',
     ["unknown job 'trainer'"]),
    ('master_with_multi_worker_mirrored', _config(
        {'master': [A], 'worker': [B]}, 'master'), 'multi_worker_mirrored',
     ["has a 'master' job", "needs it named 'chief'"]),
    ('index_out_of_range', _config({'worker': [A, B]}, index=5),
     'multi_worker_mirrored', ['TF_CONFIG task index=5 is out of range']),
    ('duplicate_address', _config({'chief': [A], 'worker': [A]}, 'chief'),
     'multi_worker_mirrored', [f"address '{A}' is used by both chief:0 and "
                               'worker:0']),
    ('ps_with_multi_worker_mirrored', _config(
        {'worker': [A, B], 'ps': [C]}, 'ps'), 'multi_worker_mirrored', [
            "--distribution_strategy='multi_worker_mirrored' cannot use"]),
    ('parameter_server_without_chief', _config(
        {'worker': [A], 'ps': [B]}, 'worker'), 'parameter_server', [
            'needs a "chief"']),
    # The task's server could only listen there by listening everywhere.
    ('address_not_of_this_machine', _config(
        {'worker': [f'{_ELSEWHERE}:2222', B]}, 'worker'),
     'multi_worker_mirrored',
     [f"worker:0's address '{_ELSEWHERE}:2222'",
      'not an address of this machine',
      '--bind_host=0.0.0.0']),
]


@pytest.mark.parametrize('raw,strategy,fragments',
                         [case[1:] for case in BINARY_CASES],
                         ids=[case[0] for case in BINARY_CASES])
def test_binary_exits_2_with_one_error_line(tmp_path, raw, strategy,
                                            fragments):
  """A real run (not --check_config): exit 2, exactly one `error: ` line,
  no traceback, no role taken, model_dir never created."""
  result, model_dir = _binary(tmp_path, raw,
                              f'--distribution_strategy={strategy}')
  errors = [l for l in result.stderr.splitlines() if l.startswith('error: ')]
  assert result.returncode == 2, result.stderr[-3000:]
  assert len(errors) == 1, result.stderr[-3000:]
  for fragment in fragments:
    assert fragment in errors[0], (fragment, errors[0])
  assert 'Traceback' not in result.stderr
  assert 'Running as' not in result.stdout + result.stderr
  assert not os.path.exists(model_dir)


def _listening(address):
  """A socket holding `address`: a server started there would fail."""
  s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  s.bind(('127.0.0.1', _cluster.port_of(address)))
  s.listen(1)
  return s


def _check_config(tmp_path, spec, task_type, index, strategy):
  """--check_config for one task, its port held meanwhile (if it has one):
  returns (stdout lines by their 'key: ' prefix, the task's address)."""
  ports = iter(_cluster.launcher().free_ports(len(sum(spec.values(), []))))
  spec = {job: [f'127.0.0.1:{next(ports)}' for _ in tasks]
          for job, tasks in spec.items()}
  address = (spec[task_type][int(index)] if task_type in spec else None)
  held = _listening(address) if address else None
  try:
    result, model_dir = _binary(tmp_path, _config(spec, task_type, index),
                                f'--distribution_strategy={strategy}',
                                '--check_config')
  finally:
    if held:
      held.close()
  assert result.returncode == 0, result.stderr[-3000:]
  assert not [l for l in result.stderr.splitlines()
              if l.startswith('error: ')]
  assert not os.path.exists(model_dir)
  if address:
    assert _cluster.port_is_free(_cluster.port_of(address))
  lines = {}
  for line in result.stdout.splitlines():
    key, _, value = line.partition(': ')
    lines[key] = value
  return lines, address


def test_check_config_worker_with_string_index_starts_nothing(tmp_path):
  lines, address = _check_config(
      tmp_path, {'worker': ['a', 'b'], 'evaluator': ['c']}, 'worker', '1',
      'multi_worker_mirrored')
  assert lines['TF_CONFIG'] == (
      f'worker:1 at {address} in a cluster of 2 worker, 1 evaluator')
  assert lines['strategy'] == 'multi_worker_mirrored'
  assert lines['role'].startswith(
      f'worker: trains with multi_worker_mirrored as one of 2 workers at '
      f'{address}')
  assert lines['listens on'] == f'{address} only'


def test_check_config_ps_starts_no_server(tmp_path):
  lines, address = _check_config(
      tmp_path, {'chief': ['a'], 'worker': ['b'], 'ps': ['c']}, 'ps', 0,
      'parameter_server')
  assert lines['role'].startswith(
      f'ps: runs a standard TensorFlow server at {address}')
  assert lines['listens on'] == f'{address} only'


@pytest.mark.parametrize('listed', [True, False],
                         ids=['evaluator_in_cluster', 'evaluator_left_out'])
def test_check_config_evaluator_in_or_out_of_the_cluster(tmp_path, listed):
  spec = {'worker': ['a', 'b']}
  if listed:
    spec['evaluator'] = ['c']
  lines, address = _check_config(tmp_path, spec, 'evaluator', 0,
                                 'multi_worker_mirrored')
  where = address if listed else '(not in cluster)'
  assert lines['TF_CONFIG'].startswith(f'evaluator:0 at {where} ')
  assert lines['role'].startswith('evaluator: waits for checkpoints')
  assert 'listens on' not in lines  # An evaluator starts no server.


def test_evaluator_of_a_cluster_without_training_tasks_is_rejected(
    tmp_path):
  result, model_dir = _binary(
      tmp_path, _config({'evaluator': [A]}, 'evaluator'),
      '--distribution_strategy=multi_worker_mirrored', '--check_config')
  errors = [l for l in result.stderr.splitlines() if l.startswith('error: ')]
  assert result.returncode == 2, result.stdout[-2000:]
  assert len(errors) == 1 and '"chief" or "worker"' in errors[0]
  assert not os.path.exists(model_dir)


def test_end_of_training_signal_skips_a_lost_server_at_once():
  """A server that accepted connections earlier and refuses them now is
  lost: the chief's done signal skips it within a second or two, where a
  server never seen (maybe still starting) is waited for up to the bound."""
  import time  # pylint: disable=g-import-not-at-top
  from estimator_rt.cluster import server as server_lib  # pylint: disable=g-import-not-at-top
  addresses = []
  for _ in range(2):
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen()
    addresses.append('127.0.0.1:%d' % listener.getsockname()[1])
    listener.close()
  seen, never_seen = addresses
  # `seen` was up once (as the chief found every server before training).
  with socket.socket() as up:
    up.bind(('127.0.0.1', int(seen.split(':')[1])))
    up.listen()
    assert cluster.reachable(seen, timeout=1)
  assert cluster.was_reachable(seen) and not cluster.was_reachable(
      never_seen)
  started = time.time()
  server_lib.signal_training_done([('worker', 1, seen)], timeout_secs=20)
  assert time.time() - started < 5
  started = time.time()
  server_lib.signal_training_done([('worker', 2, never_seen)],
                                  timeout_secs=3)
  assert time.time() - started >= 3


def test_a_server_task_whose_chief_is_gone_exits_zero_if_training_is_over(
    monkeypatch):
  """A ps or PS worker that finds no chief (restarted after the chief gave up
  on it) exits 0 when model_dir holds the end of training, and still counts
  the chief as lost when it does not."""
  from estimator_rt.cluster import server as server_lib  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  addresses = []
  for _ in range(2):
    with socket.socket() as probe:
      probe.bind(('127.0.0.1', 0))
      addresses.append('127.0.0.1:%d' % probe.getsockname()[1])
  chief_address, worker_address = addresses  # Nothing listens at the chief's.
  spec = {'chief': [chief_address], 'worker': [worker_address]}
  server = tf.distribute.Server(tf.train.ClusterSpec(spec), job_name='worker',
                                task_index=0, start=True)
  task = cluster.TaskInfo(cluster=spec, task_type='worker', task_index=0)
  monkeypatch.setattr(server_lib, '_CHIEF_ABSENT_SECS', 0.5)
  asked = []

  def finished(answer):
    def ask():
      asked.append(answer)
      return answer
    return ask

  code = server_lib.wait_until_training_done(
      server, task, chief_address=chief_address, startup_timeout_secs=3,
      poll_secs=0.2, finished=finished(False))
  assert code == server_lib.CHIEF_LOST_EXIT_CODE and asked
  code = server_lib.wait_until_training_done(
      server, task, chief_address=chief_address, startup_timeout_secs=60,
      poll_secs=0.2, finished=finished(True))
  assert code == 0 and asked[-1] is True


def test_launchers_choose_ports_below_the_ephemeral_range():
  """A cluster's ports are chosen where no outgoing connection's local
  port can take one before its task binds it (that failed a task with
  "Could not start gRPC server" on a busy machine): distinct, free, below
  the kernel's ephemeral range."""
  layout = _cluster.launcher()
  low = layout._first_ephemeral_port()
  ports = layout.free_ports(20)
  assert len(set(ports)) == 20, ports
  assert all(20000 <= port < min(low, 30000) for port in ports), (ports, low)
  for port in ports:
    with socket.socket() as s:
      s.bind(('127.0.0.1', port))
