"""model_dir never loses work: faults injected for real, model_dir checked.

NaN injected at a chosen global step (first, middle and last step of a
compiled loop, right before a save, in the loss or only in a gradient);
checkpoint files truncated, overwritten and deleted on disk; the state file
deleted, stale, empty or garbage; leftovers of interrupted saves; a process
killed with SIGKILL in the middle of a save; a full and a read-only
model_dir. Each test then asserts on the files: every checkpoint left
restores and is finite, training resumed from the newest readable one,
nothing that was good was overwritten, nothing is left behind.
"""

import ctypes
import errno
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.core import checkpoints

from _models import build_keras_model
from _models import checkpoint_steps
from _models import ckpt_path
from _models import full_batch_input_fn
from _models import initial_weights
from _models import LoopRecorder
from _models import make_data
from _models import quiet_config
from _models import read_global_step
from _models import read_model_variables
from _models import snapshot_tree
from conftest import REPO_ROOT
import _cluster

X, Y = make_data(32, seed=3)


# ------------------------------------------------------------- helpers
@tf.custom_gradient
def _scale_gradient(x, factor):
  """Identity forward; the gradient flowing back is multiplied by factor."""

  def grad(dy):
    return dy * factor, tf.zeros_like(factor)

  return tf.identity(x), grad


def nan_model_fn(nan_at_step=None, *, where='loss', replica=None):
  """The tiny regressor of _models, poisoned at global step `nan_at_step`.

  Args:
    nan_at_step: the step (1-based: the global step after it) that gets a
      NaN; None poisons nothing.
    where: 'loss' multiplies the loss by NaN (loss and gradients NaN);
      'gradient' multiplies only the gradient by NaN (the loss of that step
      stays finite, the weights after it are NaN).
    replica: poison only this replica (None: all).
  """
  weights = initial_weights(0)

  def model_fn(features, labels, mode):
    out = build_keras_model(weights)(features['x'])
    if mode == ert.ModeKeys.PREDICT:
      return ert.EstimatorSpec(mode, predictions={'y': out})
    if mode == ert.ModeKeys.TRAIN and nan_at_step is not None:
      # The global step is incremented after the replica step: this step
      # is number global_step + 1.
      hit = tf.equal(ert.get_global_step() + 1, nan_at_step)
      if replica is not None:
        context = tf.distribute.get_replica_context()
        # The build call runs in cross-replica context (no replica id).
        replica_id = context.replica_id_in_sync_group if context else 0
        hit = tf.logical_and(hit, tf.equal(replica_id, replica))
      factor = tf.where(hit, float('nan'), 1.0)
      if where == 'gradient':
        out = _scale_gradient(out, factor)
    loss = tf.reduce_mean(tf.square(out - labels))
    if mode == ert.ModeKeys.TRAIN and nan_at_step is not None and (
        where == 'loss'):
      loss = loss * factor
    if mode == ert.ModeKeys.EVAL:
      return ert.EstimatorSpec(mode, loss=loss)
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=tf.keras.optimizers.SGD(0.05))

  return model_fn


def graph_nan_model_fn(nan_at_step=None, *, where='loss'):
  """nan_model_fn's regressor written TF1-style, for the graph engine: the
  same layers and starting weights in `tf.compat.v1` variables, SGD 0.05
  through `minimize(global_step=...)`, poisoned the same way. The initial
  values are NumPy arrays, not tensors, so that training runs in the
  in-graph loop (a tensor made in the step cannot be lifted out of it)."""
  weights = initial_weights(0)

  def dense(name, x, index, activation=None):
    kernel = tf.compat.v1.get_variable(f'{name}/kernel',
                                       initializer=weights[index])
    bias = tf.compat.v1.get_variable(f'{name}/bias',
                                     initializer=weights[index + 1])
    y = tf.matmul(x, kernel) + bias
    return activation(y) if activation else y

  def model_fn(features, labels, mode):
    out = dense('out', dense('hidden', features['x'], 0, tf.tanh), 2)
    if mode == ert.ModeKeys.PREDICT:
      return ert.EstimatorSpec(mode, predictions={'y': out})
    global_step = tf.compat.v1.train.get_global_step()
    factor = tf.constant(1.0)
    if mode == ert.ModeKeys.TRAIN and nan_at_step is not None:
      # Read before this step's increment: this step is global_step + 1.
      hit = tf.equal(global_step + 1, nan_at_step)
      factor = tf.where(hit, float('nan'), 1.0)
      if where == 'gradient':
        out = _scale_gradient(out, factor)
    loss = tf.reduce_mean(tf.square(out - labels))
    if where == 'loss':
      loss = loss * factor
    if mode == ert.ModeKeys.EVAL:
      return ert.EstimatorSpec(mode, loss=loss)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
        loss, global_step=global_step)
    return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)

  return model_fn


# The same poisoned regressor for each engine (see engine_choice.py).
NAN_MODEL_FNS = {'eager': nan_model_fn, 'graph': graph_nan_model_fn}
ENGINES = sorted(NAN_MODEL_FNS)


def estimator(model_dir, model_fn=None, *, engine='eager', **config):
  return ert.Estimator(model_fn or NAN_MODEL_FNS[engine](),
                       model_dir=str(model_dir),
                       config=quiet_config(**config))


def input_fn():
  return full_batch_input_fn(X, Y)()


def assert_every_checkpoint_usable(model_dir):
  """Every checkpoint in model_dir reads back whole and finite."""
  steps = checkpoint_steps(model_dir)
  assert steps, f'no checkpoint in {model_dir}'
  for step in steps:
    path = ckpt_path(model_dir, step)
    checkpoints._checked.pop(path, None)  # Read the files again.
    assert checkpoints.problem_with(path) is None, (path,
                                                    checkpoints.problem_with(path))
    reader = tf.train.load_checkpoint(path)
    for key in reader.get_variable_to_shape_map():
      value = np.asarray(reader.get_tensor(key))
      if value.dtype.kind == 'f':
        assert np.all(np.isfinite(value)), (path, key)


def assert_no_leftovers(model_dir):
  names = os.listdir(model_dir)
  leftovers = [n for n in names if '_temp' in n or 'tempstate' in n or
               n.startswith('checkpoint.tmp')]
  assert not leftovers, leftovers
  for name in names:
    data = re.fullmatch(r'(model\.ckpt-\d+)\.data-\d+-of-\d+', name)
    if data:
      assert data.group(1) + '.index' in names, f'orphan {name}'


def file_digests(model_dir, steps):
  """{file name: bytes} of the checkpoints at `steps`."""
  result = {}
  for name in os.listdir(model_dir):
    match = re.match(r'model\.ckpt-(\d+)\.', name)
    if match and int(match.group(1)) in steps:
      with open(os.path.join(model_dir, name), 'rb') as f:
        result[name] = f.read()
  return result


def train_five_checkpoints(model_dir, engine='eager'):
  """Checkpoints at 10, 20, 30, 40, 50."""
  estimator(model_dir, engine=engine).train(input_fn, max_steps=50)
  assert checkpoint_steps(model_dir) == [0, 10, 20, 30, 40, 50]


def first_loop_step(recorder):
  return recorder.results[0].global_step - recorder.results[0].steps


IN_GRAPH_LOOP_LINE = 'runs its steps in an in-graph loop'


def assert_graph_engine_looped(engine, caplog):
  """The graph engine ran the faulty training in its in-graph loop (so the
  test covers faults inside a session run of many steps)."""
  if engine == 'graph':
    assert IN_GRAPH_LOOP_LINE in caplog.text


@pytest.fixture
def info_logs(caplog):
  # An earlier test that parsed absl flags leaves absl at WARNING.
  caplog.set_level('INFO', logger='absl')
  return caplog


# ----------------------------------------------------------------- NaN
@pytest.mark.parametrize('engine', ENGINES)
@pytest.mark.parametrize('nan_at_step, where, reported, newest', [
    (21, 'loss', 'global step 21', 20),       # first step of a loop
    (25, 'loss', 'global step 25', 20),       # middle of a loop
    (30, 'loss', 'global step 30', 20),       # last step of a loop
    (40, 'loss', 'global step 40', 20),       # the step a save is due at
    (39, 'gradient', 'global step 40', 20),   # weights NaN right before a save
    (40, 'gradient', 'global steps 31-40', 20),  # loss finite, weights NaN
])
def test_nan_stops_at_its_step_and_never_reaches_a_checkpoint(
    tmp_path, nan_at_step, where, reported, newest, engine, info_logs):
  model_dir = tmp_path / 'm'
  poisoned = NAN_MODEL_FNS[engine](nan_at_step, where=where)
  with pytest.raises(ert.NanLossError) as raised:
    estimator(model_dir, poisoned,
              save_checkpoints_steps=20).train(input_fn, max_steps=60)
  message = str(raised.value)
  assert reported in message, message
  assert f'newest checkpoint, at step {newest}' in message, message
  assert_graph_engine_looped(engine, info_logs)
  assert checkpoint_steps(model_dir) == [0, 20]
  assert_every_checkpoint_usable(model_dir)
  # The same command, input fixed, carries on from the last finite one.
  recorder = LoopRecorder()
  estimator(model_dir, engine=engine, save_checkpoints_steps=20).train(
      input_fn, hooks=[recorder], max_steps=60)
  assert first_loop_step(recorder) == 20
  assert checkpoint_steps(model_dir) == [0, 20, 40, 60]
  assert_every_checkpoint_usable(model_dir)
  assert_no_leftovers(model_dir)


@pytest.mark.parametrize('engine', ENGINES)
def test_a_run_diverging_before_its_first_save_keeps_only_its_start(
    tmp_path, engine):
  # The state it started from was saved when it started (model.ckpt-0, as
  # tf.estimator 2.15 saved it); nothing from the diverged loop.
  model_dir = tmp_path / 'm'
  with pytest.raises(ert.NanLossError, match='global step 2'):
    estimator(model_dir, NAN_MODEL_FNS[engine](2, where='loss'),
              save_checkpoints_steps=20).train(input_fn, max_steps=60)
  assert checkpoint_steps(model_dir) == [0]
  assert_every_checkpoint_usable(model_dir)


def _holding_infinity(model_fn, *, trainable):
  """`model_fn` with one more float variable, which the loss never reads,
  holding inf from the start: a best loss (`trainable=False`) or a
  weight."""

  def wrapped(features, labels, mode):
    tf.Variable(float('inf'), trainable=trainable, name='best_loss')
    return model_fn(features, labels, mode)

  return wrapped


@pytest.mark.parametrize('engine,trainable', [('eager', False),
                                              ('graph', False),
                                              ('graph', True)])
def test_an_infinity_held_from_the_start_trains_as_in_2_15(tmp_path, engine,
                                                           trainable):
  """An infinity is a value a program may keep (2.15 trained, saved and
  restored it): a variable that held it when training started, trainable
  or not, is not held to being finite (training/divergence.py); one that
  becomes NaN or infinite is (test_nan_stops_at_its_step...,
  tests/test_guards.py)."""
  model_dir = tmp_path / 'm'
  model_fn = _holding_infinity(NAN_MODEL_FNS[engine](), trainable=trainable)
  estimator(model_dir, model_fn).train(input_fn, max_steps=20)
  assert checkpoint_steps(model_dir) == [0, 10, 20]
  path = ckpt_path(model_dir, 20)
  assert checkpoints.problem_with(path) is None
  reader = tf.train.load_checkpoint(path)
  assert any(np.isposinf(reader.get_tensor(k)).all()
             for k in reader.get_variable_to_shape_map()
             if reader.get_variable_to_dtype_map()[k] == tf.float32)
  estimator(model_dir, model_fn).train(input_fn, max_steps=30)
  assert checkpoint_steps(model_dir) == [0, 10, 20, 30]


def test_nan_on_one_replica_stops_every_replica(tmp_path):
  model_dir = tmp_path / 'm'
  with pytest.raises(ert.NanLossError, match='global step 13'):
    estimator(model_dir, nan_model_fn(13, replica=1),
              train_distribute='mirrored').train(input_fn, max_steps=30)
  assert checkpoint_steps(model_dir) == [0, 10]
  assert_every_checkpoint_usable(model_dir)


def test_nan_input_through_the_binary_exits_1_with_one_line(tmp_path,
                                                            python_runner):
  """All-NaN features into the ready-made MLP: exit 1, one line, and no
  checkpoint of the diverged weights."""
  module = tmp_path / 'nan_input.py'
  module.write_text(
      'import numpy as np\n'
      'import tensorflow as tf\n'
      'def input_fn(params):\n'
      '  x = np.random.RandomState(0).rand(64, 8).astype(np.float32)\n'
      '  x[:, :] = np.nan\n'
      '  y = np.arange(64, dtype=np.int32) % 3\n'
      '  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat()'
      '.batch(16)\n')
  model_dir = tmp_path / 'm'
  result = python_runner([
      '-m', 'estimator_rt.main', '--model_fn=model_fns.mlp:model_fn',
      f'--input_fn={module}:input_fn', '--mode=train',
      f'--model_dir={model_dir}', '--max_steps=50',
      '--params={"num_classes": 3, "hidden_units": [8]}'])
  assert result.returncode == 1, result.stderr[-3000:]
  errors = [l for l in result.stderr.splitlines() if l.startswith('error:')]
  assert len(errors) == 1, result.stderr[-3000:]
  # The loss of the first step is NaN (seen with TensorFlow 2.21 and Keras
  # 3.15.1), or finite (seen with earlier releases) and the weights give
  # it away at the end of the first loop (of one step: the summaries are
  # due at step 1, as 2.15 wrote them; or of all 50).
  assert ('the loss was nan at global step 1' in errors[0] or
          re.search(r'NaN or infinite in global steps 1-(1|50)\b',
                    errors[0])), errors[0]
  assert 'Traceback' not in result.stderr
  # Nothing was saved from the diverged loop: only the state training
  # started from (model.ckpt-0, as tf.estimator 2.15 saved it).
  assert checkpoint_steps(model_dir) == [0]


def test_nan_on_one_worker_stops_every_worker_at_that_step(tmp_path):
  """multi_worker_mirrored: the loss is reduced across workers, so a NaN on
  worker 1 alone stops both at the same step, and the chief saves nothing
  after the last finite checkpoint."""
  module = _cluster.write_tiny_model(tmp_path)
  model_dir = str(tmp_path / 'model')
  params = {'batch_size': 16, 'nan_at_step': 150, 'nan_task': 'worker_1'}
  run = _cluster.run_launcher(
      tmp_path, workers=2, grace_secs=60, timeout_secs=180,
      args=_cluster.tiny_flags(module, params=params) + [
          '--distribution_strategy=multi_worker_mirrored',
          f'--model_dir={model_dir}', '--max_steps=300',
          '--save_checkpoints_steps=100', '--exporters='])
  assert run.codes == {'worker:0': 1, 'worker:1': 1}, run.tail()
  for task in ('worker:0', 'worker:1'):
    assert 'the loss was nan at global step 150' in run.log(task), (
        run.log(task)[-3000:])
  assert checkpoint_steps(model_dir) == [0, 100]
  assert_every_checkpoint_usable(model_dir)


# ------------------------------------------------- damaged checkpoints
def _data_file(model_dir, step):
  (name,) = [n for n in os.listdir(model_dir)
             if n.startswith(f'model.ckpt-{step}.data-')]
  return os.path.join(model_dir, name)


def _truncate(path, size):
  with open(path, 'r+b') as f:
    f.truncate(size)


def _flip_byte(path):
  with open(path, 'r+b') as f:
    data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    f.seek(0)
    f.write(bytes(data))


DAMAGE = {
    'truncated data': lambda d, s: _truncate(_data_file(d, s), 10),
    'deleted data': lambda d, s: os.remove(_data_file(d, s)),
    'overwritten data': lambda d, s: _flip_byte(_data_file(d, s)),
    'truncated index': lambda d, s: _truncate(ckpt_path(d, s) + '.index', 20),
    'garbage index': lambda d, s: open(ckpt_path(d, s) + '.index', 'wb').write(
        os.urandom(200)),
}


@pytest.mark.parametrize('engine', ENGINES)
@pytest.mark.parametrize('damage', sorted(DAMAGE))
def test_damaged_newest_checkpoint_falls_back_to_the_one_before(tmp_path,
                                                                damage,
                                                                engine,
                                                                info_logs):
  model_dir = str(tmp_path / 'm')
  train_five_checkpoints(model_dir, engine)
  intact = file_digests(model_dir, {10, 20, 30, 40})
  DAMAGE[damage](model_dir, 50)

  est = estimator(model_dir, engine=engine)
  assert est.latest_checkpoint() == ckpt_path(model_dir, 40)
  assert est.evaluate(input_fn, steps=1)['global_step'] == 40
  predictions = list(est.predict(
      lambda: tf.data.Dataset.from_tensor_slices({'x': X[:3]}).batch(3)))
  assert len(predictions) == 3
  recorder = LoopRecorder()
  est.train(input_fn, hooks=[recorder], max_steps=70)
  assert first_loop_step(recorder) == 40
  assert_graph_engine_looped(engine, info_logs)
  assert checkpoint_steps(model_dir) == [0, 10, 20, 30, 40, 50, 60, 70]
  assert read_global_step(ckpt_path(model_dir, 50)) == 50
  # The damaged files were moved aside, not destroyed; the good ones are
  # byte for byte what they were.
  assert os.listdir(os.path.join(model_dir, checkpoints.UNUSABLE_DIR))
  assert file_digests(model_dir, {10, 20, 30, 40}) == intact
  assert_every_checkpoint_usable(model_dir)
  assert_no_leftovers(model_dir)
  state = tf.train.get_checkpoint_state(model_dir)
  assert os.path.basename(state.model_checkpoint_path) == 'model.ckpt-70'


def test_resumed_weights_match_an_uninterrupted_run(tmp_path):
  """Resuming from the fallback checkpoint is exact (SGD, same batch)."""
  model_dir = str(tmp_path / 'm')
  train_five_checkpoints(model_dir)
  DAMAGE['truncated data'](model_dir, 50)
  estimator(model_dir).train(input_fn, max_steps=60)
  reference = str(tmp_path / 'ref')
  estimator(reference).train(input_fn, max_steps=60)
  for got, want in zip(read_model_variables(ckpt_path(model_dir, 60)),
                       read_model_variables(ckpt_path(reference, 60))):
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_warm_start_from_a_directory_skips_its_damaged_newest(tmp_path):
  source = str(tmp_path / 'source')
  train_five_checkpoints(source)
  DAMAGE['garbage index'](source, 50)
  target = str(tmp_path / 'target')
  est = ert.Estimator(nan_model_fn(), model_dir=target,
                      config=quiet_config(), warm_start_from=source)
  est.train(input_fn, max_steps=1)
  # Warm start copies weights, not the step: the source's step-40 weights
  # after one more step differ from a cold start's first step.
  cold = str(tmp_path / 'cold')
  estimator(cold).train(input_fn, max_steps=1)
  assert not np.allclose(read_model_variables(ckpt_path(target, 1))[0],
                         read_model_variables(ckpt_path(cold, 1))[0])


def test_no_usable_checkpoint_is_refused_and_nothing_is_touched(
    tmp_path, python_runner):
  model_dir = str(tmp_path / 'm')
  estimator(model_dir, save_checkpoints_steps=20).train(input_fn, max_steps=40)
  DAMAGE['truncated data'](model_dir, 40)
  DAMAGE['garbage index'](model_dir, 20)
  DAMAGE['garbage index'](model_dir, 0)  # The one saved at the start.
  before = snapshot_tree(model_dir)
  with pytest.raises(ert.UnusableCheckpointsError,
                     match='model.ckpt-40.*model.ckpt-20.*model.ckpt-0'
                     ) as info:
    estimator(model_dir).train(input_fn, max_steps=60)
  # What tf.estimator 2.15's restore of the newest raised: a truncated
  # .data reads short (tests/test_fault_lines.py), its words first.
  assert isinstance(info.value, tf.errors.OutOfRangeError)
  assert str(info.value).startswith('Read less bytes than requested: ')
  with pytest.raises(ert.UnusableCheckpointsError):
    estimator(model_dir).evaluate(input_fn, steps=1)
  assert snapshot_tree(model_dir) == before
  result = python_runner([
      '-m', 'estimator_rt.main', '--model_fn=model_fns.linear:model_fn',
      '--input_fn=input_fns.synthetic:linear_input_fn', '--mode=train',
      f'--model_dir={model_dir}', '--max_steps=60'])
  assert result.returncode == 2, result.stderr[-3000:]
  errors = [l for l in result.stderr.splitlines() if l.startswith('error:')]
  assert len(errors) == 1, result.stderr[-3000:]
  assert 'none can be used' in errors[0] and 'model.ckpt-40' in errors[0]
  assert snapshot_tree(model_dir) == before


def test_explicit_damaged_checkpoint_path_is_refused_by_name(tmp_path):
  model_dir = str(tmp_path / 'm')
  train_five_checkpoints(model_dir)
  DAMAGE['overwritten data'](model_dir, 30)
  with pytest.raises(ert.UserInputError, match=r'model.ckpt-30.*cannot be used'):
    estimator(model_dir).evaluate(input_fn, steps=1,
                                  checkpoint_path=ckpt_path(model_dir, 30))


def test_a_checkpoint_holding_nan_is_skipped(tmp_path):
  """A model_dir an older version left a NaN checkpoint in recovers: the
  runtime cannot write one, so TensorFlow's raw save makes it here."""
  model_dir = str(tmp_path / 'm')
  train_five_checkpoints(model_dir)
  _poison_checkpoint(ckpt_path(model_dir, 50))
  assert 'NaN' in checkpoints.problem_with(ckpt_path(model_dir, 50))
  recorder = LoopRecorder()
  estimator(model_dir).train(input_fn, hooks=[recorder], max_steps=60)
  assert first_loop_step(recorder) == 40
  assert_every_checkpoint_usable(model_dir)


def _poison_checkpoint(prefix):
  """Rewrites checkpoint `prefix` in place with model/0's first value NaN,
  using TensorFlow's own raw save (every other tensor unchanged)."""
  reader = tf.train.load_checkpoint(prefix)
  names = sorted(reader.get_variable_to_shape_map())
  values = []
  for name in names:
    value = reader.get_tensor(name)
    if name == 'model/0/.ATTRIBUTES/VARIABLE_VALUE':
      value = np.array(value)
      value.flat[0] = np.nan
    values.append(tf.constant(value))
  for path in tf.io.gfile.glob(prefix + '.*'):
    tf.io.gfile.remove(path)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                    shape_and_slices=[''] * len(names), tensors=values)


# ----------------------------------------------------------- state file
STATE_FAULTS = {
    'deleted': lambda path: os.remove(path),
    'empty': lambda path: open(path, 'w').close(),
    'garbage': lambda path: open(path, 'wb').write(b'\x00\xff{not a proto'),
    'stale': lambda path: open(path, 'w').write(
        'model_checkpoint_path: "model.ckpt-90"\n'
        'all_model_checkpoint_paths: "model.ckpt-80"\n'
        'all_model_checkpoint_paths: "model.ckpt-90"\n'),
    'older': lambda path: open(path, 'w').write(
        'model_checkpoint_path: "model.ckpt-20"\n'),
}


@pytest.mark.parametrize('fault', sorted(STATE_FAULTS))
def test_state_file_fault_never_restarts_from_step_0(tmp_path, fault):
  model_dir = str(tmp_path / 'm')
  train_five_checkpoints(model_dir)
  intact = file_digests(model_dir, {10, 20, 30, 40, 50})
  STATE_FAULTS[fault](os.path.join(model_dir, 'checkpoint'))

  est = estimator(model_dir)
  assert est.evaluate(input_fn, steps=1)['global_step'] == 50
  recorder = LoopRecorder()
  est.train(input_fn, hooks=[recorder], max_steps=60)
  assert first_loop_step(recorder) == 50
  assert file_digests(model_dir, {10, 20, 30, 40, 50}) == intact
  # The next save rewrote the state file to match the disk.
  state = tf.train.get_checkpoint_state(model_dir)
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
      f'model.ckpt-{s}' for s in (0, 10, 20, 30, 40, 50, 60)]
  assert os.path.basename(state.model_checkpoint_path) == 'model.ckpt-60'
  assert_every_checkpoint_usable(model_dir)


def test_keep_checkpoint_max_counts_what_is_on_disk(tmp_path):
  """Without a state file the old checkpoints are still rotated out."""
  model_dir = str(tmp_path / 'm')
  train_five_checkpoints(model_dir)
  os.remove(os.path.join(model_dir, 'checkpoint'))
  estimator(model_dir, keep_checkpoint_max=3).train(input_fn, max_steps=70)
  assert checkpoint_steps(model_dir) == [50, 60, 70]


# ------------------------------------------------------------ leftovers
def test_leftovers_of_interrupted_saves_are_removed_at_start(tmp_path):
  model_dir = str(tmp_path / 'm')
  train_five_checkpoints(model_dir)
  temp_dir = os.path.join(model_dir, 'model.ckpt-60_temp')
  os.makedirs(temp_dir)
  with open(os.path.join(temp_dir, 'part-00000-of-00001.data-00000-of-00001'),
            'wb') as f:
    f.write(b'x' * 100)
  for name in ('model.ckpt-70.data-00000-of-00001',
               'model.ckpt-80.index.tempstate1234',
               'checkpoint.tmp0123abcd'):
    with open(os.path.join(model_dir, name), 'wb') as f:
      f.write(b'partial')
  intact = file_digests(model_dir, {10, 20, 30, 40, 50})
  recorder = LoopRecorder()
  estimator(model_dir).train(input_fn, hooks=[recorder], max_steps=60)
  assert first_loop_step(recorder) == 50
  assert file_digests(model_dir, {10, 20, 30, 40, 50}) == intact
  assert checkpoint_steps(model_dir) == [0, 10, 20, 30, 40, 50, 60]
  assert_no_leftovers(model_dir)
  assert_every_checkpoint_usable(model_dir)


_BIG_MODELS = {'eager': '''
import tensorflow as tf
import estimator_rt as ert

def model_fn(features, labels, mode):
  # A large variable makes each save take long enough to be killed in.
  big = tf.Variable(tf.zeros([30_000_000]), name='big')
  w = tf.Variable(tf.zeros([4, 1]), name='w')
  out = tf.matmul(features['x'], w) + 0.0 * big[0]
  loss = tf.reduce_mean(tf.square(out - labels))
  if mode == ert.ModeKeys.EVAL:
    return ert.EstimatorSpec(mode, loss=loss)
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=tf.keras.optimizers.SGD(0.01))

def input_fn():
  x = tf.random.stateless_normal([16, 4], seed=[1, 2])
  y = tf.reduce_sum(x, axis=1, keepdims=True)
  return tf.data.Dataset.from_tensors(({'x': x}, y)).repeat()
''', 'graph': '''
import tensorflow as tf
import estimator_rt as ert

def model_fn(features, labels, mode):
  # A large variable makes each save take long enough to be killed in.
  big = tf.compat.v1.get_variable(
      'big', [30_000_000], initializer=tf.compat.v1.zeros_initializer())
  w = tf.compat.v1.get_variable(
      'w', [4, 1], initializer=tf.compat.v1.zeros_initializer())
  out = tf.matmul(features['x'], w) + 0.0 * big[0]
  loss = tf.reduce_mean(tf.square(out - labels))
  if mode == ert.ModeKeys.EVAL:
    return ert.EstimatorSpec(mode, loss=loss)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
      loss, var_list=[w], global_step=tf.compat.v1.train.get_global_step())
  return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)

def input_fn():
  x = tf.random.stateless_normal([16, 4], seed=[1, 2])
  y = tf.reduce_sum(x, axis=1, keepdims=True)
  return tf.data.Dataset.from_tensors(({'x': x}, y)).repeat()
'''}


def _run_big_model_training(module, model_dir, max_steps):
  env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL='2')
  return subprocess.Popen(
      [sys.executable, '-m', 'estimator_rt.main', f'--model_fn={module}:model_fn',
       f'--input_fn={module}:input_fn', '--mode=train',
       f'--model_dir={model_dir}', f'--max_steps={max_steps}',
       # Loops of two steps: in the graph engine, two steps per session run
       # of the in-graph loop.
       '--save_checkpoints_steps=2', '--steps_per_loop=2',
       '--keep_checkpoint_max=0', '--save_summary_steps=0'],
      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize('engine', ENGINES)
def test_process_killed_in_the_middle_of_a_save_resumes_cleanly(tmp_path,
                                                               engine):
  module = tmp_path / 'big_model.py'
  module.write_text(_BIG_MODELS[engine])
  model_dir = str(tmp_path / 'm')
  process = _run_big_model_training(module, model_dir, max_steps=1000)
  killed_during_save = False
  try:
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
      names = os.listdir(model_dir) if os.path.isdir(model_dir) else []
      # Kill once at least two checkpoints are complete and the next save's
      # shard directory exists: the save is in flight.
      if (len(checkpoint_steps(model_dir)) >= 2 if names else False) and any(
          n.endswith('_temp') for n in names):
        process.send_signal(signal.SIGKILL)
        killed_during_save = True
        break
      time.sleep(0.002)
  finally:
    if process.poll() is None:
      process.kill()
    process.communicate(timeout=60)
  assert killed_during_save, 'never saw a save in flight'
  # The checkpoint the resume chooses (the runtime's own rule): a kill can
  # land after the save's .index is in place and before its data file is
  # (the graph engine's sharded Saver merges its shards into place), and
  # the resume goes back past that one.
  chosen = checkpoints.latest_checkpoint(model_dir)
  assert chosen is not None, checkpoint_steps(model_dir)
  newest = checkpoints.checkpoint_step(chosen)
  rerun = _run_big_model_training(module, model_dir, max_steps=newest + 2)
  try:
    _, stderr = rerun.communicate(timeout=180)
  finally:
    if rerun.poll() is None:
      rerun.kill()
  assert rerun.returncode == 0, stderr[-3000:]
  assert f'global step {newest}' in stderr  # Restored there, not step 0.
  if engine == 'graph':
    assert IN_GRAPH_LOOP_LINE in stderr
  assert checkpoint_steps(model_dir)[-1] == newest + 2
  assert_no_leftovers(model_dir)
  for step in checkpoint_steps(model_dir):
    assert checkpoints.problem_with(ckpt_path(model_dir, step)) is None


# ---------------------------------------------- full and read-only disks
@pytest.fixture
def small_filesystem(tmp_path):
  """A 600 KiB tmpfs mounted for the test (root only), unmounted after."""
  if os.geteuid() != 0:
    pytest.skip('mounting a small filesystem needs root')
  mount_point = str(tmp_path / 'small')
  os.makedirs(mount_point)
  result = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=600k', 'tmpfs',
                           mount_point], capture_output=True, text=True,
                          check=False)
  if result.returncode != 0:
    pytest.skip(f'cannot mount a tmpfs here: {result.stderr.strip()}')
  try:
    yield mount_point
  finally:
    # The tmpfs, and a bind mount a test put over it.
    while subprocess.run(['umount', '-l', mount_point],
                         capture_output=True, check=False).returncode == 0:
      pass


def mount_read_only_over(path):
  """Mounts a read-only copy of `path`'s filesystem over `path`, at once.

  A bind mount made read-only later (`mount --bind`, then `remount,ro`) is
  refused as busy once any thread opened a file for writing through it in
  between, as the runtime's background writers may. Linux's mount API
  (5.12 and later) makes the copy detached, sets it read-only, then attaches
  it, so that nothing can open a file through it before it is read-only.
  An older kernel gets the two steps.
  """
  try:
    _attach_read_only_copy(path)
  except OSError as e:
    if e.errno != errno.ENOSYS:
      raise
    for options in (['--bind'], ['-o', 'remount,ro,bind']):
      subprocess.run(['mount', *options, path, path], check=True)


def _attach_read_only_copy(path):
  """`open_tree`, `mount_setattr` and `move_mount` (see above)."""
  libc = ctypes.CDLL(None, use_errno=True)
  libc.syscall.restype = ctypes.c_long
  at_fdcwd, at_empty_path = -100, 0x1000
  open_tree_clone, o_cloexec, mount_attr_rdonly = 1, 0o2000000, 1
  move_mount_f_empty_path = 0x4
  sys_open_tree, sys_move_mount, sys_mount_setattr = 428, 429, 442

  def check(result, what):
    if result < 0:
      error = ctypes.get_errno()
      raise OSError(error, f'{what} {path}: {os.strerror(error)}')
    return result

  tree = check(libc.syscall(sys_open_tree, at_fdcwd, path.encode(),
                            open_tree_clone | o_cloexec), 'open_tree')
  try:
    # struct mount_attr: attr_set, attr_clr, propagation, userns_fd.
    attributes = (ctypes.c_uint64 * 4)(mount_attr_rdonly, 0, 0, 0)
    check(libc.syscall(sys_mount_setattr, tree, b'', at_empty_path,
                       ctypes.byref(attributes),
                       ctypes.sizeof(attributes)), 'mount_setattr')
    check(libc.syscall(sys_move_mount, tree, b'', at_fdcwd, path.encode(),
                       move_mount_f_empty_path), 'move_mount')
  finally:
    os.close(tree)


def assert_one_line_cause_first(message, cause, what):
  """The fault's line: one line, without TensorFlow's graph traceback,
  TensorFlow's reason (`cause`) before the runtime's words (`what`)."""
  assert '\n' not in message and 'Detected at node' not in message, message
  assert cause in message and what in message, message
  assert message.index(cause) < message.index(what), message


def _sized_model_fn(floats):
  """A linear regressor with an extra trainable variable of `floats`
  floats, so that each checkpoint has a known size."""

  def model_fn(features, labels, mode):
    pad = tf.Variable(tf.zeros([floats]), name='pad')
    w = tf.Variable(tf.zeros([X.shape[1], 1]), name='w')
    out = tf.matmul(features['x'], w) + 0.0 * pad[0]
    if mode == ert.ModeKeys.PREDICT:
      return ert.EstimatorSpec(mode, predictions={'y': out})
    loss = tf.reduce_mean(tf.square(out - labels))
    if mode == ert.ModeKeys.EVAL:
      return ert.EstimatorSpec(mode, loss=loss)
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=tf.keras.optimizers.SGD(0.05))

  return model_fn


def test_full_disk_stops_with_one_error_and_keeps_what_was_saved(
    small_filesystem):
  model_dir = os.path.join(small_filesystem, 'm')
  est = ert.Estimator(_sized_model_fn(50_000), model_dir=model_dir,
                      config=quiet_config(save_checkpoints_steps=10))
  with pytest.raises(ert.CheckpointSaveError) as raised:
    est.train(input_fn, max_steps=100)
  message = str(raised.value)
  assert_one_line_cause_first(message, 'No space left on device',
                              'could not save checkpoint')
  assert model_dir in message
  # TensorFlow's class for ENOSPC, which 2.15's save raised.
  assert isinstance(raised.value, tf.errors.ResourceExhaustedError)
  saved = checkpoint_steps(model_dir)
  assert saved and saved[-1] < 100
  assert f'newest: step {saved[-1]}' in message
  assert_every_checkpoint_usable(model_dir)
  assert_no_leftovers(model_dir)
  # Room made (the disk grown), the same call carries on from there.
  subprocess.run(['mount', '-o', 'remount,size=20m', small_filesystem],
                 check=True)
  recorder = LoopRecorder()
  ert.Estimator(_sized_model_fn(50_000), model_dir=model_dir,
                config=quiet_config(save_checkpoints_steps=10, keep_checkpoint_max=2)
                ).train(input_fn, hooks=[recorder], max_steps=100)
  assert first_loop_step(recorder) == saved[-1]
  assert checkpoint_steps(model_dir) == [90, 100]
  assert_every_checkpoint_usable(model_dir)


def test_model_dir_turning_read_only_stops_with_one_error(small_filesystem):
  model_dir = os.path.join(small_filesystem, 'm')
  est = estimator(model_dir)
  est.train(input_fn, max_steps=20)
  before = snapshot_tree(model_dir)

  def make_read_only(result):
    # A read-only bind mount over the model_dir's filesystem: what is opened
    # from now on is read-only. (A remount of the filesystem itself is
    # refused while a file is open for writing, as the event file is:
    # tf.estimator's graph and session events are written at every start.)
    if result.global_step == 30:
      mount_read_only_over(small_filesystem)

  with pytest.raises(ert.CheckpointSaveError) as raised:
    estimator(model_dir).train(input_fn, hooks=[make_read_only],
                               max_steps=50)
  assert_one_line_cause_first(str(raised.value), 'Read-only file system',
                              'could not save checkpoint')
  assert isinstance(raised.value, tf.errors.PermissionDeniedError)
  # An export there fails alike, and leaves the checkpoints alone.
  with pytest.raises(ert.ExportWriteError) as raised:
    est.export_saved_model(os.path.join(small_filesystem, 'export'))
  assert_one_line_cause_first(str(raised.value), 'Read-only file system',
                              'could not write the export')
  assert isinstance(raised.value, tf.errors.PermissionDeniedError)
  # The checkpoints are as they were (the run's start wrote the graph and
  # its events, as tf.estimator's did).
  checkpoint_files = lambda tree: {
      name: value for name, value in tree.items()
      if name == 'checkpoint' or name.startswith('model.ckpt-')}
  assert checkpoint_files(snapshot_tree(model_dir)) == checkpoint_files(
      before)
  assert_every_checkpoint_usable(model_dir)
