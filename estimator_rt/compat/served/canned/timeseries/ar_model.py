"""tf.estimator 2.15's `canned/timeseries/ar_model`: the autoregressive time
series model (`ARModel`) and its default prediction network
(`LSTMPredictionModel`), TF1 graph code as 2.15's models ran.

An ARModel reads windows of `input_window_size + output_window_size` times:
from the first `input_window_size` values (scaled by the input statistics),
the time features of the whole window (one per periodicity and time
bucket) and the exogenous features, a prediction network (a Keras model
made by `prediction_model_factory`) predicts the mean and covariance of the
last `output_window_size` values. Training minimizes the loss of one window
(the normal likelihood's negative, or the squared error, per value);
evaluation walks a longer window in non-overlapping output windows; the
model's state is its last input window (times, scaled values, exogenous
embeddings), which prediction continues from, `output_window_size` values
at a time, feeding each prediction back as input.

The prediction network is a Keras 2 (`tf_keras`) model, what `tf.keras`
was for tf.estimator 2.15 (and is under `python -m estimator_rt.compat`);
its variables are made under the variable scope `model/` (which strips the
enclosing scopes, so the network built inside prediction's while loop and
the one built for training share names).
"""

import math

import tensorflow as tf

from estimator_rt.canned import rnn as rnn_lib
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.compat.served.canned.timeseries import model
from estimator_rt.compat.served.canned.timeseries import model_utils
from estimator_rt.compat.served.canned.timeseries.feature_keys import PredictionFeatures
from estimator_rt.compat.served.canned.timeseries.feature_keys import TrainEvalFeatures

# The features an ARModel reads itself: every other feature is exogenous.
_NOT_EXOGENOUS = (TrainEvalFeatures.TIMES, TrainEvalFeatures.VALUES,
                  PredictionFeatures.STATE_TUPLE)
# The smallest variance the normal likelihood loss divides by.
_MIN_VARIANCE = 1e-5
_HALF_LOG_TWO_PI = 0.5 * math.log(2. * math.pi)


class LSTMPredictionModel(rnn_lib.keras().models.Model):
  """An encoder/decoder of two LSTMs: `ARModel`'s default prediction
  network.

  The encoder reads the input window's features; its final state starts the
  decoder, which reads the output window's features; two dense layers of
  `num_features` units map each decoder output to a predicted mean and a
  log-variance (the covariance is its exponential). It is called as
  `model(input_window_features, output_window_features)` and returns
  {'mean', 'covariance'}, each [batch, output window, num_features].
  """

  def __init__(self, num_features, input_window_size, output_window_size,
               num_units=128):
    """A network of `num_units` units per LSTM.

    Args:
      num_features: the number of features of the series (of each predicted
        mean and covariance).
      input_window_size: the number of past times read (not used: the
        network takes windows of any length; 2.15's factory signature).
      output_window_size: the number of times predicted (not used, as
        above).
      num_units: the units of the encoder's and the decoder's LSTM.
    """
    del input_window_size, output_window_size  # Any window length runs.
    super().__init__()
    layers = rnn_lib.keras().layers
    self._encoder = layers.LSTM(num_units, name='encoder', dtype=self.dtype,
                                return_state=True)
    self._decoder = layers.LSTM(num_units, name='decoder', dtype=self.dtype,
                                return_sequences=True)
    self._mean_transform = layers.Dense(num_features, name='mean_transform')
    self._covariance_transform = layers.Dense(
        num_features, name='covariance_transform')

  def call(self, input_window_features, output_window_features):  # pylint: disable=arguments-differ
    """{'mean', 'covariance'} of the output window (see the class
    docstring)."""
    _, state_h, state_c = self._encoder(input_window_features)
    decoded = self._decoder(output_window_features,
                            initial_state=[state_h, state_c])
    return {'mean': self._mean_transform(decoded),
            'covariance': tf.exp(self._covariance_transform(decoded))}


class ARModel(model.TimeSeriesModel):
  """An autoregressive model: a prediction network of windows of values,
  time features and exogenous features (see the module docstring).

  Time features: each periodicity `p` in `periodicities` is divided into
  `num_time_buckets` buckets of width `p / num_time_buckets`; a time `t`
  has, for each bucket, how far into the bucket `t % p` is (in bucket
  widths) if it falls into it, else 0. With periodicities (9, 12) and 3
  buckets, t = 17 has the six features (0, 0, 2/3) (17 % 9 = 8 is 2 into
  the third bucket, [6, 9), of width 3) and (0, 1/4, 0) (17 % 12 = 5 is 1
  into the second, [4, 8), of width 4). `input_window_size` may be 0 (the
  model then regresses on time features alone).

  The loss (`loss`) is per predicted value:
    - NORMAL_LIKELIHOOD_LOSS: the normal distribution's negative log
      likelihood, the covariance trained too;
    - SQUARED_LOSS: the squared error, on the scaled values in training and
      on the values as given in evaluation (`(observed - mean) ** 2`).
  """

  SQUARED_LOSS = 'squared_loss'
  NORMAL_LIKELIHOOD_LOSS = 'normal_likelihood_loss'

  def __init__(self, periodicities, input_window_size, output_window_size,
               num_features, prediction_model_factory=LSTMPredictionModel,
               num_time_buckets=10, loss=NORMAL_LIKELIHOOD_LOSS,
               exogenous_feature_columns=None):
    """An autoregressive model.

    Args:
      periodicities: a periodicity of the series, or a list (or tuple) of
        them, in the units of the times (24 for hourly data of daily
        cycles). None or empty for none.
      input_window_size: the number of past times the network reads (0 for
        none: then a periodicity is required).
      output_window_size: the number of times predicted at once (> 0).
      num_features: the number of features of the series.
      prediction_model_factory: called as `factory(num_features=...,
        input_window_size=..., output_window_size=...)` in each graph, it
        returns the Keras model the windows go through (called as
        `model(input_window_features, output_window_features)`, returning
        {'mean', 'covariance'}); LSTMPredictionModel by default
        (`functools.partial(LSTMPredictionModel, num_units=16)` to choose
        its size).
      num_time_buckets: the buckets each periodicity is divided into (> 0).
      loss: SQUARED_LOSS or NORMAL_LIKELIHOOD_LOSS (see the class
        docstring).
      exogenous_feature_columns: feature columns of the features the model
        reads but does not predict (`tf.feature_column.numeric_column(...)`,
        an embedding column, ...).

    Raises:
      AssertionError: a periodicity or `num_time_buckets` not positive,
        `output_window_size` not positive, or neither a periodicity nor an
        input window (2.15's asserts).
    """
    self._model_factory = prediction_model_factory
    self.input_window_size = input_window_size
    self.output_window_size = output_window_size
    self.window_size = input_window_size + output_window_size
    self.loss = loss
    super().__init__(num_features=num_features,
                     exogenous_feature_columns=exogenous_feature_columns)
    self.exogenous_size = (
        self._get_exogenous_embedding_shape()[-1]
        if exogenous_feature_columns is not None else 0)
    assert num_time_buckets > 0
    self._buckets = int(num_time_buckets)
    if not periodicities:
      periodicities = []
    elif not isinstance(periodicities, (list, tuple)):
      periodicities = [periodicities]
    self._periodicities = [int(p) for p in periodicities]
    for periodicity in self._periodicities:
      assert periodicity > 0
    assert self._periodicities or self.input_window_size
    assert output_window_size > 0

  def initialize_graph(self, input_statistics=None):
    """As the base class's, and makes this graph's prediction network."""
    super().initialize_graph(input_statistics=input_statistics)
    # The trailing slash drops the enclosing scopes: the network is called
    # inside prediction's while loop and outside it (training), and its
    # variables must have one name.
    self._model_scope = tf.compat.v1.variable_scope('model/',
                                                    use_resource=True)
    self._model_instance = self._model_factory(
        num_features=self.num_features,
        input_window_size=self.input_window_size,
        output_window_size=self.output_window_size)

  def get_start_state(self):
    """Zeros shaped as the state an evaluation returns (times, values,
    exogenous embeddings of `input_window_size` times): what a serving
    signature's state placeholders take their shapes and dtypes from."""
    return (tf.zeros([self.input_window_size], dtype=tf.int64),
            tf.zeros([self.input_window_size, self.num_features],
                     dtype=self.dtype),
            tf.zeros([self.input_window_size, self.exogenous_size],
                     dtype=self.dtype))

  def random_model_parameters(self, seed=None):
    """None: 2.15's ARModel drew no parameters (sampling was a TODO)."""
    del seed

  def generate(self, number_of_series, series_length, model_parameters=None,
               seed=None):
    """None: 2.15's ARModel generated no series (sampling was a TODO)."""
    del number_of_series, series_length, model_parameters, seed

  def _predicted_covariance_op(self, activations, num_values):
    """The covariance ([batch, output window, num_values]) from the last of
    `activations` ((tensor, size) pairs): the exponential of a dense layer
    'log_sigma_square' for the normal likelihood loss, else ones."""
    activation, activation_size = activations[-1]
    if self.loss == ARModel.NORMAL_LIKELIHOOD_LOSS:
      log_sigma_square = model_utils.fully_connected(
          activation, activation_size, self.output_window_size * num_values,
          name='log_sigma_square', activation=None)
      return tf.reshape(tf.exp(log_sigma_square),
                        [-1, self.output_window_size, num_values])
    shape = tf.stack([tf.shape(activation)[0],
                      tf.constant(self.output_window_size),
                      tf.constant(num_values)])
    return tf.ones(shape=shape, dtype=activation.dtype)

  def _predicted_mean_op(self, activations):
    """The mean ([batch, output window, num_features]): a dense layer
    'predicted_mean' of the last of `activations` ((tensor, size) pairs)."""
    activation, activation_size = activations[-1]
    mean = model_utils.fully_connected(
        activation, activation_size,
        self.output_window_size * self.num_features, name='predicted_mean',
        activation=None)
    return tf.reshape(mean, [-1, self.output_window_size, self.num_features])

  def prediction_ops(self, times, values, exogenous_regressors):
    """The prediction network's {'mean', 'covariance'} ([batch, output
    window, num_features] each) for one window.

    Args:
      times: [batch, window_size] integer times: the input window's, then
        the output window's.
      values: [batch, input_window_size, num_features] scaled values of the
        input window (unused without an input window).
      exogenous_regressors: [batch, window_size, exogenous_size] embedded
        exogenous features, or None.
    """
    times.get_shape().assert_is_compatible_with([None, self.window_size])
    batch_size = tf.shape(times)[0]
    if self.input_window_size:
      values.get_shape().assert_is_compatible_with(
          [None, self.input_window_size, self.num_features])
    if exogenous_regressors is not None:
      exogenous_regressors.get_shape().assert_is_compatible_with(
          [None, self.window_size, self.exogenous_size])
    inputs, input_size = [], 0
    outputs, output_size = [], 0
    if self._periodicities:
      _, time_features = self._compute_time_features(times)
      num_time_features = self._buckets * len(self._periodicities)
      time_features = tf.reshape(
          time_features, [batch_size, self.window_size, num_time_features])
      input_times, output_times = tf.split(
          time_features, (self.input_window_size, self.output_window_size),
          axis=1)
      inputs.append(input_times)
      outputs.append(output_times)
      input_size += num_time_features
      output_size += num_time_features
    if self.input_window_size:
      window = tf.slice(values, [0, 0, 0], [-1, self.input_window_size, -1])
      inputs.append(tf.reshape(
          window, [batch_size, self.input_window_size, self.num_features]))
      input_size += self.num_features
    if self.exogenous_size:
      input_exogenous, output_exogenous = tf.split(
          exogenous_regressors,
          (self.input_window_size, self.output_window_size), axis=1)
      inputs.append(input_exogenous)
      outputs.append(output_exogenous)
      input_size += self.exogenous_size
      output_size += self.exogenous_size
    assert inputs
    input_window_features = tf.concat(inputs, axis=2)
    if outputs:
      output_window_features = tf.concat(outputs, axis=2)
    else:
      output_window_features = tf.zeros(
          [batch_size, self.output_window_size, 0], dtype=self.dtype)
    static_batch_size = times.get_shape().dims[0].value
    input_window_features.set_shape(
        [static_batch_size, self.input_window_size, input_size])
    output_window_features.set_shape(
        [static_batch_size, self.output_window_size, output_size])
    return self._output_window_predictions(input_window_features,
                                           output_window_features)

  def _output_window_predictions(self, input_window_features,
                                 output_window_features):
    """The network's predictions, shaped [None, output window,
    num_features]."""
    with self._model_scope:
      predictions = self._model_instance(input_window_features,
                                         output_window_features)
      for prediction in predictions.values():
        prediction.set_shape([None, self.output_window_size,
                              self.num_features])
      return predictions

  def loss_op(self, targets, prediction_ops):
    """The loss per value of `prediction_ops` ({'mean'[, 'covariance']})
    against `targets`: the normal's negative log likelihood (variance at
    least 1e-5) or the squared error, summed then divided by the number of
    values."""
    prediction = prediction_ops['mean']
    if self.loss == ARModel.NORMAL_LIKELIHOOD_LOSS:
      sigma = tf.sqrt(tf.maximum(prediction_ops['covariance'],
                                 _MIN_VARIANCE))
      loss = -tf.reduce_sum(_normal_log_prob(
          value=prediction, loc=targets, scale=sigma))
    else:
      assert self.loss == ARModel.SQUARED_LOSS, self.loss
      loss = tf.reduce_sum(tf.square(prediction - targets))
    return loss / tf.cast(tf.reduce_prod(tf.shape(targets)), loss.dtype)

  def _process_exogenous_features(self, times, features):
    """The base class's embedding, or without exogenous features a
    [batch, window, 0] tensor (so that nothing downstream special-cases
    them)."""
    embedded = super()._process_exogenous_features(times=times,
                                                   features=features)
    if embedded is not None:
      return embedded
    assert self.exogenous_size == 0
    return tf.zeros(tf.concat([tf.shape(times), tf.constant([0])], axis=0))

  def predict(self, features):
    """{'mean', 'covariance'} ([batch, len(times), num_features]) at the
    times of `features`, predicted `output_window_size` times at a time
    from the state, each window's mean fed back as the next's input.

    Args:
      features: a dict of PredictionFeatures.TIMES ([batch, window]
        integers after the state's times), PredictionFeatures.STATE_TUPLE
        ((times [batch, >= input_window_size], scaled values [batch, same,
        num_features], exogenous embeddings [batch, same, exogenous_size]),
        as an evaluation's end state) and the exogenous features shaped
        [batch, window, ...].
    """
    if not self._graph_initialized:
      self.initialize_graph()
    predict_times = tf.cast(
        tf.convert_to_tensor(features[PredictionFeatures.TIMES]), tf.int32)
    exogenous = self._process_exogenous_features(
        times=predict_times, features=_exogenous_of(features))
    with tf.control_dependencies([tf.compat.v1.debugging.assert_equal(
        tf.shape(predict_times)[1], tf.shape(exogenous)[1])]):
      exogenous = tf.identity(exogenous)
    batch_size = tf.shape(predict_times)[0]
    num_predict_values = tf.shape(predict_times)[1]
    iterations = ((num_predict_values + self.output_window_size - 1) //
                  self.output_window_size)
    # Padded to whole output windows; the padding's predictions are cut.
    padding = iterations * self.output_window_size - num_predict_values
    predict_times = tf.pad(predict_times, [[0, 0], [0, padding]])
    exogenous = tf.pad(exogenous, [[0, 0], [0, padding], [0, 0]])
    state_times, state_values, state_exogenous = features[
        PredictionFeatures.STATE_TUPLE]
    state_times = tf.cast(tf.convert_to_tensor(state_times), tf.int32)
    state_values = tf.convert_to_tensor(state_values, dtype=self.dtype)
    state_exogenous = tf.convert_to_tensor(state_exogenous, dtype=self.dtype)

    first_times = predict_times[:, :self.output_window_size]
    first_exogenous = exogenous[:, :self.output_window_size, :]
    if self.input_window_size > 0:
      first_times = tf.concat(
          [state_times[:, -self.input_window_size:], first_times], 1)
      values_size = tf.shape(state_values)[1]
      with tf.control_dependencies([
          tf.compat.v1.debugging.assert_greater_equal(
              values_size, self.input_window_size),
          tf.compat.v1.debugging.assert_equal(values_size,
                                              tf.shape(state_times)[1])]):
        first_values = state_values[:, -self.input_window_size:, :]
        first_exogenous = tf.concat(
            [state_exogenous[:, -self.input_window_size:, :],
             first_exogenous[:, :self.output_window_size, :]], axis=1)
    else:
      first_values = 0

    def condition(iteration, *unused):
      return tf.less(iteration, iterations)

    def body(iteration, input_times, input_values, input_exogenous, mean_ta,
             covariance_ta):
      """Predicts one output window; the next window's inputs."""
      predicted = self.prediction_ops(input_times, input_values,
                                      input_exogenous)
      mean = predicted['mean']
      # The last iteration's next window is never used: it repeats the
      # last window rather than reading past the padded times.
      offset = self.output_window_size * tf.minimum(iteration + 1,
                                                    iterations - 1)
      next_output = slice(offset, offset + self.output_window_size)
      if self.input_window_size == 0:
        next_values = input_values
        next_exogenous = exogenous[:, next_output, :]
        next_times = predict_times[:, next_output]
      elif self.output_window_size < self.input_window_size:
        next_values = tf.concat(
            [input_values[:, self.output_window_size:, :], mean], 1)
        next_exogenous = tf.concat(
            [input_exogenous[:, -self.input_window_size:, :],
             exogenous[:, next_output, :]], axis=1)
        next_times = tf.concat(
            [input_times[:, -self.input_window_size:],
             predict_times[:, next_output]], 1)
      else:
        # The input window is all predictions (and their times).
        next_window = slice(offset - self.input_window_size,
                            offset + self.output_window_size)
        next_values = mean[:, -self.input_window_size:, :]
        next_exogenous = exogenous[:, next_window, :]
        next_times = predict_times[:, next_window]
      next_times.set_shape(first_times.get_shape())
      next_exogenous.set_shape(first_exogenous.get_shape())
      if isinstance(covariance_ta, tf.TensorArray):
        covariance_ta = covariance_ta.write(iteration,
                                            predicted['covariance'])
      return (iteration + 1, next_times, next_values, next_exogenous,
              mean_ta.write(iteration, mean), covariance_ta)

    # The squared loss predicts no covariance: a placeholder 0. in the loop
    # (which takes no None).
    covariance_ta = (tf.TensorArray(dtype=self.dtype, size=iterations)
                     if self.loss != ARModel.SQUARED_LOSS else 0.)
    mean_ta = tf.TensorArray(dtype=self.dtype, size=iterations)
    _, _, _, _, mean_ta, covariance_ta = tf.compat.v1.while_loop(
        condition, body, [0, first_times, first_values, first_exogenous,
                          mean_ta, covariance_ta])

    def stacked(windows_ta):
      """[batch, num_predict_values, features] of the windows, or None."""
      if not isinstance(windows_ta, tf.TensorArray):
        return None
      # [iterations, batch, output window, features] -> batch first.
      windows = tf.transpose(windows_ta.stack(), [1, 0, 2, 3])
      return tf.reshape(windows, tf.stack(
          [batch_size, iterations * self.output_window_size, -1]))[
              :, :num_predict_values, :]

    mean = stacked(mean_ta)
    covariance = stacked(covariance_ta)
    if covariance is None:
      covariance = tf.ones_like(mean)
    return {'mean': self._scale_back_data(mean),
            'covariance': self._scale_back_variance(covariance)}

  def _process_window(self, features, mode, exogenous_regressors):
    """The model.ModelOutputs of one window ([batch, window_size] times):
    the loss of its output window, the predictions ('mean', 'covariance',
    'observed': the values as given) and its last input window as state.

    Raises:
      ValueError: the times' static window is not `window_size`.
    """
    times = tf.cast(features[TrainEvalFeatures.TIMES], tf.int64)
    values = tf.cast(features[TrainEvalFeatures.VALUES], dtype=self.dtype)
    exogenous_regressors = tf.cast(exogenous_regressors, dtype=self.dtype)
    observed = values
    if not times.get_shape().is_compatible_with([None, self.window_size]):
      raise ValueError(
          f'ARModel with input_window_size={self.input_window_size} and '
          f'output_window_size={self.output_window_size} expects feature '
          f"'{TrainEvalFeatures.TIMES}' to have shape (batch_size, "
          f'{self.window_size}) (for any batch_size), but got shape '
          f'{times.get_shape()}. If you are using RandomWindowInputFn, set '
          f'window_size={self.window_size} or adjust the input_window_size '
          'and output_window_size arguments to ARModel.')
    values = self._scale_data(values)
    input_values = (values[:, :self.input_window_size, :]
                    if self.input_window_size > 0 else None)
    predicted = self.prediction_ops(times, input_values, exogenous_regressors)
    targets = tf.slice(values, [0, self.input_window_size, 0], [-1, -1, -1])
    targets.get_shape().assert_is_compatible_with(
        predicted['mean'].get_shape())
    if mode == ModeKeys.EVAL and self.loss == ARModel.SQUARED_LOSS:
      # Evaluation reports the squared error of the values as given (the
      # training loss stays on the scaled values).
      loss = self.loss_op(self._scale_back_data(targets),
                          {'mean': self._scale_back_data(predicted['mean'])})
    else:
      loss = self.loss_op(targets, predicted)
    input_window = slice(-self.input_window_size, None)
    return model.ModelOutputs(
        loss=loss,
        end_state=(times[:, input_window], values[:, input_window, :],
                   exogenous_regressors[:, input_window, :]),
        predictions={
            'mean': self._scale_back_data(predicted['mean']),
            'covariance': self._scale_back_variance(predicted['covariance']),
            'observed': observed[:, -self.output_window_size:],
        },
        prediction_times=times[:, -self.output_window_size:])

  def get_batch_loss(self, features, mode, state):
    """The model.ModelOutputs of `features`.

    TRAIN takes one window of `window_size` times. EVAL takes a window of at
    least `window_size` times and predicts as many non-overlapping output
    windows after the first input window as fit, dropping times at the
    start that do not fill one: the loss is the windows' mean, the end state
    the last `input_window_size` times of `state` followed by the window.

    Args:
      features: a dict of TrainEvalFeatures.TIMES ([batch, window]),
        VALUES ([batch, window, num_features]) and the exogenous features
        ([batch, window, ...]).
      mode: ModeKeys.TRAIN or ModeKeys.EVAL.
      state: the state before the window ((times, scaled values, exogenous
        embeddings), [batch, input_window_size, ...]); EVAL only.

    Raises:
      ValueError: another mode, or a window too short to evaluate (or not
        `window_size` to train).
    """
    features = {name: tf.convert_to_tensor(value)
                for name, value in features.items()}
    times = features[TrainEvalFeatures.TIMES]
    exogenous = self._process_exogenous_features(
        times=times, features=_exogenous_of(features))
    if mode == ModeKeys.TRAIN:
      # One window: iterating over longer ones would bias training.
      return self._process_window(features, mode=mode,
                                  exogenous_regressors=exogenous)
    if mode != ModeKeys.EVAL:
      raise ValueError(f"Unknown mode '{mode}' passed to get_batch_loss.")
    return self._evaluate_windows(features, exogenous, state)

  def _evaluate_windows(self, features, exogenous, state):
    """EVAL's model.ModelOutputs (see get_batch_loss)."""
    times = features[TrainEvalFeatures.TIMES]
    times.get_shape().assert_has_rank(2)
    static_window = times.get_shape().dims[1].value
    if static_window is not None and static_window < self.window_size:
      raise ValueError(
          'ARModel requires a window of at least input_window_size + '
          'output_window_size to evaluate on (input_window_size='
          f'{self.input_window_size}, output_window_size='
          f'{self.output_window_size}, and got shape {times.get_shape()} for '
          f"feature '{TrainEvalFeatures.TIMES}' (batch size, window size)).")
    iterations = ((tf.shape(times)[1] - self.input_window_size) //
                  self.output_window_size)
    output_size = iterations * self.output_window_size
    # Whole output windows: what does not fill one at the start is dropped.
    crop = output_size + self.input_window_size
    features = {name: value[:, -crop:] for name, value in features.items()}

    def condition(iteration, *unused):
      return iteration < iterations

    def body(iteration, loss_ta, mean_ta, covariance_ta):
      """One window's outputs (windows do not depend on each other)."""
      start = iteration * self.output_window_size
      window = slice(start, start + self.window_size)
      outputs = self._process_window(
          features={name: value[:, window]
                    for name, value in features.items()},
          mode=ModeKeys.EVAL, exogenous_regressors=exogenous[:, window])
      return (iteration + 1, loss_ta.write(iteration, outputs.loss),
              mean_ta.write(iteration, outputs.predictions['mean']),
              covariance_ta.write(iteration,
                                  outputs.predictions['covariance']))

    _, loss_ta, mean_ta, covariance_ta = tf.compat.v1.while_loop(
        condition, body,
        [0] + [tf.TensorArray(dtype=self.dtype, size=iterations)
               for _ in range(3)])
    values = tf.cast(features[TrainEvalFeatures.VALUES], dtype=self.dtype)
    batch_size = tf.shape(times)[0]
    prediction_shape = [batch_size, output_size, self.num_features]
    state_times, state_values, state_exogenous = state
    if self.input_window_size > 0:
      # The last input_window_size times of state + window, however short
      # the window.
      window = slice(-self.input_window_size, None)
      end_times = tf.concat([state_times, tf.cast(times, tf.int64)],
                            axis=1)[:, window]
      end_times.set_shape((None, self.input_window_size))
      end_values = tf.concat([state_values, self._scale_data(values)],
                             axis=1)[:, window, :]
      end_values.set_shape((None, self.input_window_size, self.num_features))
      end_exogenous = tf.concat([state_exogenous, exogenous],
                                axis=1)[:, window, :]
      end_exogenous.set_shape(
          (None, self.input_window_size, self.exogenous_size))
    else:
      # No state to keep (and [-0:] would keep everything).
      end_times, end_values, end_exogenous = state

    def batch_first(windows_ta):
      return tf.reshape(tf.transpose(windows_ta.stack(), [1, 0, 2, 3]),
                        prediction_shape)

    return model.ModelOutputs(
        loss=tf.reduce_mean(loss_ta.stack(), axis=0),
        end_state=(end_times, end_values, end_exogenous),
        predictions={'mean': batch_first(mean_ta),
                     'covariance': batch_first(covariance_ta),
                     'observed': values[:, -output_size:]},
        prediction_times=times[:, -output_size:])

  def _compute_time_features(self, time):
    """(time / periodicities, the bucket features [batch, window,
    periodicities, buckets]) of `time` (see the class docstring)."""
    batch_size = tf.shape(time)[0]
    periods = tf.constant(self._periodicities,
                          shape=[1, 1, len(self._periodicities), 1],
                          dtype=time.dtype)
    time = tf.reshape(time, [batch_size, -1, 1, 1])
    window_offset = time / self._periodicities
    # The phase in units of buckets: [0, num_time_buckets).
    phase = (tf.cast(time % periods, self.dtype) * self._buckets /
             tf.cast(periods, self.dtype))
    bucket_starts = tf.reshape(tf.range(self._buckets, dtype=self.dtype),
                               [1, 1, 1, self._buckets])
    # For bucket [a, a + 1): phase - a inside it, else 0.
    into_bucket = tf.nn.relu(phase - bucket_starts)
    into_bucket = tf.where(into_bucket < 1.0, into_bucket,
                           tf.zeros_like(into_bucket))
    return window_offset, into_bucket


def _exogenous_of(features):
  """The exogenous features of `features`: all but times, values, state."""
  return {key: value for key, value in features.items()
          if key not in _NOT_EXOGENOUS}


def _normal_log_prob(*, value, loc, scale):
  """The log density of Normal(loc, scale) at `value`, computed as
  tf.compat.v1.distributions.Normal.log_prob computed it."""
  z = (value - loc) / scale
  return -0.5 * tf.square(z) - (_HALF_LOG_TWO_PI + tf.math.log(scale))
