"""tf.estimator 2.15's `canned/timeseries/math_utils`: replicating a
model's start state across a batch, and statistics of the series a time
series model is trained on, kept in variables and updated from each
mini-batch (TF1 graph code, as 2.15's models ran).
"""

import collections

import tensorflow as tf

from estimator_rt.compat.served.canned.timeseries.feature_keys import TrainEvalFeatures


def replicate_state(start_state, batch_size):
  """`start_state` (a nest of tensors without a batch dimension) with each
  tensor repeated `batch_size` times along a new leading dimension."""

  def replicate(state):
    state = tf.convert_to_tensor(state)
    multiples = tf.concat(
        [[batch_size], tf.ones([tf.rank(state)], dtype=tf.int32)], axis=0)
    return tf.tile(state[None], multiples)

  return tf.nest.map_structure(replicate, start_state)


Moments = collections.namedtuple('Moments', ['mean', 'variance'])

# Statistics of a series: `series_start_moments` (Moments of each feature
# over the first values of the series, shape [num_features]),
# `overall_feature_moments` (Moments over the whole series),
# `start_time` (the lowest time, int64) and `total_observation_count`
# (int64). Made by InputStatisticsFromMiniBatch, they are estimates from
# the batches seen so far (see its docstring).
InputStatistics = collections.namedtuple('InputStatistics', [
    'series_start_moments', 'overall_feature_moments', 'start_time',
    'total_observation_count'])


class InputStatisticsFromMiniBatch:
  """Input statistics estimated from the mini-batches a model trains on.

  The statistics are variables in scope `input_statistics`, and what they
  are computed from (counts, sums) variables in scope
  `input_statistics_auxiliary`, all non-trainable resource variables. With
  `update_statistics`, reading the statistics first takes a batch into
  account: the overall moments are the running ones; the series start
  moments are those of the first `starting_variance_window_size` values of
  the batch's series of lowest first time, whenever that time is at most
  the lowest seen; the total observation count is (max time - start time +
  1) over the mean time between observations. Concurrent updates (several
  workers) race; the estimates still converge as batches repeat.
  """

  def __init__(self, num_features, dtype, starting_variance_window_size=16):
    """Statistics of `num_features` features of floating `dtype`.

    Args:
      num_features: the number of features of the series.
      dtype: the floating-point dtype of the values and moments.
      starting_variance_window_size: how many values from the series' start
        the series start moments cover.
    """
    self._starting_variance_window_size = starting_variance_window_size
    self._num_features = num_features
    self._dtype = dtype

  def initialize_graph(self, features, update_statistics=True):
    """The statistics, as an InputStatistics.

    Args:
      features: a dict of features; with TrainEvalFeatures.TIMES
        ([batch, window] integers) and VALUES ([batch, window,
        num_features]) the statistics can be updated from them.
      update_statistics: update the statistics from `features` (training)
        before each read; otherwise (evaluation, prediction) read them as
        they are.

    Returns:
      An InputStatistics: the variables themselves, or, when updating,
      tensors that read them after the update (the start time also no
      later than this batch's lowest time, whatever other updates did).
    """
    times = features.get(TrainEvalFeatures.TIMES)
    values = features.get(TrainEvalFeatures.VALUES)
    # Initialized without data, so that initializing the variables does not
    # wait for input (queue runners may not have started yet).
    with tf.compat.v1.variable_scope('input_statistics', use_resource=True):
      statistics = self._create_variable_statistics_object()
    with tf.compat.v1.variable_scope('input_statistics_auxiliary',
                                     use_resource=True):
      auxiliary = self._AdaptiveInputAuxiliaryStatistics(
          num_features=self._num_features, dtype=self._dtype)
    if not update_statistics or times is None or values is None:
      return statistics
    update = self._update_statistics_from_mini_batch(statistics, auxiliary,
                                                     times, values)
    with tf.control_dependencies([update]):
      updated = tf.nest.map_structure(tf.identity, statistics)
      lowest = tf.cast(tf.reduce_min(times), tf.int64)
      return updated._replace(
          start_time=tf.minimum(updated.start_time, lowest))

  class _AdaptiveInputAuxiliaryStatistics(collections.namedtuple(
      '_AdaptiveInputAuxiliaryStatistics', [
          'max_time_seen',  # The highest time seen.
          'chunk_count',  # The number of series (batch rows) seen.
          # The sum over series of their mean time between observations.
          'inter_observation_duration_sum',
          'example_count',  # The number of times seen.
          'overall_feature_sum',  # [num_features]
          'overall_feature_sum_of_squares',  # [num_features]
      ])):
    """The counts and sums the statistics are computed from: variables of
    the current variable scope."""

    def __new__(cls, num_features, dtype):

      def variable(name, dtype, shape=(), initializer=None):
        return tf.compat.v1.get_variable(
            name=name, shape=shape, dtype=dtype, trainable=False,
            initializer=initializer or tf.compat.v1.initializers.zeros())

      return super().__new__(
          cls,
          max_time_seen=tf.compat.v1.get_variable(
              name='max_time_seen', initializer=tf.int64.min,
              dtype=tf.int64, trainable=False),
          chunk_count=variable('chunk_count', tf.int64),
          inter_observation_duration_sum=variable(
              'inter_observation_duration_sum', dtype),
          example_count=variable('example_count', tf.int64),
          overall_feature_sum=variable('overall_feature_sum', dtype,
                                       [num_features]),
          overall_feature_sum_of_squares=variable(
              'overall_feature_sum_of_squares', dtype, [num_features]))

  def _update_statistics_from_mini_batch(self, statistics, auxiliary, times,
                                         values):
    """An op updating `auxiliary`, then `statistics`, from one batch."""
    values = tf.cast(values, self._dtype)
    # Each series' mean time between observations.
    durations = (
        tf.cast(tf.reduce_max(times, axis=1) - tf.reduce_min(times, axis=1),
                self._dtype) /
        tf.cast(tf.shape(times)[1] - 1, self._dtype))
    # Each update sits with its variable, narrowing (not closing) the races
    # between workers.
    with tf.compat.v1.device(auxiliary.max_time_seen.device):
      max_time_seen = tf.compat.v1.assign(
          auxiliary.max_time_seen,
          tf.maximum(auxiliary.max_time_seen,
                     tf.cast(tf.reduce_max(times), tf.int64)))
    sums = []
    for variable, increment in (
        (auxiliary.chunk_count, tf.shape(times, out_type=tf.int64)[0]),
        (auxiliary.inter_observation_duration_sum, tf.reduce_sum(durations)),
        (auxiliary.example_count, tf.size(times, out_type=tf.int64)),
        # Every value counts once, although a series' ends fall in fewer
        # chunks than its middle: negligible for series much longer than a
        # chunk.
        (auxiliary.overall_feature_sum, tf.reduce_sum(values, axis=[0, 1])),
        (auxiliary.overall_feature_sum_of_squares,
         tf.reduce_sum(values**2, axis=[0, 1]))):
      with tf.compat.v1.device(variable.device):
        sums.append(tf.compat.v1.assign_add(variable, increment))
    with tf.control_dependencies([tf.group(max_time_seen, *sums)]):
      count = tf.cast(auxiliary.example_count, self._dtype)
      mean = auxiliary.overall_feature_sum / count
      mean_update = tf.compat.v1.assign(
          statistics.overall_feature_moments.mean, mean)
      # The unbiased variance: n / (n - 1) of the mean square's excess.
      variance_update = tf.compat.v1.assign(
          statistics.overall_feature_moments.variance,
          count / (count - 1.) *
          (auxiliary.overall_feature_sum_of_squares / count - mean**2))
      first = tf.cast(tf.compat.v1.math.argmin(times[:, 0]), tf.int32)

      def update_series_start_moments():
        start_mean, start_variance = tf.compat.v1.nn.moments(
            values[first, :self._starting_variance_window_size], axes=[0])
        return tf.group(
            tf.compat.v1.assign(statistics.series_start_moments.mean,
                                start_mean),
            tf.compat.v1.assign(statistics.series_start_moments.variance,
                                start_variance))

      with tf.compat.v1.device(statistics.start_time.device):
        # Also when the batch's first time only equals the lowest seen, so
        # that the moments come right in the end despite races.
        start_moments_update = tf.compat.v1.cond(
            tf.less_equal(times[first, 0],
                          tf.cast(statistics.start_time, times.dtype)),
            update_series_start_moments, tf.no_op)
        with tf.control_dependencies([start_moments_update]):
          start_time_update = tf.compat.v1.assign(
              statistics.start_time,
              tf.minimum(statistics.start_time,
                         tf.cast(tf.reduce_min(times), tf.int64)))
      mean_duration = (auxiliary.inter_observation_duration_sum /
                       tf.cast(auxiliary.chunk_count, self._dtype))
      count_update = tf.compat.v1.assign(
          statistics.total_observation_count,
          tf.cast(tf.round(
              tf.cast(max_time_seen - start_time_update + 1, self._dtype) /
              mean_duration), tf.int64))
      return tf.group(mean_update, variance_update, start_moments_update,
                      start_time_update, count_update)

  def _create_variable_statistics_object(self):
    """The statistics' variables, in the current variable scope, before any
    data: zero means, unit variances, start time int64 max, count 1."""

    def variable(name, initializer, dtype=None, shape=None):
      return tf.compat.v1.get_variable(
          name=name, dtype=dtype or self._dtype, trainable=False,
          shape=[self._num_features] if shape is None else shape,
          initializer=initializer)

    zeros = tf.compat.v1.initializers.zeros()
    ones = tf.compat.v1.initializers.ones()
    return InputStatistics(
        series_start_moments=Moments(
            mean=variable('series_start_mean', zeros),
            variance=variable('series_start_variance', ones)),
        overall_feature_moments=Moments(
            mean=variable('overall_feature_mean', zeros),
            variance=variable('overall_feature_var', ones)),
        start_time=tf.compat.v1.get_variable(
            name='start_time', dtype=tf.int64, initializer=tf.int64.max,
            trainable=False),
        total_observation_count=variable('total_observation_count', ones,
                                         dtype=tf.int64, shape=[]))
