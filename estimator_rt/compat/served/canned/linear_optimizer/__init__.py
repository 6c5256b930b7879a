"""tensorflow_estimator.python.estimator.canned.linear_optimizer:
the package of 2.15's SDCA optimizer modules, served over estimator_rt."""
