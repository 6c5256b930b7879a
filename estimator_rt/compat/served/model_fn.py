"""tf.estimator 2.15's `model_fn` module, over estimator_rt's EstimatorSpec.

`EstimatorSpec` is the runtime's (a namedtuple of 2.15's fields, validated
with 2.15's messages); `_TPUEstimatorSpec`, which TPUEstimatorSpec
subclassed in 2.15, is the runtime's TPUEstimatorSpec (isinstance checks
of code that handles both hold). The metric keys and the model_fn argument
check are 2.15's, and so are the field checks 2.15's EstimatorSpec and
TPUEstimatorSpec ran (`_validate_estimator_spec_*`, `_validate_*`,
`_check_is_tensor*`), which libraries' own spec classes call: each is the
runtime's check of that field (estimator_rt/spec.py), with 2.15's
exception classes and the start of its messages.
"""

import tensorflow as tf
from tensorflow.python.util import function_utils

from estimator_rt.canned.base import call_logit_fn
from estimator_rt import spec as spec_lib
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


# What a tensor of another graph than the model_fn's is refused with:
# `.format(what, name)`.
_default_graph_error_message_template = spec_lib.OTHER_GRAPH


def _check_is_tensor(x, tensor_name):
  """`x` if it is a dense tensor.

  Raises:
    TypeError: it is not ('<tensor_name> must be Tensor, given: ...').
  """
  return spec_lib.check_tensor(x, tensor_name)


def _check_is_tensor_or_operation(x, name):
  """Raises TypeError ('<name> must be Operation or Tensor, given: ...')
  unless `x` is a tensor or an op."""
  spec_lib.check_tensor_or_operation(x, name)


def _validate_estimator_spec_train_op(train_op, mode):
  """`train_op` (a variable's op for a variable) as EstimatorSpec takes it.

  Raises:
    ValueError: it is None in TRAIN ('Missing train_op.'), or of another
      graph.
    TypeError: it is neither a tensor nor an op.
  """
  return spec_lib.validated_train(train_op, None, None, mode)


def _validate_estimator_spec_loss(loss, mode):
  """`loss` as EstimatorSpec takes it: a scalar tensor (shape [1] is
  reshaped), None outside TRAIN and EVAL.

  Raises:
    ValueError: it is None in TRAIN or EVAL ('Missing loss.'), has more than
      one element, or is of another graph.
    TypeError: it is not a tensor.
  """
  return spec_lib.validated_loss(loss, mode)


def _validate_estimator_spec_predictions(predictions, mode):
  """`predictions` (a tensor or a dict of tensors) as EstimatorSpec takes
  them; {} for None outside PREDICT.

  Raises:
    ValueError: None in PREDICT ('Missing predictions.'), or of another
      graph.
    TypeError: a value is not a tensor.
  """
  return spec_lib.validated_predictions(predictions, mode)


def _validate_estimator_spec_export_outputs(export_outputs, predictions,
                                            mode):
  """PREDICT's `export_outputs` completed as 2.15 did (a PredictOutput of
  `predictions` as the default signature when None); other modes' as
  given.

  Raises:
    ValueError: several outputs and none is the default signature.
    TypeError: not a dict of ExportOutputs.
  """
  return spec_lib.validated_export_outputs(export_outputs, predictions,
                                           mode)[0]


def _validate_estimator_spec_hooks(hooks):
  """`hooks` as a tuple, if each is a SessionRunHook.

  Raises:
    TypeError: one is not ('All hooks must be SessionRunHook instances').
  """
  return tuple(spec_lib.hook_list('hooks', list(hooks or [])))


def _validate_eval_metric_ops(eval_metric_ops):
  """`eval_metric_ops` as a dict ({} for None) of `(value, update_op)`
  pairs or metric objects; in a graph, a Keras 2 metric becomes its
  `(result(), update_op)` pair and its variables join the LOCAL_VARIABLES
  and METRIC_VARIABLES collections.

  Raises:
    ValueError: a Keras 2 metric was never updated, or a value is of
      another graph.
    TypeError: not a dict, or a value is neither a pair nor a metric.
  """
  return spec_lib.validated_eval_metric_ops(eval_metric_ops, None)


def _update_variable_collection(collection_name, vars_to_add):
  """Adds each of `vars_to_add` the collection does not hold yet."""
  spec_lib.add_to_collection(collection_name, list(vars_to_add))


def _validate_scaffold(scaffold):
  """`scaffold`, or an empty Scaffold for None.

  Raises:
    TypeError: it is not a tf.compat.v1.train.Scaffold.
  """
  return spec_lib.validated_scaffold(scaffold)


__all__ = ['EstimatorSpec', 'ModeKeys', 'call_logit_fn']
