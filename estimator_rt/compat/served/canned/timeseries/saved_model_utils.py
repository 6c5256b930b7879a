"""tf.estimator 2.15's `canned/timeseries/saved_model_utils`: filtering and
prediction with a time series model's SavedModel (a TimeSeriesRegressor's
export with its `build_raw_serving_input_receiver_fn`), loaded into a
session with `tf.compat.v1.saved_model.load(session, [tag], path)`.

Filtering runs the export's `cold_start_filter` signature (from the model's
start state) or its `filter` signature (from a state): it returns the state
after the given values, keyed `model_state_<n>`, with the times filtered.
Prediction (`predict_continuation`) runs the predict signature
(`serving_default`) from such a state, or from an evaluation's output
(`Estimator.evaluate`'s `start_tuple` and `times`), for the times given or
the `steps` times after the last filtered. Features are numpy data, with or
without batch and time dimensions (`_canonicalize_numpy_data`).
"""

import numpy as _np

from estimator_rt.compat.served.canned.timeseries import feature_keys as _feature_keys
from estimator_rt.compat.served.canned.timeseries import head as _head
from estimator_rt.compat.served.canned.timeseries import model_utils as _model_utils

_TIMES = _feature_keys.TrainEvalFeatures.TIMES
_VALUES = _feature_keys.TrainEvalFeatures.VALUES


def _canonicalize_numpy_data(data, require_single_batch):
  """`data`'s features as numpy arrays shaped [batch, series length, ...].

  Args:
    data: a dict of array-likes with TIMES and VALUES, each feature's shape
      starting with the times': a single time (times a scalar, values a
      scalar or [num_features]), a series (times [length], values [length]
      or [length, num_features]) or a batch of series (times [batch,
      length], values [batch, length, num_features]: as in 2.15, a batch's
      univariate values get no feature dimension).
    require_single_batch: whether a batch of more than one series is an
      error.

  Returns:
    A dict of numpy arrays, the missing batch and time dimensions (and a
    univariate series' feature dimension) added with size 1.

  Raises:
    ValueError: TIMES or VALUES is missing, a feature's shape does not start
      with the times', a shape of too many dimensions, or a batch where
      `require_single_batch`.
  """
  features = {key: _np.array(value) for key, value in data.items()}
  if _TIMES not in features or _VALUES not in features:
    raise ValueError(f'{_TIMES} and {_VALUES} are required features.')
  times = features[_TIMES]
  for key, value in features.items():
    if value.shape[:len(times.shape)] != times.shape:
      raise ValueError(
          'All features must have their shapes prefixed by the shape of the '
          f"times feature. Got shape {value.shape} for feature '{key}', but "
          f"shape {times.shape} for '{_TIMES}'")
  values_rank = len(features[_VALUES].shape)
  if not times.shape:  # One time.
    if values_rank > 1:
      raise _values_rank_error(
          1, '[number of features]', 'a batch or time dimension',
          features[_VALUES].shape)
    if values_rank == 0:
      features[_VALUES] = features[_VALUES][..., None]
    features = {key: value[None, None, ...]
                for key, value in features.items()}
  if len(times.shape) == 1:  # A series.
    if len(features[_VALUES].shape) == 1:
      features[_VALUES] = features[_VALUES][..., None]
    elif len(features[_VALUES].shape) > 2:
      raise _values_rank_error(
          2, '[series length, number of features]', 'a batch dimension',
          features[_VALUES].shape)
    features = {key: value[None, ...] for key, value in features.items()}
  elif len(features[_TIMES].shape) != 2:
    raise ValueError(
        'Got an unexpected number of dimensions for times. Was expecting at '
        'most two ([batch size, series length]), but got shape '
        f'{times.shape}.')
  if require_single_batch and features[_TIMES].shape[0] != 1:
    raise ValueError('Got batch input, was expecting unbatched input.')
  return features


def _values_rank_error(most, dimensions, lacking, shape):
  return ValueError(
      f"Got an unexpected number of dimensions for the '{_VALUES}' feature. "
      f'Was expecting at most {most} dimension{"s" if most > 1 else ""} '
      f"({dimensions}) since '{_TIMES}' does not have {lacking}, but got "
      f'shape {shape}')


def _colate_features_to_feeds_and_fetches(signature, features, graph,
                                          continue_from=None):
  """(the signature's outputs as tensors of `graph` by key, the feed dict of
  `features` and of the state in `continue_from`) for `session.run`.

  Args:
    signature: a SignatureDef of the loaded MetaGraphDef.
    features: {input key: value} to feed.
    graph: the graph the SavedModel was loaded into.
    continue_from: None; an evaluation's output (its nested STATE_TUPLE is
      flattened into `model_state_<n>`); or a filtering's output (its
      `model_state_<n>` fed as they are; any other key must be an input of
      the signature).
  """
  if continue_from is None:
    state = {}
  elif _feature_keys.FilteringResults.STATE_TUPLE in continue_from:
    state = _head.state_to_dictionary(
        continue_from[_feature_keys.FilteringResults.STATE_TUPLE])
  else:
    state = continue_from
  inputs = {key: graph.as_graph_element(value.name)
            for key, value in signature.inputs.items()}
  outputs = {key: graph.as_graph_element(value.name)
             for key, value in signature.outputs.items()}
  feed_dict = {inputs[key]: value for key, value in state.items()}
  feed_dict.update({inputs[key]: value for key, value in features.items()})
  return outputs, feed_dict


def predict_continuation(continue_from, signatures, session, steps=None,
                         times=None, exogenous_features=None):
  """The model's predictions after a state, by the export's predict
  signature.

  Args:
    continue_from: an evaluation's output (Estimator.evaluate) or a
      filtering's (cold_start_filter, filter_continuation) of the same
      model: the state predicted from, and the times it ends at.
    signatures: the MetaGraphDef `tf.compat.v1.saved_model.load` returned.
    session: the session it loaded the SavedModel into.
    steps: the number of times to predict, each row's following its last
      filtered time; or None when `times` is given.
    times: [batch, window] times to predict (a [window] vector for a batch
      of one), after each row's last filtered time; or None when `steps` is
      given.
    exogenous_features: {key: [batch, window, ...]} exogenous features at
      the predicted times, or None.

  Returns:
    The signature's outputs (a model's 'mean', 'covariance', ...) as numpy
    arrays, and PredictionResults.TIMES: the times predicted.

  Raises:
    ValueError: both or neither of `steps` and `times`, or `times` not
      after the state's or of another batch size.
  """
  features = {_feature_keys.PredictionFeatures.TIMES:
                  _model_utils.canonicalize_times_or_steps_from_output(
                      times=times, steps=steps,
                      previous_model_output=continue_from)}
  features.update(exogenous_features or {})
  outputs, feed_dict = _colate_features_to_feeds_and_fetches(
      continue_from=continue_from,
      signature=signatures.signature_def[
          _feature_keys.SavedModelLabels.PREDICT],
      features=features, graph=session.graph)
  output = session.run(outputs, feed_dict=feed_dict)
  output[_feature_keys.PredictionResults.TIMES] = features[
      _feature_keys.PredictionFeatures.TIMES]
  return output


def cold_start_filter(signatures, session, features):
  """The model's state after `features`, filtered from its start state by
  the export's cold_start_filter signature.

  Args:
    signatures: the MetaGraphDef `tf.compat.v1.saved_model.load` returned.
    session: the session it loaded the SavedModel into.
    features: numpy data with FilteringFeatures.TIMES and VALUES and the
      exogenous features, shaped as `_canonicalize_numpy_data` takes them.

  Returns:
    The state (`model_state_<n>` numpy arrays) and FilteringResults.TIMES
    (the times filtered, [batch, length]): what filter_continuation and
    predict_continuation continue from.
  """
  return _filter(signatures, session, features,
                 _feature_keys.SavedModelLabels.COLD_START_FILTER)


def filter_continuation(continue_from, signatures, session, features):
  """The model's state after `features`, filtered from `continue_from`'s
  state (an evaluation's output, or a filtering's) by the export's filter
  signature; arguments and result as cold_start_filter's."""
  return _filter(signatures, session, features,
                 _feature_keys.SavedModelLabels.FILTER,
                 continue_from=continue_from)


def _filter(signatures, session, features, label, continue_from=None):
  """Runs filtering signature `label` (see cold_start_filter)."""
  features = _canonicalize_numpy_data(data=features,
                                      require_single_batch=False)
  outputs, feed_dict = _colate_features_to_feeds_and_fetches(
      continue_from=continue_from, signature=signatures.signature_def[label],
      features=features, graph=session.graph)
  output = session.run(outputs, feed_dict=feed_dict)
  # The times filtered: a prediction continues after the last.
  output[_feature_keys.FilteringResults.TIMES] = features[
      _feature_keys.FilteringFeatures.TIMES]
  return output
