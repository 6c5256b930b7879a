"""tf.compat.v1.estimator.inputs: input_fns over NumPy arrays and pandas
DataFrames, as tf.estimator 2.15 offered them.

tf.estimator fed these through queue runners; here they are `tf.data`
pipelines (the same batches in the same order without `shuffle`; with it, a
different random order), which both engines read. What they return is an
function (`arrays_input_fn`) whose dataset the runtime reads, and code
that calls it itself (an input_fn of its own wrapping it, as libraries and
programs wrote) gets what tf.estimator's returned, the next batch's
tensors.
"""

import collections
from typing import Callable, Optional

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


def arrays_input_fn(make_dataset: Callable[[], tf.data.Dataset], *,
                    name: str) -> Callable:
  """The input_fn `numpy_input_fn` and `pandas_input_fn` return: a function,
  as tf.estimator 2.15's (named `input_fn`, as 2.15's closure was).

  The runtime reads its dataset (`user_fns.dataset_of`: the function's
  `dataset` attribute, a tf.data pipeline over the arrays) instead of
  calling it. Called, as code wrapping it calls it (`features, labels =
  numpy_input_fn(...)()` in an input_fn of its own, to reshape or rename
  the features), it returns what 2.15's returned: in a graph, the next batch
  as `(features, labels)` tensors (or the features alone, without `y`),
  read from a one-shot iterator of that dataset (2.15 read them from a
  queue). Called eagerly, it raises a RuntimeError, as 2.15's did (its
  queue needed a graph): an input_fn calling it is then run in a graph by
  the graph engine, as every input_fn was in 2.15.

  Args:
    make_dataset: makes the dataset (in the current graph, or eagerly).
    name: 'numpy_input_fn' or 'pandas_input_fn', for errors.
  """

  def input_fn():
    if tf.executing_eagerly():
      raise RuntimeError(
          f'The input_fn {name} returned reads its batches in a graph and '
          "is not compatible with eager execution (as tf.estimator 2.15's, "
          'which fed a queue): call it inside an input_fn the Estimator '
          'calls (it then runs that input_fn in a graph), or give it to the '
          'Estimator itself.')
    return tf.compat.v1.data.make_one_shot_iterator(
        make_dataset()).get_next()

  input_fn.__qualname__ = f'{name}.<locals>.input_fn'
  setattr(input_fn, user_fns.DATASET_ATTRIBUTE, make_dataset)
  return input_fn


def _split(keys_x, target, x_is_array: bool):
  """The batch dict as (features, labels), shaped like x and y were:
  `target` is None (no labels), the key of a lone label array, or the
  (label key, key read under) pairs of a dict of them."""

  def split(batch):
    features = (batch[keys_x[0]] if x_is_array else
                {k: batch[k] for k in keys_x})
    if target is None:
      return features
    if isinstance(target, str):
      return features, batch[target]
    return features, {label: batch[column] for label, column in target}

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
                   num_threads: int = 1) -> Callable:
  """tf.estimator's: an input_fn over `x` (an array, or a dict of arrays)
  and `y` (an array, a dict of arrays, or None), `batch_size` examples per
  batch, `num_epochs` times (None: forever), shuffled within
  `queue_capacity` examples if `shuffle`. `num_threads` is accepted (tf.data
  decides its own parallelism). See arrays_input_fn for what it returns."""
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
    target = [(key, key) for key in sorted(y)]
  else:
    target = _get_unique_target_key(columns)
    columns[target] = y
  return _input_fn_over(columns, keys_x, target, x_is_array,
                        batch_size=batch_size, num_epochs=num_epochs,
                        shuffle=shuffle, queue_capacity=queue_capacity,
                        name='numpy_input_fn')


def _input_fn_over(columns, keys_x, target, x_is_array: bool, *,
                   batch_size, num_epochs, shuffle, queue_capacity,
                   name: str) -> Callable:
  """The input_fn (`arrays_input_fn`) over the arrays `columns`, split
  into features and labels by `_split(keys_x, target, x_is_array)`."""
  columns = collections.OrderedDict(
      (k, np.asarray(v)) for k, v in columns.items())

  def make_dataset():
    return _dataset(columns, batch_size=batch_size, num_epochs=num_epochs,
                    shuffle=shuffle, queue_capacity=queue_capacity).map(
                        _split(keys_x, target, x_is_array))

  return arrays_input_fn(make_dataset, name=name)


def pandas_input_fn(x, y=None, batch_size: int = 128,
                    num_epochs: Optional[int] = 1, shuffle=None,
                    queue_capacity: Optional[int] = 1000,
                    num_threads: int = 1,
                    target_column: str = 'target') -> Callable:
  """tf.estimator's: `numpy_input_fn` over a pandas DataFrame `x` (its
  columns are the features) and a Series `y` (or a DataFrame: its columns
  are the labels), whose index must be x's. Needs pandas, which
  estimator_rt does not install. `queue_capacity=None` shuffles among four
  times len(x) examples (len(x) without `shuffle`), as 2.15 sized it.

  Raises:
    UserTypeError: (a TypeError) no pandas, or `target_column` is not a
      string; in 2.15's words.
    UserInputError: (a ValueError) `shuffle` is not a bool, `x` has a
      column named `target_column` (with a `y`), or y's index is not x's;
      in 2.15's words.
  """
  del num_threads
  try:
    import pandas as pd  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise UserTypeError(
        'pandas_input_fn should not be called without pandas installed: '
        'pip install pandas.') from e
  _check_shuffle(shuffle)
  if not isinstance(target_column, str):
    raise UserTypeError(
        'target_column must be a string type; got '
        f'{type(target_column).__name__}: {target_column!r}.')
  if not isinstance(x, pd.DataFrame):
    raise UserInputError(
        f'pandas_input_fn: x must be a pandas DataFrame, got '
        f'{type(x).__name__}.')
  if y is not None:
    _check_pandas_target(x, y, target_column)
  if queue_capacity is None:
    # 2.15's size for it: the shuffle buffer holds four epochs.
    queue_capacity = 4 * len(x) if shuffle else len(x)
  columns = collections.OrderedDict(
      (name, x[name].values) for name in x.columns)
  keys_x = list(columns)
  target = None
  if isinstance(y, pd.DataFrame):
    # Each label column read under a key unique among x's (2.15's rule).
    target = []
    for name in y.columns:
      key = _unique_key(columns, name)
      columns[key] = y[name].values
      target.append((name, key))
  elif y is not None:
    target = _get_unique_target_key(columns)
    columns[target] = np.asarray(y.values if hasattr(y, 'values') else y)
  return _input_fn_over(columns, keys_x, target, False,
                        batch_size=batch_size, num_epochs=num_epochs,
                        shuffle=shuffle, queue_capacity=queue_capacity,
                        name='pandas_input_fn')


def _check_pandas_target(x, y, target_column: str) -> None:
  """2.15's checks of a pandas `y` against `x`, in its words."""
  if target_column in x:
    raise UserInputError(
        f'Cannot use name {target_column} for target column: DataFrame '
        f'already has a column with that name: {x.columns} '
        '(pandas_input_fn: pass another target_column).')
  if hasattr(y, 'index') and not np.array_equal(x.index, y.index):
    raise UserInputError(
        f'Index for x and y are mismatched.\nIndex for x: {x.index}\n'
        f'Index for y: {y.index}\n(pandas_input_fn: y\'s rows are matched '
        "to x's by position; give them x's index).")


def _unique_key(columns, name: str) -> str:
  """`name`, with '_n' suffixes until no key of `columns` is it."""
  key = name
  while key in columns:
    key += '_n'
  return key
