"""(a) The Estimator example of TensorFlow's DistributionStrategy README.

The model_fn and input_fn are the README's, with `tf.` made `tf.compat.v1.`
and `tf.estimator` made `estimator_rt`. Two things in the README are not
runnable as printed and are corrected the smallest way: `minimize(loss_fn())`
names a function that does not exist (it is `minimize(loss)`), and the
PREDICT branch is reached before `labels` is needed, as written.

Kept as the README has it, on purpose: `minimize(loss)` gets no
`global_step`, so tf.estimator never advances the global step, and the
unbatched input (every element is a batch of one, which is why the loss may
`tf.reshape(logits, [])`) is finite, so `train` ends when it runs out.
"""

import tensorflow as tf

import estimator_rt


def model_fn(features, labels, mode):
  layer = tf.compat.v1.layers.Dense(1)
  logits = layer(features)

  if mode == estimator_rt.ModeKeys.PREDICT:
    predictions = {'logits': logits}
    return estimator_rt.EstimatorSpec(mode, predictions=predictions)

  loss = tf.compat.v1.losses.mean_squared_error(
      labels=labels, predictions=tf.reshape(logits, []))

  if mode == estimator_rt.ModeKeys.EVAL:
    return estimator_rt.EstimatorSpec(mode, loss=loss)

  if mode == estimator_rt.ModeKeys.TRAIN:
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.2).minimize(loss)
    return estimator_rt.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
  features = tf.data.Dataset.from_tensors([[1.]]).repeat(100)
  labels = tf.data.Dataset.from_tensors(1.).repeat(100)
  return tf.data.Dataset.zip((features, labels))


def predict_input_fn():
  return tf.data.Dataset.from_tensors([[1.]]).repeat(3)


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 1], name='x')
  return estimator_rt.export.TensorServingInputReceiver(x, {'x': x})


# One request for the exported model's serving signature (see run_program.py).
SERVING_EXAMPLE = {'x': [[1.0], [2.0]]}


def make_estimator(model_dir, **config_changes):
  """The program's Estimator; config_changes override its RunConfig fields."""
  config = dict(tf_random_seed=1, keep_checkpoint_max=1)
  config.update(config_changes)
  return estimator_rt.Estimator(
      model_fn=model_fn, model_dir=model_dir,
      config=estimator_rt.RunConfig(**config))


def main(model_dir, train_steps=None):
  """Trains, evaluates, predicts and exports as the README's user would.

  Args:
    model_dir: where checkpoints and the export go.
    train_steps: unused: the README trains until its input runs out (100
      elements), and its train_op never advances the global step that
      `steps`/`max_steps` would count.

  Returns:
    A dict: 'eval' (evaluate's metrics), 'predictions', 'export_dir'.
  """
  del train_steps  # See the docstring.
  classifier = make_estimator(model_dir)
  classifier.train(input_fn=input_fn)
  metrics = classifier.evaluate(input_fn=input_fn)
  predictions = list(classifier.predict(input_fn=predict_input_fn))
  export_dir = classifier.export_saved_model(
      model_dir + '/export', serving_input_receiver_fn)
  return {'eval': metrics, 'predictions': predictions,
          'export_dir': export_dir}
