"""The RNN estimators (tf.estimator.experimental.RNNClassifier /
RNNEstimator) and 2.15's `canned.rnn` module served over them: the layer
built from `units`/`cell_type`/`rnn_cell_fn`, the logits RNNModel computes
(numbers worked out by hand in 2.15's rnn_test.py), and training in the
graph engine into checkpoints with 2.15's variable names.
"""

import importlib

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import estimator_rt.compat
from estimator_rt.estimator.canned import rnn
from estimator_rt.compat import namespaces
from estimator_rt.core.errors import UserInputError

PRICE = tf.feature_column.sequence_numeric_column('price', shape=(1,))


def _served():
  estimator_rt.compat.install()
  return importlib.import_module(
      'tensorflow_estimator.python.estimator.canned.rnn')


def test_layer_from_units_and_cell_type():
  layers = tf_keras.layers
  assert isinstance(rnn.make_rnn_layer(None, 3, 'lstm', False), layers.LSTM)
  stacked = rnn.make_rnn_layer(None, [2, 3], rnn.USE_DEFAULT, True)
  assert isinstance(stacked, layers.RNN)
  assert isinstance(stacked.cell, layers.StackedRNNCells)
  assert [type(c) for c in stacked.cell.cells] == [layers.SimpleRNNCell] * 2
  assert stacked.return_sequences
  with pytest.raises(ValueError, match='should be a class producing a RNN'):
    rnn.make_rnn_layer(None, [2], 'no-such-cell', False)
  with pytest.raises(ValueError, match='units and cell_type must not be'):
    rnn.RNNClassifier([PRICE], units=[2], rnn_cell_fn=lambda: None)


def test_served_builder_reads_the_served_table():
  """2.15's tests replace `_CELL_TYPE_TO_LAYER_MAPPING` on the module: the
  builder must see the replacement."""
  served = _served()
  made = []
  original = served._CELL_TYPE_TO_LAYER_MAPPING  # pylint: disable=protected-access
  served._CELL_TYPE_TO_LAYER_MAPPING = {  # pylint: disable=protected-access
      'custom': lambda **kwargs: made.append(kwargs)}
  try:
    served._make_rnn_layer(None, 4, 'custom', 'seq')  # pylint: disable=protected-access
  finally:
    served._CELL_TYPE_TO_LAYER_MAPPING = original  # pylint: disable=protected-access
  assert made == [{'units': 4, 'return_sequences': 'seq'}]
  assert served.USE_DEFAULT is rnn.USE_DEFAULT
  assert served.RNNClassifier is rnn.RNNClassifier
  assert namespaces.v2().experimental.RNNEstimator is rnn.RNNEstimator


def test_rnn_model_logits_with_context_match_2_15s_hand_computation():
  """rnn_test.py's testMultiExamplesWithContext: two sequences (lengths 2
  and 1) and a context value, a SimpleRNN of fixed weights."""
  const = tf.compat.v1.initializers.constant
  layer = tf_keras.layers.SimpleRNN(
      2, kernel_initializer=const([[.1, -.2], [1., .9]]),
      recurrent_initializer=const([[.2, -.3], [.3, -.4]]),
      bias_initializer=const([.2, .5]))
  model = rnn.rnn_model_class()(
      rnn_layer=layer, units=1, sequence_feature_columns=[PRICE],
      context_feature_columns=[
          tf.feature_column.numeric_column('context', shape=(1,))])
  model(_features(), training=False)  # Builds the logits layer.
  model._logits_layer.set_weights(  # pylint: disable=protected-access
      [np.array([[-1.], [1.]]), np.array([.3])])
  logits = model(_features(), training=False)
  np.testing.assert_allclose(logits.numpy(), [[-0.3662], [0.1414]],
                             atol=1e-4)
  config = model.get_config()
  assert config['units'] == 1 and config['rnn_layer']['class_name'] == (
      'SimpleRNN')
  again = type(model).from_config(config)
  assert again.get_config() == config


def _features():
  return {'price': tf.sparse.SparseTensor(
              values=[10., 5., 2.], indices=[[0, 0], [0, 1], [1, 0]],
              dense_shape=[2, 2]),
          'context': tf.constant([[-0.5], [0.8]])}


def _train_input_fn():
  return tf.data.Dataset.from_tensors(
      ({'tokens': tf.sparse.SparseTensor(
          values=['the', 'cat', 'sat'], indices=[[0, 0], [0, 1], [0, 2]],
          dense_shape=[1, 3])}, [[1]])).repeat()


def test_classifier_trains_into_2_15s_variable_names(tmp_path):
  tokens = tf.feature_column.embedding_column(
      tf.feature_column.sequence_categorical_column_with_hash_bucket(
          'tokens', hash_bucket_size=10), dimension=2)
  est = rnn.RNNClassifier(sequence_feature_columns=[tokens], units=[4, 2],
                          n_classes=3, model_dir=str(tmp_path))
  est.train(_train_input_fn, steps=3)
  shapes = dict(tf.train.list_variables(str(tmp_path)))
  assert est.get_variable_value('global_step') == 3
  # The names and shapes tf.estimator 2.15 wrote for this program.
  cells = 'rnn_model/rnn/stacked_rnn_cells/simple_rnn_cell'
  assert {name: shape for name, shape in shapes.items()
          if not name.startswith('training/')} == {
              'global_step': [],
              'rnn_model/logits/bias': [3],
              'rnn_model/logits/kernel': [2, 3],
              f'{cells}/bias': [4], f'{cells}/kernel': [2, 4],
              f'{cells}/recurrent_kernel': [4, 4],
              f'{cells}_1/bias': [2], f'{cells}_1/kernel': [4, 2],
              f'{cells}_1/recurrent_kernel': [2, 2],
              'sequence_features/tokens_embedding/embedding_weights': [10, 2]}
  assert shapes[f'training/Adagrad/{cells}_1/kernel/accumulator'] == [4, 2]
  metrics = est.evaluate(_train_input_fn, steps=1)
  assert metrics['global_step'] == 3 and 'accuracy' in metrics


def test_return_sequences_needs_a_sequential_head():
  with pytest.raises(UserInputError, match='must be a `_SequentialHead`'):
    rnn.RNNEstimator(head=namespaces.v2().MultiClassHead(3),
                     sequence_feature_columns=[PRICE], return_sequences=True)
