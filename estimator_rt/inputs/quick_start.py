"""A few-element input started without tf.data's default static
optimizations and without its autotuning.

Starting an iterator rewrites the dataset's graph with those optimizations
(fusions, parallel maps, an injected prefetch): about 2-4 ms on 2 cores,
most of the cost of reading a one-example prediction's input (a service's
`predict` per request) and worth nothing over a few elements. Autotuning
starts a thread that tunes the pipeline while it runs; ending the iterator
(closing the session that read it) then waited for that thread, up to
20 ms in one close of three on 2 cores, against under 1 ms without it.
Both change how fast elements come, never which: the same elements, in the
same order. A dataset whose program chose either option is left as it is.

Eagerly the dataset's cardinality says how many elements it has
(`started_quickly`). In a graph (the graph engine's inputs) that would take
a session of its own, which costs what it saves: `graph_started_quickly`
reads the count from the dataset's ops where they state it (a dataset of
tensors or slices, batched, mapped, prefetched, cached or taken) and leaves
any other dataset alone.
"""

from typing import Optional

import tensorflow as tf

from estimator_rt.inputs import dataset_chain

# Datasets of at most this many elements are read without tf.data's
# default static optimizations and autotuning.
FEW_ELEMENTS = 4

# Dataset ops with as many elements as their input dataset (input 0).
_SAME_COUNT_OPS = frozenset({
    'MapDataset', 'ParallelMapDataset', 'ParallelMapDatasetV2',
    'PrefetchDataset', 'CacheDataset', 'CacheDatasetV2'})
# Longer chains are not worth walking for a few-element input.
_MOST_OPS_WALKED = 16


def _without_default_optimizations(dataset: tf.data.Dataset
                                   ) -> tf.data.Dataset:
  options = tf.data.Options()
  options.experimental_optimization.apply_default_optimizations = False
  options.autotune.enabled = False
  return dataset.with_options(options)


def started_quickly(dataset: tf.data.Dataset,
                    cardinality: int) -> tf.data.Dataset:
  """`dataset` (eager, of `cardinality` elements), read without tf.data's
  default static optimizations when it has at most FEW_ELEMENTS elements
  and its options leave them unset."""
  if not 0 < cardinality <= FEW_ELEMENTS:
    return dataset
  options = dataset.options()
  if (options.experimental_optimization.apply_default_optimizations
      is not None or options.autotune.enabled is not None):
    return dataset  # The program chose.
  return _without_default_optimizations(dataset)


def graph_started_quickly(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """`dataset`, made in a graph, read without tf.data's default static
  optimizations when its ops show it has at most FEW_ELEMENTS elements and
  no options of the program's (`dataset.options()` would warn in a graph:
  any options op leaves it alone)."""
  try:
    op = dataset._variant_tensor.op  # pylint: disable=protected-access
  except (AttributeError, TypeError, ValueError):
    return dataset
  count = _stated_count(op)
  if count is None or not 0 < count <= FEW_ELEMENTS:
    return dataset
  return _without_default_optimizations(dataset)


def _stated_count(op: tf.Operation) -> Optional[int]:
  """How many elements the dataset `op` makes, where its ops and their
  constant inputs state it; None otherwise (or where options are set: an
  OptionsDataset is not among the ops walked through, the program chose)."""
  walked = dataset_chain.walk(op, passes=_SAME_COUNT_OPS,
                              most=_MOST_OPS_WALKED)
  if walked is None:
    return None
  steps, source = walked
  if source.type == 'TensorDataset':
    count = 1
  else:
    # Dimensions under TF1 behaviour: dimension_value makes them ints.
    firsts = {tf.compat.dimension_value(t.shape[0]) if t.shape.rank
              else None for t in source.inputs}
    count = firsts.pop() if len(firsts) == 1 else None
    if count is None:
      return None
  for step in reversed(steps):
    if step.kind == 'take':
      count = count if step.size < 0 else min(count, step.size)
    else:
      count = count // step.size if step.drop else -(-count // step.size)
  return count
