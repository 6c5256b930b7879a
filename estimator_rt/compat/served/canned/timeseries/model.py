"""tf.estimator 2.15's `canned/timeseries/model`: the base class of time
series models (TF1 graph code), and the outputs of their loss."""

import abc
import collections

import tensorflow as tf

from estimator_rt.compat.served.canned.timeseries import math_utils
from estimator_rt.compat.served.canned.timeseries.feature_keys import TrainEvalFeatures

# What a model's loss definition returns: `loss` (the scalar to minimize),
# `end_state` (the model's state after the data, a nest), `predictions` (a
# dict of tensors, each shaped [batch, window, ...] as `prediction_times`)
# and `prediction_times` ([batch, window] integer times of the
# predictions).
ModelOutputs = collections.namedtuple(  # pylint: disable=invalid-name
    typename='ModelOutputs',
    field_names=['loss', 'end_state', 'predictions', 'prediction_times'])


class TimeSeriesModel(abc.ABC):
  """A generative time series model: a subclass gives its start state,
  its outputs on a batch from a state, and its predictions.

  Values go into the model scaled by the input statistics' overall moments
  (`_scale_data`) when it has statistics, and come out scaled back.
  """

  def __init__(self, num_features, exogenous_feature_columns=None,
               dtype=tf.float32):
    """A model of `num_features` features.

    Args:
      num_features: the number of features of the series.
      exogenous_feature_columns: feature columns of features the model reads
        but does not predict (given to tf.compat.v1.feature_column.
        input_layer).
      dtype: the floating-point dtype of the model.
    """
    self._exogenous_feature_columns = list(exogenous_feature_columns or [])
    self.num_features = num_features
    self.dtype = dtype
    self._input_statistics = None
    self._graph_initialized = False
    self._stats_means = None
    self._stats_sigmas = None

  @property
  def exogenous_feature_columns(self):
    """The feature columns of the features not predicted."""
    return self._exogenous_feature_columns

  def generate(self, number_of_series, series_length, model_parameters=None,
               seed=None):
    """Samples series from the model (a dict of TIMES [number_of_series,
    series_length] and VALUES [..., num_features]).

    Raises:
      NotImplementedError: here; a model that can generate overrides it.
    """
    raise NotImplementedError('This model does not support generation.')

  def initialize_graph(self, input_statistics=None):
    """Defines the model's ops; `input_statistics` (a
    math_utils.InputStatistics, or None for data-independent defaults)
    sets the scaling of values."""
    self._graph_initialized = True
    self._input_statistics = input_statistics
    if input_statistics:
      self._stats_means, variances = input_statistics.overall_feature_moments
      self._stats_sigmas = tf.sqrt(variances)

  def _scale_data(self, data):
    """Values on the input's scale -> the model's."""
    if self._input_statistics is None:
      return data
    return (data - self._stats_means) / self._stats_sigmas

  def _scale_variance(self, variance):
    """Variances on the input's scale -> the model's."""
    if self._input_statistics is None:
      return variance
    return variance / self._input_statistics.overall_feature_moments.variance

  def _scale_back_data(self, data):
    """Values on the model's scale -> the input's."""
    if self._input_statistics is None:
      return data
    return data * self._stats_sigmas + self._stats_means

  def _scale_back_variance(self, variance):
    """Variances on the model's scale -> the input's."""
    if self._input_statistics is None:
      return variance
    return variance * self._input_statistics.overall_feature_moments.variance

  def _check_graph_initialized(self):
    if not self._graph_initialized:
      raise ValueError(
          'TimeSeriesModels require initialize_graph() to be called before '
          'use. This defines variables and ops in the default graph, and '
          'allows Tensor-valued input statistics to be specified.')

  def define_loss(self, features, mode):
    """The model's outputs on `features`, each series of the batch starting
    from the start state.

    Args:
      features: a dict with TrainEvalFeatures.TIMES ([batch, window]
        integers), VALUES ([batch, window, num_features]) and the exogenous
        features.
      mode: a ModeKeys (TRAIN or EVAL).

    Returns:
      A ModelOutputs.

    Raises:
      ValueError: initialize_graph was not called.
    """
    self._check_graph_initialized()
    start_state = math_utils.replicate_state(
        start_state=self.get_start_state(),
        batch_size=tf.shape(features[TrainEvalFeatures.TIMES])[0])
    return self.get_batch_loss(features=features, mode=mode, state=start_state)

  @abc.abstractmethod
  def get_start_state(self):
    """The state at a series' start: a nest of tensors without a batch
    dimension (often variables learned with the model)."""

  @abc.abstractmethod
  def get_batch_loss(self, features, mode, state):
    """The ModelOutputs of the model on `features` (see define_loss) from
    `state` (a nest of [batch, ...] tensors)."""

  @abc.abstractmethod
  def predict(self, features):
    """A dict of predictions ([batch, window, ...]) for the times of
    `features` (PredictionFeatures.TIMES, increasing, after the state's),
    from its state (PredictionFeatures.STATE_TUPLE)."""

  def _get_exogenous_embedding_shape(self):
    """The shape (without the batch dimension) of what
    `_process_exogenous_features` embeds the exogenous features into."""
    if not self._exogenous_feature_columns:
      return (0,)
    with tf.Graph().as_default():
      serialized = tf.compat.v1.placeholder(shape=[None], dtype=tf.string)
      parsed = tf.compat.v1.io.parse_example(
          serialized=serialized,
          features=tf.compat.v1.feature_column.make_parse_example_spec(
              self._exogenous_feature_columns))
      embedded = tf.compat.v1.feature_column.input_layer(
          features=parsed, feature_columns=self._exogenous_feature_columns)
      return embedded.get_shape().as_list()[1:]

  def _process_exogenous_features(self, times, features):
    """The exogenous `features` ([batch, window, ...] each) embedded by the
    model's feature columns: [batch, window, embedding size] of the model's
    dtype, or None when the model has no exogenous features.

    Raises:
      ValueError: a feature of unknown rank.
    """
    if not self._exogenous_feature_columns:
      # None rather than an empty tensor: models then skip the updates (and
      # their side effects) of exogenous inputs.
      return None
    flat = {}
    for name, tensor in features.items():
      if tensor.get_shape().ndims is None:
        raise ValueError(
            f'Features with unknown rank are not supported. Got shape '
            f'{tensor.get_shape()} for feature {name}.')
      shape = tf.shape(tensor)
      # [batch, window, ...] -> [batch * window, ...]
      tensor = tf.reshape(tensor, tf.concat([[shape[0] * shape[1]],
                                             shape[2:]], axis=0))
      if tensor.get_shape().ndims == 1 and tensor.dtype != tf.string:
        # input_layer wants a numeric feature's rank to match its embedding.
        tensor = tensor[:, None]
      flat[name] = tensor
    embedded = tf.compat.v1.feature_column.input_layer(
        features=flat, feature_columns=self._exogenous_feature_columns,
        trainable=True)
    regressors = tf.reshape(
        embedded, tf.concat([tf.shape(times), tf.shape(embedded)[1:]],
                            axis=0))
    regressors.set_shape(times.get_shape().concatenate(
        embedded.get_shape()[1:]))
    return tf.cast(regressors, dtype=self.dtype)
