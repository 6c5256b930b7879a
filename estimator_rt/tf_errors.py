"""The runtime's errors that tf.estimator 2.15 raised as TensorFlow's classes.

errors.py stays free of TensorFlow (the launchers import it without
loading TensorFlow); the classes here join an error of errors.py with the
TensorFlow class 2.15 raised in the same case, so that code catching
either catches it.
"""

import tensorflow as tf

from estimator_rt.errors import NanLossError


class NanLossDuringTrainingError(
    NanLossError, tf.compat.v1.train.NanLossDuringTrainingError):
  """Training diverged (see NanLossError); 2.15's NanTensorHook raised
  `tf.compat.v1.train.NanLossDuringTrainingError` (also
  `tf.estimator.NanLossDuringTrainingError`) on a NaN loss."""

  def __str__(self) -> str:
    # TensorFlow's class says only "NaN loss during training."; the
    # message (which starts with that phrase for a NaN loss) says more.
    return RuntimeError.__str__(self)
