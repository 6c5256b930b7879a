"""tf.estimator 2.15's `canned` package, served over estimator_rt."""
