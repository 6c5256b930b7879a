"""tf.estimator 2.15's time series estimators (canned/timeseries:
TimeSeriesRegressor, LSTMAutoRegressor, ARModel, LSTMPredictionModel,
saved_model_utils) against tf.estimator 2.15.

scripts/tf_estimator_215/timeseries_reference.py ran three programs under
tf.estimator 2.15 (with TF1 behaviour, the only one its evaluate() ran
under; see there): two TimeSeriesRegressors of ARModels (normal likelihood
loss with an exogenous feature; squared loss, two periodicities) and an
LSTMAutoRegressor, each trained 12 steps on a 24-point series, and kept
their model_dirs (tests/data/tf_estimator_215/timeseries/<program>/) with
what 2.15 computed from them in reference.json. Here, with TF2 behaviour,
the same programs on copies of those model_dirs must give 2.15's numbers
(1e-5): evaluate()'s metrics (in-sample mean, covariance, observed values,
times, end state), predict() from the evaluation's end state, the raw
export's signatures and what saved_model_utils' cold_start_filter,
filter_continuation and predict_continuation return on it, the one-shot
export's predictions for tf.Examples; and, trained on to step 20, 2.15's
variables (names, shapes, values) and evaluation.

(Training from scratch is compared through the checkpoint: a graph seed's
initial values depend on the ops the graph held before each initializer,
which differ between any two graph builders, 2.15's TF1 and TF2 modes
included.) 2.15's own tests of these classes are `run_v1_only` (skipped
under TF2 behaviour; see README).
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt
import estimator_rt.compat

estimator_rt.compat.install()

from scripts.tf_estimator_215 import timeseries_reference as programs  # pylint: disable=g-import-not-at-top,wrong-import-position
from test_canned import _assert_close  # pylint: disable=g-import-not-at-top,wrong-import-position

with open(os.path.join(programs.FIXTURE_ROOT, 'reference.json')) as f:
  REFERENCE = json.load(f)['programs']


def _copy_of_2_15s_model_dir(name, tmp_path):
  model_dir = str(tmp_path / name)
  shutil.copytree(os.path.join(programs.FIXTURE_ROOT, name), model_dir)
  return model_dir


@pytest.mark.parametrize('name', programs.PROGRAMS)
def test_2_15s_checkpoint_evaluates_predicts_and_serves_as_in_2_15(
    name, tmp_path):
  ours = programs.record_checkpoint(
      name, _copy_of_2_15s_model_dir(name, tmp_path))
  _assert_close(REFERENCE[name]['kept'], ours, name)


@pytest.mark.parametrize('name', programs.PROGRAMS)
def test_training_on_from_2_15s_checkpoint_gives_2_15s_numbers(
    name, tmp_path):
  """Training (the input statistics' updates, the loss, its gradients, the
  optimizer's slots) from 2.15's step 12 to step 20."""
  model_dir = _copy_of_2_15s_model_dir(name, tmp_path)
  programs.train(name, model_dir, programs.CONTINUED_STEPS)
  _, eval_input_fn = programs.input_fns(name)
  evaluation = programs.build(
      name, model_dir, programs._run_config_class()).evaluate(  # pylint: disable=protected-access
          eval_input_fn, steps=1)
  expected = REFERENCE[name]['continued']
  _assert_close(expected['variables'], programs.variables(model_dir),
                f'{name} variables')
  _assert_close(expected['evaluation'], programs._jsonable(evaluation),  # pylint: disable=protected-access
                f'{name} evaluation')


# ------------------------------------------------ the model's parts, cheaply


def _ar_model(**kwargs):
  ar_model = programs._module('ar_model')  # pylint: disable=protected-access
  arguments = dict(periodicities=2, input_window_size=2, output_window_size=2,
                   num_features=1,
                   prediction_model_factory=programs._lstm(2))  # pylint: disable=protected-access
  arguments.update(kwargs)
  return ar_model.ARModel(**arguments)


def test_time_features_are_how_far_into_its_bucket_a_time_is():
  """Per periodicity p and bucket b of width p / buckets: how far (in
  widths) t % p is into b, or 0 outside it (2.15's computation, checked
  against it by hand: 17 % 9 = 8 is 2/3 into [6, 9); 17 % 12 = 5 is 1/4
  into [4, 8); 20 % 12 = 8 starts [8, 12): 0)."""
  model = _ar_model(periodicities=(9, 12), input_window_size=1,
                    output_window_size=1, num_time_buckets=3)
  with tf.Graph().as_default():
    _, features = model._compute_time_features(  # pylint: disable=protected-access
        tf.constant([[17, 20]], tf.int64))
    with tf.compat.v1.Session() as session:
      features = session.run(features)
  np.testing.assert_allclose(features, [[[[0., 0., 2 / 3], [0., .25, 0.]],
                                         [[2 / 3, 0., 0.], [0., 0., 0.]]]],
                             rtol=1e-6)


def test_ar_model_refuses_windows_it_cannot_train_or_evaluate_on():
  """2.15's messages: training takes windows of exactly input + output
  window size, evaluation at least that."""
  mode_keys = estimator_rt.ModeKeys
  model = _ar_model(input_window_size=10, output_window_size=6)
  short = {'times': [[1]], 'values': [[[1.]]]}
  with tf.Graph().as_default():
    model.initialize_graph()
    with pytest.raises(ValueError, match='set window_size=16'):
      model.define_loss(short, mode=mode_keys.TRAIN)
    with pytest.raises(ValueError, match='requires a window of at least'):
      model.define_loss(short, mode=mode_keys.EVAL)


def test_evaluation_covers_whole_output_windows_dropping_the_start():
  """Five times, windows of 2 + 2: one output window's worth (times 7 and
  11) after the first input window; time 1 fills no window and is
  dropped (2.15's test_long_eval_discard_indivisible)."""
  model = _ar_model()
  with tf.Graph().as_default():
    model.initialize_graph()
    outputs = model.define_loss(
        {'times': [[1, 3, 5, 7, 11]],
         'values': [[[1.], [2.], [3.], [4.], [5.]]]},
        mode=estimator_rt.ModeKeys.EVAL)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      outputs = session.run(outputs)
  np.testing.assert_array_equal(outputs.prediction_times, [[7, 11]])
  np.testing.assert_array_equal(outputs.predictions['observed'],
                                [[[4.], [5.]]])
  assert outputs.predictions['mean'].shape == (1, 2, 1)
  # The end state: the last input window (scaled values: no statistics).
  np.testing.assert_array_equal(outputs.end_state[0], [[7, 11]])
  np.testing.assert_array_equal(outputs.end_state[1], [[[4.], [5.]]])


def test_numpy_features_get_batch_and_time_dimensions():
  saved_model_utils = programs._module('saved_model_utils')  # pylint: disable=protected-access
  canonical = saved_model_utils._canonicalize_numpy_data  # pylint: disable=protected-access
  one = canonical({'times': 3, 'values': 1.5, 'x': 2.},
                  require_single_batch=True)
  assert {k: v.shape for k, v in one.items()} == {
      'times': (1, 1), 'values': (1, 1, 1), 'x': (1, 1)}
  series = canonical({'times': [1, 2, 3], 'values': [[1., 2.]] * 3},
                     require_single_batch=True)
  assert series['values'].shape == (1, 3, 2)
  batch = canonical({'times': [[1, 2]] * 4, 'values': np.zeros([4, 2, 1])},
                    require_single_batch=False)
  assert batch['times'].shape == (4, 2)
  with pytest.raises(ValueError, match='Got batch input'):
    canonical({'times': [[1, 2]] * 4, 'values': np.zeros([4, 2, 1])},
              require_single_batch=True)
  with pytest.raises(ValueError, match='prefixed by the shape of the times'):
    canonical({'times': [1, 2], 'values': [1.]}, require_single_batch=False)
  with pytest.raises(ValueError, match='times and values are required'):
    canonical({'times': [1, 2]}, require_single_batch=False)


@pytest.mark.parametrize('steps, times, message', [
    (2, [[9]], 'Only one of `steps` and `times`'),
    (None, None, 'One of `steps` and `times` must'),
    (None, [[9], [10]], 'batch dimension matching'),
    (None, [[4, 5]], 'must be after'),
])
def test_predict_continuation_checks_what_to_predict(steps, times, message):
  """Checked before the SavedModel is used."""
  saved_model_utils = programs._module('saved_model_utils')  # pylint: disable=protected-access
  with pytest.raises(ValueError, match=message):
    saved_model_utils.predict_continuation(
        continue_from={'times': np.array([[3, 4]])}, signatures=None,
        session=None, steps=steps, times=times)
