"""tf.estimator 2.15's TF1-era modules as estimator_rt serves them
(estimator_rt/compat/served/): inputs/queues (queue feeding of in-memory
data), tools/checkpoint_converter (v1 canned checkpoints for the TF2
classes) and canned/timeseries (the time series heads and input
statistics; its models and estimators: test_timeseries.py). Each test
checks a behaviour 2.15's code had.
"""

import importlib
import random

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt.compat

estimator_rt.compat.install()

_PACKAGE = 'tensorflow_estimator.python.estimator.'


def _served(name):
  return importlib.import_module(_PACKAGE + name)


# ----------------------------------------------------------- inputs/queues


def test_batch_indices_stop_after_the_last_epoch():
  ff = _served('inputs.queues.feeding_functions')
  # 5 rows from row 3 (an epoch ends at row 2), one epoch left: 3, 4, 0, 1, 2.
  assert ff._get_integer_indices_for_next_batch(
      batch_indices_start=3, batch_size=10, epoch_end=2, array_length=5,
      current_epoch=1, total_epochs=2) == ([3, 4, 0, 1, 2], 2)
  with pytest.raises(tf.errors.OutOfRangeError, match='Already emitted 2'):
    ff._get_integer_indices_for_next_batch(0, 1, 4, 5, 2, 2)


def test_random_start_is_seeded_without_reseeding_the_programs_random():
  ff = _served('inputs.queues.feeding_functions')
  array = np.arange(10)
  random.seed(1)
  expected_next = random.random()
  random.seed(1)
  first = ff._ArrayFeedFn(['i', 'v'], array, 2, random_start=True, seed=7)()
  assert random.random() == expected_next
  again = ff._ArrayFeedFn(['i', 'v'], array, 2, random_start=True, seed=7)()
  start = random.Random(7).randrange(10)
  assert first['i'] == again['i'] == [start, (start + 1) % 10]
  with pytest.raises(ValueError, match='expects 2 placeholders; got 3'):
    ff._ArrayFeedFn(['a', 'b', 'c'], array, 2)


def _dequeue_all(queue, batch):
  rows = []
  with tf.compat.v1.Session() as session:
    coord = tf.train.Coordinator()
    threads = tf.compat.v1.train.queue_runner.start_queue_runners(
        session, coord=coord)
    dequeue = queue.dequeue_up_to(batch)
    try:
      while True:
        rows.append(session.run(dequeue))
    except tf.errors.OutOfRangeError:
      pass
    coord.request_stop()
    coord.join(threads)
  return rows


def test_enqueue_data_feeds_one_epoch_then_closes_the_queue():
  ff = _served('inputs.queues.feeding_functions')
  with tf.Graph().as_default():
    array = np.arange(10, dtype=np.float32).reshape(5, 2)
    queue = ff._enqueue_data(array, capacity=8, num_epochs=1, enqueue_size=2)
    assert len(tf.compat.v1.get_collection(
        tf.compat.v1.GraphKeys.QUEUE_RUNNERS)) == 1
    batches = _dequeue_all(queue, 3)
  indices = np.concatenate([b[0] for b in batches])
  np.testing.assert_array_equal(indices, np.arange(5))
  np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]),
                                array)


def test_a_generators_rows_are_padded_to_the_longest():
  ff = _served('inputs.queues.feeding_functions')

  def rows():
    for length in (1, 3):
      yield {'x': np.ones([length], np.int64)}

  with tf.Graph().as_default():
    queue = ff._enqueue_data(rows, capacity=4, num_epochs=1, enqueue_size=2,
                             pad_value=-1)
    batches = _dequeue_all(queue, 2)
  # One component: a dequeue gives the tensor itself.
  np.testing.assert_array_equal(batches[0], [[1, -1, -1], [1, 1, 1]])
  with tf.Graph().as_default():
    with pytest.raises(NotImplementedError, match='only available with gen'):
      ff._enqueue_data(np.zeros([2]), capacity=2, pad_value=0)
    with pytest.raises(TypeError, match='got list'):
      ff._enqueue_data([1, 2], capacity=2)


def test_feeding_queue_runner_checks_its_feed_functions():
  fqr = _served('inputs.queues.feeding_queue_runner')
  with tf.Graph().as_default():
    queue = tf.queue.FIFOQueue(2, [tf.int32])
    op = queue.enqueue(1)
    with pytest.raises(ValueError, match='same length as enqueue_ops'):
      fqr._FeedingQueueRunner(queue=queue, enqueue_ops=[op],
                              feed_fns=[None, None])
    runner = fqr._FeedingQueueRunner(queue=queue, enqueue_ops=[op])
    with pytest.raises(NotImplementedError, match='serialization to proto'):
      runner.to_proto()


# ------------------------------------------------- tools/checkpoint_converter


def _write_checkpoint(path, values):
  with tf.Graph().as_default():
    variables = {name: tf.Variable(value, name=name)
                 for name, value in values.items()}
    saver = tf.compat.v1.train.Saver(var_list=variables)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      saver.save(session, path)


def test_converter_renames_dnn_adam_slots_and_adds_hyperparameters(tmp_path):
  converter = _served('tools.checkpoint_converter')
  source = str(tmp_path / 'v1' / 'model.ckpt-4')
  _write_checkpoint(source, {
      'global_step': np.int64(4),
      'dnn/logits/kernel': np.ones([2, 1], np.float32),
      'dnn/logits/kernel/t_0/Adam': np.full([2, 1], 2., np.float32),
      'dnn/logits/kernel/t_0/Adam_1': np.full([2, 1], 3., np.float32),
      'dnn/head/beta1_power': np.float32(0.9**4),
      'dnn/head/beta2_power': np.float32(0.999**4),
  })
  target = str(tmp_path / 'v2' / 'model.ckpt-4')
  converter.convert_checkpoint('dnn', source, 'no/graph.pbtxt', target)
  assert tf.train.latest_checkpoint(str(tmp_path / 'v2')) == target
  reader = tf.train.load_checkpoint(target)
  names = set(reader.get_variable_to_shape_map())
  assert {'global_step', 'dnn/logits/kernel',
          'training/Adam/dnn/logits/kernel/m',
          'training/Adam/dnn/logits/kernel/v', 'training/Adam/beta_1',
          'training/Adam/beta_2', 'training/Adam/decay',
          'training/Adam/learning_rate'} <= names
  np.testing.assert_allclose(reader.get_tensor('training/Adam/beta_1'), 0.9,
                             rtol=1e-5)
  np.testing.assert_array_equal(
      reader.get_tensor('training/Adam/dnn/logits/kernel/v'), [[3.], [3.]])
  # The Keras legacy Adam's default, as in 2.15.
  assert reader.get_tensor('training/Adam/learning_rate') == np.float32(0.001)
  with pytest.raises(ValueError, match="estimator_type='wide'"):
    converter.convert_checkpoint('wide', source, '', target)


def test_converter_gives_a_combined_models_linear_optimizer_its_iter(tmp_path):
  converter = _served('tools.checkpoint_converter')
  source = str(tmp_path / 'model.ckpt-3')
  _write_checkpoint(source, {
      'global_step': np.int64(3),
      'linear/linear_model/x/weights': np.ones([1, 1], np.float32),
      'linear/linear_model/x/weights/Ftrl': np.ones([1, 1], np.float32),
      'linear/linear_model/x/weights/Ftrl_1': np.zeros([1, 1], np.float32),
      'dnn/logits/bias/RMSProp': np.ones([1], np.float32),
      'dnn/logits/bias/RMSProp_1': np.ones([1], np.float32),
  })
  target = str(tmp_path / 'out' / 'model.ckpt-3')
  converter.convert_checkpoint('combined', source, '', target)
  reader = tf.train.load_checkpoint(target)
  names = set(reader.get_variable_to_shape_map())
  assert reader.get_tensor('training/Ftrl/iter') == 3
  assert {'training/Ftrl/linear/linear_model/x/weights/accumulator',
          'training/Ftrl/linear/linear_model/x/weights/linear',
          'training/RMSprop/dnn/logits/bias/rms', 'training/RMSprop/rho',
          'training/Ftrl/learning_rate_power'} <= names
  # RMSProp's momentum slot has no TF2 counterpart.
  assert not any(n.startswith('training/RMSprop/dnn/logits/bias/') and
                 not n.endswith('/rms') for n in names)


def test_analytics_hooks_do_nothing():
  analytics = _served('tools.analytics')
  assert analytics.track_usage('tool', ['tag']) is None
  assert analytics.track_numerical_issues((None, None, None)) is None


# --------------------------------------------------------- canned/timeseries


class _StubModel:
  num_features = 3
  dtype = tf.float64

  def initialize_graph(self, input_statistics):
    del input_statistics


def _model_fn():
  head = _served('canned.timeseries.head')
  state_management = _served('canned.timeseries.state_management')
  return head.TimeSeriesRegressionHead(
      model=_StubModel(),
      state_manager=state_management.PassthroughStateManager(),
      optimizer=tf.compat.v1.train.AdamOptimizer(0.001)).create_estimator_spec


@pytest.mark.parametrize('features, message', [
    ({'values': [[[1.]]]}, "Expected a 'times' feature"),
    ({'times': [[1]], 'values': [[1.]]}, "Expected shape.*for feature 'values'"),
    ({'times': [[1]], 'values': [[[1.]]]},
     r"window size, 3\) for feature 'values'.*got shape \(1, 1, 1\)"),
    ({'times': [[1]], 'values': [[[1., 2., 3.]]], 'extra': [[1], [2]]},
     "Features must have shape.*for feature 'extra'"),
])
def test_time_series_head_checks_training_features(features, message):
  with pytest.raises(ValueError, match=message):
    _model_fn()(features=features, labels=None, mode='train')


def test_time_series_head_refuses_labels_and_unknown_modes():
  with pytest.raises(ValueError, match='received a `labels`'):
    _model_fn()(features={}, labels=tf.zeros([]), mode='eval')
  with pytest.raises(ValueError, match="Unknown mode 'fit'"):
    _model_fn()(features={}, labels={}, mode='fit')


def test_state_to_dictionary_numbers_the_flattened_state():
  head = _served('canned.timeseries.head')
  assert head.state_to_dictionary((1, (2, 3))) == {
      'model_state_00': 1, 'model_state_01': 2, 'model_state_02': 3}


def test_identity_metrics_read_the_last_update_with_resource_variables():
  head = _served('canned.timeseries.head')
  with tf.Graph().as_default():
    source = tf.compat.v1.placeholder(tf.float32, [2, 1])
    (value, nested), update = head._identity_metric_nested(
        'state', (source, source * 2.))
    assert value.shape == (2, 1)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.local_variables_initializer())
      session.run(update, {source: [[1.], [2.]]})
      np.testing.assert_array_equal(session.run(nested), [[2.], [4.]])


def test_input_statistics_from_one_batch():
  math_utils = _served('canned.timeseries.math_utils')
  with tf.Graph().as_default():
    features = {'times': tf.constant([[-3, -1, 1, 3]], tf.int64),
                'values': tf.constant([[[0.], [1.], [2.], [3.]]])}
    statistics = math_utils.InputStatisticsFromMiniBatch(
        num_features=1, dtype=tf.float32).initialize_graph(features)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      moments, start, count = session.run(
          (statistics.overall_feature_moments, statistics.start_time,
           statistics.total_observation_count))
  np.testing.assert_allclose(moments.mean, [1.5])
  np.testing.assert_allclose(moments.variance, [5. / 3.])  # Unbiased.
  assert (start, count) == (-3, 4)
