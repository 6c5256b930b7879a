"""tf.estimator 2.15's `tools` package: its served modules (see
estimator_rt/compat/served/__init__.py)."""
