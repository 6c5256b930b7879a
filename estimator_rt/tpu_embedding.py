"""TPU embedding configuration, as TensorFlow 2.15 and tf.estimator 2.15
had it.

A TPUEstimator's `embedding_config_spec` (tf.estimator's
`EmbeddingConfigSpec`) names its TPU embedding tables: by TPU embedding
feature columns (`tf.compat.v1.tpu.experimental.embedding_column`, which
TensorFlow still has), or by TensorFlow 2.15's `TableConfig` and
`FeatureConfig`, with one of its optimizers' parameters
(`AdagradParameters`, ...). TensorFlow 2.16 removed those configuration
classes (`tensorflow.python.tpu.tpu_embedding`, which estimator_rt.compat
serves again from here) along with their only user, TPUEstimator.

They are configuration: each validates its arguments as 2.15 did and holds
them. What used them, `TPUEmbedding` (the tables on the TPU's embedding
cores, fed through the infeed), needs TPU hardware and is refused in one
line. Without a TPU, a TPUEstimator validates its spec and then does not
use it: the model_fn's TPU embedding columns embed on the CPU, as in 2.15.
"""

import collections
import math
from typing import Optional

import tensorflow as tf
from tensorflow.core.protobuf.tpu import tpu_embedding_configuration_pb2  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.feature_column import feature_column as fc_v1  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.feature_column import feature_column_lib as fc_lib  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu import feature_column as tpu_fc  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu import feature_column_v2 as tpu_fc_v2  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.errors import UserInputError
from estimator_rt.errors import UserTypeError

TRAINING = tpu_embedding_configuration_pb2.TPUEmbeddingConfiguration.TRAINING
INFERENCE = tpu_embedding_configuration_pb2.TPUEmbeddingConfiguration.INFERENCE

_COMBINERS = ('mean', 'sum', 'sqrtn', None)


class TableConfig(collections.namedtuple('TableConfig', [
    'vocabulary_size', 'dimension', 'initializer', 'combiner',
    'hot_id_replication', 'learning_rate', 'learning_rate_fn',
    'optimization_parameters'])):
  """TensorFlow 2.15's embedding table configuration. Without an
  `initializer`, the table's is a truncated normal of stddev
  1/sqrt(dimension).

  Raises:
    ValueError: vocabulary_size or dimension not a positive int; an
      initializer that is not callable; a combiner other than 'mean',
      'sum', 'sqrtn' or None; both learning_rate and learning_rate_fn;
      optimization_parameters that are not an optimizer's parameters.
  """

  def __new__(cls, vocabulary_size, dimension, initializer=None,
              combiner='mean', hot_id_replication=False, learning_rate=None,
              learning_rate_fn=None, optimization_parameters=None):
    if not isinstance(vocabulary_size, int) or vocabulary_size < 1:
      raise UserInputError(
          f'vocabulary_size must >= 1. Received: {vocabulary_size}.')
    if not isinstance(dimension, int) or dimension < 1:
      raise UserInputError(
          f'dimension must be a positive int. Received: {dimension}.')
    if initializer is not None and not callable(initializer):
      raise UserInputError(
          f'initializer must be callable if specified. Received: '
          f'{initializer}.')
    if initializer is None:
      initializer = tf.compat.v1.truncated_normal_initializer(
          mean=0.0, stddev=1 / math.sqrt(dimension))
    if combiner not in _COMBINERS:
      raise UserInputError('combiner must be "mean", "sum", "sqrtn" or None. '
                           f'Received: {combiner}.')
    if learning_rate is not None and learning_rate_fn is not None:
      raise UserInputError(
          'At most one of learning_rate and learning_rate_fn can be None. '
          f'Received: {learning_rate} and {learning_rate_fn}')
    if optimization_parameters is not None and not isinstance(
        optimization_parameters, _OptimizationParameters):
      raise UserInputError(
          '`optimization_parameters` must inherit from '
          '`_OptimizationParameters`. Received: `type(optimization_'
          f'parameters)`={type(optimization_parameters)}.')
    return super().__new__(cls, vocabulary_size, dimension, initializer,
                           combiner, hot_id_replication, learning_rate,
                           learning_rate_fn, optimization_parameters)


class FeatureConfig(collections.namedtuple(
    'FeatureConfig', ['table_id', 'max_sequence_length', 'weight_key'])):
  """TensorFlow 2.15's feature configuration: the table a feature looks up,
  its maximum sequence length (0: not a sequence) and its weights' key.

  Raises:
    ValueError: max_sequence_length not an int >= 0.
  """

  def __new__(cls, table_id, max_sequence_length=0, weight_key=None):
    if not isinstance(max_sequence_length, int) or max_sequence_length < 0:
      raise UserInputError('max_sequence_length must be zero or a positive '
                           f'int, got {max_sequence_length}.')
    return super().__new__(cls, table_id, max_sequence_length, weight_key)


class EnqueueData(collections.namedtuple(
    'EnqueueData',
    ['embedding_indices', 'sample_indices', 'aggregation_weights'])):
  """TensorFlow 2.15's: one feature's ids (and their examples and weights)
  for the TPU embedding infeed."""

  def __new__(cls, embedding_indices, sample_indices=None,
              aggregation_weights=None):
    return super().__new__(cls, embedding_indices, sample_indices,
                           aggregation_weights)

  @staticmethod
  def from_sparse_tensor(sp_tensor, weights=None):
    return EnqueueData(sp_tensor.values, sp_tensor.indices,
                       aggregation_weights=(weights.values
                                            if weights is not None else None))


class RaggedEnqueueData(collections.namedtuple(
    'RaggedEnqueueData',
    ['embedding_indices', 'row_splits', 'aggregation_weights'])):
  """TensorFlow 2.15's EnqueueData of a RaggedTensor."""

  def __new__(cls, embedding_indices, row_splits=None,
              aggregation_weights=None):
    return super().__new__(cls, embedding_indices, row_splits,
                           aggregation_weights)

  @staticmethod
  def from_ragged_tensor(rg_tensor, weights=None):
    return RaggedEnqueueData(rg_tensor.values, rg_tensor.row_splits,
                             aggregation_weights=(weights.values
                                                  if weights is not None
                                                  else None))


def get_enqueue_datas_list_from_sparse_tensors_list(sp_tensors_list):
  """[{feature: EnqueueData}] of [{feature: SparseTensor}] (one per core)."""
  return [collections.OrderedDict(
      (key, EnqueueData.from_sparse_tensor(value))
      for key, value in sp_tensors.items()) for sp_tensors in sp_tensors_list]


def get_enqueue_datas_list_from_ragged_tensors_list(rg_tensors_list):
  """[{feature: RaggedEnqueueData}] of [{feature: RaggedTensor}]."""
  return [collections.OrderedDict(
      (key, RaggedEnqueueData.from_ragged_tensor(value))
      for key, value in rg_tensors.items()) for rg_tensors in rg_tensors_list]


# The names (and variables) of each optimizer's slots, by TensorFlow 2.15's
# names.
AdamSlotVariableNames = collections.namedtuple('AdamSlotVariableNames',
                                               ['m', 'v'])
AdagradSlotVariableNames = collections.namedtuple('AdagradSlotVariableNames',
                                                  ['accumulator'])
MomentumSlotVariableNames = collections.namedtuple('MomentumSlotVariableNames',
                                                   ['momenta'])
AdagradMomentumSlotVariableNames = collections.namedtuple(
    'AdagradMomentumSlotVariableNames', ['accumulator', 'momenta'])
RMSPropSlotVariableNames = collections.namedtuple('RMSPropSlotVariableNames',
                                                  ['ms', 'mom'])
ProximalAdagradSlotVariableNames = collections.namedtuple(
    'ProximalAdagradSlotVariableNames', ['accumulator'])
FtrlSlotVariableNames = collections.namedtuple('FtrlSlotVariableNames',
                                               ['accumulator', 'linear'])
ProximalYogiSlotVariableNames = collections.namedtuple(
    'ProximalYogiSlotVariableNames', ['v', 'm'])
FrequencyEstimatorSlotVariableNames = collections.namedtuple(
    'FrequencyEstimatorSlotVariableNames', ['last_hit_step'])
AdamSlotVariables = collections.namedtuple('AdamSlotVariables', ['m', 'v'])
MomentumSlotVariables = collections.namedtuple('MomentumSlotVariables',
                                               ['momenta'])
AdagradMomentumSlotVariables = collections.namedtuple(
    'AdagradMomentumSlotVariables', ['accumulator', 'momenta'])
RMSPropSlotVariables = collections.namedtuple('RMSPropSlotVariables',
                                              ['ms', 'mom'])
AdagradSlotVariables = collections.namedtuple('AdagradSlotVariables',
                                              ['accumulator'])
ProximalAdagradSlotVariables = collections.namedtuple(
    'ProximalAdagradSlotVariables', ['accumulator'])
FtrlSlotVariable = collections.namedtuple('FtrlSlotVariable',
                                          ['accumulator', 'linear'])
ProximalYogiSlotVariables = collections.namedtuple('ProximalYogiSlotVariables',
                                                   ['v', 'm'])
FrequencyEstimatorSlotVariables = collections.namedtuple(
    'FrequencyEstimatorSlotVariables', ['last_hit_step'])
VariablesAndOps = collections.namedtuple('VariablesAndOps', [
    'embedding_variables_by_table', 'slot_variables_by_table', 'load_ops',
    'retrieve_ops'])
DeviceConfig = collections.namedtuple('DeviceConfig',
                                      ['num_hosts', 'num_cores', 'job_name'])


# ----------------------------------------------------------------------------
# The optimizers of TPU embedding tables (TensorFlow 2.15's parameters).


def _check(condition: bool, message: str) -> None:
  if not condition:
    raise UserInputError(message)


class _OptimizationParameters:
  """What every TPU embedding optimizer takes.

  Raises:
    ValueError: gradient clipping limits without gradient accumulation.
  """

  def __init__(self, learning_rate: float, use_gradient_accumulation: bool,
               clip_weight_min: Optional[float],
               clip_weight_max: Optional[float],
               weight_decay_factor: Optional[float],
               multiply_weight_decay_factor_by_learning_rate: Optional[bool],
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    self.learning_rate = learning_rate
    self.use_gradient_accumulation = use_gradient_accumulation
    self.clip_weight_min = clip_weight_min
    self.clip_weight_max = clip_weight_max
    self.weight_decay_factor = weight_decay_factor
    self.multiply_weight_decay_factor_by_learning_rate = (
        multiply_weight_decay_factor_by_learning_rate)
    self.clip_gradient_min = clip_gradient_min
    self.clip_gradient_max = clip_gradient_max
    _check(use_gradient_accumulation or (clip_gradient_min is None and
                                         clip_gradient_max is None),
           'When using gradient clipping limits, gradient  accumulation must '
           'be enabled.')


def _common(kwargs: dict) -> dict:
  """The base class's arguments out of a subclass's locals()."""
  return {name: kwargs[name] for name in (
      'learning_rate', 'use_gradient_accumulation', 'clip_weight_min',
      'clip_weight_max', 'weight_decay_factor',
      'multiply_weight_decay_factor_by_learning_rate', 'clip_gradient_min',
      'clip_gradient_max')}


def _check_regularization(l1: float, l2: float) -> None:
  _check(l1 >= 0., 'l1_regularization_strength must be greater than or '
         f'equal to 0. got {l1}.')
  _check(l2 >= 0., 'l2_regularization_strength must be greater than or '
         f'equal to 0. got {l2}.')


def _check_betas(beta1: float, beta2: float, epsilon: float) -> None:
  _check(0. <= beta1 < 1., f'beta1 must be between 0. and 1; got {beta1}.')
  _check(0. <= beta2 < 1., f'beta2 must be between 0. and 1; got {beta2}.')
  _check(epsilon > 0., f'epsilon must be positive; got {epsilon}.')


class AdagradParameters(_OptimizationParameters):
  """Adagrad for TPU embeddings (tf.compat.v1.tpu.experimental's in 2.15).

  Raises:
    ValueError: initial_accumulator not positive.
  """

  def __init__(self, learning_rate: float, initial_accumulator: float = 0.1,
               use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))
    _check(initial_accumulator > 0, 'Adagrad initial_accumulator must be '
           f'greater than zero. Received: {initial_accumulator}.')
    self.initial_accumulator = initial_accumulator


class AdagradMomentumParameters(_OptimizationParameters):
  """Adagrad with momentum for TPU embeddings.

  Raises:
    ValueError: epsilon or exponent not positive.
  """

  def __init__(self, learning_rate: float, momentum: float,
               use_nesterov: bool = False, exponent: float = 2,
               beta2: float = 1, epsilon: float = 1e-10,
               use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))
    _check(epsilon > 0, 'Adagrad momentum: epsilon must be positive')
    _check(exponent > 0, 'Adagrad momentum: Precondition exponent must >0')
    self.momentum = momentum
    self.use_nesterov = use_nesterov
    self.exponent = exponent
    self.beta2 = beta2
    self.epsilon = epsilon


class ProximalAdagradParameters(_OptimizationParameters):
  """Proximal Adagrad for TPU embeddings.

  Raises:
    ValueError: initial_accumulator not positive; a negative
      regularization strength.
  """

  def __init__(self, learning_rate: float, initial_accumulator: float = 0.1,
               l1_regularization_strength: float = 0.0,
               l2_regularization_strength: float = 0.0,
               use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))
    _check(initial_accumulator > 0, 'Adagrad initial_accumulator must be '
           f'positive. Received: {initial_accumulator}.')
    _check_regularization(l1_regularization_strength,
                          l2_regularization_strength)
    self.initial_accumulator = initial_accumulator
    self.l1_regularization_strength = l1_regularization_strength
    self.l2_regularization_strength = l2_regularization_strength


class AdamParameters(_OptimizationParameters):
  """Adam for TPU embeddings (tf.compat.v1.tpu.experimental's in 2.15).

  Raises:
    ValueError: beta1 or beta2 outside [0, 1); epsilon not positive; lazy
      Adam disabled without gradient accumulation.
  """

  def __init__(self, learning_rate: float, beta1: float = 0.9,
               beta2: float = 0.999, epsilon: float = 1e-08,
               lazy_adam: bool = True, sum_inside_sqrt: bool = True,
               use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))
    _check_betas(beta1, beta2, epsilon)
    _check(use_gradient_accumulation or lazy_adam,
           'When disabling Lazy Adam, gradient accumulation must be used.')
    self.beta1 = beta1
    self.beta2 = beta2
    self.epsilon = epsilon
    self.lazy_adam = lazy_adam
    self.sum_inside_sqrt = sum_inside_sqrt


class FtrlParameters(_OptimizationParameters):
  """FTRL for TPU embeddings (tf.compat.v1.tpu.experimental's in 2.15).

  Raises:
    ValueError: learning_rate_power above 0; a negative
      initial_accumulator_value or regularization strength.
  """

  def __init__(self, learning_rate: float, learning_rate_power: float = -0.5,
               initial_accumulator_value: float = 0.1,
               l1_regularization_strength: float = 0.0,
               l2_regularization_strength: float = 0.0,
               use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               multiply_linear_by_learning_rate: bool = False,
               beta: float = 0, allow_zero_accumulator: bool = False,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))
    _check(learning_rate_power <= 0., 'learning_rate_power must be less than '
           f'or equal to 0. got {learning_rate_power}.')
    _check(initial_accumulator_value >= 0., 'initial_accumulator_value must '
           f'be greater than or equal to 0. got {initial_accumulator_value}.')
    _check_regularization(l1_regularization_strength,
                          l2_regularization_strength)
    self.learning_rate_power = learning_rate_power
    self.initial_accumulator_value = initial_accumulator_value
    self.initial_linear_value = 0.0
    self.l1_regularization_strength = l1_regularization_strength
    self.l2_regularization_strength = l2_regularization_strength
    self.multiply_linear_by_learning_rate = multiply_linear_by_learning_rate
    self.beta = beta
    self.allow_zero_accumulator = allow_zero_accumulator


class ProximalYogiParameters(_OptimizationParameters):
  """Proximal Yogi for TPU embeddings.

  Raises:
    ValueError: beta1 or beta2 outside [0, 1); epsilon not positive; a
      negative regularization strength.
  """

  def __init__(self, learning_rate: float = 0.01, beta1: float = 0.9,
               beta2: float = 0.999, epsilon: float = 1e-3,
               l1_regularization_strength: float = 0.0,
               l2_regularization_strength: float = 0.0,
               initial_accumulator_value: float = 1e-6,
               use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))
    _check_betas(beta1, beta2, epsilon)
    _check_regularization(l1_regularization_strength,
                          l2_regularization_strength)
    self.beta1 = beta1
    self.beta2 = beta2
    self.epsilon = epsilon
    self.l1_regularization_strength = l1_regularization_strength
    self.l2_regularization_strength = l2_regularization_strength
    self.initial_accumulator_value = initial_accumulator_value


class MomentumParameters(_OptimizationParameters):
  """Momentum for TPU embeddings."""

  def __init__(self, learning_rate: float, momentum: float,
               use_nesterov: bool = False,
               use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))
    self.momentum = momentum
    self.use_nesterov = use_nesterov


class RMSPropParameters(_OptimizationParameters):
  """RMSProp for TPU embeddings."""

  def __init__(self, learning_rate: float, rho: float, momentum: float,
               epsilon: float, use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))
    self.rho = rho
    self.momentum = momentum
    self.epsilon = epsilon


class StochasticGradientDescentParameters(_OptimizationParameters):
  """SGD for TPU embeddings (tf.compat.v1.tpu.experimental's in 2.15)."""

  def __init__(self, learning_rate: float,
               use_gradient_accumulation: bool = True,
               clip_weight_min: Optional[float] = None,
               clip_weight_max: Optional[float] = None,
               weight_decay_factor: Optional[float] = None,
               multiply_weight_decay_factor_by_learning_rate: Optional[
                   bool] = None,
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    super().__init__(**_common(locals()))


class FrequencyEstimatorParameters(_OptimizationParameters):
  """The frequency estimator of TPU embeddings (learning rate 1)."""

  def __init__(self, tau: float, max_delta: float, outlier_threshold: float,
               weight_exponent: float):
    super().__init__(
        learning_rate=1.0, use_gradient_accumulation=True,
        clip_weight_min=None, clip_weight_max=None, weight_decay_factor=None,
        multiply_weight_decay_factor_by_learning_rate=None)
    self.tau = tau
    self.max_delta = max_delta
    self.outlier_threshold = outlier_threshold
    self.weight_exponent = weight_exponent


class TPUEmbedding:
  """TensorFlow 2.15's TPU embedding tables (on the TPU's embedding cores):
  refused, as they need TPU hardware."""

  def __init__(self, *args, **kwargs):
    del args, kwargs
    raise UserInputError(
        'tpu_embedding.TPUEmbedding: TPU embedding tables live on TPU '
        'hardware (and TensorFlow 2.16 removed this API); estimator_rt runs '
        'no TPU program: use TPUEstimator(use_tpu=False), where TPU '
        'embedding columns embed on the CPU, or tf.tpu.experimental.embedding'
        '.TPUEmbedding with a TPUStrategy.')


# ----------------------------------------------------------------------------
# tf.estimator 2.15's EmbeddingConfigSpec.

# pylint: disable=protected-access
_TPU_EMBEDDING_COLUMN_CLASSES = (tpu_fc._TPUEmbeddingColumn,
                                 tpu_fc._TPUSharedEmbeddingColumn,
                                 tpu_fc_v2._TPUEmbeddingColumnV2,
                                 tpu_fc_v2._TPUSharedEmbeddingColumnV2)
_TPU_DEVICE_SPECIFIC_EMBEDDING_COLUMNS = (
    tpu_fc_v2._TPUDeviceSpecificEmbeddingColumnV2,
    tpu_fc_v2._TPUSharedDeviceSpecificEmbeddingColumnV2)
_EMBEDDING_COLUMN_CLASSES = (fc_v1._EmbeddingColumn, fc_lib.EmbeddingColumn,
                             fc_v1._SharedEmbeddingColumn)
_SUPPORTED_FEATURE_COLUMNS = (fc_v1._NumericColumn, fc_lib.NumericColumn)
# pylint: enable=protected-access
_SUPPORTED_OPTIMIZERS = (ProximalAdagradParameters, AdagradParameters,
                         AdamParameters, FtrlParameters,
                         StochasticGradientDescentParameters,
                         MomentumParameters, RMSPropParameters)


def _runs_on_tensor_core(column) -> bool:
  return (isinstance(column, _TPU_DEVICE_SPECIFIC_EMBEDDING_COLUMNS) and
          column._embedding_lookup_device ==  # pylint: disable=protected-access
          tpu_fc_v2.EmbeddingDevice.TPU_TENSOR_CORE)


class EmbeddingConfigSpec(collections.namedtuple('EmbeddingConfigSpec', [
    'feature_columns', 'tensor_core_feature_columns',
    'optimization_parameters', 'clipping_limit',
    'pipeline_execution_with_tensor_core',
    'experimental_gradient_multiplier_fn', 'feature_to_config_dict',
    'table_to_config_dict', 'partition_strategy', 'profile_data_directory'])):
  """tf.estimator's spec of a TPUEstimator's TPU embeddings, validated as
  2.15 validated it: either `feature_columns` (TPU embedding columns, or
  columns a CPU embeds: embedding and numeric ones) with one of the
  supported optimizers' parameters, or the pair `feature_to_config_dict`
  and `table_to_config_dict`. The columns that look up on the TPU's tensor
  cores go to `tensor_core_feature_columns`, the others stay in
  `feature_columns`.

  Raises:
    ValueError: neither or both ways of naming the tables; a
      partition_strategy other than 'div' and 'mod'; unsupported
      optimization_parameters; a feature referring to a table not given.
    TypeError: an unsupported feature column, or a config of the wrong
      type.
  """

  def __new__(cls, feature_columns=None, optimization_parameters=None,
              clipping_limit=None, pipeline_execution_with_tensor_core=False,
              experimental_gradient_multiplier_fn=None,
              feature_to_config_dict=None, table_to_config_dict=None,
              partition_strategy='div', profile_data_directory=None):
    both_dicts = bool(feature_to_config_dict and table_to_config_dict)
    if bool(feature_columns) == both_dicts:
      raise UserInputError(
          'Exactly one of `feature_columns` and the pair '
          '`feature_to_config_dict` and `table_to_config_dict` must be be '
          'specified.')
    if partition_strategy not in ('div', 'mod'):
      raise UserInputError(f'Invalid partition_strategy {partition_strategy}.'
                           ' Must be one of "mod" or "div".')
    tensor_core_columns = embedding_core_columns = None
    if feature_columns:
      supported = (_SUPPORTED_FEATURE_COLUMNS + _TPU_EMBEDDING_COLUMN_CLASSES +
                   _EMBEDDING_COLUMN_CLASSES)
      tensor_core_columns = []
      embedding_core_columns = []
      for column in feature_columns:
        (tensor_core_columns if _runs_on_tensor_core(column) else
         embedding_core_columns).append(column)
        if not isinstance(column, supported):
          raise UserTypeError(
              f'All feature columns must be supported types in {supported}. '
              f'Got {type(column)}')
      if not isinstance(optimization_parameters, _SUPPORTED_OPTIMIZERS):
        raise UserInputError(
            'optimization_parameters must be an instance of type '
            f'{_SUPPORTED_OPTIMIZERS}. Got {type(optimization_parameters)}.')
    else:
      for feature, config in feature_to_config_dict.items():
        if not isinstance(config, FeatureConfig):
          raise UserTypeError(f'Config for feature {feature} must be of type '
                              f'`FeatureConfig`. Got {type(config)}')
        if config.table_id not in table_to_config_dict:
          raise UserInputError(
              f'Feature {feature} refers to table {config.table_id} which is '
              'not in the table_to_config_dict.')
      for table, config in table_to_config_dict.items():
        if not isinstance(config, TableConfig):
          raise UserTypeError(f'Config for table {table} must be of type '
                              f'`TableConfig`. Got {type(config)}')
    return super().__new__(
        cls, embedding_core_columns, tensor_core_columns,
        optimization_parameters, clipping_limit,
        pipeline_execution_with_tensor_core,
        experimental_gradient_multiplier_fn, feature_to_config_dict,
        table_to_config_dict, partition_strategy, profile_data_directory)
