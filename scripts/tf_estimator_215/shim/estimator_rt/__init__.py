"""Stand-in for `estimator_rt` in the tf.estimator 2.15 environment.

The legacy programs in tests/legacy_programs/ say `import estimator_rt` and
use `estimator_rt.Estimator`, `estimator_rt.ModeKeys`, `estimator_rt.export.
ServingInputReceiver`, ... exactly where a tf.estimator program says
`tf.estimator.`. Put this directory first on sys.path in the TensorFlow 2.15
environment and the same files run on tf.estimator itself: the import
hands back TensorFlow's `tf.compat.v1.estimator` module (the TF1 API those
programs were written against) in place of this one.
"""

import sys

import tensorflow as tf

sys.modules[__name__] = tf.compat.v1.estimator
