"""tf.estimator 2.15's `inputs` package: its served modules (see
estimator_rt/compat/served/__init__.py); `inputs.inputs` is served from
module_paths.json."""
