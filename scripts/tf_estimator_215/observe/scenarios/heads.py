"""The heads (tf.estimator.*Head): their properties, and in a graph their
loss, predictions, metrics and create_estimator_spec in each mode; a
program's own Head subclass; add_metrics on an estimator."""

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common

PROPERTIES = ('name', 'logits_dimension', 'loss_reduction')


def _heads():
  est = tf.estimator
  return {
      'BinaryClassHead': (est.BinaryClassHead(), [[1], [0]], 1),
      'MultiClassHead': (est.MultiClassHead(3), [[2], [0]], 3),
      'MultiLabelHead': (est.MultiLabelHead(3), [[1, 0, 1], [0, 1, 0]], 3),
      'RegressionHead': (est.RegressionHead(), [[1.0], [0.5]], 1),
      'PoissonRegressionHead': (est.PoissonRegressionHead(), [[1.0], [2.0]],
                                1),
      'LogisticRegressionHead': (est.LogisticRegressionHead(), [[1.0], [0.0]],
                                 1),
      'MultiHead': (est.MultiHead([est.RegressionHead(name='r'),
                                   est.BinaryClassHead(name='b')]),
                    {'r': [[1.0], [0.5]], 'b': [[1], [0]]}, 2),
  }


def _logits(dimension, name):
  logits = np.linspace(-1, 1, 2 * dimension).reshape(2, dimension).astype(
      np.float32)
  if name == 'MultiHead':
    return {'r': tf.constant(logits[:, :1]), 'b': tf.constant(logits[:, 1:])}
  return tf.constant(logits)


def _one(rec, name, head, labels, dimension):
  for prop in PROPERTIES:
    rec.call(f'{name}.{prop}', getattr, head, prop)
  modes = tf.estimator.ModeKeys
  logits = _logits(dimension, name)
  labels = ({k: tf.constant(v) for k, v in labels.items()}
            if isinstance(labels, dict) else tf.constant(labels))
  features = {'x': tf.zeros([2, 2])}
  rec.call(f'{name}.loss', head.loss, labels, logits, features=features,
           mode=modes.TRAIN)
  rec.call(f'{name}.predictions', head.predictions, logits)
  metrics = rec.call(f'{name}.metrics', head.metrics)
  if metrics is not None:
    rec.call(f'{name}.update_metrics', head.update_metrics, metrics,
             features, logits, labels)
  optimizer = tf.keras.optimizers.SGD(0.1) if hasattr(
      tf.keras.optimizers, 'SGD') else None
  for mode in (modes.PREDICT, modes.EVAL, modes.TRAIN):
    rec.call(f'{name}.create_estimator_spec {mode}', lambda m=mode: sorted(
        head.create_estimator_spec(
            features, m, logits, labels=None if m == modes.PREDICT else
            labels, train_op_fn=lambda loss: tf.no_op())._asdict()))
  rec.call(f'{name}.create_estimator_spec optimizer and train_op_fn',
           head.create_estimator_spec, features, modes.TRAIN, logits,
           labels=labels, optimizer=optimizer,
           train_op_fn=lambda loss: tf.no_op())


class MeanHead(tf.estimator.Head):
  """A program's own Head, leaving its properties to the base class."""


def run(rec):
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    for name, (head, labels, dimension) in _heads().items():
      _one(rec, name, head, labels, dimension)
  rec.call('Head() abstract', tf.estimator.Head)
  rec.call('MeanHead()', MeanHead)
  rec.call('MultiClassHead n_classes=1', tf.estimator.MultiClassHead, 1)
  rec.call('BinaryClassHead loss_reduction NONE', tf.estimator
           .BinaryClassHead, loss_reduction=tf.losses.Reduction.NONE)
  rec.call('RegressionHead in v1 namespace', tf.compat.v1.estimator
           .RegressionHead, label_dimension=2)
  est = tf.estimator.LinearRegressor(common.columns(), rec.path('model'),
                                     config=common.run_config(None))

  def metric_fn(labels, predictions):
    metric = tf.keras.metrics.Mean()
    metric.update_state(predictions['predictions'])
    return {'mean_prediction': metric}
  with_metrics = rec.call('add_metrics', tf.estimator.add_metrics, est,
                          metric_fn)
  if with_metrics is not None:
    with_metrics.train(common.input_fn(), steps=2)
    rec.call('add_metrics: evaluate', with_metrics.evaluate,
             common.input_fn(), steps=1)
  rec.call('add_metrics v1', tf.compat.v1.estimator.add_metrics, est,
           lambda features: {})
