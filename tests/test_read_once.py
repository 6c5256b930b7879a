"""Which datasets the eager engine reads once (inputs/read_once.py), and
what `read_on` yields. A real stream read through train and evaluate is in
test_estimator.py."""

import numpy as np
import tensorflow as tf

from estimator_rt.inputs import read_once


def _generator():
  for i in range(6):
    yield np.float32(i)


def _py_map(dataset, stateful):
  def double(value):
    return value * 2
  if stateful:
    return dataset.map(lambda v: tf.py_function(double, [v], tf.int64))
  return dataset.map(lambda v: tf.numpy_function(double, [v], tf.int64,
                                                 stateful=False))


def test_python_state_is_found_wherever_the_pipeline_runs_it():
  generated = tf.data.Dataset.from_generator(
      _generator, output_signature=tf.TensorSpec([], tf.float32))
  assert read_once.reads_python_state(generated.batch(2).prefetch(2))
  assert read_once.reads_python_state(
      _py_map(tf.data.Dataset.range(4), stateful=True).batch(2))
  # Inside a function of another transformation (an interleave's datasets).
  assert read_once.reads_python_state(tf.data.Dataset.range(2).interleave(
      lambda _: _py_map(tf.data.Dataset.range(3), stateful=True)))
  # The same elements on every pass: read as before.
  assert not read_once.reads_python_state(
      _py_map(tf.data.Dataset.range(4), stateful=False))
  assert not read_once.reads_python_state(
      tf.data.Dataset.from_tensor_slices(np.zeros([8, 3], np.float32))
      .shuffle(8).map(lambda v: v + 1).batch(4).prefetch(1))


def test_read_on_yields_the_first_element_then_the_rest_once():
  dataset = tf.data.Dataset.range(5).map(lambda v: {'v': v, 'w': [v, v]})
  iterator = iter(dataset)
  first = next(iterator)
  resumed = read_once.read_on(first, iterator, dataset)
  assert resumed.element_spec == dataset.element_spec
  assert [int(e['v']) for e in resumed] == [0, 1, 2, 3, 4]
  # A second pass reads the dataset anew.
  assert [int(e['v']) for e in resumed] == [0, 1, 2, 3, 4]
  assert read_once.can_read_on(dataset)
  assert not read_once.can_read_on(
      tf.data.Dataset.range(2).window(1))  # Elements that are datasets.


def test_read_on_copies_ragged_and_sparse_elements_whole():
  """Each element read on is copied (`read_once._copied`) component by
  component: ragged and sparse elements come through with their values."""
  ragged = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
  sparse = tf.sparse.from_dense([[0.0, 1.5], [2.5, 0.0], [0.0, 0.0]])
  dataset = tf.data.Dataset.from_tensor_slices(
      {'r': ragged, 's': sparse}).batch(2)
  iterator = iter(dataset)
  first = next(iterator)
  resumed = list(read_once.read_on(first, iterator, dataset))
  assert [e['r'].to_list() for e in resumed] == [[[1, 2], [3]], [[4, 5, 6]]]
  np.testing.assert_array_equal(
      tf.sparse.to_dense(resumed[0]['s']).numpy(), [[0.0, 1.5], [2.5, 0.0]])
  np.testing.assert_array_equal(
      tf.sparse.to_dense(resumed[1]['s']).numpy(), [[0.0, 0.0]])
