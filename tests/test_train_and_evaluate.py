"""train_and_evaluate: evaluation after each new checkpoint, throttling, the
final evaluation, and the exporters' rules, read back from event files and
the exports on disk."""

import logging
import os
import threading
import time
import types

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.export import export_dirs
from estimator_rt.core import summaries
from estimator_rt.training.eager import loop_beside
import _legacy_fns
import _models as M


def _setup(tmp_path, *, model_fn=None, train=None, eval_data=None, **config):
  x, y = train or M.make_data(64)
  ex, ey = eval_data or M.make_data(32, seed=1)
  est = ert.Estimator(model_fn or M.make_model_fn(optimizer='adam', lr=0.02),
                      model_dir=str(tmp_path),
                      config=M.quiet_config(**config))
  return (est, M.global_input_fn(x, y, batch_size=16),
          M.global_input_fn(ex, ey, batch_size=8, repeat=False))


def _export_dirs(base):
  if not os.path.isdir(base):
    return []
  return sorted(os.path.join(base, d) for d in os.listdir(base))


def _where_called(model_fn, calls):
  """`model_fn`, recording (mode, where) per call: 'eager', or the kind of
  graph it builds into ('Graph': the graph engine's; 'FuncGraph': a
  compiled function's)."""

  def recorded(features, labels, mode):
    calls.append((mode, 'eager' if tf.executing_eagerly() else
                  type(tf.compat.v1.get_default_graph()).__name__))
    return model_fn(features, labels, mode)

  return recorded


@pytest.mark.parametrize('style', ['tf2', 'tf1'])
def test_evaluation_is_built_after_the_training_in_its_engine(tmp_path,
                                                              style):
  # Built once the training is (2.15 called the model_fn in TRAIN mode
  # first), before anything is written: a TF2 model_fn's evaluation is
  # built in the eager engine only (built first, it was also built in the
  # graph engine, then thrown away).
  calls = []
  if style == 'tf2':
    model_fn = M.make_model_fn(optimizer='adam', lr=0.02)
    est, train_fn, eval_fn = _setup(
        tmp_path, model_fn=_where_called(model_fn, calls),
        save_checkpoints_steps=10)
  else:
    est = ert.Estimator(_where_called(_legacy_fns.model_fn, calls),
                        model_dir=str(tmp_path),
                        config=M.quiet_config(save_checkpoints_steps=10))
    train_fn = eval_fn = _legacy_fns.input_fn
  ert.train_and_evaluate(est, ert.TrainSpec(train_fn, max_steps=20),
                         ert.EvalSpec(eval_fn, steps=2, throttle_secs=0))
  assert calls[0] == ('train', 'Graph')
  evals = [where for mode, where in calls if mode == 'eval']
  if style == 'tf2':
    assert 'Graph' not in evals and 'eager' in evals, calls
  else:
    assert calls[1] == ('eval', 'Graph') and set(evals) == {'Graph'}, calls
  assert M.eval_steps(str(tmp_path / 'eval')) == [10, 20]


@pytest.mark.parametrize('strategy', ['default', 'mirrored'])
def test_evaluates_after_each_new_checkpoint(tmp_path, strategy):
  est, train_fn, eval_fn = _setup(tmp_path, save_checkpoints_steps=10,
                                  train_distribute=strategy)
  metrics, exports = ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=40),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=0))
  assert exports == []
  checkpoints = M.checkpoint_steps(str(tmp_path))
  assert checkpoints == [0, 10, 20, 30, 40]
  evaluated = M.eval_steps(str(tmp_path / 'eval'))
  # Not the starting checkpoint (2.15 skipped it too), no duplicates, none
  # missed.
  assert evaluated == checkpoints[1:]
  assert M.eval_steps(str(tmp_path / 'eval'), 'mae') == checkpoints[1:]
  assert metrics['global_step'] == 40

  # The returned metrics are those evaluate() gives on the final checkpoint.
  again = est.evaluate(eval_fn, checkpoint_path=M.ckpt_path(tmp_path, 40),
                       name='check')
  assert set(again) == set(metrics) == {'loss', 'mae', 'mean_prediction',
                                        'global_step'}
  for key in metrics:
    assert again[key] == pytest.approx(metrics[key], rel=1e-6), key
  # And they are what was written for step 40.
  written = summaries.read_scalars(str(tmp_path / 'eval'))
  assert written['loss'][-1] == (40, pytest.approx(metrics['loss'], rel=1e-6))
  losses = [v for _, v in written['loss']]
  assert losses[-1] < losses[0]


def test_named_evaluation_writes_to_eval_name(tmp_path):
  class EvalEnd(ert.Hook):

    def __init__(self):
      self.steps = []

    def end(self, *, global_step):
      self.steps.append(global_step)

  eval_hook = EvalEnd()
  est, train_fn, eval_fn = _setup(tmp_path, save_checkpoints_steps=10)
  ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=20),
      ert.EvalSpec(eval_fn, steps=2, name='holdout', throttle_secs=0,
                   hooks=[eval_hook]))
  assert M.eval_steps(str(tmp_path / 'eval_holdout')) == [10, 20]
  assert not (tmp_path / 'eval').exists()
  assert eval_hook.steps == [10, 20]


def test_final_checkpoint_off_the_save_grid_is_evaluated(tmp_path):
  est, train_fn, eval_fn = _setup(tmp_path, save_checkpoints_steps=10)
  metrics, _ = ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=25),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=0))
  assert M.eval_steps(str(tmp_path / 'eval')) == [10, 20, 25]
  assert metrics['global_step'] == 25


def test_large_throttle_leaves_only_the_first_and_final_evaluation(tmp_path):
  """throttle_secs counts from the previous evaluation: the first checkpoint
  after step 0 is evaluated (as tf.estimator did), the ones within the next
  hour are not, the final one always is."""
  est, train_fn, eval_fn = _setup(tmp_path, save_checkpoints_steps=10)
  metrics, _ = ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=50),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=3600))
  assert M.checkpoint_steps(str(tmp_path)) == [0, 10, 20, 30, 40, 50]
  evaluated = M.eval_steps(str(tmp_path / 'eval'))
  assert evaluated[-1] == 50 and metrics['global_step'] == 50
  assert evaluated in ([50], [10, 50]), evaluated


def test_resumed_train_and_evaluate_at_max_steps_evaluates_once(tmp_path):
  est, train_fn, eval_fn = _setup(tmp_path, save_checkpoints_steps=10)
  train_spec = ert.TrainSpec(train_fn, max_steps=20)
  eval_spec = ert.EvalSpec(eval_fn, steps=None, throttle_secs=0)
  ert.train_and_evaluate(est, train_spec, eval_spec)
  metrics, _ = ert.train_and_evaluate(est, train_spec, eval_spec)
  assert metrics['global_step'] == 20
  assert M.checkpoint_steps(str(tmp_path)) == [0, 10, 20]


def test_latest_exporter_keeps_exports_to_keep(tmp_path):
  est, train_fn, eval_fn = _setup(tmp_path, save_checkpoints_steps=10)
  exporter = ert.LatestExporter('latest', exports_to_keep=2)
  metrics, exports = ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=40),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=0,
                   exporters=[exporter]))
  assert len(exports) == 4  # One export per evaluation.
  kept = _export_dirs(tmp_path / 'export' / 'latest')
  assert len(kept) == 2, kept
  assert set(kept) <= set(exports)
  for path in kept:
    assert os.path.isfile(os.path.join(path, 'saved_model.pb'))
  steps = sorted(M.saved_model_global_step(p) for p in kept)
  assert set(steps) <= {10, 20, 30, 40}
  assert metrics['global_step'] == 40


def test_latest_exporter_keeps_the_newest_exports_when_exports_are_fast(
    tmp_path, monkeypatch):
  """Exports within one second, made deterministic by freezing the clock
  the export directory names come from."""
  monkeypatch.setattr(export_dirs, 'time',
                      types.SimpleNamespace(time=lambda: 1_700_000_000.0))
  est, train_fn, _ = _setup(tmp_path, save_checkpoints_steps=10)
  est.train(train_fn, max_steps=40)
  exporter = ert.LatestExporter('latest', exports_to_keep=2)
  for step in (10, 20, 30, 40):
    exporter.export(est, str(tmp_path / 'export' / 'latest'),
                    checkpoint_path=M.ckpt_path(tmp_path, step),
                    eval_result={'loss': 1.0, 'global_step': step},
                    is_the_final_export=step == 40)
  kept = _export_dirs(tmp_path / 'export' / 'latest')
  assert sorted(M.saved_model_global_step(p) for p in kept) == [30, 40]


def test_each_checkpoint_is_exported_once_when_input_ends(tmp_path):
  x, y = M.make_data(64)
  est, _, eval_fn = _setup(tmp_path, save_checkpoints_steps=2)
  _, exports = ert.train_and_evaluate(
      est, ert.TrainSpec(M.global_input_fn(x, y, batch_size=16,
                                           repeat=False)),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=0,
                   exporters=[ert.LatestExporter(exports_to_keep=None)]))
  assert M.checkpoint_steps(str(tmp_path)) == [0, 2, 4]
  assert M.eval_steps(str(tmp_path / 'eval')) == [2, 4]
  assert sorted(M.saved_model_global_step(p) for p in exports) == [2, 4]


def test_final_exporter_exports_once_at_the_end(tmp_path):
  est, train_fn, eval_fn = _setup(tmp_path, save_checkpoints_steps=10)
  _, exports = ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=30),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=0,
                   exporters=[ert.FinalExporter('final')]))
  kept = _export_dirs(tmp_path / 'export' / 'final')
  assert len(kept) == 1 and exports == kept
  assert M.saved_model_global_step(kept[0]) == 30
  assert M.eval_steps(str(tmp_path / 'eval')) == [10, 20, 30]


def test_best_exporter_exports_only_on_improvement(tmp_path):
  """Training fits y = 2 x.w, evaluation wants y = x.w: the eval loss falls
  while the model passes x.w on its way to 2 x.w, then rises."""
  rng = np.random.RandomState(3)
  x = rng.randn(64, 4).astype(np.float32)
  w = np.array([[0.5], [-0.5], [0.25], [1.0]], np.float32)

  def linear_model_fn(features, labels, mode):
    import keras  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    out = keras.layers.Dense(1, kernel_initializer='zeros')(features['x'])
    if mode == ert.ModeKeys.PREDICT:
      return ert.EstimatorSpec(mode, predictions=out)
    loss = tf.reduce_mean(tf.square(out - labels))
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=keras.optimizers.SGD(0.02))

  est, train_fn, eval_fn = _setup(
      tmp_path, model_fn=linear_model_fn, train=(x, 2 * (x @ w)),
      eval_data=(x, x @ w), save_checkpoints_steps=5, steps_per_loop=5)
  exporter = ert.BestExporter('best', exports_to_keep=None)
  _, exports = ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=80),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=0,
                   exporters=[exporter]))

  points = summaries.read_scalars(str(tmp_path / 'eval'))['loss']
  improved, best = [], float('inf')
  for step, loss in points:
    if loss < best:
      improved.append(step)
      best = loss
  # The data make both kinds of evaluation happen.
  assert 1 < len(improved) < len(points), points
  exported_steps = [M.saved_model_global_step(p) for p in exports]
  assert exported_steps == improved
  assert sorted(_export_dirs(tmp_path / 'export' / 'best')) == sorted(exports)

  # A resumed job's new BestExporter exports its first evaluation whatever
  # the earlier runs exported (tf.estimator 2.15's rule), then only what
  # beats it: the loss keeps rising, so 90 is not exported.
  assert points[-1][1] > best
  _, more = ert.train_and_evaluate(
      est, ert.TrainSpec(train_fn, max_steps=90),
      ert.EvalSpec(eval_fn, steps=None, throttle_secs=0,
                   exporters=[ert.BestExporter('best', exports_to_keep=None)]))
  assert M.eval_steps(str(tmp_path / 'eval'))[-2:] == [85, 90]
  assert [M.saved_model_global_step(p) for p in more] == [85]


def test_exporter_names_must_be_unique(tmp_path):
  est, _, eval_fn = _setup(tmp_path)
  del est
  with pytest.raises(ert.UserInputError, match='unique'):
    ert.EvalSpec(eval_fn, exporters=[ert.LatestExporter('a'),
                                     ert.FinalExporter('a')])


def test_specs_are_checked(tmp_path):
  est, train_fn, eval_fn = _setup(tmp_path)
  with pytest.raises(ert.UserInputError):
    ert.TrainSpec(train_fn, max_steps=0)
  with pytest.raises(ert.UserInputError):
    ert.EvalSpec(eval_fn, throttle_secs=-1)
  with pytest.raises(ert.UserInputError):
    ert.train_and_evaluate(est, train_fn, ert.EvalSpec(eval_fn))


def test_a_subclass_evaluate_is_left_to_evaluate_as_in_2_15(tmp_path):
  # A library's Estimator whose evaluate sets up what its eval input_fn
  # needs (as TPUEstimator sets params['batch_size']): train_and_evaluate
  # does not build that evaluation itself before training (2.15 never
  # did), so each evaluation is its evaluate's.
  class OwnEvaluation(ert.Estimator):

    def _assert_members_are_not_overridden(self):
      pass  # As libraries that override Estimator members do.

    def evaluate(self, input_fn, steps=None, hooks=None,
                 checkpoint_path=None, name=None):
      self.evaluating = True
      try:
        return super().evaluate(input_fn, steps, hooks, checkpoint_path,
                                name)
      finally:
        self.evaluating = False

  est = OwnEvaluation(_legacy_fns.model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config(save_checkpoints_steps=10))
  est.evaluating = False

  def eval_input_fn():
    if not est.evaluating:
      raise RuntimeError('built outside evaluate')
    return _legacy_fns.input_fn()

  metrics, _ = ert.train_and_evaluate(
      est, ert.TrainSpec(_legacy_fns.input_fn, max_steps=20),
      ert.EvalSpec(eval_input_fn, steps=2, throttle_secs=0))
  assert metrics['global_step'] == 20
  assert M.eval_steps(str(tmp_path / 'eval')) == [10, 20]


def test_first_evaluation_is_compiled_beside_the_first_training_loop(
    tmp_path, monkeypatch):
  # The evaluation's trace runs while the first training loop's call runs
  # (training/eager/loop_beside.py): on the main thread, as every model_fn
  # call, before the step-10 checkpoint exists, and once (the first
  # evaluation finds it). The training loop and the evaluation are both
  # compiled ahead (a 0-step call of their trace) on helper threads.
  compiled_ahead = []
  compiling = loop_beside.CompilingAhead

  def recorded_compiling(call, *, what):

    def recorded_call():
      compiled_ahead.append(
          (what, threading.current_thread() is threading.main_thread()))
      call()

    return compiling(recorded_call, what=what)

  monkeypatch.setattr(loop_beside, 'CompilingAhead', recorded_compiling)
  calls = []
  model_fn = M.make_model_fn(optimizer='adam', lr=0.02)

  def recorded(features, labels, mode):
    calls.append((mode, 'eager' if tf.executing_eagerly() else
                  type(tf.compat.v1.get_default_graph()).__name__,
                  threading.current_thread() is threading.main_thread(),
                  M.checkpoint_steps(str(tmp_path))))
    return model_fn(features, labels, mode)

  est, train_fn, eval_fn = _setup(tmp_path, model_fn=recorded)
  ert.train_and_evaluate(est, ert.TrainSpec(train_fn, max_steps=30),
                         ert.EvalSpec(eval_fn, steps=2, throttle_secs=0))
  assert all(main for _, _, main, _ in calls), calls
  traces = [on_disk for mode, where, _, on_disk in calls
            if mode == 'eval' and where.endswith('FuncGraph')]
  assert traces == [[0]], calls
  assert compiled_ahead == [('the training loop', False),
                            ('the evaluation', False)], compiled_ahead
  assert M.eval_steps(str(tmp_path / 'eval')) == [10, 20, 30]


def test_evaluations_run_beside_the_training_loop_after_them(tmp_path):
  # Each evaluation before the last runs on the main thread while the
  # training loop after its checkpoint runs (training/eager/loop_beside.py):
  # the eval input_fn, called on the main thread by each evaluation, sees
  # training's global step move past the checkpoint meanwhile. The last evaluation has no loop after it. The
  # program's log keeps 2.15's order: the evaluation's lines, then the step
  # log of the checkpoint's step.
  global_steps, seen, lines = [], [], []
  model_fn = M.make_model_fn(optimizer='adam', lr=0.02)

  def training_step_kept(features, labels, mode):
    if mode == ert.ModeKeys.TRAIN and tf.executing_eagerly():
      global_steps.append(tf.compat.v1.train.get_global_step())
    return model_fn(features, labels, mode)

  est, train_fn, eval_fn = _setup(tmp_path, model_fn=training_step_kept,
                                  log_step_count_steps=10)

  def trained_past(step):
    return bool(global_steps) and int(global_steps[-1].numpy()) > step

  def eval_input_fn():
    on_disk = M.checkpoint_steps(str(tmp_path))[-1:]
    if on_disk and on_disk[0] < 30:
      # Beside a loop, its steps go on now; after it, none would.
      deadline = time.monotonic() + 10
      while not trained_past(on_disk[0]) and time.monotonic() < deadline:
        time.sleep(0.001)
    seen.append((threading.current_thread() is threading.main_thread(),
                 on_disk, trained_past((on_disk or [0])[0])))
    return eval_fn()

  class Lines(logging.Handler):

    def emit(self, record):
      text = record.getMessage()
      if text.startswith(('Saving dict for global step', 'loss = ')):
        lines.append(text.split(':')[0].split(' (')[0])

  handler, logger = Lines(), logging.getLogger('tensorflow')
  level = logger.level
  logger.addHandler(handler)
  logger.setLevel(logging.INFO)
  try:
    ert.train_and_evaluate(est, ert.TrainSpec(train_fn, max_steps=30),
                           ert.EvalSpec(eval_input_fn, steps=2,
                                        throttle_secs=0))
  finally:
    logger.removeHandler(handler)
    logger.setLevel(level)
  assert seen == [(True, [], False), (True, [10], True), (True, [20], True),
                  (True, [30], False)], seen
  assert [line.rsplit(' ', 1)[-1] for line in lines] == [
      '0', '10', '10', '20', '20', '30'], lines
  assert lines[1::2] == ['Saving dict for global step %d' % step
                         for step in (10, 20, 30)], lines
  assert M.eval_steps(str(tmp_path / 'eval')) == [10, 20, 30]


def test_a_loss_that_turns_nan_right_after_a_checkpoint_follows_its_evaluation(
    tmp_path):
  # After a checkpoint, the short loop to the step-log step runs before the
  # evaluation, which then runs beside the loop after it (the controller's
  # `_short_loop_first`). A loss that turns NaN in that short loop stops
  # training after the evaluation, as 2.15's did (it evaluated before its
  # next step), and model_dir keeps the checkpoint evaluated.
  model_fn = M.make_model_fn(optimizer='adam', lr=0.02)

  def diverges_from_step_10(features, labels, mode):
    spec = model_fn(features, labels, mode)
    if mode != ert.ModeKeys.TRAIN:
      return spec
    step = tf.compat.v1.train.get_global_step()
    return spec._replace(loss=spec.loss * tf.where(
        step >= 10, float('nan'), 1.0))

  est, train_fn, eval_fn = _setup(tmp_path, model_fn=diverges_from_step_10,
                                  log_step_count_steps=10)
  with pytest.raises(ert.NanLossError, match='global step 11'):
    ert.train_and_evaluate(est, ert.TrainSpec(train_fn, max_steps=30),
                           ert.EvalSpec(eval_fn, steps=2, throttle_secs=0))
  assert M.checkpoint_steps(str(tmp_path)) == [0, 10]
  assert M.eval_steps(str(tmp_path / 'eval')) == [10]


def test_an_evaluation_that_fails_beside_training_ends_it_at_its_checkpoint(
    tmp_path):
  # The loop beside a failing evaluation runs to its end and saves nothing:
  # model_dir is as 2.15 left it, whose training waited for the evaluation.
  model_fn = M.make_model_fn(optimizer='adam', lr=0.02)
  est, train_fn, eval_fn = _setup(tmp_path, model_fn=model_fn)
  calls = []

  def fails_second():
    calls.append(M.checkpoint_steps(str(tmp_path))[-1:])
    if len(calls) == 3:
      raise ValueError('the second evaluation fails')
    return eval_fn()

  with pytest.raises(Exception, match='the second evaluation fails'):
    ert.train_and_evaluate(est, ert.TrainSpec(train_fn, max_steps=50),
                           ert.EvalSpec(fails_second, steps=2,
                                        throttle_secs=0))
  assert calls == [[], [10], [20]]
  assert M.checkpoint_steps(str(tmp_path)) == [0, 10, 20]
  assert M.eval_steps(str(tmp_path / 'eval')) == [10]


def test_an_evaluation_that_fails_to_compile_fails_at_its_first_run(
    tmp_path):
  # Compiling the evaluation ahead stops nothing: a model_fn whose EVAL
  # trace fails trains to the first checkpoint and fails at the first
  # evaluation, as before (and as 2.15 built each evaluation's graph then).
  model_fn = M.make_model_fn(optimizer='adam', lr=0.02)

  def fails_compiled(features, labels, mode):
    if mode == 'eval' and not tf.executing_eagerly():
      raise ValueError('no compiled evaluation here')
    return model_fn(features, labels, mode)

  est, train_fn, eval_fn = _setup(tmp_path, model_fn=fails_compiled)
  with pytest.raises(Exception, match='no compiled evaluation here'):
    ert.train_and_evaluate(est, ert.TrainSpec(train_fn, max_steps=30),
                           ert.EvalSpec(eval_fn, steps=2, throttle_secs=0))
  assert M.checkpoint_steps(str(tmp_path)) == [0, 10]
