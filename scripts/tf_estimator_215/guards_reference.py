r"""tf.estimator 2.15's figures for two rows of docs/guards.md that
estimator_rt once refused (tests/test_guards.py holds them as constants).

    .venv-tf215/bin/python scripts/tf_estimator_215/guards_reference.py

- G36, `central_storage`: a TF1-style linear model_fn (Momentum) trained 3
  steps under `CentralStorageStrategy` over two logical CPU devices, each
  replica on its own batch of 2 (tf.estimator's per-replica batch); the
  weights, then `evaluate()` (undistributed).
- G45, `model_to_estimator` of tf_keras models whose optimizers Keras 3
  has no copy of: a legacy SGD with `decay`, an SGD with a
  LearningRateSchedule, a legacy Adam with both; the kernel after 5 steps.

Importable under TensorFlow 2.21 too: `central_storage_model_fn`,
`central_storage_input_fn`, `keras_model(kind, keras_module)` and
`keras_data()` build the same programs there.
"""

import json
import tempfile

import numpy as np

KERAS_KINDS = ('decay', 'schedule', 'schedule_and_decay')
KERAS_STEPS = 5
CENTRAL_STORAGE_STEPS = 3


def central_storage_model_fn(features, labels, mode):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf1 = tf.compat.v1
  w = tf1.get_variable('w', [4, 1], initializer=tf1.zeros_initializer())
  y = tf.matmul(features['x'], w)
  loss = tf.reduce_mean(tf.square(y - labels))
  train_op = tf1.train.MomentumOptimizer(0.1, 0.9).minimize(
      loss, global_step=tf1.train.get_global_step())
  return tf.estimator.EstimatorSpec(
      mode, loss=loss, train_op=train_op,
      eval_metric_ops={'mae': tf1.metrics.mean_absolute_error(labels, y)})


def central_storage_input_fn():
  """16 rows in batches of 2 (each replica takes its own batch)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = np.arange(64, dtype=np.float32).reshape(16, 4) / 64
  return tf.data.Dataset.from_tensor_slices(({'x': x}, x[:, :1] * 3)).batch(2)


def keras_data():
  rng = np.random.RandomState(0)
  x = rng.normal(size=(64, 4)).astype(np.float32)
  return x, x[:, :1] * 2.0


def keras_model(kind: str, keras_module):
  """A compiled one-Dense model (kernel 0.1, bias 0) whose optimizer is
  `kind`'s, in `keras_module` (tf.keras under 2.15, tf_keras under 2.21)."""
  inputs = keras_module.Input((4,), name='x')
  model = keras_module.Model(
      inputs, keras_module.layers.Dense(1, name='y')(inputs))
  model.set_weights([np.full((4, 1), 0.1, np.float32),
                     np.zeros(1, np.float32)])
  optimizers, schedules = (keras_module.optimizers,
                           keras_module.optimizers.schedules)
  if kind == 'decay':
    optimizer = optimizers.legacy.SGD(0.1, decay=0.5)
  elif kind == 'schedule':
    optimizer = optimizers.SGD(schedules.ExponentialDecay(0.1, 2, 0.5))
  else:
    optimizer = optimizers.legacy.Adam(
        schedules.PiecewiseConstantDecay([2], [0.1, 0.01]), decay=0.1)
  model.compile(optimizer=optimizer, loss='mse')
  return model


def _central_storage(tf):
  cpu = tf.config.list_physical_devices('CPU')[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  strategy = tf.distribute.experimental.CentralStorageStrategy(
      compute_devices=['/cpu:0', '/cpu:1'], parameter_device='/cpu:0')
  estimator = tf.estimator.Estimator(
      central_storage_model_fn, config=tf.estimator.RunConfig(
          model_dir=tempfile.mkdtemp(), train_distribute=strategy))
  estimator.train(central_storage_input_fn, steps=CENTRAL_STORAGE_STEPS)
  metrics = estimator.evaluate(central_storage_input_fn)
  return {'w': estimator.get_variable_value('w').ravel().tolist(),
          'evaluate': {k: float(v) for k, v in metrics.items()}}


def _keras(tf):
  x, y = keras_data()
  kernels = {}
  for kind in KERAS_KINDS:
    estimator = tf.keras.estimator.model_to_estimator(
        keras_model=keras_model(kind, tf.keras),
        model_dir=tempfile.mkdtemp())
    estimator.train(
        lambda: tf.data.Dataset.from_tensors(({'x': x}, y)).repeat(),
        steps=KERAS_STEPS)
    kernels[kind] = estimator.get_variable_value(
        'layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE').ravel(
            ).tolist()
  return kernels


def main():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.get_logger().setLevel('ERROR')
  print(json.dumps({'central_storage': _central_storage(tf),
                    'keras_kernels': _keras(tf)}))


if __name__ == '__main__':
  main()
