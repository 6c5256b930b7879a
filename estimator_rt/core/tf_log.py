"""The progress lines tf.estimator 2.15 logged, in its words, on its logger.

tf.estimator logged through TensorFlow's logger ('tensorflow', which
`tf.compat.v1.logging` is), so a program that did
`tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)` saw
`loss = 0.67, step = 0`, `Saving checkpoints for 0 into .../model.ckpt.`,
`Saving dict for global step 30: ...`, `Loss for final step: ...`. The
runtime's own lines go through absl, whose level such a program never
sets; the places that did what 2.15 logged also log its line here, once
(tests/test_observables.py compares the set of lines with 2.15's).

Numbers in them are printed as 2.15 printed them: what its session run
returned, a NumPy scalar of the tensor's dtype, whose str is NumPy's
shortest repr of that dtype (`loss = 1.1269032`, a float32), not a Python
float's (`1.1927422285079956`); see `number`.
"""

import logging

import numpy as np

_LOGGER = logging.getLogger('tensorflow')


def info(message: str, *args) -> None:
  """Logs one of 2.15's lines at INFO on TensorFlow's logger."""
  _LOGGER.info(message, *args)


def number(value):
  """`value` as 2.15's lines printed it: a NumPy scalar of its dtype, as a
  session run returned it (`str` gives `1.1269032` for a float32). A NumPy
  value or a tensor keeps its dtype (a float64 loss prints all its digits,
  as there); a Python number becomes a float32, the dtype of the losses
  the engines return. None stays None (`Loss for final step: None.` when
  no step ran, as there)."""
  if value is None or isinstance(value, np.generic):
    return value
  if isinstance(value, (bool, int, float)):
    return np.float32(value)
  array = np.asarray(value)  # An ndarray or an EagerTensor.
  return array[()] if array.ndim == 0 else array
