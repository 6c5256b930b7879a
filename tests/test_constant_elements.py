"""A graph's dataset of constants is read without a session
(inputs/constant_elements.py): the elements a session reads, in the same
order, or None for any other dataset; a kept prediction graph takes a
request's constants so, opening no session for them."""

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.inputs import constant_elements

tf1 = tf.compat.v1
X = np.arange(20, dtype=np.float32).reshape(10, 2)
# Serialized records may end in NUL bytes, which a fixed-width NumPy bytes
# array would drop.
WORDS = np.array([b'a\x00', b'b', b'c\x00\x00', b'd', b'e'] * 2, dtype=object)


def _options_of_ours():
  options = tf.data.Options()
  options.autotune.enabled = False
  return options


CONSTANTS = {
    'slices_batched': lambda: tf.data.Dataset.from_tensor_slices(
        {'x': X, 'word': WORDS}).batch(3),
    'tuple_dropped_prefetched': lambda: tf.data.Dataset.from_tensor_slices(
        ({'x': X}, np.arange(10))).batch(4, drop_remainder=True).prefetch(2),
    'one_tensor_batched': lambda: tf.data.Dataset.from_tensors(
        {'x': X}).batch(1),
    'taken_with_options': lambda: tf.data.Dataset.from_tensor_slices(
        X).take(3).batch(2).with_options(_options_of_ours()),
    'batched_twice_taken': lambda: tf.data.Dataset.from_tensor_slices(
        WORDS).batch(2).batch(2).take(-1).take(2),
    'unbatched': lambda: tf.data.Dataset.from_tensor_slices(
        {'x': X[:3], 'word': WORDS[:3]}),
}

OTHERS = {
    'mapped': lambda: tf.data.Dataset.from_tensor_slices(X).map(
        lambda v: v * 2).batch(2),
    'shuffled': lambda: tf.data.Dataset.from_tensor_slices(X).shuffle(
        3, seed=1).batch(2),
    'not_a_constant': lambda: tf.data.Dataset.from_tensor_slices(
        tf1.placeholder_with_default(X, [10, 2])).batch(2),
    'sparse': lambda: tf.data.Dataset.from_tensor_slices(
        tf.sparse.from_dense(X)).batch(2),
    'repeated': lambda: tf.data.Dataset.from_tensor_slices(X).repeat(2),
}


def _read(make):
  """(constant_elements.elements, the elements a session reads)."""
  with tf.Graph().as_default():
    dataset = make()
    got = constant_elements.elements(dataset)
    next_element = tf1.data.make_one_shot_iterator(dataset).get_next()
    want = []
    with tf1.Session() as session:
      while True:
        try:
          want.append(session.run(next_element))
        except tf.errors.OutOfRangeError:
          return got, want


@pytest.mark.parametrize('name', sorted(CONSTANTS))
def test_a_dataset_of_constants_gives_what_a_session_reads(name):
  got, want = _read(CONSTANTS[name])
  assert got is not None and len(got) == len(want) > 0
  for ours, theirs in zip(got, want):
    tf.nest.assert_same_structure(ours, theirs)
    for a, b in zip(tf.nest.flatten(ours), tf.nest.flatten(theirs)):
      assert np.asarray(a).dtype == np.asarray(b).dtype
      np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('name', sorted(OTHERS))
def test_any_other_dataset_is_left_to_a_session(name):
  got, want = _read(OTHERS[name])
  assert got is None and want


def _model_fn(features, labels, mode):
  del labels
  logits = tf1.layers.dense(features['x'], 1)
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions={'logits': logits})
  loss = tf.reduce_mean(tf.square(logits))
  train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf1.train.get_global_step())
  return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _predictions(model_dir, monkeypatch, keep):
  """Predictions of three requests after a first one, and the sessions
  (tf.compat.v1.Session) the three opened."""
  monkeypatch.setenv('ESTIMATOR_RT_KEPT_SESSIONS_MB', '1024' if keep else '0')
  estimator = ert.Estimator(_model_fn, model_dir=model_dir,
                            config=ert.RunConfig(tf_random_seed=3))
  estimator.train(lambda: tf.data.Dataset.from_tensor_slices(
      ({'x': X}, X[:, :1])).repeat().batch(4), steps=2)
  request = lambda row: lambda: tf.data.Dataset.from_tensor_slices(
      {'x': X[row:row + 1]}).batch(1)
  list(estimator.predict(request(0)))
  opened = []
  init = tf1.Session.__init__

  def counting(self, *args, **kwargs):
    opened.append(1)
    init(self, *args, **kwargs)

  monkeypatch.setattr(tf1.Session, '__init__', counting)
  out = [list(estimator.predict(request(row))) for row in (1, 2, 3)]
  monkeypatch.undo()
  return out, len(opened)


def test_a_kept_prediction_reads_a_requests_constants_without_a_session(
    tmp_path, monkeypatch):
  kept, kept_opened = _predictions(str(tmp_path / 'kept'), monkeypatch, True)
  fresh, fresh_opened = _predictions(str(tmp_path / 'fresh'), monkeypatch,
                                     False)
  assert [[p['logits'].tolist() for p in call] for call in kept] == [
      [p['logits'].tolist() for p in call] for call in fresh]
  assert kept_opened == 0
  assert fresh_opened >= 3
