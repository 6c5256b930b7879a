"""tf.compat.v1.estimator.inputs: input_fns over NumPy arrays and pandas
DataFrames, as tf.estimator 2.15 offered them.

tf.estimator fed these through queue runners; here they are `tf.data`
pipelines (the same batches in the same order without `shuffle`; with it, a
different random order), which both engines read.
"""

import collections
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from estimator_rt.errors import UserInputError


def _check_shuffle(shuffle) -> None:
  if not isinstance(shuffle, bool):
    raise UserInputError(
        f'numpy_input_fn/pandas_input_fn: shuffle={shuffle!r} must be given '
        'as True or False (True is recommended for training), as in '
        'tf.estimator.')


# Arrays larger than this, in all, are not made graph constants (see
# `_gathered_in_python`).
LARGEST_GRAPH_CONSTANT_BYTES = 16 << 20


def _dataset(columns: 'collections.OrderedDict', *, batch_size: int,
             num_epochs: Optional[int], shuffle: bool,
             queue_capacity: int) -> tf.data.Dataset:
  lengths = {k: len(v) for k, v in columns.items()}
  if len(set(lengths.values())) != 1:
    raise UserInputError(
        f'numpy_input_fn: the arrays of x and y differ in length: {lengths}; '
        'every element of x and y must have the same length.')
  gathered = _gathered_in_python(columns)
  if gathered:
    dataset = tf.data.Dataset.range(next(iter(lengths.values())))
  else:
    dataset = tf.data.Dataset.from_tensor_slices(dict(columns))
  if shuffle:
    dataset = dataset.shuffle(queue_capacity)
  dataset = dataset.repeat(num_epochs)
  # tf.estimator dequeued whole batches when the data repeats forever, and
  # up to a batch (a smaller last one) when it ends.
  dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)
  if gathered:
    dataset = dataset.map(_gather(columns))
  return dataset


def _gathered_in_python(columns: 'collections.OrderedDict') -> bool:
  """Whether the batches are read from the arrays by NumPy, a batch of
  example indices at a time, rather than sliced from graph constants: in a
  graph (the graph engine), for numeric arrays of more than
  LARGEST_GRAPH_CONSTANT_BYTES. `from_tensor_slices` would put the arrays
  into the GraphDef, which every session made on the graph copies and
  TensorFlow's graph optimizer rewrites (an MNIST-sized train_and_evaluate
  spent most of its time there, with checkpoints and evaluations at every
  step). tf.estimator fed them from Python through a queue. In eager
  execution the arrays are copied into tensors once."""
  return (not tf.executing_eagerly() and
          all(array.dtype.kind in 'biuf' for array in columns.values()) and
          sum(array.nbytes for array in columns.values()) >
          LARGEST_GRAPH_CONSTANT_BYTES)


def _gather(columns: 'collections.OrderedDict') -> Callable:
  """Maps a batch of example indices to the batch dict of `columns`' rows
  (the elements `from_tensor_slices(columns)` batched would give)."""
  keys = list(columns)

  def rows(indices):
    return [columns[key][indices] for key in keys]

  def gather(indices):
    values = tf.numpy_function(
        rows, [indices], [tf.as_dtype(columns[key].dtype) for key in keys],
        stateful=False)
    batch = {}
    for key, value in zip(keys, values):
      value.set_shape(indices.shape.concatenate(columns[key].shape[1:]))
      batch[key] = value
    return batch

  return gather


def _split(keys_x, target, x_is_array: bool):
  """The batch dict as (features, labels), shaped like x and y were."""

  def split(batch):
    features = (batch[keys_x[0]] if x_is_array else
                {k: batch[k] for k in keys_x})
    if target is None:
      return features
    if isinstance(target, str):
      return features, batch[target]
    return features, {k: batch[k] for k in target}

  return split


def numpy_input_fn(x, y=None, batch_size: int = 128,
                   num_epochs: Optional[int] = 1, shuffle=None,
                   queue_capacity: int = 1000,
                   num_threads: int = 1) -> Callable[[], tf.data.Dataset]:
  """tf.estimator's: an input_fn over `x` (an array, or a dict of arrays)
  and `y` (an array, a dict of arrays, or None), `batch_size` examples per
  batch, `num_epochs` times (None: forever), shuffled within
  `queue_capacity` examples if `shuffle`. `num_threads` is accepted (tf.data
  decides its own parallelism)."""
  del num_threads
  _check_shuffle(shuffle)
  x_is_array = isinstance(x, np.ndarray)
  if not x_is_array and not (isinstance(x, dict) and x):
    raise UserInputError(
        f'numpy_input_fn: x must be a NumPy array or a non-empty dict of '
        f'arrays, got {type(x).__name__}.')
  columns = collections.OrderedDict(
      [('__feature', x)] if x_is_array else sorted(x.items()))
  keys_x = list(columns)
  if y is None:
    target = None
  elif isinstance(y, dict):
    if not y:
      raise UserInputError('numpy_input_fn: y={} is empty; use None.')
    both = set(columns) & set(y)
    if both:
      raise UserInputError(
          f'numpy_input_fn: keys {sorted(both)} are in both x and y.')
    columns.update(sorted(y.items()))
    target = sorted(y)
  else:
    target = '__target'
    columns[target] = y
  columns = collections.OrderedDict(
      (k, np.asarray(v)) for k, v in columns.items())

  def input_fn():
    return _dataset(columns, batch_size=batch_size, num_epochs=num_epochs,
                    shuffle=shuffle, queue_capacity=queue_capacity).map(
                        _split(keys_x, target, x_is_array))

  return input_fn


def pandas_input_fn(x, y=None, batch_size: int = 128,
                    num_epochs: Optional[int] = 1, shuffle=None,
                    queue_capacity: int = 1000, num_threads: int = 1,
                    target_column: str = 'target'
                    ) -> Callable[[], tf.data.Dataset]:
  """tf.estimator's: `numpy_input_fn` over a pandas DataFrame `x` (its
  columns are the features) and a Series `y` (or a DataFrame: its columns
  are the labels). Needs pandas, which estimator_rt does not install."""
  del target_column  # tf.estimator's name for y inside its own queue.
  try:
    import pandas as pd  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise UserInputError(
        'pandas_input_fn needs pandas, which is not installed; pip install '
        'pandas.') from e
  if not isinstance(x, pd.DataFrame):
    raise UserInputError(
        f'pandas_input_fn: x must be a pandas DataFrame, got '
        f'{type(x).__name__}.')
  features = {name: x[name].values for name in x.columns}
  labels: Any = None
  if isinstance(y, pd.DataFrame):
    labels = {name: y[name].values for name in y.columns}
  elif y is not None:
    labels = np.asarray(y.values if hasattr(y, 'values') else y)
  return numpy_input_fn(features, labels, batch_size=batch_size,
                        num_epochs=num_epochs, shuffle=shuffle,
                        queue_capacity=queue_capacity,
                        num_threads=num_threads)
