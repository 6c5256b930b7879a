"""The evaluator role in-process: `evaluator.run_evaluator` driving a
`training.CheckpointEvaluator` over real checkpoints of a tiny model.

Results are checked against the checkpoints themselves: each evaluation's
loss is recomputed in NumPy from the weights of the checkpoint it claims to
be for, so a result attributed to the wrong step fails.
"""

import os

import numpy as np
import pytest

import estimator_rt as ert
from estimator_rt import evaluator as evaluator_lib
from estimator_rt import summaries
from estimator_rt import training
from estimator_rt.errors import UserInputError
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
  return training.EvalSpec(
      M.global_input_fn(EVAL_X, EVAL_Y, batch_size=16, repeat=False),
      steps=None, **kwargs)


def _expected_loss(model_dir, step):
  weights = M.read_model_variables(M.ckpt_path(str(model_dir), step))
  return float(np.mean((M.np_forward(weights, EVAL_X) - EVAL_Y) ** 2))


def _eval_points(model_dir):
  return summaries.read_scalars(os.path.join(str(model_dir), 'eval')).get(
      'loss', [])


class _Intercepting:
  """A CheckpointEvaluator stand-in that runs `before(path, n)` and
  `after(path, n)` around the n-th call of `evaluate` (0-based), and records
  the (clock time, step) of each call."""

  def __init__(self, inner, *, before=None, after=None, clock=None):
    self._inner = inner
    self._before = before
    self._after = after
    self._clock = clock
    self.calls = []

  @property
  def evaluated_steps(self):
    return self._inner.evaluated_steps

  @property
  def last_result(self):
    return self._inner.last_result

  def evaluate(self, path, *, is_final):
    n = len(self.calls)
    self.calls.append((self._clock.time() if self._clock else None,
                       int(path.rsplit('-', 1)[1])))
    if self._before:
      self._before(path, n)
    result = self._inner.evaluate(path, is_final=is_final)
    if self._after:
      self._after(path, n)
    return result


def test_newest_unseen_checkpoint_once_each_until_max_steps(tmp_path):
  """Older unseen checkpoints are skipped, none is evaluated twice, the run
  ends with the checkpoint at max_steps, summaries and exports follow."""
  model_dir = tmp_path / 'model'
  estimator = _estimator(model_dir)
  _train(estimator, 20)  # Checkpoints 10 and 20.
  evaluator = training.CheckpointEvaluator(
      estimator=estimator,
      eval_spec=_eval_spec(exporters=[ert.LatestExporter(),
                                      ert.FinalExporter()]))

  # Nothing beyond step 20 comes: it evaluates 20 (not 10), then gives up.
  with pytest.raises(UserInputError) as raised:
    evaluator_lib.run_evaluator(evaluator, model_dir=str(model_dir),
                                max_steps=40, poll_secs=0.05,
                                timeout_secs=1.5)
  message = str(raised.value)
  assert str(model_dir) in message and 'max_steps=40' in message
  assert 'last evaluated step: 20' in message
  assert evaluator.evaluated_steps == [20]

  _train(estimator, 40)  # Checkpoints 30 and 40.
  # Bounded: if it did not stop at max_steps it would time out and raise.
  result = evaluator_lib.run_evaluator(evaluator, model_dir=str(model_dir),
                                       max_steps=40, poll_secs=0.05,
                                       timeout_secs=20)
  assert evaluator.evaluated_steps == [20, 40]
  assert result['global_step'] == 40
  assert result['loss'] == pytest.approx(_expected_loss(model_dir, 40),
                                         rel=1e-4)

  # Never twice: run again, nothing new, it times out having done nothing.
  with pytest.raises(UserInputError):
    evaluator_lib.run_evaluator(evaluator, model_dir=str(model_dir),
                                max_steps=40, poll_secs=0.05,
                                timeout_secs=1.0)
  assert evaluator.evaluate(M.ckpt_path(str(model_dir), 40),
                            is_final=True) is None
  assert evaluator.evaluated_steps == [20, 40]

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


def test_timeout_raises_user_input_error_when_no_checkpoint_appears(
    tmp_path):
  model_dir = tmp_path / 'empty'
  model_dir.mkdir()
  evaluator = training.CheckpointEvaluator(estimator=_estimator(model_dir),
                                           eval_spec=_eval_spec())
  with pytest.raises(UserInputError) as raised:
    evaluator_lib.run_evaluator(evaluator, model_dir=str(model_dir),
                                max_steps=10, poll_secs=0.05,
                                timeout_secs=0.5)
  assert 'no new checkpoint' in str(raised.value)
  assert 'last evaluated step: None' in str(raised.value)
  assert evaluator.evaluated_steps == []
  assert not (model_dir / 'eval').exists()


def _delete_checkpoint(path, which):
  suffixes = {'index_and_data': ('.index', '.data-00000-of-00001'),
              'data_only': ('.data-00000-of-00001',)}[which]
  for suffix in suffixes:
    os.remove(path + suffix)


@pytest.mark.parametrize('which', [
    'index_and_data',
    'data_only',
])
def test_checkpoint_deleted_between_listing_and_reading(tmp_path, which):
  """The chief writes a newer checkpoint and deletes the one the evaluator
  just listed: no crash, and the result is the newer one's, at its step."""
  model_dir = tmp_path / 'model'
  estimator = _estimator(model_dir)
  _train(estimator, 20)
  evaluator = _Intercepting(
      training.CheckpointEvaluator(estimator=estimator,
                                   eval_spec=_eval_spec()),
      before=lambda path, n: n == 0 and (_train(estimator, 30),
                                         _delete_checkpoint(path, which)))
  result = evaluator_lib.run_evaluator(evaluator, model_dir=str(model_dir),
                                       max_steps=30, poll_secs=0.05,
                                       timeout_secs=20)
  assert [step for _, step in evaluator.calls] == [20, 30]
  assert evaluator.evaluated_steps == [30]
  assert result['global_step'] == 30
  assert result['loss'] == pytest.approx(_expected_loss(model_dir, 30),
                                         rel=1e-4)
  points = _eval_points(model_dir)
  assert [step for step, _ in points] == [30]
  assert points[0][1] == pytest.approx(_expected_loss(model_dir, 30),
                                       rel=1e-4)


class _VirtualClock:
  """Stands in for the `time` module inside evaluator.py: sleeping only
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
  monkeypatch.setattr(evaluator_lib, 'time', clock)
  model_dir = tmp_path / 'model'
  estimator = _estimator(model_dir)
  _train(estimator, 10)
  evaluator = _Intercepting(
      training.CheckpointEvaluator(estimator=estimator,
                                   eval_spec=_eval_spec()),
      after=lambda path, n: n < 2 and _train(estimator, 10 * (n + 2)),
      clock=clock)
  result = evaluator_lib.run_evaluator(
      evaluator, model_dir=str(model_dir), max_steps=30, throttle_secs=600,
      poll_secs=0.5, timeout_secs=5000)
  return evaluator.calls, result


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
  _train(estimator, 30)
  evaluator = training.CheckpointEvaluator(estimator=estimator,
                                           eval_spec=_eval_spec())
  if evaluated_before:
    evaluator.evaluate(M.ckpt_path(str(tmp_path), 20), is_final=False)
  _truncate_data(tmp_path, 30)
  result = evaluator_lib.run_evaluator(evaluator, model_dir=str(tmp_path),
                                       max_steps=30, timeout_secs=30)
  assert result['global_step'] == 20
  assert evaluator.evaluated_steps == [20]
  assert _eval_points(tmp_path)[-1][0] == 20
  assert np.isclose(_eval_points(tmp_path)[-1][1],
                    _expected_loss(tmp_path, 20), rtol=1e-5)


def test_damaged_checkpoint_is_skipped_for_the_final_one(tmp_path):
  estimator = _estimator(tmp_path)
  _train(estimator, 30)
  _truncate_data(tmp_path, 20)
  evaluator = training.CheckpointEvaluator(estimator=estimator,
                                           eval_spec=_eval_spec())
  result = evaluator_lib.run_evaluator(evaluator, model_dir=str(tmp_path),
                                       max_steps=30, timeout_secs=30)
  assert result['global_step'] == 30
  assert evaluator.evaluated_steps == [30]
