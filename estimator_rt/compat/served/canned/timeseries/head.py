"""tf.estimator 2.15's `canned/timeseries/head`: the heads of time series
models, which turn a model, a state manager and an optimizer into a
model_fn's EstimatorSpec (TF1 graph code).

`TimeSeriesRegressionHead.create_estimator_spec(features, mode)` checks
the features, then in TRAIN minimizes the model's loss; in EVAL reports
the loss and, as metrics, the last batch's in-sample predictions, times
and end state; in PREDICT predicts from a fed state, or (fed flattened
state, `model_state_<n>` features, as an export's signatures take it)
builds the serving signatures: predict, filter (state + data -> state)
and cold-start filter. `OneShotPredictionHead` exports one stateless
signature that filters from the start state and predicts.
"""

import re

import tensorflow as tf

from estimator_rt.core.export_outputs import PredictOutput
from estimator_rt.estimator.head import v1_head
from estimator_rt.estimator.head.keys import MetricKeys
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec
from estimator_rt.compat.served.canned.timeseries import feature_keys

_STATE_KEY_RE = re.compile(
    '^' + re.escape(feature_keys.State.STATE_PREFIX) + r'_(\d+)$')


class _NoStatePredictOutput(PredictOutput):
  """A predict signature that takes none of the state features (those
  named with feature_keys.State.STATE_PREFIX)."""

  def signature_def(self, receiver_tensors):
    return super().signature_def({
        key: value for key, value in receiver_tensors.items()
        if not key.startswith(feature_keys.State.STATE_PREFIX)})


class TimeSeriesRegressionHead(v1_head.V1Head):
  """The head of a time series model: checks features and makes the
  EstimatorSpec of each mode (see the module docstring)."""

  def __init__(self, model, state_manager, optimizer,
               input_statistics_generator=None, name=None):
    """A head over `model`.

    Args:
      model: a model.TimeSeriesModel (or an object with its methods).
      state_manager: a state_management state manager.
      optimizer: the tf.compat.v1.train optimizer training minimizes with.
      input_statistics_generator: None, or a
        math_utils.InputStatisticsFromMiniBatch the model is given the
        statistics of.
      name: the head's name (summary keys get '/name'), or None.
    """
    self.model = model
    self.state_manager = state_manager
    self.optimizer = optimizer
    self.input_statistics_generator = input_statistics_generator
    self._name = name

  @property
  def name(self):
    return self._name

  @property
  def logits_dimension(self):
    return 1

  def create_loss(self, features, mode, logits=None, labels=None):
    """The state manager's model.ModelOutputs on `features`, its loss
    summarized."""
    del logits, labels  # The model computes its own loss.
    outputs = self.state_manager.define_loss(self.model, features, mode)
    tf.compat.v1.summary.scalar(
        v1_head.summary_key(self._name, MetricKeys.LOSS), outputs.loss)
    return outputs

  def _train_ops(self, features):
    """The TRAIN spec: the optimizer minimizes the model's loss."""
    # Resource variables: concurrent updates do not race.
    with tf.compat.v1.variable_scope('model', use_resource=True):
      outputs = self.create_loss(features, ModeKeys.TRAIN)
    train_op = self.optimizer.minimize(
        outputs.loss, global_step=tf.compat.v1.train.get_global_step())
    return EstimatorSpec(mode=ModeKeys.TRAIN, loss=outputs.loss,
                         train_op=train_op)

  def _evaluate_ops(self, features):
    """The EVAL spec: the loss, its mean, and the last batch's in-sample
    predictions, prediction times and end state as metrics."""
    with tf.compat.v1.variable_scope('model', use_resource=True):
      outputs = self.create_loss(features, ModeKeys.EVAL)
    metrics = {key: _identity_metric_single(key, value)
               for key, value in outputs.predictions.items()}
    metrics[feature_keys.FilteringResults.TIMES] = _identity_metric_single(
        feature_keys.FilteringResults.TIMES, outputs.prediction_times)
    metrics[feature_keys.FilteringResults.STATE_TUPLE] = (
        _identity_metric_nested(feature_keys.FilteringResults.STATE_TUPLE,
                                outputs.end_state))
    metrics[MetricKeys.LOSS_MEAN] = tf.compat.v1.metrics.mean(
        outputs.loss, name='average_loss')
    # The predictions are there for extenders.add_metrics' metric_fn.
    return EstimatorSpec(mode=ModeKeys.EVAL, loss=outputs.loss,
                         eval_metric_ops=metrics,
                         predictions=outputs.predictions)

  def _predict_ops(self, features):
    """The PREDICT spec: the model's predictions from the fed state, with
    the times predicted for."""
    with tf.compat.v1.variable_scope('model', use_resource=True):
      predictions = self.model.predict(features=features)
    predictions[feature_keys.PredictionResults.TIMES] = features[
        feature_keys.PredictionFeatures.TIMES]
    return EstimatorSpec(mode=ModeKeys.PREDICT, predictions=predictions)

  def _serving_ops(self, features):
    """The export's spec: the predict, filter and cold-start filter
    signatures."""
    with tf.compat.v1.variable_scope('model', use_resource=True):
      predictions = self.model.predict(features=features)
    with tf.compat.v1.variable_scope('model', reuse=True):
      filtered = self.create_loss(features, ModeKeys.EVAL)
    with tf.compat.v1.variable_scope('model', reuse=True):
      # From the model's start state (replicated over the batch), whatever
      # state was fed.
      cold_filtered = self.model.define_loss(
          features=_without_state(features), mode=ModeKeys.EVAL)
    labels = feature_keys.SavedModelLabels
    return EstimatorSpec(
        mode=ModeKeys.PREDICT,
        export_outputs={
            labels.PREDICT: PredictOutput(predictions),
            labels.FILTER: PredictOutput(
                state_to_dictionary(filtered.end_state)),
            labels.COLD_START_FILTER: _NoStatePredictOutput(
                state_to_dictionary(cold_filtered.end_state)),
        },
        # An export needs none, but a PREDICT spec must have predictions.
        predictions={})

  def _convert_feature_to_tensor(self, name, value):
    """Feature `name`'s `value` as a tensor of its dtype: times int64,
    values the model's dtype, a state tuple as it is (its dtypes are the
    model's business), others converted as they are."""
    if name in (feature_keys.TrainEvalFeatures.TIMES,
                feature_keys.PredictionFeatures.TIMES):
      return tf.cast(value, tf.int64)
    if name == feature_keys.TrainEvalFeatures.VALUES:
      return tf.cast(value, self.model.dtype)
    if name == feature_keys.PredictionFeatures.STATE_TUPLE:
      return value
    return tf.compat.v1.convert_to_tensor_or_sparse_tensor(value)

  def _gather_state(self, features):
    """`features` with the flattened state (`model_state_<n>`) packed into
    the model's state structure as STATE_TUPLE, and whether there was
    any."""
    numbered = sorted(
        (int(match.group(1)), key) for key, match in
        ((key, _STATE_KEY_RE.search(key)) for key in features) if match)
    if not numbered:
      return features, False
    features = dict(features)
    flat_state = [features.pop(key) for _, key in numbered]
    features[feature_keys.State.STATE_TUPLE] = tf.nest.pack_sequence_as(
        structure=self.model.get_start_state(), flat_sequence=flat_state)
    return features, True

  def _check_predict_features(self, features):
    """Raises ValueError unless `features` can be predicted from: times
    ([batch, window]), a state, and the other features shaped
    [batch, window, ...] as the times."""
    _require(features, feature_keys.PredictionFeatures.TIMES, 'prediction')
    _require(features, feature_keys.PredictionFeatures.STATE_TUPLE,
             'prediction')
    _check_times(features, feature_keys.PredictionFeatures.TIMES)
    _check_feature_shapes_compatible_with(
        features=features,
        compatible_with_name=feature_keys.PredictionFeatures.TIMES,
        compatible_with_value=features[feature_keys.PredictionFeatures.TIMES],
        ignore={feature_keys.PredictionFeatures.STATE_TUPLE})

  def create_estimator_spec(self, features, mode, labels=None):  # pylint: disable=arguments-differ
    """The EstimatorSpec of `mode` for `features` (see the module
    docstring).

    Raises:
      ValueError: `labels` is given (other than None or {}), `mode` is
        unknown, or the features do not suit the mode (a missing time,
        value or state feature; a shape that does not match).
    """
    with tf.compat.v1.name_scope(self._name, 'head'):
      if labels is not None and not (isinstance(labels, dict) and
                                     not labels):
        raise ValueError(
            'The model received a `labels`, which is not supported. '
            f"Pass '{feature_keys.TrainEvalFeatures.TIMES}' and "
            f"'{feature_keys.TrainEvalFeatures.VALUES}' as features.")
      features = {name: self._convert_feature_to_tensor(name, value)
                  for name, value in features.items()}
      input_statistics = None
      if self.input_statistics_generator is not None:
        input_statistics = self.input_statistics_generator.initialize_graph(
            features, update_statistics=(mode == ModeKeys.TRAIN))
      self.model.initialize_graph(input_statistics=input_statistics)
      # After initialize_graph: the state's structure is the model's.
      features, fed_flat_state = self._gather_state(features)
      if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
        _check_train_eval_features(features, self.model)
      elif mode == ModeKeys.PREDICT:
        self._check_predict_features(features)
      else:
        raise ValueError(f"Unknown mode '{mode}' passed to model_fn (the "
                         f'modes are {ModeKeys.ALL}).')
      self.state_manager.initialize_graph(
          model=self.model, input_statistics=input_statistics)
      if mode == ModeKeys.TRAIN:
        return self._train_ops(features)
      if mode == ModeKeys.EVAL:
        return self._evaluate_ops(features)
      if fed_flat_state:
        # An export (export_saved_model) feeds the state flattened.
        return self._serving_ops(features)
      return self._predict_ops(features)


class OneShotPredictionHead(TimeSeriesRegressionHead):
  """A head exporting one stateless serving signature.

  It takes `times` ([batch, total length]), `values` ([batch, filter
  length, num_features], shorter than the times) and the exogenous
  features (shaped as the times), no state: it filters the values from the
  model's start state, then predicts the remaining times. No state is
  returned either, so every request filters again.
  """

  def _check_predict_features(self, features):
    """As the base head's, and the values are required too (they may be
    shorter than the times)."""
    _require(features, feature_keys.PredictionFeatures.TIMES, 'prediction')
    _require(features, feature_keys.TrainEvalFeatures.VALUES, 'prediction')
    _require(features, feature_keys.PredictionFeatures.STATE_TUPLE,
             'prediction')
    _check_times(features, feature_keys.PredictionFeatures.TIMES)
    _check_feature_shapes_compatible_with(
        features=features,
        compatible_with_name=feature_keys.PredictionFeatures.TIMES,
        compatible_with_value=features[feature_keys.PredictionFeatures.TIMES],
        ignore={feature_keys.PredictionFeatures.STATE_TUPLE,
                feature_keys.TrainEvalFeatures.VALUES})

  def _evaluate_ops(self, features):
    """The base head's, without the end state metric (no state is fed to
    this head, and a tuple metric troubles what reads the metrics)."""
    spec = super()._evaluate_ops(features)
    del spec.eval_metric_ops[feature_keys.State.STATE_TUPLE]
    return spec

  def _serving_ops(self, features):
    """The export's spec: one predict signature, filtering the values from
    the start state, then predicting the times after them."""
    values_key = feature_keys.FilteringFeatures.VALUES
    with tf.compat.v1.variable_scope('model', use_resource=True):
      filter_length = tf.shape(features[values_key])[1]
      filtering = {}
      predicting = {}
      for key, value in features.items():
        if key == feature_keys.State.STATE_TUPLE:
          continue  # The model's start state is used, whatever was fed.
        if key == values_key:
          filtering[key] = value
        else:
          filtering[key] = value[:, :filter_length]
          predicting[key] = value[:, filter_length:]
      filtered = self.model.define_loss(features=filtering,
                                        mode=ModeKeys.EVAL)
      predicting[feature_keys.State.STATE_TUPLE] = filtered.end_state
    with tf.compat.v1.variable_scope('model', reuse=True):
      predictions = self.model.predict(features=predicting)
    return EstimatorSpec(
        mode=ModeKeys.PREDICT,
        export_outputs={
            feature_keys.SavedModelLabels.PREDICT:
                _NoStatePredictOutput(predictions),
        },
        predictions={})


def _without_state(features):
  return {key: value for key, value in features.items()
          if not key.startswith(feature_keys.State.STATE_PREFIX)}


def _require(features, key, what):
  if key not in features:
    raise ValueError(f"Expected a '{key}' feature for {what}.")


def _check_times(features, key):
  """Raises ValueError unless feature `key` is shaped [batch, window]."""
  shape = features[key].get_shape()
  if not shape.is_compatible_with([None, None]):
    raise ValueError(
        "Expected shape (batch dimension, window size) for feature "
        f"'{key}' (got shape {shape})")


def _check_feature_shapes_compatible_with(features, compatible_with_name,
                                          compatible_with_value, ignore=None):
  """Raises ValueError unless each feature of `features` (but those of
  `ignore`, and those of unknown rank) is shaped [batch, window, ...] as
  `compatible_with_value` (feature `compatible_with_name`)."""
  ignore = ignore or set()
  times_shape = compatible_with_value.get_shape()
  for name, value in features.items():
    if name in ignore:
      continue
    shape = value.get_shape()
    if shape.ndims is None:
      continue
    if shape.ndims < 2:
      raise ValueError(
          'Features must have shape (batch dimension, window size, ...) '
          f"(got rank {shape.ndims} for feature '{name}')")
    if not shape[:2].is_compatible_with(times_shape):
      raise ValueError(
          'Features must have shape (batch dimension, window size, ...) '
          'where batch dimension and window size match the '
          f"'{compatible_with_name}' feature (got shape {shape} for "
          f"feature '{name}' but shape {times_shape} for feature "
          f"'{compatible_with_name}')")


def _check_train_eval_features(features, model):
  """Raises ValueError unless `features` can be trained or evaluated on:
  times ([batch, window]), values ([batch, window, model.num_features]),
  and the other features shaped [batch, window, ...] as the times."""
  times_key = feature_keys.TrainEvalFeatures.TIMES
  values_key = feature_keys.TrainEvalFeatures.VALUES
  _require(features, times_key, 'training/evaluation')
  _require(features, values_key, 'training/evaluation')
  _check_times(features, times_key)
  times = features[times_key]
  if not features[values_key].get_shape().is_compatible_with(
      [None, None, model.num_features]):
    # 2.15 reported the times' shape here; the values' is the one at fault.
    raise ValueError(
        f'Expected shape (batch dimension, window size, {model.num_features})'
        f" for feature '{values_key}', since the model was configured with "
        f'num_features={model.num_features} (got shape '
        f'{features[values_key].get_shape()})')
  _check_feature_shapes_compatible_with(
      features=features, compatible_with_name=times_key,
      compatible_with_value=times,
      ignore={feature_keys.State.STATE_TUPLE})


def _identity_metric_single(name, input_tensor):
  """A metric (value, update_op) whose value is `input_tensor` as of its
  last update.

  It keeps the in-sample predictions of one batch alongside metrics that
  accumulate in variables: (input_tensor, no_op) would read a later batch
  than theirs.
  """
  # Of unknown shape, so that the first update gives it the tensor's: 2.15
  # left the shape unvalidated, which a resource variable (TF2 behaviour)
  # does not allow, and its test of this skipped under TF2.
  variable = tf.compat.v1.Variable(
      name=f'{name}_identity_metric',
      initial_value=tf.zeros([], dtype=input_tensor.dtype),
      collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
      validate_shape=False, shape=tf.TensorShape(None))
  update_op = tf.compat.v1.assign(variable, input_tensor,
                                  validate_shape=False)
  value = variable.value()
  # Its shape once updated (its initial value is a scalar).
  value.set_shape(input_tensor.get_shape())
  return value, update_op


def _identity_metric_nested(name, input_tensors):
  """An identity metric of each tensor of nest `input_tensors`: (their
  values as the nest, one update op)."""
  values = []
  updates = []
  for number, tensor in enumerate(tf.nest.flatten(input_tensors)):
    value, update = _identity_metric_single(f'{name}_{number}', tensor)
    values.append(value)
    updates.append(update)
  return (tf.nest.pack_sequence_as(input_tensors, values),
          tf.group(*updates))


def state_to_dictionary(state_tuple):
  """The tensors of nest `state_tuple` keyed `model_state_00`,
  `model_state_01`, ... in flattening order."""
  return {f'{feature_keys.State.STATE_PREFIX}_{number:02d}': value
          for number, value in enumerate(tf.nest.flatten(state_tuple))}
