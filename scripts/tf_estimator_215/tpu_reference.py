r"""tf.estimator 2.15's TPU helpers without a TPU: small programs, and the
figures estimator_rt must reproduce.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.tpu_reference

Importable under TensorFlow 2.15 and 2.21: each function imports
tf.estimator 2.15's module paths (`tensorflow_estimator.python.estimator.
tpu.*`), which estimator_rt.compat serves here once installed;
tests/test_tpu_compat_names.py runs them here and compares.

  - `context_answers()`: what 2.15's TPU contexts (`_get_tpu_context`)
    answer, for each mode, without a TPU and with TPUConfig(num_shards=1);
  - `host_call_program(model_dir)`: a TPUEstimator(use_tpu=False) whose
    TPUEstimatorSpec has a `host_call` writing a TF2 summary of its loss
    and `eval_metrics`: the host call's summaries by step, the losses, the
    evaluation's metrics;
  - `embedding_program(model_dir)`: a TPUEstimator(use_tpu=False) with an
    EmbeddingConfigSpec and TPU embedding columns (which then embed on the
    CPU): its checkpoint's variables, the evaluation, the predictions;
  - `packed_features()`: TensorPacker on 6 small features and a wide one.

Run as a script (under 2.15 only), it writes them all to
tests/data/tf_estimator_215/tpu_reference.json.
"""

import glob
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'tests',
                         'data', 'tf_estimator_215', 'tpu_reference.json')
_PACKAGE = 'tensorflow_estimator.python.estimator.'
BATCH = 4
STEPS = 3


def _modules():
  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.tpu import tpu_config
  from tensorflow_estimator.python.estimator.tpu import tpu_context
  from tensorflow_estimator.python.estimator.tpu import tpu_estimator
  # pylint: enable=g-import-not-at-top
  return tpu_config, tpu_context, tpu_estimator


def context_answers():
  """{config name: {mode: {question: answer}}}."""
  tpu_config, tpu_context, _ = _modules()
  configs = {
      'cpu': (tpu_config.RunConfig(), False),
      'one_core': (tpu_config.RunConfig(
          tpu_config=tpu_config.TPUConfig(num_shards=1)), True),
      'one_core_broadcast': (tpu_config.RunConfig(
          master='grpc://m:1', tpu_config=tpu_config.TPUConfig(
              num_shards=1, per_host_input_for_training=4)), True),
  }
  answers = {}
  for name, (config, use_tpu) in configs.items():
    ctx = tpu_context._get_tpu_context(config, 16, 8, 4, use_tpu, True, None)  # pylint: disable=protected-access
    answers[name] = {'one_core_context': isinstance(
        ctx, tpu_context._OneCoreTPUContext)}  # pylint: disable=protected-access
    for mode in ('train', 'eval', 'infer'):
      with ctx.with_mode(mode) as c:
        found = {
            'is_running_on_cpu': c.is_running_on_cpu(),
            'is_running_on_cpu_export': c.is_running_on_cpu(
                is_export_mode=True),
            'global_batch_size': c.global_batch_size,
            'batch_size_for_input_fn': c.batch_size_for_input_fn,
            'batch_size_for_model_fn': c.batch_size_for_model_fn,
            'master_job': c.master_job,
            'is_input_sharded_per_core': c.is_input_sharded_per_core(),
            'is_input_per_host_with_iterators':
                c.is_input_per_host_with_iterators(),
            'is_input_broadcast_with_iterators':
                c.is_input_broadcast_with_iterators(),
            'host_0': c.tpu_host_placement_function(host_id=0),
        }
        if name != 'cpu':
          found.update({
              'num_replicas': c.num_replicas,
              'num_hosts': c.num_hosts,
              'num_of_replicas_per_host': c.num_of_replicas_per_host,
              'device_for_replica_0': list(c.device_for_replica(0)),
              'tpu_device_0': c.tpu_device_placement_function(0),
              'ordinal_of_shard_3': c.tpu_ordinal_function(0)(3),
              'host_of_replica_0': c.tpu_host_placement_function(
                  replica_id=0),
              'deployment': list(tpu_context.TPUContext(
                  c, input_device='/cpu:0', invocation_index=0,
                  host_id=0).current_input_fn_deployment()),
          })
        answers[name][mode] = found
  return answers


def _data():
  x = np.arange(2 * BATCH * 2, dtype=np.float32).reshape(2 * BATCH, 2) / 10.
  y = (x[:, :1] * 2. - x[:, 1:] + 0.5).astype(np.float32)
  return x, y


def _input_fn(params):
  x, y = _data()
  return tf.compat.v1.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat(
  ).batch(params['batch_size'], drop_remainder=True)


def _scalars(model_dir, tag):
  """{step: value} of the summaries `tag` in model_dir's event files."""
  found = {}
  for path in sorted(glob.glob(os.path.join(model_dir, 'events.out.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          number = (value.simple_value if value.HasField('simple_value') else
                    float(tf.make_ndarray(value.tensor)))
          found[str(event.step)] = round(number, 6)
  return found


def host_call_program(model_dir):
  """{'host_call_loss': {step: loss}, 'eval': metrics} of a TPUEstimator
  (use_tpu=False) whose host_call writes its loss with a TF2 summary
  writer of its own."""
  tpu_config, _, tpu_estimator = _modules()

  def model_fn(features, labels, mode, params):
    del params
    predictions = tf.compat.v1.layers.dense(
        features['x'], 1, kernel_initializer=tf.compat.v1.ones_initializer())
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    # The step is read before the train_op increments it (else either
    # order could be read).
    step = tf.reshape(tf.compat.v1.train.get_global_step().read_value(), [1])
    with tf.control_dependencies([step]):
      train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())

    def host_call_fn(step, loss_value):
      with tf.compat.v2.summary.create_file_writer(
          os.path.join(model_dir, 'host_call')).as_default():
        with tf.compat.v2.summary.record_if(True):
          tf.compat.v2.summary.scalar('host_call_loss', loss_value[0],
                                      step=step[0])
          return tf.compat.v1.summary.all_v2_summary_ops()

    def metric_fn(labels, predictions):
      return {'mae': tf.compat.v1.metrics.mean_absolute_error(labels,
                                                              predictions)}

    return tpu_estimator.TPUEstimatorSpec(
        mode, loss=loss, train_op=train_op,
        host_call=(host_call_fn, [step, tf.reshape(loss, [1])]),
        eval_metrics=(metric_fn, [labels, predictions]))

  estimator = tpu_estimator.TPUEstimator(
      model_fn, config=tpu_config.RunConfig(model_dir=model_dir),
      use_tpu=False, train_batch_size=BATCH, eval_batch_size=BATCH)
  estimator.train(_input_fn, max_steps=STEPS)
  metrics = estimator.evaluate(_input_fn, steps=2)
  return {
      'host_call_loss': _scalars(os.path.join(model_dir, 'host_call'),
                                 'host_call_loss'),
      'eval': {k: round(float(v), 6) for k, v in sorted(metrics.items())},
  }


def embedding_program(model_dir):
  """{'variables': {name: shape}, 'eval': metrics, 'predictions': [...]}
  of a TPUEstimator(use_tpu=False) with an EmbeddingConfigSpec, its model
  reading three TPU embedding columns."""
  tpu_config, _, tpu_estimator = _modules()
  ids_a = tf.feature_column.categorical_column_with_identity('a', 5)
  ids_b = tf.feature_column.categorical_column_with_identity('b', 5)
  ids_c = tf.feature_column.categorical_column_with_identity('c', 5)
  initializer = tf.compat.v1.constant_initializer(
      np.arange(15, dtype=np.float32).reshape(5, 3) / 10.)
  # Not shared ones: input_layer, in TensorFlow 2.15 and 2.21 (whose
  # tf.compat.v1.keras has no DenseFeatures), takes no shared column.
  columns = [tf.compat.v1.tpu.experimental.embedding_column(
      ids, dimension=3, combiner=combiner, initializer=initializer)
             for ids, combiner in ((ids_a, 'mean'), (ids_b, 'sum'),
                                   (ids_c, 'sqrtn'))]

  def input_fn(params):
    ids = np.array([0, 1, 2, 3, 4, 0, 1, 2], np.int64)
    features = {key: tf.SparseTensor([[i, 0] for i in range(8)],
                                     (ids + shift) % 5, [8, 1])
                for key, shift in (('a', 0), ('b', 1), ('c', 2))}
    labels = np.linspace(0., 1., 8, dtype=np.float32)[:, None]
    return tf.compat.v1.data.Dataset.from_tensor_slices(
        (features, labels)).repeat().batch(params['batch_size'],
                                           drop_remainder=True)

  def model_fn(features, labels, mode, params):
    del params
    dense = tf.compat.v1.feature_column.input_layer(features, columns)
    predictions = tf.compat.v1.layers.dense(
        dense, 1, kernel_initializer=tf.compat.v1.ones_initializer())
    if mode == tf.estimator.ModeKeys.PREDICT:
      return tpu_estimator.TPUEstimatorSpec(
          mode, predictions={'p': predictions})
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return tpu_estimator.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

  spec = tpu_estimator.EmbeddingConfigSpec(
      feature_columns=columns,
      optimization_parameters=tpu_estimator.AdagradParameters(0.1))
  estimator = tpu_estimator.TPUEstimator(
      model_fn, config=tpu_config.RunConfig(model_dir=model_dir),
      use_tpu=False, train_batch_size=BATCH, eval_batch_size=BATCH,
      predict_batch_size=BATCH, embedding_config_spec=spec)
  estimator.train(input_fn, max_steps=STEPS)
  metrics = estimator.evaluate(input_fn, steps=2)
  predictions = [round(float(p['p'][0]), 5) for p in
                 estimator.predict(lambda params: input_fn(params).take(2))]
  reader = tf.compat.v1.train.NewCheckpointReader(
      tf.train.latest_checkpoint(model_dir))
  variables = {name: shape for name, shape in
               reader.get_variable_to_shape_map().items()
               if 'embedding' in name}
  return {'variables': dict(sorted(variables.items())),
          'eval': {k: round(float(v), 5) for k, v in sorted(metrics.items())},
          'predictions': predictions}


def packed_features():
  """The features TensorPacker packs (keys, shapes), and whether
  splitting them back restores every feature's value."""
  _, _, tpu_estimator = _modules()
  with tf.Graph().as_default():
    features = {f'f{i}': tf.fill([2, 1], float(i)) for i in range(6)}
    features['wide'] = tf.ones([2, 3])
    features['ids'] = tf.constant([[1], [2]], tf.int64)
    originals = dict(features)
    packer = tpu_estimator.TensorPacker(
        tpu_estimator._TENSOR_PACKER_SMALL_FEATURE_DIM_SIZE,  # pylint: disable=protected-access
        tpu_estimator._TENSOR_PACKER_MINIMUM_NUM_SMALL_FEATURES_TO_GROUP)  # pylint: disable=protected-access
    packer.maybe_concatenate_features(features)
    packed = {k: v.shape.as_list() for k, v in sorted(features.items())}
    packer.maybe_split_features(features)
    with tf.compat.v1.Session() as session:
      restored, expected = session.run(
          ([features[k] for k in sorted(originals)],
           [originals[k] for k in sorted(originals)]))
  return {'packed': packed,
          'restored': all(np.array_equal(a, b)
                          for a, b in zip(restored, expected))}


def main():
  figures = {'context': context_answers(), 'packed': packed_features()}
  with tempfile.TemporaryDirectory() as root:
    figures['host_call'] = host_call_program(os.path.join(root, 'host_call'))
    figures['embedding'] = embedding_program(os.path.join(root, 'embedding'))
  figures['about'] = {'tensorflow': tf.__version__,
                      'made_by': 'scripts/tf_estimator_215/tpu_reference.py'}
  with open(REFERENCE, 'w') as f:
    json.dump(figures, f, indent=1, sort_keys=True)
    f.write('\n')
  print(json.dumps(figures, indent=1, sort_keys=True))


if __name__ == '__main__':
  main()
