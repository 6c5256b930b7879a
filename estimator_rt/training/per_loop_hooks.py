"""tf.estimator's SessionRunHooks whose meaning survives being called once
per loop of steps instead of once per step.

A SessionRunHook's `before_run`/`after_run` surround one `session.run`;
where a run holds a loop of many steps (the eager engine's compiled loops,
the graph engine's in-graph loop), most hooks would see every
`steps_per_loop`-th step only. These do not need to see more, because the
runtime's controller does their work between loops, on the exact steps:

  - `StopAtStepHook(num_steps | last_step)`: the runtime's StopAtStepHook,
    which cuts the loop at its last step;
  - `NanTensorHook`: every loop stops at the first non-finite loss, before
    anything is saved;
  - `StepCounterHook`: `global_step/sec` is written at every summary step
    (into model_dir). One given its own `output_dir` or `summary_writer`
    writes there, on its own schedule: where steps can run one per
    session run (the graph engine), it is a hook that needs every step;
    the eager engine has no session and leaves it to the controller.

Only these classes themselves qualify (a subclass may do more per step).
Any other hook needs one step per `session.run` (or, in the eager engine,
a TF1-style model_fn).
"""

from typing import List, Sequence, Tuple

import tensorflow as tf

from estimator_rt.training import hooks as hooks_lib

_train = tf.compat.v1.train
SessionRunHook = tf.compat.v1.train.SessionRunHook

# The classes whose work the controller does: they become nothing.
_OWNED_BY_THE_CONTROLLER = (_train.NanTensorHook, _train.StepCounterHook)


def _writes_its_own_events(hook: SessionRunHook) -> bool:
  """A StepCounterHook given a directory or writer of its own (TensorFlow's
  private attributes: the class has no public ones)."""
  return bool(getattr(hook, '_output_dir', None) or
              getattr(hook, '_summary_writer', None))


def split(session_hooks: Sequence[SessionRunHook], *,
          sessions_per_step: bool = True
          ) -> Tuple[List[hooks_lib.Hook], List[SessionRunHook]]:
  """(the runtime hooks doing what the per-loop-safe hooks in
  `session_hooks` did, the hooks that need every step), in order.

  `sessions_per_step`: whether the engine can run a step per session run
  (the graph engine); then a StepCounterHook with its own output_dir or
  summary_writer needs every step, as in tf.estimator 2.15, where it wrote
  `global_step/sec` there."""
  runtime, per_step = [], []
  for hook in session_hooks:
    kind = type(hook)
    if (kind is _train.StepCounterHook and sessions_per_step and
        _writes_its_own_events(hook)):
      per_step.append(hook)
    elif kind is _train.StopAtStepHook:
      # Its two settings are private attributes of TensorFlow's class.
      runtime.append(hooks_lib.StopAtStepHook(
          num_steps=hook._num_steps,  # pylint: disable=protected-access
          last_step=hook._last_step))  # pylint: disable=protected-access
    elif kind in _OWNED_BY_THE_CONTROLLER:
      continue
    else:
      per_step.append(hook)
  return runtime, per_step


def names(session_hooks: Sequence[SessionRunHook]) -> str:
  """'LoggingTensorHook, ProfilerHook': the hooks' class names, for a
  message."""
  return ', '.join(type(hook).__name__ for hook in session_hooks)
