"""tf.estimator 2.15's `canned/timeseries/feature_keys`: the feature and
result names time series models read and return."""

import tensorflow as tf


class State:
  """Keys of a model's state, fed in and returned."""
  # The model's state as one nested tuple.
  STATE_TUPLE = 'start_tuple'
  # The prefix of the keys of the flattened state (`model_state_00`, ...),
  # as a SavedModel's signatures take and return it.
  STATE_PREFIX = 'model_state'


class Times:
  """The key of the times: increasing integers."""
  TIMES = 'times'


class Values:
  """The key of the values: floats, one or more per time."""
  VALUES = 'values'


class TrainEvalFeatures(Times, Values):
  """The features of training and evaluation."""


class PredictionFeatures(Times, State):
  """The features of prediction."""


class FilteringFeatures(Times, Values, State):
  """The features of filtering."""


class PredictionResults(Times):
  """Keys of what prediction returns (not all of them)."""


class FilteringResults(Times, State):
  """Keys of what evaluation (filtering) returns."""


class SavedModelLabels:
  """The signatures a time series model exports."""
  PREDICT = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
  FILTER = 'filter'
  COLD_START_FILTER = 'cold_start_filter'
