"""The hash table SDCA keeps its per-example state in, sharded by key.

`ShardedDenseHashTable` holds `num_shards` `tf.lookup.experimental.
DenseHashTable`s (TensorFlow's MutableDenseHashTable op, the table
tf.estimator 2.15 copied from tf.contrib) and sends each key to shard
`abs(key) mod num_shards` (a key that is a vector goes by its first
element), as 2.15's `_ShardedMutableDenseHashTable` did; lookups are put
back in the order of the keys. Shard `i` of `n` is named `<name>-<i>-of-<n>`.
"""

import tensorflow as tf


class ShardedDenseHashTable:
  """Dense hash tables behind one lookup/insert/size interface.

  Args:
    key_dtype: the keys' dtype.
    value_dtype: the values' dtype.
    default_value: what a missing key looks up (its shape is the values').
    empty_key: the key marking an empty bucket (never inserted or looked
      up); its shape is the keys'.
    deleted_key: the key marking a deleted bucket, not `empty_key`.
    num_shards: how many tables.
    checkpoint: whether the tables are saved with the model.
    name: the name scope and the shards' name prefix.
  """

  def __init__(self, key_dtype, value_dtype, default_value, empty_key,
               deleted_key, num_shards=1, checkpoint=True,
               name='ShardedMutableHashTable'):
    if not isinstance(num_shards, int) or num_shards < 1:
      raise ValueError(
          f'num_shards must be a positive int, got num_shards={num_shards!r}.')
    self._key_dtype = tf.dtypes.as_dtype(key_dtype)
    self._value_dtype = tf.dtypes.as_dtype(value_dtype)
    with tf.compat.v1.name_scope(name, 'sharded_mutable_hash_table') as scope:
      self._table_name = scope
      self._table_shards = [
          tf.lookup.experimental.DenseHashTable(
              key_dtype=key_dtype, value_dtype=value_dtype,
              default_value=default_value, empty_key=empty_key,
              deleted_key=deleted_key, checkpoint=checkpoint,
              name=f'{name}-{i + 1}-of-{num_shards}')
          for i in range(num_shards)]
    self._value_shape = self._table_shards[0]._value_shape  # pylint: disable=protected-access

  @property
  def name(self):
    return self._table_name

  @property
  def _num_shards(self):
    return len(self._table_shards)

  @property
  def table_shards(self):
    return self._table_shards

  def size(self, name=None):
    """The number of keys in all shards."""
    with tf.compat.v1.name_scope(name, 'sharded_mutable_hash_table_size'):
      return tf.math.add_n([shard.size() for shard in self._table_shards])

  def _shard_indices(self, keys):
    if keys.shape.ndims > 1:  # Vector keys go by their first element.
      keys = tf.reshape(tf.slice(keys, [0, 0], [-1, 1]), [-1])
    return tf.cast(tf.math.floormod(tf.math.abs(keys), self._num_shards),
                   tf.int32)

  @staticmethod
  def _check_keys(keys):
    if keys.shape.ndims not in (1, 2):
      raise ValueError(
          f'Expected a vector or matrix for keys, got {keys.shape}.')

  def lookup(self, keys, name=None):
    """The values of `keys` ([n] or [n, key size]), in their order.

    Raises:
      TypeError: `keys` are not of the table's key dtype.
    """
    if keys.dtype.base_dtype != self._key_dtype:
      raise TypeError(
          f'Signature mismatch. Keys must be dtype {self._key_dtype}, got '
          f'{keys.dtype}.')
    self._check_keys(keys)
    n = self._num_shards
    if n == 1:
      return self._table_shards[0].lookup(keys, name=name)
    shards = self._shard_indices(keys)
    key_parts = tf.dynamic_partition(keys, shards, n)
    value_parts = [self._table_shards[i].lookup(key_parts[i], name=name)
                   for i in range(n)]
    positions = tf.dynamic_partition(tf.range(tf.shape(keys)[0]), shards, n)
    return tf.dynamic_stitch(positions, value_parts)

  def insert(self, keys, values, name=None):
    """The op inserting `keys` with `values` into their shards."""
    self._check_keys(keys)
    n = self._num_shards
    if n == 1:
      return self._table_shards[0].insert(keys, values, name=name)
    shards = self._shard_indices(keys)
    key_parts = tf.dynamic_partition(keys, shards, n)
    value_parts = tf.dynamic_partition(values, shards, n)
    return tf.group(*[
        self._table_shards[i].insert(key_parts[i], value_parts[i], name=name)
        for i in range(n)])

  def export_sharded(self, name=None):
    """([keys of each shard], [values of each shard]): every bucket, the
    empty ones holding `empty_key` and zeros."""
    exported = [shard.export(name=name) for shard in self._table_shards]
    return [k for k, _ in exported], [v for _, v in exported]
