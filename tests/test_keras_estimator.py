"""model_to_estimator: a compiled Keras model as an Estimator (eager
engine), starting from the model's weights, with its compiled loss,
optimizer and metrics; the same figures as tf.estimator 2.15's
tf.keras.estimator.model_to_estimator on the same model and data."""

import json
import os
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.core.errors import UserInputError
from estimator_rt.estimator.keras.model_to_estimator import model_to_estimator
from conftest import REPO_ROOT
from conftest import run_python

sys.path.insert(0, os.path.join(REPO_ROOT, 'scripts', 'tf_estimator_215'))
import keras_estimator_reference as reference  # pylint: disable=g-import-not-at-top,wrong-import-position

RNG = np.random.RandomState(0)
X = RNG.normal(size=(256, 4)).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)

# tf.estimator 2.15's figures, printed by
#   .venv-tf215/bin/python scripts/tf_estimator_215/keras_estimator_reference.py
# (tf.keras.estimator.model_to_estimator on reference.build(program), 40
# SGD steps of batch 32 in a fixed order, then evaluate on all 256 rows and
# predict the first 3).
TF215 = {
    'one_output': {
        'metrics': {'accuracy': 0.92578125, 'global_step': 40,
                    'loss': 0.3156362473964691, 'xent': 0.3156362473964691},
        'predictions': [{'probs': [-0.3850986361503601, 2.4727048873901367]},
                        {'probs': [-1.5739715099334717, 1.300244688987732]},
                        {'probs': [0.8771333694458008, 0.5639852285385132]}],
        'signature_outputs': ['probs'],
    },
    'two_outputs': {
        'metrics': {'cls_accuracy': 0.9765625, 'global_step': 40,
                    'loss': 0.21887892484664917,
                    'reg_mae': 0.12297280132770538},
        'predictions': [
            {'cls': [-5.11902379989624, 4.876075267791748],
             'reg': [0.19505953788757324]},
            {'cls': [-2.876546859741211, 1.9570515155792236],
             'reg': [1.0768511295318604]},
            {'cls': [-0.9057087898254395, 0.4438630938529968],
             'reg': [-0.38353145122528076]}],
        'signature_outputs': ['cls', 'reg'],
    },
}


def _model(learning_rate):
  keras.utils.set_random_seed(1)
  inputs = keras.Input((4,), name='x')
  hidden = keras.layers.Dense(8, activation='relu')(inputs)
  outputs = keras.layers.Dense(2, name='probs')(hidden)
  model = keras.Model(inputs, outputs)
  model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                loss=keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True),
                metrics=['accuracy',
                         keras.metrics.SparseCategoricalCrossentropy(
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
  estimator = model_to_estimator(
      keras_model=model, model_dir=str(tmp_path),
      metric_names_map={'xent': 'cross_entropy'})
  estimator.train(_train_input_fn, max_steps=1)
  metrics = estimator.evaluate(_eval_input_fn)
  assert set(metrics) == {'accuracy', 'cross_entropy', 'loss', 'global_step'}
  for ours, theirs in (('accuracy', 'accuracy'), ('cross_entropy', 'xent'),
                       ('loss', 'loss')):
    assert np.isclose(metrics[ours], expected[theirs], atol=1e-5), (
        metrics, expected)


class SubclassedModel(keras.Model):
  """A subclassed model: it rebuilds from get_config, and creates its
  variables when built."""

  def __init__(self, units=1, **kwargs):
    super().__init__(**kwargs)
    self.units = units
    self.hidden = keras.layers.Dense(3, activation='relu')
    self.out = keras.layers.Dense(units)

  def call(self, inputs):
    return self.out(self.hidden(inputs))

  def get_config(self):
    return {'units': self.units}


def test_a_subclassed_model_starts_from_its_weights(tmp_path):
  """2.15 started a subclassed model from fresh weights (with a warning);
  here it starts from the model's, as other models do."""
  keras.utils.set_random_seed(2)
  model = SubclassedModel()
  model(X[:1])
  model.compile(optimizer=keras.optimizers.SGD(0.0), loss='mse',
                metrics=['mae'])
  target = X[:, :1] - X[:, 1:2]
  expected = model.evaluate(X, target, batch_size=64, verbose=0,
                            return_dict=True)
  estimator = model_to_estimator(keras_model=model, model_dir=str(tmp_path))
  input_fn = lambda: tf.data.Dataset.from_tensor_slices((X, target)).batch(64)
  estimator.train(input_fn, max_steps=1)
  metrics = estimator.evaluate(input_fn)
  for name in ('loss', 'mae'):
    assert np.isclose(metrics[name], expected[name], atol=1e-5), (
        metrics, expected)
  predictions = list(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices(X[:2]).batch(2)))
  assert [sorted(p) for p in predictions] == [['output_1']] * 2


def test_trains_predicts_and_exports_a_signature_a_fresh_process_serves(
    tmp_path):
  model = _model(0.1)
  estimator = model_to_estimator(keras_model=model,
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


@pytest.mark.parametrize('keras_module', ['keras', 'tf_keras'])
@pytest.mark.parametrize('program', reference.PROGRAMS)
def test_the_same_figures_as_tf_estimator_215(tmp_path, program,
                                              keras_module):
  """The same model, initial weights and batches as 2.15's run (TF215):
  the same metric names and values, predictions and serving outputs. A
  tf_keras model (Keras 2, as 2.15's tf.keras was) gives them too."""
  module = keras if keras_module == 'keras' else pytest.importorskip(
      'tf_keras')
  features, labels = reference.data(program)
  exported = program == 'two_outputs' and keras_module == 'keras'
  # One more signature, named by the output it serves (2.15's meaning).
  export_outputs = {'reg': ert.export.PredictOutput} if exported else None
  estimator = model_to_estimator(
      keras_model=reference.build(program, module),
      model_dir=str(tmp_path / 'm'), export_outputs=export_outputs)
  estimator.train(
      lambda: tf.data.Dataset.from_tensor_slices(
          (features, labels)).repeat().batch(reference.BATCH),
      max_steps=reference.TRAIN_STEPS)
  metrics = estimator.evaluate(
      lambda: tf.data.Dataset.from_tensor_slices((features, labels)).batch(64))
  expected = TF215[program]
  assert sorted(metrics) == sorted(expected['metrics'])
  for name, value in expected['metrics'].items():
    assert np.isclose(metrics[name], value, atol=1e-5), (name, metrics)
  predictions = list(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices(
          {'x': features['x'][:reference.PREDICTED]}).batch(3)))
  for ours, theirs in zip(predictions, expected['predictions']):
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
      assert np.allclose(ours[name], theirs[name], atol=1e-5), (name, ours)
  if exported:
    export = estimator.export_saved_model(
        str(tmp_path / 'export'),
        ert.export.build_raw_serving_input_receiver_fn(
            {'x': tf.TensorSpec([None, 4], tf.float32)}))
    signatures = tf.saved_model.load(export).signatures
    assert sorted(signatures) == ['reg', 'serving_default']
    signature = signatures['serving_default']
    assert sorted(signature.structured_outputs) == expected[
        'signature_outputs']
    served = signature(x=tf.constant(features['x'][:3]))
    assert np.allclose(served['reg'].numpy(),
                       [p['reg'] for p in predictions], atol=1e-5)
    served = signatures['reg'](x=tf.constant(features['x'][:3]))
    assert np.allclose(served['output'].numpy(),
                       [p['reg'] for p in predictions], atol=1e-5)


def test_sample_weights_in_features_weight_the_loss(tmp_path):
  """2.15's features {'features': ..., 'sample_weights': ...}: the loss is
  model.evaluate's with those sample weights."""
  model = _model(0.0)
  weights = (np.arange(256) % 3).astype(np.float32)
  expected = model.evaluate(X, Y, sample_weight=weights, batch_size=64,
                            verbose=0, return_dict=True)
  estimator = model_to_estimator(keras_model=model, model_dir=str(tmp_path))

  def input_fn():
    return tf.data.Dataset.from_tensor_slices((
        {'features': {'x': X}, 'sample_weights': weights}, Y)).batch(64)

  estimator.train(input_fn, max_steps=1)
  metrics = estimator.evaluate(input_fn)
  assert np.isclose(metrics['loss'], expected['loss'], atol=1e-5), (
      metrics, expected)


def test_a_saved_model_file_and_refusals(tmp_path):
  """keras_model_path loads a saved .keras file; an uncompiled model, a
  subclassed tf_keras model, an export_outputs key the model does not have
  (refused before anything runs), a metric_names_map key it does not have
  (refused when the evaluation is built, as 2.15 did), features missing an
  input (2.15's FormattedKeyError, a KeyError), both or neither model
  argument: one UserInputError each, naming the argument."""
  model = _model(0.1)
  path = str(tmp_path / 'model.keras')
  model.save(path)
  estimator = model_to_estimator(keras_model_path=path,
                                 model_dir=str(tmp_path / 'm'))
  estimator.train(_train_input_fn, max_steps=1)
  assert set(estimator.evaluate(_eval_input_fn, steps=1)) == {
      'accuracy', 'xent', 'loss', 'global_step'}
  uncompiled = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
  with pytest.raises(UserInputError,
                     match='The given keras model has not been compiled yet'):
    model_to_estimator(keras_model=uncompiled)
  tf_keras = pytest.importorskip('tf_keras')

  class Subclassed(tf_keras.Model):

    def call(self, inputs):
      return inputs

  subclassed = Subclassed()
  subclassed.compile(optimizer='sgd', loss='mse')
  with pytest.raises(UserInputError, match='subclassed tf_keras'):
    model_to_estimator(keras_model=subclassed)
  misnamed = model_to_estimator(keras_model=model,
                                metric_names_map={'auc': 'x'})
  with pytest.raises(UserInputError, match=r"Invalid `metric_names_map`.*"
                     r"unexpected keys.*\['auc'\]"):
    misnamed.evaluate(_eval_input_fn, steps=1)
  with pytest.raises(KeyError, match=r"export_outputs(.|\n)*Missed keys: "
                     r"\{'y'\}"):
    model_to_estimator(keras_model=model,
                       export_outputs={'y': ert.export.RegressionOutput})
  with pytest.raises(KeyError, match=r"features keys: \{'z'\}\n\tMissed "
                     r"keys: \{'x'\}"):
    estimator.train(
        lambda: tf.data.Dataset.from_tensors(({'z': X}, Y)), steps=1)
  with pytest.raises(UserInputError, match='Either `keras_model` or '):
    model_to_estimator()
  with pytest.raises(UserInputError, match='not both'):
    model_to_estimator(keras_model=model, keras_model_path=path)
  with pytest.raises(UserInputError, match='keras_model_path'):
    model_to_estimator(keras_model_path=str(tmp_path / 'missing.keras'))


def test_a_tf_keras_model_with_custom_objects_and_2_15_metric_names(
    tmp_path):
  """custom_objects reach the clone; a tf_keras metric name Keras 3 lacks
  ('cosine_proximity') keeps its name and value; an input_fn returning
  NumPy arrays (read again at every step, as a graph read them) runs."""
  tf_keras = pytest.importorskip('tf_keras')

  def custom_relu(x):
    return tf.nn.relu6(x)

  tf_keras.utils.set_random_seed(2)
  inputs = tf_keras.Input((4,), name='x')
  outputs = tf_keras.layers.Dense(2, activation=custom_relu)(inputs)
  model = tf_keras.Model(inputs, outputs)
  model.compile(optimizer='sgd', loss='mse', metrics=['cosine_proximity'])
  labels = np.stack([Y, 1 - Y], axis=1).astype(np.float32)
  expected = model.evaluate(X, labels, batch_size=256, verbose=0)
  with pytest.raises(Exception, match='custom_relu'):
    model_to_estimator(keras_model=model, model_dir=str(tmp_path / 'a'))
  estimator = model_to_estimator(keras_model=model,
                                 model_dir=str(tmp_path / 'b'),
                                 custom_objects={'custom_relu': custom_relu})
  results = estimator.evaluate(lambda: ({'x': X}, labels), steps=1)
  np.testing.assert_allclose(
      [results['loss'], results['cosine_proximity']], expected, rtol=1e-5)


def test_a_tf1_optimizer_trains_as_in_tf_keras_and_export_needs_no_training(
    tmp_path):
  """A tf_keras model compiled with a TF1 optimizer trains with that
  optimizer (one step: the weights tf_keras's train_on_batch gives); an
  export before any training exports the model's weights, with a signature
  per export_outputs entry (TensorFlow's export output classes too)."""
  tf_keras = pytest.importorskip('tf_keras')
  from tensorflow.python.saved_model.model_utils import export_output  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  tf_keras.utils.set_random_seed(3)
  inputs = tf_keras.Input((4,), name='x')
  model = tf_keras.Model(inputs, tf_keras.layers.Dense(1, name='y')(inputs))
  model.compile(optimizer=tf.compat.v1.train.RMSPropOptimizer(0.1),
                loss='mse')
  labels = X[:, :1] * 2.0
  estimator = model_to_estimator(
      keras_model=model, model_dir=str(tmp_path / 'm'),
      export_outputs={'y': export_output.RegressionOutput})
  receiver = ert.export.build_raw_serving_input_receiver_fn(
      {'x': tf.TensorSpec([None, 4], tf.float32)})
  served = tf.saved_model.load(
      estimator.export_saved_model(str(tmp_path / 'export'), receiver))
  assert set(served.signatures) == {'serving_default', 'y'}
  np.testing.assert_allclose(
      served.signatures['y'](x=tf.constant(X[:3]))['outputs'],
      model.predict(X[:3], verbose=0), rtol=1e-5)
  estimator.train(lambda: tf.data.Dataset.from_tensors(({'x': X}, labels)),
                  steps=1)
  model.train_on_batch(X, labels)
  predicted = np.stack([p['y'] for p in estimator.predict(
      lambda: tf.data.Dataset.from_tensors({'x': X[:3]}))])
  np.testing.assert_allclose(predicted, model.predict(X[:3], verbose=0),
                             rtol=1e-5)


def test_a_subclassed_tf_keras_model_and_a_begin_only_session_hook(tmp_path):
  """A subclassed tf_keras model (with get_config/from_config) starts from
  its weights; 2.15's default object-based checkpoint_format is refused
  for it, as 2.15 refused it. A SessionRunHook overriding begin() only
  has it called once before training; one that looks at steps is refused
  in the eager engine."""
  tf_keras = pytest.importorskip('tf_keras')

  class Subclassed(tf_keras.Model):

    def __init__(self):
      super().__init__()
      self.dense = tf_keras.layers.Dense(1)

    def call(self, inputs):
      return self.dense(inputs)

    def get_config(self):
      return {}

    @classmethod
    def from_config(cls, config):
      return cls()

  class BeginOnly(tf.compat.v1.train.SessionRunHook):
    begun = 0

    def begin(self):
      BeginOnly.begun += 1

  class PerStep(tf.compat.v1.train.SessionRunHook):

    def before_run(self, run_context):
      return None

  tf_keras.utils.set_random_seed(4)
  model = Subclassed()
  model.compile(optimizer='sgd', loss='mse')
  labels = X[:, :1] * 2.0
  model.train_on_batch(X, labels)
  expected = model.evaluate(X, labels, batch_size=256, verbose=0)
  with pytest.raises(ValueError, match='Object-based checkpoints are '
                     'currently not supported with subclassed models'):
    model_to_estimator(keras_model=model, model_dir=str(tmp_path / 'a'))
  estimator = model_to_estimator(keras_model=model, checkpoint_format='saver',
                                 model_dir=str(tmp_path / 'b'))
  data = lambda: tf.data.Dataset.from_tensors((X, labels))
  assert estimator.evaluate(data, steps=1)['loss'] == pytest.approx(
      expected, rel=1e-5)
  estimator.train(data, steps=1, hooks=[BeginOnly()])
  assert BeginOnly.begun == 1
  with pytest.raises(UserInputError, match='PerStep is a SessionRunHook'):
    estimator.train(data, steps=1, hooks=[PerStep()])


def test_starts_from_keras_weights_saved_in_model_dir_keras(tmp_path):
  """A checkpoint of the tf_keras model's weights in model_dir/keras is
  what the estimator starts from, as 2.15 warm-started from it."""
  tf_keras = pytest.importorskip('tf_keras')
  tf_keras.utils.set_random_seed(5)
  inputs = tf_keras.Input((4,), name='x')
  model = tf_keras.Model(inputs, tf_keras.layers.Dense(1, name='y')(inputs))
  model.compile(optimizer='sgd', loss='mse')
  labels = X[:, :1] * 2.0
  expected = model.evaluate(X, labels, batch_size=256, verbose=0)
  path = str(tmp_path / 'm' / 'keras' / 'weights.ckpt')
  model.save_weights(path)
  model.set_weights([np.zeros_like(w) for w in model.get_weights()])
  estimator = model_to_estimator(keras_model=model,
                                 model_dir=str(tmp_path / 'm'))
  assert estimator._warm_start_settings.ckpt_to_initialize_from == path  # pylint: disable=protected-access
  results = estimator.evaluate(
      lambda: tf.data.Dataset.from_tensors((X, labels)), steps=1)
  assert results['loss'] == pytest.approx(expected, rel=1e-5)


def test_a_tf_keras_model_built_in_a_graph(tmp_path):
  """A tf_keras model built and compiled under tf.Graph().as_default()
  (its v1 model): its uninitialized weights get 2.15's tf_keras session
  made with the session config, and the estimator, called in the graph
  context (evaluate, and predict between graph-mode code), runs eagerly
  from those weights."""
  tf_keras = pytest.importorskip('tf_keras')
  labels = X[:, :1] * 2.0
  gpu_options = tf.compat.v1.GPUOptions(per_process_gpu_memory_fraction=0.3)
  config = ert.RunConfig(session_config=tf.compat.v1.ConfigProto(
      gpu_options=gpu_options))
  with tf.Graph().as_default():
    inputs = tf_keras.Input((4,), name='x')
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(1, name='y')(inputs))
    model.compile(optimizer='sgd', loss='mse')
    estimator = model_to_estimator(keras_model=model, config=config,
                                   model_dir=str(tmp_path / 'm'))
    from tf_keras.src import backend  # pylint: disable=g-import-not-at-top
    session = backend.get_session()
    assert session._config.gpu_options.per_process_gpu_memory_fraction == (  # pylint: disable=protected-access
        pytest.approx(0.3))
    kernel, bias = session.run(model.weights)
    results = estimator.evaluate(
        lambda: tf.data.Dataset.from_tensors((X, labels)), steps=1)
    predictions = [p['y'] for p in estimator.predict(
        lambda: tf.data.Dataset.from_tensors(X[:3]))]
  assert results['loss'] == pytest.approx(
      float(np.mean((X @ kernel + bias - labels)**2)), rel=1e-5)
  np.testing.assert_allclose(np.stack(predictions), X[:3] @ kernel + bias,
                             rtol=1e-5)


def test_a_wide_deep_model_with_one_optimizer_per_part(tmp_path):
  """A tf_keras WideDeepModel compiled with (linear, dnn) optimizers
  trains each part with its own, as its train_step does: one step gives
  the weights tf_keras's train_on_batch gives."""
  tf_keras = pytest.importorskip('tf_keras')
  tf_keras.utils.set_random_seed(6)
  linear = tf_keras.experimental.LinearModel(units=1)
  dnn = tf_keras.Sequential([tf_keras.layers.Dense(1)])
  model = tf_keras.experimental.WideDeepModel(linear, dnn)
  model.compile([tf_keras.optimizers.SGD(0.1), tf_keras.optimizers.SGD(0.0)],
                'mse')
  labels = X[:, :1] * 2.0
  model.predict(X[:1], verbose=0)  # Builds it.
  estimator = model_to_estimator(keras_model=model, checkpoint_format='saver',
                                 model_dir=str(tmp_path / 'm'))
  estimator.train(lambda: tf.data.Dataset.from_tensors((X, labels)), steps=1)
  model.train_on_batch(X, labels)
  predicted = np.stack([p['output_1'] for p in estimator.predict(
      lambda: tf.data.Dataset.from_tensors(X[:3]))])
  np.testing.assert_allclose(predicted,
                             model.predict(X[:3], verbose=0), rtol=1e-5)


def test_model_dir_and_session_config_as_2_15_filled_them_in():
  """No model_dir: a temporary one, made at once; the default session
  config in the Estimator's config (2.15's model_to_estimator did both)."""
  estimator = model_to_estimator(keras_model=_model(0.1))
  assert os.path.isdir(estimator.model_dir)
  assert estimator.config.session_config == (
      ert.cluster.run_config.get_default_session_config())
  os.rmdir(estimator.model_dir)


def test_tensorflow_estimators_keras_lib_route():
  """What tf.keras.estimator.model_to_estimator called in 2.15,
  tensorflow_estimator's keras_lib.model_to_estimator, is served here
  through the compatibility layer (use_v2_estimator makes no difference)."""
  import estimator_rt.compat  # pylint: disable=g-import-not-at-top
  estimator_rt.compat.install()
  from tensorflow_estimator.python.estimator import keras_lib  # pylint: disable=g-import-not-at-top
  estimator = keras_lib.model_to_estimator(keras_model=_model(0.1),
                                           use_v2_estimator=True)
  assert isinstance(estimator, ert.Estimator)
