"""The pieces of the linear, baseline and KMeans estimators that programs
(and tf.estimator 2.15's own tests) use on their own: the Keras
`LinearModel`, the fraction of zero weights, the baseline's builder,
KMeans' feature parsing and its initialization error; and what training a
canned estimator does with a given optimizer object. Each runs in seconds.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from estimator_rt.core import errors
from estimator_rt.estimator.canned import baseline
from estimator_rt.estimator.canned import kmeans
from estimator_rt.estimator.canned import linear_logits
from estimator_rt.estimator.canned import optimizers


def _run(*tensors):
  with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    return session.run(list(tensors))


# ------------------------------------------------------------ LinearModel


def test_linear_model_variables_and_output():
  from estimator_rt.estimator.canned import linear_model  # pylint: disable=g-import-not-at-top
  price = tf.feature_column.numeric_column('price')
  color = tf.feature_column.categorical_column_with_vocabulary_list(
      'color', ['red', 'blue'])
  with tf.Graph().as_default():
    model = linear_model.LinearModel([price, color], units=2)
    output = model({'price': [[1.], [3.]], 'color': [['blue'], ['red']]})
    names = sorted(v.name for v in model.variables)
    assert names == ['linear_model/bias_weights:0',
                     'linear_model/color/weights:0',
                     'linear_model/price/weights:0']
    # 2.15's: the model's name scope, the layer's, and call()'s own.
    assert output.name == 'linear_model/linear_model/linear_model/weighted_sum:0'
    with tf.compat.v1.Session() as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.tables_initializer()])
      color_var, price_var = (model.layer._state_manager.get_variable(c, 'weights')  # pylint: disable=protected-access
                              for c in (color, price))
      session.run([price_var.assign([[10., 1.]]),
                   color_var.assign([[1., 2.], [3., 4.]]),
                   model.bias.assign([.5, -.5])])
      # price * w_price + w_color[id] + bias.
      np.testing.assert_allclose(session.run(output),
                                 [[13.5, 4.5], [31.5, 4.5]])


def test_linear_model_refuses_bad_columns_and_features():
  from estimator_rt.estimator.canned import linear_model  # pylint: disable=g-import-not-at-top

  class _Neither(tf.__internal__.feature_column.FeatureColumn):
    name = 'neither'
    parse_example_spec = {}
    parents = []
    _is_v2_column = True

    def transform_feature(self, transformation_cache, state_manager):
      del transformation_cache, state_manager

    def get_config(self):
      return {}

    @classmethod
    def from_config(cls, config, custom_objects=None, columns_by_name=None):
      return cls()

  with pytest.raises(ValueError, match='^Items of feature_columns must be '
                     'either a DenseColumn or CategoricalColumn'):
    linear_model.LinearModel([_Neither()])
  with tf.Graph().as_default():
    model = linear_model.LinearModel([tf.feature_column.numeric_column('a')])
    with pytest.raises(errors.UserInputError,
                       match='^We expected a dictionary here'):
      model([[1.]])


def test_linear_model_layer_config_round_trip():
  from estimator_rt.estimator.canned import linear_model  # pylint: disable=g-import-not-at-top
  columns = [tf.feature_column.numeric_column('a'),
             tf.feature_column.categorical_column_with_hash_bucket('b', 3)]
  layer = linear_model.LinearModelLayer(columns, units=4,
                                        sparse_combiner='mean', name='lin')
  copy = linear_model.LinearModelLayer.from_config(layer.get_config())
  assert (copy.name, copy._units, copy._sparse_combiner) == ('lin', 4, 'mean')  # pylint: disable=protected-access
  assert [c.name for c in copy._feature_columns] == ['a', 'b']  # pylint: disable=protected-access


def test_static_batch_sizes_must_agree():
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match=r'^Batch size \(first dimension\) '
                       'of each feature must be same'):
      linear_logits.build_linear(
          units=1, sparse_combiner='sum',
          feature_columns=[tf.feature_column.numeric_column('a'),
                           tf.feature_column.numeric_column('b')],
          features={'a': tf.zeros([3, 1]), 'b': tf.zeros([2, 1])})


# ------------------------------------------------------- fraction_of_zero


def test_fraction_of_zero_over_mixed_dtypes_and_empty():
  with tf.Graph().as_default():
    fraction = linear_logits.fraction_of_zero([
        tf.constant([0., 1., 0.]), tf.constant([0, 0, 5], tf.int64),
        tf.constant([], tf.float32)])
    empty = linear_logits.fraction_of_zero([tf.constant([]), tf.constant([])])
    assert fraction.name == 'zero_fraction/zero_fraction_or_nan:0'
    value, nothing = _run(fraction, empty)
  assert value == pytest.approx(4 / 6)
  assert math.isnan(nothing)
  with pytest.raises(errors.UserInputError, match='values=.* is empty'):
    linear_logits.fraction_of_zero([])


# --------------------------------------------------------------- baseline


def test_build_baseline_repeats_the_bias():
  with tf.Graph().as_default():
    bias, logits = baseline.build_baseline(
        features={'age': [[23.], [31.]], 'w': [[1.]]}, logits_dimension=2,
        weight_column='w')
    assert bias.name == 'baseline/bias:0'
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      session.run(bias.assign([10., 5.]))
      np.testing.assert_allclose(session.run(logits), [[10., 5.], [10., 5.]])


# ----------------------------------------------------------------- KMeans


def test_kmeans_parse_features():
  points = np.array([[1., 2.], [3., 4.]], np.float32)
  with tf.Graph().as_default():
    tensor = tf.constant(points)
    assert kmeans.parse_features(tensor, None) is tensor
    # Array-likes, concatenated in key order.
    joined = kmeans.parse_features({'y': [[2.], [4.]], 'x': [[1.], [3.]]},
                                   None)
    # Through columns: other features are not read.
    read = kmeans.parse_features(
        {'x': [[1.], [3.]], 'y': [[2.], [4.]], 'other': 'ignored'},
        [tf.feature_column.numeric_column('x'),
         tf.feature_column.numeric_column('y')])
    joined_value, read_value = _run(joined, read)
  np.testing.assert_array_equal(joined_value, points)
  np.testing.assert_array_equal(read_value, points)
  with pytest.raises(errors.UserInputError, match='features.*x.* shape'):
    kmeans.parse_features({'x': [1., 2.]}, None)


def test_kmeans_initialization_error_is_both_kinds():
  error = kmeans.ClusterInitializationError('assertion failed: [x] (why)')
  assert isinstance(error, errors.UserInputError)
  assert isinstance(error, tf.errors.InvalidArgumentError)
  assert str(error) == 'assertion failed: [x] (why)'


# ------------------------------------------------------ optimizer objects


def _train_op_on(optimizer):
  variable = tf.compat.v1.get_variable('w', initializer=[1.], use_resource=True)
  part = optimizers.Part(optimizer=optimizer, learning_rate=None,
                         variables=[variable])
  return optimizers.train_op([part], tf.reduce_sum(variable * 2.))


def test_an_unused_legacy_optimizer_is_used_as_given():
  """As in 2.15, the object trains, and its step counter is the global step
  (programs read `optimizer.iterations` back); once it has variables of
  one graph, a copy trains in the next."""
  import tf_keras  # pylint: disable=g-import-not-at-top
  calls = []

  class _Counting(tf_keras.optimizers.legacy.SGD):

    def get_updates(self, loss, params):
      calls.append(self)
      return super().get_updates(loss, params)

  given = _Counting(learning_rate=0.1)
  with tf.Graph().as_default():
    step = tf.compat.v1.train.get_or_create_global_step()
    train_op = _train_op_on(given)
    assert calls == [given] and given.iterations is step
    _, = _run(train_op)
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    _train_op_on(given)
    assert len(calls) == 2 and calls[1] is not given


def test_a_legacy_optimizer_with_a_decayed_learning_rate_tensor_trains():
  """TensorFlow's canned-estimator migration guide gives a Keras legacy Ftrl
  with `learning_rate=tf.compat.v1.train.exponential_decay(...)` of the
  global step, a tensor of the graph being built. The optimizer trains in
  that graph as given (its settings are not read by running the tensor
  before the variables exist), decaying with the step; a second graph is
  refused in one line saying to pass a function, as the guide does."""
  import tf_keras  # pylint: disable=g-import-not-at-top
  with tf.Graph().as_default():
    step = tf.compat.v1.train.get_or_create_global_step()
    given = tf_keras.optimizers.legacy.Ftrl(
        l1_regularization_strength=0.001,
        learning_rate=tf.compat.v1.train.exponential_decay(
            learning_rate=0.1, global_step=step, decay_steps=1,
            decay_rate=0.5))
    train_op = _train_op_on(given)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      session.run(train_op)
      assert session.run(step) == 1
      assert session.run(given._get_hyper('learning_rate')) == (  # pylint: disable=protected-access
          pytest.approx(0.05))
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    with pytest.raises(errors.UserInputError,
                       match=r'pass a function that returns the optimizer'):
      _train_op_on(given)


def test_get_variable_value_takes_a_tensor_name(tmp_path):
  import estimator_rt  # pylint: disable=g-import-not-at-top
  estimator = estimator_rt.LinearRegressor(
      [tf.feature_column.numeric_column('x')], model_dir=str(tmp_path))
  estimator.train(lambda: ({'x': [[1.], [2.]]}, [[1.], [2.]]), steps=2)
  assert estimator.get_variable_value('global_step:0') == 2


def test_an_input_fn_may_return_features_and_none():
  import estimator_rt  # pylint: disable=g-import-not-at-top
  estimator = estimator_rt.LinearRegressor(
      [tf.feature_column.numeric_column('x')])
  estimator.train(lambda: ({'x': [[1.], [2.]]}, [[1.], [2.]]), steps=1)
  predictions = estimator.predict(
      lambda: ({'x': tf.compat.v1.train.limit_epochs([[1.], [2.]], 1)}, None))
  assert len(list(predictions)) == 2
