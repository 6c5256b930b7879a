"""tf.estimator 2.15's model_fn and input_fn results, as the runtime takes them.

Each test does what a 2.15 program did and checks 2.15's outcome: a
mode-less EstimatorSpec, input_fns returning Python values, empty
features or graph-only iterators, a NaN loss as 2.15's error, a metric of
several tensors, and predict's warning about tensors that never end.
"""

import itertools
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert

from _legacy_fns import constant_input_fn as _constant_input_fn
from _legacy_fns import counting_model_fn as _counting_model_fn

tf1 = tf.compat.v1


def test_a_spec_without_mode_is_the_called_modes(tmp_path):
  def model_fn(features):
    del features
    return ert.EstimatorSpec(
        None, loss=tf.constant(0.),
        train_op=tf1.assign_add(tf1.train.get_global_step(), 1))

  estimator = ert.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(lambda: {'x': tf.constant([1.])}, steps=2)
  assert estimator.get_variable_value('global_step') == 2


def test_python_values_of_an_input_fn_reach_the_model_fn_as_they_are(
    tmp_path):
  features, labels = {'x': [[1], [1]]}, {'y': [[1], [1]]}
  estimator = ert.Estimator(_counting_model_fn, model_dir=str(tmp_path))
  estimator.train(lambda: (features, labels), steps=1)
  assert _counting_model_fn.seen == (features, labels, ert.ModeKeys.TRAIN)


def test_empty_features_run_in_a_graph_and_nan_is_2_15s_error(tmp_path):
  def nan_model_fn(features, labels, mode):
    del features, labels
    step = tf1.assign_add(tf1.train.get_global_step(), 1)
    loss = tf.cond(step > 1, lambda: tf.constant(np.nan), lambda: 1.)
    return ert.EstimatorSpec(mode, loss=loss, train_op=step)

  estimator = ert.Estimator(nan_model_fn, model_dir=str(tmp_path))
  with pytest.raises(tf1.train.NanLossDuringTrainingError,
                     match='^NaN loss during training'):
    estimator.train(lambda: ({}, None), steps=3)
  with pytest.raises(ert.NanLossError):
    estimator.train(lambda: ({}, None), steps=3)


def test_an_input_fn_with_a_graph_only_iterator_runs_in_a_graph(tmp_path):
  def input_fn():
    dataset = tf.data.Dataset.from_tensors(({'x': [1.]}, [0.])).repeat()
    return tf1.data.make_initializable_iterator(dataset).get_next()

  estimator = ert.Estimator(_counting_model_fn, model_dir=str(tmp_path))
  estimator.train(input_fn, steps=2)
  assert estimator.get_variable_value('global_step') == 2


def test_a_metric_of_several_tensors_is_returned_as_its_structure(tmp_path):
  def model_fn(features, labels, mode):
    del features, labels
    return ert.EstimatorSpec(
        mode, loss=tf.constant(1.),
        train_op=tf1.assign_add(tf1.train.get_global_step(), 1),
        eval_metric_ops={'nested': (((tf.constant(2.), tf.constant(1)),
                                     tf.constant(3., tf.float64)),
                                    tf.no_op())})

  estimator = ert.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(_constant_input_fn, steps=1)
  (two, one), three = estimator.evaluate(_constant_input_fn,
                                         steps=1)['nested']
  assert (two, one, three) == (2., 1, 3.)


def test_predicting_on_tensors_not_from_a_dataset_warns(tmp_path, caplog):
  # Read from TensorFlow's logger, not by patching `tf1.logging`: the first
  # `import tf_keras` in a process (another test's v1 layers) gives
  # `tf.compat.v1` new module wrappers, and one bound before no longer is
  # the one the runtime's call goes through.
  estimator = ert.Estimator(_counting_model_fn, model_dir=str(tmp_path))
  estimator.train(_constant_input_fn, steps=1)
  caplog.clear()
  with caplog.at_level('WARNING', logger='tensorflow'):
    next(estimator.predict(_constant_input_fn))
  assert 'does not use tf.data.Dataset or contain a QueueRunner' in (
      caplog.text)


def test_graph_evaluate_and_predict_call_the_input_fn_once(tmp_path):
  calls = []

  def input_fn():
    calls.append(1)
    return tf.data.Dataset.from_tensors(({'x': [[1.]]}, [[0.]]))

  def model_fn(features, labels, mode):
    del labels
    # Reads its input, so that evaluating and predicting end with it.
    x = tf.reduce_sum(features['x'])
    return ert.EstimatorSpec(
        mode, loss=x, predictions=features['x'],
        train_op=tf1.assign_add(tf1.train.get_global_step(), 1))

  estimator = ert.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(_constant_input_fn, steps=1)
  estimator.evaluate(input_fn)
  assert len(calls) == 1
  list(estimator.predict(input_fn))
  assert len(calls) == 2
  # Whether it repeats forever is read from the dataset in the graph.
  with pytest.raises(ert.UserInputError, match='repeats forever'):
    estimator.evaluate(lambda: input_fn().repeat())
  # predict yields forever then, as 2.15's did: code takes what it needs;
  # the binary's predict mode, which prints every prediction, refuses it.
  assert len(list(itertools.islice(
      estimator.predict(lambda: input_fn().repeat()), 3))) == 3
  with pytest.raises(ert.UserInputError, match='repeats forever'):
    next(estimator.predict(lambda: input_fn().repeat(),
                           refuse_endless_input=True))
