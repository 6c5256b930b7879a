"""Tests for model_fns/: EstimatorSpec fields per mode, training, errors.

The model_fns are called eagerly on small batches. Where a test needs two
calls to share variables (as the runtime arranges), `_SharedVariables` hands
every call the variables of the first in creation order.
"""

import contextlib
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')

# pylint: disable=g-import-not-at-top
import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.training.eager.variable_store import VariableStore
from input_fns import digits
from model_fns import cnn
from model_fns import linear
from model_fns import mlp
# pylint: enable=g-import-not-at-top

TRAIN = ert.ModeKeys.TRAIN
EVAL = ert.ModeKeys.EVAL
PREDICT = ert.ModeKeys.PREDICT


@pytest.fixture(autouse=True)
def _seeded():
  # Keras initializers draw from the global seed: fixed weights make the
  # training tests independent of luck.
  keras.utils.set_random_seed(0)


class _SharedVariables:
  """Makes each model_fn call under `scope()` reuse the first's variables.

  Unlike the runtime's VariableStore (one per mode, which refuses new
  variables after the build call), a later call may add variables after the
  shared ones: these tests call one model_fn in several modes, and EVAL adds
  metric variables that TRAIN did not create.
  """

  def __init__(self):
    self.variables = []
    self._index = 0

  def _creator(self, next_creator, **kwargs):
    if self._index < len(self.variables):
      variable = self.variables[self._index]
    else:
      variable = next_creator(**kwargs)
      self.variables.append(variable)
    self._index += 1
    return variable

  @contextlib.contextmanager
  def scope(self):
    self._index = 0
    with tf.variable_creator_scope(self._creator):
      yield

  @property
  def trainable(self):
    return [v for v in self.variables if v.trainable]


def _created_variables(fn):
  """Runs fn() and returns the variables it created, in creation order."""
  store = VariableStore()
  with store.recording():
    fn()
  return store.variables


def _assert_scalar_finite_loss(spec):
  assert spec.loss.shape.rank == 0
  assert spec.loss.dtype == tf.float32
  assert np.isfinite(spec.loss.numpy())


def _classifier_batch(batch=8, d=20, n_classes=10, seed=0):
  rng = np.random.default_rng(seed)
  return (tf.constant(rng.normal(size=(batch, d)), tf.float32),
          tf.constant(rng.integers(0, n_classes, size=batch), tf.int64))


# --- linear ------------------------------------------------------------------


@pytest.mark.parametrize('label_shape', [[8], [8, 1]])
def test_linear_all_modes(label_shape):
  x = tf.random.stateless_normal([8, 3], seed=[1, 2])
  labels = tf.ones(label_shape)
  spec = linear.model_fn({'x': x}, None, PREDICT, {})
  assert spec.mode == PREDICT
  assert set(spec.predictions) == {'predictions'}
  assert spec.predictions['predictions'].shape == (8,)
  assert spec.predictions['predictions'].dtype == tf.float32

  spec = linear.model_fn(x, labels, EVAL, {})  # a bare tensor works too
  _assert_scalar_finite_loss(spec)
  assert set(spec.eval_metric_ops) == {'mse'}
  assert isinstance(spec.eval_metric_ops['mse'], keras.metrics.Metric)

  spec = linear.model_fn({'x': x}, labels, TRAIN, None)
  _assert_scalar_finite_loss(spec)
  assert isinstance(spec.optimizer, keras.optimizers.SGD)
  assert float(spec.optimizer.learning_rate) == pytest.approx(0.2)
  assert float(linear.model_fn(x, labels, TRAIN, {'learning_rate': 0.5})
               .optimizer.learning_rate) == pytest.approx(0.5)


def test_linear_loss_and_metric_are_means_over_the_batch():
  shared = _SharedVariables()
  x = tf.random.stateless_normal([6, 2], seed=[3, 4])
  labels = tf.constant([1., 2., 3., 4., 5., 6.])
  with shared.scope():
    predictions = linear.model_fn(x, None, PREDICT, {}).predictions
  with shared.scope():
    spec = linear.model_fn(x, labels[:, tf.newaxis], EVAL, {})
  expected = np.mean((labels.numpy() - predictions['predictions'].numpy())**2)
  assert spec.loss.numpy() == pytest.approx(expected, rel=1e-5)
  assert spec.eval_metric_ops['mse'].result().numpy() == pytest.approx(
      expected, rel=1e-5)


def test_linear_trains_on_the_readme_data():
  shared = _SharedVariables()
  x, labels = tf.ones([4, 1]), tf.ones([4])
  losses = []
  optimizer = None
  for _ in range(20):
    with tf.GradientTape() as tape, shared.scope():
      spec = linear.model_fn({'x': x}, labels, TRAIN, {})
    optimizer = optimizer or spec.optimizer
    grads = tape.gradient(spec.loss, shared.trainable)
    optimizer.apply_gradients(zip(grads, shared.trainable))
    losses.append(float(spec.loss))
  assert losses[-1] < 1e-3
  assert losses[-1] < 0.01 * losses[0]


def test_linear_label_shape_mismatch_names_both_shapes():
  with pytest.raises(ert.ModelFnError) as info:
    linear.model_fn({'x': tf.ones([8, 2])}, tf.ones([8, 3]), EVAL, {})
  message = str(info.value)
  assert 'model_fns.linear.model_fn' in message
  assert '(8, 3)' in message and '(8,)' in message


def test_linear_missing_labels_and_bad_params():
  with pytest.raises(ert.ModelFnError, match="labels are required in 'train'"):
    linear.model_fn(tf.ones([2, 1]), None, TRAIN, {})
  with pytest.raises(ert.ModelFnError, match=r"learning_rate'\].*-1"):
    linear.model_fn(tf.ones([2, 1]), tf.ones([2]), TRAIN,
                    {'learning_rate': -1})
  with pytest.raises(ert.ModelFnError, match="keys \\['pixels'\\]"):
    linear.model_fn({'pixels': tf.ones([2, 1])}, None, PREDICT, {})
  with pytest.raises(ert.ModelFnError, match="mode='fit'"):
    linear.model_fn(tf.ones([2, 1]), None, 'fit', {})


# --- MLP ---------------------------------------------------------------------


def test_mlp_all_modes():
  x, labels = _classifier_batch()
  spec = mlp.model_fn({'x': x}, None, PREDICT, {})
  assert set(spec.predictions) == {'class_ids', 'probabilities'}
  assert spec.predictions['class_ids'].shape == (8,)
  assert spec.predictions['class_ids'].dtype == tf.int64
  probabilities = spec.predictions['probabilities']
  assert probabilities.shape == (8, 10) and probabilities.dtype == tf.float32
  np.testing.assert_allclose(tf.reduce_sum(probabilities, -1), 1.0, rtol=1e-5)

  spec = mlp.model_fn({'x': x}, labels[:, tf.newaxis], EVAL, {})
  _assert_scalar_finite_loss(spec)
  accuracy = spec.eval_metric_ops['accuracy']
  assert isinstance(accuracy, keras.metrics.SparseCategoricalAccuracy)
  assert 0.0 <= float(accuracy.result()) <= 1.0

  spec = mlp.model_fn(x, labels, TRAIN, {'batch_size': 8})  # extra key: ok
  _assert_scalar_finite_loss(spec)
  assert isinstance(spec.optimizer, keras.optimizers.Adam)
  spec = mlp.model_fn(x, labels, TRAIN, {'optimizer': 'sgd'})
  assert isinstance(spec.optimizer, keras.optimizers.SGD)


def test_mlp_loss_is_the_mean_cross_entropy():
  shared = _SharedVariables()
  x, labels = _classifier_batch(batch=5, n_classes=4)
  params = {'n_classes': 4, 'hidden_units': [6]}
  with shared.scope():
    probabilities = mlp.model_fn(x, None, PREDICT,
                                 params).predictions['probabilities'].numpy()
  with shared.scope():
    spec = mlp.model_fn(x, labels, EVAL, params)
  expected = -np.mean(np.log(probabilities[np.arange(5), labels.numpy()]))
  assert spec.loss.numpy() == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize('params', [{}, {'dropout': 0.5}])
def test_mlp_creates_the_same_model_variables_in_every_mode(params):
  x, labels = _classifier_batch()
  predict = _created_variables(lambda: mlp.model_fn(x, None, PREDICT, params))
  train = _created_variables(lambda: mlp.model_fn(x, labels, TRAIN, params))
  evaluate = _created_variables(lambda: mlp.model_fn(x, labels, EVAL, params))
  # The model's variables come first in every mode (then the optimizer's in
  # TRAIN and the metric's in EVAL), so the runtime can pair them by index.
  # kernel + bias for 2 hidden layers and the logits, plus one seed
  # variable per Dropout layer.
  assert len(predict) == 6 + (2 if params else 0)

  def signature(variables):
    # Keras numbers the names of seed generators globally; the trainable
    # variables' names come from the explicit layer names.
    return [(v.name if v.trainable else None, tuple(v.shape), v.dtype)
            for v in variables[:len(predict)]]

  assert signature(train) == signature(predict) == signature(evaluate)
  assert [v.name for v in predict if v.trainable][:2] == [
      'mlp/hidden_0/kernel:0', 'mlp/hidden_0/bias:0']


def test_mlp_gradient_steps_reduce_the_loss_on_digits():
  x_train, y_train, _, _ = digits.load_split()
  x, labels = tf.constant(x_train[:256]), tf.constant(y_train[:256])
  shared = _SharedVariables()
  params = {'learning_rate': 0.01}

  def eval_loss():
    with shared.scope():
      return float(mlp.model_fn({'x': x}, labels, EVAL, params).loss)

  optimizer = None
  for step in range(30):
    with tf.GradientTape() as tape, shared.scope():
      spec = mlp.model_fn({'x': x}, labels, TRAIN, params)
    if step == 0:
      optimizer = spec.optimizer
      initial = float(spec.loss)
    grads = tape.gradient(spec.loss, shared.trainable)
    optimizer.apply_gradients(zip(grads, shared.trainable))
  assert initial > 1.5  # about log(10) = 2.3 at initialization
  assert eval_loss() < 0.2 * initial


def test_mlp_one_hot_labels_are_a_clear_error():
  x, labels = _classifier_batch()
  with pytest.raises(ert.ModelFnError, match='one-hot') as info:
    mlp.model_fn(x, tf.one_hot(labels, 10), TRAIN, {})
  message = str(info.value)
  assert 'model_fns.mlp.model_fn' in message
  assert '(8, 10)' in message


def test_mlp_batch_size_mismatch_is_a_clear_error():
  x, labels = _classifier_batch()
  with pytest.raises(ert.ModelFnError,
                     match=r'\(4,\) and logits of shape \(8, 10\)'):
    mlp.model_fn(x, labels[:4], EVAL, {})
  with pytest.raises(ert.ModelFnError, match=r'\(8, 2, 2\)'):
    mlp.model_fn(x, tf.zeros([8, 2, 2], tf.int64), EVAL, {})


def test_mlp_shape_error_is_raised_at_trace_time():
  # As the runtime does: create the variables in one eager call, then trace
  # with every call reusing them.
  shared = _SharedVariables()
  x, labels = _classifier_batch()
  with shared.scope():
    mlp.model_fn({'x': x}, labels, TRAIN, {})

  def loss(x, y):
    with shared.scope():
      return mlp.model_fn({'x': x}, y, TRAIN, {}).loss

  # No autograph, so exceptions propagate from tracing unchanged.
  traced = tf.function(loss, autograph=False)
  with pytest.raises(ert.ModelFnError, match='one-hot'):
    traced.get_concrete_function(tf.TensorSpec([None, 20], tf.float32),
                                 tf.TensorSpec([None, 10], tf.float32))
  # Unknown batch sizes cannot disagree at trace time: this traces and runs.
  traced = tf.function(loss, autograph=False)
  concrete = traced.get_concrete_function(
      tf.TensorSpec([None, 20], tf.float32), tf.TensorSpec([None], tf.int64))
  assert np.isfinite(concrete(x, labels).numpy())


def test_mlp_bad_params_name_the_param_and_value():
  x, labels = _classifier_batch()
  with pytest.raises(ert.ModelFnError, match=r"optimizer'\].*'rmsprop'"):
    mlp.model_fn(x, labels, TRAIN, {'optimizer': 'rmsprop'})
  with pytest.raises(ert.ModelFnError, match=r"hidden_units'\].*\[64, 0\]"):
    mlp.model_fn(x, None, PREDICT, {'hidden_units': [64, 0]})
  with pytest.raises(ert.ModelFnError, match=r"dropout'\].*1\.5"):
    mlp.model_fn(x, None, PREDICT, {'dropout': 1.5})
  with pytest.raises(ert.ModelFnError, match=r"n_classes'\].*1"):
    mlp.model_fn(x, None, PREDICT, {'n_classes': 1})


# --- CNN ---------------------------------------------------------------------


def test_cnn_all_modes_on_images():
  rng = np.random.default_rng(0)
  x = tf.constant(rng.uniform(size=(4, 32, 32, 3)), tf.float32)
  labels = tf.constant([0, 1, 2, 3], tf.int64)
  spec = cnn.model_fn({'x': x}, None, PREDICT, {})
  assert spec.predictions['class_ids'].shape == (4,)
  assert spec.predictions['class_ids'].dtype == tf.int64
  assert spec.predictions['probabilities'].shape == (4, 10)

  spec = cnn.model_fn({'x': x}, labels, EVAL, {})
  _assert_scalar_finite_loss(spec)
  assert isinstance(spec.eval_metric_ops['accuracy'],
                    keras.metrics.SparseCategoricalAccuracy)

  spec = cnn.model_fn(x, labels, TRAIN, {'n_classes': 5})
  _assert_scalar_finite_loss(spec)
  assert isinstance(spec.optimizer, keras.optimizers.Adam)
  assert float(spec.optimizer.learning_rate) == pytest.approx(0.001)


def test_cnn_reshapes_flat_digits_with_image_shape():
  _, _, x_eval, y_eval = digits.load_split()
  spec = cnn.model_fn({'x': tf.constant(x_eval[:8])}, tf.constant(y_eval[:8]),
                      EVAL, {'image_shape': [8, 8, 1]})
  _assert_scalar_finite_loss(spec)
  # [batch, H, W] grayscale gets a channel axis.
  spec = cnn.model_fn(tf.zeros([2, 8, 8]), None, PREDICT, {})
  assert spec.predictions['probabilities'].shape == (2, 10)


def test_cnn_errors():
  with pytest.raises(ert.ModelFnError, match=r"image_shape'\] = \[H, W, C\]"):
    cnn.model_fn(tf.zeros([2, 64]), None, PREDICT, {})
  with pytest.raises(ert.ModelFnError, match=r"image_shape'\].*\[8, 8\]"):
    cnn.model_fn(tf.zeros([2, 64]), None, PREDICT, {'image_shape': [8, 8]})
  with pytest.raises(ert.ModelFnError, match='one-hot'):
    cnn.model_fn(tf.zeros([2, 8, 8, 1]), tf.zeros([2, 10]), TRAIN, {})
