"""tensorflow_estimator.python.estimator.hooks: its served modules."""
