"""Lost tasks never hang a cluster; preemption signals reach every role.

Real clusters of real processes on loopback ports, tasks SIGKILLed or
SIGTERMed mid-training; every wait bounded, every task killed at the end.
"""

import os
import random
import re
import signal
import time

from estimator_rt.cluster import preemption

import _cluster

PS_MAX_STEPS = 1000
SAVE_EVERY = 200


def _ps_command(module, model_dir, max_steps=PS_MAX_STEPS):
  return _cluster.BINARY + _cluster.tiny_flags(module) + [
      '--distribution_strategy=parameter_server', f'--model_dir={model_dir}',
      f'--max_steps={max_steps}', f'--save_checkpoints_steps={SAVE_EVERY}',
      '--throttle_secs=0', '--exporters=']


def test_parameter_server_training_survives_a_lost_worker(tmp_path):
  """worker:1 is SIGKILLed mid-training: the coordinator carries on with
  worker:0, the chief finishes at max_steps and tells every surviving
  server, and every surviving task exits 0. Restarted on the finished
  model_dir (worker:1 still gone), the chief exits 0 at once and the
  servers with it."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=2, ps=1, chief=True,
                                             evaluator=True)
  command = _ps_command(module, model_dir)
  everyone = [('ps', 0), ('worker', 0), ('worker', 1), ('evaluator', 0),
              ('chief', 0)]
  survivors = ['chief:0', 'ps:0', 'worker:0', 'evaluator:0']
  os.makedirs(tmp_path / 'run1')
  tasks = _cluster.start_tasks(tmp_path / 'run1', cluster=cluster,
                               command=command, tasks=everyone)
  try:
    _cluster.wait_for(
        lambda: os.path.isdir(model_dir) and bool(
            _cluster.checkpoint_steps(model_dir)),
        timeout=180, what='the first checkpoint')
    _cluster.kill_task(tasks['worker:1'])
    codes = _cluster.wait_tasks(tasks, survivors, timeout=300)
  finally:
    _cluster.stop_tasks(tasks)
  assert codes == {name: 0 for name in survivors}, (
      codes, _cluster.tails(tasks, survivors))
  assert _cluster.checkpoint_steps(model_dir)[-1] == PS_MAX_STEPS

  # The same cluster, restarted on the finished model_dir, worker:1 gone.
  os.makedirs(tmp_path / 'run2')
  again = _cluster.start_tasks(
      tmp_path / 'run2', cluster=cluster, command=command,
      tasks=[('ps', 0), ('worker', 0), ('chief', 0)])
  try:
    started = time.time()
    codes = _cluster.wait_tasks(again, ['chief:0', 'ps:0', 'worker:0'],
                                timeout=120)
    took = time.time() - started
  finally:
    _cluster.stop_tasks(again)
  assert codes == {'chief:0': 0, 'ps:0': 0, 'worker:0': 0}, (
      codes, _cluster.tails(again, ['chief:0', 'ps:0', 'worker:0']))
  assert 'Skipping training' in again['chief:0'].log()
  assert took < 120, took


def _sigterm_mid_training(tasks, names, *, watch, target):
  """Once `watch` logs step 101, SIGTERMs `target` at a random moment of the
  next 2 s; returns every task's exit code (None: still running after 60 s)
  and the seconds from the signal until all had exited. Stops all tasks."""
  try:
    _cluster.wait_for(lambda: 'step 101/' in tasks[watch].log(),
                      timeout=180, what='training to run')
    time.sleep(random.uniform(0.0, 2.0))
    signalled = time.time()
    tasks[target].process.send_signal(signal.SIGTERM)
    codes = _cluster.wait_tasks(tasks, names, timeout=60)
    return codes, time.time() - signalled
  finally:
    _cluster.stop_tasks(tasks)


def _preempted_step(log):
  match = re.search(r'Preempted \((?:SIGTERM|a stop signal on another '
                    r'worker)\) at global step (\d+)', log)
  return int(match.group(1)) if match else None


def test_multi_worker_mirrored_sigterm_to_one_worker_saves_and_resumes(
    tmp_path):
  """SIGTERM to worker:1 alone, at a random moment: both workers agree on
  the step, the chief saves there, both exit 143 well inside a 30 s grace
  period; the same cluster started again resumes from that step."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=2, ps=0, chief=False,
                                             evaluator=False)

  def command(max_steps):
    return _cluster.BINARY + _cluster.tiny_flags(module) + [
        '--distribution_strategy=multi_worker_mirrored',
        f'--model_dir={model_dir}', f'--max_steps={max_steps}',
        '--save_checkpoints_steps=100000', '--log_step_count_steps=100',
        '--exporters=']

  os.makedirs(tmp_path / 'run1')
  tasks = _cluster.start_tasks(tmp_path / 'run1', cluster=cluster,
                               command=command(10**6),
                               tasks=[('worker', 1), ('worker', 0)])
  names = ['worker:0', 'worker:1']
  codes, took = _sigterm_mid_training(tasks, names, watch='worker:0',
                                      target='worker:1')
  assert codes == {n: preemption.PREEMPTED_EXIT_CODE for n in names}, (
      codes, _cluster.tails(tasks, names))
  assert took < 30, took
  steps = {n: _preempted_step(tasks[n].log()) for n in names}
  assert steps['worker:0'] is not None and steps['worker:0'] == steps[
      'worker:1'], steps
  step = steps['worker:0']
  assert 'Preempted (SIGTERM)' in tasks['worker:1'].log()
  assert _cluster.checkpoint_steps(model_dir) == [0, step]

  os.makedirs(tmp_path / 'run2')
  again = _cluster.start_tasks(tmp_path / 'run2', cluster=cluster,
                               command=command(step + 100),
                               tasks=[('worker', 1), ('worker', 0)])
  codes = _cluster.wait_then_stop(again, names, timeout=180)
  assert codes == {n: 0 for n in names}, (
      codes, _cluster.tails(again, names))
  assert f'(global step {step})' in again['worker:0'].log()
  assert _cluster.checkpoint_steps(model_dir) == [0, step, step + 100]


def test_parameter_server_sigterm_to_the_chief_stops_the_cluster(tmp_path):
  """SIGTERM to the PS chief: it saves after the loop in flight and exits
  143, and tells its servers, which exit 143 too (restart the cluster);
  restarted, everything resumes there and exits 0."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=1, ps=1, chief=True,
                                             evaluator=False)
  everyone = [('ps', 0), ('worker', 0), ('chief', 0)]
  names = ['chief:0', 'ps:0', 'worker:0']
  os.makedirs(tmp_path / 'run1')
  tasks = _cluster.start_tasks(tmp_path / 'run1', cluster=cluster,
                               command=_ps_command(module, model_dir, 10**6),
                               tasks=everyone)
  codes, took = _sigterm_mid_training(tasks, names, watch='chief:0',
                                      target='chief:0')
  assert codes == {n: preemption.PREEMPTED_EXIT_CODE for n in names}, (
      codes, _cluster.tails(tasks, names))
  assert took < 30, took
  step = _preempted_step(tasks['chief:0'].log())
  assert step is not None, tasks['chief:0'].log()[-3000:]
  assert step in _cluster.checkpoint_steps(model_dir)

  os.makedirs(tmp_path / 'run2')
  again = _cluster.start_tasks(
      tmp_path / 'run2', cluster=cluster,
      command=_ps_command(module, model_dir, step + 200), tasks=everyone)
  codes = _cluster.wait_then_stop(again, names, timeout=180)
  assert codes == {n: 0 for n in names}, (
      codes, _cluster.tails(again, names))
  assert f'(global step {step})' in again['chief:0'].log()
  assert _cluster.checkpoint_steps(model_dir)[-1] >= step + 200
