"""tf.estimator 2.15's `estimator` module, over estimator_rt's Estimator.

`Estimator` (2.15's v1 class, `tf.compat.v1.estimator.Estimator`) and
`EstimatorV2` (`tf.estimator.Estimator`) are both the runtime's Estimator,
which has 2.15's protected methods subclasses call (`_call_model_fn`,
`_call_input_fn`, `_get_iterator_from_input_fn`, `_create_global_step`,
...: estimator_rt/protected_methods.py) and refuses, as 2.15 did,
subclasses that override its members (estimator_rt/overrides.py). Here
are the module's private helpers that code imports: writing a dict of
results as a summary, reading a model_dir's global step, checking hooks
and overrides.
"""

import tensorflow as tf

from estimator_rt import checkpoints
from estimator_rt.canned import base as canned_base
from estimator_rt import overrides
from estimator_rt import summaries
from estimator_rt.errors import UserInputError
from estimator_rt.errors import UserTypeError
from estimator_rt.estimator import Estimator
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.warm_starting import VocabInfo
from estimator_rt.warm_starting import WarmStartSettings

EstimatorV2 = Estimator

# What libraries' canned estimators record their type in (2.15's gauge).
_canned_estimator_api_gauge = canned_base.API_GAUGE

# The arguments a model_fn may declare.
_VALID_MODEL_FN_ARGS = frozenset(
    ['features', 'labels', 'mode', 'params', 'self', 'config'])


def _dict_to_str(dictionary):
  """`k = v, ...` of `dictionary` by key, bytes values left out."""
  return ', '.join(f'{k} = {v}' for k, v in sorted(dictionary.items())
                   if not isinstance(v, bytes))


def _write_dict_to_summary(output_dir, dictionary, current_global_step):
  """Writes `dictionary` as one summary event at `current_global_step` in
  `output_dir`: numbers as scalars, bytes holding a serialized Summary as
  its values (tagged `key/i`), arrays as tensors; None values and
  'global_step' are left out."""
  tf.compat.v1.logging.info('Saving dict for global step %d: %s',
                            current_global_step, _dict_to_str(dictionary))
  summaries.write_dict(output_dir, dictionary, current_global_step)


def _write_checkpoint_path_to_summary(output_dir, checkpoint_path,
                                      current_global_step):
  """Writes `checkpoint_path` as a string tensor tagged 'checkpoint_path'
  at `current_global_step` in `output_dir`."""
  writer = summaries.ScalarWriter(output_dir)
  writer.write_summary(summaries.checkpoint_path_summary(checkpoint_path),
                       current_global_step)
  writer.close()


def _load_global_step_from_checkpoint_dir(checkpoint_dir):
  """The global step of `checkpoint_dir`'s latest checkpoint; 0 if there is
  none (or it cannot be read)."""
  try:
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    return checkpoints.checkpoint_step(latest) if latest else 0
  except Exception:  # pylint: disable=broad-except
    return 0


def _check_checkpoint_available(model_dir):
  """Raises ValueError if `model_dir` holds no checkpoint."""
  if not tf.train.latest_checkpoint(model_dir):
    raise UserInputError(
        f'Could not find trained model in model_dir: {model_dir}.')


def _assert_members_are_not_overridden(cls, obj):
  """Raises ValueError if `obj`'s class overrides a member of `cls`, other
  than the few 2.15 allowed (see estimator_rt/overrides.py)."""
  overrides.check_not_overridden(cls, obj)


def _check_hooks_type(hooks):
  """`hooks` as a list, if each is a SessionRunHook.

  Raises:
    TypeError: one is not.
  """
  hooks = list(hooks or [])
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise UserTypeError(f'Hooks must be a SessionRunHook, given: {hook}')
  return hooks


def _check_listeners_type(saving_listeners):
  """`saving_listeners` as a list, if each is a CheckpointSaverListener.

  Raises:
    TypeError: one is not.
  """
  listeners = list(saving_listeners or [])
  for listener in listeners:
    if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
      raise UserTypeError(
          'saving_listeners must be a list of CheckpointSaverListener, '
          f'given: {listener}')
  return listeners


__all__ = ['Estimator', 'EstimatorV2', 'ModeKeys', 'VocabInfo',
           'WarmStartSettings']
