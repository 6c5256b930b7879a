"""How the eager engine calls its compiled training loop: the trace's flat
call, without tf.function's dispatch (direct_call.py), on plain and
distributed iterators; and eagerly where the program asked functions to run
eagerly (`tf.config.run_functions_eagerly`), as tf.function would."""

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.training.eager import direct_call
import _models as M


def _dataset():
  return tf.data.Dataset.range(100).map(
      lambda i: {'x': tf.cast(i, tf.float32)}).batch(4)


def _iterator(kind):
  if kind == 'plain':
    return iter(_dataset())
  strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
  return iter(strategy.experimental_distribute_dataset(_dataset()))


@pytest.mark.parametrize('kind', ['plain', 'mirrored'])
def test_flat_call_runs_the_trace_as_its_call_does(kind):
  total = tf.Variable(0.0)

  @tf.function(autograph=False)
  def consume(iterator, num_steps):
    def body(i):
      element = next(iterator)
      values = tf.nest.flatten(element, expand_composites=True)
      total.assign_add(tf.add_n([tf.reduce_sum(v) for v in values]))
      return i + 1
    steps, = tf.while_loop(lambda i: i < num_steps, body, [0])
    return steps, total.read_value()

  iterator = _iterator(kind)
  spec = tf.TensorSpec([], tf.int32)
  concrete = consume.get_concrete_function(iterator, spec)
  call = direct_call.without_dispatch(
      concrete, (iterator, tf.constant(0, tf.int32)))
  assert call is not concrete  # The flat call, not the fallback.
  steps, after_two = call(iterator, tf.constant(2, tf.int32))
  assert int(steps) == 2
  assert float(after_two) == sum(range(8))  # Batches [0..3], [4..7].
  _, after_three = concrete(iterator, tf.constant(1, tf.int32))
  assert float(after_three) == sum(range(12))  # The same iterator went on.


def test_flat_call_falls_back_where_the_arguments_flatten_differently():
  @tf.function(autograph=False)
  def double(x):
    return 2 * x

  concrete = double.get_concrete_function(tf.TensorSpec([], tf.float32))
  assert direct_call.without_dispatch(
      concrete, (tf.constant(0, tf.int32),)) is concrete


def test_training_loop_runs_eagerly_where_functions_run_eagerly(tmp_path):
  modes = []
  inner = M.make_model_fn(optimizer='sgd', lr=0.05)

  def model_fn(features, labels, mode, params):
    if mode == ert.ModeKeys.TRAIN:
      modes.append(tf.executing_eagerly())
    return inner(features, labels, mode, params)

  x, y = M.make_data(32)
  weights, eager_calls = {}, {}
  for eagerly in (False, True):
    del modes[:]
    tf.config.run_functions_eagerly(eagerly)
    try:
      est = ert.Estimator(model_fn, model_dir=str(tmp_path / str(eagerly)),
                          params={'batch_size': 8},
                          config=M.quiet_config(tf_random_seed=3))
      est.train(M.global_input_fn(x, y, batch_size=8), steps=6)
    finally:
      tf.config.run_functions_eagerly(False)
    eager_calls[eagerly] = modes.count(True)
    weights[eagerly] = M.read_model_variables(est.latest_checkpoint())
  # Run eagerly, each of the 6 steps calls the model_fn eagerly; else the
  # loop's trace calls it in a graph (the engine's other calls alike).
  assert eager_calls[True] == eager_calls[False] + 6, eager_calls
  for traced, eager in zip(weights[False], weights[True]):
    np.testing.assert_allclose(eager, traced, rtol=1e-5, atol=1e-6)
