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
