"""Exporters: write SavedModels during and after train_and_evaluate.

Each exporter writes under `<model_dir>/export/<name>/<unix time>`, called
with the evaluation result of the checkpoint it exports.
"""

import os
import re
from typing import Any, Callable, Dict, Optional

from absl import logging
import tensorflow as tf

from tensorflow.python.util import function_utils

from estimator_rt.core import summaries
from estimator_rt.core import tf_log
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError


def _check_name(name):
  # A name with '/' is a path under model_dir/export, as in tf.estimator
  # 2.15 (export/a/b/<unix time> for 'a/b'); an empty or non-string one
  # 2.15's train_and_evaluate refused, so it is refused when it is made.
  if not isinstance(name, str) or not name:
    raise UserInputError(
        f'exporter name={name!r} must be a non-empty string.')


def _loss_smaller(best_eval_result: Dict[str, Any],
                  current_eval_result: Dict[str, Any]) -> bool:
  """BestExporter's default comparison: whether `current_eval_result` has
  a smaller 'loss' than `best_eval_result`.

  Raises:
    UserInputError (a ValueError): either is empty or has no 'loss'.
  """
  for name, result in (('best_eval_result', best_eval_result),
                       ('current_eval_result', current_eval_result)):
    if not result or 'loss' not in result:
      raise UserInputError(
          f'{name} cannot be empty or no loss is found in it: got '
          f'{shorten(result)}; BestExporter compares the evaluations\' '
          "'loss' unless given a compare_fn.")
  return best_eval_result['loss'] > current_eval_result['loss']


_COMPARE_FN_ARGS = ('best_eval_result', 'current_eval_result')


def _verify_compare_fn_args(compare_fn: Callable) -> None:
  """Raises UserInputError (a ValueError) unless `compare_fn` takes
  exactly `best_eval_result` and `current_eval_result` (by these names:
  BestExporter passes them so), as tf.estimator 2.15 required."""
  args = set(function_utils.fn_args(compare_fn))
  for name in _COMPARE_FN_ARGS:
    if name not in args:
      raise UserInputError(
          f'compare_fn ({compare_fn}) must include {name} argument: '
          'BestExporter calls compare_fn(best_eval_result=..., '
          'current_eval_result=...).')
  unexpected = sorted(args - set(_COMPARE_FN_ARGS))
  if unexpected:
    raise UserInputError(
        f'compare_fn ({compare_fn}) has following not expected args: '
        f'{unexpected}')


class Exporter:
  """Base class, as tf.estimator's: a `name` and an `export` method.

  A subclass of this (or of tf.estimator.Exporter, through the
  compatibility layer) only needs those two; train_and_evaluate calls
  `export` after each evaluation with the directory under model_dir/export
  that belongs to this exporter.
  """

  @property
  def name(self) -> str:
    raise NotImplementedError

  def export(self, estimator, export_path: str, checkpoint_path: str,
             eval_result: Dict[str, Any],
             is_the_final_export: bool) -> Optional[bytes]:
    """Exports `checkpoint_path` under `export_path` if this exporter's rule
    says so; returns the export directory (what the estimator's
    `export_saved_model` returned: bytes, as in tf.estimator), or None."""
    raise NotImplementedError


class _SavedModelExporter(Exporter):
  """Exports SavedModels when `should_export` says so (this class: after
  every evaluation, as tf.estimator 2.15's), keeping the newest.

  Args:
    name: subdirectory of model_dir/export (a name with '/' is a path
      under it, as in tf.estimator).
    serving_input_receiver_fn: as for `Estimator.export_saved_model`; None
      infers the inputs from the training data's features.
    assets_extra, as_text: as for `Estimator.export_saved_model`.
    exports_to_keep: keep only this many newest exports (None keeps all).
  """

  def __init__(self, name: str, serving_input_receiver_fn: Optional[Callable],
               assets_extra: Optional[Dict[str, str]] = None,
               as_text: bool = False, *,
               exports_to_keep: Optional[int] = None):
    _check_name(name)
    if exports_to_keep is not None and exports_to_keep < 1:
      raise UserInputError(
          '`exports_to_keep`, if provided, must be positive number. Got '
          f'{exports_to_keep!r} ({type(self).__name__}: give an int >= 1, or '
          'None to keep every export).')
    self._name = name
    self._serving_input_receiver_fn = serving_input_receiver_fn
    self._assets_extra = assets_extra
    self._as_text = as_text
    self._exports_to_keep = exports_to_keep

  @property
  def name(self) -> str:
    return self._name

  def should_export(self, *, eval_result: Dict[str, Any],
                    is_the_final_export: bool) -> bool:
    """Whether to export the checkpoint evaluated as `eval_result`."""
    del eval_result, is_the_final_export
    return True

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    """See `Exporter.export`."""
    if not self.should_export(eval_result=eval_result,
                              is_the_final_export=is_the_final_export):
      return None
    path = estimator.export_saved_model(
        export_path, self._serving_input_receiver_fn,
        assets_extra=self._assets_extra, as_text=self._as_text,
        checkpoint_path=checkpoint_path)
    self._garbage_collect(export_path)
    return path

  def _garbage_collect(self, base: str) -> None:
    if self._exports_to_keep is None:
      return
    exports = sorted((int(d), d) for d in tf.io.gfile.listdir(base)
                     if d.strip('/').isdigit())
    for _, old in exports[:-self._exports_to_keep]:
      logging.info('Removing old export %s', os.path.join(base, old))
      tf.io.gfile.rmtree(os.path.join(base, old.strip('/')))


class LatestExporter(_SavedModelExporter):
  """Exports after every evaluation, keeping the newest `exports_to_keep`."""

  def __init__(self, name: str = 'latest',
               serving_input_receiver_fn: Optional[Callable] = None,
               assets_extra: Optional[Dict[str, str]] = None,
               as_text: bool = False,
               exports_to_keep: Optional[int] = 5):
    super().__init__(name, serving_input_receiver_fn, assets_extra, as_text,
                     exports_to_keep=exports_to_keep)


class FinalExporter(_SavedModelExporter):
  """Exports once, after the final evaluation."""

  def __init__(self, name: str = 'final',
               serving_input_receiver_fn: Optional[Callable] = None,
               assets_extra: Optional[Dict[str, str]] = None,
               as_text: bool = False):
    super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)

  def should_export(self, *, eval_result, is_the_final_export):
    if is_the_final_export:
      tf_log.info('Performing the final export in the end of training.')
    return is_the_final_export


# The evaluation directory an event_file_pattern starts with ('eval/...',
# 'eval_<name>/...'): its scalars are the history read.
_EVENT_FILE_PATTERN = re.compile(r'(eval(?:_[^/*?\[\]]+)?)/')


class BestExporter(_SavedModelExporter):
  """Exports when an evaluation beats the best one, as tf.estimator 2.15's.

  The exporter's first evaluation is always exported, also in a job
  resumed after a preemption (2.15's rule, which its tests check: the
  first export after a restart is made whatever the earlier runs
  exported); each later one is exported when `compare_fn` finds it better
  than the best so far. The best so far is read from the evaluation event
  files when the exporter first sees a model_dir, which matters only for
  an exporter that already exported and is then used with another
  model_dir (as in 2.15).

  Args:
    name: subdirectory of model_dir/export (a name with '/' is a path
      under it, as in tf.estimator).
    serving_input_receiver_fn, assets_extra, as_text: see LatestExporter.
    event_file_pattern: tf.estimator's: where earlier results are, relative
      to model_dir: a pattern under 'eval/' or 'eval_<name>/' reads that
      evaluation's results; None, or another, reads none (as 2.15 took
      any).
    compare_fn: `compare_fn(best_eval_result, current_eval_result)` returns
      True when current is better. Default: smaller 'loss'.
    exports_to_keep: see LatestExporter.
    metric_name: the metric `compare_fn` looks at, used to read the best
      earlier value from event files (default 'loss').
    eval_name: the EvalSpec name whose event files hold earlier results
      (instead of `event_file_pattern`).
  """

  def __init__(self, name: str = 'best_exporter',
               serving_input_receiver_fn: Optional[Callable] = None,
               event_file_pattern: str = 'eval/*.tfevents.*',
               compare_fn: Callable = _loss_smaller,
               assets_extra: Optional[Dict[str, str]] = None,
               as_text: bool = False,
               exports_to_keep: Optional[int] = 5, *,
               metric_name: str = 'loss', eval_name: Optional[str] = None):
    super().__init__(name, serving_input_receiver_fn, assets_extra, as_text,
                     exports_to_keep=exports_to_keep)
    if compare_fn is None:
      raise UserInputError(
          '`compare_fn` must not be None (BestExporter: leave it out to '
          "compare the evaluations' loss).")
    _verify_compare_fn_args(compare_fn)
    # Any pattern, as 2.15 took it: one under an evaluation directory reads
    # that evaluation's history; None (2.15: no history read) or another
    # reads none, and the first evaluation is exported.
    self._reads_history = eval_name is not None
    if eval_name is None and isinstance(event_file_pattern, str):
      match = _EVENT_FILE_PATTERN.match(event_file_pattern)
      if match is not None:
        self._reads_history = True
        eval_name = match.group(1)[len('eval_'):] or None
    self._compare_fn = compare_fn
    self._metric_name = metric_name
    self._eval_name = eval_name
    self._best: Optional[Dict[str, Any]] = None
    # The model_dir whose event files gave `_best`, and whether this
    # exporter exported yet (its first evaluation always is).
    self._model_dir: Optional[str] = None
    self._has_exported = False

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    if estimator.model_dir != self._model_dir and self._reads_history:
      # An eval_result without a step (tf.estimator's allowed one, and None)
      # judges every step of the history.
      self._load_history(estimator.model_dir,
                         (eval_result or {}).get('global_step'))
    return super().export(estimator, export_path, checkpoint_path,
                          eval_result, is_the_final_export)

  def _load_history(self, model_dir: str,
                    current_step: Optional[int]) -> None:
    tf_log.info('Loading best metric from event files.')
    self._model_dir = model_dir
    points = summaries.read_scalars(
        summaries.eval_dir(model_dir, self._eval_name)).get(
            self._metric_name, [])
    for step, value in points:
      if step == current_step:
        continue  # That is the result being judged now.
      candidate = {self._metric_name: value, 'global_step': step}
      if self._best is None or self._compare_fn(
          best_eval_result=self._best, current_eval_result=candidate):
        self._best = candidate

  def should_export(self, *, eval_result, is_the_final_export):
    if (self._best is None or not self._has_exported or
        self._compare_fn(best_eval_result=self._best,
                         current_eval_result=eval_result)):
      self._best = dict(eval_result) if eval_result is not None else None
      self._has_exported = True
      tf_log.info('Performing best model export.')
      return True
    return False
