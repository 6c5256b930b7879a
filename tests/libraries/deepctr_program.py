"""DeepCTR's DeepFMEstimator on tiny click data (run under `python -m
estimator_rt.compat`), as DeepCTR's own estimator example does: sparse
categorical columns embedded for the DNN and the FM, numeric ones linear;
train, evaluate, predict.

Prints `RESULT {json}`; argv[1] is the model_dir.
"""

import json
import sys

import numpy as np
import tensorflow as tf
from deepctr.estimator import DeepFMEstimator

ROWS = 256


def _data(seed):
  rng = np.random.RandomState(seed)
  features = {'user': rng.randint(0, 10, ROWS).astype(np.int64),
              'item': rng.randint(0, 20, ROWS).astype(np.int64),
              'price': rng.rand(ROWS).astype(np.float32)}
  clicked = ((features['user'] % 2 == 0) ^ (features['price'] > 0.5)
             ).astype(np.float32)
  return features, clicked


def input_fn(seed, repeat):
  def make():
    features, clicked = _data(seed)
    dataset = tf.data.Dataset.from_tensor_slices((features, clicked))
    return (dataset.repeat() if repeat else dataset).batch(32)
  return make


def main(model_dir):
  user = tf.feature_column.categorical_column_with_identity('user', 10)
  item = tf.feature_column.categorical_column_with_identity('item', 20)
  price = tf.feature_column.numeric_column('price')
  linear_columns = [price, tf.feature_column.indicator_column(user),
                    tf.feature_column.indicator_column(item)]
  dnn_columns = [tf.feature_column.embedding_column(user, 4),
                 tf.feature_column.embedding_column(item, 4)]
  estimator = DeepFMEstimator(
      linear_columns, dnn_columns, dnn_hidden_units=(8,), task='binary',
      config=tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=0))
  estimator.train(input_fn(0, True), max_steps=50)
  metrics = estimator.evaluate(input_fn(1, False))
  predictions = list(estimator.predict(input_fn(2, False)))
  print('RESULT ' + json.dumps({
      'global_step': int(metrics['global_step']),
      'metrics': sorted(metrics),
      'auc': float(next(v for k, v in metrics.items() if 'AUC' in k)),
      'predictions': len(predictions),
      'prediction_keys': sorted(predictions[0])}))


if __name__ == '__main__':
  main(sys.argv[1])
