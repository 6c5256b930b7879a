"""Stochastic dual coordinate ascent (SDCA) for linear models, in a graph:
tf.estimator 2.15's `_SDCAModel` over TensorFlow's SDCA ops
(`SdcaOptimizerV2`, `SdcaFprint`).

`SDCAModel(examples, variables, options)` trains the weights in
`variables` on one batch `examples` per `minimize()` run:

  - examples: 'example_labels', 'example_weights', 'example_ids' (strings;
    their fingerprints key each example's dual state), 'sparse_features'
    (a list of `SparseFeatureColumn`) and 'dense_features' (a list of
    [batch, n] tensors);
  - variables: 'sparse_features_weights' and 'dense_features_weights',
    lists of variables (or lists of partitions of one, split along axis 0);
  - options: 'loss_type' (logistic_loss, squared_loss, hinge_loss,
    smooth_hinge_loss, poisson_loss), 'symmetric_l1_regularization',
    'symmetric_l2_regularization' (> 0), and optionally
    'num_loss_partitions' (1), 'num_table_shards' (1), 'adaptive' (True).

`minimize()` updates "unshrunk" copies of the weights (slot variables) and
each example's state in a sharded hash table; `update_weights(train_op)`
copies them into the weights, applying the L1 shrinkage. The loss and
duality gap methods give what the optimizer reports.
"""

import collections

import tensorflow as tf
from tensorflow.python.ops import variables as variables_lib  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.estimator.canned import sdca_table

LOSSES = ('logistic_loss', 'squared_loss', 'hinge_loss', 'smooth_hinge_loss',
          'poisson_loss')
_WEIGHTS = ('sparse_features_weights', 'dense_features_weights')


class SparseFeatureColumn:
  """One sparse feature of a batch: entry k is feature `feature_indices[k]`
  of example `example_indices[k]`, with value `feature_values[k]` (1.0 for
  all when `feature_values` is None). Each is converted to a 1-D tensor
  (int64 indices, float32 values)."""

  def __init__(self, example_indices, feature_indices, feature_values):
    with tf.compat.v1.name_scope(None, 'SparseFeatureColumn',
                                 [example_indices, feature_indices]):
      self._example_indices = tf.convert_to_tensor(
          example_indices, name='example_indices', dtype=tf.int64)
      self._feature_indices = tf.convert_to_tensor(
          feature_indices, name='feature_indices', dtype=tf.int64)
    self._feature_values = None
    if feature_values is not None:
      with tf.compat.v1.name_scope(None, 'SparseFeatureColumn',
                                   [feature_values]):
        self._feature_values = tf.convert_to_tensor(
            feature_values, name='feature_values', dtype=tf.float32)

  @property
  def example_indices(self):
    return self._example_indices

  @property
  def feature_indices(self):
    return self._feature_indices

  @property
  def feature_values(self):
    return self._feature_values


def _is_partitioned(var) -> bool:
  return isinstance(var, (list, variables_lib.PartitionedVariable))


def _parts(var):
  """`var`'s partitions (itself alone when it is not partitioned)."""
  return var if _is_partitioned(var) else [var]


def _as_tensor(value):
  """`value` as one tensor: partitions are concatenated along axis 0 (the
  only axis partitioned here)."""
  if _is_partitioned(value):
    value = tf.concat(list(value), axis=0)
  return tf.convert_to_tensor(value)


def _initial_zeros(var):
  """Zeros shaped like `var`, readable before `var` is initialized."""
  value = tf.cond(tf.compat.v1.is_variable_initialized(var), var.read_value,
                  lambda: var.initial_value)
  return tf.compat.v1.zeros_like(value, tf.float32)


class SDCAModel:
  """An SDCA-trained linear model (see the module docstring).

  Raises:
    ValueError: something missing from `examples`, `variables` or
      `options`, an unknown loss type, or a regularization out of range.
  """

  def __init__(self, examples, variables, options):
    if not examples or not variables or not options:
      raise ValueError('examples, variables and options must all be '
                       'specified.')
    if options['loss_type'] not in LOSSES:
      raise ValueError('Unsupported loss_type: ', options['loss_type'])
    self._check(examples, ('example_labels', 'example_weights', 'example_ids',
                           'sparse_features', 'dense_features'),
                ('sparse_features', 'dense_features'))
    self._check(variables, _WEIGHTS, _WEIGHTS)
    self._check(options, ('loss_type', 'symmetric_l2_regularization',
                          'symmetric_l1_regularization'), ())
    l2 = options['symmetric_l2_regularization']
    if l2 <= 0.0:
      raise ValueError('symmetric_l2_regularization should be positive '
                       f'(got {l2!r}).')
    if l2 <= 1.0:
      tf.compat.v1.logging.warn(
          'symmetric_l2_regularization for SDCA should typically be larger '
          'than for online optimization methods. Recommended value is of '
          'the order of the average L2 norm of the training examples.')
    if options['symmetric_l1_regularization'] < 0.0:
      raise ValueError('symmetric_l1_regularization should be non-negative '
                       f"(got {options['symmetric_l1_regularization']!r}).")
    self._examples = examples
    self._variables = variables
    self._options = options
    self._create_slots()
    # Per example: (dual, primal loss, dual loss, weight). SdcaFprint never
    # gives 0 or 1 as the low 64 bits, so [0, 0] and [1, 1] are safe marks.
    self._hashtable = sdca_table.ShardedDenseHashTable(
        key_dtype=tf.int64, value_dtype=tf.float32,
        num_shards=self._num_table_shards(),
        default_value=[0.0, 0.0, 0.0, 0.0], empty_key=[0, 0],
        deleted_key=[1, 1])
    tf.compat.v1.summary.scalar('approximate_duality_gap',
                                self.approximate_duality_gap())
    tf.compat.v1.summary.scalar('examples_seen', self._hashtable.size())

  @staticmethod
  def _check(given, required, lists):
    for key in required:
      if given.get(key) is None:
        raise ValueError(f'{key} must be specified.')
    for key in lists:
      if not isinstance(given[key], list):
        raise ValueError(f'{key} must be a list.')

  def _symmetric_l1_regularization(self):
    return self._options['symmetric_l1_regularization']

  def _symmetric_l2_regularization(self):
    return self._options['symmetric_l2_regularization']

  def _num_loss_partitions(self):
    return self._options.get('num_loss_partitions', 1)

  def _adaptive(self):
    return self._options.get('adaptive', True)

  def _num_table_shards(self):
    shards = self._options.get('num_table_shards')
    return 1 if shards is None else shards

  def _create_slots(self):
    """The unshrunk weights (before the L1 step), one per variable: a list
    of variables for a partitioned one (no PartitionedVariable needed)."""
    self._slots = collections.defaultdict(list)
    for name in _WEIGHTS:
      for var in self._variables[name]:
        if _is_partitioned(var):
          slot = []
          for part in var:
            with tf.compat.v1.colocate_with(part):
              slot.append(tf.Variable(_initial_zeros(part),
                                      name=part.op.name + '_unshrunk'))
        else:
          with tf.compat.v1.device(var.device):
            slot = tf.Variable(_initial_zeros(var),
                               name=var.op.name + '_unshrunk')
        self._slots['unshrunk_' + name].append(slot)

  def _weight_sums(self, fn):
    """The sum over every weight of `fn(weights as float64)`."""
    sums = []
    for name in _WEIGHTS:
      for var in self._variables[name]:
        for part in _parts(var):
          weights = tf.convert_to_tensor(part)
          with tf.compat.v1.device(weights.device):
            sums.append(tf.math.reduce_sum(fn(tf.cast(weights, tf.float64))))
    return tf.math.add_n(sums)

  def _l1_loss(self):
    """l1 * sum(|w|)."""
    with tf.name_scope('sdca/l1_loss'):
      return self._symmetric_l1_regularization() * self._weight_sums(
          tf.math.abs)

  def _l2_loss(self):
    """l2 * sum(w^2) / 2."""
    with tf.name_scope('sdca/l2_loss'):
      return self._symmetric_l2_regularization() * self._weight_sums(
          tf.math.square) / 2.0

  def _linear_predictions(self, examples):
    """w * x for each example of `examples`."""
    with tf.name_scope('sdca/prediction'):
      batch_size = tf.shape(examples['example_ids'])[0]
      predictions = tf.zeros([batch_size])
      for column, weights in zip(
          examples['sparse_features'],
          [_as_tensor(v) for v in self._variables['sparse_features_weights']]):
        values = tf.compat.v1.gather(weights, column.feature_indices)
        if column.feature_values is not None:
          values = values * column.feature_values
        dot = tf.math.segment_sum(values, column.example_indices)
        # Examples after the last one with this feature have none of it.
        predictions += tf.pad(dot, [[0, batch_size - tf.shape(dot)[0]]])
      for features, weights in zip(
          [_as_tensor(f) for f in examples['dense_features']],
          [_as_tensor(v) for v in self._variables['dense_features_weights']]):
        predictions += tf.compat.v1.squeeze(
            tf.linalg.matmul(features, tf.expand_dims(weights, -1)))
    return predictions

  def predictions(self, examples):
    """The model's predictions: probabilities for logistic_loss, exp(w*x)
    for poisson_loss, w*x otherwise."""
    self._check(examples, ('example_weights', 'sparse_features',
                           'dense_features'),
                ('sparse_features', 'dense_features'))
    result = self._linear_predictions(examples)
    loss_type = self._options['loss_type']
    if loss_type == 'logistic_loss':
      with tf.name_scope('sdca/logistic_prediction'):
        result = tf.math.sigmoid(result)
    elif loss_type == 'poisson_loss':
      with tf.name_scope('sdca/poisson_prediction'):
        result = tf.math.exp(result)
    return result

  @staticmethod
  def _partition_ids(parts, ids):
    """How `ids` (in the whole variable) fall on partitions `parts` (div
    partitioning): (partition of each id, its index in the partition per
    partition, the positions of each partition's ids)."""
    n = len(parts)
    flat_ids = tf.reshape(ids, [-1])
    sizes = [tf.compat.dimension_value(p.shape[0]) for p in parts]
    if all(size is not None for size in sizes):
      total = tf.constant(sum(sizes), flat_ids.dtype)
    else:
      total = tf.math.reduce_sum(tf.cast(tf.stack(
          [s if s is not None else tf.shape(p)[0]
           for s, p in zip(sizes, parts)]), flat_ids.dtype))
    per_part = total // n
    extras = total % n
    # The first `extras` partitions hold one id more.
    assignments = tf.math.maximum(flat_ids // (per_part + 1),
                                  (flat_ids - extras) // per_part)
    local_ids = tf.where(assignments < extras, flat_ids % (per_part + 1),
                         (flat_ids - extras) % per_part)
    assignments = tf.cast(assignments, tf.int32)
    gather_ids = tf.dynamic_partition(local_ids, assignments, n)
    positions = tf.dynamic_partition(tf.range(tf.shape(local_ids)[0]),
                                     assignments, n)
    return assignments, gather_ids, positions

  def minimize(self, global_step=None, name=None):
    """The op running one SDCA step on the examples: it updates the
    unshrunk weights and the examples' states (and adds one to
    `global_step` after, if given)."""
    with tf.compat.v1.name_scope(name, 'sdca/minimize'):
      columns = self._examples['sparse_features']
      # A column without values: the op takes 1.0 for each.
      sparse_values = [c.feature_values for c in columns
                       if c.feature_values is not None]
      ids_hashed = tf.raw_ops.SdcaFprint(
          input=tf.convert_to_tensor(self._examples['example_ids']))
      state = self._hashtable.lookup(ids_hashed)

      sparse_indices, sparse_weights, partitioning = [], [], {}
      for number, (slot, column) in enumerate(
          zip(self._slots['unshrunk_sparse_features_weights'], columns)):
        ids = tf.cast(tf.unique(tf.cast(column.feature_indices, tf.int32))[0],
                      tf.int64)
        sparse_indices.append(ids)
        if _is_partitioned(slot):
          assignments, gather_ids, positions = self._partition_ids(slot, ids)
          partitioning[number] = (assignments, gather_ids)
          gathered = []
          for part, part_ids in zip(slot, gather_ids):
            with tf.compat.v1.colocate_with(part):
              gathered.append(tf.compat.v1.gather(part, part_ids))
          sparse_weights.append(tf.dynamic_stitch(positions, gathered))
        else:
          weights = tf.convert_to_tensor(slot)
          with tf.compat.v1.device(weights.device):
            sparse_weights.append(tf.compat.v1.gather(weights, ids))

      state_update, sparse_deltas, dense_deltas = tf.raw_ops.SdcaOptimizerV2(
          sparse_example_indices=[c.example_indices for c in columns],
          sparse_feature_indices=[c.feature_indices for c in columns],
          sparse_feature_values=sparse_values,
          dense_features=[_as_tensor(f)
                          for f in self._examples['dense_features']],
          example_weights=tf.convert_to_tensor(
              self._examples['example_weights']),
          example_labels=tf.convert_to_tensor(
              self._examples['example_labels']),
          sparse_indices=sparse_indices, sparse_weights=sparse_weights,
          dense_weights=[_as_tensor(s) for s in
                         self._slots['unshrunk_dense_features_weights']],
          example_state_data=state,
          loss_type=self._options['loss_type'],
          l1=self._symmetric_l1_regularization(),
          l2=self._symmetric_l2_regularization(),
          num_loss_partitions=self._num_loss_partitions(),
          num_inner_iterations=1, adaptive=self._adaptive())

      with tf.control_dependencies([state_update]):
        updates = [self._hashtable.insert(ids_hashed, state_update)]
        for number, (slot, ids, delta) in enumerate(zip(
            self._slots['unshrunk_sparse_features_weights'], sparse_indices,
            sparse_deltas)):
          if _is_partitioned(slot):
            assignments, gather_ids = partitioning[number]
            deltas = tf.dynamic_partition(delta, assignments, len(slot))
            for part, part_ids, part_delta in zip(slot, gather_ids, deltas):
              with tf.compat.v1.colocate_with(part):
                updates.append(
                    tf.compat.v1.scatter_add(part, part_ids, part_delta))
          else:
            updates.append(tf.compat.v1.scatter_add(slot, ids, delta))
        for slot, delta in zip(self._slots['unshrunk_dense_features_weights'],
                               dense_deltas):
          if _is_partitioned(slot):
            pieces = tf.split(delta, [p.shape.as_list()[0] for p in slot])
            updates += [tf.compat.v1.assign_add(p, piece)
                        for p, piece in zip(slot, pieces)]
          else:
            updates.append(tf.compat.v1.assign_add(slot, delta))
      if global_step is None:
        return tf.group(*updates)
      with tf.control_dependencies(updates):
        return tf.compat.v1.assign_add(global_step, 1, name=name).op

  def update_weights(self, train_op):
    """The op (after `train_op`) copying the unshrunk weights into the
    model's, then shrinking each toward 0 by l1 / l2 when l1 > 0."""
    with tf.control_dependencies([train_op]):
      updates = []
      for name in _WEIGHTS:
        for var, slot in zip(self._variables[name],
                             self._slots['unshrunk_' + name]):
          updates += [v.assign(s) for v, s in zip(_parts(var), _parts(slot))]
    if self._symmetric_l1_regularization() <= 0:
      return tf.group(*updates)
    shrinkage = (self._symmetric_l1_regularization() /
                 self._symmetric_l2_regularization())
    with tf.control_dependencies(updates):
      shrunk = []
      for name in _WEIGHTS:
        for var in self._variables[name]:
          for v in _parts(var):
            with tf.compat.v1.device(v.device):
              shrunk.append(v.assign(tf.math.sign(v) * tf.math.maximum(
                  0.0, tf.math.abs(v) - shrinkage)))
      return tf.group(*shrunk)

  def approximate_duality_gap(self):
    """(primal loss + dual loss + l1 loss + 2 l2 loss) / weight, summed
    over the examples seen (NaN before any)."""
    with tf.name_scope('sdca/approximate_duality_gap'):
      _, values_list = self._hashtable.export_sharded()
      sums = []
      for values in values_list:
        with tf.compat.v1.device(values.device):
          # One shard's float64 copy at a time: they can be large.
          with tf.control_dependencies(sums):
            sums.append(tf.math.reduce_sum(tf.cast(values, tf.float64), 0))
      total = tf.math.add_n(sums)
      return (total[1] + total[2] + self._l1_loss() +
              2.0 * self._l2_loss()) / total[3]

  def unregularized_loss(self, examples):
    """The weighted mean loss on `examples` (squared loss halved, as SDCA
    defines it), in float64."""
    self._check(examples, ('example_labels', 'example_weights',
                           'sparse_features', 'dense_features'),
                ('sparse_features', 'dense_features'))
    with tf.name_scope('sdca/unregularized_loss'):
      predictions = tf.cast(self._linear_predictions(examples), tf.float64)
      labels = tf.cast(tf.convert_to_tensor(examples['example_labels']),
                       tf.float64)
      weights = tf.cast(tf.convert_to_tensor(examples['example_weights']),
                        tf.float64)
      loss_type = self._options['loss_type']
      if loss_type == 'logistic_loss':
        losses = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=predictions)
      elif loss_type == 'poisson_loss':
        losses = tf.nn.log_poisson_loss(targets=labels,
                                        log_input=predictions)
      elif loss_type in ('hinge_loss', 'smooth_hinge_loss'):
        # Labels 0/1 as -1/1: max(0, 1 - y w*x).
        signs = 2 * labels - tf.ones_like(predictions)
        losses = tf.nn.relu(tf.ones_like(predictions) - signs * predictions)
      else:
        return (tf.math.reduce_sum(tf.math.square(labels - predictions) *
                                   weights) /
                (2.0 * tf.math.reduce_sum(weights)))
      return tf.math.reduce_sum(losses * weights) / tf.math.reduce_sum(
          weights)

  def regularized_loss(self, examples):
    """unregularized_loss plus (l1 loss + l2 loss) / total weight."""
    self._check(examples, ('example_labels', 'example_weights',
                           'sparse_features', 'dense_features'),
                ('sparse_features', 'dense_features'))
    with tf.name_scope('sdca/regularized_loss'):
      weights = tf.convert_to_tensor(examples['example_weights'])
      return ((self._l1_loss() + self._l2_loss()) /
              tf.math.reduce_sum(tf.cast(weights, tf.float64)) +
              self.unregularized_loss(examples))
