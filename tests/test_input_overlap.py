"""Training input prefetched onto the step (estimator_rt/inputs/overlap.py),
in both engines, without changing the elements, their order or the
dataset's options; a pipeline that prefetches is left alone."""

import numpy as np
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.inputs import overlap as input_overlap
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.training.graph import engine as graph_engine
from _models import no_autotune


def _linear_model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable('w', [3], initializer=tf.zeros_initializer())
  loss = tf.reduce_mean(tf.square(tf.linalg.matvec(features['x'], w) -
                                  labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _serial():
  """A pipeline without a prefetch, autotuning off (as the tests' own)."""
  return no_autotune(tf.data.Dataset.range(50).shuffle(10, seed=1).map(
      lambda x: x * 2).batch(4))


def test_a_serial_pipeline_gets_a_prefetch_and_keeps_its_elements():
  plain = _serial()
  overlapped = input_overlap.overlapped(_serial())
  assert not input_overlap.prefetches(plain)
  assert input_overlap.prefetches(overlapped)
  # Each a first iteration of its own dataset: the same seeded shuffle.
  assert [b.tolist() for b in overlapped.as_numpy_iterator()] == [
      b.tolist() for b in plain.as_numpy_iterator()]
  # The options stay the user's: autotuning off stays off.
  assert overlapped.options().autotune.enabled is False


def test_a_pipeline_that_prefetches_anywhere_is_left_alone():
  for dataset in (_serial().prefetch(1),
                  _serial().prefetch(3).map(lambda x: x + 1),
                  _serial().prefetch(1).with_options(tf.data.Options())):
    assert input_overlap.overlapped(dataset) is dataset


def _prefetch_ops(graph):
  return [op for op in graph.get_operations() if op.type == 'PrefetchDataset']


def test_the_graph_engine_prefetches_the_training_input(tmp_path):
  engine = graph_engine.GraphEngine(
      model_fn=_linear_model_fn,
      config=ert.RunConfig(model_dir=str(tmp_path)), params={},
      warm_start_from=None, temporary_model_dir=False)
  placement = graph_engine.placement_lib.SingleDevicePlacement()
  x = np.ones([8, 3], np.float32)

  def input_fn(prefetch):
    def fn():
      # A map: not a chain slice_batches rebuilds (whose test is below).
      dataset = tf.data.Dataset.from_tensor_slices(
          ({'x': x}, np.ones([8], np.float32))).repeat().batch(4).map(
              lambda f, l: (f, l))
      return dataset.prefetch(5) if prefetch else dataset
    return fn

  graph, *_ = engine._training_graph(input_fn(False), placement, [])  # pylint: disable=protected-access
  assert len(_prefetch_ops(graph)) == 1
  graph, *_ = engine._training_graph(input_fn(True), placement, [])  # pylint: disable=protected-access
  # Only the user's own (buffer 5).
  ops = _prefetch_ops(graph)
  assert len(ops) == 1
  assert tf.get_static_value(ops[0].inputs[1]) == 5


def test_the_eager_engine_prefetches_the_training_input():
  strategy = tf.distribute.get_strategy()
  data = inputs.make_input(strategy, lambda: _serial(), {},
                           role='train input_fn', overlap=True)
  assert input_overlap.prefetches(data.dataset)
  data = inputs.make_input(strategy, lambda: _serial(), {},
                           role='eval input_fn')
  assert not input_overlap.prefetches(data.dataset)
