"""checkpoint_input: the input iterator's position is saved with each
training checkpoint, so a resumed run ends with the weights of an
uninterrupted one (and sees each example of an epoch once); where
TensorFlow cannot do it, training is refused before anything is written."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.cluster import tf_config as cluster
from estimator_rt.core.errors import UserInputError
import _cluster
import _counting_fns as counting
import _models as M

N_EXAMPLES = 24


def _ids_input_fn(params=None):
  """A shuffled (seeded, new order each epoch), repeated, batched dataset:
  restarting it from its beginning visibly changes which examples a step
  sees."""
  x, y = M.make_data(N_EXAMPLES, seed=3)
  ds = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
  ds = ds.shuffle(N_EXAMPLES, seed=7, reshuffle_each_iteration=True)
  return M.no_autotune(ds.repeat().batch(6))


def _train(model_dir, max_steps, *, strategy='default', checkpoint_input=True):
  est = ert.Estimator(
      M.make_model_fn(optimizer='adam', lr=0.05), model_dir=str(model_dir),
      config=M.quiet_config(train_distribute=strategy, steps_per_loop=1,
                            save_checkpoints_steps=1, tf_random_seed=1,
                            checkpoint_input=checkpoint_input))
  est.train(_ids_input_fn, max_steps=max_steps)
  return M.read_model_variables(est.latest_checkpoint())


def _close(a, b):
  return all(np.allclose(u, v, atol=1e-5, rtol=0) for u, v in zip(a, b))


def test_resumed_run_matches_uninterrupted_run(tmp_path):
  whole = _train(tmp_path / 'whole', 9)
  _train(tmp_path / 'split', 5)
  resumed = _train(tmp_path / 'split', 9)
  assert _close(whole, resumed)
  reader = tf.train.load_checkpoint(str(tmp_path / 'split' / 'model.ckpt-9'))
  assert any(k.startswith('input_iterator/')
             for k in reader.get_variable_to_shape_map())


def test_without_checkpoint_input_the_resume_differs(tmp_path):
  """The same comparison fails with checkpoint_input off: the input
  restarts from its beginning, so the test above can fail."""
  whole = _train(tmp_path / 'whole', 9, checkpoint_input=False)
  _train(tmp_path / 'split', 5, checkpoint_input=False)
  resumed = _train(tmp_path / 'split', 9, checkpoint_input=False)
  assert not _close(whole, resumed)


def test_checkpoint_without_input_state_resumes_from_input_start(tmp_path):
  _train(tmp_path, 3, checkpoint_input=False)
  _train(tmp_path, 5, checkpoint_input=True)
  assert M.read_global_step(M.ckpt_path(str(tmp_path), 5)) == 5
  from estimator_rt.core import checkpoints
  assert checkpoints.problem_with(M.ckpt_path(str(tmp_path), 5)) is None


@pytest.mark.parametrize('strategy,checkpoint_input', [
    ('default', True), ('default', False), ('mirrored', True)])
def test_each_example_once_per_epoch_across_a_resume(tmp_path, strategy,
                                                     checkpoint_input):
  """Stopped mid-epoch and resumed: with checkpoint_input every example is
  seen once per epoch; without it the input restarts and some examples
  are seen twice while others wait (the check can fail)."""
  def train(max_steps):
    est = ert.Estimator(
        counting.model_fn, model_dir=str(tmp_path),
        config=M.quiet_config(steps_per_loop=1, save_checkpoints_steps=1,
                              tf_random_seed=1, train_distribute=strategy,
                              checkpoint_input=checkpoint_input))
    est.train(counting.input_fn, max_steps=max_steps)
    return est.latest_checkpoint()

  train(5)  # Mid-epoch: an epoch is counting.STEPS_PER_EPOCH steps.
  path = train(2 * counting.STEPS_PER_EPOCH)
  names = [n.decode() for n in tf.train.load_checkpoint(path).get_tensor(
      'model_names/.ATTRIBUTES/VARIABLE_VALUE')]
  counts = M.read_model_variables(path)[names.index('example_counts')]
  if checkpoint_input:
    np.testing.assert_array_equal(counts, 2)
  else:
    assert counts.sum() == 2 * counting.N_EXAMPLES
    assert counts.min() < 2 < counts.max()


@pytest.mark.parametrize('strategy', ['mirrored', 'one_device'])
def test_resume_is_exact_with_a_strategy(tmp_path, strategy):
  """With a strategy the runtime iterates the global batches itself and
  each replica takes its rows (TensorFlow 2.21's distributed iterators are
  not checkpointable): a resumed run matches an uninterrupted one, and
  both match local training on the same global batches."""
  whole = _train(tmp_path / 'whole', 9, strategy=strategy)
  _train(tmp_path / 'split', 5, strategy=strategy)
  resumed = _train(tmp_path / 'split', 9, strategy=strategy)
  assert _close(whole, resumed)
  assert _close(whole, _train(tmp_path / 'local', 9))


def test_input_context_input_fn_is_refused_with_a_strategy(tmp_path):
  def context_input_fn(params, input_context):
    del params, input_context
    return _ids_input_fn()

  est = ert.Estimator(
      M.make_model_fn(), model_dir=str(tmp_path / 'm'),
      config=M.quiet_config(train_distribute='mirrored',
                            checkpoint_input=True))
  with pytest.raises(UserInputError, match='takes an input_context'):
    est.train(context_input_fn, max_steps=2)
  assert not (tmp_path / 'm').exists()


def test_uncheckpointable_dataset_is_refused_before_writing(tmp_path):
  def generator_input_fn():
    def gen():
      while True:
        yield {'x': np.zeros(4, np.float32)}, np.zeros(1, np.float32)
    return tf.data.Dataset.from_generator(gen, output_signature=(
        {'x': tf.TensorSpec([4], tf.float32)},
        tf.TensorSpec([1], tf.float32))).batch(2)

  model_dir = tmp_path / 'model'
  est = ert.Estimator(M.make_model_fn(), model_dir=str(model_dir),
                      config=M.quiet_config(checkpoint_input=True))
  with pytest.raises(UserInputError, match='checkpoint_input') as info:
    est.train(generator_input_fn, max_steps=2)
  assert 'cannot be checkpointed' in str(info.value)
  assert 'it uses Dataset.from_generator' in str(info.value)
  assert not model_dir.exists()


def test_py_function_in_a_map_is_named(tmp_path):
  def py_function_input_fn():
    x, y = M.make_data(8)
    return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).map(
        lambda f, l: (f, tf.py_function(lambda t: t, [l], tf.float32))
    ).batch(2)

  model_dir = tmp_path / 'model'
  est = ert.Estimator(M.make_model_fn(), model_dir=str(model_dir),
                      config=M.quiet_config(checkpoint_input=True))
  with pytest.raises(UserInputError, match='it uses tf.py_function'):
    est.train(py_function_input_fn, max_steps=2)
  assert not model_dir.exists()


@pytest.mark.parametrize('task,name', [
    (cluster.TaskInfo(cluster={'chief': ['localhost:1'],
                               'worker': ['localhost:2'],
                               'ps': ['localhost:3']},
                      task_type='chief', task_index=0),
     'parameter_server'),
])
def test_cluster_strategies_are_refused(tmp_path, task, name):
  config = M.quiet_config(checkpoint_input=True, task_info=task,
                          train_distribute=name)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'm'),
                      config=config)
  with pytest.raises(UserInputError, match=name):
    est.train(_ids_input_fn, max_steps=2)
  assert not (tmp_path / 'm').exists()


def test_checkpoint_input_is_validated():
  with pytest.raises(UserInputError, match="checkpoint_input='yes'"):
    ert.RunConfig(checkpoint_input='yes')


# ------------------------------------------------ through the binary, SIGKILL
COUNTING_FNS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            '_counting_fns.py')
EPOCHS = 400


def _counting_command(model_dir, *, checkpoint_input=True, epochs=EPOCHS):
  """Trains the counting model for EPOCHS whole epochs; loops of 3 steps and
  a checkpoint every 7, so a kill lands between checkpoints and some steps
  run twice."""
  return [sys.executable, '-m', 'estimator_rt.main',
          f'--model_fn={COUNTING_FNS}:model_fn',
          f'--input_fn={COUNTING_FNS}:input_fn', '--mode=train',
          f'--model_dir={model_dir}',
          f'--max_steps={epochs * counting.STEPS_PER_EPOCH}',
          '--steps_per_loop=3', '--save_checkpoints_steps=7',
          '--keep_checkpoint_max=3', '--log_step_count_steps=1000',
          '--tf_random_seed=1', '--deterministic_ops',
          f'--checkpoint_input={str(checkpoint_input).lower()}']


def _newest_step(model_dir) -> int:
  steps = [int(name[len('model.ckpt-'):-len('.index')])
           for name in os.listdir(model_dir)
           if name.startswith('model.ckpt-') and name.endswith('.index')
           ] if os.path.isdir(model_dir) else []
  return max(steps, default=-1)


def _run_and_kill(command, model_dir, *, at_step, log):
  """Starts `command`, SIGKILLs it as soon as a checkpoint at `at_step` or
  later is on disk; returns the newest checkpoint step at the kill."""
  process = subprocess.Popen(command, env=_cluster.task_env(),
                             stdout=log, stderr=subprocess.STDOUT)
  try:
    deadline = time.monotonic() + 300
    while _newest_step(model_dir) < at_step:
      assert process.poll() is None, (
          f'the run ended (exit {process.returncode}) before step {at_step}: '
          'too fast to be killed mid-run')
      assert time.monotonic() < deadline, 'no checkpoint in 300 s'
      time.sleep(0.01)
    process.kill()
    process.wait(timeout=60)
    return _newest_step(model_dir)
  finally:
    if process.poll() is None:
      process.kill()
      process.wait(timeout=60)


def _counts_and_weights(model_dir, step=EPOCHS * counting.STEPS_PER_EPOCH):
  path = M.ckpt_path(str(model_dir), step)
  reader = tf.train.load_checkpoint(path)
  names = [n.decode() for n in reader.get_tensor(
      'model_names/.ATTRIBUTES/VARIABLE_VALUE')]
  values = {name: reader.get_tensor(f'model/{i}/.ATTRIBUTES/VARIABLE_VALUE')
            for i, name in enumerate(names)}
  return values.pop('example_counts'), values


def test_sigkilled_twice_the_binary_resumes_exactly(tmp_path):
  """Killed with SIGKILL twice at arbitrary points and run again each time
  with the same command, the run ends with the weights of an uninterrupted
  one (1e-5) and every example seen exactly once per epoch."""
  whole_dir, split_dir = tmp_path / 'whole', tmp_path / 'split'
  with open(tmp_path / 'log', 'w') as log:
    subprocess.run(_counting_command(whole_dir), env=_cluster.task_env(),
                   stdout=log, stderr=subprocess.STDOUT, check=True,
                   timeout=600)
    total = EPOCHS * counting.STEPS_PER_EPOCH
    kills = [_run_and_kill(_counting_command(split_dir), split_dir,
                           at_step=at_step, log=log)
             for at_step in (total // 10, total // 2)]
    assert 0 < kills[0] < kills[1] < total, kills
    subprocess.run(_counting_command(split_dir), env=_cluster.task_env(),
                   stdout=log, stderr=subprocess.STDOUT, check=True,
                   timeout=600)
  whole_counts, whole = _counts_and_weights(whole_dir)
  split_counts, split = _counts_and_weights(split_dir)
  np.testing.assert_array_equal(whole_counts, EPOCHS)
  np.testing.assert_array_equal(split_counts, EPOCHS)
  assert whole.keys() == split.keys()
  for name in whole:
    np.testing.assert_allclose(split[name], whole[name], atol=1e-5, rtol=0,
                               err_msg=name)


MWMS_EPOCHS = 60


def test_multi_worker_sigkilled_worker_resumes_exactly(tmp_path):
  """multi_worker_mirrored, 2 workers, --checkpoint_input: worker:1 SIGKILLed
  mid-run, the launcher restarts both, and the run ends with the weights
  of an uninterrupted one (1e-5), every example seen once per epoch. The
  chief's saved iterator resumes both workers: each iterates the same
  global batches and takes its replica's rows."""
  total = MWMS_EPOCHS * counting.STEPS_PER_EPOCH
  args = _counting_command(tmp_path / 'x', epochs=MWMS_EPOCHS)[3:] + [
      '--mode=train_and_evaluate', '--eval_steps=2', '--exporters=',
      '--distribution_strategy=multi_worker_mirrored']

  def with_model_dir(model_dir):
    return [a for a in args if not a.startswith('--model_dir=')] + [
        f'--model_dir={model_dir}']

  whole_dir, split_dir = tmp_path / 'whole', tmp_path / 'split'
  (tmp_path / 'w').mkdir()
  whole = _cluster.run_launcher(tmp_path / 'w', args=with_model_dir(whole_dir),
                                workers=2)
  assert whole.launcher_code == 0, whole.tail()
  launcher = _cluster.start_launcher(
      tmp_path, args=with_model_dir(split_dir), workers=2,
      launcher_args=['--max_restarts=1', '--grace_secs=30'])
  try:
    deadline = time.monotonic() + 300
    while _newest_step(split_dir) < total // 3:
      assert launcher.process.poll() is None, launcher.output()[-6000:]
      assert time.monotonic() < deadline, launcher.output()[-6000:]
      time.sleep(0.01)
    os.kill(launcher.pids()['worker:1'], signal.SIGKILL)
    run = launcher.wait(timeout=400)
  finally:
    launcher.stop()
  assert run.launcher_code == 0, run.tail()
  assert run.status['failure_restarts'] == 1, run.tail()
  assert 'Restored ' in run.log('worker:1'), run.tail()
  whole_counts, whole_weights = _counts_and_weights(whole_dir, total)
  split_counts, split_weights = _counts_and_weights(split_dir, total)
  np.testing.assert_array_equal(whole_counts, MWMS_EPOCHS)
  np.testing.assert_array_equal(split_counts, MWMS_EPOCHS)
  for name in whole_weights:
    np.testing.assert_allclose(split_weights[name], whole_weights[name],
                               atol=1e-5, rtol=0, err_msg=name)


def test_multi_worker_inputs_that_differ_are_refused(tmp_path):
  """An unseeded shuffle without tf_random_seed gives each worker its own
  order: with checkpoint_input every worker must read the same global
  batches, so both workers refuse (exit 2) before model_dir is written."""
  model_dir = tmp_path / 'model'
  args = [a for a in _counting_command(model_dir, epochs=2)[3:]
          if not a.startswith(('--tf_random_seed', '--deterministic_ops'))
          ] + [
              '--mode=train_and_evaluate', '--eval_steps=1', '--exporters=',
              '--distribution_strategy=multi_worker_mirrored',
              '--params={"unseeded": true}']
  run = _cluster.run_launcher(tmp_path, args=args, workers=2)
  assert run.launcher_code == 2, run.tail()
  assert 'gave different first batches' in run.output, run.tail()
  assert not [n for n in os.listdir(model_dir)
              if n.startswith('model.ckpt')] if model_dir.exists() else True
