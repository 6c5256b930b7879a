"""Slurm: estimator_rt.sbatch on a real one-node Slurm, and the entry's
mapping from a step's environment to roles and addresses.

The mapping tests need no Slurm. The others submit real jobs to a one-node
Slurm that the module fixture installs (apt-get, if sbatch is missing) and
starts as root, and stops afterwards if it started it; every job is
bounded (`sbatch --wait` under a timeout) and cancelled by its name at the
end of its test, whatever happened.
"""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import _cluster
import _slurm
from estimator_rt.core import summaries
from estimator_rt.launch import slurm

MAX_STEPS = 60
SAVE_EVERY = 20


# ------------------------------------------------- the mapping, no Slurm
def _hosts(table):
  """A node-list expansion for the mapping tests: `table` maps each node
  list the test uses to its hosts (scontrol's part, checked for real in
  test_scontrol_expands_node_lists_as_the_entry_expects)."""
  return lambda nodelist: list(table[nodelist])


def _step_environ(**overrides):
  environ = {'SLURM_JOB_ID': '1234', 'SLURM_PROCID': '0',
             'SLURM_STEP_NUM_TASKS': '5', 'SLURM_STEP_NODELIST': 'n[1-2]',
             'SLURM_STEP_TASKS_PER_NODE': '3,2'}
  environ.update(overrides)
  return environ


def test_tasks_per_node_notation():
  assert slurm.expand_tasks_per_node('2(x3),1') == [2, 2, 2, 1]
  assert slurm.expand_tasks_per_node('4') == [4]
  with pytest.raises(slurm.SlurmEnvironmentError, match='notation'):
    slurm.expand_tasks_per_node('2(3)')


def test_ranks_map_to_roles_in_launcher_order_and_ports_per_node():
  """5 tasks on 2 nodes (3 + 2, block): rank 0 is the chief, then the
  workers, the ps, the evaluator; tasks sharing a node get consecutive
  ports of the job's block, each node starting at the block's first."""
  keys = slurm.task_keys(workers=2, ps=1, chief=True, evaluator=True)
  step = slurm.SlurmStep.from_environ(
      _step_environ(SLURM_PROCID='3'), expand=_hosts({'n[1-2]': ['n1', 'n2']}))
  assert step.rank == 3 and step.hosts == ('n1', 'n2')
  first = slurm.job_port_block(job_id=1234, port_base=20000,
                               port_span=10000, ports_per_node=32)
  assert first == 20000 + (1234 % 312) * 32
  cluster = slurm.step_cluster(step, keys)
  assert cluster == {
      'chief': [f'n1:{first}'],
      'worker': [f'n1:{first + 1}', f'n1:{first + 2}'],
      'ps': [f'n2:{first}'],
      'evaluator': [f'n2:{first + 1}']}
  assert keys[step.rank] == ('ps', 0)


def test_jobs_sharing_a_node_get_different_ports():
  def addresses(job_id):
    step = slurm.SlurmStep.from_environ(
        _step_environ(SLURM_JOB_ID=str(job_id), SLURM_STEP_NUM_TASKS='4',
                      SLURM_STEP_NODELIST='localhost',
                      SLURM_STEP_TASKS_PER_NODE='4'),
        expand=_hosts({'localhost': ['localhost']}))
    return set(slurm.step_addresses(step))
  ports_of_neighbours = [addresses(job_id) for job_id in range(100, 400)]
  every = set().union(*ports_of_neighbours)
  assert len(every) == 4 * 300  # No two of 300 consecutive jobs share one.
  assert all(20000 <= int(a.rsplit(':', 1)[1]) < 30000 for a in every)


def test_wrong_task_count_is_one_clear_error():
  keys = slurm.task_keys(workers=2, ps=0, chief=False, evaluator=True)
  step = slurm.SlurmStep.from_environ(
      _step_environ(SLURM_STEP_NUM_TASKS='2', SLURM_STEP_NODELIST='h',
                    SLURM_STEP_TASKS_PER_NODE='2'),
      expand=_hosts({'h': ['h']}))
  with pytest.raises(slurm.SlurmEnvironmentError) as error:
    slurm.step_cluster(step, keys)
  assert str(error.value) == (
      'the job has 2 Slurm tasks but the role flags ask for 3 (worker:0, '
      'worker:1, evaluator:0): submit with --ntasks=3, or change the role '
      'flags')


@pytest.mark.parametrize('overrides, message', [
    ({'SLURM_DISTRIBUTION': 'cyclic'}, 'block distribution'),
    ({'SLURM_PROCID': '5'}, 'SLURM_PROCID=5 is out of range'),
    ({'SLURM_STEP_TASKS_PER_NODE': '3'}, '2 nodes'),
    ({'SLURM_STEP_TASKS_PER_NODE': '3,3'}, 'add up to 6'),
    ({'SLURM_JOB_ID': 'x'}, "SLURM_JOB_ID='x' is not an integer"),
])
def test_a_step_environment_that_makes_no_layout_is_refused(overrides,
                                                            message):
  with pytest.raises(slurm.SlurmEnvironmentError, match=message):
    slurm.SlurmStep.from_environ(_step_environ(**overrides),
                                 expand=_hosts({'n[1-2]': ['n1', 'n2']}))


def test_too_many_tasks_on_a_node_for_its_ports():
  step = slurm.SlurmStep.from_environ(
      _step_environ(SLURM_STEP_NUM_TASKS='40', SLURM_STEP_NODELIST='h',
                    SLURM_STEP_TASKS_PER_NODE='40'),
      expand=_hosts({'h': ['h']}))
  with pytest.raises(slurm.SlurmEnvironmentError,
                     match='--ports_per_node=40 or more'):
    slurm.step_addresses(step)


def test_entry_runs_the_command_with_tf_config_and_prefixed_output(
    tmp_path, capfd):
  """The entry in a step (the environment srun gives task 2 of 3): the
  command gets this task's TF_CONFIG, at the node's NodeAddr, its lines
  come out prefixed, and the exit code is the command's, recorded for the
  sbatch script."""
  codes = tmp_path / 'codes'
  codes.mkdir()
  command = [sys.executable, '-c', textwrap.dedent('''
      import json, os, sys
      print(os.environ['TF_CONFIG'])
      print('to stderr', file=sys.stderr)
      sys.exit(7)''')]
  environ = dict(os.environ, **_step_environ(
      SLURM_PROCID='2', SLURM_STEP_NUM_TASKS='3', SLURM_STEP_NODELIST='h',
      SLURM_STEP_TASKS_PER_NODE='3'))
  code = slurm.main(['--workers', '2', '--evaluator', '--exit_code_dir',
                     str(codes), '--'] + command, environ=environ,
                    expand=_hosts({'h': ['h']}),
                    node_addresses=lambda names: ['10.1.2.3' for _ in names])
  assert code == 7
  out = capfd.readouterr().out.splitlines()
  first = slurm.job_port_block(job_id=1234, port_base=20000,
                               port_span=10000, ports_per_node=32)
  config = json.loads(out[1][len('[evaluator:0] '):])
  assert config == {
      'cluster': {'worker': [f'10.1.2.3:{first}', f'10.1.2.3:{first + 1}'],
                  'evaluator': [f'10.1.2.3:{first + 2}']},
      'task': {'type': 'evaluator', 'index': 0}}
  assert out[0] == ('[evaluator:0] estimator_rt.launch.slurm: Slurm task 2 '
                    f'of 3 is evaluator:0 at 10.1.2.3:{first + 2}')
  assert out[2:] == ['[evaluator:0] to stderr',
                     '[evaluator:0] estimator_rt.launch.slurm: evaluator:0 '
                     'exited 7']
  assert sorted(os.listdir(codes)) == ['evaluator_0']  # Not the chief.
  assert (codes / 'evaluator_0').read_text() == '7\n'


@pytest.mark.parametrize('args, message', [
    (['--workers', '-1', '--', 'true'], '--workers=-1 --ps=0: the counts'),
    (['--workers', '1'], 'give the command every task runs after --'),
    (['--ports_per_node', '0', '--', 'true'], '--ports_per_node=0'),
])
def test_bad_flags_exit_2_with_one_line(args, message):
  result = subprocess.run(
      [sys.executable, '-m', 'estimator_rt.launch.slurm'] + args,
      env=_cluster.task_env(), capture_output=True, text=True, timeout=60,
      check=False)
  assert result.returncode == 2
  assert result.stdout == ''
  lines = result.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith('error: ') and (
      message in lines[0]), result.stderr


# ---------------------------------------------------- a real Slurm
@pytest.fixture(scope='module')
def slurm_conf():
  try:
    with _slurm.local_slurm() as conf:
      yield conf
  except _slurm.SlurmUnavailable as e:
    pytest.skip(str(e))


@pytest.fixture
def jobs(slurm_conf, tmp_path):
  submitted = _slurm.Jobs(conf=slurm_conf, directory=tmp_path)
  yield submitted
  submitted.cancel()


def test_scontrol_expands_node_lists_as_the_entry_expects(slurm_conf,
                                                         monkeypatch):
  env = dict(os.environ, SLURM_CONF=slurm_conf)
  result = subprocess.run(['scontrol', 'show', 'hostnames', 'n[1-3],m[08-09]'],
                          env=env, capture_output=True, text=True,
                          timeout=60, check=True)
  assert result.stdout.split() == ['n1', 'n2', 'n3', 'm08', 'm09']
  monkeypatch.setenv('SLURM_CONF', slurm_conf)  # For the entry's scontrol.
  assert slurm.scontrol_hostnames('n[1-3],m[08-09]') == result.stdout.split()
  # The one node of the test Slurm: NodeAddr defaults to its name.
  assert slurm.scontrol_node_addresses(['localhost']) == ['localhost']
  with pytest.raises(slurm.SlurmEnvironmentError, match='no_such_node'):
    slurm.scontrol_node_addresses(['localhost', 'no_such_node'])


def _training_args(module, model_dir, strategy, *, max_steps=MAX_STEPS,
                   save_every=SAVE_EVERY, extra=()):
  return _cluster.BINARY + _cluster.tiny_flags(module) + [
      f'--distribution_strategy={strategy}', f'--model_dir={model_dir}',
      f'--max_steps={max_steps}', f'--save_checkpoints_steps={save_every}',
      '--throttle_secs=0', *extra]


def _eval_steps(model_dir):
  return [step for step, _ in summaries.read_scalars(
      os.path.join(model_dir, 'eval')).get('loss', [])]


def _assert_every_line_says_whose(job, roles):
  """Every output line starts with a task's role, [sbatch] or [slurm]
  (or is slurmstepd's own, naming itself)."""
  assert job.unprefixed_lines() == [], job.tail()
  for role in roles:
    assert job.lines(role), (role, job.tail())


def test_parameter_server_chief_worker_ps_evaluator(jobs, tmp_path):
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  job = jobs.run(ntasks=4, timeout=400, script_args=[
      '--chief', '--workers', '1', '--ps', '1', '--evaluator', '--'] +
      _training_args(module, model_dir, 'parameter_server'))
  assert job.code == 0, job.tail()
  # The servers and the evaluator ended on their own, with 0.
  assert job.exit_codes() == {'chief:0': [0], 'worker:0': [0], 'ps:0': [0],
                              'evaluator:0': [0]}, job.tail()
  for task in ('ps:0', 'worker:0'):
    assert f'The chief finished training; {task} exits.' in job.log(task)
  assert 'Role: chief: coordinates parameter-server training' in job.log(
      'chief:0')
  # The node's NodeAddr, `localhost`, resolves to 127.0.0.1 here, and the
  # bind guard keeps each server there (TensorFlow alone listens on all).
  for task in ('ps:0', 'worker:0'):
    assert re.search(fr'Serving {task} at localhost:\d+, listening on '
                     r'127\.0\.0\.1:\d+ only', job.log(task)), job.log(task)
  assert _cluster.checkpoint_steps(model_dir)[-1] == MAX_STEPS
  steps = _eval_steps(model_dir)
  assert steps and steps[-1] == MAX_STEPS, (steps, job.log('evaluator:0'))
  _assert_every_line_says_whose(job, ['chief:0', 'worker:0', 'ps:0',
                                      'evaluator:0', 'sbatch'])
  print(f'PS job: {job.elapsed_secs:.0f} s')


def test_wrong_task_count_exits_2_with_one_line_before_any_step(jobs):
  job = jobs.run(ntasks=2, timeout=120, script_args=[
      '--workers', '2', '--evaluator', '--', sys.executable, '-c', 'pass'])
  assert job.code == 2
  assert job.output.splitlines() == [
      'error: the job has 2 Slurm tasks but the role flags ask for 3 '
      '(worker:0, worker:1, evaluator:0): submit with --ntasks=3, or change '
      'the role flags'], job.output


# A task that exits with the codes its plan gives, one per step run:
# argv[1] is a directory for run counts, argv[2] the plan as JSON
# ({"worker:0": [143, 0]}: 143 on the first run, 0 after); tasks without
# a plan exit 0.
FAKE_TASK = textwrap.dedent('''
    import json, os, sys
    task = json.loads(os.environ['TF_CONFIG'])['task']
    name = f"{task['type']}:{task['index']}"
    counter = os.path.join(sys.argv[1], name.replace(':', '_'))
    runs = int(open(counter).read()) if os.path.exists(counter) else 0
    open(counter, 'w').write(str(runs + 1))
    codes = json.loads(sys.argv[2]).get(name, [0])
    code = codes[min(runs, len(codes) - 1)]
    print(f'{name} run {runs + 1} exits {code}')
    sys.exit(code)
''')


@pytest.mark.parametrize('plan, max_preemptions, job_code, runs', [
    # The chief preempted: the step runs again and finishes.
    ({'worker:0': [143, 0]}, 3, 0, 2),
    # Another task preempted, which made the chief fail: the same.
    ({'worker:1': [143, 0], 'worker:0': [1, 0]}, 3, 0, 2),
    # Preempted more often than allowed: 1 + ERT_MAX_PREEMPTIONS runs, 143.
    ({'worker:0': [143]}, 2, 143, 3),
    # Bad input, even from a task that is not the chief: never run again.
    ({'worker:1': [2]}, 3, 2, 1),
    # The chief failed on its own: its code, not run again.
    ({'worker:0': [3], 'worker:1': [0]}, 3, 3, 1),
])
def test_exit_code_policy(jobs, tmp_path, plan, max_preemptions, job_code,
                          runs):
  """The job's code is the chief's; a preempted step runs again (bounded),
  bad input and failures do not; with fake tasks (a few seconds a job)."""
  fake = tmp_path / 'fake_task.py'
  fake.write_text(FAKE_TASK)
  counts = tmp_path / 'runs'
  counts.mkdir()
  # Polled every second rather than `sbatch --wait`, which looks at the
  # job less and less often (a 2 s job took it 10 s).
  job = jobs.submit(
      ntasks=2, env={'ERT_MAX_PREEMPTIONS': str(max_preemptions)},
      script_args=['--workers', '2', '--', sys.executable, str(fake),
                   str(counts), json.dumps(plan)]).wait(timeout=180)
  assert job.code == job_code, job.tail()
  assert [len(c) for c in job.exit_codes().values()] == [runs, runs], (
      job.tail())
  assert (counts / 'worker_0').read_text() == str(runs)
  reruns = [l for l in job.lines('sbatch')
            if 'after a preemption: running the step again' in l]
  assert len(reruns) == runs - 1, job.tail()
  _assert_every_line_says_whose(job, ['worker:0', 'worker:1', 'sbatch'])


def test_multi_worker_mirrored_job_preempted_runs_its_step_again(
    jobs, tmp_path):
  """An MWMS job (2 workers and an evaluator) whose every task gets SIGTERM
  mid-training (`scancel --signal=TERM JOB`, as on a preemption): the
  workers save and exit 143, the evaluator exits 143, the sbatch script
  runs the step again, which resumes from the saved step and trains to
  max_steps; the evaluator's last evaluation is of max_steps; the job
  exits 0 and every line says whose it is."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = tmp_path / 'model'
  # Long enough for the SIGTERM to land mid-run (it is sent at step 101;
  # MWMS here runs at most ~350 steps/s), short enough that the job's two
  # runs do not dominate the suite's CPU.
  max_steps = 2500
  submitted = jobs.submit(ntasks=3, script_args=[
      '--workers', '2', '--evaluator', '--'] + _training_args(
          module, str(model_dir), 'multi_worker_mirrored',
          max_steps=max_steps, save_every=1000,
          extra=['--steps_per_loop=50']))
  # Training has started once its first lines of progress show.
  _cluster.wait_for(
      lambda: 'step 101/' in submitted.output() or submitted.output().count(
          'exited') >= 2, timeout=300, what='training to pass step 101')
  submitted.signal_steps('TERM')
  job = submitted.wait(timeout=400)
  assert job.code == 0, job.tail()
  assert job.exit_codes() == {'worker:0': [143, 0], 'worker:1': [143, 0],
                              'evaluator:0': [143, 0]}, job.tail()
  assert 'Role: chief: trains with multi_worker_mirrored' in job.log(
      'worker:0')
  assert 'Role: worker: trains with multi_worker_mirrored' in job.log(
      'worker:1')
  preempted = [l for l in job.lines('worker:0') if 'Preempted (SIGTERM) at '
               'global step' in l]
  assert len(preempted) == 1, job.tail()
  saved_at = int(preempted[0].split('global step ')[1].split(':')[0])
  assert 0 < saved_at < max_steps
  assert ('[sbatch] the chief exited 143 after a preemption: running the '
          'step again (1 of 3)') in job.output
  assert (f'Training ended at global step {max_steps} (started at '
          f'{saved_at})') in job.log('worker:0'), job.tail()
  assert _cluster.checkpoint_steps(str(model_dir))[-1] == max_steps
  steps = _eval_steps(str(model_dir))
  assert steps and steps[-1] == max_steps, (steps, job.log('evaluator:0'))
  assert '[sbatch] the chief finished: exit 0' in job.output
  _assert_every_line_says_whose(job, ['worker:0', 'worker:1', 'evaluator:0',
                                      'sbatch'])


def test_standalone_servers_and_a_client_outside_the_allocation(
    jobs, tmp_path):
  """Servers (2 workers, 1 ps) run as a Slurm job that writes the cluster
  to a file; a client here trains on them with --remote_cluster=@file."""
  cluster_file = tmp_path / 'cluster.json'
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = tmp_path / 'client_model'
  submitted = jobs.submit(ntasks=3, script_args=[
      '--workers', '2', '--ps', '1', '--cluster_file', str(cluster_file),
      '--', sys.executable, '-m', 'estimator_rt.run_server'])
  _cluster.wait_for(cluster_file.exists, timeout=120,
                    what='task 0 to write the cluster file')
  cluster = json.loads(cluster_file.read_text())
  assert sorted(cluster) == ['ps', 'worker'] and len(cluster['worker']) == 2
  client = subprocess.run(
      _cluster.BINARY + _cluster.tiny_flags(module) + [
          f'--remote_cluster=@{cluster_file}',
          '--distribution_strategy=parameter_server',
          f'--model_dir={model_dir}', f'--max_steps={MAX_STEPS}',
          f'--save_checkpoints_steps={SAVE_EVERY}', '--throttle_secs=0',
          '--remote_connect_timeout_secs=180'],
      env=_cluster.task_env(), cwd=_cluster.REPO_ROOT, capture_output=True,
      text=True, timeout=400, check=False)
  assert client.returncode == 0, (client.stderr[-4000:],
                                  submitted.output()[-4000:])
  assert _cluster.checkpoint_steps(str(model_dir))[-1] == MAX_STEPS
  # The servers are still serving; the job ends when cancelled.
  assert jobs.queued() == [submitted.job_id]
  jobs.cancel()
  assert jobs.queued() == []
  output = submitted.output()
  assert ', '.join(f'worker:{i} at {a}' for i, a in enumerate(
      cluster['worker'])) in output


# A task that runs until SIGTERM, then exits 143 (as the binary does after
# saving); it says when it is ready.
WAIT_FOR_TERM_TASK = textwrap.dedent('''
    import signal, sys, time
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print('ready', flush=True)
    time.sleep(300)
    sys.exit(1)
''')


def test_sigterm_to_the_batch_script_stops_the_step_without_a_rerun(
    jobs, tmp_path):
  """What `sbatch --signal=B:TERM@secs` does ahead of a time limit, sent
  now with `scancel --batch`: the script passes SIGTERM on to the tasks,
  which exit 143, and the job exits 143 without running the step again
  (the allocation is ending; ERT_REQUEUE_ON_STOP=1 would requeue it)."""
  task = tmp_path / 'wait_for_term.py'
  task.write_text(WAIT_FOR_TERM_TASK)
  submitted = jobs.submit(ntasks=2, script_args=[
      '--workers', '2', '--', sys.executable, str(task)])
  _cluster.wait_for(lambda: submitted.output().count('] ready') == 2,
                    timeout=120, what='both tasks to start')
  subprocess.run(['scancel', '--batch', '--signal=TERM', submitted.job_id],
                 env=submitted.env, capture_output=True, timeout=60,
                 check=True)
  job = submitted.wait(timeout=120)
  assert job.code == 143, job.tail()
  assert job.exit_codes() == {'worker:0': [143], 'worker:1': [143]}, (
      job.tail())
  assert job.lines('sbatch')[-2:] == [
      'got SIGTERM: passing it on to the tasks (they save and exit 143)',
      'stopped (SIGTERM) after the tasks saved: exit 143 (resumable)'], (
          job.tail())
  _assert_every_line_says_whose(job, ['worker:0', 'worker:1', 'sbatch'])


# A task that listens on its own TF_CONFIG address until a file appears
# (at most 120 s), then exits 0; a port already taken makes it exit 1.
HOLD_PORT_TASK = textwrap.dedent('''
    import json, os, socket, sys, time
    config = json.loads(os.environ['TF_CONFIG'])
    task = config['task']
    host, port = config['cluster'][task['type']][task['index']].rsplit(':', 1)
    server = socket.socket()
    try:
      server.bind((host, int(port)))
    except OSError as e:
      print(f'cannot listen on {host}:{port}: {e}', flush=True)
      sys.exit(1)
    server.listen()
    print(f'listening on {host}:{port}', flush=True)
    deadline = time.time() + 120
    while not os.path.exists(sys.argv[1]) and time.time() < deadline:
      time.sleep(0.2)
''')


def test_two_jobs_on_one_node_listen_on_different_ports(jobs, tmp_path):
  """Two jobs whose tasks all listen at once on the one node: each job's
  port block is its own, so every task gets its port."""
  task = tmp_path / 'hold_port.py'
  task.write_text(HOLD_PORT_TASK)
  release = tmp_path / 'release'
  submitted = [jobs.submit(ntasks=2, script_args=[
      '--workers', '2', '--', sys.executable, str(task), str(release)])
               for _ in range(2)]
  try:
    _cluster.wait_for(
        lambda: all(s.output().count('] listening on ') == 2
                    for s in submitted) or any(
                        'cannot listen' in s.output() for s in submitted),
        timeout=120, what='both jobs\' tasks to listen at the same time')
  finally:
    release.write_text('')
  results = [s.wait(timeout=120) for s in submitted]
  for job in results:
    assert job.code == 0, job.tail()
  ports = [set(re.findall(r'listening on localhost:(\d+)', job.output))
           for job in results]
  assert len(ports[0]) == len(ports[1]) == 2 and not ports[0] & ports[1], (
      ports)


# A task that counts the SIGTERMs it gets in 3 s after the first, then
# exits 143 (0 if none came in 120 s).
COUNT_TERMS_TASK = textwrap.dedent('''
    import signal, sys, time
    count = 0
    def on_term(*_):
      global count
      count += 1
      print(f'SIGTERM {count}', flush=True)
    signal.signal(signal.SIGTERM, on_term)
    print('ready', flush=True)
    deadline = time.time() + 120
    while not count and time.time() < deadline:
      time.sleep(0.1)
    time.sleep(3)
    sys.exit(143 if count else 0)
''')


@pytest.mark.parametrize('scancel_args, script_line', [
    # The whole job (as a preemption or the time limit): Slurm signals
    # every task itself; the script must not add a second SIGTERM, which
    # would make the runtime exit without saving.
    ([], 'got SIGTERM: the job is ending'),
    # The script alone (--signal=B:TERM@secs): it passes it on, once.
    (['--batch', '--signal=TERM'], 'got SIGTERM: passing it on'),
])
def test_every_task_gets_one_sigterm(jobs, tmp_path, scancel_args,
                                     script_line):
  task = tmp_path / 'count_terms.py'
  task.write_text(COUNT_TERMS_TASK)
  submitted = jobs.submit(ntasks=2, script_args=[
      '--workers', '2', '--', sys.executable, str(task)])
  _cluster.wait_for(lambda: submitted.output().count('] ready') == 2,
                    timeout=120, what='both tasks to start')
  subprocess.run(['scancel', *scancel_args, submitted.job_id],
                 env=submitted.env, capture_output=True, timeout=60,
                 check=True)
  job = submitted.wait(timeout=120)
  assert job.exit_codes() == {'worker:0': [143], 'worker:1': [143]}, (
      job.tail())
  for worker in ('worker:0', 'worker:1'):
    assert [l for l in job.lines(worker) if l.startswith('SIGTERM')] == [
        'SIGTERM 1'], job.tail()
  assert any(l.startswith(script_line) for l in job.lines('sbatch')), (
      job.tail())
