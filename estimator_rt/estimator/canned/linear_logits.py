"""The linear model's logits: one weight per feature value (categorical
columns as one-hot), as tf.estimator 2.15's linear estimators built it.

The linear model is written here with `tf.compat.v1` variables (it runs in
the graph engine): under the variable scope 'linear/linear_model', each
feature column (in order of name, as feature columns sort) gets
`<column name>/weights` of shape [num_buckets or the column's width,
units], zero-initialized, and the model one `bias_weights` of shape
[units]: the names tf.estimator 2.15's checkpoints hold. The logits are
the sum over columns of each column's weighted sum (a sparse embedding
lookup combined by `sparse_combiner` for categorical columns, a matmul for
dense ones) plus the bias. The linear estimators (linear.py), their SDCA
training (linear_sdca.py), the combined estimators and the Keras
`LinearModel` (linear_model.py) all build it here.
"""

import contextlib
from typing import Dict, Sequence, Tuple

import tensorflow as tf
from tensorflow.python.feature_column import feature_column_v2 as fc_v2
from tensorflow.python.ops import variables as tf_variables  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.core.errors import UserInputError

SPARSE_COMBINERS = ('mean', 'sqrtn', 'sum')


class _VariableScopeStateManager(fc_v2.StateManager):
  """Feature-column state as `tf.compat.v1` variables of the current
  variable scope (so an embedding column's table is named
  `<scope>/<column>/embedding_weights`, as 2.15 named it)."""

  def __init__(self, trainable: bool = True):
    self._trainable = trainable
    self._variables: Dict[Tuple[str, str], tf.Variable] = {}
    self._resources: Dict[Tuple[str, str], object] = {}

  def create_variable(self, feature_column, name, shape, dtype=None,
                      trainable=True, use_resource=True, initializer=None):
    variable = tf.compat.v1.get_variable(
        name, shape=shape, dtype=dtype, initializer=initializer,
        trainable=self._trainable and trainable, use_resource=use_resource)
    self._variables[(feature_column.name, name)] = variable
    return variable

  def get_variable(self, feature_column, name):
    return self._variables[(feature_column.name, name)]

  def add_resource(self, feature_column, resource_name, resource):
    self._resources[(feature_column.name, resource_name)] = resource

  def has_resource(self, feature_column, resource_name):
    return (feature_column.name, resource_name) in self._resources

  def get_resource(self, feature_column, resource_name):
    return self._resources[(feature_column.name, resource_name)]


def new_state() -> fc_v2.StateManager:
  """An empty feature-column state for build_linear."""
  return _VariableScopeStateManager()


def check_sparse_combiner(sparse_combiner) -> None:
  if sparse_combiner not in SPARSE_COMBINERS:
    raise UserInputError(
        f'sparse_combiner={sparse_combiner!r} must be one of '
        f'{SPARSE_COMBINERS}.')


# Where 2.15's linear models made their ops, under their variable scope
# 'linear/linear_model' (a Keras LinearModel layer named 'linear_model',
# which the v1 and TF2 estimators nested differently); the logits are
# `<scope>/<ops scope>/weighted_sum`, each column's sum `.../<column>/
# weighted_sum`. The variables keep the variable scope's names.
OPS_SCOPE = 'linear/linear_model/linear/linear_model'
V1_OPS_SCOPE = 'linear_model/linear_model'


def linear_columns(feature_columns) -> list:
  """`feature_columns` as the linear model takes them: sorted by name, each
  a dense or a categorical column.

  Raises:
    ValueError: TensorFlow's, for no columns, a dict, a non-column or two
      columns of one name.
    UserInputError: a column is neither dense nor categorical.
  """
  columns = fc_v2._normalize_feature_columns(feature_columns)  # pylint: disable=protected-access
  for column in columns:
    if not isinstance(column, (fc_v2.DenseColumn, fc_v2.CategoricalColumn)):
      raise UserInputError(
          'Items of feature_columns must be either a DenseColumn or '
          f'CategoricalColumn. Given: {column!r}; the linear model weighs '
          'dense values or categorical ids only.')
  return columns


def column_scope(column) -> str:
  """The variable (and name) scope of `column`'s weights: its name, made a
  valid scope name."""
  return fc_v2._sanitize_column_name_for_variable_scope(column.name)  # pylint: disable=protected-access


def weights_shape(column, units: int) -> Tuple[int, int]:
  """[one row per bucket (categorical) or dense value, units]."""
  width = (column.num_buckets if isinstance(column, fc_v2.CategoricalColumn)
           else column.variable_shape.num_elements())
  return (width, units)


def weighted_sum(columns, *, features, state, sparse_combiner,
                 bias) -> tf.Tensor:
  """The linear model's output: the sum over `columns` of each one's
  weighted sum (its `weights` variable in `state`; each in a name scope
  of its own) plus `bias`, ops named as 2.15 named them.

  Raises:
    UserInputError: (a ValueError) the features' static batch sizes
      differ.
  """
  cache = fc_v2.FeatureTransformationCache(features)
  sums = []
  for column in columns:
    with tf.name_scope(column_scope(column)):
      sums.append(fc_v2._create_weighted_sum(  # pylint: disable=protected-access
          column=column, transformation_cache=cache, state_manager=state,
          sparse_combiner=sparse_combiner,
          weight_var=state.get_variable(column, 'weights')))
  _check_batch_sizes(sums, columns)
  return tf.nn.bias_add(
      tf.math.add_n(sums, name='weighted_sum_no_bias'), bias,
      name='weighted_sum')


def _check_batch_sizes(sums, columns) -> None:
  """The columns' weighted sums agree on the batch size where it is known
  when the graph is built (the sum checks the rest when it runs)."""
  known = {column.name: tf.compat.dimension_value(s.shape[0])
           for column, s in zip(columns, sums)
           if s.shape.rank and tf.compat.dimension_value(s.shape[0])
           is not None}
  if len(set(known.values())) > 1:
    raise UserInputError(
        'Batch size (first dimension) of each feature must be same. Batch '
        f'size of columns ({", ".join(known)}): '
        f'({", ".join(str(size) for size in known.values())}); every '
        'feature needs one row per example.')


def build_linear(*, units: int, feature_columns: Sequence, sparse_combiner,
                 features, scope: str = 'linear/linear_model',
                 ops_scope: str = '', state=None):
  """The linear model's logits on `features`, its weights (without the
  bias) and its bias; see the module docstring for the variables. Its ops
  are in name scope `<scope>/<ops_scope>` (OPS_SCOPE, V1_OPS_SCOPE:
  2.15's names). `state` (a new_state() by default) receives the columns'
  variables and resources, for a caller that reads the columns again."""
  check_sparse_combiner(sparse_combiner)
  columns = linear_columns(feature_columns)
  state = new_state() if state is None else state
  weights = []
  with tf.compat.v1.variable_scope(scope, values=list(features.values())), \
      _ops_name_scope(ops_scope):
    for column in columns:
      # No name scope: weighted_sum opens the column's, for its ops.
      with tf.compat.v1.variable_scope(column_scope(column),
                                       auxiliary_name_scope=False):
        column.create_state(state)
        weights.append(state.create_variable(
            column, name='weights', shape=weights_shape(column, units),
            dtype=tf.float32, initializer=tf.compat.v1.zeros_initializer()))
    bias = tf.compat.v1.get_variable(
        'bias_weights', shape=[units], dtype=tf.float32,
        initializer=tf.compat.v1.zeros_initializer(), use_resource=True)
    logits = weighted_sum(columns, features=features, state=state,
                          sparse_combiner=sparse_combiner, bias=bias)
  return logits, weights, bias


def _ops_name_scope(ops_scope: str):
  """Name scope `ops_scope` in the current one; '' stays where it is.
  (Variables made in it keep their variable scope's names.)"""
  if not ops_scope:
    return contextlib.nullcontext()
  return tf.name_scope(ops_scope)


# Above this many elements a tensor's zeros are counted in int64 (int32
# counts take half the memory on the large embedding tables that are usual).
_INT32_COUNT_LIMIT = 2**31 - 1


def _zero_count(value) -> tf.Tensor:
  """How many of `value`'s elements are zero, as a float32 scalar."""
  value = tf.convert_to_tensor(value)
  size = value.shape.num_elements()
  dtype = (tf.int32 if size is not None and size <= _INT32_COUNT_LIMIT
           else tf.int64)
  zeros = tf.math.reduce_sum(tf.cast(tf.math.equal(value, 0), dtype))
  return tf.cast(zeros, tf.float32)


def fraction_of_zero(values: Sequence) -> tf.Tensor:
  """The fraction of zeros among all the elements of `values` (tensors or
  variables of any shapes and numeric dtypes): how sparse Ftrl left a
  linear model. NaN when they have no element at all. A float32 scalar
  named `zero_fraction/zero_fraction_or_nan`, as 2.15 named it.

  Raises:
    UserInputError: `values` is empty.
  """
  values = list(values)
  if not values:
    raise UserInputError(
        f'fraction_of_zero: values={values!r} is empty; give the tensors or '
        'variables whose zeros to count.')
  with tf.name_scope('zero_fraction'):
    with tf.name_scope('total_size'):
      size = tf.math.add_n(
          [tf.size(v, out_type=tf.int64) for v in values])
    with tf.name_scope('total_zero'):
      zeros = tf.math.add_n([_zero_count(v) for v in values])
    with tf.name_scope('compute'):
      # 0 / 0 for no elements: NaN, as 2.15 gave.
      fraction = zeros / tf.cast(size, tf.float32, name='float32_size')
    return tf.identity(fraction, name='zero_fraction_or_nan')


def expanded(var_list) -> list:
  """`var_list` with each PartitionedVariable replaced by its parts (the
  v1 linear and DNN models partition theirs, see v1_model_fns)."""
  parts = []
  for variable in var_list:
    if isinstance(variable, tf_variables.PartitionedVariable):
      parts.extend(variable)
    else:
      parts.append(variable)
  return parts


def add_linear_summaries(weights, bias, units: int) -> None:
  """2.15's linear summaries: the bias (a scalar for one unit, a partitioned
  bias's first part's; a histogram of it for more) and the fraction of
  zero weights (how sparse Ftrl left the model)."""
  if units == 1:
    tf.compat.v1.summary.scalar('bias', expanded([bias])[0][0])
  else:
    tf.compat.v1.summary.histogram('bias', expanded([bias]))
  tf.compat.v1.summary.scalar('fraction_of_zero_weights',
                              fraction_of_zero(expanded(weights)))
