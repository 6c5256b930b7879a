"""tf.estimator 2.15's `model_fn` module, over estimator_rt's EstimatorSpec.

`EstimatorSpec` is the runtime's (a namedtuple of 2.15's fields, validated
with 2.15's messages); `_TPUEstimatorSpec`, which TPUEstimatorSpec
subclassed in 2.15, is the runtime's TPUEstimatorSpec (isinstance checks
of code that handles both hold). The metric keys and the model_fn argument
check are 2.15's.
"""

import tensorflow as tf
from tensorflow.python.util import function_utils

from estimator_rt.canned.base import call_logit_fn
from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.spec import EstimatorSpec
from estimator_rt.tpu import TPUEstimatorSpec as _TPUEstimatorSpec

# The name an evaluation reports the mean loss under, and the one heads
# report the mean of the unreduced loss under.
LOSS_METRIC_KEY = 'loss'
AVERAGE_LOSS_METRIC_KEY = 'average_loss'

# The arguments a model_fn may declare.
_VALID_MODEL_FN_ARGS = frozenset(
    ['features', 'labels', 'mode', 'params', 'self', 'config'])


def verify_model_fn_args(model_fn, params):
  """Checks `model_fn`'s arguments as 2.15's Estimator did: it takes
  `features`, takes `params` if params are given (a warning if it takes
  them and none are), and nothing else than _VALID_MODEL_FN_ARGS.

  Raises:
    ValueError: one of these does not hold.
  """
  args = set(function_utils.fn_args(model_fn))
  if 'features' not in args:
    raise UserInputError(
        f'model_fn ({model_fn}) must include features argument.')
  if params is not None and 'params' not in args:
    raise UserInputError(
        f'model_fn ({model_fn}) does not include params argument, but params '
        f'({params}) is passed to Estimator.')
  if params is None and 'params' in args:
    tf.compat.v1.logging.warn(
        "Estimator's model_fn (%s) includes params argument, but params are "
        'not passed to Estimator.', model_fn)
  unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
  if unexpected:
    raise UserInputError(
        f'model_fn ({model_fn}) has following not expected args: '
        f'{unexpected}')


__all__ = ['EstimatorSpec', 'ModeKeys', 'call_logit_fn']
