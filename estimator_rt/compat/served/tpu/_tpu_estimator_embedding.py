"""tensorflow_estimator.python.estimator.tpu._tpu_estimator_embedding:
tf.estimator 2.15's glue between TPUEstimator and TPU embedding tables,
over estimator_rt.tpu_embedding (the configuration classes and
EmbeddingConfigSpec).

With 2.15's semantics: the configs made from TPU embedding feature columns
(`get_configs_from_feature_columns`), the table and variable names that
match a CPU run's (`tbl_<var>`, the optimizer's slot names), and the split
of a batch into dense features and the sparse ids the embedding infeed
takes (`split_inputs`). `EmbeddingConfig` translates a spec for a mode;
the `TPUEmbedding` it then makes needs TPU hardware and is refused in one
line (TPUEstimator(use_tpu=True) is refused before it gets there).
"""

import collections

import tensorflow as tf
from tensorflow.python.feature_column import utils as fc_utils  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu import feature_column as tpu_fc  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu import feature_column_v2 as tpu_fc_v2  # pylint: disable=g-direct-tensorflow-import

from estimator_rt import tpu_embedding
from estimator_rt.errors import UserInputError
from estimator_rt.errors import UserTypeError
from estimator_rt.mode_keys import ModeKeys
# pylint: disable=unused-import,g-bad-import-order
from estimator_rt.tpu_embedding import _EMBEDDING_COLUMN_CLASSES
from estimator_rt.tpu_embedding import _SUPPORTED_FEATURE_COLUMNS
from estimator_rt.tpu_embedding import _SUPPORTED_OPTIMIZERS
from estimator_rt.tpu_embedding import _TPU_DEVICE_SPECIFIC_EMBEDDING_COLUMNS
from estimator_rt.tpu_embedding import _TPU_EMBEDDING_COLUMN_CLASSES
from estimator_rt.tpu_embedding import AdagradParameters
from estimator_rt.tpu_embedding import AdamParameters
from estimator_rt.tpu_embedding import EmbeddingConfigSpec
from estimator_rt.tpu_embedding import FtrlParameters
from estimator_rt.tpu_embedding import MomentumParameters
from estimator_rt.tpu_embedding import ProximalAdagradParameters
from estimator_rt.tpu_embedding import RMSPropParameters
from estimator_rt.tpu_embedding import StochasticGradientDescentParameters
# pylint: enable=unused-import,g-bad-import-order

_TABLE_NAME_PREFIX = 'tbl_'
_LEN_TABLE_NAME_PREFIX = len(_TABLE_NAME_PREFIX)


def _get_table_name_from_embedding_var_name(embedding_var_name):
  return f'{_TABLE_NAME_PREFIX}{embedding_var_name}'


def _get_embedding_var_name_from_table_name(table_name):
  return table_name[_LEN_TABLE_NAME_PREFIX:]


def _get_embedding_variable_name(scope_name, var_name):
  return f'{scope_name}/{var_name}' if scope_name else var_name


# Each optimizer's slot names (under the embedding variable's name), as a
# CPU run's optimizer names its slots.
_SLOT_NAMES = (
    (AdagradParameters, tpu_embedding.AdagradSlotVariableNames,
     ('Adagrad',)),
    (AdamParameters, tpu_embedding.AdamSlotVariableNames,
     ('Adam/m', 'Adam/v')),
    (FtrlParameters, tpu_embedding.FtrlSlotVariableNames,
     ('Ftrl', 'Ftrl_1')),  # The accumulator, then the linear slot.
    (MomentumParameters, tpu_embedding.MomentumSlotVariableNames,
     ('Momentum',)),
    (RMSPropParameters, tpu_embedding.RMSPropSlotVariableNames,
     ('RMSProp/ms', 'RMSProp/mom')),
    (ProximalAdagradParameters,
     tpu_embedding.ProximalAdagradSlotVariableNames, ('ProximalAdagrad',)),
)


def _get_slot_variable_names(scope_name, var_name, optimization_parameters):
  """The slot variables' names of `optimization_parameters`' optimizer for
  the embedding variable `scope_name/var_name` (None for SGD, which has
  none).

  Raises:
    ValueError: another optimizer.
  """
  full_name = _get_embedding_variable_name(scope_name, var_name)
  for parameters_class, names_class, suffixes in _SLOT_NAMES:
    if isinstance(optimization_parameters, parameters_class):
      return names_class(*(f'{full_name}/{suffix}' for suffix in suffixes))
  if isinstance(optimization_parameters,
                StochasticGradientDescentParameters):
    return None
  raise UserInputError('Support to infer full variable name for '
                       f'optimization_parameter {optimization_parameters} has '
                       'not been added.')


def get_full_variable_names(graph, table_to_config_dict,
                            optimization_parameters=None):
  """({table: its embedding variable's name}, {table: its slots' names})
  as the TPU embedding columns of `graph` recorded them (and cleared).

  Raises:
    RuntimeError: the graph's columns recorded nothing.
  """
  collection = graph.get_collection_ref(tpu_fc._TPU_FC_TO_SCOPE)  # pylint: disable=protected-access
  if not collection:
    raise RuntimeError(
        'Embedding feature column did not capture any thing. Make sure the '
        'feature columns passed to TPUEstimator constructor is properly '
        'used in model_fn.')
  variable_names = {}
  slot_names = {}
  for table_name in table_to_config_dict:
    scope_name, var_name = collection[0][
        _get_embedding_var_name_from_table_name(table_name)]
    variable_names[table_name] = _get_embedding_variable_name(scope_name,
                                                              var_name)
    if optimization_parameters:
      slot_names[table_name] = _get_slot_variable_names(
          scope_name, var_name, optimization_parameters)
  graph.clear_collection(tpu_fc._TPU_FC_TO_SCOPE)  # pylint: disable=protected-access
  return variable_names, slot_names


def get_configs_from_feature_columns(feature_columns):
  """({table name: TableConfig}, {feature name: FeatureConfig}) of TPU
  embedding columns (the V1 ones with a deprecation warning).

  Raises:
    TypeError: another column.
    ValueError: a feature embedded by two columns.
  """
  # pylint: disable=protected-access
  allowed = (tpu_fc_v2._TPUEmbeddingColumnV2,
             tpu_fc_v2._TPUSharedEmbeddingColumnV2)
  deprecated = (tpu_fc._TPUEmbeddingColumn, tpu_fc._TPUSharedEmbeddingColumn)
  # pylint: enable=protected-access
  for column in feature_columns:
    if not isinstance(column, allowed + deprecated):
      raise UserTypeError(f'Unsupported feature column {type(column)}. '
                          f'Supported types are {allowed}.')
    if isinstance(column, deprecated):
      tf.compat.v1.logging.warn(f'Columns of type {type(column)} are '
                                f'deprecated. Supported types are {allowed}.')
  table_to_config = {}
  feature_to_config = {}
  for column in feature_columns:
    feature_name = column.get_feature_key_name()
    table_name = _get_table_name_from_embedding_var_name(
        column.get_embedding_var_name())
    if feature_name in feature_to_config:
      raise UserInputError(
          f'Feature column {feature_name} is used with multiple embeddings '
          'and this is not supported.')
    feature_to_config[feature_name] = tpu_embedding.FeatureConfig(
        table_id=table_name,
        max_sequence_length=column.get_max_sequence_length(),
        weight_key=column.get_weight_key_name())
    vocabulary_size, dimension = column.get_embedding_table_size()
    table_to_config[table_name] = tpu_embedding.TableConfig(
        vocabulary_size=vocabulary_size, dimension=dimension,
        initializer=column.get_initializer(), combiner=column.get_combiner(),
        learning_rate_fn=column.get_learning_rate_fn())
  return table_to_config, feature_to_config


def get_tpu_embedding_columns(feature_columns):
  """The TPU embedding columns among `feature_columns`, in order."""
  return [column for column in feature_columns
          if isinstance(column, _TPU_EMBEDDING_COLUMN_CLASSES)]


class EmbeddingConfig:
  """tf.estimator's translation of an EmbeddingConfigSpec into the
  arguments of TPU embedding tables, per mode.

  The configs come from the spec's feature columns (or its config dicts);
  `get_tpu_embedding(mode)` makes the mode's TPUEmbedding, which needs TPU
  hardware and is refused in one line.

  Raises:
    ValueError: no spec.
  """

  def __init__(self, embedding_config_spec, train_batch_size,
               eval_batch_size, num_hosts, num_cores, run_config):
    if not embedding_config_spec:
      raise UserInputError('embedding_config_spec cannot be None.')
    self._embedding_config_spec = embedding_config_spec
    self._train_batch_size = train_batch_size
    self._eval_batch_size = eval_batch_size
    self._num_hosts = num_hosts
    self._num_cores = num_cores
    self._run_config = run_config
    if embedding_config_spec.feature_columns:
      self._table_to_config_dict, self._feature_to_config_dict = (
          get_configs_from_feature_columns(
              embedding_config_spec.feature_columns))
    else:
      self._table_to_config_dict = embedding_config_spec.table_to_config_dict
      self._feature_to_config_dict = (
          embedding_config_spec.feature_to_config_dict)
    self._partition_strategy = embedding_config_spec.partition_strategy
    self._mode_to_tpu_embedding_dict = {}
    self.dummy_table_variables = None
    self._grad_multiplier_fn = (
        embedding_config_spec.experimental_gradient_multiplier_fn)

  def get_grad_multiplier(self):
    """The gradient multiplier at the global step (a float32 tensor), or
    None without a multiplier function."""
    if self._grad_multiplier_fn:
      return tf.convert_to_tensor(
          self._grad_multiplier_fn(tf.compat.v1.train.get_global_step()),
          dtype=tf.float32)
    return None

  def has_embedding_tables(self):
    return bool(self._table_to_config_dict)

  def _create_tpu_embedding(self, mode):
    """The mode's TPUEmbedding (refused: see the class).

    Raises:
      ValueError: a mode other than TRAIN, EVAL and PREDICT; and always,
        TPUEmbedding's refusal.
    """
    batch_size = (self._train_batch_size if mode == ModeKeys.TRAIN else
                  self._eval_batch_size)
    if mode == ModeKeys.TRAIN:
      embedding_mode = tpu_embedding.TRAINING
      optimization_parameters = (
          self._embedding_config_spec.optimization_parameters)
    elif mode in (ModeKeys.EVAL, ModeKeys.PREDICT):
      embedding_mode = tpu_embedding.INFERENCE
      optimization_parameters = None
    else:
      raise UserInputError(f'Mode {mode} is not supported.')
    config = self._run_config
    if config.cluster:
      master = config.cluster.master()
      cluster_spec = config.cluster.cluster_spec()
      cluster_def = cluster_spec.as_cluster_def() if cluster_spec else None
    else:
      master = (config.evaluation_master if mode == ModeKeys.EVAL else
                config.master)
      cluster_def = None
    spec = self._embedding_config_spec
    return tpu_embedding.TPUEmbedding(
        self._table_to_config_dict, self._feature_to_config_dict, batch_size,
        embedding_mode, master, optimization_parameters, cluster_def,
        pipeline_execution_with_tensor_core=(
            spec.pipeline_execution_with_tensor_core),
        partition_strategy=self._partition_strategy,
        profile_data_directory=spec.profile_data_directory,
        master_job_name=config.tpu_config.tpu_job_name)

  def get_tpu_embedding(self, mode):
    if mode not in self._mode_to_tpu_embedding_dict:
      self._mode_to_tpu_embedding_dict[mode] = self._create_tpu_embedding(
          mode)
    return self._mode_to_tpu_embedding_dict[mode]


def _maybe_dense_to_sparse(tensor):
  """`tensor` as a SparseTensor of its non-zero entries (a SparseTensor
  unchanged)."""
  if isinstance(tensor, tf.sparse.SparseTensor):
    return tensor
  indices = tf.compat.v1.where(tensor)
  values = tf.compat.v1.gather_nd(tensor, indices)
  shape = tf.compat.v1.shape(tensor, out_type=tf.int64)
  return tf.sparse.SparseTensor(indices, values, shape)


def _split_tensor(tensor, num_splits):
  """`tensor` (dense or sparse) split along its batch into `num_splits`
  pieces; [None] * num_splits for None.

  Raises:
    ValueError: num_splits not positive (2.15 returned this error instead
      of raising it).
  """
  if tensor is None:
    return [None] * num_splits
  if num_splits <= 0:
    raise UserInputError(
        f'Tensors cannot be split into {num_splits} pieces.')
  if num_splits == 1:
    return [tensor]
  if isinstance(tensor, tf.sparse.SparseTensor):
    return tf.sparse.split(tensor, num_splits, axis=0)
  return tf.split(tensor, num_splits)


def _get_sparse_feature_from_feature(feature_key, features):
  """Pops feature `feature_key` (integer ids) from `features`.

  Raises:
    ValueError: ids that are not integers (strings: map them to ids in the
      input_fn).
  """
  sparse_feature = features.pop(feature_key)
  if not sparse_feature.dtype.is_integer:
    raise UserInputError(
        'SparseTensor with string as values are not supported. If you are '
        'using categorical_column_with_vocabulary_file or categorical_column_'
        'with_vocabulary_list, please call your_column.categorical_column.'
        '_transform_feature({your_column.key: features[your_column.key]}) '
        f'in your input_fn() to convert string to int. feature_key = '
        f'{feature_key}.')
  return sparse_feature


def _get_weights_from_features(weight_key_name, features):
  """Pops the weights `weight_key_name` (a float32 SparseTensor) from
  `features`, or None without a key.

  Raises:
    ValueError: no such feature, or dense weights.
  """
  if weight_key_name is None:
    return None
  if weight_key_name not in features:
    raise UserInputError(
        f'Cannot find weights {weight_key_name} for weighted_categorical_'
        'column. Please check if the weights are present in feature dict. '
        'Also note weight-sharing among weighted_categorical_column is not '
        'supported on TPU.')
  weights = features.pop(weight_key_name)
  if not isinstance(weights, tf.sparse.SparseTensor):
    raise UserInputError(
        f'weighted_categorical_column with weight key name {weight_key_name} '
        'has dense weights. Dense weights are not supported on TPU. Please '
        'use sparse weights instead.')
  if weights.dtype is not tf.float32:
    weights = tf.cast(weights, dtype=tf.float32)
  return weights


def _embedding_enqueue_datas(ctx, features, num_cores_per_batch):
  """{feature: [EnqueueData per core]} of the TPU embedding's features,
  popped from `features` (their sequence lengths added to it)."""
  enqueue_datas = collections.OrderedDict()
  embedding = ctx.embedding_config.tpu_embedding
  for feature_key, config in embedding.feature_to_config_dict.items():
    sparse_feature = _get_sparse_feature_from_feature(feature_key, features)
    combiner = embedding._table_to_config_dict[config.table_id].combiner  # pylint: disable=protected-access
    if config.max_sequence_length > 0:
      length = tf.math.minimum(
          fc_utils.sequence_length_from_sparse_tensor(sparse_feature),
          config.max_sequence_length)
      length.set_shape(ctx.batch_size_for_input_fn)
      features[tpu_fc.get_sequence_length_feature_key_name_from_feature_key_name(
          feature_key)] = length
    splits = _split_tensor(sparse_feature, num_cores_per_batch)
    if combiner is None and not isinstance(sparse_feature,
                                           tf.sparse.SparseTensor):
      # Dense ids without a combiner: one id per example.
      if config.weight_key is not None:
        raise UserInputError(
            f'Found weights {config.weight_key} for weighted_categorical_'
            'column, which is not compatible with sparse feature '
            f'{feature_key} enqueued as dense tensor.')
      enqueue_datas[feature_key] = [tpu_embedding.EnqueueData(split)
                                    for split in splits]
      continue
    weight_splits = [None] * num_cores_per_batch
    if isinstance(sparse_feature, tf.sparse.SparseTensor):
      weights = _get_weights_from_features(config.weight_key, features)
      if weights is not None:
        weight_splits = _split_tensor(weights, num_cores_per_batch)
    enqueue_datas[feature_key] = [
        tpu_embedding.EnqueueData.from_sparse_tensor(
            _maybe_dense_to_sparse(split), weights=weight_split)
        for split, weight_split in zip(splits, weight_splits)]
  return enqueue_datas


def split_inputs(ctx, features, labels, num_cores_per_batch=1):
  """(features, labels, [{feature: EnqueueData}] per core): the features a
  TPU embedding looks up taken out of `features` for its infeed, and the
  features of the columns that look up on the tensor cores padded to
  their dense ids and mask (`<key>_mask`). Without either, `features` and
  `labels` unchanged and an empty dict per core.

  Raises:
    ValueError: see `_get_sparse_feature_from_feature`,
      `_get_weights_from_features`; a tensor core column's mask key already
      among the features.
  """
  enqueue_datas = collections.OrderedDict()
  if ctx.embedding_config:
    enqueue_datas = _embedding_enqueue_datas(ctx, features,
                                             num_cores_per_batch)
  for column in ctx.tensor_core_embedding_columns or ():
    feature_key = column.categorical_column.key
    sparse_feature = _get_sparse_feature_from_feature(feature_key, features)
    width = column._tensor_core_shape[1]  # pylint: disable=protected-access
    padded_values, padded_mask = tpu_fc_v2.pad_sparse_embedding_lookup_indices(
        sparse_feature, width)
    padded_values.set_shape([ctx.batch_size_for_input_fn, width])
    padded_mask.set_shape([ctx.batch_size_for_input_fn, width])
    features[feature_key] = padded_values
    mask_key = feature_key + tpu_fc_v2._TENSOR_CORE_MASK_KEY_SUFFIX  # pylint: disable=protected-access
    if mask_key in features:
      raise UserInputError(f'Mask key {mask_key} for Tensor Core embedding is '
                           'already in use.')
    features[mask_key] = padded_mask
  per_core = [{key: values[i] for key, values in enqueue_datas.items()}
              for i in range(num_cores_per_batch)]
  return features, labels, per_core
