"""tf.compat.v1.estimator.inputs: input_fns over NumPy arrays and pandas
DataFrames, as tf.estimator 2.15 offered them.

tf.estimator fed these through queue runners; here they are `tf.data`
pipelines (the same batches in the same order without `shuffle`; with it, a
different random order), which both engines read. What they return is an
`ArraysInputFn`: the runtime reads its dataset, and code that calls it
itself (an input_fn of its own wrapping it, as libraries and programs
wrote) gets what tf.estimator's returned, the next batch's tensors.
"""

import collections
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from estimator_rt.core import user_fns
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError


def _check_shuffle(shuffle) -> None:
  if not isinstance(shuffle, bool):
    raise UserInputError(
        'shuffle must be provided and explicitly set as boolean (it is '
        f'recommended to set it as True for training); got {shuffle} '
        '(numpy_input_fn/pandas_input_fn: give shuffle=True or False).')


# Arrays larger than this, in all, are not made graph constants (see
# `_gathered_in_python`).
LARGEST_GRAPH_CONSTANT_BYTES = 16 << 20


def _dataset(columns: 'collections.OrderedDict', *, batch_size: int,
             num_epochs: Optional[int], shuffle: bool,
             queue_capacity: int) -> tf.data.Dataset:
  lengths = {k: len(v) for k, v in columns.items()}
  if len(set(lengths.values())) != 1:
    raise UserInputError(
        'Length of tensors in x and y is mismatched. All elements in x and '
        f'y must have the same length (numpy_input_fn: lengths {lengths}).')
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


class ArraysInputFn(user_fns.DatasetInputFn):
  """The input_fn `numpy_input_fn` and `pandas_input_fn` return.

  The runtime reads its `dataset()` (user_fns.call_input_fn asks for it),
  a tf.data pipeline over the arrays. Called, as code wrapping it calls
  it (`features, labels = numpy_input_fn(...)()` in an input_fn of its own,
  to reshape or rename the features), it returns what tf.estimator 2.15's
  returned: in a graph, the next batch as `(features, labels)` tensors (or
  the features alone, without `y`), read from a one-shot iterator of that
  dataset (2.15 read them from a queue). Called eagerly, it raises a
  RuntimeError, as 2.15's did (its queue needed a graph): an input_fn
  calling it is then run in a graph by the graph engine, as every input_fn
  was in 2.15.

  Args:
    make_dataset: makes the dataset (in the current graph, or eagerly).
    name: 'numpy_input_fn' or 'pandas_input_fn', for errors.
  """

  def __init__(self, make_dataset: Callable[[], tf.data.Dataset], *,
               name: str):
    self._make_dataset = make_dataset
    self._name = name
    self.__name__ = name  # How errors and logs name a function.

  def dataset(self) -> tf.data.Dataset:
    """The batches, as a dataset of (features, labels) or of features."""
    return self._make_dataset()

  def __call__(self):
    if tf.executing_eagerly():
      raise RuntimeError(
          f'The input_fn {self._name} returned reads its batches in a graph '
          'and is not compatible with eager execution (as tf.estimator '
          "2.15's, which fed a queue): call it inside an input_fn the "
          'Estimator calls (it then runs that input_fn in a graph), or give '
          'it to the Estimator itself.')
    return tf.compat.v1.data.make_one_shot_iterator(
        self._make_dataset()).get_next()


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


# The key of a single array `x` among the arrays read, and the key `y`
# is read under when it is one array (made unique among x's keys), as
# tf.estimator 2.15 named them.
_DIRECT_INPUT_KEY = '__direct_np_input__'
_TARGET_KEY = '__target_key__'


def _get_unique_target_key(features) -> str:
  """_TARGET_KEY, made unique among the keys of `features` (with '_n'
  suffixes)."""
  key = _TARGET_KEY
  while key in features:
    key += '_n'
  return key


def _validate_and_convert_features(x) -> 'collections.OrderedDict':
  """`x` (an array, or a dict of arrays) as an OrderedDict by key (an
  array under _DIRECT_INPUT_KEY), a shallow copy.

  Raises:
    UserInputError (a ValueError): `x` is an empty dict or array.
    UserTypeError (a TypeError): `x` is neither a dict nor an array.
  """
  if isinstance(x, dict):
    if not x:
      raise UserInputError(
          'x cannot be an empty dict (numpy_input_fn: give a dict of arrays '
          'or an array).')
    return collections.OrderedDict(sorted(x.items(), key=lambda t: t[0]))
  if isinstance(x, np.ndarray):
    if x.size == 0:
      raise UserInputError(
          f'x cannot be an empty array (numpy_input_fn: x has shape '
          f'{x.shape}).')
    return collections.OrderedDict({_DIRECT_INPUT_KEY: x})
  raise UserTypeError(
      f'x must be a dict or array; got {type(x).__name__} (numpy_input_fn: '
      'give a NumPy array or a dict of them).')


def numpy_input_fn(x, y=None, batch_size: int = 128,
                   num_epochs: Optional[int] = 1, shuffle=None,
                   queue_capacity: int = 1000,
                   num_threads: int = 1) -> ArraysInputFn:
  """tf.estimator's: an input_fn over `x` (an array, or a dict of arrays)
  and `y` (an array, a dict of arrays, or None), `batch_size` examples per
  batch, `num_epochs` times (None: forever), shuffled within
  `queue_capacity` examples if `shuffle`. `num_threads` is accepted (tf.data
  decides its own parallelism). See ArraysInputFn for what it returns."""
  del num_threads
  _check_shuffle(shuffle)
  x_is_array = isinstance(x, np.ndarray)
  columns = _validate_and_convert_features(x)
  keys_x = list(columns)
  if y is None:
    target = None
  elif isinstance(y, dict):
    if not y:
      raise UserInputError(
          'y cannot be empty dict, use None instead (numpy_input_fn: y={}).')
    both = set(columns) & set(y)
    if both:
      raise UserInputError(
          f'{len(both)} duplicate keys are found in both x and y: '
          f'{sorted(both)} (numpy_input_fn: rename them in x or y).')
    columns.update(sorted(y.items()))
    target = sorted(y)
  else:
    target = _get_unique_target_key(columns)
    columns[target] = y
  columns = collections.OrderedDict(
      (k, np.asarray(v)) for k, v in columns.items())

  def make_dataset():
    return _dataset(columns, batch_size=batch_size, num_epochs=num_epochs,
                    shuffle=shuffle, queue_capacity=queue_capacity).map(
                        _split(keys_x, target, x_is_array))

  return ArraysInputFn(make_dataset, name='numpy_input_fn')


def pandas_input_fn(x, y=None, batch_size: int = 128,
                    num_epochs: Optional[int] = 1, shuffle=None,
                    queue_capacity: int = 1000, num_threads: int = 1,
                    target_column: str = 'target') -> ArraysInputFn:
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
  arrays = numpy_input_fn(features, labels, batch_size=batch_size,
                          num_epochs=num_epochs, shuffle=shuffle,
                          queue_capacity=queue_capacity,
                          num_threads=num_threads)
  return ArraysInputFn(arrays.dataset, name='pandas_input_fn')
