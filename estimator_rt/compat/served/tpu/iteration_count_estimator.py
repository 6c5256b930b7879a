"""tensorflow_estimator.python.estimator.tpu.iteration_count_estimator:
tf.estimator's estimate of how many steps fit in a time budget, for
TPUConfig's time-based iterations_per_loop ('<N>s', '<N>m', '<N>h').

estimator_rt cuts time-based training loops itself; this is the helper
2.15's _TPUStopAtStepHook used, with 2.15's semantics, for programs and
tests that drive it directly.
"""

import collections

from absl import logging
import numpy as np

from estimator_rt.core.errors import UserInputError

RuntimeCounter = collections.namedtuple(
    'RuntimeCounter', ['runtime_secs', 'steps', 'step_time_secs'])


class IterationCountEstimator:
  """The steps to run in `total_secs`, from the last loops' times.

  Each `update(runtime_secs, count)` records a loop (the oldest is dropped
  past `capacity`); `get(total_secs)` (rounded) moves the last estimate to
  total_secs / mean step time, and keeps it once the last loop (within
  10%) or the mean loop (within 5%) took about `total_secs` and the step
  time is stable (standard deviation < 0.03 s after more than `capacity`
  loops). With no loop recorded it is 1.
  """

  def __init__(self, capacity=20):
    self._reset(capacity=capacity)

  def _reset(self, capacity=20):
    """Forgets the recorded loops.

    Raises:
      ValueError: `capacity` is not positive.
    """
    if capacity <= 0:
      raise UserInputError('IterationCountEstimator `capacity` must be '
                           f'positive. Actual:{capacity}.')
    self._buffer_wheel = collections.deque([])
    self._capacity = capacity
    self._min_iterations = 1
    self._last_iterations = self._min_iterations
    self._sample_count = 0

  def _column_mean(self, column):
    if not self._buffer_wheel:
      return 0
    return np.mean(self._buffer_wheel, axis=0)[column]

  def _mean_runtime_secs(self):
    return self._column_mean(0)

  def _mean_step_time_secs(self):
    return self._column_mean(2)

  def _std_step_time_secs(self):
    return np.std(self._buffer_wheel, axis=0)[2] if self._buffer_wheel else 0

  def _diff_less_than_percentage(self, actual, target, percentage):
    """Whether |target - actual| is at most `percentage` % of `target`.

    Raises:
      ValueError: `actual` or `target` is zero.
    """
    if actual == 0:
      raise UserInputError('Invalid `actual` value. Value must not be zero.')
    if target == 0:
      raise UserInputError('Invalid `target` value. Value must not be zero.')
    return float(abs(target - actual)) / target <= percentage * 0.01

  def _is_step_time_stable(self):
    return (self._std_step_time_secs() < 0.03 and
            self._sample_count > self._capacity)

  def update(self, runtime_secs, count):
    """Records a loop of `count` steps that took `runtime_secs`; a loop
    with a non-positive time or count is ignored."""
    if runtime_secs <= 0.0 or count <= 0:
      logging.debug('IterationCountEstimator: ignored a loop of %s steps in '
                    '%s s (both must be positive).', count, runtime_secs)
      return
    if len(self._buffer_wheel) >= self._capacity:
      self._buffer_wheel.popleft()
    self._buffer_wheel.append(RuntimeCounter(
        runtime_secs=runtime_secs, steps=count,
        step_time_secs=float(runtime_secs) / count))
    self._sample_count += 1

  def get(self, total_secs):
    """The estimated steps to run in `total_secs` (see the class).

    Raises:
      ValueError: `total_secs` is not positive.
    """
    if total_secs <= 0:
      raise UserInputError('Invalid `total_secs`. It must be positive '
                           f'number. Actual:{total_secs}')
    if not self._buffer_wheel:
      return self._min_iterations
    projected = total_secs / self._mean_step_time_secs()
    delta = projected - self._last_iterations
    last_runtime_secs = self._buffer_wheel[-1].runtime_secs
    if ((self._diff_less_than_percentage(last_runtime_secs, total_secs, 10) or
         self._diff_less_than_percentage(self._mean_runtime_secs(),
                                         total_secs, 5)) and
        self._is_step_time_stable()):
      delta = 0
    self._last_iterations = max(self._last_iterations + delta,
                                self._min_iterations)
    logging.info('IterationCountEstimator: target %.3f s, last loop %.3f s, '
                 'next loop %.2f steps.', total_secs, last_runtime_secs,
                 self._last_iterations)
    return int(self._last_iterations + 0.5)  # Rounded, as in 2.15.
