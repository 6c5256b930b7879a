"""A tf_keras optimizer's learning rate as the Keras 3 optimizer that
model_to_estimator trains with takes it.

model_to_estimator trains a tf_keras model with a Keras 3 optimizer of the
same class and config. Two tf_keras settings have no Keras 3 field:

  - a tf_keras `LearningRateSchedule` (Keras 3 takes only its own
    classes): the schedule object itself is called, custom ones included;
  - the legacy optimizers' `decay`: the learning rate at step t is
    `lr(t) / (1 + decay * t)`, as their `_decayed_lr` computed it (Keras 3
    optimizers dropped the argument).

Both become one Keras 3 `LearningRateSchedule` of the optimizer's step
count. The Keras 3 optimizer's `iterations` counts the steps it applied,
which is the global step tf.estimator 2.15 gave the optimizer (its
model_to_estimator cloned the model with `optimizer_iterations` set to the
global step), so the rates are 2.15's step by step.
"""

import functools
from typing import Any, Dict, Optional

import tensorflow as tf


def _tf_keras_schedule(optimizer) -> Optional[Any]:
  """The tf_keras LearningRateSchedule object `optimizer` was made with
  (a legacy optimizer keeps it in `_hyper`, a newer one in
  `_learning_rate`), or None for a number."""
  try:
    from tf_keras.optimizers import schedules  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  hyper = getattr(optimizer, '_hyper', None) or {}
  for value in (hyper.get('learning_rate'),
                getattr(optimizer, '_learning_rate', None)):
    if isinstance(value, schedules.LearningRateSchedule):
      return value
  return None


@functools.lru_cache(maxsize=None)
def _schedule_class():
  """The Keras 3 schedule class (made once, Keras 3 imported on first use,
  as model_to_estimator imports it)."""
  import keras  # pylint: disable=g-import-not-at-top

  class TfKerasLearningRate(keras.optimizers.schedules.LearningRateSchedule):
    """`learning_rate(step) / (1 + decay * step)`, `learning_rate` a number
    or a tf_keras schedule, in float32 (the legacy optimizers' variable
    dtype, in which they computed it)."""

    def __init__(self, learning_rate, decay: float):
      self.learning_rate = learning_rate
      self.decay = decay

    def __call__(self, step):
      step = tf.cast(step, tf.float32)
      rate = (self.learning_rate(step) if callable(self.learning_rate)
              else self.learning_rate)
      rate = tf.cast(rate, tf.float32)
      if self.decay:
        rate = rate / (1.0 + tf.constant(self.decay, tf.float32) * step)
      return rate

    def get_config(self) -> Dict[str, Any]:
      rate = self.learning_rate
      return {'learning_rate': (rate.get_config() if callable(rate) else rate),
              'decay': self.decay}

  return TfKerasLearningRate


def keras3_learning_rate(optimizer, config: Dict[str, Any]) -> Optional[Any]:
  """The Keras 3 learning rate for a tf_keras `optimizer` whose config is
  `config`: a schedule (see the module docstring) when it has a schedule
  or a `decay`, None when its config's number serves as it is."""
  schedule = _tf_keras_schedule(optimizer)
  decay = float(config.get('decay') or 0.0)
  if schedule is None and not decay:
    return None
  if schedule is None:
    schedule = float(config['learning_rate'])
  return _schedule_class()(schedule, decay)
