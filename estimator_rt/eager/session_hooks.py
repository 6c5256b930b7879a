"""tf.estimator's SessionRunHooks given to a TF2 model_fn's training.

The eager engine has no session and runs many steps per compiled call, so a
SessionRunHook cannot see every step's `session.run`. tf.estimator's own
hooks whose meaning survives are run as the runtime's between-loop hooks:

  - `StopAtStepHook(num_steps | last_step)`: the runtime's StopAtStepHook;
  - `NanTensorHook`: the training loop already stops at the first
    non-finite loss, before anything is saved (so it adds nothing);
  - `StepCounterHook`: `global_step/sec` is already written at every
    summary step.

Any other SessionRunHook is refused in one line naming it (it needs the
graph engine: a TF1-style model_fn).
"""

from typing import List, Sequence

import tensorflow as tf

from estimator_rt import hooks as hooks_lib
from estimator_rt.errors import UserInputError

_train = tf.compat.v1.train


def _equivalent(hook) -> List[hooks_lib.Hook]:
  if type(hook) is _train.StopAtStepHook:  # pylint: disable=unidiomatic-typecheck
    # Its two settings are private attributes of TensorFlow's class.
    return [hooks_lib.StopAtStepHook(num_steps=hook._num_steps,  # pylint: disable=protected-access
                                     last_step=hook._last_step)]  # pylint: disable=protected-access
  if type(hook) in (_train.NanTensorHook, _train.StepCounterHook):  # pylint: disable=unidiomatic-typecheck
    return []
  raise UserInputError(
      f'hooks: {type(hook).__name__} is a SessionRunHook, which needs a '
      'session around every step; this model_fn runs in the eager engine '
      '(compiled loops of many steps). Use an estimator_rt Hook (run between '
      'loops), or a TF1-style model_fn, which runs in the graph engine. '
      'StopAtStepHook, NanTensorHook and StepCounterHook are taken as they '
      'are.')


def as_runtime_hooks(session_hooks: Sequence[tf.compat.v1.train.SessionRunHook]
                     ) -> List[hooks_lib.Hook]:
  """The runtime hooks that do what `session_hooks` did (see above)."""
  return [made for hook in session_hooks for made in _equivalent(hook)]
