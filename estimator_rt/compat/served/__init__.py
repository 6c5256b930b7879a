"""tf.estimator 2.15's modules with their private names, over estimator_rt.

Each module here is served (by `estimator_rt.compat.finder`) as the 2.15
module of the same relative path under
`tensorflow_estimator.python.estimator` (and `tensorflow.python.estimator`):
`served/run_config.py` is `tensorflow_estimator.python.estimator.
run_config`. It defines the top-level names 2.15's module had that programs,
libraries and 2.15's own tests use, private ones included, with 2.15's
behaviour, written here over the runtime's objects (never a second
runtime). Public names it does not define come from module_paths.json.
"""
