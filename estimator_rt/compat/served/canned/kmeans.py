"""tensorflow_estimator.python.estimator.canned.kmeans, over estimator_rt.

The names of 2.15's module that code and 2.15's own tests use besides the
public one (KMeansClustering, from module_paths.json).
"""

from estimator_rt.canned import kmeans as _kmeans

_LossRelativeChangeHook = _kmeans._LossRelativeChangeHook  # pylint: disable=protected-access
_InitializeClustersHook = _kmeans._InitializeClustersHook  # pylint: disable=protected-access


def _parse_features_if_necessary(features, feature_columns):
  """A dict of features as one [batch, dimensions] tensor of points (read
  through `feature_columns` if given, else its values concatenated on axis
  1 in key order); anything else as it is."""
  return _kmeans.parse_features(features, feature_columns)


class _ModelFn:
  """KMeans' model_fn with its settings bound (2.15's constructor):
  `_ModelFn(...).model_fn(features, mode, config)` builds the clustering
  graph (estimator_rt's, canned/kmeans.py), its input_fn returning features
  alone or (features, None)."""

  def __init__(self, num_clusters, initial_clusters, distance_metric, seed,
               use_mini_batch, mini_batch_steps_per_iteration,
               kmeans_plus_plus_num_retries, relative_tolerance,
               feature_columns):
    self._num_clusters = num_clusters
    self._initial_clusters = initial_clusters
    self._distance_metric = distance_metric
    self._seed = seed
    self._use_mini_batch = use_mini_batch
    self._mini_batch_steps_per_iteration = mini_batch_steps_per_iteration
    self._kmeans_plus_plus_num_retries = kmeans_plus_plus_num_retries
    self._relative_tolerance = relative_tolerance
    self._feature_columns = feature_columns

  def model_fn(self, features, mode, config):
    """The EstimatorSpec of `mode`: see KMeansClustering."""
    return _kmeans.kmeans_model_fn(
        features, mode, config, num_clusters=self._num_clusters,
        initial_clusters=self._initial_clusters,
        distance_metric=self._distance_metric, seed=self._seed,
        use_mini_batch=self._use_mini_batch,
        mini_batch_steps_per_iteration=self._mini_batch_steps_per_iteration,
        kmeans_plus_plus_num_retries=self._kmeans_plus_plus_num_retries,
        relative_tolerance=self._relative_tolerance,
        feature_columns=(list(self._feature_columns)
                         if self._feature_columns else None))
