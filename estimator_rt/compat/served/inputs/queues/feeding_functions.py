"""tf.estimator 2.15's `inputs/queues/feeding_functions`: feeding numpy
arrays, OrderedDicts of arrays, pandas DataFrames and generators into a TF1
queue.

`_enqueue_data(data, capacity, ...)` makes a queue (FIFO, shuffling, or
padding for a generator's variable-length rows), placeholders for one
enqueue_many per thread, and a `_FeedingQueueRunner` whose feed functions
(`_ArrayFeedFn`, `_OrderedDictNumpyFeedFn`, `_PandasFeedFn`,
`_GeneratorFeedFn`) hand each run its next batch of rows. The first
enqueued component is the row's index (its number for arrays, the
DataFrame's index for a DataFrame). Graph mode only, as every queue runner.
"""

import collections
import itertools
import random
import types

import numpy as np
import tensorflow as tf

from estimator_rt.compat.served.inputs.queues import feeding_queue_runner as fqr

try:
  import pandas as pd  # pylint: disable=g-import-not-at-top
  HAS_PANDAS = True
except (ImportError, IOError):  # pandas writes a file on import; it may fail.
  HAS_PANDAS = False


def _fill_array(arr, seq, fillvalue=0):
  """Copies nested sequence `seq` into `arr` (an array at least as large in
  every dimension), filling what `seq` leaves out with `fillvalue`."""
  if arr.ndim == 1:
    try:
      length = len(seq)
    except TypeError:  # A scalar (or 0-d array) fills nothing.
      length = 0
    arr[:length] = seq
    arr[length:] = fillvalue
    return
  for sub_arr, sub_seq in itertools.zip_longest(arr, seq, fillvalue=()):
    _fill_array(sub_arr, sub_seq, fillvalue)


def _pad_if_needed(batch_key_item, fillvalue=0):
  """`batch_key_item` (a list of arrays equal in shape but for the last
  dimension) as one array, each padded with `fillvalue` to the longest last
  dimension; the list itself when all are as long.

  Raises:
    ValueError: the arrays differ in a dimension other than the last.
  """
  leading = [item.shape[:-1] if item.shape else -1 for item in batch_key_item]
  if any(shape != leading[0] for shape in leading):
    raise ValueError('Array shapes must match (got leading shapes '
                     f'{sorted(set(map(str, leading)))}).')
  lengths = [item.shape[-1] if item.shape else 0 for item in batch_key_item]
  if all(length == lengths[0] for length in lengths):
    return batch_key_item
  padded = np.zeros([len(batch_key_item)] + list(leading[0]) + [max(lengths)],
                    dtype=batch_key_item[0].dtype)
  _fill_array(padded, batch_key_item, fillvalue)
  return padded


def _get_integer_indices_for_next_batch(batch_indices_start, batch_size,
                                        epoch_end, array_length,
                                        current_epoch, total_epochs):
  """The row indices of the next batch, cycling through `array_length` rows,
  and the number of epochs done after it.

  An epoch ends with row `epoch_end`. The batch is `batch_size` rows from
  `batch_indices_start`, except that it stops after the row ending epoch
  `total_epochs` (when not None).

  Raises:
    tf.errors.OutOfRangeError: `total_epochs` epochs were emitted already.
  """
  if total_epochs is not None and current_epoch >= total_epochs:
    raise tf.errors.OutOfRangeError(
        None, None, f'Already emitted {current_epoch} epochs.')
  indices = [(batch_indices_start + i) % array_length
             for i in range(batch_size)]
  epoch_ends = [i for i, index in enumerate(indices) if index == epoch_end]
  epochs_done = current_epoch + len(epoch_ends)
  if total_epochs is None or epochs_done < total_epochs:
    return indices, epochs_done
  # The batch ends the last epoch: nothing after that epoch's last row.
  last = epoch_ends[total_epochs - current_epoch - 1]
  return indices[:last + 1], total_epochs


class _IndexedFeedFn:
  """Feeds batches of rows of `length` rows, cycling for `num_epochs` epochs
  (None: forever) from row 0, or with `random_start` from a row drawn with
  `seed`; a subclass says what the rows of given indices feed."""

  def __init__(self, length, batch_size, random_start, seed, num_epochs):
    self._max = length
    self._batch_size = batch_size
    self._num_epochs = num_epochs
    self._epoch = 0
    # random.Random(seed) draws what 2.15's random.seed(seed) then
    # random.randrange drew, without reseeding the program's `random`.
    self._trav = random.Random(seed).randrange(length) if random_start else 0
    self._epoch_end = (self._trav - 1) % length

  def _next_indices(self):
    indices, self._epoch = _get_integer_indices_for_next_batch(
        batch_indices_start=self._trav, batch_size=self._batch_size,
        epoch_end=self._epoch_end, array_length=self._max,
        current_epoch=self._epoch, total_epochs=self._num_epochs)
    self._trav = (indices[-1] + 1) % self._max
    return indices


class _ArrayFeedFn(_IndexedFeedFn):
  """Feeds `placeholders` (two: row indices, rows) with batches of rows of
  numpy array `array`.

  Raises:
    ValueError: not two placeholders.
  """

  def __init__(self, placeholders, array, batch_size, random_start=False,
               seed=None, num_epochs=None):
    if len(placeholders) != 2:
      raise ValueError(
          f'_array_feed_fn expects 2 placeholders; got {len(placeholders)}.')
    super().__init__(len(array), batch_size, random_start, seed, num_epochs)
    self._placeholders = placeholders
    self._array = array

  def __call__(self):
    indices = self._next_indices()
    return {self._placeholders[0]: indices,
            self._placeholders[1]: self._array[indices]}


class _OrderedDictNumpyFeedFn(_IndexedFeedFn):
  """Feeds `placeholders` (row indices, then one per column) with batches of
  rows of the equally long arrays of `ordered_dict_of_arrays`.

  Raises:
    ValueError: not one placeholder more than columns, or arrays of
      different lengths.
  """

  def __init__(self, placeholders, ordered_dict_of_arrays, batch_size,
               random_start=False, seed=None, num_epochs=None):
    if len(placeholders) != len(ordered_dict_of_arrays) + 1:
      raise ValueError(
          f'Expected {len(ordered_dict_of_arrays)} placeholders; got '
          f'{len(placeholders)} (one for the index and one per array).')
    lengths = {key: len(column)
               for key, column in ordered_dict_of_arrays.items()}
    if len(set(lengths.values())) > 1:
      raise ValueError(f'Array lengths must match (got {lengths}).')
    super().__init__(next(iter(lengths.values())), batch_size, random_start,
                     seed, num_epochs)
    self._index_placeholder = placeholders[0]
    self._col_placeholders = placeholders[1:]
    self._ordered_dict_of_arrays = ordered_dict_of_arrays

  def __call__(self):
    indices = self._next_indices()
    feed_dict = {self._index_placeholder: indices}
    for placeholder, column in zip(self._col_placeholders,
                                   self._ordered_dict_of_arrays.values()):
      feed_dict[placeholder] = column[indices]
    return feed_dict


class _PandasFeedFn(_IndexedFeedFn):
  """Feeds `placeholders` (the DataFrame's index, then one per column) with
  batches of rows of `dataframe`.

  Raises:
    ValueError: not one placeholder more than columns.
  """

  def __init__(self, placeholders, dataframe, batch_size, random_start=False,
               seed=None, num_epochs=None):
    if len(placeholders) != len(dataframe.columns) + 1:
      raise ValueError(
          f'Expected {len(dataframe.columns) + 1} placeholders; got '
          f'{len(placeholders)} (one for the index and one per column).')
    super().__init__(len(dataframe), batch_size, random_start, seed,
                     num_epochs)
    self._index_placeholder = placeholders[0]
    self._col_placeholders = placeholders[1:]
    self._dataframe = dataframe

  def __call__(self):
    rows = self._dataframe.iloc[self._next_indices()]
    feed_dict = {placeholder: rows[column].values for placeholder, column in
                 zip(self._col_placeholders, rows.columns)}
    feed_dict[self._index_placeholder] = rows.index.values
    return feed_dict


class _GeneratorFeedFn:
  """Feeds `placeholders` (one per key, keys sorted) with batches of the
  dicts of numpy arrays that `generator()` yields, calling it again at each
  epoch's end, for `num_epochs` epochs (None or 0: forever). With
  `pad_value`, a batch's arrays are padded with it to the longest.

  Raises:
    ValueError: not one placeholder per key of the first dict.
    KeyError: (when called) a dict lacks one of the first dict's keys.
    tf.errors.OutOfRangeError: (when called) the epochs are done.
  """

  def __init__(self, placeholders, generator, batch_size, random_start=False,
               seed=None, num_epochs=None, pad_value=None):
    del random_start, seed  # A generator's rows come in its order.
    first = next(generator())
    if len(placeholders) != len(first):
      raise ValueError(
          f'Expected {len(first)} placeholders; got {len(placeholders)} (one '
          'per key of the dicts the generator yields).')
    self._keys = sorted(first.keys())
    self._col_placeholders = placeholders
    self._generator_function = generator
    self._iterator = generator()
    self._batch_size = batch_size
    self._num_epochs = num_epochs
    self._epoch = 0
    self._pad_value = pad_value

  def _next_row(self):
    try:
      return next(self._iterator)
    except StopIteration:
      self._epoch += 1
      self._iterator = self._generator_function()
      return next(self._iterator)

  def __call__(self):
    if self._num_epochs and self._epoch >= self._num_epochs:
      raise tf.errors.OutOfRangeError(
          None, None, f'Already emitted {self._epoch} epochs.')
    columns = {placeholder: [] for placeholder in self._col_placeholders}
    # 2.15 counted each key of a row towards the batch size, so a batch
    # holds ceil(batch_size / number of keys) rows.
    fed = 0
    while fed < self._batch_size:
      row = self._next_row()
      for key, placeholder in zip(self._keys, self._col_placeholders):
        if key not in row:
          raise KeyError('key mismatch between dicts emitted by GenFun '
                         f'Expected {self._keys} keys; got {row.keys()}')
        columns[placeholder].append(row[key])
        fed += 1
    if self._pad_value is None:
      return {p: np.asarray(values) for p, values in columns.items()}
    return {p: np.asarray(_pad_if_needed(values, self._pad_value))
            for p, values in columns.items()}


def _queue_components(data):
  """The dtypes, shapes and feed function class of the queue of `data`.

  Raises:
    TypeError: `data` is none of the kinds _enqueue_data takes.
  """
  if isinstance(data, np.ndarray):
    return ([tf.int64, tf.as_dtype(data.dtype)], [(), data.shape[1:]],
            _ArrayFeedFn)
  if isinstance(data, collections.OrderedDict):
    columns = list(data.values())
    return ([tf.int64] + [tf.as_dtype(c.dtype) for c in columns],
            [()] + [c.shape[1:] for c in columns], _OrderedDictNumpyFeedFn)
  if isinstance(data, types.FunctionType):
    first = next(data())
    columns = [first[key] for key in sorted(first.keys())]
    return ([tf.as_dtype(c.dtype) for c in columns],
            [c.shape for c in columns], _GeneratorFeedFn)
  if HAS_PANDAS and isinstance(data, pd.DataFrame):
    dtypes = [tf.as_dtype(d) for d in [data.index.dtype] + list(data.dtypes)]
    return dtypes, [() for _ in dtypes], _PandasFeedFn
  raise TypeError(
      'data must be either a numpy array or pandas DataFrame if pandas is '
      f'installed; got {type(data).__name__}')


def _warn_about_threads(shuffle, num_threads, num_epochs):
  """2.15's warnings for thread settings that do not do what one expects."""
  if num_threads > 1 and num_epochs is not None:
    tf.compat.v1.logging.warn(
        'enqueue_data was called with num_epochs and num_threads > 1. '
        'num_epochs is applied per thread, so this will produce more '
        'epochs than you probably intend. '
        'If you want to limit epochs, use one thread.')
  if shuffle and num_threads > 1 and num_epochs is not None:
    tf.compat.v1.logging.warn(
        'enqueue_data was called with shuffle=True, num_threads > 1, and '
        'num_epochs. This will create multiple threads, all reading the '
        'array/dataframe in order adding to the same shuffling queue; the '
        'results will likely not be sufficiently shuffled.')
  if not shuffle and num_threads > 1:
    tf.compat.v1.logging.warn(
        'enqueue_data was called with shuffle=False and num_threads > 1. '
        'This will create multiple threads, all reading the '
        'array/dataframe in order. If you want examples read in order, use'
        ' one thread; if you want multiple threads, enable shuffling.')


def _new_queue(capacity, dtypes, shapes, *, shuffle, padding,
               min_after_dequeue, seed):
  """_enqueue_data's queue, and its minimum after a dequeue (0 but for a
  shuffling queue)."""
  if shuffle:
    min_after_dequeue = int(capacity / 4 if min_after_dequeue is None else
                            min_after_dequeue)
    return tf.queue.RandomShuffleQueue(
        capacity, min_after_dequeue, dtypes=dtypes, shapes=shapes,
        seed=seed), min_after_dequeue
  if padding:
    # Rows vary in their last dimension, padded at dequeue.
    shapes = [tuple(shape[:-1]) + (None,) if len(shape) else shape
              for shape in shapes]
    return tf.queue.PaddingFIFOQueue(capacity, dtypes=dtypes,
                                     shapes=shapes), 0
  # 0: for the summary's name.
  return tf.queue.FIFOQueue(capacity, dtypes=dtypes, shapes=shapes), 0


def _enqueue_data(data, capacity, shuffle=False, min_after_dequeue=None,
                  num_threads=1, seed=None, name='enqueue_input',
                  enqueue_size=1, num_epochs=None, pad_value=None):
  """A queue that `num_threads` threads fill with the rows of `data`.

  Args:
    data: a numpy array, an OrderedDict of numpy arrays, a pandas DataFrame,
      or a function returning a generator of dicts of numpy arrays. The
      queue's first component is the row number (the index, for a
      DataFrame; none for a generator), then the columns.
    capacity: the queue's capacity.
    shuffle: a RandomShuffleQueue, each thread starting at a random row.
    min_after_dequeue: the shuffling queue's minimum after a dequeue
      (default capacity / 4).
    num_threads: the enqueueing threads (each reads all of `data`).
    seed: seeds the shuffling and the threads' starting rows.
    name: the name scope of the queue's ops.
    enqueue_size: the rows per enqueue.
    num_epochs: the epochs each thread enqueues (None: forever).
    pad_value: for a generator, a PaddingFIFOQueue padding the last
      dimension with it.

  Returns:
    The queue; its `_FeedingQueueRunner` is in the graph's QUEUE_RUNNERS,
    and a summary reports how full it is.

  Raises:
    TypeError: `data` is of none of these kinds.
    NotImplementedError: `pad_value` with data that is not a generator, or
      with `shuffle`.
  """
  with tf.compat.v1.name_scope(name):
    dtypes, shapes, feed_fn_class = _queue_components(data)
    padding = pad_value is not None
    if padding and feed_fn_class is not _GeneratorFeedFn:
      raise NotImplementedError(
          'padding is only available with generator usage (got data of '
          f'type {type(data).__name__} and pad_value={pad_value!r})')
    if shuffle and padding:
      raise NotImplementedError(
          'padding and shuffling data at the same time is not implemented')
    _warn_about_threads(shuffle, num_threads, num_epochs)

    queue, min_after_dequeue = _new_queue(
        capacity, dtypes, shapes, shuffle=shuffle, padding=padding,
        min_after_dequeue=min_after_dequeue, seed=seed)
    enqueue_ops = []
    feed_fns = []
    for i in range(num_threads):
      # Shapeless placeholders take any number of rows; enqueue_many splits
      # them.
      placeholders = [tf.compat.v1.placeholder(dtype) for dtype in dtypes]
      enqueue_ops.append(queue.enqueue_many(placeholders))
      kwargs = dict(random_start=shuffle,
                    seed=None if seed is None else (i + 1) * seed,
                    num_epochs=num_epochs)
      if padding:
        kwargs['pad_value'] = pad_value
      feed_fns.append(feed_fn_class(placeholders, data, enqueue_size,
                                    **kwargs))

    runner = fqr._FeedingQueueRunner(  # pylint: disable=protected-access
        queue=queue, enqueue_ops=enqueue_ops, feed_fns=feed_fns)
    tf.compat.v1.train.queue_runner.add_queue_runner(runner)

    full = tf.cast(tf.maximum(0, queue.size() - min_after_dequeue),
                   tf.float32) * (1. / (capacity - min_after_dequeue))
    # queue.name ends with '/' already.
    tf.compat.v1.summary.scalar(
        f'queue/{queue.name}fraction_over_{min_after_dequeue}_of_'
        f'{capacity - min_after_dequeue}_full', full)
    return queue
