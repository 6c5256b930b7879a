"""TF-GAN's GANEstimator on tiny random data (run under `python -m
estimator_rt.compat`): 10 training steps, an evaluation, predictions.

Prints `RESULT {json}`; argv[1] is the model_dir.
"""

import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow_gan as tfgan

NOISE_DIMS, DATA_DIMS, BATCH = 4, 3, 8


def generator_fn(noise):
  return tf.compat.v1.layers.dense(noise, DATA_DIMS)


def discriminator_fn(data, unused_conditioning):
  return tf.compat.v1.layers.dense(data, 1)


def train_input_fn():
  real = np.random.RandomState(0).normal(
      1.0, 0.5, (64, DATA_DIMS)).astype(np.float32)
  noise = np.random.RandomState(1).normal(size=(64, NOISE_DIMS)).astype(
      np.float32)
  return tf.data.Dataset.from_tensor_slices((noise, real)).repeat().batch(
      BATCH)


def predict_input_fn():
  noise = np.random.RandomState(2).normal(size=(4, NOISE_DIMS)).astype(
      np.float32)
  return tf.data.Dataset.from_tensor_slices(noise).batch(2)


def main(model_dir):
  estimator = tfgan.estimator.GANEstimator(
      model_dir=model_dir,
      generator_fn=generator_fn,
      discriminator_fn=discriminator_fn,
      generator_loss_fn=tfgan.losses.wasserstein_generator_loss,
      discriminator_loss_fn=tfgan.losses.wasserstein_discriminator_loss,
      generator_optimizer=tf.compat.v1.train.AdamOptimizer(0.01),
      discriminator_optimizer=tf.compat.v1.train.AdamOptimizer(0.01))
  estimator.train(train_input_fn, max_steps=10)
  metrics = estimator.evaluate(train_input_fn, steps=2)
  predictions = list(estimator.predict(predict_input_fn))
  print('RESULT ' + json.dumps({
      'global_step': int(metrics['global_step']),
      'loss': float(metrics['loss']),
      'predictions': [np.asarray(p).tolist() for p in predictions]}))


if __name__ == '__main__':
  main(sys.argv[1])
