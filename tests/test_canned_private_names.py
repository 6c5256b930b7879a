"""tf.estimator 2.15's private canned helpers, as libraries call them,
against tf.estimator 2.15's numbers.

scripts/tf_estimator_215/canned_private_reference.py ran each case under
tf.estimator 2.15 (TF 2.15.1) and recorded what it computed in
tests/data/tf_estimator_215/canned_private.json: a v1 head's evaluation
metrics and its reduction NONE, the v1 metric helpers, and three training
steps of the private model_fns (`_linear_model_fn`, `_dnn_model_fn`, ...).
Here the same cases run through the compatibility layer's
`tensorflow_estimator.python.estimator` paths and must give the same
numbers (1e-5), and the behaviours no number shows are checked directly
(the v1 protocol a subclass overrides, 2.15's refusals). A graph and a
session each, no Estimator: seconds.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt.compat
from scripts.tf_estimator_215 import canned_private_reference as cases

estimator_rt.compat.install()

# pylint: disable=g-import-not-at-top,wrong-import-position,protected-access
from tensorflow_estimator.python.estimator.canned import baseline
from tensorflow_estimator.python.estimator.canned import dnn_linear_combined
from tensorflow_estimator.python.estimator.canned import head as v1_head
from tensorflow_estimator.python.estimator.canned import linear
from tensorflow_estimator.python.estimator.head import head_utils
# pylint: enable=g-import-not-at-top,wrong-import-position

with open(os.path.join(os.path.dirname(__file__), 'data', 'tf_estimator_215',
                       'canned_private.json')) as f:
  REFERENCE = json.load(f)


def _close(here, then):
  np.testing.assert_allclose(np.asarray(here), np.asarray(then), rtol=1e-5,
                             atol=1e-5)


@pytest.mark.parametrize('case', ['v1_head_eval', 'v1_head_none_reduction',
                                  'v1_metric_helpers'])
def test_v1_head_numbers_are_2_15s(case):
  here = cases.CASES[case]()
  assert sorted(here) == sorted(REFERENCE[case])
  for key, value in REFERENCE[case].items():
    _close(here[key], value)


@pytest.mark.parametrize('case', [
    'linear_model_fn', 'linear_model_fn_v2', 'baseline_model_fn',
    'baseline_model_fn_v2', 'dnn_model_fn', 'dnn_linear_combined_model_fn'])
def test_private_model_fns_train_as_2_15s(case):
  here = cases.CASES[case]()
  then = REFERENCE[case]
  _close(here['losses'], then['losses'])
  assert here['global_step'] == then['global_step']
  # The v1 models' variables partitioned as 2.15's (`.../part_0`).
  assert here['variables'] == then['variables']


class _HalvedLossHead(v1_head._RegressionHeadWithMeanSquaredErrorLoss):
  """A library's v1 head: overrides _create_tpu_estimator_spec only, and
  reads the protected attributes 2.15's heads had."""

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, train_op_fn=None,
                                 regularization_losses=None):
    assert self._loss_reduction == tf.compat.v1.losses.Reduction.NONE
    loss = self.create_loss(features, mode, logits, labels).training_loss
    from tensorflow_estimator.python.estimator import model_fn  # pylint: disable=g-import-not-at-top
    return model_fn._TPUEstimatorSpec(
        mode=mode, loss=tf.reduce_mean(loss) / 2.,
        train_op=v1_head._append_update_ops(tf.no_op()))


def test_a_v1_head_subclass_overriding_the_tpu_spec_is_what_runs():
  with tf.Graph().as_default():
    head = _HalvedLossHead(1, loss_reduction='none')
    spec = head.create_estimator_spec(
        features={}, mode='train', logits=tf.constant([[1.], [2.]]),
        labels=tf.constant([[2.], [4.]]), train_op_fn=lambda loss: None)
    with tf.compat.v1.Session() as session:
      assert session.run(spec.loss) == pytest.approx(1.25)  # (1 + 4) / 2 / 2


def test_v1_head_factories_refuse_none_as_2_15s_did():
  with pytest.raises(ValueError, match='^Invalid loss_reduction: none'):
    v1_head._regression_head(loss_reduction='none')
  with pytest.raises(ValueError, match='^Invalid loss_reduction: mean'):
    v1_head._MultiClassHeadWithSoftmaxCrossEntropyLoss(3,
                                                       loss_reduction='mean')


def test_v1_head_is_sent_to_a_graph_before_touching_the_optimizer():

  class Recording(tf.compat.v1.train.GradientDescentOptimizer):
    touched = False

    def compute_gradients(self, *args, **kwargs):
      Recording.touched = True
      return super().compute_gradients(*args, **kwargs)

  head = v1_head._regression_head()
  with pytest.raises(estimator_rt.core.errors.GraphModelFnError):
    head.create_estimator_spec(
        features={}, mode='train', logits=tf.constant([[1.]]),
        labels=tf.constant([[2.]]), optimizer=Recording(0.1))
  assert not Recording.touched


def test_private_helpers_with_2_15s_results_and_refusals():
  column = tf.feature_column.numeric_column('w')
  assert baseline._get_weight_column_key_v2(column) == 'w'
  assert baseline._get_weight_column_key(None) is None
  with pytest.raises(TypeError, match='^Weight column must be either'):
    baseline._get_weight_column_key_v2(3)
  with tf.Graph().as_default():
    checks, size = baseline._get_batch_size_and_size_checks(
        {'a': tf.zeros([3, 1]), 'b': tf.zeros([3]), 'w': tf.zeros([5])}, 'w')
    assert len(checks) == 1
    with tf.compat.v1.Session() as session:
      assert session.run([size] + checks)[0] == 3
  sdca = linear.LinearSDCA(example_id_column='id')
  with pytest.raises(ValueError, match='multi-class'):
    linear._validate_linear_sdca_optimizer_for_linear_classifier(
        [tf.feature_column.numeric_column('x')], 3, sdca, 'sum')
  with pytest.raises(ValueError, match='one-dimensional label'):
    linear._validate_linear_sdca_optimizer_for_linear_regressor(
        [tf.feature_column.numeric_column('x')], 2, sdca, 'sum')
  linear._validate_linear_sdca_optimizer_for_linear_classifier(
      [tf.feature_column.numeric_column('x')], 3, 'Ftrl', 'mean')
  columns, model_fn = dnn_linear_combined._init_dnn_linear_combined_estimator(
      head=None, linear_feature_columns=[column], linear_optimizer='Ftrl',
      dnn_feature_columns=None, dnn_optimizer='Adagrad',
      dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
      input_layer_partitioner=None, linear_sparse_combiner='sum')
  assert columns == [column] and callable(model_fn)
  with pytest.raises(ValueError, match='^Either linear_feature_columns'):
    dnn_linear_combined._init_dnn_linear_combined_estimator(
        None, None, 'Ftrl', None, 'Adagrad', None, tf.nn.relu, None, None,
        'sum')
  head = head_utils.binary_or_multi_class_head(3, None, None,
                                               'sum_over_batch_size')
  assert head.logits_dimension == 3


def test_head_helpers_and_2_15s_messages():
  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import v1  # A package.
  from tensorflow_estimator.python.estimator.head import base_head
  from tensorflow_estimator.python.estimator.head import multi_head
  from tensorflow_estimator.python.estimator.export import export_output
  import tf_keras
  # pylint: enable=g-import-not-at-top
  del v1
  with pytest.raises(ValueError) as raised:
    base_head.check_dense_labels_match_logits_and_reshape(
        None, tf.zeros([1, 1]), 1)
  assert str(raised.value).startswith(base_head._LABEL_NONE_ERR_MSG)
  with pytest.raises(ValueError) as raised:
    base_head.check_dense_labels_match_logits_and_reshape(
        tf.zeros([2, 3]), tf.zeros([2, 1]), 1)
  assert str(raised.value).startswith(
      base_head._MISMATCHED_LABEL_DIM_ERR_MSG.format(1, 3))
  assert base_head._VALIDATION_ERROR_MSG.format('a', int) == (
      "a should be a list or a tuple. Given type: <class 'int'>.")
  base_head.validate_v2_optimizer(tf_keras.optimizers.legacy.SGD())
  with pytest.raises(ValueError, match='^The given optimizer is not'):
    base_head.validate_v2_optimizer(tf.compat.v1.train.AdamOptimizer())
  with pytest.raises(ValueError, match='^Prediction key must be in'):
    base_head.check_prediction_keys(pred_keys=['x'], valid_keys=['y'])
  regress = export_output.RegressionOutput(tf.constant([[1.]]))
  assert multi_head._default_export_output({'a': regress}, 'h') is regress
  with pytest.raises(ValueError, match='^h did not specify default'):
    multi_head._default_export_output({'a': regress, 'b': regress}, 'h')
  with tf.Graph().as_default():
    assert multi_head._no_op_train_fn(tf.constant(1.)).type == 'NoOp'


def test_kmeans_model_fn_and_parsing_spec_helpers():
  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import kmeans
  from tensorflow_estimator.python.estimator.canned import parsing_utils
  from tensorflow_estimator.python.estimator import run_config
  # pylint: enable=g-import-not-at-top
  with tf.Graph().as_default():
    spec = kmeans._ModelFn(
        2, 'random', 'squared_euclidean', 1, True, 1, 2, None,
        None).model_fn({'x': tf.constant([[0.], [10.]])}, 'infer',
                       run_config.RunConfig())
    assert sorted(spec.predictions) == ['all_distances', 'cluster_index']
  spec = parsing_utils._add_label_and_weight_to_parsing_spec(
      {'x': tf.io.FixedLenFeature([1], tf.float32)}, 'y',
      tf.io.FixedLenFeature([1], tf.int64), weight_column='w')
  assert sorted(spec) == ['w', 'x', 'y']
  with pytest.raises(ValueError, match='^label should not be used'):
    parsing_utils._add_label_and_weight_to_parsing_spec(
        {'y': None}, 'y', None)


class _Case:
  """What a head test's `test_case` is asked by head_utils' helpers."""

  def assertIsNone(self, value):  # pylint: disable=invalid-name
    assert value is None

  def assertIsNotNone(self, value):  # pylint: disable=invalid-name
    assert value is not None

  def assertAllEqual(self, a, b):  # pylint: disable=invalid-name
    assert list(a) == list(b)

  def assertAllClose(self, a, b, rtol, atol):  # pylint: disable=invalid-name
    assert sorted(a) == sorted(b)
    np.testing.assert_allclose([a[k] for k in sorted(a)],
                               [b[k] for k in sorted(b)], rtol=rtol,
                               atol=atol)


def test_head_utils_test_helpers_check_a_spec():
  summary = tf.compat.v1.summary.Summary(value=[
      tf.compat.v1.summary.Summary.Value(tag='loss', simple_value=2.)])
  head_utils._assert_simple_summaries(_Case(), {'loss': 2.},
                                      summary.SerializeToString())
  with pytest.raises(AssertionError):
    head_utils._assert_simple_summaries(_Case(), {'loss': 3.},
                                        summary.SerializeToString())
  with tf.Graph().as_default():
    tf.compat.v1.Variable(1.)
    spec = v1_head._regression_head().create_estimator_spec(
        features={}, mode='train', logits=tf.constant([[1.]]),
        labels=tf.constant([[2.]]), train_op_fn=lambda loss: tf.no_op())
    head_utils._assert_no_hooks(_Case(), spec)
    with tf.compat.v1.Session().as_default():
      head_utils._initialize_variables(_Case(), tf.compat.v1.train.Scaffold())
  assert head_utils._DEFAULT_SERVING_KEY == 'serving_default'


def test_saved_model_estimator_helpers_read_a_signature_as_2_15s():
  assert cases.saved_model_helpers() == REFERENCE['saved_model_helpers']
