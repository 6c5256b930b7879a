"""tensorflow_estimator.python.estimator.canned.linear_optimizer.python.
utils.sharded_mutable_dense_hashtable, over estimator_rt's sharded table
(estimator_rt/estimator/canned/sdca_table.py)."""

import tensorflow as tf

from estimator_rt.estimator.canned import sdca_table

_ShardedMutableDenseHashTable = sdca_table.ShardedDenseHashTable
# 2.15's private copy of tf.contrib's table: TensorFlow's own now.
_MutableDenseHashTable = tf.lookup.experimental.DenseHashTable
