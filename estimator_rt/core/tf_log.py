"""The progress lines tf.estimator 2.15 logged, in its words, on its logger.

tf.estimator logged through TensorFlow's logger ('tensorflow', which
`tf.compat.v1.logging` is), so a program that did
`tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)` saw
`loss = 0.67, step = 0`, `Saving checkpoints for 0 into .../model.ckpt.`,
`Saving dict for global step 30: ...`, `Loss for final step: ...`. The
runtime's own lines go through absl, whose level such a program never
sets; the places that did what 2.15 logged also log its line here, once
(tests/test_observables.py compares the set of lines with 2.15's).
"""

import logging

_LOGGER = logging.getLogger('tensorflow')


def info(message: str, *args) -> None:
  """Logs one of 2.15's lines at INFO on TensorFlow's logger."""
  _LOGGER.info(message, *args)
