"""tf.estimator 2.15's `export` package: its served modules (see
estimator_rt/compat/served/__init__.py); its other modules are served from
module_paths.json."""
