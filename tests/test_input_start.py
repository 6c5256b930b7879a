"""A prediction's few-element input is started without tf.data's default
static optimizations (inputs/pipeline.py `_started_quickly`): the same
elements in the same order, and a program's own choice kept."""

import numpy as np
import tensorflow as tf

from estimator_rt.inputs import pipeline as inputs


def _defaults_applied(dataset):
  return dataset.options().experimental_optimization.apply_default_optimizations


def _one_example_input_fn():
  return tf.data.Dataset.from_tensor_slices(
      {'x': np.arange(6, dtype=np.float32).reshape(3, 2)}).map(
          lambda f: {'x': f['x'] * 2}).batch(1)


def test_only_a_few_element_dataset_without_a_choice_is_changed():
  few = _one_example_input_fn()
  assert _defaults_applied(inputs._started_quickly(few, 3)) is False
  many = tf.data.Dataset.range(10).batch(1)
  assert _defaults_applied(inputs._started_quickly(many, 10)) is None
  unknown = tf.data.Dataset.range(10).filter(lambda v: v > 2)
  assert _defaults_applied(inputs._started_quickly(
      unknown, int(unknown.cardinality()))) is None
  options = tf.data.Options()
  options.experimental_optimization.apply_default_optimizations = True
  chosen = few.with_options(options)
  assert _defaults_applied(inputs._started_quickly(chosen, 3)) is True


def test_a_prediction_reads_the_same_elements():
  data = inputs.make_input(tf.distribute.get_strategy(),
                           lambda: _one_example_input_fn(), {},
                           role='predict input_fn', one_pass=True)
  got = [element['x'].numpy().tolist() for element in data.dataset]
  want = [element['x'].numpy().tolist() for element in _one_example_input_fn()]
  assert got == want == [[[0.0, 2.0]], [[4.0, 6.0]], [[8.0, 10.0]]]
