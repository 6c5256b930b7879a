"""(b) A TF1 classifier: variables, loss, metric, optimizer from tf.compat.v1.

Written the way a tf.estimator user wrote a custom classifier before Keras
was everywhere: weights from `tf.compat.v1.get_variable` in a variable
scope, `tf.compat.v1.losses.sparse_softmax_cross_entropy`,
`tf.compat.v1.metrics.accuracy` as an `eval_metric_ops` pair, and
`AdagradOptimizer(...).minimize(loss, global_step=get_global_step())`. Only
the estimator import differs from the tf.estimator original
(`tf.estimator` -> `estimator_rt`).

Data: three Gaussian blobs in four dimensions, drawn with a fixed numpy
seed (600 training and 150 evaluation examples).
"""

import numpy as np
import tensorflow as tf

import estimator_rt

NUM_FEATURES = 4
NUM_CLASSES = 3
PARAMS = {'batch_size': 32, 'hidden_units': 16, 'learning_rate': 0.1}


def make_blobs(num_examples, seed):
  """Returns (features float32 [n, 4], labels int32 [n]); same every call."""
  rng = np.random.RandomState(seed)
  centers = np.array([[2., 0., 0., 1.], [0., 2., 0., -1.], [0., 0., 2., 0.]])
  labels = rng.randint(0, NUM_CLASSES, size=num_examples)
  features = centers[labels] + rng.normal(scale=0.8,
                                          size=(num_examples, NUM_FEATURES))
  return features.astype(np.float32), labels.astype(np.int32)


TRAIN_DATA = make_blobs(600, seed=0)
EVAL_DATA = make_blobs(150, seed=1)


def model_fn(features, labels, mode, params):
  x = features['x']
  with tf.compat.v1.variable_scope('classifier'):
    w1 = tf.compat.v1.get_variable(
        'w1', [NUM_FEATURES, params['hidden_units']],
        initializer=tf.compat.v1.glorot_uniform_initializer())
    b1 = tf.compat.v1.get_variable(
        'b1', [params['hidden_units']],
        initializer=tf.compat.v1.zeros_initializer())
    w2 = tf.compat.v1.get_variable(
        'w2', [params['hidden_units'], NUM_CLASSES],
        initializer=tf.compat.v1.glorot_uniform_initializer())
    b2 = tf.compat.v1.get_variable(
        'b2', [NUM_CLASSES], initializer=tf.compat.v1.zeros_initializer())
  hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
  logits = tf.matmul(hidden, w2) + b2
  predicted_classes = tf.argmax(logits, 1)

  if mode == estimator_rt.ModeKeys.PREDICT:
    predictions = {
        'class_ids': predicted_classes,
        'probabilities': tf.nn.softmax(logits),
    }
    return estimator_rt.EstimatorSpec(mode, predictions=predictions)

  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
      labels=labels, logits=logits)

  if mode == estimator_rt.ModeKeys.EVAL:
    accuracy = tf.compat.v1.metrics.accuracy(
        labels=labels, predictions=predicted_classes, name='acc_op')
    return estimator_rt.EstimatorSpec(
        mode, loss=loss, eval_metric_ops={'accuracy': accuracy})

  optimizer = tf.compat.v1.train.AdagradOptimizer(
      learning_rate=params['learning_rate'])
  train_op = optimizer.minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return estimator_rt.EstimatorSpec(mode, loss=loss, train_op=train_op)


def train_input_fn(params):
  features, labels = TRAIN_DATA
  dataset = tf.data.Dataset.from_tensor_slices(({'x': features}, labels))
  return dataset.shuffle(600, seed=2).repeat().batch(params['batch_size'])


def eval_input_fn(params):
  features, labels = EVAL_DATA
  dataset = tf.data.Dataset.from_tensor_slices(({'x': features}, labels))
  return dataset.batch(params['batch_size'])


def predict_input_fn(params):
  features, _ = EVAL_DATA
  return tf.data.Dataset.from_tensor_slices({'x': features[:4]}).batch(
      params['batch_size'])


def serving_input_receiver_fn():
  return estimator_rt.export.build_raw_serving_input_receiver_fn(
      {'x': tf.compat.v1.placeholder(tf.float32, [None, NUM_FEATURES],
                                     name='x')})()


SERVING_EXAMPLE = {'x': EVAL_DATA[0][:2].tolist()}


def make_estimator(model_dir, **config_changes):
  """The program's Estimator; config_changes override its RunConfig fields."""
  config = dict(tf_random_seed=1, save_checkpoints_steps=100,
                keep_checkpoint_max=1)
  config.update(config_changes)
  return estimator_rt.Estimator(
      model_fn=model_fn, model_dir=model_dir,
      config=estimator_rt.RunConfig(**config), params=PARAMS)


def main(model_dir, train_steps=200):
  """Trains up to `train_steps`, evaluates, predicts and exports.

  Returns:
    A dict: 'eval' (evaluate's metrics), 'predictions', 'export_dir'.
  """
  classifier = make_estimator(model_dir)
  classifier.train(input_fn=train_input_fn, max_steps=train_steps)
  metrics = classifier.evaluate(input_fn=eval_input_fn)
  predictions = list(classifier.predict(input_fn=predict_input_fn))
  export_dir = classifier.export_saved_model(
      model_dir + '/export', serving_input_receiver_fn)
  return {'eval': metrics, 'predictions': predictions,
          'export_dir': export_dir}
