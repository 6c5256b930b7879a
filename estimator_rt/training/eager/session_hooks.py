"""tf.estimator's SessionRunHooks given to a TF2 model_fn's training.

The eager engine has no session and runs many steps per compiled call, so a
SessionRunHook cannot see every step's `session.run`. tf.estimator's own
hooks whose meaning survives are run as the runtime's between-loop hooks
(`per_loop_hooks`: StopAtStepHook, NanTensorHook, StepCounterHook). A hook
that overrides `begin` only (it adds something to the graph, as hooks that
create a variable do, and never looks at a step or a session) has its
`begin` called once, eagerly, before training, as tf.estimator called it
before the session existed. Any other SessionRunHook is refused in one line
naming it (it needs the graph engine: a TF1-style model_fn).
"""

from typing import List, Sequence

import tensorflow as tf

from estimator_rt.training import hooks as hooks_lib
from estimator_rt.training import per_loop_hooks
from estimator_rt.core.errors import UserInputError


_PER_SESSION_METHODS = ('after_create_session', 'before_run', 'after_run',
                        'end')


def _overrides_begin_only(kind: type) -> bool:
  base = tf.compat.v1.train.SessionRunHook
  return all(getattr(kind, name) is getattr(base, name)
             for name in _PER_SESSION_METHODS)


class _BeginOnly(hooks_lib.Hook):
  """A SessionRunHook that overrides `begin` only, as a runtime hook."""

  def __init__(self, hook: tf.compat.v1.train.SessionRunHook):
    self._hook = hook

  def begin(self, *, global_step, max_steps) -> None:
    del global_step, max_steps
    self._hook.begin()


def as_runtime_hooks(session_hooks: Sequence[tf.compat.v1.train.SessionRunHook]
                     ) -> List[hooks_lib.Hook]:
  """The runtime hooks that do what `session_hooks` did (see above).

  Raises:
    UserInputError: a hook needs every step's session run.
  """
  runtime, per_step = per_loop_hooks.split(session_hooks,
                                           sessions_per_step=False)
  runtime += [_BeginOnly(hook) for hook in per_step
              if _overrides_begin_only(type(hook))]
  per_step = [hook for hook in per_step
              if not _overrides_begin_only(type(hook))]
  if per_step:
    raise UserInputError(
        f'hooks: {type(per_step[0]).__name__} is a SessionRunHook, which '
        'needs a session around every step; this model_fn runs in the eager '
        'engine (compiled loops of many steps). Use an estimator_rt Hook (run '
        'between loops), or a TF1-style model_fn, which runs in the graph '
        'engine. StopAtStepHook, NanTensorHook and StepCounterHook are taken '
        'as they are.')
  return runtime
