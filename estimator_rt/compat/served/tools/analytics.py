"""tf.estimator 2.15's `tools/analytics`: usage-tracking hooks that do
nothing outside Google, as in 2.15 (its TPU error handling called them)."""


def track_usage(tool_id, tags):
  """Does nothing: no usage tracking for the external library."""
  del tool_id, tags


def track_numerical_issues(exc_info):
  """Does nothing: no tracking of numerical issues (`exc_info` as
  sys.exc_info() gives it) for the external library."""
  del exc_info
