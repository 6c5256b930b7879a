"""The evaluator task: a sidecar that evaluates each newest checkpoint once.

It polls model_dir, evaluates the newest checkpoint it has not evaluated
(skipping older unseen ones: a slow evaluator keeps up rather than falling
behind), writes evaluation summaries, runs the exporters, and exits after
evaluating the checkpoint at `max_steps`. The chief may delete an old
checkpoint while the evaluator reads it; that checkpoint is skipped.
"""

import time
from typing import Any, Dict, Optional

from absl import logging
import tensorflow as tf

from estimator_rt import checkpoints
from estimator_rt.errors import UserInputError


def _complete(checkpoint_path: str) -> bool:
  """Whether a checkpoint's index and data files are all still there."""
  return (tf.io.gfile.exists(checkpoint_path + '.index') and
          bool(tf.io.gfile.glob(checkpoint_path + '.data-*')))


def run_evaluator(evaluator, *, model_dir: str, max_steps: Optional[int],
                  throttle_secs: float = 0, poll_secs: float = 0.5,
                  timeout_secs: Optional[float] = None
                  ) -> Optional[Dict[str, Any]]:
  """Evaluates new checkpoints until the one at `max_steps`.

  Args:
    evaluator: a `training.CheckpointEvaluator` (evaluates a checkpoint once
      and runs the exporters).
    model_dir: where the chief writes checkpoints.
    max_steps: the step training ends at; None evaluates forever.
    throttle_secs: at least this long between the starts of evaluations;
      the checkpoint at `max_steps` is evaluated as soon as it appears.
    poll_secs: how often to look for a new checkpoint.
    timeout_secs: give up when no new checkpoint appeared for this long
      (None waits forever, as tf.estimator did).

  Returns:
    The last evaluation's metrics.

  Raises:
    UserInputError: `timeout_secs` passed with no new checkpoint.
  """
  last_start = None
  last_progress = time.time()
  while True:
    choice = checkpoints.choose_checkpoint(model_dir)
    latest = choice.path
    step = checkpoints.checkpoint_step(latest) if latest else None
    # Training is over when the checkpoint at max_steps exists, even if it
    # is unusable (damaged after it was written): then the newest usable
    # one is the final result, rather than waiting for one that never comes.
    final_unusable = max_steps is not None and any(
        checkpoints.checkpoint_step(path) >= max_steps
        for path, _ in choice.skipped)
    is_new = step is not None and step not in evaluator.evaluated_steps
    is_final = is_new and max_steps is not None and (
        step >= max_steps or final_unusable)
    if final_unusable and not is_new and evaluator.evaluated_steps:
      logging.warning('The final checkpoint is unusable; the last evaluation '
                      '(step %d) stands as the final one.',
                      evaluator.evaluated_steps[-1])
      return evaluator.last_result
    # The final checkpoint is never held back: the job is over once it is
    # evaluated, and the launcher (or a person) is waiting for that.
    if is_new and (is_final or last_start is None or
                   time.time() - last_start >= throttle_secs):
      last_start = last_progress = time.time()
      try:
        evaluator.evaluate(latest, is_final=is_final)
      except Exception as e:  # pylint: disable=broad-except
        if _complete(latest):
          raise
        # The chief deleted it (keep_checkpoint_max) between our listing
        # and our reading: a newer one exists, and that is the one to
        # evaluate. Whatever the error says, a checkpoint whose files are
        # gone is the explanation.
        logging.warning('Checkpoint %s vanished while being evaluated (%s: '
                        '%s); moving on to a newer one.', latest,
                        type(e).__name__, getattr(e, 'message', e))
        time.sleep(poll_secs)
        continue
      if is_final:
        return evaluator.last_result
      continue
    if timeout_secs is not None and time.time() - last_progress > timeout_secs:
      raise UserInputError(
          f'evaluator: no new checkpoint in model_dir {model_dir!r} for '
          f'{timeout_secs:.0f} s (last evaluated step: '
          f'{evaluator.evaluated_steps[-1] if evaluator.evaluated_steps else None}'
          f', waiting for max_steps={max_steps}).')
    time.sleep(poll_secs)
