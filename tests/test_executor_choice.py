"""The executor a local training loop runs on (executor_choice.py): the
single-threaded one for small steps, with the default one's numbers, and
the default one where it is not chosen or refuses the loop."""

import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.training.eager import executor_choice
from estimator_rt.training.eager import loops
from tests import _executor_constructs as _constructs
from tests import _models

SINGLE = executor_choice.SINGLE_THREADED


def _dropout_model_fn(features, labels, mode):
  """An MLP with a stateful random op (seeded dropout) and Adam."""
  hidden = keras.layers.Dense(
      16, activation='relu',
      kernel_initializer=keras.initializers.GlorotUniform(seed=1))(
          features['x'])
  if mode == ert.ModeKeys.TRAIN:
    hidden = tf.nn.dropout(hidden, rate=0.3, seed=7)
  out = keras.layers.Dense(
      1, kernel_initializer=keras.initializers.GlorotUniform(seed=2))(hidden)
  loss = tf.reduce_mean(tf.square(out - labels))
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=keras.optimizers.Adam(0.01))


def _train(model_dir, monkeypatch, *, allow_single: bool):
  """Trains 30 steps; returns (the executors chosen, the checkpoint's
  variables by name)."""
  chosen = []
  choose = executor_choice.choose

  def recorded(**kwargs):
    executor = choose(**kwargs) if allow_single else None
    chosen.append(executor)
    return executor

  monkeypatch.setattr(executor_choice, 'choose', recorded)
  x, y = _models.make_data(256, seed=3)
  estimator = ert.Estimator(
      _dropout_model_fn, model_dir=str(model_dir),
      config=_models.quiet_config(tf_random_seed=5))
  estimator.train(_models.global_input_fn(x, y, batch_size=32), max_steps=30)
  reader = tf.train.load_checkpoint(str(model_dir))
  # Numbers only: the names (Keras numbers its layers per process) are not.
  return chosen, {name: reader.get_tensor(name)
                  for name in reader.get_variable_to_shape_map()
                  if name.startswith(('model/', 'optimizer/', 'global_step'))}


def test_a_small_step_runs_single_threaded_with_the_same_numbers(
    tmp_path, monkeypatch, caplog):
  caplog.set_level(logging.INFO, logger='absl')
  chosen, single = _train(tmp_path / 'single', monkeypatch,
                          allow_single=True)
  assert chosen == [SINGLE]
  assert 'refused' not in caplog.text  # It ran on the chosen executor.
  chosen, default = _train(tmp_path / 'default', monkeypatch,
                           allow_single=False)
  assert chosen == [None]
  assert sorted(single) == sorted(default)
  # The same kernels; the default executor's loop is lowered into one
  # graph that Grappler and oneDNN rewrite (fused ops), which can round a
  # float32 sum differently: seen once, by 1 ulp, in one Adam slot.
  for name, value in default.items():
    np.testing.assert_allclose(single[name], value, rtol=1e-6, atol=1e-7,
                               err_msg=name)


def _variables(*shapes):
  return [tf.Variable(tf.zeros(shape)) for shape in shapes]


@pytest.mark.parametrize('shapes, batch, small', [
    # W2's MLP: 64 features, 64-32 units, 10 classes, batch 128.
    (((64, 64), (64,), (64, 32), (32,), (32, 10), (10,)), 128, True),
    # 128 units on a batch of 128: activations of 16,384 elements.
    (((64, 128), (128,), (128, 128), (128,)), 128, False),
    # A convolution's kernel.
    (((3, 3, 3, 32), (32,)), 8, False),
    # An embedding table of 100,000 rows.
    (((100000, 8),), 32, False),
])
def test_small_steps(shapes, batch, small):
  sample = ({'x': tf.zeros((batch, 64))}, tf.zeros((batch,), tf.int64))
  assert executor_choice.small_step(_variables(*shapes), sample) is small


def test_not_chosen_with_xla_a_strategy_of_several_replicas_or_off(
    monkeypatch):
  variables = _variables((4, 8), (8,))
  sample = ({'x': tf.zeros((32, 4))}, tf.zeros((32, 1)))
  default = tf.distribute.get_strategy()
  assert executor_choice.choose(strategy=default, jit_compile=False,
                                variables=variables, sample=sample) == SINGLE
  assert executor_choice.choose(strategy=default, jit_compile=True,
                                variables=variables, sample=sample) is None
  monkeypatch.setenv(executor_choice.ENV_VAR, '0')
  assert executor_choice.choose(strategy=default, jit_compile=False,
                                variables=variables, sample=sample) is None
  monkeypatch.delenv(executor_choice.ENV_VAR)
  mirrored = tf.distribute.MirroredStrategy(['/cpu:0'])
  assert executor_choice.choose(strategy=mirrored, jit_compile=False,
                                variables=variables, sample=sample) is None


def test_a_loop_the_executor_refuses_runs_on_the_default_one(caplog):
  caplog.set_level(logging.INFO, logger='absl')
  counter = tf.Variable(0)

  @tf.function(autograph=False)
  def loop(iterator, num_steps):
    del iterator
    return tf.while_loop(lambda i: i < num_steps,
                         lambda i: (counter.assign_add(1), i + 1)[1:],
                         [tf.constant(0)])

  dataset = tf.data.Dataset.range(3)
  iterator = iter(dataset)
  # Traced for the default executor first: its loop is lowered to the
  # Switch/Merge control flow the single-threaded executor refuses.
  loop.get_concrete_function(iterator, loops.NUM_STEPS_SPEC)
  compiled = loops.CompiledTrainLoop(loop, executor=SINGLE)
  result = compiled(iterator, 4)
  assert int(result[0]) == 4
  assert int(counter.numpy()) == 4  # Nothing ran before the refusal.
  assert compiled.executor is None
  assert 'The training loop runs on TensorFlow\'s default executor' in (
      caplog.text)
  compiled(iterator, 2)
  assert int(counter.numpy()) == 6


def _loop_trace(body_value):
  """The trace of a loop adding `body_value(step)`, traced for the
  single-threaded executor (not run)."""
  loop, _ = _constructs.summing_loop(body_value)
  with executor_choice.executor_scope(SINGLE):
    return loop.get_concrete_function(tf.TensorSpec([], tf.int32)).graph


def _cond(s):
  return tf.cond(s < 2, lambda: tf.constant(1.0), lambda: tf.constant(0.5))


def _doubled(x):
  return tf.function(lambda: x * 2.0, autograph=False)()


@pytest.mark.parametrize('body_value, safe', [
    (lambda s: tf.cast(s, tf.float32), True),
    (_cond, True),
    (lambda s: tf.while_loop(lambda j, a: j < 2, lambda j, a: (j + 1, a + 1.0),
                             [tf.constant(0), tf.constant(0.0)])[1], True),
    (lambda s: _doubled(tf.cast(s, tf.float32)), True),
    # TensorFlow 2.21's single-threaded executor deadlocks on these two.
    (lambda s: tf.cond(s < 2, lambda: tf.constant(1.0), lambda: _cond(s)),
     False),
    (lambda s: tf.function(lambda: _cond(s), autograph=False)(), False),
    (lambda s: tf.py_function(lambda v: v, [tf.cast(s, tf.float32)],
                              tf.float32), False),
])
def test_what_runs_safely_on_the_single_threaded_executor(body_value, safe):
  assert executor_choice.runs_safely(_loop_trace(body_value)) is safe


def test_what_model_fns_put_in_a_step_returns_on_the_executor_it_is_kept_on(
    python_runner, tmp_path):
  # A fresh process, bounded: a loop the executor deadlocks on never
  # returns, and nothing in the process can end it.
  proc = python_runner(['-m', 'tests._executor_constructs', str(tmp_path)],
                       timeout=240)
  lines = [json.loads(line.split(' ', 1)[1])
           for line in proc.stdout.splitlines()
           if line.startswith('CONSTRUCT ')]
  assert proc.returncode == 0, (lines, proc.stderr[-3000:])
  assert [line['name'] for line in lines] == list(_constructs.CONSTRUCTS)
  for line in lines:
    assert line['kept'] is _constructs.CONSTRUCTS[line['name']][1], line
    if line['kept']:
      # The same kernels on both executors; LSTM and batch norm sum
      # float32 rounding of a few fused ops at most.
      assert line['single_threaded'] == pytest.approx(line['default'],
                                                      rel=1e-6), line
  assert tf.io.gfile.glob(str(tmp_path / 'events.out.tfevents.*'))
