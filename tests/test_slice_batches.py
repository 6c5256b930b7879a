"""In-memory slices read a batch at a time (estimator_rt/inputs/slice_batches.py):
the same elements in the same order, element spec, cardinality and options
as the user's from_tensor_slices/repeat/batch chain, in eager and graph
mode; anything else is left as it is; each engine reads its training input
so when one replica consumes it."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.inputs import slice_batches
from estimator_rt.training.graph import engine as graph_engine

_ROWS = 10
_DATA = ({'a': np.arange(_ROWS, dtype=np.float32),
          'b': np.arange(3 * _ROWS, dtype=np.float64).reshape(_ROWS, 3),
          's': np.array([str(i).encode() for i in range(_ROWS)])},
         np.arange(_ROWS) % 4)


def _chain(count, batch_size, drop_remainder, prefetch, options):
  dataset = tf.data.Dataset.from_tensor_slices(_DATA)
  if count != 1:
    dataset = dataset.repeat() if count is None else dataset.repeat(count)
  if options:
    no_autotune = tf.data.Options()
    no_autotune.autotune.enabled = False
    dataset = dataset.with_options(no_autotune)
  dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
  return dataset.prefetch(prefetch) if prefetch else dataset


def _flat(batches):
  return [[np.asarray(v).tolist() for v in tf.nest.flatten(b)]
          for b in batches]


@pytest.mark.parametrize('count, batch_size, drop_remainder', list(
    itertools.product([None, 1, 3, 0], [1, 4, 10, 25], [False, True])))
def test_the_rebuilt_chain_gives_the_same_batches(count, batch_size,
                                                  drop_remainder):
  for prefetch, options in ((None, False), (2, True)):
    original = _chain(count, batch_size, drop_remainder, prefetch, options)
    rebuilt = slice_batches.gathered(original)
    assert rebuilt is not original
    assert rebuilt.element_spec == original.element_spec
    assert int(rebuilt.cardinality()) == int(original.cardinality())
    assert rebuilt.options() == original.options()
    # 37 batches: across epoch boundaries, and the partial last batch.
    assert _flat(rebuilt.take(37)) == _flat(original.take(37))


# 4: batches straddle the data's end (gathered); 5: they do not (whole
# batches sliced).
@pytest.mark.parametrize('batch_size', [4, 5])
def test_in_a_graph_the_rebuilt_chain_gives_the_same_batches(batch_size):
  with tf.Graph().as_default():
    original = _chain(None, batch_size, True, 2, False)
    rebuilt = slice_batches.gathered(original)
    assert rebuilt is not original
    nexts = [tf.compat.v1.data.make_one_shot_iterator(d).get_next()
             for d in (original, rebuilt)]
    with tf.compat.v1.Session() as session:
      for _ in range(7):
        first, second = session.run(nexts)
        assert _flat([first]) == _flat([second])


def test_other_pipelines_are_left_as_they_are():
  slices = tf.data.Dataset.from_tensor_slices(_DATA)
  for dataset in (slices.shuffle(5, seed=1).batch(2),
                  slices.batch(2).map(lambda x, y: (x, y)),
                  slices.batch(2, num_parallel_calls=2),
                  slices.repeat(),
                  tf.data.Dataset.range(10).batch(2),
                  tf.data.Dataset.from_tensor_slices(
                      tf.sparse.from_dense([[1, 0], [0, 2]])).batch(1)):
    assert slice_batches.gathered(dataset) is dataset


def _gathers(graph) -> bool:
  """Whether a dataset map function of `graph` gathers."""
  return any(op.type == 'GatherV2'
             for name, function in graph._functions.items()  # pylint: disable=protected-access
             if 'Dataset_map' in name
             for op in function.graph.get_operations())


def _has_batch_op(dataset) -> bool:
  """Whether a tf.data batch dataset is in `dataset`'s chain."""
  pending = [dataset]
  while pending:
    current = pending.pop()
    if type(current).__name__ == '_BatchDataset':
      return True
    pending.extend(current._inputs())  # pylint: disable=protected-access
  return False


def test_one_replica_reads_its_training_input_by_gather_two_do_not():
  """The eager engine's training input (make_input, overlap=True) is
  rebuilt for one replica; with two, the strategy distributes the user's
  own chain (it rebatches by the batch op)."""
  def input_fn():
    return tf.data.Dataset.from_tensor_slices(_DATA).repeat().batch(
        4, drop_remainder=True)

  one = inputs.make_input(tf.distribute.get_strategy(), input_fn, {},
                          role='train input_fn', overlap=True)
  assert not _has_batch_op(one.dataset)
  assert _flat([one.sample]) == _flat(input_fn().take(1))
  two = inputs.make_input(tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1']),
                          input_fn, {}, role='train input_fn', overlap=True)
  # TensorFlow's distributed dataset keeps the dataset it was given.
  assert _has_batch_op(two.dataset._original_dataset)  # pylint: disable=protected-access


def test_the_graph_engine_trains_on_the_rebuilt_chain(tmp_path):
  """A TF1-style model_fn trained on a slice/repeat/batch input reads it by
  gather in its in-graph loop, and ends where it would on the user's chain
  (one gradient step per batch, the same batches)."""
  x = np.random.RandomState(0).rand(12, 3).astype(np.float32)
  y = x @ np.array([1.0, -2.0, 0.5], np.float32)

  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable('w', [3], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.linalg.matvec(features['x'], w) -
                                    labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(5)

  engine = graph_engine.GraphEngine(
      model_fn=model_fn, config=ert.RunConfig(model_dir=str(tmp_path / 'g')),
      params={}, warm_start_from=None, temporary_model_dir=False)
  graph, *_ = engine._training_graph(  # pylint: disable=protected-access
      input_fn, graph_engine.placement_lib.SingleDevicePlacement(), [])
  assert _gathers(graph)
  estimator = ert.Estimator(model_fn, model_dir=str(tmp_path / 'm'))
  estimator.train(input_fn, max_steps=7)
  # The same 7 batches by hand (rows wrap around the 12 every epoch).
  w = np.zeros(3, np.float32)
  rows = np.arange(35) % 12
  for step in range(7):
    bx, by = x[rows[5 * step:5 * step + 5]], y[rows[5 * step:5 * step + 5]]
    w -= 0.5 * 2 * bx.T @ (bx @ w - by) / 5
  np.testing.assert_allclose(estimator.get_variable_value('w'), w, rtol=1e-5)
