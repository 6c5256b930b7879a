"""`python -m estimator_rt.launch.local` restarts what it loses.

Two kinds of tests. The policy and the exit codes run with a fake task (a
few lines of Python that exit as a plan says; no TensorFlow, seconds
each). The promises that need the runtime (a resumed run continues from
its checkpoint, a parameter-server worker rejoins) run real clusters of
the tiny model on loopback ports; a task is SIGKILLed or SIGTERMed once the
chief has saved a first checkpoint. Every wait is bounded and every
process is dead at the end (the launcher is stopped in a finally, and it
stops its tasks).
"""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

import _cluster
from estimator_rt.cluster import preemption
from estimator_rt.launch import exit_policy

GRACE_SECS = 15

# ------------------------------------------------------------ fake tasks
# Each start of a task takes the next action of its plan (the last one
# repeats): {"exit": code, "after": secs} exits with `code` after `secs`
# (a negative code: killed by that signal), "serve" runs until SIGTERM and
# then exits 143, as a server of the runtime does.
FAKE_TASK = textwrap.dedent('''
    import json, os, signal, sys, time
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    task = json.loads(os.environ['TF_CONFIG'])['task']
    name = f"{task['type']}:{task['index']}"
    starts = os.path.join(os.environ['FAKE_STATE'], name.replace(':', '_'))
    with open(starts, 'a') as f:
      f.write('.')
    plan = json.loads(os.environ['FAKE_PLAN']).get(name, ['serve'])
    action = plan[min(os.path.getsize(starts), len(plan)) - 1]
    print(f'{name} start {os.path.getsize(starts)}: {action}', flush=True)
    if action == 'serve':
      while True:
        time.sleep(1)
    time.sleep(action.get('after', 0.5))
    if action['exit'] < 0:
      os.kill(os.getpid(), -action['exit'])
      time.sleep(10)
    sys.exit(action['exit'])
''')


def _run_fake(tmp_path, plan, *, launcher_args, timeout=60):
  """Runs the launcher over fake tasks; returns (code, output, status)."""
  script = tmp_path / 'fake_task.py'
  script.write_text(FAKE_TASK)
  state = tmp_path / 'state'
  state.mkdir()
  status_file = tmp_path / 'status.json'
  env = _cluster.task_env({'FAKE_PLAN': json.dumps(plan),
                           'FAKE_STATE': str(state)})
  result = subprocess.run(
      [*_cluster.LAUNCHER, f'--status_file={status_file}',
       '--grace_secs=1', *launcher_args, '--', sys.executable, str(script)],
      env=env, capture_output=True, text=True, timeout=timeout, check=False)
  output = result.stdout + result.stderr
  status = (json.loads(status_file.read_text()) if status_file.exists()
            else None)
  return result.returncode, output, status


def _restarts(status):
  return {name: len(pids) - 1 for name, pids in status['pids'].items()}


def _done_after(secs):
  return [{'exit': 0, 'after': secs}]


def test_a_failure_restarts_all_tasks_within_the_budget(tmp_path):
  """worker:1 is killed twice; --max_restarts=2 restarts both workers each
  time and the chief's third run finishes: exit 0."""
  plan = {'worker:1': [{'exit': -9}, {'exit': -9}, 'serve'],
          'worker:0': ['serve', 'serve', {'exit': 0, 'after': 1}]}
  code, output, status = _run_fake(
      tmp_path, plan, launcher_args=['--workers=2', '--max_restarts=2'])
  assert code == 0, output
  for n in (1, 2):
    assert (f'[launcher] worker:1 exited -9 (failed: killed by SIGKILL): '
            f'restarting all tasks (restart {n} of 2)') in output, output
  assert _restarts(status) == {'worker:0': 2, 'worker:1': 2}
  assert [r['reason'] for r in status['restarts']] == ['failed', 'failed']
  assert status['chief'] == 0 and status['exit_code'] == 0


def test_when_the_budget_is_spent_the_failing_code_is_the_exit_code(
    tmp_path):
  """The second failure finds no restart left: every task is stopped and
  the launcher exits with the task's code, a signal N as 128 + N."""
  plan = {'worker:1': [{'exit': 1}, {'exit': -6}]}
  code, output, status = _run_fake(
      tmp_path, plan, launcher_args=['--workers=2', '--max_restarts=1'])
  assert code == 128 + signal.SIGABRT, output
  assert ('[launcher] worker:1 exited -6 (failed: killed by SIGABRT): not '
          'restarted (--max_restarts=1 used up); stopping all tasks, exit '
          'code 134') in output, output
  assert status['failure_restarts'] == 1
  # worker:0 served until the launcher stopped it.
  assert status['tasks'] == {'worker:0': 143, 'worker:1': -6}


def test_preemptions_do_not_use_the_failure_budget_but_are_bounded(
    tmp_path):
  """worker:1 exits 143 on every start: with --max_restarts=0 it is
  restarted --max_preemptions=2 times, each reported as a preemption; the
  third ends the run with 143."""
  plan = {'worker:1': [{'exit': 143}]}
  code, output, status = _run_fake(
      tmp_path, plan, launcher_args=['--workers=2', '--max_restarts=0',
                                     '--max_preemptions=2'])
  assert code == 143, output
  for n in (1, 2):
    assert (f'[launcher] worker:1 exited 143 (preempted): restarting all '
            f'tasks (preemption restart {n} of at most 2)') in output, output
  assert ('worker:1 exited 143 (preempted): not restarted '
          '(--max_preemptions=2 used up)') in output, output
  assert status['failure_restarts'] == 0
  assert status['preemption_restarts'] == 2


def test_bad_input_is_never_restarted(tmp_path):
  """Exit code 2 from one task: no restart, whatever --max_restarts says;
  the others are stopped and the launcher exits 2."""
  plan = {'worker:1': [{'exit': 2}]}
  code, output, status = _run_fake(
      tmp_path, plan, launcher_args=['--workers=2', '--max_restarts=5'])
  assert code == 2, output
  assert ('[launcher] worker:1 exited 2 (bad input): restarting cannot help'
          in output), output
  assert 'restarting all' not in output
  assert status['restarts'] == [] and _restarts(status) == {
      'worker:0': 0, 'worker:1': 0}


@pytest.mark.parametrize('lost, restarted', [
    ('worker:1', ['worker:1']),
    ('ps:0', ['chief:0', 'ps:0', 'worker:0', 'worker:1']),
    ('chief:0', ['chief:0', 'ps:0', 'worker:0', 'worker:1']),
    ('evaluator:0', ['evaluator:0']),
])
def test_parameter_server_restart_sets(tmp_path, lost, restarted):
  """A parameter-server worker or the evaluator restarts alone; a lost ps
  or chief restarts every task but the evaluator."""
  plan = {lost: [{'exit': -9}, 'serve'],
          'chief:0': _done_after(3)}
  if lost == 'chief:0':
    plan['chief:0'] = [{'exit': -9}] + _done_after(3)
  code, output, status = _run_fake(
      tmp_path, plan, launcher_args=[
          '--chief', '--workers=2', '--ps=1', '--evaluator',
          '--max_restarts=1'])
  assert code == 0, output
  assert sorted(status['restarts'][0]['restarted']) == restarted
  assert _restarts(status) == {
      name: int(name in restarted) for name in status['pids']}


def test_multi_worker_restarts_keep_the_evaluator(tmp_path):
  """Without ps tasks any lost trainer restarts every trainer; the
  evaluator only reads model_dir and keeps running."""
  plan = {'worker:1': [{'exit': 1}, 'serve'],
          'worker:0': ['serve', {'exit': 0, 'after': 2}]}
  code, output, status = _run_fake(
      tmp_path, plan, launcher_args=['--workers=2', '--evaluator',
                                     '--max_restarts=1'])
  assert code == 0, output
  assert ('restarting the training tasks (worker:0, worker:1; the '
          'evaluator keeps running) (restart 1 of 1)') in output, output
  assert _restarts(status) == {'evaluator:0': 0, 'worker:0': 1,
                               'worker:1': 1}


def test_a_task_the_job_can_do_without_is_left_out(tmp_path):
  """No restart left: a failed evaluator (or parameter-server worker while
  another runs) is left out and the chief finishes the job: exit 0."""
  plan = {'evaluator:0': [{'exit': 1}], 'worker:1': [{'exit': -9}],
          'chief:0': _done_after(4)}
  code, output, status = _run_fake(
      tmp_path, plan, launcher_args=['--chief', '--workers=2', '--ps=1',
                                     '--evaluator'])
  assert code == 0, output
  assert sorted(status['left_out']) == ['evaluator:0', 'worker:1']
  assert 'evaluator:0 exited 1 (failed): not restarted (--max_restarts=0 ' \
         'used up); the cluster carries on without it' in output, output
  assert status['restarts'] == []


def test_sigterm_to_the_launcher_is_forwarded(tmp_path):
  """The launcher signalled: every task gets SIGTERM (they exit 143 as
  preempted training tasks do) and the launcher exits 143, the chief's."""
  script = tmp_path / 'fake_task.py'
  script.write_text(FAKE_TASK)
  (tmp_path / 'state').mkdir()
  status_file = tmp_path / 'status.json'
  pid_file = tmp_path / 'pids.json'
  env = _cluster.task_env({'FAKE_PLAN': '{}',
                           'FAKE_STATE': str(tmp_path / 'state')})
  process = subprocess.Popen(
      [*_cluster.LAUNCHER, '--workers=2', '--evaluator',
       f'--status_file={status_file}', f'--pid_file={pid_file}', '--',
       sys.executable, str(script)],
      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      start_new_session=True)
  try:
    _cluster.wait_for(lambda: pid_file.exists() and len(list(
        (tmp_path / 'state').iterdir())) == 3, timeout=60,
                      what='three started tasks')
    pids = json.loads(pid_file.read_text())
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=60)
  finally:
    if process.poll() is None:
      os.killpg(process.pid, signal.SIGKILL)
      process.wait()
  assert process.returncode == 143, output
  assert '[launcher] SIGTERM: sending SIGTERM to all tasks' in output
  status = json.loads(status_file.read_text())
  assert status['tasks'] == {'evaluator:0': 143, 'worker:0': 143,
                             'worker:1': 143}
  assert not any(_cluster.group_alive(pid) for pid in pids.values())


def test_the_launcher_refuses_bad_counts():
  for flag in ('--max_restarts=-1', '--max_preemptions=-2',
               '--grace_secs=inf'):
    result = subprocess.run(
        [*_cluster.LAUNCHER, flag, '--', 'true'],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert f'error: {flag}: must be' in result.stderr, result.stderr


def test_the_preempted_code_is_the_runtimes():
  assert exit_policy.PREEMPTED_EXIT_CODE == preemption.PREEMPTED_EXIT_CODE


# ------------------------------------------------------------ real clusters
# About 330-450 tiny steps/s with two MWMS workers here: the kill lands
# within a poll (0.2 s) of the first checkpoint at 250, and 2000 steps leave
# 1750 (about 4 s, more on a loaded machine) of training after it.
MWMS_MAX_STEPS = 2000
MWMS_SAVE_EVERY = 250
PS_MAX_STEPS = 1500
PS_SAVE_EVERY = 250


def _flags(module, model_dir, strategy, max_steps, save_every, extra=()):
  return _cluster.tiny_flags(module) + [
      f'--distribution_strategy={strategy}', f'--model_dir={model_dir}',
      f'--max_steps={max_steps}', f'--save_checkpoints_steps={save_every}',
      '--throttle_secs=0', '--exporters=', *extra]


def _start_mwms(tmp_path, *launcher_args, extra=()):
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  launcher = _cluster.start_launcher(
      tmp_path, workers=2, launcher_args=[
          f'--grace_secs={GRACE_SECS}', '--timeout_secs=400',
          *launcher_args],
      args=_flags(module, model_dir, 'multi_worker_mirrored',
                  MWMS_MAX_STEPS, MWMS_SAVE_EVERY, extra))
  return launcher, model_dir


def _first_checkpoint(launcher, model_dir) -> int:
  """Waits (bounded) for the chief's first checkpoint; returns its step."""
  _cluster.wait_for(
      lambda: launcher.process.poll() is not None or (
          os.path.isdir(model_dir) and
          bool(_cluster.checkpoint_steps(model_dir))),
      timeout=180, what='the first checkpoint')
  assert launcher.process.poll() is None, launcher.output()[-6000:]
  return _cluster.checkpoint_steps(model_dir)[0]


def _restored_steps(log):
  return [int(s) for s in re.findall(r'Restored \S+ \(global step (\d+)\)',
                                     log)]


def _assert_all_gone(run):
  for name, pids in run.status['pids'].items():
    for pid in pids:
      assert not _cluster.group_alive(pid), (name, pid)


def test_a_sigkilled_worker_is_restarted_and_training_resumes(tmp_path):
  """multi_worker_mirrored, --max_restarts=1: worker:1 SIGKILLed after the
  first checkpoint; both workers restart, the chief resumes from a
  checkpoint (not step 0) and finishes at max_steps; exit 0."""
  launcher, model_dir = _start_mwms(tmp_path, '--max_restarts=1')
  try:
    first = _first_checkpoint(launcher, model_dir)
    killed = launcher.pids()['worker:1']
    os.kill(killed, signal.SIGKILL)
    run = launcher.wait(timeout=400)
  finally:
    launcher.stop()
  assert run.launcher_code == 0, run.tail()
  restart_lines = [l for l in run.output.splitlines()
                   if l.startswith('[launcher] ') and 'restart' in l]
  assert restart_lines == [
      '[launcher] worker:1 exited -9 (failed: killed by SIGKILL): '
      'restarting all tasks (restart 1 of 1)'], run.tail()
  assert run.codes == {'worker:0': 0, 'worker:1': 0}, run.tail()
  assert run.status['pids']['worker:1'][0] == killed
  assert [len(p) for p in run.status['pids'].values()] == [2, 2]
  assert _cluster.checkpoint_steps(model_dir)[-1] == MWMS_MAX_STEPS
  # The first run started fresh; the second restored what the first saved.
  restored = _restored_steps(run.log('worker:0'))
  assert len(restored) == 1 and restored[0] >= first, (
      restored, first, run.log('worker:0')[-4000:])
  assert f'Training from global step {restored[0]} up to ' in run.log(
      'worker:0')
  _assert_all_gone(run)


def test_a_preempted_worker_restarts_the_cluster_without_using_the_budget(
    tmp_path):
  """SIGTERM to worker:1 with --max_restarts=0: the workers agree on a step,
  the chief saves there and both exit 143; the launcher restarts them as a
  preemption and the chief resumes from exactly that step; exit 0."""
  launcher, model_dir = _start_mwms(tmp_path, '--max_restarts=0')
  try:
    _first_checkpoint(launcher, model_dir)
    os.kill(launcher.pids()['worker:1'], signal.SIGTERM)
    run = launcher.wait(timeout=400)
  finally:
    launcher.stop()
  assert run.launcher_code == 0, run.tail()
  lines = [l for l in run.output.splitlines()
           if l.startswith('[launcher] ') and 'restart' in l]
  assert len(lines) == 1 and re.fullmatch(
      r'\[launcher\] worker:[01] exited 143 \(preempted\): restarting all '
      r'tasks \(preemption restart 1 of at most 100\)', lines[0]), lines
  assert run.status['failure_restarts'] == 0
  assert run.status['preemption_restarts'] == 1
  assert run.codes == {'worker:0': 0, 'worker:1': 0}, run.tail()
  match = re.search(r'Preempted \(SIGTERM\) at global step (\d+)',
                    run.log('worker:1'))
  assert match, run.log('worker:1')[-4000:]
  step = int(match.group(1))
  assert _restored_steps(run.log('worker:0')) == [step], run.log(
      'worker:0')[-4000:]
  assert _cluster.checkpoint_steps(model_dir)[-1] == MWMS_MAX_STEPS
  _assert_all_gone(run)


def test_no_restart_left_stops_every_task(tmp_path):
  """--max_restarts=0 and a SIGKILLed worker: no restart; the launcher
  exits 137 (128 + SIGKILL) and no task process is left."""
  launcher, model_dir = _start_mwms(tmp_path, '--max_restarts=0')
  try:
    _first_checkpoint(launcher, model_dir)
    pids = launcher.pids()
    os.kill(pids['worker:1'], signal.SIGKILL)
    run = launcher.wait(timeout=2 * GRACE_SECS + 120)
  finally:
    launcher.stop()
  assert run.launcher_code == 128 + signal.SIGKILL, run.tail()
  assert ('[launcher] worker:1 exited -9 (failed: killed by SIGKILL): not '
          'restarted (--max_restarts=0 used up); stopping all tasks, exit '
          'code 137') in run.output, run.tail()
  assert 'restarting' not in run.output
  assert run.status['restarts'] == []
  assert run.codes['worker:1'] == -signal.SIGKILL
  assert run.codes['worker:0'] is not None, run.codes
  for pid in pids.values():
    assert not _cluster.group_alive(pid), pid
  _assert_all_gone(run)


def test_bad_input_from_the_binary_is_not_restarted(tmp_path):
  """A bad flag makes every task exit 2: the launcher exits 2, restarts
  nothing and model_dir is never created."""
  launcher, model_dir = _start_mwms(tmp_path, '--max_restarts=3',
                                    extra=['--eval_steps=-5'])
  try:
    run = launcher.wait(timeout=180)
  finally:
    launcher.stop()
  assert run.launcher_code == 2, run.tail()
  assert run.codes == {'worker:0': 2, 'worker:1': 2}, run.tail()
  assert 'exited 2 (bad input): restarting cannot help' in run.output
  assert 'restarting all' not in run.output
  assert [len(p) for p in run.status['pids'].values()] == [1, 1]
  assert not os.path.exists(model_dir)


def test_a_lost_parameter_server_worker_rejoins_alone(tmp_path):
  """parameter_server (chief, 2 workers, 1 ps), --max_restarts=1: worker:1
  SIGKILLed after the first checkpoint is restarted alone, rejoins (it
  takes the chief's end-of-training signal, or, back after the chief gave
  up on it, finds training over), and every task exits 0 with the last
  checkpoint at max_steps."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  launcher = _cluster.start_launcher(
      tmp_path, chief=True, workers=2, ps=1, launcher_args=[
          f'--grace_secs={GRACE_SECS}', '--timeout_secs=300',
          '--max_restarts=1'],
      args=_flags(module, model_dir, 'parameter_server', PS_MAX_STEPS,
                  PS_SAVE_EVERY))
  try:
    _first_checkpoint(launcher, model_dir)
    os.kill(launcher.pids()['worker:1'], signal.SIGKILL)
    run = launcher.wait(timeout=400)
  finally:
    launcher.stop()
  restart = ('[launcher] worker:1 exited -9 (failed: killed by SIGKILL): '
             'restarting worker:1 alone (restart 1 of 1)')
  assert restart in run.output, run.tail()
  assert run.codes == {'chief:0': 0, 'ps:0': 0, 'worker:0': 0,
                       'worker:1': 0}, run.tail()
  assert run.launcher_code == 0
  assert [len(run.status['pids'][n]) for n in (
      'chief:0', 'ps:0', 'worker:0', 'worker:1')] == [1, 1, 1, 2]
  # The restarted worker:1 took the chief's done signal, or, back after the
  # chief had finished (its steps are quick here), found model_dir at
  # max_steps and exited 0 on its own.
  after = run.output[run.output.index(restart):]
  assert '[worker:1] ' in after and (
      'The chief finished training; worker:1 exits.' in after or
      'is gone and model_dir holds the end of training; worker:1 exits.'
      in after), run.tail()
  assert _cluster.checkpoint_steps(model_dir)[-1] == PS_MAX_STEPS
  _assert_all_gone(run)
