"""tf.estimator.experimental's early stopping, as runtime hooks.

tf.estimator 2.15 made these SessionRunHooks; here they are `hooks.Hook`s,
which both engines run between training loops (in a synchronous cluster
every worker acts on a stop any of them decides, through the controller's
agreement). The predicate runs at most once per `run_every_secs` seconds or
per `run_every_steps` steps, and reads the evaluation event files, so it
sees the results of local evaluation and of a separate evaluator task.
"""

import collections
import operator
import os
import time
from typing import Any, Callable, Dict, Iterator, Optional

from absl import logging
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.core import summaries
from estimator_rt.core.errors import one_line
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError
from estimator_rt.training.hooks import Hook


# tf.estimator's: the event files of an evaluation directory.
_EVENT_FILE_GLOB_PATTERN = 'events.out.tfevents.*'


def _summaries(eval_dir: str) -> Iterator[Any]:
  """The `Event` protos of the event files in `eval_dir` (none if there is
  no such directory); a file that turns out corrupt (or is being written)
  is read up to there, with a warning."""
  if not tf.io.gfile.isdir(eval_dir):
    return
  for path in sorted(tf.io.gfile.glob(
      os.path.join(eval_dir, _EVENT_FILE_GLOB_PATTERN))):
    try:
      # Looked up at each call: code (and tf.estimator's tests) patch it.
      for event in tf.compat.v1.train.summary_iterator(path):
        yield event
    except tf.errors.DataLossError as e:
      logging.warning('Reading eval metrics: the rest of %s is skipped (%s).',
                      path, one_line(e))


def read_eval_metrics(eval_dir: str) -> 'collections.OrderedDict':
  """{global step: {metric: value}} of the evaluations in `eval_dir`, by
  step (tf.estimator's `read_eval_metrics`): every scalar of its event
  files (`_summaries`), {} if there are none or no such directory."""
  by_step: Dict[int, Dict[str, float]] = collections.defaultdict(dict)
  for event in _summaries(eval_dir):
    for value in event.summary.value:
      number = summaries.scalar_value(value)
      if number is not None:
        by_step[event.step][value.tag] = number
  return collections.OrderedDict(sorted(by_step.items()))


def threshold_crossed_fn(eval_dir: str, metric_name: str, threshold: float,
                         min_steps: int, *, higher: bool) -> Callable[[], bool]:
  """A should_stop_fn: whether an evaluation in `eval_dir` at a step >=
  `min_steps` has `metric_name` above (`higher`) or below `threshold`."""
  crossed = operator.gt if higher else operator.lt

  def should_stop() -> bool:
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step >= min_steps and metric_name in metrics and crossed(
          metrics[metric_name], threshold):
        logging.info('At step %d, metric %r is %s, %s the threshold %s of '
                     'early stopping.', step, metric_name,
                     metrics[metric_name],
                     'above' if higher else 'below', threshold)
        return True
    return False

  return should_stop


def no_improvement_fn(eval_dir: str, metric_name: str, patience: int,
                      min_steps: int, *, higher: bool) -> Callable[[], bool]:
  """A should_stop_fn: whether `metric_name` in the evaluations of
  `eval_dir` at steps >= `min_steps` went `patience` global steps without
  improving on its best (increasing if `higher`, else decreasing)."""
  better = operator.gt if higher else operator.lt

  def should_stop() -> bool:
    best, best_step = None, None
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step < min_steps or metric_name not in metrics:
        continue
      value = metrics[metric_name]
      if best is None or better(value, best):
        best, best_step = value, step
      if step - best_step >= patience:
        logging.info('No %s of metric %r for %d steps (at most %d): early '
                     'stopping.', 'increase' if higher else 'decrease',
                     metric_name, step - best_step, patience)
        return True
    return False

  return should_stop


class _StopOnPredicateHook(Hook):
  """Stops training when `should_stop_fn()` returns True, asked at most
  once per `run_every_secs` (or every `run_every_steps` steps)."""

  def __init__(self, should_stop_fn: Callable[[], bool],
               run_every_secs: Optional[float],
               run_every_steps: Optional[int]):
    # 2.15's words and exception classes first, which code matched.
    if not callable(should_stop_fn):
      raise UserTypeError(
          '`should_stop_fn` must be callable: make_early_stopping_hook: '
          f'should_stop_fn={should_stop_fn!r} is not.')
    if run_every_secs is not None and run_every_steps is not None:
      raise UserInputError(
          'Only one of `run_every_secs` and `run_every_steps` must be set: '
          f'got run_every_secs={run_every_secs!r} and run_every_steps='
          f'{run_every_steps!r}.')
    if run_every_secs is None and run_every_steps is None:
      raise UserInputError(
          'make_early_stopping_hook: give one of run_every_secs and '
          'run_every_steps (both are None).')
    self._should_stop_fn = should_stop_fn
    self._every_secs = run_every_secs
    self._every_steps = run_every_steps
    self._last_time = None
    self._last_step = None

  def begin(self, *, global_step, max_steps):
    del max_steps
    self._last_time, self._last_step = time.time(), global_step

  def after_loop(self, result):
    step = result.global_step
    if self._every_steps is not None:
      if step - self._last_step < self._every_steps:
        return None
    elif time.time() - self._last_time < self._every_secs:
      return None
    self._last_time, self._last_step = time.time(), step
    if self._should_stop_fn():
      logging.info('Early stopping at global step %d.', step)
      return True
    return None


def make_early_stopping_hook(estimator, should_stop_fn: Callable[[], bool],
                             run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None) -> Hook:
  """tf.estimator's: a hook that stops training once `should_stop_fn()`
  returns True (asked every `run_every_secs` or `run_every_steps`)."""
  del estimator  # Every task asks; the controller makes workers agree.
  return _StopOnPredicateHook(should_stop_fn, run_every_secs,
                              run_every_steps)


def _threshold_hook(estimator, metric_name, threshold, eval_dir, min_steps,
                    run_every_secs, run_every_steps, *, higher: bool):
  should_stop = threshold_crossed_fn(eval_dir or estimator.eval_dir(),
                                     metric_name, threshold, min_steps,
                                     higher=higher)
  return make_early_stopping_hook(estimator, should_stop, run_every_secs,
                                  run_every_steps)


def stop_if_higher_hook(estimator, metric_name: str, threshold: float,
                        eval_dir: Optional[str] = None, min_steps: int = 0,
                        run_every_secs: Optional[float] = 60,
                        run_every_steps: Optional[int] = None) -> Hook:
  """Stops once an evaluation at step >= `min_steps` has `metric_name`
  above `threshold`."""
  return _threshold_hook(estimator, metric_name, threshold, eval_dir,
                         min_steps, run_every_secs, run_every_steps,
                         higher=True)


def stop_if_lower_hook(estimator, metric_name: str, threshold: float,
                       eval_dir: Optional[str] = None, min_steps: int = 0,
                       run_every_secs: Optional[float] = 60,
                       run_every_steps: Optional[int] = None) -> Hook:
  """Stops once an evaluation at step >= `min_steps` has `metric_name`
  below `threshold`."""
  return _threshold_hook(estimator, metric_name, threshold, eval_dir,
                         min_steps, run_every_secs, run_every_steps,
                         higher=False)


def _no_improvement_hook(estimator, metric_name, patience, eval_dir,
                         min_steps, run_every_secs, run_every_steps, *,
                         higher: bool):
  should_stop = no_improvement_fn(eval_dir or estimator.eval_dir(),
                                  metric_name, patience, min_steps,
                                  higher=higher)
  return make_early_stopping_hook(estimator, should_stop, run_every_secs,
                                  run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name: str,
                             max_steps_without_increase: int,
                             eval_dir: Optional[str] = None,
                             min_steps: int = 0,
                             run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None) -> Hook:
  """Stops once `metric_name` has not increased over its best for
  `max_steps_without_increase` global steps of evaluations."""
  return _no_improvement_hook(estimator, metric_name,
                              max_steps_without_increase, eval_dir,
                              min_steps, run_every_secs, run_every_steps,
                              higher=True)


def stop_if_no_decrease_hook(estimator, metric_name: str,
                             max_steps_without_decrease: int,
                             eval_dir: Optional[str] = None,
                             min_steps: int = 0,
                             run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None) -> Hook:
  """Stops once `metric_name` has not decreased below its best for
  `max_steps_without_decrease` global steps of evaluations."""
  return _no_improvement_hook(estimator, metric_name,
                              max_steps_without_decrease, eval_dir,
                              min_steps, run_every_secs, run_every_steps,
                              higher=False)


class _StopAtCheckpointStepHook(Hook):
  """Stops once model_dir holds a checkpoint at `last_step` or later."""

  def __init__(self, model_dir: str, last_step: int, wait_secs: float):
    self._model_dir = model_dir
    self._last_step = last_step
    self._wait_secs = wait_secs
    self._last_look = None

  def after_loop(self, result):
    if result.global_step < self._last_step:
      return None
    if self._last_look and time.time() - self._last_look < self._wait_secs:
      return None
    self._last_look = time.time()
    latest = checkpoints.latest_checkpoint(self._model_dir)
    return bool(latest and
                checkpoints.checkpoint_step(latest) >= self._last_step)
