r"""A corpus of small checkpoints in every layout tf.estimator 2.15 wrote,
for the checkpoint check (estimator_rt/core/checkpoints.py) to accept.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.checkpoint_corpus
    .venv/bin/python -m scripts.tf_estimator_215.checkpoint_corpus

Under TensorFlow 2.15 tf.estimator writes the checkpoints
(tests/data/tf_estimator_215/checkpoints/); under 2.16+ estimator_rt does,
through tf.estimator's names (tests/data/runtime_checkpoints/): the same
programs, each trained a few steps in a temporary model_dir. Only the newest
checkpoint's `.index` and `.data-*` files are kept (a few KB each; a
larger one gzipped, `<name>.gz`).

The layouts: partitioned variables (fixed-size, min-max and
variable-axis-size partitioners; v1 canned DNN input layers with
`input_layer_partitioner`, linear models with a partitioner, embedding
columns) times the optimizers' slots (Adagrad, Adam, Ftrl, Momentum,
RMSProp, Adadelta, ProximalAdagrad, SDCA, Keras 2's legacy and new
optimizers); moving-average shadows; variables on two ps tasks of a
between-graph layout (a local `replica_device_setter` cluster in this
process) saved by `Saver(sharded=True)` in two data shards, a partitioned
embedding split across them; TPUEstimator(use_tpu=False) embedding tables;
variables holding infinities from the start (a best loss of inf, a -inf
mask).

For each checkpoint, `manifest.json` records what TensorFlow's own restore
reads from it: the `.meta` written beside it is imported into a new graph,
its Saver restores the checkpoint, and each variable's slice (the whole
name, shape, offset and part shape of a partitioned variable's part) is
recorded with the sum and the first value it restored.
tests/test_checkpoint_corpus.py restores the same slices with TensorFlow
and runs the check on every checkpoint.
"""

import glob
import gzip
import json
import os
import shutil
import socket
import sys
import tempfile

import numpy as np
import tensorflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
_DATA = os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'tests', 'data')
REFERENCE_ROOT = os.path.join(_DATA, 'tf_estimator_215', 'checkpoints')
RUNTIME_ROOT = os.path.join(_DATA, 'runtime_checkpoints')
STEPS = 3
# Files above this size are kept gzipped.
LARGE = 64 << 10
_IDS = np.array([0, 1, 2, 3, 4, 5, 6, 0], np.int64)


def _input_fn():
  features = {'x': _IDS, 'y': np.linspace(0., 1., 8, dtype=np.float32),
              'example_id': np.array([str(i) for i in range(8)])}
  labels = (_IDS % 2).astype(np.int64)
  return tf.compat.v1.data.Dataset.from_tensor_slices(
      (features, labels)).repeat().batch(4)


def _columns():
  ids = tf.feature_column.categorical_column_with_identity('x', 7)
  return ids, [tf.feature_column.embedding_column(ids, 4),
               tf.feature_column.numeric_column('y')]


def _config(model_dir):
  return tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=1,
                                save_summary_steps=0,
                                log_step_count_steps=1000)


V1_OPTIMIZERS = {
    'adagrad': None,  # The v1 canned DNN's default.
    'adam': lambda: tf.compat.v1.train.AdamOptimizer(0.01),
    'ftrl': lambda: tf.compat.v1.train.FtrlOptimizer(0.05),
    'momentum': lambda: tf.compat.v1.train.MomentumOptimizer(0.05, 0.9),
    'rmsprop': lambda: tf.compat.v1.train.RMSPropOptimizer(0.01),
    'adadelta': lambda: tf.compat.v1.train.AdadeltaOptimizer(1.0),
    'proximal_adagrad':
        lambda: tf.compat.v1.train.ProximalAdagradOptimizer(0.05),
}


def _dnn_v1(optimizer):
  def train(model_dir):
    _, columns = _columns()
    extra = {} if V1_OPTIMIZERS[optimizer] is None else {
        'optimizer': V1_OPTIMIZERS[optimizer]()}
    estimator = tf.compat.v1.estimator.DNNClassifier(
        hidden_units=[3], feature_columns=columns, config=_config(model_dir),
        input_layer_partitioner=tf.compat.v1.min_max_variable_partitioner(
            max_partitions=2, min_slice_size=1), **extra)
    estimator.train(_input_fn, max_steps=STEPS)
  return train


def _linear_v1_ftrl(model_dir):
  """A linear model whose weights a fixed-size partitioner splits; Ftrl
  (its default) keeps two slots per part."""
  ids, _ = _columns()
  estimator = tf.compat.v1.estimator.LinearClassifier(
      feature_columns=[ids, tf.feature_column.numeric_column('y')],
      config=_config(model_dir),
      partitioner=tf.compat.v1.fixed_size_partitioner(2))
  estimator.train(_input_fn, max_steps=STEPS)


def _linear_sdca(model_dir):
  ids, _ = _columns()
  estimator = tf.compat.v1.estimator.LinearClassifier(
      feature_columns=[ids, tf.feature_column.numeric_column('y')],
      config=_config(model_dir),
      partitioner=tf.compat.v1.fixed_size_partitioner(2),
      optimizer=tf.estimator.experimental.LinearSDCA(
          example_id_column='example_id', symmetric_l2_regularization=0.1))
  estimator.train(_input_fn, max_steps=STEPS)


def _partitioned_model_fn(make_train_op, *, partitioner, extra=None):
  """A model_fn over a partitioned [7, 4] embedding and a plain bias;
  `make_train_op(loss, variables)` trains them, `extra(loss, train_op)`
  may add variables and ops (moving averages, infinities)."""

  def model_fn(features, labels, mode):
    table = tf.compat.v1.get_variable(
        'table', shape=[7, 4], partitioner=partitioner,
        initializer=tf.compat.v1.truncated_normal_initializer(seed=1))
    bias = tf.compat.v1.get_variable('bias', shape=[4],
                                     initializer=tf.zeros_initializer())
    rows = tf.nn.embedding_lookup(table, features['x']) + bias
    logits = tf.reduce_sum(rows, axis=1)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.float32), logits=logits))
    if mode != tf.estimator.ModeKeys.TRAIN:
      return tf.estimator.EstimatorSpec(mode, loss=loss)
    variables = list(table) + [bias]
    train_op = tf.group(make_train_op(loss, variables),
                        tf.compat.v1.assign_add(
                            tf.compat.v1.train.get_global_step(), 1))
    if extra is not None:
      train_op = extra(loss, train_op)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

  return model_fn


def _v1_train_op(optimizer):
  return lambda loss, variables: optimizer().minimize(loss,
                                                      var_list=variables)


def _keras_train_op(optimizer):
  def make(loss, variables):
    gradients = tf.compat.v1.gradients(loss, variables)
    return optimizer().apply_gradients(zip(gradients, variables))
  return make


def _keras2_optimizers():
  """Keras 2's optimizers as tf.estimator 2.15's programs had them:
  tf.keras under 2.15, tf_keras under 2.16+."""
  if _is_tf215():
    return tf.keras.optimizers
  import tf_keras  # pylint: disable=g-import-not-at-top
  return tf_keras.optimizers


def _custom(make_train_op, *, partitioner, extra=None):
  def train(model_dir):
    estimator = tf.estimator.Estimator(
        _partitioned_model_fn(make_train_op(), partitioner=partitioner,
                              extra=extra), config=_config(model_dir))
    estimator.train(_input_fn, max_steps=STEPS)
  return train


def _moving_averages(loss, train_op):
  del loss
  average = tf.compat.v1.train.ExponentialMovingAverage(0.9)
  with tf.control_dependencies([train_op]):
    return average.apply(tf.compat.v1.trainable_variables())


def _infinities(loss, train_op):
  """A best loss initialised to inf and a mask of -inf, as programs kept
  them (2.15 saved and restored them)."""
  best = tf.compat.v1.get_variable('best_loss', initializer=np.inf,
                                   trainable=False)
  mask = tf.compat.v1.get_variable(
      'mask', trainable=False,
      initializer=np.array([0., -np.inf, 0., -np.inf], np.float32))
  with tf.control_dependencies([train_op]):
    keep = tf.compat.v1.assign(best, tf.minimum(best, loss + np.inf))
    return tf.group(keep, tf.identity(mask))


def _free_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(('localhost', 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def _ps_sharded(model_dir):
  """Between-graph training's layout in one process: a worker and two ps
  servers, variables placed by replica_device_setter (the partitioned
  table's parts on both ps tasks), saved by Saver(sharded=True) as a chief
  saves: one data shard per ps task."""
  ports = _free_ports(3)
  cluster = tf.train.ClusterSpec({
      'worker': [f'localhost:{ports[0]}'],
      'ps': [f'localhost:{ports[1]}', f'localhost:{ports[2]}']})
  servers = [tf.distribute.Server(cluster, job_name=job, task_index=index)
             for job, index in (('worker', 0), ('ps', 0), ('ps', 1))]
  graph = tf.Graph()
  with graph.as_default():
    with tf.compat.v1.device(tf.compat.v1.train.replica_device_setter(
        cluster=cluster)):
      global_step = tf.compat.v1.train.get_or_create_global_step()
      features, labels = tf.compat.v1.data.make_one_shot_iterator(
          _input_fn()).get_next()
      spec = _partitioned_model_fn(
          _v1_train_op(lambda: tf.compat.v1.train.AdagradOptimizer(0.1)),
          partitioner=tf.compat.v1.fixed_size_partitioner(2))(
              features, labels, tf.estimator.ModeKeys.TRAIN)
    saver = tf.compat.v1.train.Saver(sharded=True)
    with tf.compat.v1.Session(servers[0].target) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      for _ in range(STEPS):
        session.run(spec.train_op)
      saver.save(session, os.path.join(model_dir, 'model.ckpt'),
                 global_step=global_step)
  del servers  # The in-process servers end with the process.


def _tpu_embedding(model_dir):
  from scripts.tf_estimator_215 import tpu_reference  # pylint: disable=g-import-not-at-top
  tpu_reference.embedding_program(model_dir)


def _cases():
  cases = {f'dnn_v1_partitioned_{name}': _dnn_v1(name)
           for name in V1_OPTIMIZERS}
  fixed = tf.compat.v1.fixed_size_partitioner(2)
  cases.update({
      'linear_v1_partitioned_ftrl': _linear_v1_ftrl,
      'linear_v1_partitioned_sdca': _linear_sdca,
      'variable_axis_partitioned_adam': _custom(
          lambda: _v1_train_op(lambda: tf.compat.v1.train.AdamOptimizer(0.1)),
          partitioner=tf.compat.v1.variable_axis_size_partitioner(
              max_shard_bytes=40)),
      'fixed_partitioned_keras2_legacy_adam': _custom(
          lambda: _keras_train_op(
              lambda: _keras2_optimizers().legacy.Adam(0.1)),
          partitioner=fixed),
      'fixed_partitioned_keras2_adam': _custom(
          lambda: _keras_train_op(lambda: _keras2_optimizers().Adam(0.1)),
          partitioner=fixed),
      'fixed_partitioned_moving_averages': _custom(
          lambda: _v1_train_op(
              lambda: tf.compat.v1.train.GradientDescentOptimizer(0.1)),
          partitioner=fixed, extra=_moving_averages),
      'infinities': _custom(
          lambda: _v1_train_op(
              lambda: tf.compat.v1.train.AdagradOptimizer(0.1)),
          partitioner=fixed, extra=_infinities),
      'ps_sharded_partitioned_adagrad': _ps_sharded,
      'tpu_embedding_tables': _tpu_embedding,
  })
  return cases


ISSUE_EMBEDDING = ('dnn/input_from_feature_columns/input_layer/x_embedding/'
                   'embedding_weights')


def issue_program(model_dir):
  """Issue 46's program: a v1 canned DNNClassifier whose input layer a
  partitioner splits, trained with its default Adagrad; then what a program
  does with its model_dir. Returns what it saw: the global step after
  `train`, a second `train` and `train_and_evaluate`; the partitioned
  embedding's value (`get_variable_value`: its shape and sum) and what
  reading one part's slot whole gives (2.15: a ValueError); the final
  evaluation's metrics."""
  _, columns = _columns()
  estimator = tf.compat.v1.estimator.DNNClassifier(
      hidden_units=[3], feature_columns=columns, config=_config(model_dir),
      input_layer_partitioner=tf.compat.v1.min_max_variable_partitioner(
          max_partitions=2, min_slice_size=1))
  seen = {'steps': []}
  estimator.train(_input_fn, max_steps=STEPS)
  seen['steps'].append(int(estimator.get_variable_value('global_step')))
  embedding = estimator.get_variable_value(ISSUE_EMBEDDING)
  seen['embedding'] = {'shape': list(embedding.shape),
                       'sum': float(np.sum(embedding, dtype=np.float64))}
  try:
    estimator.get_variable_value(ISSUE_EMBEDDING + '/t_0/Adagrad')
    seen['slot_read_whole'] = 'read'
  except Exception as e:  # pylint: disable=broad-except
    seen['slot_read_whole'] = f'{type(e).__name__}: {str(e)[:60]}'
  estimator.train(_input_fn, max_steps=2 * STEPS)
  seen['steps'].append(int(estimator.get_variable_value('global_step')))
  metrics, _ = tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(_input_fn, max_steps=3 * STEPS),
      tf.estimator.EvalSpec(_input_fn, steps=2, throttle_secs=0))
  seen['steps'].append(int(estimator.get_variable_value('global_step')))
  seen['metrics'] = {key: float(value) for key, value in sorted(
      metrics.items())}
  return seen


def _record(prefix):
  """What TensorFlow's restore reads from `prefix`: each variable of the
  graph in its .meta, restored by that graph's own Saver."""
  meta = tf.compat.v1.MetaGraphDef()
  with open(prefix + '.meta', 'rb') as f:
    meta.ParseFromString(f.read())
  # Only the variables' collections: 2.15's SDCA lists a hash table by a
  # name its graph does not have, which import_meta_graph refuses.
  for key in list(meta.collection_def):
    if key != tf.compat.v1.GraphKeys.GLOBAL_VARIABLES:
      del meta.collection_def[key]
  graph = tf.Graph()
  with graph.as_default():
    saver = tf.compat.v1.train.import_meta_graph(meta, clear_devices=True)
    variables = tf.compat.v1.global_variables()
    with tf.compat.v1.Session() as session:
      saver.restore(session, prefix)
      values = session.run(variables)
  found = []
  for variable, value in zip(variables, values):
    info = variable._get_save_slice_info()  # pylint: disable=protected-access
    value = np.asarray(value)
    found.append({
        'name': variable.op.name,
        'key': info.full_name if info else variable.op.name,
        'dtype': variable.dtype.base_dtype.name,
        'shape': list(value.shape),
        'full_shape': list(info.full_shape) if info else None,
        'offset': list(info.var_offset) if info else None,
        'sum': float(np.sum(value, dtype=np.float64)),
        'first': float(value.flat[0]) if value.size else None,
    })
  return found


def _keep(path, target):
  """Copies `path` into `target`, gzipped (`<name>.gz`) if it is large:
  SDCA's example table is 4 MB of mostly empty buckets."""
  if os.path.getsize(path) <= LARGE:
    shutil.copy(path, target)
    return
  with open(path, 'rb') as f:
    content = f.read()
  with open(os.path.join(target, os.path.basename(path) + '.gz'), 'wb') as f:
    f.write(gzip.compress(content, mtime=0))


def _is_tf215():
  return tuple(int(p) for p in tf.__version__.split('.')[:2]) < (2, 16)


def _writer():
  if _is_tf215():
    from importlib import metadata  # pylint: disable=g-import-not-at-top
    return (f'tf.estimator {metadata.version("tensorflow-estimator")} '
            f'(TensorFlow {tf.__version__})')
  return f'estimator_rt (TensorFlow {tf.__version__})'


def main(argv):
  root = REFERENCE_ROOT if _is_tf215() else RUNTIME_ROOT
  only = set(argv[1:])
  manifest_path = os.path.join(root, 'manifest.json')
  manifest = {}
  if only and os.path.exists(manifest_path):
    with open(manifest_path) as f:
      manifest = json.load(f)
  manifest['written_by'] = _writer()
  cases = manifest.setdefault('cases', {})
  for name, train in _cases().items():
    if only and name not in only:
      continue
    print(f'--- {name}', flush=True)
    with tempfile.TemporaryDirectory() as model_dir:
      train(model_dir)
      prefix = tf.train.latest_checkpoint(model_dir)
      target = os.path.join(root, name)
      shutil.rmtree(target, ignore_errors=True)
      os.makedirs(target)
      for path in [prefix + '.index'] + glob.glob(prefix + '.data-*'):
        _keep(path, target)
      cases[name] = {'checkpoint': os.path.basename(prefix),
                     'variables': _record(prefix)}
  if not only or 'issue_program' in only:
    with tempfile.TemporaryDirectory() as model_dir:
      manifest['issue_program'] = issue_program(model_dir)
  with open(manifest_path, 'w') as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
    f.write('\n')


if __name__ == '__main__':
  main(sys.argv)
