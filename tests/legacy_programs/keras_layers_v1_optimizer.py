"""(c) Keras layers inside a model_fn, trained by a TF1 optimizer.

The style of TensorFlow's "Multi-worker training with Estimator" tutorial: a
`tf.keras.Sequential` built inside the model_fn, a Keras loss object with
reduction 'none' summed and scaled by the batch size, and
`tf.compat.v1.train.GradientDescentOptimizer(...).minimize(loss,
tf.compat.v1.train.get_or_create_global_step())`. The tutorial's two slips
are fixed (its PREDICT spec omits `mode`; its model is always called with
`training=False`), and `tf.keras.losses.Reduction.NONE` is written 'none',
which Keras 2 and Keras 3 both accept (Keras 3 has no `Reduction`).

`tf.keras` is Keras 2 under TensorFlow 2.15 and Keras 3 under 2.21: under
2.21 the layers create plain `tf.Variable`s in the model_fn's graph, which a
v1 optimizer finds in the trainable-variables collection.

Data: 8x8 "images" of three classes (a bright row, column or diagonal plus
noise), drawn with a fixed numpy seed.
"""

import numpy as np
import tensorflow as tf

import estimator_rt

BATCH_SIZE = 32
LEARNING_RATE = 0.05
NUM_CLASSES = 3


def make_images(num_examples, seed):
  """Returns (images float32 [n, 8, 8, 1], labels int64 [n])."""
  rng = np.random.RandomState(seed)
  labels = rng.randint(0, NUM_CLASSES, size=num_examples)
  images = rng.uniform(0., 0.5, size=(num_examples, 8, 8)).astype(np.float32)
  for image, label in zip(images, labels):
    if label == 0:
      image[3, :] += 1.
    elif label == 1:
      image[:, 3] += 1.
    else:
      image[np.arange(8), np.arange(8)] += 1.
  return images[..., np.newaxis], labels.astype(np.int64)


TRAIN_DATA = make_images(512, seed=0)
EVAL_DATA = make_images(128, seed=1)


def input_fn(mode, input_context=None):
  data = TRAIN_DATA if mode == estimator_rt.ModeKeys.TRAIN else EVAL_DATA
  dataset = tf.data.Dataset.from_tensor_slices(data)
  if input_context:
    dataset = dataset.shard(input_context.num_input_pipelines,
                            input_context.input_pipeline_id)
  if mode == estimator_rt.ModeKeys.TRAIN:
    dataset = dataset.shuffle(512, seed=3).repeat()
  return dataset.batch(BATCH_SIZE)


def train_input_fn():
  return input_fn(estimator_rt.ModeKeys.TRAIN)


def eval_input_fn():
  return input_fn(estimator_rt.ModeKeys.EVAL)


def predict_input_fn():
  return tf.data.Dataset.from_tensor_slices(EVAL_DATA[0][:4]).batch(4)


def model_fn(features, labels, mode):
  model = tf.keras.Sequential([
      tf.keras.layers.Flatten(input_shape=(8, 8, 1)),
      tf.keras.layers.Dense(32, activation='relu'),
      tf.keras.layers.Dense(NUM_CLASSES)
  ])
  logits = model(features, training=mode == estimator_rt.ModeKeys.TRAIN)
  if mode == estimator_rt.ModeKeys.PREDICT:
    predictions = {'logits': logits, 'class': tf.argmax(logits, axis=1)}
    return estimator_rt.EstimatorSpec(mode, predictions=predictions)

  optimizer = tf.compat.v1.train.GradientDescentOptimizer(
      learning_rate=LEARNING_RATE)
  loss = tf.keras.losses.SparseCategoricalCrossentropy(
      from_logits=True, reduction='none')(labels, logits)
  loss = tf.reduce_sum(loss) * (1. / BATCH_SIZE)
  if mode == estimator_rt.ModeKeys.EVAL:
    return estimator_rt.EstimatorSpec(mode, loss=loss)

  return estimator_rt.EstimatorSpec(
      mode=mode,
      loss=loss,
      train_op=optimizer.minimize(
          loss, tf.compat.v1.train.get_or_create_global_step()))


def serving_input_receiver_fn():
  images = tf.compat.v1.placeholder(tf.float32, [None, 8, 8, 1],
                                    name='images')
  return estimator_rt.export.TensorServingInputReceiver(
      images, {'images': images})


SERVING_EXAMPLE = {'images': EVAL_DATA[0][:2].tolist()}


def main(model_dir, train_steps=300):
  """Trains up to `train_steps`, evaluates, predicts and exports.

  Returns:
    A dict: 'eval' (evaluate's metrics), 'predictions', 'export_dir'.
  """
  config = estimator_rt.RunConfig(tf_random_seed=1, keep_checkpoint_max=1)
  classifier = estimator_rt.Estimator(
      model_fn=model_fn, model_dir=model_dir, config=config)
  classifier.train(input_fn=train_input_fn, max_steps=train_steps)
  metrics = classifier.evaluate(input_fn=eval_input_fn)
  predictions = list(classifier.predict(input_fn=predict_input_fn))
  export_dir = classifier.export_saved_model(
      model_dir + '/export', serving_input_receiver_fn)
  return {'eval': metrics, 'predictions': predictions,
          'export_dir': export_dir}
