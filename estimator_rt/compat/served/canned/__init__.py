"""tf.estimator 2.15's `canned` modules with their private names (see the
docstring of estimator_rt.compat.served)."""
