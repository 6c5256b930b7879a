"""model_to_estimator: a compiled Keras 3 model as an Estimator (eager
engine), starting from the model's weights, with its compiled loss,
optimizer and metrics, and tf.keras.estimator's route through the
compatibility layer."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.errors import UserInputError
from conftest import run_python

RNG = np.random.RandomState(0)
X = RNG.normal(size=(256, 4)).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)


def _model(learning_rate):
  keras.utils.set_random_seed(1)
  inputs = keras.Input((4,), name='x')
  hidden = keras.layers.Dense(8, activation='relu')(inputs)
  outputs = keras.layers.Dense(2, name='probs')(hidden)
  model = keras.Model(inputs, outputs)
  model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                loss=keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True),
                metrics=['accuracy', keras.metrics.SparseCategoricalCrossentropy(
                    from_logits=True, name='xent')])
  return model


def _train_input_fn():
  return tf.data.Dataset.from_tensor_slices(({'x': X}, Y)).repeat().batch(32)


def _eval_input_fn():
  return tf.data.Dataset.from_tensor_slices(({'x': X}, Y)).batch(64)


def test_starts_from_the_models_weights_with_its_metric_names(tmp_path):
  """Learning rate 0: after a step the estimator still holds the Keras
  model's weights, and evaluates to what model.evaluate gives, under the
  same names (metric_names_map renames one)."""
  model = _model(0.0)
  expected = model.evaluate(X, Y, batch_size=64, verbose=0, return_dict=True)
  estimator = ert.model_to_estimator(
      keras_model=model, model_dir=str(tmp_path),
      metric_names_map={'xent': 'cross_entropy'})
  estimator.train(_train_input_fn, max_steps=1)
  metrics = estimator.evaluate(_eval_input_fn)
  assert set(metrics) == {'accuracy', 'cross_entropy', 'loss', 'global_step'}
  for ours, theirs in (('accuracy', 'accuracy'), ('cross_entropy', 'xent'),
                       ('loss', 'loss')):
    assert np.isclose(metrics[ours], expected[theirs], atol=1e-5), (
        metrics, expected)


def test_trains_predicts_and_exports_a_signature_a_fresh_process_serves(
    tmp_path):
  model = _model(0.1)
  estimator = ert.model_to_estimator(keras_model=model,
                                     model_dir=str(tmp_path / 'm'))
  before = model.evaluate(X, Y, batch_size=64, verbose=0,
                          return_dict=True)['loss']
  estimator.train(_train_input_fn, max_steps=60)
  metrics = estimator.evaluate(_eval_input_fn)
  assert metrics['loss'] < before * 0.7, (metrics, before)
  predictions = list(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({'x': X[:3]}).batch(3)))
  assert [sorted(p) for p in predictions] == [['probs']] * 3
  export = estimator.export_saved_model(
      str(tmp_path / 'export'),
      ert.export.build_raw_serving_input_receiver_fn(
          {'x': tf.TensorSpec([None, 4], tf.float32)}))
  code = ('import json, sys, tensorflow as tf\n'
          'f = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]\n'
          'out = f(x=tf.constant(json.loads(sys.argv[2]), tf.float32))\n'
          'print(json.dumps(out["probs"].numpy().tolist()))\n')
  result = run_python(['-c', code, export, json.dumps(X[:3].tolist())],
                      timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  served = json.loads(result.stdout.strip().splitlines()[-1])
  assert np.allclose(served, [p['probs'] for p in predictions], atol=1e-5)


def test_the_compatibility_layers_route_and_refusals():
  """tf_keras's tf.keras.estimator.model_to_estimator calls
  tensorflow_estimator's keras_lib.model_to_estimator: served here. A
  tf_keras model, an uncompiled model, both or neither argument: one
  line each."""
  import estimator_rt.compat  # pylint: disable=g-import-not-at-top
  estimator_rt.compat.install()
  from tensorflow_estimator.python.estimator import keras_lib  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import metric_keys  # pylint: disable=g-import-not-at-top
  assert metric_keys.MetricKeys.AUC_PR == 'auc_precision_recall'
  estimator = keras_lib.model_to_estimator(keras_model=_model(0.1),
                                           use_v2_estimator=True)
  assert isinstance(estimator, ert.Estimator)
  import tf_keras  # pylint: disable=g-import-not-at-top
  old = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(4,))])
  old.compile(optimizer='sgd', loss='mse')
  with pytest.raises(UserInputError, match='tf_keras'):
    ert.model_to_estimator(keras_model=old)
  uncompiled = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
  with pytest.raises(UserInputError, match='not compiled'):
    ert.model_to_estimator(keras_model=uncompiled)
  with pytest.raises(UserInputError, match='exactly one'):
    ert.model_to_estimator()
