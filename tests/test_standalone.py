"""Standalone-client mode: servers from run_server, clients from anywhere.

Real servers in separate processes on loopback ports; every process is
bounded in time and stopped by the test.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT
from conftest import run_python
import numpy as np

from _cluster import address_not_of_this_machine
from _cluster import checkpoint_steps
from _cluster import launcher
from _cluster import outward_address
from _cluster import read_model_variables
from _cluster import start_run_server
from _cluster import task_env
from _cluster import terminate
from _cluster import tiny_flags
from _cluster import wait_for
from _cluster import write_tiny_model
from estimator_rt import bind_guard
from estimator_rt import summaries


def _env():
  return task_env({'TF_CPP_MIN_LOG_LEVEL': '2'})


class _Servers:
  """A worker and a ps started with `python -m estimator_rt.run_server`."""

  def __init__(self, tmp_path, *, workers=1, evaluator=False,
               host='127.0.0.1'):
    addresses = launcher().make_cluster(workers=workers, ps=1, chief=False,
                                        evaluator=evaluator)
    self.cluster = {
        job: [a.replace('127.0.0.1:', f'{host}:') for a in addresses[job]]
        for job in ('worker', 'ps', 'evaluator') if job in addresses}
    self.cluster_file = tmp_path / 'cluster.json'
    self.cluster_file.write_text(json.dumps(self.cluster))
    self.logs = {}
    self.processes = {}
    tasks = [('worker', i) for i in range(workers)] + [('ps', 0)] + (
        [('evaluator', 0)] if evaluator else [])
    for job, index in tasks:
      name = job if index == 0 else f'{job}{index}'
      log = tmp_path / f'{name}.log'
      self.logs[name] = log
      self.processes[name] = start_run_server(
          log, cluster_flag=f'@{self.cluster_file}', job=job, index=index)
    for name in self.logs:
      wait_for(lambda name=name: 'Serving' in self.logs[name].read_text(),
               timeout=90, what=f'the {name} server to start')

  def alive(self):
    return all(p.poll() is None for p in self.processes.values())

  def terminate(self):
    """SIGTERM them all; their exit codes (None: had to be killed)."""
    return terminate(self.processes)


@pytest.fixture
def servers(tmp_path):
  started = _Servers(tmp_path)
  yield started
  started.terminate()


def _client(servers, model_dir, *extra, timeout=240):
  return run_python(
      ['-m', 'estimator_rt.main',
       f'--remote_cluster=@{servers.cluster_file}',
       '--distribution_strategy=parameter_server',
       f'--model_dir={model_dir}', '--save_checkpoints_steps=100',
       '--tf_random_seed=1'] + list(extra), timeout=timeout,
      env={'TF_CONFIG': '', 'TF_CPP_MIN_LOG_LEVEL': '2'})


def _metrics(result):
  assert result.returncode == 0, result.stderr[-3000:]
  line = [l for l in result.stdout.splitlines()
          if l.startswith('Final metrics: ')][0]
  return json.loads(line.split(': ', 1)[1])


def test_clients_train_resume_and_switch_models_on_the_same_servers(
    servers, tmp_path):
  # 1. A client trains the MLP on the digits to about a local run's
  # accuracy, evaluating each new checkpoint as it goes (like a local run).
  remote = _metrics(_client(servers, tmp_path / 'mlp', '--max_steps=600',
                            '--throttle_secs=0'))
  evaluated = [step for step, _ in summaries.read_scalars(
      str(tmp_path / 'mlp' / 'eval'))['accuracy']]
  assert evaluated == [100, 200, 300, 400, 500, 600], evaluated
  local = _metrics(run_python(
      ['-m', 'estimator_rt.main', f'--model_dir={tmp_path / "local"}',
       '--max_steps=600', '--save_checkpoints_steps=100',
       '--tf_random_seed=1'], timeout=240, env={'TF_CONFIG': ''}))
  assert remote['global_step'] == 600
  assert abs(remote['accuracy'] - local['accuracy']) <= 0.02, (remote, local)
  assert servers.alive()

  # 2. A client killed mid-training leaves the servers serving; the next
  # client resumes from model_dir's latest checkpoint.
  model_dir = tmp_path / 'resumed'
  killed = subprocess.Popen(
      [sys.executable, '-m', 'estimator_rt.main',
       f'--remote_cluster=@{servers.cluster_file}',
       '--distribution_strategy=parameter_server', f'--model_dir={model_dir}',
       '--save_checkpoints_steps=100', '--max_steps=10000000'],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(),
      cwd=REPO_ROOT, start_new_session=True)
  try:
    wait_for(lambda: model_dir.is_dir() and bool(checkpoint_steps(model_dir)),
             timeout=120, what='the first checkpoint of the killed client')
  finally:
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
  saved = max(checkpoint_steps(model_dir))
  assert servers.alive()
  result = _client(servers, model_dir, f'--max_steps={saved + 200}')
  assert _metrics(result)['global_step'] == saved + 200
  assert f'Restored {model_dir}/model.ckpt-{saved}' in result.stderr

  # 3. A different model_fn (the linear regressor: other variables, other
  # data) on the same, still running servers.
  other = _metrics(_client(
      servers, tmp_path / 'other', '--max_steps=200',
      '--model_fn=model_fns.linear:model_fn',
      '--input_fn=input_fns.synthetic:linear_input_fn',
      '--eval_input_fn=input_fns.synthetic:linear_input_fn',
      '--eval_steps=5', '--params={"batch_size": 64}'))
  assert other['global_step'] == 200
  assert other['loss'] < 0.1, other  # y = w.x + b + noise(0.1) is learned.
  variables = read_model_variables(str(tmp_path / 'other' /
                                       'model.ckpt-200'))
  assert [v.shape for v in variables] == [(1, 1), (1,)]

  # 4. The servers log where they serve and exit 0 on SIGTERM.
  for job, address in (('worker', servers.cluster['worker'][0]),
                       ('ps', servers.cluster['ps'][0])):
    assert f'Serving {job}:0 at {address}' in servers.logs[job].read_text()
  assert servers.terminate() == {'worker': 0, 'ps': 0}


def test_synchronous_client_on_two_workers_matches_one_process(tmp_path):
  """In-graph replication: 2 remote workers on batch B, one process on 2B.

  The tiny model's input_fn is globally batched (2B = 16) and not shuffled;
  the client rebatches it to B per worker and worker k takes every other
  batch, so at each step the two workers' batches are the halves of the
  reference's global batch, and the averaged gradient is the reference's.
  """
  servers = _Servers(tmp_path, workers=2)
  try:
    module = write_tiny_model(tmp_path)
    base = tiny_flags(module, params={'batch_size': 16,
                                      'num_examples': 128}) + ['--exporters=']
    flags = base + ['--max_steps=40']
    client = [sys.executable, '-m', 'estimator_rt.main',
              f'--remote_cluster=@{servers.cluster_file}',
              '--distribution_strategy=mirrored']
    remote_dir, local_dir = tmp_path / 'remote', tmp_path / 'local'
    result = run_python(client[1:] + [f'--model_dir={remote_dir}'] + flags,
                        timeout=240, env={'TF_CONFIG': ''})
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'standalone client' in result.stderr
    assert servers.alive()

    # A synchronous client killed mid-step leaves the servers serving, and
    # the next one resumes from its latest checkpoint.
    resumed_dir = tmp_path / 'resumed'
    killed = subprocess.Popen(
        client + [f'--model_dir={resumed_dir}', '--max_steps=10000000',
                  '--save_checkpoints_steps=100'] + base,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(),
        cwd=REPO_ROOT, start_new_session=True)
    try:
      wait_for(lambda: resumed_dir.is_dir() and bool(
          checkpoint_steps(resumed_dir)), timeout=120,
               what='the first checkpoint of the killed client')
    finally:
      os.killpg(killed.pid, signal.SIGKILL)
      killed.wait()
    saved = max(checkpoint_steps(resumed_dir))
    assert servers.alive()
    resumed = run_python(
        client[1:] + [f'--model_dir={resumed_dir}',
                      f'--max_steps={saved + 50}'] + base,
        timeout=240, env={'TF_CONFIG': ''})
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f'Restored {resumed_dir}/model.ckpt-{saved}' in resumed.stderr
    assert max(checkpoint_steps(resumed_dir)) == saved + 50
    assert servers.alive()
  finally:
    codes = servers.terminate()
  assert codes == {'worker': 0, 'worker1': 0, 'ps': 0}
  local = run_python(['-m', 'estimator_rt.main', f'--model_dir={local_dir}'] +
                     flags, timeout=240, env={'TF_CONFIG': ''})
  assert local.returncode == 0, local.stderr[-3000:]
  ours = read_model_variables(str(remote_dir / 'model.ckpt-40'))
  reference = read_model_variables(str(local_dir / 'model.ckpt-40'))
  assert [v.shape for v in ours] == [(4, 1), (1,)]
  for a, b in zip(ours, reference):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
  # Training moved the weights toward the true [1, -2, 0.5, 3].
  assert np.abs(reference[0].ravel() - [1.0, -2.0, 0.5, 3.0]).max() < 1.0


def test_unreachable_server_fails_in_bounded_time_naming_it(tmp_path):
  free = launcher().free_ports(2)
  cluster = {'worker': [f'127.0.0.1:{free[0]}'],
             'ps': [f'127.0.0.1:{free[1]}']}
  started = time.time()
  result = run_python(
      ['-m', 'estimator_rt.main', f'--remote_cluster={json.dumps(cluster)}',
       '--distribution_strategy=parameter_server',
       '--remote_connect_timeout_secs=3',
       f'--model_dir={tmp_path / "model"}'], timeout=120,
      env={'TF_CONFIG': ''})
  took = time.time() - started
  assert result.returncode == 2, result.stderr[-3000:]
  errors = [l for l in result.stderr.splitlines() if l.startswith('error: ')]
  assert len(errors) == 1, result.stderr[-3000:]
  assert f'ps:0 at 127.0.0.1:{free[1]}' in errors[0]
  assert 'not reachable after 3 s' in errors[0]
  assert took < 60, took
  assert not (tmp_path / 'model').exists()


@pytest.mark.parametrize('args,env,fragment', [
    ([], {}, 'no cluster'),
    (['--cluster={"worker": ["127.0.0.1:2222"]}', '--job_name=ps',
      '--task_index=0'], {}, "type='ps' is not a job in the cluster"),
    (['--cluster={"worker": ["127.0.0.1:2222"]}', '--job_name=worker'], {},
     '--task_index is missing'),
    (['--cluster={"worker": ["127.0.0.1:2222"]}', '--job_name=worker',
      '--task_index=0'],
     {'TF_CONFIG': '{"cluster": {"worker": ["127.0.0.1:2223"]}, '
                   '"task": {"type": "worker", "index": 0}}'},
     'both TF_CONFIG and --cluster'),
    ([], {'TF_CONFIG': '{"cluster": {"worker": ["127.0.0.1:2222"]}, '
                       '"task": {"index": 0}}'}, 'has no "type"'),
    (['--cluster={"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}',
      '--job_name=chief', '--task_index=0'], {},
     "type='chief' is not a server; in standalone-client mode the client is "
     'the chief'),
])
def test_run_server_bad_input_exits_2_with_one_line(args, env, fragment):
  full_env = {'TF_CONFIG': ''}
  full_env.update(env)
  result = run_python(['-m', 'estimator_rt.run_server'] + args, timeout=60,
                      env=full_env)
  assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
  errors = [l for l in result.stderr.splitlines() if l.startswith('error: ')]
  assert len(errors) == 1 and fragment in errors[0], result.stderr[-2000:]
  assert 'Serving' not in result.stderr


def test_parameter_server_client_without_ps_names_remote_cluster():
  result = run_python(
      ['-m', 'estimator_rt.main',
       '--remote_cluster={"worker": ["127.0.0.1:2222"]}',
       '--distribution_strategy=parameter_server', '--check_config'],
      timeout=60, env={'TF_CONFIG': ''})
  assert result.returncode == 2, result.stderr[-2000:]
  assert ('needs "ps" tasks in remote_cluster; it has none' in
          result.stderr), result.stderr[-2000:]


def test_remote_cluster_with_a_tf_config_cluster_is_refused(tmp_path):
  result = run_python(
      ['-m', 'estimator_rt.main',
       '--remote_cluster={"worker": ["127.0.0.1:2222"], "ps": '
       '["127.0.0.1:2223"]}', '--distribution_strategy=parameter_server',
       f'--model_dir={tmp_path / "model"}'], timeout=60,
      env={'TF_CONFIG': '{"cluster": {"worker": ["127.0.0.1:2224"]}, '
                        '"task": {"type": "worker", "index": 0}}'})
  assert result.returncode == 2, result.stderr[-2000:]
  errors = [l for l in result.stderr.splitlines() if l.startswith('error: ')]
  assert len(errors) == 1 and 'TF_CONFIG' in errors[0], errors
  assert not (tmp_path / 'model').exists()


def _client_check_config(server_host):
  result = run_python(
      ['-m', 'estimator_rt.main',
       f'--remote_cluster={{"worker": ["{server_host}:2222"], '
       f'"ps": ["{server_host}:2223"]}}',
       '--distribution_strategy=parameter_server', '--check_config'],
      timeout=120, env={'TF_CONFIG': ''})
  assert result.returncode == 0, result.stderr[-2000:]
  return result.stdout


def test_check_config_says_where_the_client_listens():
  assert re.search(r'listens on: 127\.0\.0\.1:\d+ only',
                   _client_check_config('127.0.0.1'))
  # Servers off this machine: the client is at its address on the route to
  # them (this host's name resolves to 127.0.0.1 here), and only there.
  outward = outward_address()
  if outward is None:
    pytest.skip('no route off this machine')
  stdout = _client_check_config(address_not_of_this_machine())
  assert re.search(rf'listens on: {re.escape(outward)}:\d+ only', stdout), (
      stdout)


def test_clients_evaluate_on_the_evaluator_server_and_write_model_dir_locally(
    tmp_path):
  """With an evaluator in remote_cluster, both kinds of client evaluate on
  it, and every checkpoint is read and written by the client: model_dir is
  relative to the client's working directory, which the servers (running
  in the repository root) do not share."""
  servers = _Servers(tmp_path, evaluator=True)
  client_dir = tmp_path / 'client'
  client_dir.mkdir()
  module = write_tiny_model(tmp_path)
  try:
    for strategy in ('parameter_server', 'mirrored'):
      placement_log = tmp_path / f'placement_{strategy}.txt'
      model_dir = f'model_{strategy}'
      result = run_python(
          ['-m', 'estimator_rt.main',
           f'--remote_cluster=@{servers.cluster_file}',
           f'--distribution_strategy={strategy}', f'--model_dir={model_dir}',
           '--max_steps=200', '--save_checkpoints_steps=100',
           '--throttle_secs=0', '--exporters='] + tiny_flags(
               module, params={'batch_size': 16,
                               'placement_log': str(placement_log)}),
          timeout=240, env={'TF_CONFIG': ''}, cwd=str(client_dir))
      assert result.returncode == 0, (strategy, result.stderr[-3000:])
      assert 'on the evaluator server at' in result.stderr
      placed = set(placement_log.read_text().splitlines())
      assert 'eval /job:evaluator/replica:0/task:0/device:CPU:0' in placed, (
          strategy, placed)
      assert 'train /job:ps/replica:0/task:0/device:CPU:0' in placed, (
          strategy, placed)
      assert checkpoint_steps(str(client_dir / model_dir)) == [0, 100, 200]
      evaluated = [step for step, _ in summaries.read_scalars(
          str(client_dir / model_dir / 'eval'))['loss']]
      assert evaluated == [100, 200], (strategy, evaluated)
      assert not os.path.exists(os.path.join(REPO_ROOT, model_dir))
    assert servers.alive()
  finally:
    codes = servers.terminate()
  assert codes == {'worker': 0, 'ps': 0, 'evaluator': 0}


def test_run_server_exits_0_on_sigterm_sent_the_moment_it_serves(tmp_path):
  """SIGTERM right after the 'Serving' line. With a Python signal handler
  installed after start-up, 2 of 6 such servers either died of the signal
  (-15) or never saw it (a TensorFlow thread took it); run_server blocks the
  signals before any thread exists and waits for them with sigwait."""
  ports = launcher().free_ports(3)
  processes, logs = [], []
  for port in ports:
    log = tmp_path / f'server{port}.log'
    logs.append(log)
    processes.append(start_run_server(
        log, cluster_flag=f'{{"worker": ["127.0.0.1:{port}"]}}', job='worker',
        index=0))
  codes = []
  try:
    for process, log in zip(processes, logs):
      deadline = time.time() + 90
      while 'Serving' not in log.read_text() and time.time() < deadline:
        time.sleep(0.002)
      process.send_signal(signal.SIGTERM)
    for process in processes:
      try:
        codes.append(process.wait(timeout=20))
      except subprocess.TimeoutExpired:
        codes.append(None)
  finally:
    for process in processes:
      if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
  assert codes == [0, 0, 0], [log.read_text()[-1500:] for log in logs]


def test_client_of_servers_off_loopback_trains_with_every_server_narrowed(
    tmp_path):
  """Servers on this machine's outward address, not loopback: the client
  joins at its own outward address, and it and the servers listen there
  only, yet training works (the servers and the client reach each other)."""
  outward = outward_address()
  if outward is None:
    pytest.skip('no route off this machine')
  servers = _Servers(tmp_path, host=outward)
  module = write_tiny_model(tmp_path)
  try:
    for job, addresses in servers.cluster.items():
      port = int(addresses[0].rsplit(':', 1)[1])
      assert bind_guard.listening_addresses(port) == [outward], job
    result = run_python(
        ['-m', 'estimator_rt.main', f'--remote_cluster=@{servers.cluster_file}',
         '--distribution_strategy=parameter_server',
         f'--model_dir={tmp_path / "model"}', '--max_steps=100',
         '--exporters='] + tiny_flags(module),
        timeout=240, env={'TF_CONFIG': ''})
    assert result.returncode == 0, result.stderr[-3000:]
    assert f'Running as chief:0 at {outward}:' in result.stderr
    assert checkpoint_steps(str(tmp_path / 'model'))[-1] == 100
    assert servers.alive()
  finally:
    codes = servers.terminate()
  assert codes == {'worker': 0, 'ps': 0}


def test_synchronous_client_splits_batches_that_do_not_divide(tmp_path):
  """A globally batched input_fn of 15 rows (unknown static batch size, not
  divisible by the 2 remote workers) is split 7/8 and the gradients are
  weighted by share: the weights match one process on batch 15."""
  servers = _Servers(tmp_path, workers=2)
  try:
    module = write_tiny_model(tmp_path)
    flags = tiny_flags(module, params={'batch_size': 15,
                                       'num_examples': 120}) + [
                                           '--exporters=', '--max_steps=30']
    remote_dir, local_dir = tmp_path / 'remote', tmp_path / 'local'
    result = run_python(
        ['-m', 'estimator_rt.main', f'--remote_cluster=@{servers.cluster_file}',
         '--distribution_strategy=mirrored', f'--model_dir={remote_dir}'] +
        flags, timeout=240, env={'TF_CONFIG': ''})
    assert result.returncode == 0, result.stderr[-3000:]
  finally:
    servers.terminate()
  local = run_python(['-m', 'estimator_rt.main', f'--model_dir={local_dir}'] +
                     flags, timeout=240, env={'TF_CONFIG': ''})
  assert local.returncode == 0, local.stderr[-3000:]
  ours = read_model_variables(str(remote_dir / 'model.ckpt-30'))
  reference = read_model_variables(str(local_dir / 'model.ckpt-30'))
  for a, b in zip(ours, reference):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
