"""The evaluator role in-process: `_TrainingExecutor.run_evaluator` (what an
evaluator task of train_and_evaluate runs) over real checkpoints of a tiny
model, while a stand-in chief writes more checkpoints between its
evaluations (from a `_ContinuousEvalListener`, tf.estimator 2.15's hook).

Results are checked against the checkpoints themselves: each evaluation's
loss is recomputed in NumPy from the weights of the checkpoint it claims to
be for, so a result attributed to the wrong step fails.
"""

import os
import time

import numpy as np
import pytest

import estimator_rt as ert
from estimator_rt.core import summaries
from estimator_rt.estimator import train_and_evaluate as training
import _models as M

EVAL_X, EVAL_Y = M.make_data(64, seed=5)
TRAIN_X, TRAIN_Y = M.make_data(256, seed=6)


def _estimator(model_dir):
  return ert.Estimator(
      M.make_model_fn(lr=0.05), model_dir=str(model_dir),
      config=M.quiet_config(save_checkpoints_steps=10, steps_per_loop=10,
                            task_info=None))


def _train(estimator, max_steps):
  estimator.train(M.global_input_fn(TRAIN_X, TRAIN_Y, batch_size=32),
                  max_steps=max_steps)


def _eval_spec(**kwargs):
  kwargs.setdefault('throttle_secs', 0)
  return training.EvalSpec(
      M.global_input_fn(EVAL_X, EVAL_Y, batch_size=16, repeat=False),
      steps=None, **kwargs)


def _expected_loss(model_dir, step):
  weights = M.read_model_variables(M.ckpt_path(str(model_dir), step))
  return float(np.mean((M.np_forward(weights, EVAL_X) - EVAL_Y) ** 2))


def _eval_points(model_dir):
  return summaries.read_scalars(os.path.join(str(model_dir), 'eval')).get(
      'loss', [])


class _Chief(training._ContinuousEvalListener):  # pylint: disable=protected-access
  """Records every evaluation pass (status, step); `after(n)` runs after the
  n-th evaluation (0-based), as a chief writing checkpoints meanwhile; the
  evaluator is stopped `patience_secs` after the last evaluation (or its
  start), as a bound for a test that expects nothing more to come."""

  def __init__(self, *, after=None, patience_secs=None):
    self._after = after
    self._patience = patience_secs
    self._since = time.time()
    self.passes = []

  @property
  def evaluated(self):
    return [step for status, step in self.passes if status == 'evaluated']

  def before_eval(self):
    return self._patience is None or time.time() - self._since < self._patience

  def after_eval(self, eval_result):
    step = (eval_result.metrics['global_step'] if eval_result.metrics else
            None)
    self.passes.append((eval_result.status, step))
    if eval_result.status == 'evaluated':
      self._since = time.time()
      if self._after:
        self._after(len(self.evaluated) - 1)
    return True


def _run_evaluator(estimator, *, max_steps, listener, **eval_kwargs):
  executor = training._TrainingExecutor(  # pylint: disable=protected-access
      estimator, training.TrainSpec(lambda: None, max_steps=max_steps),
      _eval_spec(**eval_kwargs), continuous_eval_listener=listener)
  return executor.run_evaluator()


def test_newest_unseen_checkpoint_once_each_until_max_steps(tmp_path):
  """Older unseen checkpoints are skipped, none is evaluated twice, the run
  ends with the checkpoint at max_steps, summaries and exports follow."""
  model_dir = tmp_path / 'model'
  estimator = _estimator(model_dir)
  _train(estimator, 20)  # Checkpoints 10 and 20.
  # After evaluating 20, nothing new for a while, then 30 and 40 at once.
  def chief(n):
    if n == 0:
      time.sleep(1.5)
      _train(estimator, 40)
  listener = _Chief(after=chief)
  result, exports = _run_evaluator(
      estimator, max_steps=40, listener=listener,
      exporters=[ert.LatestExporter(), ert.FinalExporter()])
  assert listener.evaluated == [20, 40]
  assert result['global_step'] == 40
  assert result['loss'] == pytest.approx(_expected_loss(model_dir, 40),
                                         rel=1e-4)

  # One summary per evaluated step, holding that checkpoint's loss.
  points = _eval_points(model_dir)
  assert [step for step, _ in points] == [20, 40]
  for step, value in points:
    assert value == pytest.approx(_expected_loss(model_dir, step), rel=1e-4)
  assert _expected_loss(model_dir, 20) != pytest.approx(
      _expected_loss(model_dir, 40), rel=1e-4)

  # Exporters ran after each evaluation: latest twice, final once (at 40).
  def exported_steps(name):
    base = model_dir / 'export' / name
    return sorted(M.saved_model_global_step(str(base / d))
                  for d in os.listdir(base))

  assert exported_steps('latest') == [20, 40]
  assert exported_steps('final') == [40]
  assert sorted(M.saved_model_global_step(p) for p in exports) == [20, 40, 40]


def test_no_checkpoint_means_no_evaluation(tmp_path):
  model_dir = tmp_path / 'empty'
  model_dir.mkdir()
  listener = _Chief(patience_secs=1.0)
  result, exports = _run_evaluator(_estimator(model_dir), max_steps=10,
                                   listener=listener)
  assert result is None and exports == []
  assert listener.passes and all(status == 'missing checkpoint'
                                 for status, _ in listener.passes)
  # It looked again every POLL_SECS, not in a busy loop.
  assert len(listener.passes) <= 1.0 / training._POLL_SECS + 2  # pylint: disable=protected-access
  assert not (model_dir / 'eval').exists()


def _delete_checkpoint(path, which):
  suffixes = {'index_and_data': ('.index', '.data-00000-of-00001'),
              'data_only': ('.data-00000-of-00001',)}[which]
  for suffix in suffixes:
    os.remove(path + suffix)


def _evaluate_calls(monkeypatch, estimator, *, before=None, clock=None):
  """Records the (time, step) of each `estimator.evaluate` call, running
  `before(checkpoint_path, n)` ahead of the n-th."""
  calls = []
  evaluate = estimator.evaluate

  def recording(*args, **kwargs):
    path = kwargs['checkpoint_path']
    calls.append(((clock or time).time(), int(path.rsplit('-', 1)[1])))
    if before:
      before(path, len(calls) - 1)
    return evaluate(*args, **kwargs)

  monkeypatch.setattr(estimator, 'evaluate', recording)
  return calls


@pytest.mark.parametrize('which', [
    'index_and_data',
    'data_only',
])
def test_checkpoint_deleted_between_listing_and_reading(tmp_path, monkeypatch,
                                                        which):
  """The chief writes a newer checkpoint and deletes the one the evaluator
  just listed: no crash, and the result is the newer one's, at its step."""
  model_dir = tmp_path / 'model'
  estimator = _estimator(model_dir)
  _train(estimator, 20)
  calls = _evaluate_calls(
      monkeypatch, estimator,
      before=lambda path, n: n == 0 and (_train(estimator, 30),
                                         _delete_checkpoint(path, which)))
  listener = _Chief()
  result, _ = _run_evaluator(estimator, max_steps=30, listener=listener)
  assert [step for _, step in calls] == [20, 30]
  assert listener.evaluated == [30]
  assert result['global_step'] == 30
  assert result['loss'] == pytest.approx(_expected_loss(model_dir, 30),
                                         rel=1e-4)
  points = _eval_points(model_dir)
  assert [step for step, _ in points] == [30]
  assert points[0][1] == pytest.approx(_expected_loss(model_dir, 30),
                                       rel=1e-4)


class _VirtualClock:
  """Stands in for the `time` module inside train_and_evaluate.py: sleeping only
  advances the clock, so a 600 s throttle passes in milliseconds."""

  def __init__(self):
    self.now = 1_000_000.0

  def time(self):
    return self.now

  def sleep(self, secs):
    self.now += secs


def _throttled_run(tmp_path, monkeypatch):
  """Checkpoint 10 exists; after each evaluation the chief writes the next
  (20, then 30 = max_steps). Returns the (virtual time, step) of each
  evaluation and the final result, with throttle_secs=600."""
  clock = _VirtualClock()
  monkeypatch.setattr(training, 'time', clock)
  model_dir = tmp_path / 'model'
  estimator = _estimator(model_dir)
  _train(estimator, 10)
  calls = _evaluate_calls(monkeypatch, estimator, clock=clock)
  listener = _Chief(after=lambda n: n < 2 and _train(estimator, 10 * (n + 2)))
  result, _ = _run_evaluator(estimator, max_steps=30, listener=listener,
                             throttle_secs=600)
  return calls, result


def test_throttle_spaces_out_evaluations(tmp_path, monkeypatch):
  calls, result = _throttled_run(tmp_path, monkeypatch)
  assert [step for _, step in calls] == [10, 20, 30]
  assert result['global_step'] == 30
  # Checkpoint 20 existed right after the first evaluation, but waited for
  # the throttle.
  assert 600 <= calls[1][0] - calls[0][0] <= 602, calls


def test_final_checkpoint_is_not_held_back_by_the_throttle(tmp_path,
                                                           monkeypatch):
  calls, _ = _throttled_run(tmp_path, monkeypatch)
  assert [step for _, step in calls] == [10, 20, 30]
  # Checkpoint 30 (= max_steps) existed right after evaluation 20 ended.
  assert calls[2][0] - calls[1][0] <= 2, calls


def _truncate_data(model_dir, step):
  (name,) = [n for n in os.listdir(str(model_dir))
             if n.startswith(f'model.ckpt-{step}.data-')]
  with open(os.path.join(str(model_dir), name), 'r+b') as f:
    f.truncate(8)


@pytest.mark.parametrize('evaluated_before', [False, True])
def test_unusable_final_checkpoint_ends_with_the_newest_usable_one(
    tmp_path, evaluated_before):
  """The checkpoint at max_steps was damaged after it was written: the
  evaluator does not wait forever for a usable one; the newest usable
  checkpoint is the final result."""
  estimator = _estimator(tmp_path)
  after = None
  if evaluated_before:
    _train(estimator, 20)
    after = lambda n: (_train(estimator, 30), _truncate_data(tmp_path, 30))
  else:
    _train(estimator, 30)
    _truncate_data(tmp_path, 30)
  listener = _Chief(after=after, patience_secs=30)
  result, exports = _run_evaluator(estimator, max_steps=30, listener=listener,
                                   exporters=[ert.FinalExporter()])
  assert result['global_step'] == 20
  assert listener.evaluated == [20]
  assert _eval_points(tmp_path)[-1][0] == 20
  assert np.isclose(_eval_points(tmp_path)[-1][1],
                    _expected_loss(tmp_path, 20), rtol=1e-5)
  # Exported as the final one unless it was evaluated before the final
  # checkpoint existed.
  assert len(exports) == (0 if evaluated_before else 1)


def test_damaged_checkpoint_is_skipped_for_the_final_one(tmp_path):
  estimator = _estimator(tmp_path)
  _train(estimator, 30)
  _truncate_data(tmp_path, 20)
  listener = _Chief(patience_secs=30)
  result, _ = _run_evaluator(estimator, max_steps=30, listener=listener)
  assert result['global_step'] == 30
  assert listener.evaluated == [30]


def test_start_delay_then_evaluates(tmp_path, monkeypatch):
  clock = _VirtualClock()
  monkeypatch.setattr(training, 'time', clock)
  estimator = _estimator(tmp_path)
  _train(estimator, 10)
  start = clock.now
  result, _ = _run_evaluator(estimator, max_steps=10, listener=_Chief(),
                             start_delay_secs=120)
  assert result['global_step'] == 10
  assert clock.now - start >= 120
