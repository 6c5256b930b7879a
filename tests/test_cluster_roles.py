"""The cluster roles, as real processes: TensorFlow servers on 127.0.0.1
ports, started by `python -m estimator_rt.launch.local` or by hand, every
one of them bounded by a timeout and killed at the end.

Each test is one cluster run (15-60 s) checked for several things at once:
exit codes, what lands in model_dir, the logs of each role.
"""

import collections
import json
import os
import time

import numpy as np

import _cluster
from conftest import run_python
from estimator_rt import bind_guard
from estimator_rt import summaries

MAX_STEPS = 300
SAVE_EVERY = 100


def _eval_loss_steps(model_dir):
  return [step for step, _ in summaries.read_scalars(
      os.path.join(model_dir, 'eval')).get('loss', [])]


def _check_export_serves_checkpoint(export_base, checkpoint):
  """One export under `export_base`; loaded in a fresh process, it predicts
  what the checkpoint's weights predict."""
  exports = sorted(os.listdir(export_base))
  assert len(exports) == 1, exports
  export_dir = os.path.join(export_base, exports[0])
  x = np.random.RandomState(3).randn(5, 4).astype(np.float32)
  script = (
      'import json, sys\n'
      'import numpy as np, tensorflow as tf\n'
      'loaded = tf.saved_model.load(sys.argv[1])\n'
      'fn = loaded.signatures["serving_default"]\n'
      'out = fn(x=tf.constant(json.loads(sys.argv[2]), tf.float32))\n'
      'print("PREDICTIONS " + json.dumps(out["y"].numpy().ravel().tolist()))\n')
  result = run_python(['-c', script, export_dir, json.dumps(x.tolist())],
                      timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  line = [l for l in result.stdout.splitlines()
          if l.startswith('PREDICTIONS ')]
  assert len(line) == 1, result.stdout
  predictions = np.array(json.loads(line[0][len('PREDICTIONS '):]))
  kernel, bias = _cluster.read_model_variables(checkpoint)
  np.testing.assert_allclose(predictions, (x @ kernel + bias).ravel(),
                             rtol=1e-5, atol=1e-5)


def test_multi_worker_mirrored_two_workers_and_evaluator(tmp_path):
  """MWMS, 2 workers + evaluator: everyone exits 0 on their own; the chief
  writes the checkpoints, the evaluator the eval events up to max_steps and
  the final export; the non-chief's scratch directory is gone; an input_fn
  declaring input_context gets one pipeline per worker."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  scratch = tmp_path / 'scratch'  # TMPDIR of every task.
  scratch.mkdir()
  contexts = tmp_path / 'contexts'
  contexts.mkdir()
  params = {'batch_size': 16, 'context_dir': str(contexts)}
  run = _cluster.run_launcher(
      tmp_path, workers=2, evaluator=True, grace_secs=60,
      env={'TMPDIR': str(scratch)},
      args=_cluster.tiny_flags(module, input_fn='context_input_fn',
                               params=params) + [
          '--distribution_strategy=multi_worker_mirrored',
          f'--model_dir={model_dir}', f'--max_steps={MAX_STEPS}',
          f'--save_checkpoints_steps={SAVE_EVERY}', '--throttle_secs=0',
          '--exporters=final'])
  assert run.codes == {'evaluator:0': 0, 'worker:0': 0, 'worker:1': 0}, (
      run.tail())
  assert run.launcher_code == 0 and run.status['chief'] == 0
  assert '[launcher] exit codes: ' in run.output

  # Roles, as each task announced them.
  assert 'Role: chief: trains with multi_worker_mirrored' in run.log('worker:0')
  assert 'Role: worker: trains with multi_worker_mirrored' in run.log(
      'worker:1')
  assert 'Role: evaluator:' in run.log('evaluator:0')

  # The chief's checkpoints, in model_dir.
  assert _cluster.checkpoint_steps(model_dir) == [0, 100, 200, 300]
  assert f'Saved checkpoint {model_dir}/model.ckpt-300' in run.log('worker:0')

  # The evaluator: each evaluated step once, in order, ending at max_steps.
  steps = _eval_loss_steps(model_dir)
  assert steps and steps[-1] == MAX_STEPS, steps
  assert steps == sorted(set(steps)), steps
  assert set(steps) <= {100, 200, 300}, steps
  assert 'Exported: ' in run.log('evaluator:0')
  _check_export_serves_checkpoint(
      os.path.join(model_dir, 'export', 'final'),
      os.path.join(model_dir, 'model.ckpt-300'))

  # The non-chief saved into a scratch directory under TMPDIR, removed at
  # exit; the chief never used one.
  assert f'Saved checkpoint {scratch}/estimator_rt_worker_' in run.log(
      'worker:1')
  assert 'estimator_rt_worker_' not in run.log('worker:0')
  leftovers = [n for n in os.listdir(scratch)
               if n.startswith('estimator_rt_worker_')]
  assert leftovers == []

  # input_context: besides the local one-pipeline call the runtime makes for
  # a sample batch, each worker's input pipeline is one of 2, its own id.
  for index in (0, 1):
    with open(contexts / f'context_worker_{index}.txt') as f:
      calls = [tuple(json.loads(line)) for line in f]
    distributed = [c for c in calls if c[0] != 1]
    assert distributed == [(2, index, 2)], calls
  assert not (contexts / 'context_evaluator_0.txt').exists()


def test_parameter_server_cluster_runs_to_the_end(tmp_path):
  """PS: chief + 2 workers + 1 ps + evaluator all exit 0 on their own (the
  servers on the chief's done signal, not stopped by the launcher), the
  evaluator's last result is at max_steps, the export exists."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  run = _cluster.run_launcher(
      tmp_path, chief=True, workers=2, ps=1, evaluator=True, grace_secs=30,
      args=_cluster.tiny_flags(module) + [
          '--distribution_strategy=parameter_server',
          f'--model_dir={model_dir}', f'--max_steps={MAX_STEPS}',
          f'--save_checkpoints_steps={SAVE_EVERY}', '--throttle_secs=0',
          '--exporters=final'])
  # A task the launcher had to stop would show -15 (SIGTERM), not 0.
  assert run.codes == {'chief:0': 0, 'evaluator:0': 0, 'ps:0': 0,
                       'worker:0': 0, 'worker:1': 0}, run.tail()
  for task in ('ps:0', 'worker:0', 'worker:1'):
    assert f'The chief finished training; {task} exits.' in run.log(task), (
        run.log(task)[-3000:])
    assert 'Role: ' + task.split(':')[0] + ': runs a standard TensorFlow' in (
        run.log(task))
  assert 'Role: chief: coordinates parameter-server training' in run.log(
      'chief:0')
  assert _cluster.checkpoint_steps(model_dir) == [0, 100, 200, 300]
  steps = _eval_loss_steps(model_dir)
  assert steps and steps[-1] == MAX_STEPS, steps
  assert steps == sorted(set(steps)), steps
  _check_export_serves_checkpoint(
      os.path.join(model_dir, 'export', 'final'),
      os.path.join(model_dir, 'model.ckpt-300'))


def _assert_each_task_listens_on_loopback_only(cluster):
  for job, addresses in cluster.items():
    for address in addresses:
      host, port = address.rsplit(':', 1)
      assert host == '127.0.0.1', address
      assert bind_guard.listening_addresses(int(port)) == ['127.0.0.1'], (
          job, address, bind_guard.listening_addresses(int(port)))


def test_parameter_server_tasks_exit_nonzero_when_the_chief_dies(tmp_path):
  """The chief is SIGKILLed after it connected to the cluster: the ps and
  the worker notice it is gone and exit non-zero on their own, within
  server.py's chief_grace_secs (30 s) plus polling. (This is the slowest
  test here, ~50 s, because of that grace period.)"""
  module = _cluster.write_tiny_model(tmp_path)
  marker = tmp_path / 'chief_is_building'
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=1, ps=1, chief=True,
                                             evaluator=False)
  command = _cluster.BINARY + _cluster.tiny_flags(
      module, params={'batch_size': 16,
                      'chief_hang_marker': str(marker)}) + [
          '--distribution_strategy=parameter_server',
          f'--model_dir={model_dir}', '--max_steps=100000']
  tasks = _cluster.start_tasks(tmp_path, cluster=cluster, command=command,
                               tasks=[('ps', 0), ('worker', 0), ('chief', 0)])
  try:
    _cluster.wait_for(marker.exists, timeout=150,
                      what='the chief to connect and build its model')
    # The servers look at the chief every 2 s; let them see it alive first.
    time.sleep(6)
    assert tasks['ps:0'].process.poll() is None, tasks['ps:0'].log()[-3000:]
    assert tasks['worker:0'].process.poll() is None
    # Every server, the chief's included, listens on its 127.0.0.1 address
    # only (the bind guard), not on every interface as TensorFlow would.
    _assert_each_task_listens_on_loopback_only(cluster)
    killed_at = time.time()
    _cluster.kill_task(tasks['chief:0'])
    deadline = killed_at + 90
    codes = {name: _cluster.wait_task(tasks[name], deadline=deadline)
             for name in ('ps:0', 'worker:0')}
    took = time.time() - killed_at
  finally:
    _cluster.stop_tasks(tasks)
  for name, code in codes.items():
    log = tasks[name].log()
    # None: still running at the deadline; < 0: killed (by us, above).
    assert code is not None and code > 0, (name, code, log[-3000:])
    assert 'is gone and never signalled the end of training' in log, (
        log[-3000:])
    assert 'error: ' in log and 'stopped without finishing training' in log
  # Bounded: server.py's 30 s grace plus its 2 s polls, with slack.
  assert took < 90, took
  assert not os.path.exists(model_dir)  # Only the (dead) chief would write.


def test_multi_worker_mirrored_worker_exits_nonzero_when_the_chief_dies(
    tmp_path):
  """Synchronous training: the chief (worker 0) is SIGKILLed mid-training;
  worker 1's next collective fails and it exits non-zero on its own instead
  of waiting forever."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=2, ps=0, chief=False,
                                             evaluator=False)
  command = _cluster.BINARY + _cluster.tiny_flags(
      module, params={'batch_size': 16}) + [
          '--distribution_strategy=multi_worker_mirrored',
          f'--model_dir={model_dir}', '--max_steps=10000000',
          '--save_checkpoints_steps=100']
  tasks = _cluster.start_tasks(tmp_path, cluster=cluster, command=command,
                               tasks=[('worker', 1), ('worker', 0)])
  try:
    # Training is under way once the chief has written a checkpoint.
    _cluster.wait_for(
        lambda: os.path.isdir(model_dir) and bool(
            _cluster.checkpoint_steps(model_dir)),
        timeout=150, what='the first checkpoint')
    assert tasks['worker:1'].process.poll() is None, (
        tasks['worker:1'].log()[-3000:])
    _assert_each_task_listens_on_loopback_only(cluster)
    killed_at = time.time()
    _cluster.kill_task(tasks['worker:0'])
    code = _cluster.wait_task(tasks['worker:1'], deadline=killed_at + 90)
    took = time.time() - killed_at
  finally:
    _cluster.stop_tasks(tasks)
  # None: still running at the deadline; < 0: killed by us.
  assert code is not None and code > 0, (code,
                                         tasks['worker:1'].log()[-3000:])
  assert took < 90, took


_FAKE_CHIEF = '''
import json, socket, sys, time
import tensorflow as tf
from estimator_rt import server

cluster = json.loads(sys.argv[1])
chief = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name='chief',
                             task_index=0, start=True)

def up(address):
  host, port = address.rsplit(':', 1)
  try:
    socket.create_connection((host, int(port)), timeout=1).close()
    return True
  except OSError:
    return False

server.signal_training_done(
    [('worker', 0, cluster['worker'][0]), ('ps', 0, cluster['ps'][0])])
print('SIGNALLED', flush=True)
# Stay up (as a chief evaluating or exporting would) until both servers left.
deadline = time.time() + 60
while time.time() < deadline and any(
    up(cluster[job][0]) for job in ('worker', 'ps')):
  time.sleep(0.5)
'''


def test_parameter_server_tasks_exit_zero_on_the_done_signal(tmp_path):
  """A ps and a PS worker started through the binary serve until another
  process (a stand-in chief) calls server.signal_training_done, then exit 0
  without writing model_dir."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=1, ps=1, chief=True,
                                             evaluator=False)
  command = _cluster.BINARY + _cluster.tiny_flags(module) + [
      '--distribution_strategy=parameter_server', f'--model_dir={model_dir}']
  tasks = _cluster.start_tasks(tmp_path, cluster=cluster, command=command,
                               tasks=[('ps', 0), ('worker', 0)])
  try:
    for job in ('ps', 'worker'):
      _cluster.wait_for(lambda job=job: _cluster.reachable(cluster[job][0]),
                        timeout=120, what=f'the {job} server to listen')
    assert all(t.process.poll() is None for t in tasks.values())
    chief = run_python(['-c', _FAKE_CHIEF, json.dumps(cluster)], timeout=120)
    assert chief.returncode == 0, chief.stderr[-3000:]
    assert 'SIGNALLED' in chief.stdout
    deadline = time.time() + 60
    codes = {name: _cluster.wait_task(task, deadline=deadline)
             for name, task in tasks.items()}
  finally:
    _cluster.stop_tasks(tasks)
  for name, code in codes.items():
    log = tasks[name].log()
    assert code == 0, (name, code, log[-3000:])
    assert f'The chief finished training; {name} exits.' in log
    assert ': runs a standard TensorFlow server at ' in log
  assert not os.path.exists(model_dir)


def test_multi_worker_mirrored_matches_one_process_on_the_global_batch(
    tmp_path):
  """2 MWMS workers on per-worker batch B equal one process on batch 2B, and
  DATA auto-sharding gives each example of an epoch to exactly one worker.

  Data order: the input_fn returns the same non-shuffled dataset, batched
  globally (2B). With DATA sharding the runtime rebatches it into per-replica
  batches of B and worker w keeps every other one (w, w + 2, ...): at step k
  worker 0 trains on the first half of global batch k and worker 1 on the
  second half. The reference process (default strategy, same input_fn) trains
  on global batch k whole at step k, so both see the same examples per step;
  SGD on the mean loss then takes the same steps (the all-reduced mean of the
  two half-batch gradients is the full-batch gradient).
  """
  module = _cluster.write_tiny_model(tmp_path)
  examples, global_batch, epochs = 128, 16, 5
  steps = examples * epochs // global_batch  # The input ends there.
  cluster_dir = str(tmp_path / 'cluster_model')
  local_dir = str(tmp_path / 'local_model')
  ids_dir = tmp_path / 'ids'
  ids_dir.mkdir()
  params = {'batch_size': global_batch, 'num_examples': examples,
            'epochs': epochs, 'ids_dir': str(ids_dir)}
  common = _cluster.tiny_flags(module, params=params) + [
      '--exporters=', '--max_steps=100000']
  run = _cluster.run_launcher(
      tmp_path, workers=2, grace_secs=30,
      args=common + ['--distribution_strategy=multi_worker_mirrored',
                     '--auto_shard_policy=DATA', f'--model_dir={cluster_dir}'])
  assert run.codes == {'worker:0': 0, 'worker:1': 0}, run.tail()
  local = run_python(['-m', 'estimator_rt.main'] + common +
                     [f'--model_dir={local_dir}'], timeout=180)
  assert local.returncode == 0, local.stderr[-3000:]

  assert _cluster.checkpoint_steps(cluster_dir) == [0, steps]
  assert _cluster.checkpoint_steps(local_dir) == [0, steps]
  # No evaluator task, and the chief does not evaluate (as in tf.estimator
  # 2.15: it cannot know of an evaluator left out of the cluster spec).
  assert not os.path.exists(os.path.join(cluster_dir, 'eval'))
  assert not os.path.exists(os.path.join(cluster_dir, 'export'))

  ours = _cluster.read_model_variables(
      os.path.join(cluster_dir, f'model.ckpt-{steps}'))
  reference = _cluster.read_model_variables(
      os.path.join(local_dir, f'model.ckpt-{steps}'))
  assert [v.shape for v in ours] == [(4, 1), (1,)]
  for a, b in zip(ours, reference):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
  # Training moved the weights (from 0.1 * randn) toward [1, -2, 0.5, 3].
  assert np.abs(reference[0].ravel() - [1.0, -2.0, 0.5, 3.0]).max() < 0.5

  def per_step(name):
    with open(ids_dir / f'ids_{name}.txt') as f:
      return [[int(t) for t in line.strip('[] \n').split()]
              for line in f if line.strip()]

  worker0, worker1, whole = (per_step('worker_0'), per_step('worker_1'),
                             per_step('local'))
  assert len(worker0) == len(worker1) == len(whole) == steps
  assert all(len(b) == global_batch // 2 for b in worker0 + worker1)
  # Each epoch's examples split between the workers, none seen twice.
  per_epoch = examples // global_batch
  first0 = sum(worker0[:per_epoch], [])
  first1 = sum(worker1[:per_epoch], [])
  assert not set(first0) & set(first1)
  assert sorted(first0 + first1) == list(range(examples))
  counts = collections.Counter(sum(worker0 + worker1, []))
  assert counts == {i: epochs for i in range(examples)}
  # And per step, the two halves are the reference's global batch.
  for k in range(steps):
    assert sorted(worker0[k] + worker1[k]) == sorted(whole[k]), k
