"""The benchmark's workloads: the project's model_fn and input_fn, and the
bare side's equivalents.

  W1: linear model, synthetic regression, batch 64, SGD 0.2;
  W2: MLP [64, 32], the digits, batch 128, Adam 0.01;
  W3: CNN, synthetic 32x32x3 images, batch 128, Adam 0.001.

Each workload also has a Keras model built once with the model_fn's layers,
the same loss on (labels, model output) and the same optimizer (the bare
TF2 loop's, Keras fit's and the distributed bare program's), and W1 and W2
a TF1-style model_fn for the graph engine. `tests/test_benchmark_script.py`
checks that the bare models have the variables the model_fns create.
"""

import keras
import tensorflow as tf

import estimator_rt as ert
from input_fns import digits
from input_fns import synthetic
from model_fns import cnn
from model_fns import linear
from model_fns import mlp
from scripts.bench import tf1_model_fns


def _linear_model():
  # model_fns.linear: Sequential([Dense(1)]), predictions squeezed to [b].
  return keras.Sequential([keras.layers.Dense(1, name='dense')],
                          name='linear')


def _linear_loss(labels, outputs):
  # model_fns.linear: mean squared error of the squeezed predictions.
  predictions = tf.squeeze(outputs, axis=-1)
  return tf.reduce_mean(tf.square(tf.cast(labels, tf.float32) - predictions))


def _mlp_model():
  # model_fns.mlp with its DEFAULT_PARAMS: hidden [64, 32], no dropout.
  return mlp.build_model(hidden_units=mlp.DEFAULT_PARAMS['hidden_units'],
                         n_classes=mlp.DEFAULT_PARAMS['n_classes'])


def _cnn_model():
  return cnn.build_model(n_classes=cnn.DEFAULT_PARAMS['n_classes'])


def _classifier_loss(labels, logits):
  # model_fns._common.classifier_spec: sparse softmax cross-entropy, mean
  # over the batch, on int64 class ids of shape [batch].
  class_ids = tf.reshape(tf.cast(labels, tf.int64), [-1])
  return keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
      class_ids, logits)





WORKLOADS = {
    'W1': dict(
        description='linear model, synthetic regression, batch 64, SGD 0.2',
        model_fn=linear.model_fn,
        input_fn=synthetic.linear_input_fn,
        params={'batch_size': 64},
        bare_model=_linear_model,
        bare_loss=_linear_loss,
        bare_optimizer=lambda: keras.optimizers.SGD(
            linear.DEFAULT_PARAMS['learning_rate'])),
    'W2': dict(
        description='MLP [64, 32], digits, batch 128, Adam 0.01',
        model_fn=mlp.model_fn,
        input_fn=digits.train_input_fn,
        params={'batch_size': 128},
        bare_model=_mlp_model,
        bare_loss=_classifier_loss,
        bare_optimizer=lambda: keras.optimizers.Adam(
            mlp.DEFAULT_PARAMS['learning_rate'])),
    'W3': dict(
        description='CNN, synthetic 32x32x3 images, batch 128, Adam 0.001',
        model_fn=cnn.model_fn,
        input_fn=synthetic.images_input_fn,
        params={'batch_size': 128},
        bare_model=_cnn_model,
        bare_loss=_classifier_loss,
        bare_optimizer=lambda: keras.optimizers.Adam(
            cnn.DEFAULT_PARAMS['learning_rate'])),
}


def tf1_hyperparameters(workload: str) -> dict:
  """What the TF1-style model_fns (`tf1_model_fns`) and the tf.estimator
  side take from the project: layer sizes from the model_fns'
  DEFAULT_PARAMS, the optimizer's kind and settings from the bare side's
  Keras optimizer."""
  layers = {'W1': {},
            'W2': {key: mlp.DEFAULT_PARAMS[key]
                   for key in ('hidden_units', 'n_classes')},
            'W3': {'n_classes': cnn.DEFAULT_PARAMS['n_classes']}}[workload]
  # Eagerly (a Keras 3 optimizer's settings are variables: under TF1
  # behaviour they would be graph variables, which get_config cannot read).
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  with context.eager_mode():
    optimizer = tf1_model_fns.optimizer_params(
        WORKLOADS[workload]['bare_optimizer']())
  return {**layers, **optimizer}


def tf1_model_fn(workload: str):
  """W1's or W2's model written as tf.estimator users wrote it, which the
  graph engine runs (and tf.estimator 2.15, with --engine graph --peers).

  Made on demand, not at import: making the Keras optimizer whose settings
  it takes starts TensorFlow's runtime, after which a multi-worker strategy
  can no longer be created in the process (the cluster workers import this
  module)."""
  return tf1_model_fns.make_model_fn(workload, ert.EstimatorSpec,
                                     tf1_hyperparameters(workload))


def build_bare(workload: str):
  """The bare side's (dataset, model, optimizer, loss_fn), built once.

  The dataset is the workload's input_fn called without an input context,
  which is what the runtime's default strategy gets too (one pipeline, one
  replica: no sharding, the full batch). The model and optimizer are built
  eagerly here because variables cannot be created inside the traced
  `tf.range` loop.
  """
  spec = WORKLOADS[workload]
  dataset = spec['input_fn'](dict(spec['params']))
  model = spec['bare_model']()
  features_spec = dataset.element_spec[0]['x']
  model.build(features_spec.shape)
  optimizer = spec['bare_optimizer']()
  optimizer.build(model.trainable_variables)
  return dataset, model, optimizer, spec['bare_loss']


def bare_train_loop(model, optimizer, loss_fn):
  """The bare TF2 loop: a `tf.function` `(iterator, num_steps) -> loss`
  over `tf.range(num_steps)` steps of `model` on `features['x']`, traced
  at its first call."""
  variables = model.trainable_variables

  @tf.function
  def train(it, num_steps):
    loss = tf.constant(0.0)
    for _ in tf.range(num_steps):
      features, labels = next(it)
      with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(features['x'], training=True))
      grads = tape.gradient(loss, variables)
      optimizer.apply_gradients(zip(grads, variables))
    return loss

  return train
