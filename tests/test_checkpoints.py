"""Loops and checkpoints: where loops end, which checkpoints exist, resuming
(also after the training process was killed), warm starts, and refusing a
model_dir that holds another model.
"""

import json
import os
import signal
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
import _models as M
from conftest import run_python

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


def _estimator(model_dir, **config):
  return ert.Estimator(M.make_model_fn(optimizer='adam', lr=0.01),
                       model_dir=str(model_dir),
                       config=M.quiet_config(**config))


def _input_fn(n=32, batch_size=8):
  x, y = M.make_data(n)
  return M.global_input_fn(x, y, batch_size=batch_size)


# ------------------------------------------------------------------ loops
def test_checkpoints_cut_loops_at_their_steps(tmp_path):
  recorder = M.LoopRecorder()
  est = _estimator(tmp_path, steps_per_loop=100, save_checkpoints_steps=30)
  est.train(_input_fn(), hooks=[recorder], max_steps=100)
  assert recorder.steps == [30, 60, 90, 100]
  # And the state training started from, as tf.estimator 2.15 saved it.
  assert M.checkpoint_steps(tmp_path) == [0, 30, 60, 90, 100]
  for step in (30, 60, 90, 100):
    assert M.read_global_step(M.ckpt_path(tmp_path, step)) == step
  assert est.latest_checkpoint() == M.ckpt_path(tmp_path, 100)


def test_steps_per_loop_is_respected(tmp_path):
  recorder = M.LoopRecorder()
  est = _estimator(tmp_path, steps_per_loop=7, save_checkpoints_secs=3600)
  est.train(_input_fn(), hooks=[recorder], max_steps=30)
  assert recorder.steps == [7, 14, 21, 28, 30]
  assert [r.steps for r in recorder.results] == [7, 7, 7, 7, 2]
  # The start and the end: no step-based saves, the hour never passed.
  assert M.checkpoint_steps(tmp_path) == [0, 30]


def test_keep_checkpoint_max_is_honoured_across_runs(tmp_path):
  est = _estimator(tmp_path, keep_checkpoint_max=2)
  est.train(_input_fn(), max_steps=50)
  assert M.checkpoint_steps(tmp_path) == [40, 50]
  state = tf.train.get_checkpoint_state(str(tmp_path))
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
      'model.ckpt-40', 'model.ckpt-50']
  # A new run in the same model_dir keeps deleting the old ones.
  _estimator(tmp_path, keep_checkpoint_max=2).train(_input_fn(), max_steps=70)
  assert M.checkpoint_steps(tmp_path) == [60, 70]


def test_train_to_max_steps_twice_does_nothing_the_second_time(tmp_path):
  calls = []
  x, y = M.make_data(32)

  def input_fn():
    calls.append(1)
    return M.no_autotune(
        tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(8))

  est = _estimator(tmp_path)
  est.train(input_fn, max_steps=20)
  before = M.snapshot_tree(str(tmp_path))
  calls.clear()
  recorder = M.LoopRecorder()
  again = _estimator(tmp_path)
  start = time.time()
  again.train(input_fn, hooks=[recorder], max_steps=20)
  elapsed = time.time() - start
  assert recorder.results == []
  assert calls == []  # Not even the input_fn ran: nothing to train.
  assert M.snapshot_tree(str(tmp_path)) == before
  assert M.read_global_step(again.latest_checkpoint()) == 20
  assert elapsed < 2.0, elapsed
  # A smaller max_steps does nothing either.
  again.train(input_fn, max_steps=5)
  assert M.snapshot_tree(str(tmp_path)) == before


def test_train_steps_adds_steps(tmp_path):
  est = _estimator(tmp_path)
  est.train(_input_fn(), steps=15)
  assert M.read_global_step(est.latest_checkpoint()) == 15
  est.train(_input_fn(), steps=10)
  assert M.read_global_step(est.latest_checkpoint()) == 25
  assert M.checkpoint_steps(tmp_path) == [0, 10, 15, 20, 25]
  # A new Estimator on the same model_dir resumes from 25.
  _estimator(tmp_path).train(_input_fn(), steps=3)
  assert est.latest_checkpoint() == M.ckpt_path(tmp_path, 28)
  assert M.read_global_step(est.latest_checkpoint()) == 28


@pytest.mark.parametrize('kwargs,match', [
    (dict(steps=5, max_steps=10), 'Can not provide both steps and max_steps'),
    (dict(steps=0), 'steps=0'),
    (dict(max_steps=-1), 'max_steps=-1'),
    (dict(steps=float('nan')), 'steps=nan'),
])
def test_bad_step_arguments(tmp_path, kwargs, match):
  est = _estimator(tmp_path / 'm')
  with pytest.raises(ert.UserInputError, match=match):
    est.train(_input_fn(), **kwargs)
  assert not (tmp_path / 'm').exists() or not os.listdir(tmp_path / 'm')


def test_a_fractional_step_count_trains_up_to_the_next_whole_step(tmp_path):
  # As tf.estimator 2.15's StopAtStepHook, which programs relied on
  # (steps=num_examples / batch_size).
  est = _estimator(tmp_path)
  est.train(_input_fn(), steps=2.5)
  assert M.read_global_step(est.latest_checkpoint()) == 3
  est.train(_input_fn(), max_steps=4.2)
  assert M.read_global_step(est.latest_checkpoint()) == 5


def test_finite_input_ends_training_with_a_final_checkpoint(tmp_path):
  recorder = M.LoopRecorder()
  x, y = M.make_data(56)
  est = _estimator(tmp_path, steps_per_loop=5, save_checkpoints_steps=1000)
  est.train(M.global_input_fn(x, y, batch_size=8, repeat=False),
            hooks=[recorder], max_steps=100)
  assert recorder.steps == [5, 7]
  assert M.checkpoint_steps(tmp_path) == [0, 7]
  assert M.read_global_step(est.latest_checkpoint()) == 7


def test_finite_input_ending_on_a_loop_boundary(tmp_path):
  x, y = M.make_data(80)
  est = _estimator(tmp_path, steps_per_loop=5, save_checkpoints_steps=1000)
  est.train(M.global_input_fn(x, y, batch_size=8, repeat=False))
  assert M.checkpoint_steps(tmp_path) == [0, 10]
  assert M.read_global_step(est.latest_checkpoint()) == 10


def test_saving_listeners_see_every_save(tmp_path):
  saved = []
  est = _estimator(tmp_path, save_checkpoints_steps=20)
  est.train(_input_fn(), max_steps=50,
            saving_listeners=[lambda path, step: saved.append((path, step))])
  assert saved == [(M.ckpt_path(tmp_path, s), s) for s in (0, 20, 40, 50)]


def test_saving_listener_returning_true_stops_training(tmp_path):
  est = _estimator(tmp_path, save_checkpoints_steps=10)
  est.train(_input_fn(), max_steps=100,
            saving_listeners=[lambda path, step: step >= 20])
  assert M.checkpoint_steps(tmp_path) == [0, 10, 20]
  assert M.read_global_step(est.latest_checkpoint()) == 20


# -------------------------------------------------------- kill and resume
_TRAIN_SCRIPT = textwrap.dedent('''
    import json, os, signal, sys
    sys.path.insert(0, {tests_dir!r})
    import estimator_rt as ert
    import _models as M

    model_dir, max_steps, kill_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    x, y = M.make_data(32, noise=0.3)

    class Hook(ert.Hook):
      def begin(self, *, global_step, max_steps):
        print(json.dumps({{'begin': global_step}}), flush=True)

      def after_loop(self, result):
        if kill_at and result.global_step >= kill_at:
          os.kill(os.getpid(), signal.SIGKILL)

    est = ert.Estimator(
        M.make_model_fn(optimizer='adam', lr=0.01), model_dir=model_dir,
        config=M.quiet_config(steps_per_loop=10, save_checkpoints_steps=20))
    est.train(M.full_batch_input_fn(x, y), hooks=[Hook()], max_steps=max_steps)
    print(json.dumps({{'end': est.latest_checkpoint()}}), flush=True)
''')


def test_resume_after_the_process_was_killed(tmp_path):
  script = tmp_path / 'train.py'
  script.write_text(_TRAIN_SCRIPT.format(tests_dir=TESTS_DIR))
  model_dir = tmp_path / 'model'

  killed = run_python([str(script), str(model_dir), '100', '50'], timeout=120)
  assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
  # Killed after the loop ending at step 50 ran, before anything saved it.
  assert M.checkpoint_steps(model_dir) == [0, 20, 40]
  at_40 = M.read_model_variables(M.ckpt_path(model_dir, 40))

  resumed = run_python([str(script), str(model_dir), '100', '0'], timeout=120)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  events = [json.loads(line) for line in resumed.stdout.splitlines()
            if line.startswith('{')]
  assert events[0] == {'begin': 40}
  assert events[-1] == {'end': M.ckpt_path(model_dir, 100)}
  assert M.checkpoint_steps(model_dir) == [0, 20, 40, 60, 80, 100]
  assert M.read_global_step(M.ckpt_path(model_dir, 100)) == 100
  # ckpt-40 was not rewritten by the resumed run.
  for a, b in zip(at_40, M.read_model_variables(M.ckpt_path(model_dir, 40))):
    np.testing.assert_array_equal(a, b)

  # Every step sees the same full batch, so killed + resumed (model and
  # Adam state restored from ckpt-40) equals one uninterrupted run.
  x, y = M.make_data(32, noise=0.3)
  reference = ert.Estimator(
      M.make_model_fn(optimizer='adam', lr=0.01),
      model_dir=str(tmp_path / 'reference'),
      config=M.quiet_config(steps_per_loop=10, save_checkpoints_steps=20))
  reference.train(M.full_batch_input_fn(x, y), max_steps=100)
  for got, want in zip(M.read_model_variables(M.ckpt_path(model_dir, 100)),
                       M.read_model_variables(reference.latest_checkpoint())):
    np.testing.assert_allclose(got, want, atol=1e-5)


# ------------------------------------------------------------ warm start
def test_warm_start_copies_model_variables_not_the_global_step(tmp_path):
  source = _estimator(tmp_path / 'source')
  source.train(_input_fn(), max_steps=30)
  trained = M.read_model_variables(source.latest_checkpoint())
  assert not np.allclose(trained[0], M.initial_weights()[0])

  # Learning rate 0: whatever the target trains, its weights stay at the
  # values it started from, which must be the source's.
  target = ert.Estimator(M.make_model_fn(optimizer='sgd', lr=0.0),
                         model_dir=str(tmp_path / 'target'),
                         warm_start_from=str(tmp_path / 'source'),
                         config=M.quiet_config())
  target.train(_input_fn(), steps=5)
  ckpt = target.latest_checkpoint()
  assert ckpt == M.ckpt_path(tmp_path / 'target', 5)
  assert M.read_global_step(ckpt) == 5
  for got, want in zip(M.read_model_variables(ckpt), trained):
    np.testing.assert_array_equal(got, want)
  # Optimizer state is not copied: the SGD iteration counter counts only
  # the target's 5 steps (the source's Adam counted 30).
  reader = tf.train.load_checkpoint(ckpt)
  assert int(reader.get_tensor('optimizer/0/.ATTRIBUTES/VARIABLE_VALUE')) == 5


def test_warm_start_from_a_checkpoint_path(tmp_path):
  source = _estimator(tmp_path / 'source', keep_checkpoint_max=0)
  source.train(_input_fn(), max_steps=20)
  at_10 = M.read_model_variables(M.ckpt_path(tmp_path / 'source', 10))
  target = ert.Estimator(M.make_model_fn(optimizer='sgd', lr=0.0),
                         model_dir=str(tmp_path / 'target'),
                         warm_start_from=M.ckpt_path(tmp_path / 'source', 10),
                         config=M.quiet_config())
  target.train(_input_fn(), steps=2)
  for got, want in zip(M.read_model_variables(target.latest_checkpoint()),
                       at_10):
    np.testing.assert_array_equal(got, want)


def test_warm_start_is_ignored_once_model_dir_has_a_checkpoint(tmp_path):
  source = _estimator(tmp_path / 'source')
  source.train(_input_fn(), max_steps=30)
  own = _estimator(tmp_path / 'target')
  own.train(_input_fn(), max_steps=10)
  at_10 = M.read_model_variables(own.latest_checkpoint())
  resumed = ert.Estimator(M.make_model_fn(optimizer='adam', lr=0.0),
                          model_dir=str(tmp_path / 'target'),
                          warm_start_from=str(tmp_path / 'source'),
                          config=M.quiet_config())
  resumed.train(_input_fn(), max_steps=12)
  assert M.read_global_step(resumed.latest_checkpoint()) == 12
  for got, want in zip(M.read_model_variables(resumed.latest_checkpoint()),
                       at_10):
    np.testing.assert_array_equal(got, want)


def test_warm_start_from_another_model_is_refused(tmp_path):
  ert.Estimator(_other_model_fn, model_dir=str(tmp_path / 'other'),
                config=M.quiet_config()).train(_input_fn(), max_steps=5)
  target = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'target'),
                         warm_start_from=str(tmp_path / 'other'),
                         config=M.quiet_config())
  with pytest.raises(ert.IncompatibleCheckpointError, match='warm_start_from'):
    target.train(_input_fn(), max_steps=5)
  assert not (tmp_path / 'target').exists() or not os.listdir(
      tmp_path / 'target')


def test_warm_start_from_nothing_is_refused(tmp_path):
  target = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'target'),
                         warm_start_from=str(tmp_path / 'missing'),
                         config=M.quiet_config())
  with pytest.raises(ert.UserInputError, match='warm_start_from'):
    target.train(_input_fn(), max_steps=5)
  assert not (tmp_path / 'target').exists() or not os.listdir(
      tmp_path / 'target')


def test_resume_with_another_optimizer_keeps_the_model(tmp_path):
  _estimator(tmp_path).train(_input_fn(), max_steps=10)  # Adam.
  at_10 = M.read_model_variables(M.ckpt_path(tmp_path, 10))
  sgd = ert.Estimator(M.make_model_fn(optimizer='sgd', lr=0.0),
                      model_dir=str(tmp_path), config=M.quiet_config())
  sgd.train(_input_fn(), max_steps=15)
  assert M.read_global_step(sgd.latest_checkpoint()) == 15
  for got, want in zip(M.read_model_variables(sgd.latest_checkpoint()),
                       at_10):
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------- incompatible model_dir
def _other_model_fn(features, labels, mode):
  import keras  # pylint: disable=g-import-not-at-top
  out = keras.layers.Dense(1)(features['x'])  # Not the Dense(8)->Dense(1) MLP.
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions=out)
  loss = tf.reduce_mean(tf.square(out - labels))
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=keras.optimizers.SGD(0.1))


def test_checkpoint_of_another_model_is_refused_and_nothing_changes(tmp_path):
  _estimator(tmp_path).train(_input_fn(), max_steps=20)
  os.utime(tmp_path, ns=(1, 1))  # Make any later change to the dir visible.
  before = M.snapshot_tree(str(tmp_path))

  est = ert.Estimator(_other_model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config())
  with pytest.raises(ert.IncompatibleCheckpointError) as info:
    est.train(_input_fn(), max_steps=40)
  message = str(info.value)
  assert str(tmp_path) in message and 'model.ckpt-20' in message, message
  x, y = M.make_data(8)
  with pytest.raises(ert.IncompatibleCheckpointError):
    est.evaluate(M.global_input_fn(x, y, batch_size=4, repeat=False))
  with pytest.raises(ert.IncompatibleCheckpointError):
    list(est.predict(M.global_input_fn(x, batch_size=4, repeat=False)))
  with pytest.raises(ert.IncompatibleCheckpointError):
    est.export_saved_model(str(tmp_path / 'export'),
                           input_fn=M.global_input_fn(x, batch_size=4))
  assert M.snapshot_tree(str(tmp_path)) == before


def test_checkpoint_of_a_same_sized_model_names_the_shapes(tmp_path):
  _estimator(tmp_path).train(_input_fn(), max_steps=10)
  before = M.snapshot_tree(str(tmp_path))
  weights = M.initial_weights(hidden=3)

  def narrow_model_fn(features, labels, mode):
    out = M.build_keras_model(weights)(features['x'])  # Dense(3), not 8.
    loss = tf.reduce_mean(tf.square(out - labels))
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=M.make_optimizer('adam', 0.01))

  est = ert.Estimator(narrow_model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config())
  with pytest.raises(ert.IncompatibleCheckpointError,
                     match='different model') as info:
    est.train(_input_fn(), max_steps=20)
  message = str(info.value)
  assert '#0' in message and '(4, 8)' in message and '(4, 3)' in message, (
      message)
  assert M.snapshot_tree(str(tmp_path)) == before


def test_checkpoint_not_written_by_estimator_rt_is_refused(tmp_path):
  tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / 'model.ckpt'))
  # tf.train.Checkpoint.save names it model.ckpt-1 and writes `checkpoint`.
  before = M.snapshot_tree(str(tmp_path))
  est = _estimator(tmp_path)
  # 2.15's restore raised NotFoundError for the variables it lacks, with
  # these words first.
  with pytest.raises(tf.errors.NotFoundError, match='^Restoring from '
                     'checkpoint failed.*global_step') as info:
    est.train(_input_fn(), max_steps=5)
  assert isinstance(info.value, ert.IncompatibleCheckpointError)
  assert M.snapshot_tree(str(tmp_path)) == before


def test_a_checkpoint_the_state_file_names_in_another_scheme_is_taken(
    tmp_path):
  """A library's own Saver (AdaNet's `increment.ckpt-<iteration>`) names
  its checkpoint in the state file: tf.estimator's latest_checkpoint() took
  it, and so does the runtime, at the global step it holds (not the number
  its name ends in), before a model.ckpt at the same step."""
  from estimator_rt.core import checkpoints  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path)
  with tf.Graph().as_default():
    step = tf.compat.v1.train.get_or_create_global_step()
    weight = tf.compat.v1.get_variable('w', initializer=1.0)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      session.run(step.assign(10))
      saver = tf.compat.v1.train.Saver()
      saver.save(session, os.path.join(model_dir, 'model.ckpt'),
                 global_step=10)
      session.run(weight.assign(2.0))
      # The library's save: the state file now names it.
      saver.save(session, os.path.join(model_dir, 'increment.ckpt-1'))
  latest = checkpoints.latest_checkpoint(model_dir)
  assert latest == os.path.join(model_dir, 'increment.ckpt-1')
  assert tf.train.latest_checkpoint(model_dir) == latest
  assert checkpoints.checkpoint_step(latest) == 10
  assert checkpoints.checkpoint_step(
      os.path.join(model_dir, 'model.ckpt-10')) == 10


def test_a_checkpoints_data_files_are_its_own_shards_wherever_it_is(tmp_path):
  """`data_files` lists one prefix's `.data-*` shards, sorted: not those
  of a prefix it starts (step 10's beside step 1's), its directory's name
  taken as it is (glob's `[` and `]` in it), nothing for a missing
  directory; a remote prefix (TensorFlow's `ram://`) through gfile."""
  from estimator_rt.core import checkpoints  # pylint: disable=g-import-not-at-top
  directory = tmp_path / 'run[1]'
  directory.mkdir()
  for name in ('model.ckpt-1.data-00001-of-00002',
               'model.ckpt-1.data-00000-of-00002', 'model.ckpt-1.index',
               'model.ckpt-1.meta', 'model.ckpt-10.data-00000-of-00001'):
    (directory / name).write_bytes(b'')
  prefix = str(directory / 'model.ckpt-1')
  assert checkpoints.data_files(prefix) == [
      prefix + '.data-00000-of-00002', prefix + '.data-00001-of-00002']
  assert checkpoints.data_files(str(directory / 'model.ckpt-2')) == []
  assert checkpoints.data_files(str(tmp_path / 'gone' / 'model.ckpt-1')) == []
  remote = 'ram://data_files_test/model.ckpt-3'
  with tf.io.gfile.GFile(remote + '.data-00000-of-00001', 'wb') as f:
    f.write(b'')
  assert checkpoints.data_files(remote) == [remote + '.data-00000-of-00001']
