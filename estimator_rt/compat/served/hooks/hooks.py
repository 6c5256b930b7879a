"""tensorflow_estimator.python.estimator.hooks.hooks, over estimator_rt.

`InMemoryEvaluatorHook` is estimator_rt's
(estimator_rt/training/graph/in_memory_evaluator.py);
`_StopAtCheckpointStepHook` is 2.15's SessionRunHook, reading the step of
model_dir's newest usable checkpoint as the runtime finds it
(estimator_rt/core/checkpoints.py); `make_stop_at_checkpoint_step_hook`
(also tf.estimator.experimental's) returns 2.15's SessionRunHooks, which
Estimator.train runs in either engine and a chief's StopAtStepHook also
stops an evaluation at its step, as in 2.15.
"""

import time

import tensorflow as tf
from tensorflow.python.training import training_util

from estimator_rt.core import checkpoints
from estimator_rt.training import early_stopping as runtime_early_stopping
from estimator_rt.core.errors import UserInputError
from estimator_rt.training.graph.in_memory_evaluator import InMemoryEvaluatorHook  # pylint: disable=unused-import


def _checkpoint_global_step(model_dir: str) -> int:
  """The global step of model_dir's newest usable checkpoint (0: none)."""
  try:
    path = checkpoints.latest_checkpoint(model_dir)
  except UserInputError:  # Checkpoints, none usable: none written yet.
    return 0
  return 0 if path is None else checkpoints.checkpoint_step(path)


class _StopAtCheckpointStepHook(tf.compat.v1.train.SessionRunHook):
  """Requests stop once model_dir holds a checkpoint at `last_step` or later
  (for a worker: the chief writes the checkpoints), looking only when this
  task's step reached `last_step`, and then at most once every
  `wait_after_file_check_secs`."""

  def __init__(self, model_dir, last_step, wait_after_file_check_secs=30):
    if last_step is None:
      raise UserInputError('last_step must be specified.')
    if model_dir is None:
      raise UserInputError('model_dir must be specified.')
    self._model_dir = model_dir
    self._last_step = last_step
    self._wait_after_file_check_secs = wait_after_file_check_secs

  def as_runtime_hook(self):
    """What Estimator.train runs in this hook's place (engine.split_hooks):
    the runtime's hook of the same rule, checked after each loop, in
    either engine."""
    return runtime_early_stopping._StopAtCheckpointStepHook(  # pylint: disable=protected-access
        self._model_dir, self._last_step, self._wait_after_file_check_secs)

  def begin(self):
    self._global_step_tensor = training_util._get_or_create_global_step_read()  # pylint: disable=protected-access
    if self._global_step_tensor is None:
      raise RuntimeError(
          'Global step should be created to use StopAtCheckpointStepHook.')

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context, run_values):
    global_step = run_values.results + 1
    if global_step >= self._last_step:
      # The chief's checkpoint at the last step must be on disk.
      if _checkpoint_global_step(self._model_dir) >= self._last_step:
        run_context.request_stop()
      else:
        time.sleep(self._wait_after_file_check_secs)


def make_stop_at_checkpoint_step_hook(estimator, last_step,
                                      wait_after_file_check_secs=30):
  """tf.estimator 2.15's: the chief (which writes the checkpoints) gets a
  `tf.compat.v1.train.StopAtStepHook` at `last_step`; another worker a
  `_StopAtCheckpointStepHook`, which stops it once model_dir holds the
  chief's checkpoint at `last_step` or later."""
  if estimator.config.is_chief:
    return tf.compat.v1.train.StopAtStepHook(last_step=last_step)
  return _StopAtCheckpointStepHook(
      model_dir=estimator.model_dir, last_step=last_step,
      wait_after_file_check_secs=wait_after_file_check_secs)
