"""The eager engine's seeding per call (training/eager/random_state.py).

Under RunConfig(tf_random_seed=...), a call's stateful random ops draw what
the previous call's drew, as each call's new graph did on tf.estimator
2.15: those run eagerly by an input_fn, and those inside a compiled loop
the engine keeps. TensorFlow's kernel caches, whose clearing restarts such
ops (and makes every compiled function instantiate again), are cleared only
then: a program's own random op keeps its place in its sequence across a
call that ran none, as it did on 2.15.
"""

import keras
import numpy as np
import tensorflow as tf

import estimator_rt as ert

X = np.linspace(-1, 1, 32, dtype=np.float32).reshape(-1, 4)
Y = (X.sum(axis=1, keepdims=True) > 0).astype(np.float32)


def _model_fn(features, labels, mode):
  """A TF2 model_fn; in EVAL, a metric of a stateful random op's draw."""
  logits = keras.layers.Dense(1)(features['x'])
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions={'logits': logits})
  loss = tf.reduce_mean(tf.square(logits - labels))
  if mode == ert.ModeKeys.EVAL:
    noise = keras.metrics.Mean()
    noise.update_state(tf.random.uniform([]))
    return ert.EstimatorSpec(mode, loss=loss,
                             eval_metric_ops={'noise': noise})
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=keras.optimizers.SGD(0.1))


def _input_fn():
  return tf.data.Dataset.from_tensor_slices(({'x': X}, Y)).repeat().batch(8)


def _estimator(tmp_path):
  return ert.Estimator(_model_fn, model_dir=str(tmp_path),
                       config=ert.RunConfig(tf_random_seed=3))


def test_an_input_fns_random_op_draws_the_same_at_each_call(tmp_path):
  drawn = []

  def input_fn():
    noise = tf.random.uniform([8, 4], seed=11)
    if tf.executing_eagerly():  # The first call's first build is a graph's.
      drawn.append(noise.numpy())
    return tf.data.Dataset.from_tensor_slices(
        ({'x': X + noise}, Y)).repeat().batch(8)

  estimator = _estimator(tmp_path)
  for _ in range(3):
    estimator.train(input_fn, steps=2)
  assert len(drawn) >= 3, len(drawn)
  for each in drawn[1:]:
    np.testing.assert_array_equal(each, drawn[0])


def test_a_kept_evaluation_draws_again_what_it_drew_before(tmp_path):
  """The EVAL loop is kept between evaluations; a training between them
  seeds, and the loop's random op starts its sequence again."""
  estimator = _estimator(tmp_path)
  estimator.train(_input_fn, steps=1)
  first = estimator.evaluate(_input_fn, steps=1)['noise']
  estimator.train(_input_fn, steps=1)
  second = estimator.evaluate(_input_fn, steps=1)['noise']
  assert first == second


def test_a_programs_own_random_op_keeps_its_place_across_a_call(tmp_path):
  """Nothing random ran in the call: the program's op goes on with its
  sequence (2.15 never seeded the eager context), where clearing the
  caches would have started it again."""
  estimator = _estimator(tmp_path)
  estimator.train(_input_fn, steps=1)
  tf.random.set_seed(3)
  before = tf.random.uniform([4], seed=5).numpy()
  estimator.train(_input_fn, steps=1)  # Seeds with 3 again.
  after = tf.random.uniform([4], seed=5).numpy()
  assert not np.array_equal(before, after)
  tf.random.set_seed(3)  # Clears: the sequence starts again.
  np.testing.assert_array_equal(tf.random.uniform([4], seed=5).numpy(),
                                before)
