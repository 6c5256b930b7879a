"""The Ray launchers on a real Ray cluster on this machine.

A module fixture starts one Ray head (`ray start --head --block`, its own
HOME and temp directory, 4 logical CPUs) and SIGTERMs it at the end (SIGKILL
to its process group if it lingers); `python -m
estimator_rt.launch.ray_job` and `python -m estimator_rt.launch.ray_train`
run against it as subprocesses, each bounded and stopped in a finally. One
test runs `ray_job --address=local` instead, which starts and stops a Ray
instance of its own, in a HOME with no ~/.ray: Ray 2.60 then turns token
authentication on and writes a new token there, as on a fresh machine.

Ray runs from its own environment, `.venv-ray` (made by `make test`: it
sees everything of `.venv` and adds Ray Train, whose pandas would otherwise be
imported by Keras in every process of the test run), or from the test's own
interpreter when Ray is installed there; skipped when neither has it
(`pip install 'estimator_rt[ray]'`).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import _cluster  # pylint: disable=g-import-not-at-top,wrong-import-position
from estimator_rt.core import summaries  # pylint: disable=g-import-not-at-top,wrong-import-position


def _ray_python():
  """The interpreter the Ray tests run Ray and the launchers with, or None."""
  candidates = [os.path.join(_cluster.REPO_ROOT, '.venv-ray', 'bin',
                             'python'), sys.executable]
  for python in candidates:
    if os.path.exists(python) and subprocess.run(
        [python, '-c', 'import ray'], capture_output=True, timeout=120,
        check=False).returncode == 0:
      return python
  return None


PYTHON = _ray_python()
if PYTHON is None:
  pytest.skip("ray is not importable (neither .venv-ray nor this "
              "interpreter has it); pip install 'estimator_rt[ray]'",
              allow_module_level=True)

# The launchers' arguments to the Python that runs them (PYTHON).
LAUNCH_RAY = ['-m', 'estimator_rt.launch.ray_job']
RAY_TRAIN_MWMS = ['-m', 'estimator_rt.launch.ray_train']
RAY = os.path.join(os.path.dirname(PYTHON), 'ray')
MAX_STEPS = 60
SAVE_EVERY = 30
# Ray resources of each task: 5 tasks must fit in the head's 4 CPUs.
CPUS_PER_TASK = 0.5
_HEAD_START_SECS = 120
_RUN_SECS = 300  # One launcher run, Ray placement included.


@pytest.fixture(scope='module')
def ray_head(tmp_path_factory):
  """A Ray head on this machine: {'address': GCS 'ip:port', 'home': the
  HOME every Ray process here gets, 'node_ip': the node's address}."""
  home = str(tmp_path_factory.mktemp('ray_home'))
  # Ray's socket paths live under the temp dir and must stay short.
  temp_dir = tempfile.mkdtemp(prefix='ert_ray_', dir='/tmp')
  port = _cluster.launcher().free_ports(1)[0]
  log_path = os.path.join(home, 'ray_head.log')
  with open(log_path, 'w') as log:
    head = subprocess.Popen(
        [RAY, 'start', '--head', '--block', f'--port={port}',
         '--num-cpus=4', '--include-dashboard=false',
         f'--temp-dir={temp_dir}', '--disable-usage-stats'],
        # No drain at SIGTERM: the head would wait up to 30 s for leases
        # (Ray Train's) that a test cluster has no reason to keep.
        env=_cluster.task_env({'HOME': home,
                               'RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S': '0'}),
        stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
  try:
    def head_log():
      with open(log_path, errors='replace') as f:
        return f.read()
    deadline = time.time() + _HEAD_START_SECS
    while 'Ray runtime started' not in head_log():
      assert head.poll() is None, head_log()[-3000:]
      assert time.time() < deadline, (
          f'no Ray head after {_HEAD_START_SECS} s:\n{head_log()[-3000:]}')
      time.sleep(0.5)
    node_ip = re.search(r'Local node IP: (\S+)', head_log()).group(1)
    yield {'address': f'{node_ip}:{port}', 'home': home, 'node_ip': node_ip}
  finally:
    # --block: SIGTERM makes `ray start` stop every Ray process it started.
    head.send_signal(signal.SIGTERM)
    try:
      head.wait(timeout=90)
    except subprocess.TimeoutExpired:
      pass
    try:
      os.killpg(head.pid, signal.SIGKILL)  # Whatever is left of its group.
    except ProcessLookupError:
      pass
    head.wait(timeout=30)
    shutil.rmtree(temp_dir, ignore_errors=True)


def _start(tmp_path, script_and_args, *, home, env=None):
  """Starts a launcher (`script_and_args` after the Python) in the
  background (its own process group, output to a file); pair with
  `.stop()` in a finally."""
  tmp = str(tmp_path)
  output_path = os.path.join(tmp, 'launcher_output.txt')
  with open(output_path, 'w') as output:
    process = subprocess.Popen(
        [PYTHON] + list(script_and_args),
        env=_cluster.task_env(dict(env or {}, HOME=home)),
        cwd=_cluster.REPO_ROOT,
        stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
  return _cluster.BackgroundLauncher(
      process=process, output_path=output_path,
      status_file=os.path.join(tmp, 'status.json'),
      pid_file=os.path.join(tmp, 'pids.json'), started=time.time())


def _launch_ray_args(tmp_path, *, address, roles, binary_args,
                     launcher_args=()):
  return [*LAUNCH_RAY, f'--address={address}', *roles,
          f'--cpus_per_task={CPUS_PER_TASK}',
          # The tasks run in Ray's worker processes, whose environment is
          # the Ray head's: pass what the binary needs to import the repo.
          '--env', 'PYTHONPATH', '--env', 'TF_CPP_MIN_LOG_LEVEL',
          '--grace_secs=60', '--timeout_secs=240',
          '--placement_timeout_secs=120',
          f'--status_file={tmp_path}/status.json',
          f'--pid_file={tmp_path}/pids.json', *launcher_args,
          '--'] + _cluster.BINARY + list(binary_args)


def _run(tmp_path, args, *, home, env=None):
  launcher = _start(tmp_path, args, home=home, env=env)
  try:
    return launcher.wait(timeout=_RUN_SECS)
  finally:
    launcher.stop()


def _training_flags(tmp_path, strategy, *, max_steps=MAX_STEPS,
                    save_every=SAVE_EVERY):
  module = _cluster.write_tiny_model(tmp_path)
  return _cluster.tiny_flags(module) + [
      f'--distribution_strategy={strategy}',
      f'--model_dir={tmp_path}/model', f'--max_steps={max_steps}',
      f'--save_checkpoints_steps={save_every}', '--throttle_secs=0',
      '--eval_steps=2']


def _eval_loss_steps(model_dir):
  return [step for step, _ in summaries.read_scalars(
      os.path.join(model_dir, 'eval')).get('loss', [])]


def _launcher_cluster(output):
  line = re.search(r'^\[launcher\] cluster: (.*)$', output, re.M)
  assert line, output[-3000:]
  return json.loads(line.group(1))


def _assert_every_line_has_a_role(run, tasks):
  """Every line of the tasks' output reached the driver with its role;
  nothing from a task came through unprefixed."""
  roles = {'launcher', *tasks}
  for task in tasks:
    assert run.log(task), (task, run.tail())
  for line in run.output.splitlines():
    if line.startswith('['):
      assert line[1:].split(']', 1)[0] in roles, line
    else:
      # Ray's own lines (its driver's, or its workers' forwarded with
      # their pid), never a task's: absl's or TensorFlow's log format.
      assert not re.match(r'[IWEF]\d{4} |WARNING: All log', line), line
      assert 'Ray' in line or 'ray' in line or 'pid=' in line, line


def test_parameter_server_with_ps_and_evaluator(tmp_path, ray_head):
  """PS: chief, 2 workers, ps and evaluator as 5 Ray actors; the servers
  exit 0 on the chief's done signal, not stopped by the launcher."""
  model_dir = f'{tmp_path}/model'
  run = _run(tmp_path, _launch_ray_args(
      tmp_path, address=ray_head['address'],
      roles=['--chief', '--workers=2', '--ps=1', '--evaluator'],
      binary_args=_training_flags(tmp_path, 'parameter_server')),
             home=ray_head['home'])
  assert run.launcher_code == 0, run.tail()
  # A task the launcher had to stop would show -15 (SIGTERM), not 0.
  assert run.codes == {'chief:0': 0, 'evaluator:0': 0, 'ps:0': 0,
                       'worker:0': 0, 'worker:1': 0}, run.tail()
  for task in ('ps:0', 'worker:0', 'worker:1'):
    assert f'The chief finished training; {task} exits.' in run.log(task), (
        run.log(task)[-3000:])
  assert _cluster.checkpoint_steps(model_dir) == [0, SAVE_EVERY, MAX_STEPS]
  steps = _eval_loss_steps(model_dir)
  assert steps and steps[-1] == MAX_STEPS, steps
  _assert_every_line_has_a_role(
      run, ['chief:0', 'worker:0', 'worker:1', 'ps:0', 'evaluator:0'])


def test_preempted_task_restarts_in_its_actor(tmp_path, ray_head):
  """MWMS, 2 workers + evaluator, one Ray actor each, on the node's Ray
  address. SIGTERM to one worker's process mid-run: it saves and exits 143,
  the launcher restarts the training tasks in the same actors on the same
  ports (a preemption, not a failure: --max_restarts=0), and the job ends
  0 at max_steps, with the evaluator's last result at max_steps."""
  # Long enough (~10 s of training at ~350 steps/s, more under load) for
  # the SIGTERM to land mid-run.
  max_steps = 3000
  model_dir = f'{tmp_path}/model'
  launcher = _start(tmp_path, _launch_ray_args(
      tmp_path, address=ray_head['address'],
      roles=['--workers=2', '--evaluator'],
      binary_args=_training_flags(tmp_path, 'multi_worker_mirrored',
                                  max_steps=max_steps, save_every=1000),
      launcher_args=['--max_restarts=0']), home=ray_head['home'])
  started = re.compile(r'^\[worker:1\] .*Training from global step 0 ',
                       re.M)
  try:
    _cluster.wait_for(
        lambda: started.search(launcher.output()) or (
            launcher.process.poll() is not None),
        timeout=_RUN_SECS, what='worker:1 to start training')
    assert launcher.process.poll() is None, launcher.output()[-3000:]
    first_pid = launcher.pids()['worker:1']
    os.kill(first_pid, signal.SIGTERM)
    run = launcher.wait(timeout=_RUN_SECS)
  finally:
    launcher.stop()
  assert run.launcher_code == 0, run.tail()
  assert run.codes == {'evaluator:0': 0, 'worker:0': 0, 'worker:1': 0}, (
      run.tail())
  cluster = _launcher_cluster(run.output)
  assert sorted(cluster) == ['evaluator', 'worker'], cluster
  for address in cluster['worker'] + cluster['evaluator']:
    assert address.startswith(ray_head['node_ip'] + ':'), cluster
  assert 'Role: chief: trains with multi_worker_mirrored' in run.log(
      'worker:0')
  assert 'Role: worker: trains with multi_worker_mirrored' in run.log(
      'worker:1')
  assert run.status['preemption_restarts'] == 1, run.status
  assert run.status['failure_restarts'] == 0, run.status
  [restart] = run.status['restarts']
  # The peer saves at the same step and exits 143 too (synchronous workers
  # agree on the step to stop at); when both exits land in one poll, the
  # launcher names the first training task, worker:0.
  assert restart['task'] in ('worker:0', 'worker:1'), restart
  assert restart['reason'] == 'preempted', restart
  assert restart['restarted'] == ['worker:0', 'worker:1'], restart
  assert restart['exit_code'] in (143, -signal.SIGTERM), restart
  pids = run.status['pids']
  assert len(pids['worker:1']) == 2 and pids['worker:1'][0] == first_pid, pids
  assert len(pids['worker:0']) == 2, pids
  assert len(pids['evaluator:0']) == 1, pids
  # The cluster did not change: one `cluster:` line, the same addresses.
  assert run.output.count('[launcher] cluster: ') == 1
  assert ('restarting the training tasks (worker:0, worker:1; the evaluator '
          'keeps running) (preemption restart 1 of at most') in (
      run.output), run.tail()
  assert _cluster.checkpoint_steps(model_dir)[-1] == max_steps
  steps = _eval_loss_steps(model_dir)
  assert steps and steps[-1] == max_steps, steps
  _assert_every_line_has_a_role(run, ['worker:0', 'worker:1', 'evaluator:0'])


_PRINT_TF_CONFIG = (
    'import json, os, sys\n'
    'config = json.loads(os.environ["TF_CONFIG"])\n'
    'print("TF_CONFIG " + json.dumps(config))\n'
    'print("cwd " + os.getcwd() + " marker " + os.environ["ERT_MARKER"])\n'
    'sys.exit(3 if config["task"]["type"] == "chief" else 0)\n')


def test_run_on_ray_in_process(tmp_path, ray_head):
  """The importable function, in a Python program of the user's (Ray's
  interpreter): each task gets its own TF_CONFIG (one cluster, its own type
  and index, the node's address), the extra env and the working directory;
  every line comes back with its role; the chief's exit code (3, a failure
  with no restart left) is the result's, and its Ray connection is closed
  afterwards."""
  driver = textwrap.dedent(f"""
      import json, sys
      import ray
      from estimator_rt.launch import ray_cluster
      status = ray_cluster.run_on_ray(
          command=[sys.executable, '-c', {_PRINT_TF_CONFIG!r}], workers=2,
          ps=1, chief=True, evaluator=True, address={ray_head['address']!r},
          env={{'ERT_MARKER': 'from-the-driver'}}, cwd={str(tmp_path)!r},
          cpus_per_task={CPUS_PER_TASK}, grace_secs=30, timeout_secs=120,
          placement_timeout_secs=120)
      print('STATUS ' + json.dumps(status))
      print('RAY_INITIALIZED ' + str(ray.is_initialized()))
      """)
  result = subprocess.run(
      [PYTHON, '-c', driver], capture_output=True, text=True,
      timeout=_RUN_SECS, env=_cluster.task_env({'HOME': ray_head['home']}),
      check=False)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  lines = result.stdout.splitlines()
  assert lines[-1] == 'RAY_INITIALIZED False', result.stdout[-3000:]
  assert lines[-2].startswith('STATUS '), result.stdout[-3000:]
  status = json.loads(lines[-2][len('STATUS '):])
  output = '\n'.join(lines[:-2])
  assert status['exit_code'] == 3 and status['chief'] == 3, (status, output)
  assert status['tasks']['chief:0'] == 3, status
  configs = {}
  for line in output.splitlines():
    found = re.match(r'\[(\w+:\d)\] TF_CONFIG (.*)$', line)
    if found:
      configs[found.group(1)] = json.loads(found.group(2))
    elif not line.startswith('[launcher] '):
      assert re.match(r'\[\w+:\d\] cwd ' + re.escape(str(tmp_path)) +
                      ' marker from-the-driver$', line), line
  assert sorted(configs) == ['chief:0', 'evaluator:0', 'ps:0', 'worker:0',
                             'worker:1'], output
  clusters = {json.dumps(c['cluster'], sort_keys=True)
              for c in configs.values()}
  assert len(clusters) == 1, clusters
  for name, config in configs.items():
    job, index = name.split(':')
    assert config['task'] == {'type': job, 'index': int(index)}, config
  addresses = [a for v in configs['ps:0']['cluster'].values() for a in v]
  assert len(set(addresses)) == 5, addresses
  assert all(a.startswith(ray_head['node_ip'] + ':') for a in addresses)


def _parent_pid(pid):
  with open(f'/proc/{pid}/stat') as f:
    return int(f.read().rsplit(')', 1)[1].split()[1])


def _process_gone(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return True
  with open(f'/proc/{pid}/stat') as f:  # A zombie is gone too.
    return f.read().rsplit(')', 1)[1].split()[0] == 'Z'


def test_lost_actor_takes_its_task_and_the_job_carries_on(tmp_path,
                                                          ray_head):
  """The evaluator's Ray actor is SIGKILLed (as when its node dies): its
  task process dies with it (no orphan), the launcher counts the task as
  exit code 1, cannot restart it in a new actor, leaves it out (the job
  can do without an evaluator), and the training ends 0 at max_steps."""
  max_steps = 3000
  model_dir = f'{tmp_path}/model'
  launcher = _start(tmp_path, _launch_ray_args(
      tmp_path, address=ray_head['address'],
      roles=['--workers=2', '--evaluator'],
      binary_args=_training_flags(tmp_path, 'multi_worker_mirrored',
                                  max_steps=max_steps, save_every=1000)),
                    home=ray_head['home'])
  started = re.compile(r'^\[evaluator:0\] .*Role: evaluator', re.M)
  try:
    _cluster.wait_for(
        lambda: started.search(launcher.output()) or (
            launcher.process.poll() is not None),
        timeout=_RUN_SECS, what='the evaluator to start')
    assert launcher.process.poll() is None, launcher.output()[-3000:]
    task_pid = launcher.pids()['evaluator:0']
    actor_pid = _parent_pid(task_pid)
    os.kill(actor_pid, signal.SIGKILL)
    _cluster.wait_for(lambda: _process_gone(task_pid), timeout=30,
                      what='the evaluator task to die with its actor')
    run = launcher.wait(timeout=_RUN_SECS)
  finally:
    launcher.stop()
  assert run.launcher_code == 0, run.tail()
  assert run.codes == {'evaluator:0': 1, 'worker:0': 0, 'worker:1': 0}, (
      run.tail())
  assert '[launcher] evaluator:0: its Ray actor is gone' in run.output
  assert run.status['left_out'] == ['evaluator:0'], run.status
  assert _cluster.checkpoint_steps(model_dir)[-1] == max_steps


def test_launcher_sigterm_stops_the_tasks_which_save(tmp_path, ray_head):
  """SIGTERM to the Ray launcher mid-run: it forwards SIGTERM to every task
  through its actor; the MWMS workers save and exit 143, and so does the
  launcher (run it again to resume)."""
  model_dir = f'{tmp_path}/model'
  launcher = _start(tmp_path, _launch_ray_args(
      tmp_path, address=ray_head['address'], roles=['--workers=2'],
      binary_args=_training_flags(tmp_path, 'multi_worker_mirrored',
                                  max_steps=3000, save_every=1000)),
                    home=ray_head['home'])
  started = re.compile(r'^\[worker:0\] .*Training from global step 0 ',
                       re.M)
  try:
    _cluster.wait_for(
        lambda: started.search(launcher.output()) or (
            launcher.process.poll() is not None),
        timeout=_RUN_SECS, what='worker:0 to start training')
    assert launcher.process.poll() is None, launcher.output()[-3000:]
    launcher.process.send_signal(signal.SIGTERM)
    run = launcher.wait(timeout=_RUN_SECS)
  finally:
    launcher.stop()
  assert run.launcher_code == 143, run.tail()
  assert run.codes == {'worker:0': 143, 'worker:1': 143}, run.tail()
  assert '[launcher] SIGTERM: sending SIGTERM to all tasks' in run.output
  steps = _cluster.checkpoint_steps(model_dir)
  assert steps and 0 < steps[-1] < 3000, (steps, run.tail())


def test_placement_timeout_exits_2(tmp_path, ray_head):
  """Tasks asking for more CPUs than the cluster has: no hang, exit 2 with
  one line naming the flag, after --placement_timeout_secs."""
  args = _launch_ray_args(
      tmp_path, address=ray_head['address'], roles=['--workers=2'],
      binary_args=['--mode=train'],
      launcher_args=['--cpus_per_task=100', '--placement_timeout_secs=5'])
  run = _run(tmp_path, args, home=ray_head['home'])
  assert run.launcher_code == 2, run.tail()
  errors = [l for l in run.output.splitlines() if l.startswith('error: ')]
  assert len(errors) == 1, run.tail()
  assert 'Ray placed fewer than 2 task actors in 5 s' in errors[0], errors
  assert 'lower --cpus_per_task' in errors[0], errors
  assert run.status is None  # Nothing started.


def test_bad_flag_exits_2_without_restart_on_a_fresh_local_ray(tmp_path):
  """--address=local in a HOME without ~/.ray: the launcher starts its own
  Ray (which writes a new auth token there), the binary refuses bad
  --params with exit 2 on every task, nothing restarts (despite
  --max_restarts=3), the launcher exits 2, and its Ray is stopped."""
  home = tmp_path / 'fresh_home'
  home.mkdir()
  binary_args = _training_flags(tmp_path, 'multi_worker_mirrored')
  binary_args = [a for a in binary_args if not a.startswith('--params=')]
  # The new instance's session files: not in the shared /tmp/ray, and on a
  # short path (Ray's socket paths under it have a length limit).
  ray_tmp = tempfile.mkdtemp(prefix='ert_ray_', dir='/tmp')
  try:
    run = _run(tmp_path, _launch_ray_args(
        tmp_path, address='local', roles=['--workers=2'],
        binary_args=binary_args + ['--params={not json'],
        launcher_args=['--max_restarts=3', '--ray_num_cpus=2']),
               home=str(home), env={'RAY_TMPDIR': ray_tmp})
    assert os.listdir(ray_tmp), 'RAY_TMPDIR unused'
  finally:
    shutil.rmtree(ray_tmp, ignore_errors=True)
  assert run.launcher_code == 2, run.tail()
  assert (home / '.ray' / 'auth_token').exists(), run.tail()
  assert run.status['restarts'] == [] and run.status['exit_code'] == 2, (
      run.status)
  assert all(len(p) == 1 for p in run.status['pids'].values()), run.status
  assert 'restarting cannot help' in run.output, run.tail()
  # --address=local puts the tasks on loopback.
  workers = _launcher_cluster(run.output)['worker']
  assert [a.split(':')[0] for a in workers] == ['127.0.0.1'] * 2, workers
  assert 'error: ' in run.log('worker:0'), run.tail()


@pytest.mark.parametrize('argv, expected', [
    (['--workers=-1', '--', 'true'], '--workers=-1 --ps=0: the counts'),
    (['--workers=1', '--cpus_per_task=nan', '--', 'true'],
     '--cpus_per_task=nan: must be a finite number'),
    (['--address=auto', '--ray_num_cpus=2', '--', 'true'],
     '--ray_num_cpus=2 needs --address=local'),
    (['--workers=1', '--env', 'ERT_SURELY_UNSET_VARIABLE', '--', 'true'],
     '--env=ERT_SURELY_UNSET_VARIABLE: ERT_SURELY_UNSET_VARIABLE is not set'),
])
def test_launcher_flags_refused_with_exit_2(argv, expected):
  """The launcher's own bad flags: exit 2 with one line, before Ray."""
  result = subprocess.run([PYTHON, *LAUNCH_RAY] + argv,
                          capture_output=True, text=True, timeout=60,
                          env=_cluster.task_env(), check=False)
  assert result.returncode == 2, result.stderr
  assert result.stdout == ''
  # argparse's usage line, then the one error line.
  assert result.stderr.splitlines()[-1].startswith(
      'python -m estimator_rt.launch.ray_job: error: ' + expected), (
          result.stderr)


def test_no_ray_cluster_at_address_exits_2(tmp_path):
  """--address=host:port where nothing listens: exit 2 with one line at
  once (Ray's own connect would retry for minutes)."""
  port = _cluster.launcher().free_ports(1)[0]
  result = subprocess.run(
      [PYTHON, *LAUNCH_RAY, f'--address=127.0.0.1:{port}',
       '--workers=1', '--', 'true'], capture_output=True, text=True,
      timeout=120, env=_cluster.task_env({'HOME': str(tmp_path)}),
      check=False)
  assert result.returncode == 2, result.stderr
  assert result.stderr.startswith(
      f'error: --address=127.0.0.1:{port}: no Ray cluster answers there'), (
          result.stderr)
  assert len(result.stderr.splitlines()) == 1, result.stderr


def test_ray_train_tensorflow_trainer_trains_mwms(tmp_path, ray_head):
  """Ray Train's TensorflowTrainer, 2 workers, each calling
  estimator_rt.train_and_evaluate with the TF_CONFIG Ray Train set (workers
  only): MWMS to max_steps, rank 0 is the chief and writes model_dir."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = f'{tmp_path}/model'
  result = _start(tmp_path, [
      *RAY_TRAIN_MWMS, f'--address={ray_head["address"]}',
      '--num_workers=2', f'--cpus_per_worker={CPUS_PER_TASK}',
      f'--storage_path={tmp_path}/ray_results',
      f'--model_fn={module}:model_fn',
      f'--input_fn={module}:global_input_fn',
      f'--eval_input_fn={module}:eval_input_fn',
      '--params={"batch_size": 16}', f'--model_dir={model_dir}',
      f'--max_steps={MAX_STEPS}', f'--save_checkpoints_steps={SAVE_EVERY}',
      '--eval_steps=2'], home=ray_head['home'])
  try:
    run = result.wait(timeout=_RUN_SECS)
  finally:
    result.stop()
  assert run.launcher_code == 0, run.tail()
  assert 'Ray Train run finished.' in run.output
  configs = [json.loads(c) for c in re.findall(
      r'TF_CONFIG from Ray Train: (\{.*\})', run.output)]
  assert {c['task']['index'] for c in configs} == {0, 1}, run.tail()
  for config in configs:
    assert list(config['cluster']) == ['worker'], config
    assert len(config['cluster']['worker']) == 2, config
    assert config['task']['type'] == 'worker', config
  assert 'Running as worker:0 (chief)' in run.output, run.tail()
  assert _cluster.checkpoint_steps(model_dir) == [0, SAVE_EVERY, MAX_STEPS]
  metrics = re.search(r'Final metrics: (\{.*\})', run.output)
  assert metrics and json.loads(metrics.group(1))['global_step'] == MAX_STEPS
