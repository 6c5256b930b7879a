"""What the evaluator task needs to know about model_dir.

The evaluator (train_and_evaluate.py: `_TrainingExecutor.run_evaluator`) is a sidecar
that evaluates the newest checkpoint it has not evaluated (skipping older
unseen ones: a slow evaluator keeps up rather than falling behind), writes
evaluation summaries, runs the exporters, and exits after evaluating the
checkpoint at `max_steps`. It looks for a new checkpoint every `POLL_SECS`,
starts evaluations at most once per `throttle_secs` but never holds the
final checkpoint back, and does not wait forever for a final checkpoint
that was damaged after it was written. The chief may delete an old
checkpoint while the evaluator reads it; that checkpoint is skipped.
These are the helpers it reads model_dir with.
"""

from typing import Optional

import tensorflow as tf

from estimator_rt.core import checkpoints

# How often the evaluator looks for a new checkpoint (tf.estimator waited
# throttle_secs).
POLL_SECS = 0.5


def _complete(checkpoint_path: str) -> bool:
  """Whether a checkpoint's index and data files are all still there."""
  return (tf.io.gfile.exists(checkpoint_path + '.index') and
          bool(checkpoints.data_files(checkpoint_path)))


def vanished(checkpoint_path) -> bool:
  """Whether a checkpoint's files are gone (the chief removed it:
  keep_checkpoint_max) or partly gone."""
  return isinstance(checkpoint_path, str) and not _complete(checkpoint_path)


def final_checkpoint_unusable(model_dir: Optional[str],
                              max_steps: Optional[int]) -> bool:
  """Whether model_dir holds a checkpoint at `max_steps` or later that
  cannot be used (damaged after it was written): training is over, and the
  newest usable checkpoint is the final result."""
  if model_dir is None or not max_steps:
    return False
  choice = checkpoints.choose_checkpoint(model_dir)
  return any(checkpoints.checkpoint_step(path) >= max_steps
             for path, _ in choice.skipped)


def newest_step(model_dir: Optional[str]) -> int:
  """The step of the newest checkpoint in model_dir (-1: none), from the
  file names only (cheap: for polling)."""
  for path in checkpoints.checkpoint_candidates(model_dir):
    try:
      return checkpoints.checkpoint_step(path)
    except ValueError:
      continue
  return -1
