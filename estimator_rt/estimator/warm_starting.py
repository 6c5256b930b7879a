"""`WarmStartSettings`: which variables to initialize from which checkpoint,
as tf.estimator's `warm_start_from` took them."""

import collections
import os
from typing import Any, Optional

import tensorflow as tf

from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import shorten

# tf.estimator's (tf.compat.v1.train.VocabInfo is the same class).
VocabInfo = tf.compat.v1.train.VocabInfo

_ALL = '.*'


class WarmStartSettings(collections.namedtuple('WarmStartSettings', [
    'ckpt_to_initialize_from', 'vars_to_warm_start',
    'var_name_to_vocab_info', 'var_name_to_prev_var_name'])):
  """tf.estimator's: warm-start `vars_to_warm_start` (a regular expression
  over trainable variable names, or a list of names or variables) from
  `ckpt_to_initialize_from` (a checkpoint or a model_dir), remapping
  vocabularies (`var_name_to_vocab_info`) and names
  (`var_name_to_prev_var_name`).

  The graph engine applies all of it with TensorFlow's own
  `tf.compat.v1.train.warm_start`, as tf.estimator did; the eager engine
  takes the model's variables by creation order from a checkpoint of the
  same model_fn, so it accepts only the default selection ('.*', no
  vocabulary or name maps).
  """

  def __new__(cls, ckpt_to_initialize_from: str,
              vars_to_warm_start: Any = _ALL,
              var_name_to_vocab_info: Optional[dict] = None,
              var_name_to_prev_var_name: Optional[dict] = None):
    if not ckpt_to_initialize_from:
      raise UserInputError(
          '`ckpt_to_initialize_from` MUST be set in WarmStartSettings '
          f'(ckpt_to_initialize_from={ckpt_to_initialize_from!r}): give a '
          'checkpoint or a directory holding one.')
    return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                           var_name_to_vocab_info or {},
                           var_name_to_prev_var_name or {})

  @property
  def is_default(self) -> bool:
    """Every trainable variable, by its own name, no vocabulary remap."""
    return (self.vars_to_warm_start == _ALL and
            not self.var_name_to_vocab_info and
            not self.var_name_to_prev_var_name)


def settings_of(warm_start_from) -> Optional[WarmStartSettings]:
  """`warm_start_from` (None, a path, or WarmStartSettings) as settings.

  A path is a checkpoint, a directory holding checkpoints, or a SavedModel
  directory, whose variables are then the checkpoint (as in tf.estimator
  2.15); bytes are taken as a path too.

  Raises:
    UserInputError: it is none of these (a ValueError, as 2.15's).
  """
  if warm_start_from is None or isinstance(warm_start_from,
                                           WarmStartSettings):
    return warm_start_from
  if isinstance(warm_start_from, bytes):
    warm_start_from = warm_start_from.decode()
  if isinstance(warm_start_from, str):
    variables = os.path.join(warm_start_from, 'variables', 'variables')
    if tf.io.gfile.exists(variables + '.index'):
      tf.compat.v1.logging.info('Warm-starting from a SavedModel')
      return WarmStartSettings(variables)
    return WarmStartSettings(warm_start_from)
  raise UserInputError(
      'warm_start_from must be a string or a WarmStartSettings, instead got '
      f'{type(warm_start_from)}: warm_start_from={shorten(warm_start_from)} '
      'must be a checkpoint path, a model_dir, a SavedModel directory or a '
      'WarmStartSettings.')
