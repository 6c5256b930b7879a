"""A real TensorBoard reads what training and evaluation write.

TensorBoard is a dependency: tf.summary needs it on TensorFlow 2.16+ (a
model_fn's tf.summary.scalar fails without it), and it is how people watch
training. This trains a model_fn that also writes a `tf.summary.scalar`
through train_and_evaluate, starts `tensorboard` on a free loopback port
over the model_dir, and reads the training and evaluation scalars back
through its HTTP API. The server is stopped at the end, whatever happens.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import keras
import numpy as np
import pytest
import tensorflow as tf

import _cluster
import estimator_rt as ert


def _model_fn(features, labels, mode):
  logits = keras.layers.Dense(2)(features['x'])
  loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
      labels, logits, from_logits=True))
  # Works with TensorBoard installed (no default writer: nothing recorded).
  tf.summary.scalar('my_loss', loss)
  if mode == ert.ModeKeys.EVAL:
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(labels, logits)
    return ert.EstimatorSpec(mode, loss=loss,
                             eval_metric_ops={'accuracy': accuracy})
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=keras.optimizers.SGD(0.1))


def _input_fn():
  rng = np.random.RandomState(0)
  x = rng.randn(64, 4).astype(np.float32)
  y = (x.sum(axis=1) > 0).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(16)


def _get(port, path, **query):
  url = f'http://127.0.0.1:{port}{path}'
  if query:
    url += '?' + urllib.parse.urlencode(query)
  with urllib.request.urlopen(url, timeout=10) as response:
    return json.loads(response.read())


@pytest.fixture
def tensorboard(tmp_path):
  """Starts tensorboard over tmp_path/m on a free port; yields the port."""
  port, = _cluster.launcher().free_ports(1)
  process = subprocess.Popen(
      [sys.executable, '-m', 'tensorboard.main', '--logdir',
       str(tmp_path / 'm'), '--host', '127.0.0.1', '--port', str(port),
       '--load_fast=false', '--reload_interval', '1'],
      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
      start_new_session=True)
  try:
    yield port
  finally:
    os.killpg(process.pid, signal.SIGTERM)
    try:
      process.wait(timeout=15)
    except subprocess.TimeoutExpired:
      os.killpg(process.pid, signal.SIGKILL)
      process.wait(timeout=15)


def _wait_for_tags(port, want, timeout=90):
  deadline = time.time() + timeout
  tags = {}
  while time.time() < deadline:
    try:
      tags = _get(port, '/data/plugin/scalars/tags')
      if all(tag in tags.get(run, {}) for run, tag in want):
        return tags
    except OSError:
      pass  # Not listening yet.
    time.sleep(0.5)
  raise AssertionError(f'TensorBoard never showed {want}; it has {tags}')


def _scalars(port, run, tag, steps, timeout=60):
  """The (wall time, step, value) points TensorBoard serves for `run` and
  `tag` once they are at `steps` (or whatever it serves at the deadline):
  TensorBoard loads event files every reload_interval, and a reload during
  the run may have read an evaluation's file before its last point."""
  deadline = time.time() + timeout
  while True:
    points = _get(port, '/data/plugin/scalars/scalars', run=run, tag=tag)
    if [step for _, step, _ in points] == steps or time.time() > deadline:
      return points
    time.sleep(0.5)


def test_tensorboard_serves_the_train_and_eval_scalars(tmp_path, tensorboard):
  model_dir = str(tmp_path / 'm')
  estimator = ert.Estimator(_model_fn, model_dir, ert.RunConfig(
      save_checkpoints_steps=20, save_summary_steps=10,
      # global_step/sec is written every log_step_count_steps, as 2.15's
      # StepCounterHook wrote it.
      log_step_count_steps=10))
  ert.train_and_evaluate(estimator, ert.TrainSpec(_input_fn, max_steps=40),
                         ert.EvalSpec(_input_fn, steps=2, throttle_secs=0))
  _wait_for_tags(tensorboard, [('.', 'loss'), ('.', 'global_step/sec'),
                               ('eval', 'accuracy'), ('eval', 'loss')])
  train = _scalars(tensorboard, '.', 'loss', [1, 11, 21, 31])
  assert [step for _, step, _ in train] == [1, 11, 21, 31]
  assert all(np.isfinite(value) for _, _, value in train)
  evals = _scalars(tensorboard, 'eval', 'accuracy', [20, 40])
  assert [step for _, step, _ in evals] == [20, 40]
  assert 0.5 < evals[-1][2] <= 1.0
