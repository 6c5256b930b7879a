"""AdaNet's Estimator on tiny data (run under `python -m
estimator_rt.compat`): two iterations of a simple DNN generator, an
evaluation, predictions.

Prints `RESULT {json}`; argv[1] is the model_dir.
"""

import json
import sys

import adanet
import numpy as np
import tensorflow as tf

FEATURES = 4


def _data(count, seed):
  x = np.random.RandomState(seed).rand(count, FEATURES).astype(np.float32)
  y = (x.sum(axis=1, keepdims=True) > FEATURES / 2).astype(np.int32)
  return x, y


def input_fn(seed, repeat):
  def make():
    x, y = _data(128, seed)
    dataset = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
    return (dataset.repeat() if repeat else dataset).batch(16)
  return make


class _DNN(adanet.subnetwork.Builder):
  """One hidden layer of `units` units."""

  def __init__(self, units):
    self._units = units

  @property
  def name(self):
    return f'dnn_{self._units}'

  def build_subnetwork(self, features, logits_dimension, training,
                       iteration_step, summary, previous_ensemble=None):
    hidden = tf.compat.v1.layers.dense(features['x'], self._units,
                                       activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(hidden, logits_dimension)
    return adanet.Subnetwork(last_layer=hidden, logits=logits,
                             complexity=tf.constant(float(self._units)),
                             persisted_tensors={})

  def build_subnetwork_train_op(self, subnetwork, loss, var_list, labels,
                                iteration_step, summary, previous_ensemble):
    return tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, var_list=var_list)


class _Generator(adanet.subnetwork.Generator):

  def generate_candidates(self, previous_ensemble, iteration_number,
                          previous_ensemble_reports, all_reports):
    return [_DNN(4), _DNN(8)]


def main(model_dir):
  estimator = adanet.Estimator(
      head=tf.estimator.BinaryClassHead(),
      subnetwork_generator=_Generator(),
      max_iteration_steps=10,
      config=tf.estimator.RunConfig(model_dir=model_dir,
                                    tf_random_seed=0))
  estimator.train(input_fn(0, True), max_steps=20)
  metrics = estimator.evaluate(input_fn(1, False), steps=4)
  predictions = list(estimator.predict(input_fn(2, False)))
  print('RESULT ' + json.dumps({
      'global_step': int(metrics['global_step']),
      'accuracy': float(metrics['accuracy']),
      'iteration': int(metrics.get('iteration', -1)),
      'predictions': len(predictions)}))


if __name__ == '__main__':
  main(sys.argv[1])
