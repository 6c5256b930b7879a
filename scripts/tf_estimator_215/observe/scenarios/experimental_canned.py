"""tf.estimator.experimental's estimators and builders: LinearSDCA (with a
LinearClassifier), RNNClassifier and RNNEstimator, tf.compat.v1's KMeans
and its methods, and the logit_fn builders with call_logit_fn."""

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def _sdca(rec, config):
  def input_fn():
    x, _, y = common.data()
    ids = np.array([str(i).encode() for i in range(len(x))])
    return tf.data.Dataset.from_tensor_slices(
        ({'x': x, 'id': ids}, y)).repeat().batch(common.BATCH)
  optimizer = rec.call('LinearSDCA', tf.estimator.experimental.LinearSDCA,
                       'id', symmetric_l2_regularization=0.5)
  model = rec.call('LinearClassifier with LinearSDCA',
                   tf.estimator.LinearClassifier, common.columns(),
                   rec.path('sdca'), optimizer=optimizer, config=config,
                   loss_reduction=tf.losses.Reduction.SUM)
  if model is not None:
    rec.call('sdca: train', model.train, input_fn, steps=3)
    # SDCA updates from several threads: not deterministic, on 2.15 too.
    rec.call('sdca: evaluate', model.evaluate, input_fn, steps=1,
             exact=False)


def _rnn(rec, config):
  def input_fn():
    values = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    labels = np.array([[0], [1], [0], [1]], np.int64)
    def to_sparse(v, y):
      return {'seq': tf.sparse.from_dense(v)}, y
    return tf.data.Dataset.from_tensor_slices((values, labels)).batch(
        2).map(to_sparse).repeat()
  columns = [tf.feature_column.sequence_numeric_column('seq')]
  # Under TF2 behaviour 2.15's Keras 2 initializers (the RNN's defaults,
  # glorot_uniform and orthogonal, as v2 classes) drew their seeds from
  # Python's unseeded `random`, not from tf_random_seed: its numbers were
  # not reproducible there (two runs: loss 0.726, then 0.763). Recorded by
  # type and shape only then; TF1 behaviour's v1 initializers were seeded.
  exact = not tf.__internal__.tf2.enabled()
  for name, make in (
      ('RNNClassifier', lambda: tf.estimator.experimental.RNNClassifier(
          columns, units=[3], cell_type='simple_rnn',
          model_dir=rec.path('rnn_c'), config=config)),
      ('RNNEstimator', lambda: tf.estimator.experimental.RNNEstimator(
          tf.estimator.BinaryClassHead(), columns, units=[3],
          cell_type='lstm', model_dir=rec.path('rnn_e'), config=config))):
    model = rec.call(name, make)
    if model is not None:
      rec.call(f'{name}: train', model.train, input_fn, steps=2)
      rec.call(f'{name}: evaluate', model.evaluate, input_fn, steps=1,
               exact=exact)
      rec.call(f'{name}: predict', lambda m=model: common.first(m.predict(
          lambda: input_fn().map(lambda f, l: f)), 2), exact=exact)


def _kmeans(rec, config):
  x, _, _ = common.data()

  def input_fn():
    return tf.compat.v1.train.limit_epochs(tf.constant(x), num_epochs=1)
  kmeans = rec.call('KMeans', tf.compat.v1.estimator.experimental.KMeans, 2,
                    rec.path('kmeans'), use_mini_batch=False, seed=1,
                    config=config)
  if kmeans is None:
    return
  rec.call('KMeans: train', kmeans.train, input_fn, steps=3)
  rec.call('KMeans: cluster_centers', kmeans.cluster_centers, exact=False)
  rec.call('KMeans: score', kmeans.score, input_fn, exact=False)
  rec.call('KMeans: predict_cluster_index', lambda: [type(i).__name__ for i in
                                                     kmeans
                                                     .predict_cluster_index(
                                                         input_fn)][:3])
  rec.call('KMeans: transform', lambda: common.first(kmeans.transform(
      input_fn), 1), exact=False)
  rec.call('KMeans: bad distance', tf.compat.v1.estimator.experimental.KMeans,
           2, distance_metric='nope')


def _logit_fns(rec):
  experimental = tf.compat.v1.estimator.experimental
  with tf.Graph().as_default():
    features = {'x': tf.constant(common.data()[0])}
    dnn = rec.call('dnn_logit_fn_builder', experimental.dnn_logit_fn_builder,
                   1, [3], common.columns(), tf.nn.relu, None, None, False)
    linear = rec.call('linear_logit_fn_builder',
                      experimental.linear_logit_fn_builder, 1,
                      common.columns())
    for name, fn in (('dnn', dnn), ('linear', linear)):
      if fn is not None:
        rec.call(f'call_logit_fn {name}', tf.estimator.experimental
                 .call_logit_fn, fn, features, tf.estimator.ModeKeys.TRAIN,
                 {}, None)
    rec.call('call_logit_fn of a dict', tf.estimator.experimental
             .call_logit_fn, lambda features: {'a': tf.constant(1.0)},
             features, tf.estimator.ModeKeys.TRAIN, {}, None)


def run(rec):
  config = common.run_config(None)
  _sdca(rec, config)
  _rnn(rec, config)
  _kmeans(rec, config)
  _logit_fns(rec)
