"""A used input iterator let go on a thread of its own (inputs/release.py):
which pipelines are, where the iterator ends, and that a generator's end
still runs before `train` returns, as on 2.15."""

import threading
import time
import weakref

import numpy as np
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.inputs import release
import _models as M


def _ended_on(iterator) -> list:
  """A list that gets the name of the thread `iterator` ends on."""
  names = []
  weakref.finalize(iterator,
                   lambda: names.append(threading.current_thread().name))
  return names


def _wait_for(names: list, seconds: float = 30.0) -> None:
  deadline = time.monotonic() + seconds
  while not names and time.monotonic() < deadline:
    time.sleep(0.01)


def test_only_plain_pipelines_are_let_go():
  plain = tf.data.Dataset.range(8).map(lambda v: v * 2).batch(2).prefetch(1)
  assert release.can_let_go(plain)
  generated = tf.data.Dataset.from_generator(
      lambda: iter(range(3)), output_signature=tf.TensorSpec([], tf.int64))
  # Its end runs the program's generator: where and when 2.15 ran it.
  assert not release.can_let_go(generated.batch(2))
  assert not release.can_let_go([plain])  # Not a dataset.


def test_a_used_iterator_ends_on_the_release_thread():
  iterator = iter(tf.data.Dataset.range(100).map(lambda v: v + 1).prefetch(2))
  assert int(next(iterator)) == 1
  names = _ended_on(iterator)
  box = [iterator]
  del iterator
  release.let_go(box)
  _wait_for(names)
  assert names == ['estimator_rt-input-release']


def test_a_generators_end_runs_before_train_returns(tmp_path):
  # A dataset over Python state is not let go: the generator's `finally`
  # has run when train() returns, as the end of 2.15's session ran it.
  x, y = M.make_data(32)
  started, ended = [], []

  def examples():
    started.append(1)
    try:
      for i in range(len(x)):
        yield {'x': x[i]}, y[i]
    finally:
      ended.append(1)

  def input_fn():
    return tf.data.Dataset.from_generator(
        examples, output_signature=(
            {'x': tf.TensorSpec([4], tf.float32)},
            tf.TensorSpec([1], tf.float32))).repeat().batch(8)

  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config())
  est.train(input_fn, steps=5)
  # Every pass the training started (an epoch each) has ended.
  assert len(started) >= 2 and len(ended) == len(started), (started, ended)
  assert M.checkpoint_steps(str(tmp_path)) == [0, 5]
