"""One line per log message when TensorFlow was imported before estimator_rt.

TensorFlow's logger ('tensorflow') gets a handler of its own when it is
first used and the root logger has none, and it still propagates to the
root. absl's logging, which estimator_rt uses, gives the root logger a
handler (`logging.basicConfig()`) at its first message when the program has
none (outside `absl.app.run`). A program that imported TensorFlow first (any
tf.estimator program, under `python -m estimator_rt.compat` or the Python
API) then printed every TensorFlow message twice ("INFO:tensorflow:loss =
..." twice per LoggingTensorHook step). `use_root_handler` gives the root
logger that handler now and takes TensorFlow's own away, so that each
message, TensorFlow's and absl's, is printed once, in the same format.
"""

import logging


def use_root_handler() -> None:
  """Makes the root logger's handler the one that prints TensorFlow's
  messages (idempotent; a program's own logging set-up is left alone)."""
  root = logging.getLogger()
  tf_logger = logging.getLogger('tensorflow')
  if root.handlers:
    return  # The program (or absl.app.run) chose where logs go.
  # basicConfig's handler, to stderr in `BASIC_FORMAT`: what absl would
  # install at its first message, and TensorFlow's own format.
  logging.basicConfig()
  for handler in list(tf_logger.handlers):
    if (type(handler) is logging.StreamHandler and  # pylint: disable=unidiomatic-typecheck
        tf_logger.propagate):
      tf_logger.removeHandler(handler)
