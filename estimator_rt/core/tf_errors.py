"""The runtime's errors that tf.estimator 2.15 raised as TensorFlow's classes.

errors.py stays free of TensorFlow (the launchers import it without
loading TensorFlow); the classes here join an error of errors.py with the
TensorFlow class 2.15 raised in the same case, so that code catching
either catches it.
"""

import errno

import tensorflow as tf

from estimator_rt.core.errors import IncompatibleCheckpointError
from estimator_rt.core.errors import NanLossError
from estimator_rt.core.errors import UnusableCheckpointsError


class NanLossDuringTrainingError(
    NanLossError, tf.compat.v1.train.NanLossDuringTrainingError):
  """Training diverged (see NanLossError); 2.15's NanTensorHook raised
  `tf.compat.v1.train.NanLossDuringTrainingError` (also
  `tf.estimator.NanLossDuringTrainingError`) on a NaN loss."""

  def __str__(self) -> str:
    # TensorFlow's class says only "NaN loss during training."; the
    # message (which starts with that phrase for a NaN loss) says more.
    return RuntimeError.__str__(self)


# Where tf.estimator 2.15 let TensorFlow's OpError through (a session's
# restore, save or step failed), the runtime raises its own error, which
# says what happened and what to do; `with_tf_class` joins that error's
# class with the OpError subclass 2.15 raised in the same case, so that
# code catching either (`except tf.errors.NotFoundError`,
# `assertRaises(tf.errors.NotFoundError)`) catches it. Instances are made
# from the message alone, print it in one piece (the binary's one line),
# and are still UserInputErrors where the runtime's class is one (exit 2).

_JOINED = {}


def _init_joined(self, message, *, node_def=None, op=None):
  code = _ERROR_CODES.setdefault(self._tf_class, self._tf_class(  # pylint: disable=protected-access
      None, None, '').error_code)
  tf.errors.OpError.__init__(self, node_def, op, message, code)
  self.args = (message,)


def _reduce_joined(self):
  return (_make_joined, (self._runtime_class, self._tf_class,  # pylint: disable=protected-access
                         self.message))


def _make_joined(runtime_class, tf_class, message):
  return with_tf_class(runtime_class, tf_class)(message)


_ERROR_CODES = {}


def with_tf_class(runtime_class: type, tf_class: type) -> type:
  """The subclass of estimator_rt error class `runtime_class` and
  TensorFlow's OpError subclass `tf_class` (one per pair), made as
  `cls(message)`; its `message` and str() are the message."""
  key = (runtime_class, tf_class)
  if key not in _JOINED:
    _JOINED[key] = type(runtime_class.__name__, (runtime_class, tf_class), {
        '__module__': __name__,
        '__qualname__': runtime_class.__name__,
        '__doc__': (f'{runtime_class.__name__}, also a '
                    f'tf.errors.{tf_class.__name__} (what tf.estimator 2.15 '
                    'raised in its place).'),
        '__init__': _init_joined,
        '__reduce__': _reduce_joined,
        '__str__': lambda self: self.message,
        '_runtime_class': runtime_class,
        '_tf_class': tf_class,
    })
  return _JOINED[key]


def from_cause(runtime_class: type, message: str,
               cause: BaseException) -> BaseException:
  """A `runtime_class` error of `message` which, when `cause` is one of
  TensorFlow's OpErrors (2.15 let it through), is of `cause`'s class too,
  with its node and op."""
  if isinstance(cause, tf.errors.OpError):
    tf_class = type(cause)
    if tf_class is tf.errors.OpError:
      # The base class (what some Python wrappers raise): the subclass of
      # its code, which the op itself raises.
      tf_class = tf.compat.v1.errors.exception_type_from_error_code(
          cause.error_code)
    return with_tf_class(runtime_class, tf_class)(
        message, node_def=cause.node_def, op=None)
  return runtime_class(message)


# TensorFlow's classes for what the OS says (its POSIX filesystem's
# mapping of errno to status codes), for a check made with Python's os
# where 2.15 met the same through TensorFlow's filesystem.
_ERRNO_CLASSES = {
    errno.EACCES: tf.errors.PermissionDeniedError,
    errno.EPERM: tf.errors.PermissionDeniedError,
    errno.EROFS: tf.errors.PermissionDeniedError,
    errno.ENOSPC: tf.errors.ResourceExhaustedError,
    errno.EDQUOT: tf.errors.ResourceExhaustedError,
    errno.ENOENT: tf.errors.NotFoundError,
    errno.ENOTDIR: tf.errors.FailedPreconditionError,
}


def from_os_error(runtime_class: type, message: str,
                  error: OSError) -> BaseException:
  """A `runtime_class` error of `message` which is also of the OpError
  class TensorFlow's filesystem raises for `error`'s errno (where it has
  one)."""
  tf_class = _ERRNO_CLASSES.get(error.errno)
  if tf_class is None:
    return runtime_class(message)
  return with_tf_class(runtime_class, tf_class)(message)


# 2.15's words when a checkpoint lacks a variable the graph restores
# (Saver.restore's NotFoundError), which the runtime's message follows.
MISSING_FROM_CHECKPOINT = (
    'Restoring from checkpoint failed. This is most likely due to a Variable '
    'name or other graph key that is missing from the checkpoint')

# 2.15's words when a checkpoint's variable has another shape than the
# graph's (Saver.restore's InvalidArgumentError under TF1 behaviour).
MISMATCH_WITH_CHECKPOINT = (
    'Restoring from checkpoint failed. This is most likely due to a mismatch '
    'between the current graph and the graph from the checkpoint')

# A checkpoint that lacks a variable the model_fn creates: 2.15's restore
# raised NotFoundError.
CheckpointMissingVariableError = with_tf_class(IncompatibleCheckpointError,
                                               tf.errors.NotFoundError)
# A checkpoint holding a variable the model_fn creates in another shape:
# 2.15's restore (reference variables) raised InvalidArgumentError.
CheckpointShapeMismatchError = with_tf_class(IncompatibleCheckpointError,
                                             tf.errors.InvalidArgumentError)
# Checkpoints that do not read back whole: 2.15's restore raised
# DataLossError.
CheckpointDataLossError = with_tf_class(UnusableCheckpointsError,
                                        tf.errors.DataLossError)
