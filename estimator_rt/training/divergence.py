"""What counts as diverged training state, for both engines' loops.

Checked once per loop, on every floating-point variable a checkpoint
holds: a NaN anywhere, or an infinity in a trainable variable (a weight
that overflowed), is divergence; nothing is saved from it and training
stops (`controller.divergence_error`). Infinities in other state are
values programs keep on purpose (a best loss initialised to inf, a -inf
mask), which tf.estimator 2.15 trained, saved and restored: they pass.
The checkpoint check (core/checkpoints.py), which cannot tell trainable
from not in a name-based checkpoint, refuses NaN only.
"""

from typing import Sequence

import tensorflow as tf


def state_is_sound(variables: Sequence[tf.Variable]) -> tf.Tensor:
  """A bool scalar: whether `variables` (floating-point ones) hold no NaN
  and their trainable ones no infinity.

  One reduction per variable, run once per loop (not per step). Mirrored
  copies are identical after each synchronous update, so reading one copy
  decides for every replica and every worker alike.
  """
  checks = [tf.reduce_all(tf.math.is_finite(v)) if v.trainable else
            tf.logical_not(tf.reduce_any(tf.math.is_nan(v)))
            for v in variables]
  return tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)
