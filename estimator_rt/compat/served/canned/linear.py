"""tensorflow_estimator.python.estimator.canned.linear, over estimator_rt.

The names of 2.15's module that code and 2.15's own tests use besides the
public ones (LinearClassifier, LinearClassifierV2, ..., which come from
module_paths.json): the Keras `LinearModel` and its layer, and the helpers
`_compute_fraction_of_zero`, ...
"""

import tensorflow as tf

from estimator_rt.canned import linear as _linear
from estimator_rt.canned import linear_model as _linear_model

LinearModel = _linear_model.LinearModel
_LinearModelLayer = _linear_model.LinearModelLayer

_LEARNING_RATE = _linear.LEARNING_RATE


def _compute_fraction_of_zero(variables):
  """The fraction of zero values over `variables` (tensors or variables,
  nested lists allowed): NaN if they hold no value at all.

  Raises:
    ValueError: `variables` is empty.
  """
  return _linear.fraction_of_zero(tf.nest.flatten(variables))
