"""A few-element input is started without tf.data's default static
optimizations and autotuning (inputs/quick_start.py): the same elements in
the same order, and a program's own choice kept; eagerly from its
cardinality, in a graph from what its ops state."""

import numpy as np
import pytest
import tensorflow as tf

from estimator_rt.inputs import pipeline as inputs
from estimator_rt.inputs import quick_start


def _defaults_applied(dataset):
  return dataset.options().experimental_optimization.apply_default_optimizations


def _one_example_input_fn():
  return tf.data.Dataset.from_tensor_slices(
      {'x': np.arange(6, dtype=np.float32).reshape(3, 2)}).map(
          lambda f: {'x': f['x'] * 2}).batch(1)


def _autotuned(dataset):
  return dataset.options().autotune.enabled


def test_only_a_few_element_dataset_without_a_choice_is_changed():
  few = _one_example_input_fn()
  assert _defaults_applied(quick_start.started_quickly(few, 3)) is False
  assert _autotuned(quick_start.started_quickly(few, 3)) is False
  autotune = tf.data.Options()
  autotune.autotune.enabled = True
  tuned = few.with_options(autotune)
  assert _autotuned(quick_start.started_quickly(tuned, 3)) is True
  assert _defaults_applied(quick_start.started_quickly(tuned, 3)) is None
  many = tf.data.Dataset.range(10).batch(1)
  assert _defaults_applied(quick_start.started_quickly(many, 10)) is None
  unknown = tf.data.Dataset.range(10).filter(lambda v: v > 2)
  assert _defaults_applied(quick_start.started_quickly(
      unknown, int(unknown.cardinality()))) is None
  options = tf.data.Options()
  options.experimental_optimization.apply_default_optimizations = True
  chosen = few.with_options(options)
  assert _defaults_applied(quick_start.started_quickly(chosen, 3)) is True


def test_a_prediction_reads_the_same_elements():
  data = inputs.make_input(tf.distribute.get_strategy(),
                           lambda: _one_example_input_fn(), {},
                           role='predict input_fn', one_pass=True)
  got = [element['x'].numpy().tolist() for element in data.dataset]
  want = [element['x'].numpy().tolist() for element in _one_example_input_fn()]
  assert got == want == [[[0.0, 2.0]], [[4.0, 6.0]], [[8.0, 10.0]]]


def _slices(n):
  return tf.data.Dataset.from_tensor_slices(
      {'x': np.arange(2 * n, dtype=np.float32).reshape(n, 2),
       'y': np.arange(n)})


def _no_choice(dataset):
  return dataset


def _own_options(dataset):
  options = tf.data.Options()
  options.deterministic = True
  return dataset.with_options(options)


# (the dataset, whether its ops state at most FEW_ELEMENTS elements).
GRAPH_DATASETS = {
    'one tensor': (lambda: tf.data.Dataset.from_tensors([1.0, 2.0]), True),
    'a request batched': (lambda: _slices(3).batch(1), True),
    'batched, remainder': (lambda: _slices(9).batch(2), False),  # 5 batches
    'batched, dropped': (lambda: _slices(9).batch(2, drop_remainder=True),
                         True),  # 4 batches
    'batched in parallel': (
        lambda: _slices(4).batch(2, num_parallel_calls=2), True),
    'mapped, prefetched, cached': (
        lambda: _slices(2).map(lambda f: f).prefetch(1).cache(), True),
    'many taken': (lambda: _slices(100).take(3), True),
    'many': (lambda: _slices(100).batch(1), False),
    'a range (count not stated)': (lambda: tf.data.Dataset.range(2), False),
    'filtered': (lambda: _slices(2).filter(lambda f: f['y'] > 0), False),
    'with its own options': (lambda: _own_options(_slices(2)), False),
    'empty': (lambda: _slices(0), False),
}


def _elements(graph, dataset):
  with graph.as_default():
    next_element = tf.compat.v1.data.make_one_shot_iterator(
        dataset).get_next()
  got = []
  with tf.compat.v1.Session(graph=graph) as session:
    while True:
      try:
        got.append(tf.nest.map_structure(
            lambda v: v.tolist(), session.run(next_element)))
      except tf.errors.OutOfRangeError:
        return got


@pytest.mark.parametrize('name', sorted(GRAPH_DATASETS))
def test_a_graph_dataset_is_started_quickly_where_its_ops_state_few(name):
  make, few = GRAPH_DATASETS[name]
  graph = tf.Graph()
  with graph.as_default():
    dataset = make()
    started = quick_start.graph_started_quickly(dataset)
  assert (started is not dataset) == few
  if few:
    assert started._variant_tensor.op.type == 'OptionsDataset'  # pylint: disable=protected-access
  assert _elements(graph, started) == _elements(graph, dataset)


def test_a_graph_datasets_options_are_not_asked_for(recwarn):
  # Dataset.options() warns in a graph.
  graph = tf.Graph()
  with graph.as_default():
    quick_start.graph_started_quickly(_slices(3).batch(1))
  assert not [w for w in recwarn if 'options' in str(w.message)]
