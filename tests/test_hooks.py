"""Hooks: what they are told, how they cut and stop loops, the built-in
NaN check and early stopping."""

import math
import os

from google.protobuf import text_format
import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.core import summaries
import _legacy_fns
import _models as M


def _estimator(model_dir, model_fn=None, **config):
  return ert.Estimator(model_fn or M.make_model_fn(), model_dir=str(model_dir),
                       config=M.quiet_config(**config))


def _input_fn(n=32, batch_size=8):
  x, y = M.make_data(n)
  return M.global_input_fn(x, y, batch_size=batch_size)


def test_callable_hook_receives_loop_results(tmp_path):
  recorder = M.LoopRecorder()
  est = _estimator(tmp_path, steps_per_loop=10, save_checkpoints_secs=3600)
  est.train(_input_fn(), hooks=[recorder], max_steps=35)
  results = recorder.results
  assert all(isinstance(r, ert.LoopResult) for r in results)
  assert [r.global_step for r in results] == [10, 20, 30, 35]
  assert [r.steps for r in results] == [10, 10, 10, 5]
  assert {r.max_steps for r in results} == {35}
  assert all(r.all_finite and math.isfinite(r.loss) for r in results)
  assert all(r.elapsed_secs > 0 for r in results)
  assert results[-1].loss < results[0].loss


@pytest.mark.parametrize('engine', ['eager', 'graph'])
def test_summaries_and_step_logs_cost_no_loop_of_their_own(tmp_path, engine,
                                                           caplog):
  """Summaries, 2.15's step lines and the runtime's progress line land on
  the same loop ends (the run's first step, then every 100): one loop per
  `steps_per_loop` steps, not a second one at each multiple of 100."""
  recorder = M.LoopRecorder()
  est = _estimator(tmp_path, model_fn=(M.make_model_fn() if engine == 'eager'
                                       else _legacy_fns.model_fn),
                   steps_per_loop=100, save_summary_steps=100,
                   log_step_count_steps=100, save_checkpoints_secs=3600)
  input_fn = _input_fn() if engine == 'eager' else _legacy_fns.input_fn
  with caplog.at_level('INFO', logger='absl'):
    est.train(input_fn, hooks=[recorder], max_steps=250)
  assert recorder.steps == [1, 101, 201, 250]
  progress = [r.getMessage() for r in caplog.records
              if r.getMessage().startswith('step ')]
  assert [int(line.split()[1].split('/')[0]) for line in progress] == [
      1, 101, 201, 250]
  assert 'steps/s' not in progress[0] and all(
      'steps/s, ETA' in line for line in progress[1:])


def test_hook_object_lifecycle_and_next_step_limit(tmp_path):
  class EverySeven(ert.Hook):

    def __init__(self):
      self.begun, self.ended, self.steps = None, None, []

    def begin(self, *, global_step, max_steps):
      self.begun = (global_step, max_steps)

    def next_step_limit(self, global_step):
      return (global_step // 7 + 1) * 7

    def after_loop(self, result):
      self.steps.append(result.global_step)

    def end(self, *, global_step):
      self.ended = global_step

  hook = EverySeven()
  est = _estimator(tmp_path, steps_per_loop=100, save_checkpoints_steps=25)
  est.train(_input_fn(), hooks=[hook], max_steps=50)
  assert hook.begun == (0, 50)
  assert hook.ended == 50
  assert hook.steps == [7, 14, 21, 25, 28, 35, 42, 49, 50]
  assert M.checkpoint_steps(tmp_path) == [0, 25, 50]


def test_hook_returning_true_stops_and_saves(tmp_path):
  est = _estimator(tmp_path, steps_per_loop=6, save_checkpoints_steps=100)
  est.train(_input_fn(), hooks=[lambda r: r.global_step >= 12],
            max_steps=100)
  assert M.checkpoint_steps(tmp_path) == [0, 12]
  assert M.read_global_step(est.latest_checkpoint()) == 12


def test_duck_typed_hook_with_only_after_loop(tmp_path):
  class OnlyAfterLoop:

    def __init__(self):
      self.steps = []

    def after_loop(self, result):
      self.steps.append(result.global_step)

  hook = OnlyAfterLoop()
  est = _estimator(tmp_path, steps_per_loop=10, save_checkpoints_steps=10)
  est.train(_input_fn(), hooks=[hook], max_steps=20)
  assert hook.steps == [10, 20]


def test_stop_at_step_hook_num_steps(tmp_path):
  est = _estimator(tmp_path, steps_per_loop=10)
  est.train(_input_fn(), max_steps=20)
  est.train(_input_fn(), hooks=[ert.StopAtStepHook(num_steps=13)])
  assert est.latest_checkpoint() == M.ckpt_path(tmp_path, 33)
  assert M.read_global_step(est.latest_checkpoint()) == 33
  assert M.checkpoint_steps(tmp_path) == [0, 10, 20, 30, 33]


def test_stop_at_step_hook_last_step(tmp_path):
  recorder = M.LoopRecorder()
  est = _estimator(tmp_path, steps_per_loop=10, save_checkpoints_secs=3600)
  est.train(_input_fn(), hooks=[ert.StopAtStepHook(last_step=27), recorder])
  assert recorder.steps == [10, 20, 27]
  assert M.checkpoint_steps(tmp_path) == [0, 27]
  assert M.read_global_step(est.latest_checkpoint()) == 27


def test_stop_at_step_hook_arguments():
  with pytest.raises(ert.UserInputError):
    ert.StopAtStepHook()
  with pytest.raises(ert.UserInputError):
    ert.StopAtStepHook(num_steps=1, last_step=2)


def test_not_a_hook_is_refused(tmp_path):
  est = _estimator(tmp_path / 'm')
  with pytest.raises(ert.UserInputError, match='hook'):
    est.train(_input_fn(), hooks=[42], max_steps=5)


def _nan_after_model_fn(nan_step):
  """Regression whose loss (and so its gradients) turns NaN from the step
  where the global step (before the increment) reaches `nan_step`."""
  inner_weights = M.initial_weights()

  def model_fn(features, labels, mode):
    out = M.build_keras_model(inner_weights)(features['x'])
    if mode == ert.ModeKeys.PREDICT:
      return ert.EstimatorSpec(mode, predictions=out)
    loss = tf.reduce_mean(tf.square(out - labels))
    step = ert.get_global_step()
    assert step is not None
    poison = tf.where(step >= nan_step, float('nan'), 1.0)
    return ert.EstimatorSpec(mode, loss=loss * poison,
                             optimizer=keras.optimizers.SGD(0.05))

  return model_fn


def test_nan_loss_stops_training_and_keeps_the_last_good_checkpoint(tmp_path):
  est = _estimator(tmp_path, _nan_after_model_fn(50), steps_per_loop=15,
                   save_checkpoints_steps=20)
  with pytest.raises(ert.NanLossError):
    est.train(_input_fn(), max_steps=100)
  # Step 51 (global step 50 -> 51) is the first NaN step; it runs in the
  # loop 45 -> 60, whose checkpoint at 60 must not be written.
  assert M.checkpoint_steps(tmp_path) == [0, 20, 40]
  latest = est.latest_checkpoint()
  assert latest == M.ckpt_path(tmp_path, 40)
  assert M.read_global_step(latest) == 40
  assert all(np.all(np.isfinite(v)) for v in M.read_model_variables(latest))
  # The model_dir is still usable: evaluation of the last good checkpoint.
  x, y = M.make_data(16)
  result = est.evaluate(M.global_input_fn(x, y, batch_size=8, repeat=False))
  assert result['global_step'] == 40


def test_diverging_learning_rate_raises_nan_loss(tmp_path):
  def model_fn(features, labels, mode):
    out = keras.layers.Dense(1)(features['x'])
    loss = tf.reduce_mean(tf.square(out - labels))
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=keras.optimizers.SGD(1e4))

  est = _estimator(tmp_path, model_fn, steps_per_loop=5,
                   save_checkpoints_steps=5)
  with pytest.raises(ert.NanLossError):
    est.train(_input_fn(), max_steps=1000)
  for step in M.checkpoint_steps(tmp_path):
    values = M.read_model_variables(M.ckpt_path(tmp_path, step))
    assert all(np.all(np.isfinite(v)) for v in values), step


def test_get_global_step_outside_a_model_fn_is_none():
  assert ert.get_global_step() is None


def _global_step_read(how):
  """The global step as a model_fn reads it: 'directly', or 'nested' in a
  tf.function of its own that closes over the variable (the loop's step
  then takes it only as that function's captured input)."""
  if how == 'directly':
    return ert.get_global_step() + 0
  variable = ert.get_global_step()

  @tf.function(autograph=False)
  def read():
    return variable.read_value()
  return read()


@pytest.mark.parametrize('how', ['directly', 'nested'])
def test_get_global_step_counts_steps_inside_the_model_fn(tmp_path, how):
  """A step-dependent model_fn sees the global step of each step, also
  inside one loop: a loss multiplied by 0 from step 4 on stops all updates
  there, so 10 steps in one loop end where 4 steps did."""
  weights = M.initial_weights()

  def model_fn(features, labels, mode):
    out = M.build_keras_model(weights)(features['x'])
    loss = tf.reduce_mean(tf.square(out - labels))
    if mode == ert.ModeKeys.TRAIN:
      live = tf.cast(_global_step_read(how) < 4, tf.float32)
      loss = loss * live
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=keras.optimizers.SGD(0.05))

  ends = {}
  for steps in (4, 10):
    est = _estimator(tmp_path / str(steps), model_fn, steps_per_loop=25,
                     save_checkpoints_steps=100)
    est.train(_input_fn(), max_steps=steps)
    ends[steps] = M.read_model_variables(est.latest_checkpoint())
  assert not np.allclose(ends[4][0], weights[0])
  for a, b in zip(ends[4], ends[10]):
    np.testing.assert_array_equal(a, b)


def _loop_body_writes(model_dir):
  """The AssignAddVariableOps of the compiled training loop's while body,
  from the graph.pbtxt training wrote."""
  graph_def = tf.compat.v1.GraphDef()
  with open(os.path.join(model_dir, 'graph.pbtxt')) as f:
    text_format.Parse(f.read(), graph_def)
  return [node.name for function in graph_def.library.function
          if 'while_body' in function.signature.name
          for node in function.node_def if node.op == 'AssignAddVariableOp']


def test_global_step_no_step_reads_is_counted_once_per_loop(tmp_path):
  """A step that does not read the global step leaves its count to the
  loop's end (two ops fewer per step); one that reads it counts it per
  step. Both end at the same global steps with the same weights."""
  def model_fn(reads):
    def fn(features, labels, mode):
      out = M.build_keras_model(M.initial_weights())(features['x'])
      loss = tf.reduce_mean(tf.square(out - labels))
      if reads:
        loss += 0.0 * tf.cast(ert.get_global_step(), tf.float32)
      return ert.EstimatorSpec(mode, loss=loss,
                               optimizer=keras.optimizers.SGD(0.05))
    return fn

  writes, weights = {}, {}
  for reads in (False, True):
    model_dir = tmp_path / str(reads)
    est = _estimator(model_dir, model_fn(reads), steps_per_loop=7,
                     save_checkpoints_steps=7)
    est.train(_input_fn(), max_steps=10)
    est.train(_input_fn(), steps=4)
    assert M.checkpoint_steps(model_dir) == [0, 7, 10, 14]
    writes[reads] = _loop_body_writes(model_dir)
    weights[reads] = M.read_model_variables(M.ckpt_path(model_dir, 14))
  # The SGD's iteration count is written per step either way.
  assert len(writes[True]) == len(writes[False]) + 1, writes
  for a, b in zip(weights[False], weights[True]):
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_early_stopping_stops_train_and_evaluate(tmp_path):
  """Training fits y = x.w while evaluation wants y = -x.w: the eval loss
  is best at the first evaluation, so training stops long before
  max_steps once the patience (20 steps) is used up."""
  rng = np.random.RandomState(0)
  x = rng.randn(64, 4).astype(np.float32)
  w = np.full([4, 1], 0.5, np.float32)
  train_fn = M.global_input_fn(x, x @ w, batch_size=16)
  eval_fn = M.global_input_fn(x, -(x @ w), batch_size=64, repeat=False)

  est = _estimator(tmp_path, M.make_model_fn(optimizer='sgd', lr=0.05),
                   steps_per_loop=10, save_checkpoints_steps=10)
  hook = ert.EarlyStoppingHook(model_dir=str(tmp_path), metric_name='loss',
                               max_steps_without_improvement=20)
  metrics, exports = ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=500, hooks=[hook]),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=0, exporters=[
          ert.FinalExporter('final'),
          ert.LatestExporter('latest', exports_to_keep=None)]))

  points = summaries.read_scalars(str(tmp_path / 'eval'))['loss']
  steps = [s for s, _ in points]
  assert steps[0] == 10, points
  assert min(points, key=lambda p: p[1])[0] == 10, points  # Never improves.
  # The patience is used up once an evaluation 30 steps after the best
  # (step 10) exists, i.e. at step 40; the hook sees it after the next loop.
  assert hook.stopped_at_step is not None
  assert 40 <= hook.stopped_at_step <= 50, hook.stopped_at_step
  latest = est.latest_checkpoint()
  assert M.read_global_step(latest) == hook.stopped_at_step
  assert metrics['global_step'] == hook.stopped_at_step
  assert steps[-1] == hook.stopped_at_step
  # Training ended early: FinalExporter still exports the last checkpoint,
  # once, and LatestExporter exports each evaluated checkpoint once.
  final = [p for p in exports if '/export/final/' in p]
  latest = [p for p in exports if '/export/latest/' in p]
  assert [M.saved_model_global_step(p) for p in final] == [
      hook.stopped_at_step]
  assert [M.saved_model_global_step(p) for p in latest] == steps


def test_early_stopping_hook_needs_positive_patience(tmp_path):
  with pytest.raises(ert.UserInputError):
    ert.EarlyStoppingHook(model_dir=str(tmp_path), metric_name='loss',
                          max_steps_without_improvement=0)
