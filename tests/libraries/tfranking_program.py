"""TF-Ranking's DNN ranking estimator on tiny lists (run under `python -m
estimator_rt.compat`): queries with a context feature, lists of 4
documents with one feature each, graded relevance; train, evaluate
(NDCG), predict scores.

Prints `RESULT {json}`; argv[1] is the model_dir.
"""

import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow_ranking as tfr

QUERIES, LIST_SIZE = 64, 4


def _data(seed):
  rng = np.random.RandomState(seed)
  relevance = rng.rand(QUERIES, LIST_SIZE, 1).astype(np.float32)
  features = {'query_length': rng.rand(QUERIES, 1).astype(np.float32),
              'doc_score': relevance + 0.1 * rng.rand(
                  QUERIES, LIST_SIZE, 1).astype(np.float32)}
  labels = np.round(3 * relevance[..., 0]).astype(np.float32)
  return features, labels


def input_fn(seed, repeat):
  def make():
    features, labels = _data(seed)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return (dataset.repeat() if repeat else dataset).batch(8)
  return make


def main(model_dir):
  estimator = tfr.estimator.make_dnn_ranking_estimator(
      example_feature_columns={
          'doc_score': tf.feature_column.numeric_column('doc_score')},
      context_feature_columns={
          'query_length': tf.feature_column.numeric_column('query_length')},
      hidden_units=[8], loss='softmax_loss', model_dir=model_dir,
      listwise_inference=True)
  estimator.train(input_fn(0, True), max_steps=30)
  metrics = estimator.evaluate(input_fn(1, False))
  predictions = list(estimator.predict(input_fn(2, False)))
  print('RESULT ' + json.dumps({
      'global_step': int(metrics['global_step']),
      'metrics': sorted(metrics),
      'ndcg': float(next(v for k, v in metrics.items() if 'ndcg' in k)),
      'predictions': len(predictions),
      'scores_shape': list(np.asarray(predictions[0]).shape)}))


if __name__ == '__main__':
  main(sys.argv[1])
