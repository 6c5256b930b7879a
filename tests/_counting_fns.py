"""A model that counts, in a checkpointed variable, how often its training
steps saw each example: with exact resume the counts stay in step with
the input, so after whole epochs every example was seen equally often.

Used through the binary: `--model_fn=tests/_counting_fns.py:model_fn
--input_fn=tests/_counting_fns.py:input_fn`.
"""

import keras
import tensorflow as tf

import estimator_rt as ert

N_EXAMPLES = 48
BATCH_SIZE = 6
STEPS_PER_EPOCH = N_EXAMPLES // BATCH_SIZE


def input_fn(params=None):
  """Examples 0..N-1 (the id is a feature), shuffled with a fixed seed and
  a new order every epoch, repeated, batched. `params['unseeded']`: the
  shuffle gets no seed of its own."""
  seed = None if (params or {}).get('unseeded') else 7
  ids = tf.range(N_EXAMPLES)
  x = tf.stack([tf.sin(tf.cast(ids, tf.float32)),
                tf.cos(0.5 * tf.cast(ids, tf.float32))], axis=1)
  # Label noise that differs per example: the weights keep moving with
  # each batch, so they depend on the order the examples came in.
  noise = tf.sin(12.9898 * tf.cast(ids, tf.float32))[:, None]
  y = 2.0 * x[:, :1] - x[:, 1:] + 0.3 + noise
  dataset = tf.data.Dataset.from_tensor_slices(({'x': x, 'id': ids}, y))
  dataset = dataset.shuffle(N_EXAMPLES, seed=seed,
                            reshuffle_each_iteration=True)
  return dataset.repeat().batch(BATCH_SIZE, drop_remainder=True)


def model_fn(features, labels, mode, params=None):
  """A linear regression plus `example_counts`, a float variable the
  training step adds each batch's ids to (not trained, saved with the
  model)."""
  del params
  layer = keras.layers.Dense(1, kernel_initializer='zeros', name='linear')
  predictions = layer(features['x'])
  # Summed over replicas: each replica adds the ids of its own rows.
  counts = tf.Variable(tf.zeros([N_EXAMPLES]), trainable=False,
                       name='example_counts',
                       synchronization=tf.VariableSynchronization.ON_WRITE,
                       aggregation=tf.VariableAggregation.SUM)
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions={'y': predictions})
  loss = tf.reduce_mean(tf.square(predictions - labels))
  if mode == ert.ModeKeys.TRAIN:
    counts.assign_add(tf.math.bincount(
        features['id'], minlength=N_EXAMPLES, maxlength=N_EXAMPLES,
        dtype=tf.float32))
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=keras.optimizers.Adam(0.05))
  return ert.EstimatorSpec(mode, loss=loss)
