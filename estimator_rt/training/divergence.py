"""What counts as diverged training, for both engines' loops.

A step whose loss is NaN ends its loop at once, as 2.15's `NanTensorHook`
(on every training) stopped at a NaN loss; an infinite loss trains on, as
there (the weights it leads to are checked below, and a NaN loss follows).

Checked once per loop, on every floating-point variable a checkpoint
holds. A variable is sound when it holds no NaN and, if it is trainable, no
infinity (a weight that overflowed). Training has diverged when a variable
that was sound when training started is not any more: nothing is saved
from that state and training stops (`controller.divergence_error`).

A variable that was not sound when training started is not held to it:
infinities and NaNs a program keeps on purpose (a best loss initialised to
inf, a -inf mask, a NaN "unset" marker, trainable or not) are values
tf.estimator 2.15, which checked no variable, trained, saved and restored.
The checkpoint check (core/checkpoints.py), which cannot tell trainable
from not in a name-based checkpoint, refuses NaN only.
"""

from typing import List, Sequence

import numpy as np
import tensorflow as tf


def loss_is_sound(loss) -> tf.Tensor:
  """A bool scalar: `loss` is not NaN (in a loop's condition)."""
  return tf.logical_not(tf.math.is_nan(loss))


def loss_value_is_sound(loss) -> bool:
  """`loss_is_sound` of a loss value read back (a float or NumPy value)."""
  return not np.isnan(loss)


def _is_sound(variable) -> tf.Tensor:
  if variable.trainable:
    return tf.reduce_all(tf.math.is_finite(variable))
  return tf.logical_not(tf.reduce_any(tf.math.is_nan(variable)))


def sound_each(variables: Sequence[tf.Variable]) -> tf.Tensor:
  """A bool vector: whether each of `variables` (floating-point ones) is
  sound. One reduction per variable, run once per loop (not per step).
  Mirrored copies are identical after each synchronous update, so reading
  one copy decides for every replica and every worker alike."""
  checks = [_is_sound(v) for v in variables]
  return tf.stack(checks) if checks else tf.zeros([0], tf.bool)


def state_is_sound(variables: Sequence[tf.Variable]) -> tf.Tensor:
  """A bool scalar: whether all of `variables` are sound (for a list of
  the variables that were sound when training started: `watched`)."""
  return tf.reduce_all(sound_each(variables))


def watched(variables: Sequence[tf.Variable]) -> List[tf.Variable]:
  """Those of `variables` that are sound now, when training starts (read
  eagerly): the ones `state_is_sound` is to hold to it."""
  if not variables:
    return []
  sound = sound_each(variables).numpy()
  return [v for v, ok in zip(variables, sound) if ok]


def stayed_sound(sound_now, sound_at_start) -> bool:
  """Whether every variable sound at the start (a `sound_each` value read
  then) is still sound (`sound_each` read now)."""
  return bool(np.all(np.logical_or(sound_now, np.logical_not(sound_at_start))))
