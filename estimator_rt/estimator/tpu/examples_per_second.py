"""What tf.estimator 2.15's TPUEstimator reported about speed without a TPU,
reported between training loops.

2.15's TPUEstimator took `RunConfig.log_step_count_steps` away from the
Estimator (no `loss = ..., step = N` line, no `global_step/sec` of its own)
and added an `ExamplesPerSecondHook` to the training hooks instead: every
`ceil(log_step_count_steps / iterations_per_loop)` steps (or, with
`iterations_per_loop='<N>s'`, every N seconds) it logged
`global_step/sec: R` and `examples/sec: R * batch size` and, when
`save_summary_steps` was set, wrote both as summaries into model_dir.

That hook is a SessionRunHook, which would need one session run per step;
here the same report is made by a runtime hook after each training loop
(`iterations_per_loop` steps), at the first loop end at or past each
reporting step, with the rates measured between reports.
"""

import time
from typing import Optional

from estimator_rt.core import summaries
from estimator_rt.core import tf_log
from estimator_rt.training.hooks import Hook


class ExamplesPerSecondLoopHook(Hook):
  """Logs (and writes) global_step/sec and examples/sec between loops.

  Args (keyword-only):
    batch_size: the global batch size of a training step.
    every_n_steps: report once at least this many steps passed since the
      last report (None: by time).
    every_n_secs: report once at least this many seconds passed (used when
      every_n_steps is None).
    output_dir: the directory whose event file gets the two scalars
      (None: logged only).
  """

  def __init__(self, *, batch_size: int, every_n_steps: Optional[int],
               every_n_secs: Optional[float], output_dir: Optional[str]):
    self._batch_size = batch_size
    self._every_n_steps = every_n_steps
    self._every_n_secs = every_n_secs
    self._output_dir = output_dir
    self._last = None  # (global step, time) of the last report.

  def begin(self, *, global_step: int, max_steps: Optional[int]) -> None:
    del global_step, max_steps
    self._last = None

  def after_loop(self, result) -> None:
    step, now = result.global_step, time.time()
    if self._last is None:
      # As StepCounterHook: the first step (here the first loop, which
      # also pays for building and warming up) starts the clock.
      self._last = (step, now)
      return None
    last_step, last_time = self._last
    if self._every_n_steps is not None:
      due = step - last_step >= self._every_n_steps
    else:
      due = now - last_time >= self._every_n_secs
    if not due or step <= last_step:
      return None
    steps_per_sec = (step - last_step) / max(now - last_time, 1e-9)
    examples_per_sec = self._batch_size * steps_per_sec
    if self._output_dir is not None:
      summaries.directory_writer(self._output_dir).write(
          {'global_step/sec': steps_per_sec,
           'examples/sec': examples_per_sec}, step)
    tf_log.info('global_step/sec: %g', steps_per_sec)
    tf_log.info('examples/sec: %g', examples_per_sec)
    self._last = (step, now)
    return None
