"""The elements of a graph's dataset of constants, read without a session.

A service's `predict` input, `Dataset.from_tensor_slices(request).batch(n)`,
puts the request's arrays into the graph as constants. Reading its elements
in a session of that graph (as the graph engine reads a new input for a kept
prediction graph) costs the session's first run over the graph, a run per
element and the session's end: 5-10 ms on 2 cores, about a fifth of a kept
prediction's call. When the dataset is slices of constants or one tensor of
constants, then only batched (a constant size), taken, prefetched or given
options, its elements are the constants' rows: `elements` slices them here
in NumPy, the values tf.data would give, in the same order. Any other
dataset (a map, a shuffle, a file, a placeholder, a sparse or ragged
component) is left to a session.
"""

from typing import Any, List, Optional

import numpy as np
import tensorflow as tf

from estimator_rt.inputs import dataset_chain

# Ops that change neither the elements nor their order.
_SAME_ELEMENTS_OPS = frozenset({'OptionsDataset', 'PrefetchDataset'})
# A longer chain is not a request's input.
_MOST_OPS_WALKED = 8


def elements(dataset: Optional[tf.data.Dataset]) -> Optional[List[Any]]:
  """`dataset`'s elements (made in a graph) as NumPy values in its element
  structure, in order; None where its ops are not that chain of constants
  (see the module docstring), a value would not match its element_spec, or
  there is no dataset."""
  if dataset is None:
    return None
  try:
    walked = dataset_chain.walk(
        dataset._variant_tensor.op,  # pylint: disable=protected-access
        passes=_SAME_ELEMENTS_OPS, most=_MOST_OPS_WALKED)
    if walked is None:
      return None
    steps, source = walked
    rows = _source_rows(source)
    if rows is None:
      return None
    for step in reversed(steps):
      if step.kind == 'batch':
        rows = _batched(rows, step.size, step.drop)
      elif step.size >= 0:
        rows = rows[:step.size]
    specs = tf.nest.flatten(dataset.element_spec, expand_composites=False)
    if not all(isinstance(spec, tf.TensorSpec) for spec in specs):
      return None
    if not all(_matches(row, specs) for row in rows):
      return None
    return [tf.nest.pack_sequence_as(dataset.element_spec, list(row))
            for row in rows]
  except (AttributeError, TypeError, ValueError, IndexError):
    return None


def _source_rows(op: tf.Operation) -> Optional[List[tuple]]:
  """The source's elements as tuples of its flat components: one per row
  of slices, the one tensor's; None unless every component is a constant
  (a Const op) of a dense dtype."""
  if not all(t.op.type == 'Const' and t.dtype != tf.variant
             for t in op.inputs):
    return None
  values = [tf.get_static_value(t) for t in op.inputs]
  if any(value is None for value in values):
    return None
  if op.type == 'TensorDataset':
    return [tuple(values)]
  lengths = {np.shape(value)[0] if np.ndim(value) else None
             for value in values}
  if len(lengths) != 1 or None in lengths:
    return None
  return [tuple(value[index] for value in values)
          for index in range(lengths.pop())]


def _batched(rows: List[tuple], size: int, drop: bool) -> List[tuple]:
  """`rows` in batches of `size` as `Dataset.batch` makes them (the last
  smaller one kept unless `drop`)."""
  count = len(rows) // size if drop else -(-len(rows) // size)
  return [tuple(_stacked(parts) for parts in zip(*rows[i * size:
                                                       (i + 1) * size]))
          for i in range(count)]


def _stacked(parts: tuple) -> np.ndarray:
  """`parts` stacked on a new first axis; strings as a NumPy object array
  of bytes, as a session gives them (a fixed-width bytes array would drop
  trailing NUL bytes: a serialized tf.Example may end in one)."""
  first = parts[0]
  if isinstance(first, bytes) or (isinstance(first, np.ndarray) and
                                  first.dtype == object):
    stacked = np.empty((len(parts),) + np.shape(first), dtype=object)
    for index, part in enumerate(parts):
      stacked[index] = part
    return stacked
  return np.stack(parts)


def _matches(row: tuple, specs: List[tf.TensorSpec]) -> bool:
  """Whether each component of `row` has its spec's dtype and a shape the
  spec allows."""
  if len(row) != len(specs):
    return False
  for value, spec in zip(row, specs):
    array = np.asarray(value)
    if spec.dtype == tf.string:
      # A string constant's values are bytes (a NumPy object array).
      if array.dtype != object and array.dtype.kind != 'S':
        return False
    elif array.dtype != spec.dtype.as_numpy_dtype:
      return False
    if not spec.shape.is_compatible_with(array.shape):
      return False
  return True
