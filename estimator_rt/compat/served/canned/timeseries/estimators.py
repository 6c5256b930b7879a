"""tf.estimator 2.15's `canned/timeseries/estimators`: the time series
estimators, `TimeSeriesRegressor` (any TimeSeriesModel) and
`LSTMAutoRegressor` (an ARModel with an LSTM prediction network).

Each is a canned estimator (estimator_rt/canned/base.py: always the graph
engine) whose model_fn is its head's `create_estimator_spec` (head.py):

  - train: the input_fn gives windows, {'times': [batch, window],
    'values': [batch, window, num_features], exogenous features}, and the
    optimizer minimizes the model's loss (the input statistics, kept in
    variables, updated from each batch first);
  - evaluate: 2.15's metrics: `loss` and `average_loss`, and the last
    batch's in-sample predictions (an ARModel's 'mean', 'covariance',
    'observed'), their `times` and the model's end state (`start_tuple`,
    which `saved_model_utils.predict_continuation` continues from; not for
    LSTMAutoRegressor, whose head keeps no state);
  - predict: from a fed state (features 'times' and 'start_tuple', as an
    evaluation's), the model's predictions at the times;
  - export_saved_model with `build_raw_serving_input_receiver_fn()`:
    three signatures, predict (`serving_default`), `filter` and
    `cold_start_filter`, over a state flattened into `model_state_<n>`
    inputs (saved_model_utils runs them); LSTMAutoRegressor's head exports
    one stateless signature, fed with
    `build_one_shot_parsing_serving_input_receiver_fn`'s tf.Examples.
"""

import functools

import tensorflow as tf

from estimator_rt import export as export_lib
from estimator_rt.canned import base
from estimator_rt.compat.served.canned import optimizers
from estimator_rt.compat.served.canned.timeseries import ar_model
from estimator_rt.compat.served.canned.timeseries import feature_keys
from estimator_rt.compat.served.canned.timeseries import head as ts_head_lib
from estimator_rt.compat.served.canned.timeseries import math_utils
from estimator_rt.compat.served.canned.timeseries import state_management

# 2.15's optimizers: TimeSeriesRegressor's default, and the learning rate of
# an optimizer LSTMAutoRegressor is given by name.
_DEFAULT_LEARNING_RATE = 0.02
_LSTM_LEARNING_RATE = 0.01


class TimeSeriesRegressor(base.CannedEstimator):
  """An Estimator that fits, evaluates, predicts with and exports a time
  series model (see the module docstring)."""

  def __init__(self, model, state_manager=None, optimizer=None,
               model_dir=None, config=None,
               head_type=ts_head_lib.TimeSeriesRegressionHead):
    """An estimator of `model`.

    Args:
      model: the model.TimeSeriesModel (an ar_model.ARModel, ...).
      state_manager: the state manager; None for FilteringOnlyStateManager
        with an ARModel, else PassthroughStateManager.
      optimizer: the tf.compat.v1.train optimizer training minimizes with;
        None for Adam of learning rate 0.02.
      model_dir: see `Estimator`.
      config: see `Estimator` (a RunConfig).
      head_type: the head's class (TimeSeriesRegressionHead, or a subclass
        such as OneShotPredictionHead), made with `model`, `state_manager`,
        `optimizer` and `input_statistics_generator`.
    """
    input_statistics_generator = math_utils.InputStatisticsFromMiniBatch(
        dtype=model.dtype, num_features=model.num_features)
    if state_manager is None:
      state_manager = (state_management.FilteringOnlyStateManager()
                       if isinstance(model, ar_model.ARModel) else
                       state_management.PassthroughStateManager())
    if optimizer is None:
      optimizer = tf.compat.v1.train.AdamOptimizer(_DEFAULT_LEARNING_RATE)
    self._model = model
    ts_regression_head = head_type(
        model=model, state_manager=state_manager, optimizer=optimizer,
        input_statistics_generator=input_statistics_generator)
    super().__init__(model_fn=ts_regression_head.create_estimator_spec,
                     model_dir=model_dir, config=config)

  def _model_start_state_placeholders(self, batch_size_tensor,
                                      static_batch_size=None):
    """{'model_state_<n>': a placeholder with default}: each flattened
    piece of the model's start state, defaulting to zeros repeated
    `batch_size_tensor` times (what an export is fed when it is not fed a
    state)."""
    # The state's shapes and dtypes need the model's graph: a scratch one,
    # of which only static values are kept.
    with tf.Graph().as_default():
      self._model.initialize_graph()
      start_state = tf.nest.map_structure(
          lambda state: tf.get_static_value(tf.zeros_like(state)),
          self._model.get_start_state())
    placeholders = {}
    for name, state in ts_head_lib.state_to_dictionary(start_state).items():
      default = tf.tile(
          state[None, ...],
          multiples=tf.concat([batch_size_tensor[None],
                               tf.ones(len(state.shape), dtype=tf.int32)],
                              axis=0))
      placeholders[name] = tf.compat.v1.placeholder_with_default(
          input=default, name=name,
          shape=tf.TensorShape((static_batch_size,)).concatenate(
              state.shape))
    return placeholders

  def build_one_shot_parsing_serving_input_receiver_fn(
      self, filtering_length, prediction_length, default_batch_size=None,
      values_input_dtype=None, truncate_values=False):
    """A serving_input_receiver_fn taking serialized tf.Examples, for a
    head that exports one stateless signature (OneShotPredictionHead).

    Each tf.Example has 'times' (filtering_length + prediction_length
    integers), 'values' (filtering_length * num_features floats; with
    `truncate_values`, filtering_length + prediction_length of them, the
    first filtering_length used) and the exogenous features (one per
    time). The model filters the values, then predicts the remaining times.

    Args:
      filtering_length: the number of times with values.
      prediction_length: the number of times predicted.
      default_batch_size: the examples' static batch size, or None for any.
      values_input_dtype: the values' dtype in the tf.Examples (float32, the
        default, or int64), cast to the model's.
      truncate_values: whether the tf.Examples hold values for every time.

    Returns:
      The serving_input_receiver_fn (its receiver's input: 'examples').
    """
    if values_input_dtype is None:
      values_input_dtype = tf.float32
    all_times = filtering_length + prediction_length
    values_length = all_times if truncate_values else filtering_length
    times_key = feature_keys.TrainEvalFeatures.TIMES
    values_key = feature_keys.TrainEvalFeatures.VALUES

    def _serving_input_receiver_fn():
      spec = tf.compat.v1.feature_column.make_parse_example_spec(
          list(self._model.exogenous_feature_columns) + [
              tf.feature_column.numeric_column(key=times_key,
                                               dtype=tf.int64),
              tf.feature_column.numeric_column(
                  key=values_key, dtype=values_input_dtype,
                  shape=(self._model.num_features,))])
      per_time_spec = {}
      for key, feature_spec in spec.items():
        if isinstance(feature_spec, tf.io.FixedLenFeature):
          length = values_length if key == values_key else all_times
          per_time_spec[key] = feature_spec._replace(
              shape=(length,) + tuple(feature_spec.shape))
        elif feature_spec.dtype == tf.string:
          per_time_spec[key] = tf.io.FixedLenFeature(shape=(all_times,),
                                                     dtype=tf.string)
        else:
          raise ValueError(
              f'VarLenFeatures not supported, got {feature_spec} for key '
              f'{key}')
      examples = tf.compat.v1.placeholder(
          shape=[default_batch_size], dtype=tf.string, name='input')
      features = tf.compat.v1.io.parse_example(serialized=examples,
                                               features=per_time_spec)
      features[times_key] = tf.squeeze(features[times_key], axis=-1)
      features[values_key] = tf.cast(
          features[values_key], dtype=self._model.dtype)[:, :filtering_length]
      features.update(self._model_start_state_placeholders(
          batch_size_tensor=tf.shape(features[times_key])[0],
          static_batch_size=default_batch_size))
      return export_lib.ServingInputReceiver(features, {'examples': examples})

    return _serving_input_receiver_fn

  def build_raw_serving_input_receiver_fn(self, default_batch_size=None,
                                          default_series_length=None):
    """A serving_input_receiver_fn of placeholders: 'times' ([batch,
    length] int64), 'values' ([batch, length, num_features], defaulting to
    an empty batch: prediction reads none), one per exogenous feature
    ([batch, length, ...] as its column parses) and the flattened state
    ('model_state_<n>', defaulting to the start state).

    Args:
      default_batch_size: the static batch size, or None for any.
      default_series_length: the static series length, or None for any.

    Returns:
      The serving_input_receiver_fn (its receiver tensors are its
      features).
    """
    times_key = feature_keys.TrainEvalFeatures.TIMES
    values_key = feature_keys.TrainEvalFeatures.VALUES

    def _serving_input_receiver_fn():
      placeholders = {}
      times = tf.compat.v1.placeholder(
          name=times_key, dtype=tf.int64,
          shape=[default_batch_size, default_series_length])
      placeholders[times_key] = times
      placeholders[values_key] = tf.compat.v1.placeholder_with_default(
          name=values_key,
          input=tf.zeros(
              shape=[default_batch_size or 0, default_series_length or 0,
                     self._model.num_features],
              dtype=self._model.dtype),
          shape=(default_batch_size, default_series_length,
                 self._model.num_features))
      for key, (shape, dtype) in _exogenous_parsed_shapes(
          self._model.exogenous_feature_columns).items():
        placeholders[key] = tf.compat.v1.placeholder(
            dtype=dtype, name=key,
            shape=[default_batch_size, default_series_length] + shape[1:])
      placeholders.update(self._model_start_state_placeholders(
          tf.shape(times)[0], static_batch_size=default_batch_size))
      return export_lib.ServingInputReceiver(placeholders, placeholders)

    return _serving_input_receiver_fn


def _exogenous_parsed_shapes(columns):
  """{feature key: (its parsed shape as a list, [batch, ...], dtype)} of
  the exogenous `columns` (parsed in a scratch graph)."""
  if not columns:
    return {}
  with tf.Graph().as_default():
    parsed = tf.compat.v1.io.parse_example(
        serialized=tf.compat.v1.placeholder(shape=[None], dtype=tf.string),
        features=tf.compat.v1.feature_column.make_parse_example_spec(columns))
    return {key: (value.get_shape().with_rank_at_least(1).as_list(),
                  value.dtype) for key, value in parsed.items()}


class LSTMAutoRegressor(TimeSeriesRegressor):
  """A TimeSeriesRegressor of an ARModel whose prediction network is an
  LSTMPredictionModel: windows of `input_window_size +
  output_window_size` times (the input_fn's window size), time features of
  `num_timesteps` buckets per periodicity (see ar_model.ARModel), and the
  one-shot head (OneShotPredictionHead: its export filters and predicts in
  one stateless call; its evaluation keeps no end state).
  """

  def __init__(self, periodicities, input_window_size, output_window_size,
               model_dir=None, num_features=1, extra_feature_columns=None,
               num_timesteps=10, loss=ar_model.ARModel.NORMAL_LIKELIHOOD_LOSS,
               num_units=128, optimizer='Adam', config=None):
    """An LSTM autoregressive estimator.

    Args:
      periodicities: a periodicity of the series or a list of them, in the
        units of the times.
      input_window_size: the number of past times the network reads.
      output_window_size: the number of times it predicts at once.
      model_dir: see `Estimator`.
      num_features: the number of features of the series.
      extra_feature_columns: feature columns of exogenous features.
      num_timesteps: the time buckets of each periodicity.
      loss: ARModel.NORMAL_LIKELIHOOD_LOSS or ARModel.SQUARED_LOSS.
      num_units: the units of the encoder's and decoder's LSTM.
      optimizer: an optimizer name ('Adam', ... with learning rate 0.01), a
        tf.compat.v1.train optimizer, or a callable returning one.
      config: see `Estimator` (a RunConfig).
    """
    optimizer = optimizers.get_optimizer_instance(
        optimizer, learning_rate=_LSTM_LEARNING_RATE)
    model = ar_model.ARModel(
        periodicities=periodicities, input_window_size=input_window_size,
        output_window_size=output_window_size, num_features=num_features,
        exogenous_feature_columns=extra_feature_columns,
        num_time_buckets=num_timesteps, loss=loss,
        prediction_model_factory=functools.partial(
            ar_model.LSTMPredictionModel, num_units=num_units))
    super().__init__(
        model=model,
        state_manager=state_management.FilteringOnlyStateManager(),
        optimizer=optimizer, model_dir=model_dir, config=config,
        head_type=ts_head_lib.OneShotPredictionHead)
