r"""An input_fn that calls numpy_input_fn's input_fn itself, under 2.15.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.numpy_input_fn_reference

Programs and libraries (TF-GAN's tests among them) wrap the input_fn
`tf.compat.v1.estimator.inputs.numpy_input_fn` returns in an input_fn of
their own that calls it and reshapes or renames what it returns. `run()`
trains, evaluates and predicts a linear TF1 model_fn through such
wrappers; run in the tf.estimator 2.15 environment, this writes what came
out to tests/data/tf_estimator_215/numpy_input_fn_wrapper.json, which
tests/test_compat_served_inputs.py compares estimator_rt's run of the same
`run()` with (after `estimator_rt.compat.install()`).
"""

import json
import os
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'tests',
                      'data', 'tf_estimator_215', 'numpy_input_fn_wrapper.json')


def run(model_dir: str) -> dict:
  """Trains 20 steps, evaluates and predicts through wrapping input_fns."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  v1 = tf.compat.v1
  x = np.linspace(-1., 1., 32).astype(np.float32)
  y = (2. * x + 1.).astype(np.float32)

  def reshaped(numpy_fn):
    """Calls `numpy_fn` and gives its tensors a feature dimension."""

    def input_fn():
      result = numpy_fn()
      if isinstance(result, tuple):
        features, labels = result
        return ({'x': tf.reshape(features['x'], [-1, 1])},
                tf.reshape(labels, [-1, 1]))
      return {'x': tf.reshape(result['x'], [-1, 1])}

    return input_fn

  def model_fn(features, labels, mode):
    w = v1.get_variable('w', [1, 1], initializer=v1.zeros_initializer())
    b = v1.get_variable('b', [1], initializer=v1.zeros_initializer())
    predictions = tf.matmul(features['x'], w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
      return tf.estimator.EstimatorSpec(mode, predictions={'y': predictions})
    loss = v1.losses.mean_squared_error(labels, predictions)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

  numpy_input_fn = v1.estimator.inputs.numpy_input_fn
  estimator = v1.estimator.Estimator(model_fn, model_dir=model_dir)
  estimator.train(reshaped(numpy_input_fn(
      {'x': x}, y, batch_size=8, num_epochs=None, shuffle=False)), steps=20)
  metrics = estimator.evaluate(reshaped(numpy_input_fn(
      {'x': x}, y, batch_size=8, num_epochs=1, shuffle=False)))
  predictions = [float(p['y'][0]) for p in estimator.predict(reshaped(
      numpy_input_fn({'x': x[:3]}, batch_size=8, num_epochs=1,
                     shuffle=False)))]
  return {
      'global_step': int(metrics['global_step']),
      'loss': float(metrics['loss']),
      'w': float(estimator.get_variable_value('w')[0][0]),
      'b': float(estimator.get_variable_value('b')[0]),
      'predictions': predictions,
  }


def main():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  version = tuple(int(part) for part in tf.__version__.split('.')[:2])
  if version >= (2, 16):
    sys.exit('Run this in the tf.estimator 2.15 environment (.venv-tf215).')
  with tempfile.TemporaryDirectory() as model_dir:
    result = run(model_dir)
  result['tensorflow'] = tf.__version__
  with open(OUTPUT, 'w') as f:
    json.dump(result, f, indent=1, sort_keys=True)
    f.write('\n')
  print(json.dumps(result))


if __name__ == '__main__':
  main()
