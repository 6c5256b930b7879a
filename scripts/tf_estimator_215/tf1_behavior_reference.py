r"""Seeded programs under TF1 behaviour (`tf.compat.v1.disable_v2_behavior()`
first), and what tf.estimator 2.15 computed for them.

    # The reference, once, in the 2.15 environment:
    .venv-tf215/bin/python -m scripts.tf_estimator_215.tf1_behavior_reference \
        --out tests/data/tf_estimator_215/tf1_behavior.json
    # The same programs here (tests/test_tf1_behavior.py runs this):
    .venv/bin/python -m estimator_rt.compat \
        scripts/tf_estimator_215/tf1_behavior_reference.py --out /tmp/here.json

Every canned estimator of 2.15 (the tf.compat.v1.estimator classes, which
are `tf.estimator` under `import tensorflow.compat.v1 as tf`, and the TF2
classes a TF1-behaviour program reaches through `tf.compat.v2.estimator`)
and a TF1-style model_fn, each with a graph seed, train TRAIN_STEPS steps
and evaluate; each program's record holds the variables of the starting
checkpoint (`model.ckpt-0`) and of the last one, name by name, and the
evaluation's metrics. Then what code around a canned estimator reads of its
graph: the UPDATE_OPS a wrapped DNN with batch normalization leaves, the
variables a regulariser re-entering the linear model's scope with a
partitioner gets, and the metric names of `model_to_estimator`'s
evaluation; and a v1 DNN whose partitioned input layer's optimizer slots
are slices of one tensor, trained on one model_dir three times
(`partitioned_slots`, from checkpoint_corpus.py). A program that fails records its exception's class and the
start of its message instead.

One process runs them all (TF1 behaviour is a process's setting).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_v2_behavior()
v1 = tf.compat.v1

TRAIN_STEPS = 6
SEED = 7
_ROWS = 24
_BATCH = 8


def _data(kind: str):
  """(features, labels) arrays: two numeric values and a category per row,
  labels by `kind` ('binary', 'multiclass', 'regression')."""
  rng = np.random.RandomState(0)
  x = rng.uniform(-1., 1., size=(_ROWS, 2)).astype(np.float32)
  c = np.array([['a', 'b', 'c'][i % 3] for i in range(_ROWS)])[:, None]
  score = x[:, 0] - 0.5 * x[:, 1] + (c[:, 0] == 'a') * 0.3
  labels = {'binary': (score > 0).astype(np.int64)[:, None],
            'multiclass': np.digitize(score, [-0.3, 0.3])[:, None],
            'regression': score.astype(np.float32)[:, None]}[kind]
  return {'x': x, 'c': c}, labels


def _input_fns(kind: str):
  if kind == 'clusters':  # Features only: the x values.
    x = _data('binary')[0]['x']
    return (lambda: tf.data.Dataset.from_tensor_slices(x).repeat().batch(
        _BATCH)), (lambda: tf.data.Dataset.from_tensor_slices(x).batch(
            _BATCH))
  if kind == 'sequences':
    return _sequence_input_fns()
  features, labels = _data(kind)

  def train():
    return tf.data.Dataset.from_tensor_slices(
        (features, labels)).repeat().batch(_BATCH)

  def evaluate():
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(
        _BATCH)

  return train, evaluate


def _sequence_input_fns():
  """A sparse sequence feature 's' (1 to 3 steps) and binary labels."""
  rng = np.random.RandomState(1)
  lengths = rng.randint(1, 4, size=_ROWS)
  values = rng.uniform(-1., 1., size=(_ROWS, 3)).astype(np.float32)
  labels = (values[:, 0] > 0).astype(np.int64)[:, None]

  def dataset():
    def sequence(i):
      length = tf.gather(lengths, i)
      indices = tf.stack([tf.range(length, dtype=tf.int64),
                          tf.zeros([length], tf.int64)], axis=1)
      return {'s': tf.SparseTensor(indices, tf.gather(values, i)[:length],
                                   dense_shape=[3, 1])}, tf.gather(labels, i)
    return tf.data.Dataset.range(_ROWS).map(sequence)

  return (lambda: dataset().repeat().batch(_BATCH),
          lambda: dataset().batch(_BATCH))


def _columns():
  """(dense columns for a DNN, columns for a linear model)."""
  fc = tf.feature_column
  category = fc.categorical_column_with_vocabulary_list('c', ['a', 'b', 'c'])
  x = fc.numeric_column('x', shape=(2,))
  return [x, fc.embedding_column(category, 2)], [x, category]


# Programs whose training is not deterministic on 2.15 either (SDCA
# updates from several threads): their records hold the variables' shapes
# and the metrics' names only.
NONDETERMINISTIC = ('v1_linear_classifier_sdca',)


def _canned_programs():
  """name -> (label kind, builder(model_dir, config))."""
  deep, wide = _columns()
  e1, e2 = v1.estimator, tf.compat.v2.estimator
  return {
      'v1_dnn_classifier': ('binary', lambda d, c: e1.DNNClassifier(
          [4, 3], deep, model_dir=d, config=c)),
      'v1_dnn_classifier_batch_norm': ('multiclass', lambda d, c:
                                       e1.DNNClassifier(
                                           [4], deep, model_dir=d, n_classes=3,
                                           batch_norm=True, config=c)),
      'v1_dnn_regressor': ('regression', lambda d, c: e1.DNNRegressor(
          [4], deep, model_dir=d, optimizer='Adam', config=c)),
      'v1_linear_classifier': ('multiclass', lambda d, c: e1.LinearClassifier(
          wide, model_dir=d, n_classes=3, config=c)),
      'v1_linear_regressor': ('regression', lambda d, c: e1.LinearRegressor(
          wide, model_dir=d, config=c)),
      'v1_linear_classifier_sdca': ('binary', lambda d, c:
                                    e1.LinearClassifier(
                                        wide, model_dir=d,
                                        optimizer=e1.experimental.LinearSDCA(
                                            example_id_column='id'),
                                        config=c)),
      'v1_wide_deep_classifier': ('binary', lambda d, c:
                                  e1.DNNLinearCombinedClassifier(
                                      model_dir=d, linear_feature_columns=wide,
                                      dnn_feature_columns=deep,
                                      dnn_hidden_units=[4], config=c)),
      'v1_wide_deep_regressor': ('regression', lambda d, c:
                                 e1.DNNLinearCombinedRegressor(
                                     model_dir=d, linear_feature_columns=wide,
                                     dnn_feature_columns=deep,
                                     dnn_hidden_units=[3], config=c)),
      'v1_baseline_classifier': ('multiclass', lambda d, c:
                                 e1.BaselineClassifier(
                                     model_dir=d, n_classes=3, config=c)),
      'v1_baseline_regressor': ('regression', lambda d, c:
                                e1.BaselineRegressor(model_dir=d, config=c)),
      'v2_dnn_classifier': ('binary', lambda d, c: e2.DNNClassifier(
          [4, 3], deep, model_dir=d, config=c)),
      'v2_linear_regressor': ('regression', lambda d, c: e2.LinearRegressor(
          wide, model_dir=d, config=c)),
      'v2_wide_deep_classifier': ('multiclass', lambda d, c:
                                  e2.DNNLinearCombinedClassifier(
                                      model_dir=d, linear_feature_columns=wide,
                                      dnn_feature_columns=deep,
                                      dnn_hidden_units=[4], n_classes=3,
                                      config=c)),
      'v2_baseline_classifier': ('binary', lambda d, c: e2.BaselineClassifier(
          model_dir=d, config=c)),
      'v2_dnn_estimator_regression_head': ('regression', lambda d, c:
                                           e2.DNNEstimator(
                                               e2.RegressionHead(), [4], deep,
                                               model_dir=d, config=c)),
      'v2_linear_estimator_binary_head': ('binary', lambda d, c:
                                          e2.LinearEstimator(
                                              e2.BinaryClassHead(), wide,
                                              model_dir=d, config=c)),
      'v1_kmeans': ('clusters', lambda d, c: e1.experimental.KMeans(
          num_clusters=2, model_dir=d, config=c,
          use_mini_batch=False, seed=SEED)),
      'v2_rnn_classifier': ('sequences', lambda d, c:
                            e2.experimental.RNNClassifier(
                                sequence_feature_columns=[
                                    tf.feature_column.sequence_numeric_column(
                                        's')],
                                units=[3], model_dir=d, config=c)),
  }


def _tf1_model_fn(features, labels, mode, params):
  """A TF1-style model_fn: tf.compat.v1.layers, an Adam train_op, v1
  metrics."""
  del params
  net = v1.feature_column.input_layer(features, _columns()[0])
  net = v1.layers.dense(net, 4, activation=tf.nn.relu, name='hidden')
  logits = v1.layers.dense(net, 2, name='logits')
  if mode == v1.estimator.ModeKeys.PREDICT:
    return v1.estimator.EstimatorSpec(mode, predictions={'logits': logits})
  labels = tf.reshape(labels, [-1])
  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  predicted = tf.argmax(logits, 1)
  metrics = {'accuracy': v1.metrics.accuracy(labels, predicted),
             'mean_logit': v1.metrics.mean(logits)}
  train_op = v1.train.AdamOptimizer(0.05).minimize(
      loss, global_step=v1.train.get_global_step())
  return v1.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                    eval_metric_ops=metrics)


def _variables(checkpoint: str) -> dict:
  reader = tf.train.load_checkpoint(checkpoint)
  return {name: np.asarray(reader.get_tensor(name)).ravel().tolist()
          for name, _ in tf.train.list_variables(checkpoint)
          if reader.get_tensor(name).dtype != object}


def _jsonable(value):
  if isinstance(value, dict):
    return {k: _jsonable(v) for k, v in value.items()}
  return np.asarray(value).tolist()


def _error(e: BaseException) -> dict:
  return {'error': f'{type(e).__name__}: {str(e).strip()[:80]}'}


def _train_and_record(estimator, kind: str, *,
                      deterministic: bool = True) -> dict:
  train, evaluate = _input_fns(kind)
  if not deterministic:  # LinearSDCA's: it needs example ids.
    train, evaluate = _with_ids(train), _with_ids(evaluate)
  estimator.train(train, steps=TRAIN_STEPS)
  record = {
      'initial': _variables(os.path.join(estimator.model_dir,
                                         'model.ckpt-0')),
      'trained': _variables(estimator.latest_checkpoint()),
      'metrics': _jsonable(estimator.evaluate(evaluate)),
  }
  if not deterministic:
    record = {part: {name: len(value) if isinstance(value, list) else None
                     for name, value in values.items()}
              for part, values in record.items()}
  return record


def _with_ids(input_fn):
  def with_ids():
    return input_fn().map(lambda f, l: (dict(f, id=tf.as_string(
        tf.range(tf.shape(f['x'])[0]))), l))
  return with_ids


def _config():
  return v1.estimator.RunConfig(tf_random_seed=SEED,
                                save_checkpoints_steps=1000,
                                save_summary_steps=1000)


def record_canned(work: str) -> dict:
  records = {}
  for name, (kind, build) in _canned_programs().items():
    try:
      records[name] = _train_and_record(
          build(os.path.join(work, name), _config()), kind,
          deterministic=name not in NONDETERMINISTIC)
    except Exception as e:  # pylint: disable=broad-except
      records[name] = _error(e)
  try:
    records['tf1_model_fn'] = _train_and_record(
        v1.estimator.Estimator(_tf1_model_fn,
                               model_dir=os.path.join(work, 'tf1'),
                               config=_config()), 'binary')
  except Exception as e:  # pylint: disable=broad-except
    records['tf1_model_fn'] = _error(e)
  return records


def record_update_ops(work: str) -> list:
  """The UPDATE_OPS a model_fn wrapping a DNN with batch normalization
  finds after building it."""
  deep, _ = _columns()
  dnn = v1.estimator.DNNClassifier([4], deep, batch_norm=True,
                                   model_dir=os.path.join(work, 'bn_inner'))
  seen = []

  def wrapped(features, labels, mode, config):
    spec = dnn.model_fn(features, labels, mode, config)
    if mode == v1.estimator.ModeKeys.TRAIN:
      seen.extend(op.name for op in
                  v1.get_collection(v1.GraphKeys.UPDATE_OPS))
    return spec

  v1.estimator.Estimator(wrapped, model_dir=os.path.join(work, 'bn')).train(
      _input_fns('binary')[0], steps=1)
  return seen


def record_partitioned_reentry(work: str) -> dict:
  """What a regulariser re-entering the linear model's variable scope with
  a partitioner gets, and the checkpoint's names."""
  _, wide = _columns()
  linear = v1.estimator.LinearClassifier(
      wide, model_dir=os.path.join(work, 'lin_inner'))
  seen = {}

  def wrapped(features, labels, mode, config):
    spec = linear.model_fn(features, labels, mode, config)
    with v1.variable_scope('linear/linear_model', reuse=v1.AUTO_REUSE,
                           partitioner=v1.fixed_size_partitioner(1)):
      weights = v1.get_variable('x/weights', shape=[2, 1])
    seen['reentered'] = type(weights).__name__
    seen['graph_variables'] = sorted(v.name for v in v1.global_variables())
    return spec

  estimator = v1.estimator.Estimator(wrapped,
                                     model_dir=os.path.join(work, 'lin'))
  estimator.train(_input_fns('binary')[0], steps=1)
  seen['checkpoint'] = sorted(estimator.get_variable_names())
  return seen


def record_keras_metric_names(work: str) -> dict:
  """model_to_estimator's evaluation of a compiled Keras model with fixed
  weights: metric name -> value."""
  model = tf.keras.Sequential([tf.keras.layers.Dense(
      1, activation='sigmoid', input_shape=(2,))])
  model.set_weights([np.array([[0.5], [-0.25]], np.float32),
                     np.array([0.1], np.float32)])
  model.compile('sgd', 'binary_crossentropy',
                metrics=['accuracy', 'mae', 'crossentropy'],
                weighted_metrics=['acc'])
  estimator = tf.keras.estimator.model_to_estimator(
      model, model_dir=os.path.join(work, 'keras'))
  features, labels = _data('binary')
  key = model.input_names[0]

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(
        ({key: features['x']}, labels.astype(np.float32))).batch(_BATCH)

  return _jsonable(estimator.evaluate(input_fn))


def record_keras_subclassed(work: str) -> dict:
  """model_to_estimator's evaluation of a subclassed Keras model (built by
  calling it on a batch, its weights then fixed), and Keras' own
  evaluation of the model: {'estimator': metrics, 'keras': [loss, acc]}.
  Its input shapes hold Dimension objects under TF1 behaviour. (2.15 reset
  a subclassed model's weights to fresh, unseeded initial values: its
  estimator's metrics changed from run to run.)"""

  class Model(tf.keras.Model):

    def __init__(self):
      super().__init__()
      self.dense = tf.keras.layers.Dense(1, activation='sigmoid')

    def call(self, inputs):
      return self.dense(inputs)

  features, labels = _data('binary')
  model = Model()
  model.compile('sgd', 'binary_crossentropy', metrics=['accuracy'])
  model.fit(features['x'][:_BATCH], labels[:_BATCH].astype(np.float32),
            epochs=1, verbose=0)
  model.set_weights([np.array([[0.5], [-0.25]], np.float32),
                     np.array([0.1], np.float32)])
  # Before model_to_estimator: afterwards the model is not used again
  # (docs/differences.md, under TF1 behaviour).
  keras = model.evaluate(features['x'], labels.astype(np.float32),
                         batch_size=_BATCH, verbose=0)
  estimator = tf.keras.estimator.model_to_estimator(
      model, model_dir=os.path.join(work, 'keras_subclassed'),
      # 2.15 refused object-based checkpoints of a subclassed model.
      checkpoint_format='saver')

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(
        (features['x'], labels.astype(np.float32))).batch(_BATCH)

  return {'estimator': _jsonable(estimator.evaluate(input_fn)),
          'keras': [float(v) for v in keras]}


def record_partitioned_slots(work: str) -> dict:
  """Issue 46's program (checkpoint_corpus.issue_program): a v1 DNN whose
  partitioned input layer's Adagrad slots are slices of one tensor,
  trained, trained again and trained and evaluated on one model_dir."""
  from scripts.tf_estimator_215 import checkpoint_corpus  # pylint: disable=g-import-not-at-top
  return checkpoint_corpus.issue_program(os.path.join(work, 'slots'))


def record_all() -> dict:
  work = tempfile.mkdtemp(prefix='tf1_behavior_')
  try:
    record = {'canned': record_canned(work)}
    for name, fn in (('update_ops', record_update_ops),
                     ('partitioned_reentry', record_partitioned_reentry),
                     ('keras_metric_names', record_keras_metric_names),
                     ('keras_subclassed', record_keras_subclassed),
                     ('partitioned_slots', record_partitioned_slots)):
      try:
        record[name] = fn(work)
      except Exception as e:  # pylint: disable=broad-except
        record[name] = _error(e)
    return record
  finally:
    shutil.rmtree(work, ignore_errors=True)


def main(argv):
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--out', required=True)
  args = parser.parse_args(argv)
  record = record_all()
  record['versions'] = {'tensorflow': tf.__version__,
                        'python': sys.version.split()[0]}
  with open(args.out, 'w', encoding='utf-8') as f:
    json.dump(record, f, indent=1, sort_keys=True)


if __name__ == '__main__':
  main(sys.argv[1:])
