"""The DNN and wide & deep canned estimators where tf.estimator 2.15's own
tests need 2.15's behaviour: the optimizer object the user gives (its
`get_updates`, its `iterations`), warm-starting by default, predict
input_fns of `(features, None)`, 2.15's error phrases, and the private
model_fn builders and optimizer helpers served under 2.15's module paths.
"""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import estimator_rt.compat
from estimator_rt.estimator.canned import dnn
from estimator_rt.estimator.canned import dnn_linear_combined
from estimator_rt.core.mode_keys import ModeKeys

X = tf.feature_column.numeric_column('x')


def _input_fn():
  return tf.data.Dataset.from_tensors(
      ({'x': [[1.], [2.]]}, [[1.], [3.]])).repeat()


class _CountingSGD(tf_keras.optimizers.legacy.SGD):
  """An SGD whose get_updates counts its calls (2.15 called get_updates)."""

  calls = 0

  def get_updates(self, loss, params):
    type(self).calls += 1
    return super().get_updates(loss, params)


def test_the_optimizer_object_trains_the_first_graph_itself(tmp_path):
  """As in 2.15: the user's legacy optimizer is the one the graph trains
  with (its get_updates, its iterations the global step); the next train
  call gets a copy instead of failing on the first graph's variables."""
  _CountingSGD.calls = 0
  opt = _CountingSGD(learning_rate=0.01)
  est = dnn.DNNRegressor(hidden_units=[2], feature_columns=[X],
                         model_dir=str(tmp_path), optimizer=opt)
  est.train(_input_fn, max_steps=3)
  assert _CountingSGD.calls == 1
  assert opt.iterations.name == 'global_step:0'
  assert est.get_variable_value(opt.iterations.name) == 3  # ':0' dropped.
  est.train(_input_fn, max_steps=5)
  assert _CountingSGD.calls == 2
  assert est.get_variable_value('global_step') == 5


def test_wide_and_deep_second_optimizer_keeps_its_own_counter(tmp_path):
  dnn_opt = tf_keras.optimizers.legacy.SGD(0.01)
  linear_opt = tf_keras.optimizers.legacy.SGD(0.01)
  est = dnn_linear_combined.DNNLinearCombinedRegressor(
      model_dir=str(tmp_path), linear_feature_columns=[X],
      linear_optimizer=linear_opt, dnn_feature_columns=[X],
      dnn_optimizer=dnn_opt, dnn_hidden_units=[2])
  est.train(_input_fn, max_steps=2)
  assert est.get_variable_value(dnn_opt.iterations.name) == 2
  assert linear_opt.iterations.name != dnn_opt.iterations.name
  assert est.get_variable_value(linear_opt.iterations.name) == 2


def test_default_warm_start_takes_keras_layers_variables(tmp_path):
  first = dnn.DNNRegressor(hidden_units=[3], feature_columns=[X],
                           model_dir=str(tmp_path / 'a'), optimizer='SGD')
  first.train(_input_fn, max_steps=1)
  second = dnn.DNNRegressor(
      hidden_units=[3], feature_columns=[X], model_dir=str(tmp_path / 'b'),
      optimizer=tf_keras.optimizers.legacy.SGD(learning_rate=0.0),
      warm_start_from=first.model_dir)
  second.train(_input_fn, max_steps=1)
  for name in ('dnn/hiddenlayer_0/kernel', 'dnn/logits/bias'):
    np.testing.assert_allclose(first.get_variable_value(name),
                               second.get_variable_value(name))


def test_predict_input_fn_may_return_features_and_none(tmp_path):
  est = dnn.DNNRegressor(hidden_units=[2], feature_columns=[X],
                         model_dir=str(tmp_path))
  est.train(_input_fn, max_steps=1)

  def predict_input_fn():
    # Read once: the graph evaluates returned tensors at every step.
    x = tf.compat.v1.train.limit_epochs(tf.constant([[1.], [2.], [3.]]),
                                        num_epochs=1)
    return {'x': x}, None

  assert len(list(est.predict(predict_input_fn))) == 3


def test_errors_start_with_2_15s_phrases(tmp_path):
  from tensorflow.python.feature_column import feature_column as v1_columns  # pylint: disable=g-import-not-at-top
  with pytest.raises(ValueError,
                     match='^Received a feature column from TensorFlow v1'):
    dnn_linear_combined.DNNLinearCombinedRegressor(
        linear_feature_columns=[v1_columns._numeric_column('x')])  # pylint: disable=protected-access
  with pytest.raises(ValueError, match='^Either linear_feature_columns or'):
    dnn_linear_combined.DNNLinearCombinedRegressor()
  est = dnn.DNNRegressor(hidden_units=[2], feature_columns=[X],
                         model_dir=str(tmp_path), optimizer='Adadelta')
  with pytest.raises(ValueError, match='Unsupported optimizer name: '
                     'Adadelta'):
    est.train(_input_fn, max_steps=1)


def test_served_optimizers_module():
  estimator_rt.compat.install()
  from tensorflow_estimator.python.estimator.canned import optimizers  # pylint: disable=g-import-not-at-top
  adagrad = optimizers.get_optimizer_instance_v2('Adagrad')
  assert isinstance(adagrad, tf_keras.optimizers.legacy.Adagrad)
  assert adagrad.get_config()['learning_rate'] == pytest.approx(0.001)
  given = tf_keras.optimizers.legacy.SGD()
  assert optimizers.get_optimizer_instance_v2(lambda: given) is given
  with pytest.raises(ValueError, match='^Unsupported optimizer name: x'):
    optimizers.get_optimizer_instance_v2('x')
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match='^Please set your optimizer'):
      optimizers.get_optimizer_instance_v2(tf_keras.optimizers.Adam())
  sgd = optimizers.get_optimizer_instance('SGD', learning_rate=0.1)
  assert isinstance(sgd, tf.compat.v1.train.GradientDescentOptimizer)
  with pytest.raises(ValueError, match='^learning_rate must be specified'):
    optimizers.get_optimizer_instance('SGD')
  with pytest.raises(ValueError, match='^The given object is not an '
                     'Optimizer'):
    optimizers.get_optimizer_instance((1, 2))


class _RecordingHead:
  """A head that keeps the keyword arguments of its create_estimator_spec
  call (what a model_fn hands a head of one's own)."""

  logits_dimension = 1

  def __init__(self):
    self.kwargs = None

  def create_estimator_spec(self, **kwargs):
    self.kwargs = kwargs


def test_served_dnn_model_fn_v2_hands_the_head_what_2_15_did():
  """dnn_model_fn_v2 gives the head the optimizer (its step counter the
  global step), the DNN's variables and update ops; the wide & deep
  model_fn gives a train_op_fn; both refuse non-dict features."""
  estimator_rt.compat.install()
  from tensorflow_estimator.python.estimator.canned import dnn as served_dnn  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import dnn_linear_combined as served_combined  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator import model_fn  # pylint: disable=g-import-not-at-top
  spec_class = estimator_rt.compat.resolve(
      'tf.compat.v1.estimator.tpu.TPUEstimatorSpec')
  assert issubclass(spec_class, model_fn._TPUEstimatorSpec)  # pylint: disable=protected-access
  with tf.Graph().as_default():
    global_step = tf.compat.v1.train.create_global_step()
    head = _RecordingHead()
    opt = tf_keras.optimizers.legacy.SGD()
    served_dnn.dnn_model_fn_v2(
        features={'x': tf.constant([[1.]])}, labels=None,
        mode=ModeKeys.TRAIN, head=head, hidden_units=[2],
        feature_columns=[X], optimizer=opt, batch_norm=True)
    kwargs = head.kwargs
    assert kwargs['optimizer'] is opt and opt.iterations is global_step
    assert [v.name for v in kwargs['trainable_variables']][0] == (
        'dnn/hiddenlayer_0/kernel:0')
    assert len(kwargs['update_ops']) == 2  # Batch norm's moving stats.
    with pytest.raises(ValueError, match='^features should be a dict'):
      served_combined._dnn_linear_combined_model_fn_v2(  # pylint: disable=protected-access
          features=tf.constant([[1.]]), labels=None, mode=ModeKeys.TRAIN,
          head=head, dnn_feature_columns=[X], dnn_hidden_units=[2])
    served_combined._dnn_linear_combined_model_fn_v2(  # pylint: disable=protected-access
        features={'x': tf.constant([[1.]])}, labels=None,
        mode=ModeKeys.EVAL, head=head, linear_feature_columns=[X])
    assert head.kwargs['train_op_fn'] is None


def test_a_keras_2_optimizer_made_eagerly_trains_as_its_legacy_class(
    tmp_path):
  """Its hyperparameters are eager variables, read while the graph is
  built (rnn_test.py passes tf.keras.optimizers.Adam() so)."""
  opt = tf_keras.optimizers.Adam(learning_rate=0.01)
  est = dnn.DNNRegressor(hidden_units=[2], feature_columns=[X],
                         model_dir=str(tmp_path), optimizer=opt)
  est.train(_input_fn, max_steps=2)
  assert est.get_variable_value('training/Adam/learning_rate') == (
      pytest.approx(0.01))
