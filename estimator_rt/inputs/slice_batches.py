"""In-memory training data read a batch at a time instead of a row at a time.

The most common input_fn of in-memory data,

    tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(B)

makes tf.data produce every row as an element of its own (one small tensor
per feature) and then copy B of them into a batch: a few microseconds per
row and feature, which on a small model is more than the training step
(a DNN on 20 numeric columns, batch 128: about 0.85 ms of CPU per batch,
against 0.18 ms when the batch is taken as one slice of each array).

`gathered(dataset)` recognizes exactly that chain, `from_tensor_slices`,
an optional `repeat(count)`, `batch(batch_size, drop_remainder)` and an
optional `prefetch` (with `with_options` anywhere in it), and rebuilds it as
a dataset of batch numbers mapped to one `tf.gather` of each array: batch k
holds rows k*B .. k*B+B-1 of the repeated data, modulo the number of rows,
as the original's k-th batch does. When no batch straddles the end of the
data (the number of rows a multiple of B, the remainder dropped), it is
the slices of the arrays reshaped to [rows / B, B, ...] instead, repeated
as the original: the same batches without a dataset function to
instantiate for every new iterator. The elements, their order, the element
spec, the cardinality (infinite stays infinite) and the options are the
original's; anything else (a shuffle, a map, a dynamic batch size, sparse
or ragged components, a parallel batch) leaves the dataset as it is. The
rebuilt element spec is checked against the original's before it is used.

It reads tf.data's own dataset classes (their private attributes), as
input_overlap.prefetches does; a TensorFlow release that renames them makes
this a no-op, never a different dataset.
"""

from typing import List, Optional, Tuple
import warnings

import tensorflow as tf


def gathered(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """`dataset`, read by gather if it is a slice-repeat-batch chain (see the
  module docstring); otherwise `dataset` itself."""
  try:
    rebuilt = _rebuild(dataset)
  except (AttributeError, TypeError, ValueError, tf.errors.OpError):
    return dataset  # A shape this module does not know: leave it.
  return dataset if rebuilt is None else rebuilt


def _chain(dataset: tf.data.Dataset) -> List[tf.data.Dataset]:
  """The datasets from `dataset` down its single-input chain, options
  wrappers left out."""
  chain = []
  current = dataset
  while True:
    if type(current).__name__ != '_OptionsDataset':
      chain.append(current)
    inputs = current._inputs()  # pylint: disable=protected-access
    if len(inputs) != 1:
      return chain
    current = inputs[0]


def _static(tensor) -> Optional[object]:
  value = tf.get_static_value(tensor)
  return None if value is None else value.item()


def _rebuild(dataset: tf.data.Dataset) -> Optional[tf.data.Dataset]:
  chain = _chain(dataset)
  names = [type(d).__name__ for d in chain]
  prefetch = None
  if names and names[0] == '_PrefetchDataset':
    prefetch = _static(chain[0]._buffer_size)  # pylint: disable=protected-access
    if prefetch is None:
      return None
    chain, names = chain[1:], names[1:]
  if names not in (['_BatchDataset', '_RepeatDataset', '_TensorSliceDataset'],
                   ['_BatchDataset', '_TensorSliceDataset']):
    return None
  batch, slices = chain[0], chain[-1]
  count = _static(chain[1]._count) if len(chain) == 3 else 1  # pylint: disable=protected-access
  batch_size = _static(batch._batch_size)  # pylint: disable=protected-access
  drop_remainder = _static(batch._drop_remainder)  # pylint: disable=protected-access
  if None in (count, batch_size, drop_remainder) or batch_size < 1:
    return None
  arrays, structure = _slice_arrays(slices)
  if arrays is None:
    return None
  rows = int(arrays[0].shape[0])
  if rows == 0:
    return None
  rebuilt = (_whole_batches(arrays, structure, rows=rows, count=count,
                            batch_size=batch_size)
             if drop_remainder and rows % batch_size == 0 else None)
  if rebuilt is None:
    rebuilt = _gathered_batches(arrays, structure, rows=rows, count=count,
                                batch_size=batch_size,
                                drop_remainder=bool(drop_remainder))
  if prefetch is not None:
    rebuilt = rebuilt.prefetch(prefetch)
  with warnings.catch_warnings():
    # In a graph, options() warns that options set in the graph may not be
    # known to Python: those of this chain were set by with_options, which
    # it does know.
    warnings.simplefilter('ignore')
    rebuilt = rebuilt.with_options(dataset.options())
  if rebuilt.element_spec != dataset.element_spec:
    return None
  if tf.executing_eagerly() and (
      int(rebuilt.cardinality()) != int(dataset.cardinality())):
    return None
  return rebuilt


def _whole_batches(arrays: list, structure, *, rows: int, count: int,
                   batch_size: int) -> Optional[tf.data.Dataset]:
  """Batches that never straddle the end of the data (`rows` a multiple of
  `batch_size`, the remainder dropped) as slices of the arrays reshaped to
  [batches, batch_size, ...], repeated `count` times: no dataset function,
  so a new iterator starts in a few milliseconds where `map`'s function is
  instantiated again (about 20 ms); None if an array's other dimensions are
  not static."""
  shapes = []
  for array in arrays:
    inner = array.shape[1:]
    if not inner.is_fully_defined():
      return None
    shapes.append([rows // batch_size, batch_size] + inner.as_list())
  batched = tf.data.Dataset.from_tensor_slices(tf.nest.pack_sequence_as(
      structure, [tf.reshape(array, shape)
                  for array, shape in zip(arrays, shapes)]))
  return batched if count == 1 else batched.repeat(count)


def _gathered_batches(arrays: list, structure, *, rows: int, count: int,
                      batch_size: int, drop_remainder: bool
                      ) -> tf.data.Dataset:
  """Batch k as one `tf.gather` of rows k*B .. k*B+B-1 of the repeated
  data, modulo `rows`, mapped over the batch numbers."""
  batches = _batch_numbers(rows=rows, count=count, batch_size=batch_size,
                           drop_remainder=drop_remainder)
  total = None if count < 0 else rows * count

  def take_batch(k):
    start = k * batch_size
    if drop_remainder:
      # A static batch dimension, as the original's.
      positions = tf.range(batch_size, dtype=tf.int64) + start
    else:
      stop = start + batch_size
      if total is not None:
        stop = tf.minimum(stop, total)
      positions = tf.range(start, stop, dtype=tf.int64)
    indices = positions % rows
    return tf.nest.pack_sequence_as(
        structure, [tf.gather(array, indices) for array in arrays])

  return batches.map(take_batch)


def _slice_arrays(slices: tf.data.Dataset
                  ) -> Tuple[Optional[list], Optional[object]]:
  """The dense arrays `from_tensor_slices` slices, flat, and the element
  structure; (None, None) when a component is not a dense tensor with the
  same static number of rows as the others."""
  structure = slices.element_spec
  specs = tf.nest.flatten(structure)
  arrays = list(slices._tensors)  # pylint: disable=protected-access
  if not specs or len(arrays) != len(specs):
    return None, None
  if not all(type(spec) is tf.TensorSpec for spec in specs):  # pylint: disable=unidiomatic-typecheck
    return None, None
  rows = {array.shape[0] if array.shape.rank else None for array in arrays}
  if len(rows) != 1 or None in rows:
    return None, None
  return arrays, structure


def _batch_numbers(*, rows: int, count: int, batch_size: int,
                   drop_remainder: bool) -> tf.data.Dataset:
  """0, 1, 2, ... one per batch of the original: forever when `count` is
  negative (a counter, whose cardinality is infinite as the original's)."""
  if count < 0:
    # Dataset.counter is TensorFlow 2.12+'s name, experimental.Counter the
    # older one (deprecated, still there in 2.21).
    counter = getattr(tf.data.Dataset, 'counter', None)
    return (counter(dtype=tf.int64) if counter is not None else
            tf.data.experimental.Counter(dtype=tf.int64))
  total = rows * count
  number = (total // batch_size if drop_remainder else
            -(-total // batch_size))
  return tf.data.Dataset.range(number)
