"""How often each entry point calls the model_fn and the input_fn.

A tf.estimator program, unchanged (it says `tf.estimator`): on TensorFlow
2.15 it runs on tf.estimator itself (`.venv-tf215/bin/python
tests/legacy_programs/model_fn_calls.py OUT_DIR`), on TensorFlow 2.16+
through estimator_rt's runner (`python -m estimator_rt.compat
tests/legacy_programs/model_fn_calls.py OUT_DIR`). It prints one line
`RESULT {json}`: for each scenario, the calls of the model_fn by mode and
of the input_fns, counted from the model_fn's and input_fn's own Python
side (what a user's code sees), and what each scenario returned.

The model_fns mutate an object made outside them the way real code does:
`optimizer.iterations = global_step` on a Keras optimizer made once (which
Keras allows once per optimizer), and a list they append to. tf.estimator
2.15 called a model_fn once per graph it built; the figures 2.15 gives are
in tests/data/tf_estimator_215/model_fn_calls.json.
"""

import collections
import itertools
import json
import os
import sys

import numpy as np
import tensorflow as tf

CALLS = collections.Counter()
# What the model_fns append to: made outside them, as a registry or a log
# is (tf.estimator deep-copies `params`, so it cannot be there).
SEEN = []
HOOKS = []


def _count(what):
  CALLS[what] += 1


def _data():
  rng = np.random.RandomState(0)
  x = rng.rand(64, 2).astype(np.float32)
  y = (x @ np.array([[1.5], [-2.0]], np.float32) + 0.5).astype(np.float32)
  return x, y


def train_input_fn():
  _count('input_fn:train')
  x, y = _data()
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(8)


def eval_input_fn():
  _count('input_fn:eval')
  x, y = _data()
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(16)


def predict_input_fn():
  _count('input_fn:predict')
  x, _ = _data()
  return tf.data.Dataset.from_tensor_slices({'x': x}).batch(16)


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
  return tf.estimator.export.ServingInputReceiver({'x': x}, {'x': x})


def _predict_spec(mode, logits):
  predictions = {'y': logits}
  return tf.estimator.EstimatorSpec(
      mode, predictions=predictions,
      export_outputs={'serving_default':
                      tf.estimator.export.PredictOutput(predictions)})


def tf1_model_fn(features, labels, mode):
  """get_variable weights, a v1 optimizer, a v1 metric."""
  _count(f'model_fn:{mode}')
  SEEN.append(mode)
  w = tf.compat.v1.get_variable('w', [2, 1],
                                initializer=tf.compat.v1.zeros_initializer())
  b = tf.compat.v1.get_variable('b', [1],
                                initializer=tf.compat.v1.zeros_initializer())
  logits = tf.matmul(features['x'], w) + b
  if mode == tf.estimator.ModeKeys.PREDICT:
    return _predict_spec(mode, logits)
  loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, eval_metric_ops={
            'mae': tf.compat.v1.metrics.mean_absolute_error(labels, logits)})
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class _LoggingHook(tf.estimator.SessionRunHook):

  def __init__(self):
    self.runs = 0

  def after_run(self, run_context, run_values):
    del run_context, run_values
    self.runs += 1


def tf1_model_fn_with_hooks(features, labels, mode):
  """The same model, with a training hook built in the model_fn (a
  session.run per step in estimator_rt's graph engine)."""
  spec = tf1_model_fn(features, labels, mode)
  if mode != tf.estimator.ModeKeys.TRAIN:
    return spec
  hook = _LoggingHook()
  HOOKS.append(hook)
  return spec._replace(training_hooks=[hook])


def tensor_init_model_fn(features, labels, mode):
  """A variable whose initial value is a tensor the model_fn computed
  (which cannot be lifted out of a while loop's body)."""
  _count(f'model_fn:{mode}')
  w = tf.Variable(tf.zeros([2, 1]), name='w')
  logits = tf.matmul(features['x'], w)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return _predict_spec(mode, logits)
  loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _optimizer():
  # Keras 2's (the Keras a tf.estimator program means by tf.keras).
  optimizers = tf.keras.optimizers
  return (optimizers.legacy.SGD(0.1) if hasattr(optimizers, 'legacy') else
          optimizers.SGD(0.1))


OPTIMIZER = []


def keras_optimizer_model_fn(features, labels, mode):
  """Keras layers and a Keras optimizer made outside the model_fn, whose
  `iterations` the model_fn sets to the global step (TensorFlow Lattice's
  canned estimators do this; Keras allows it once per optimizer)."""
  _count(f'model_fn:{mode}')
  layer = tf.keras.layers.Dense(1, kernel_initializer='zeros')
  logits = layer(features['x'])
  if mode == tf.estimator.ModeKeys.PREDICT:
    return _predict_spec(mode, logits)
  loss = tf.reduce_mean(tf.square(logits - labels))
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss)
  optimizer = OPTIMIZER[0]
  optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  train_op = optimizer.get_updates(loss, layer.trainable_weights)[0]
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _config(**kwargs):
  return tf.estimator.RunConfig(tf_random_seed=1, log_step_count_steps=None,
                                **kwargs)


def _snapshot(before):
  now = CALLS.copy()
  now.subtract(before)
  return {k: v for k, v in sorted(now.items()) if v}


def _scenario(results, name, run):
  before = CALLS.copy()
  try:
    outcome = run()
  except Exception as e:  # pylint: disable=broad-except
    outcome = f'{type(e).__name__}: {str(e).splitlines()[0][:200]}'
  results[name] = {'calls': _snapshot(before), 'outcome': outcome}


def _loss(metrics):
  return round(float(metrics['loss']), 4)


def run_all(base):
  results = {}

  # One Estimator through every entry point, in the order a user calls them.
  estimator = tf.estimator.Estimator(
      tf1_model_fn, model_dir=os.path.join(base, 'tf1'),
      config=_config(save_checkpoints_steps=10))
  _scenario(results, 'tf1.train_30',
            lambda: estimator.train(train_input_fn, steps=30) and
            estimator.get_variable_value('global_step').item())
  _scenario(results, 'tf1.train_10_more',
            lambda: estimator.train(train_input_fn, steps=10) and
            estimator.get_variable_value('global_step').item())
  _scenario(results, 'tf1.evaluate',
            lambda: _loss(estimator.evaluate(eval_input_fn, steps=2)))
  _scenario(results, 'tf1.predict_3',
            lambda: len(list(itertools.islice(
                estimator.predict(predict_input_fn), 3))))
  _scenario(results, 'tf1.export',
            lambda: bool(estimator.export_saved_model(
                os.path.join(base, 'tf1_export'), serving_input_receiver_fn)))
  results['tf1.seen'] = list(SEEN)

  # train_and_evaluate, locally: evaluations after checkpoints, an export.
  estimator = tf.estimator.Estimator(
      tf1_model_fn, model_dir=os.path.join(base, 'tae'),
      config=_config(save_checkpoints_steps=10))
  exporter = tf.estimator.LatestExporter('latest', serving_input_receiver_fn)
  _scenario(results, 'tf1.train_and_evaluate', lambda: _loss(
      tf.estimator.train_and_evaluate(
          estimator, tf.estimator.TrainSpec(train_input_fn, max_steps=30),
          tf.estimator.EvalSpec(eval_input_fn, steps=2, throttle_secs=0,
                                start_delay_secs=0,
                                exporters=[exporter]))[0]))

  # What sends estimator_rt's graph engine to one step per session run.
  estimator = tf.estimator.Estimator(
      tf1_model_fn_with_hooks, model_dir=os.path.join(base, 'hooks'),
      config=_config())
  _scenario(results, 'hooks.train_30',
            lambda: estimator.train(train_input_fn, steps=30) and
            [hook.runs for hook in HOOKS])
  estimator = tf.estimator.Estimator(
      tensor_init_model_fn, model_dir=os.path.join(base, 'tensor_init'),
      config=_config())
  _scenario(results, 'tensor_init.train_30',
            lambda: estimator.train(train_input_fn, steps=30) and
            estimator.get_variable_value('global_step').item())

  # A Keras optimizer made outside the model_fn.
  OPTIMIZER.append(_optimizer())
  estimator = tf.estimator.Estimator(
      keras_optimizer_model_fn, model_dir=os.path.join(base, 'keras_opt'),
      config=_config())
  _scenario(results, 'keras_optimizer.train_30',
            lambda: estimator.train(train_input_fn, steps=30) and
            estimator.get_variable_value('global_step').item())

  # A canned estimator, counted through its optimizer factory (which 2.15
  # called once per TRAIN-mode model_fn call).
  def optimizer_factory():
    _count('canned_optimizer_factory')
    return tf.keras.optimizers.legacy.Adagrad(0.1)

  estimator = tf.estimator.DNNRegressor(
      hidden_units=[4], feature_columns=[
          tf.feature_column.numeric_column('x', shape=[2])],
      optimizer=optimizer_factory, model_dir=os.path.join(base, 'dnn'),
      config=_config())
  _scenario(results, 'canned.train_30',
            lambda: estimator.train(train_input_fn, steps=30) and
            estimator.get_variable_value('global_step').item())
  _scenario(results, 'canned.evaluate',
            lambda: sorted(estimator.evaluate(eval_input_fn, steps=2)))
  # tf.keras.estimator.model_to_estimator, counted through a layer class
  # of the model's: 2.15's model_fn built a clone of the model per call.
  class CountingDense(tf.keras.layers.Dense):

    def __init__(self, *args, **kwargs):
      _count('keras_layer_made')
      super().__init__(*args, **kwargs)

  model = tf.keras.Sequential([tf.keras.Input(shape=(2,), name='x'),
                               CountingDense(1, kernel_initializer='zeros')])
  model.compile(optimizer='sgd', loss='mse')
  estimator = tf.keras.estimator.model_to_estimator(
      keras_model=model, model_dir=os.path.join(base, 'keras'),
      config=_config(), custom_objects={'CountingDense': CountingDense})
  _scenario(results, 'keras.train_30',
            lambda: estimator.train(train_input_fn, steps=30) and
            os.path.basename(estimator.latest_checkpoint()))
  _scenario(results, 'keras.evaluate',
            lambda: sorted(estimator.evaluate(eval_input_fn, steps=2)))
  return results


def main(argv):
  results = run_all(argv[1])
  print('RESULT ' + json.dumps(results, sort_keys=True))


if __name__ == '__main__':
  main(sys.argv)
