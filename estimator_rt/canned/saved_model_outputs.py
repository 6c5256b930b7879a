"""Reading an estimator's SavedModel back as model_fn outputs: what tf.estimator
2.15's `SavedModelEstimator` did with a loaded signature (its module's
helpers, which estimator_rt serves under their 2.15 names).

A SavedModel that an Estimator exported for TRAIN or EVAL has, in its
signature of that mode, the inputs (features and labels, by key) and the
outputs `loss`, `predictions/<key>` and, per metric, `metrics/<name>/value`
and `metrics/<name>/update_op` ('/' separating the parts, as 2.15's
`_SupervisedOutput` named them); a PREDICT one has the predictions alone.

The outputs' names are export.py's (the writer's); SavedModelEstimator
(canned/saved_model_estimator.py) reads them with these helpers.
"""

import os

import tensorflow as tf
from tensorflow.python.saved_model import constants  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.saved_model import signature_constants  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.errors import UserInputError
from estimator_rt.export import LOSS_NAME
from estimator_rt.export import METRIC_UPDATE_SUFFIX
from estimator_rt.export import METRIC_VALUE_SUFFIX
from estimator_rt.export import METRICS_NAME
from estimator_rt.export import PREDICTIONS_NAME
from estimator_rt.export import SEPARATOR
from estimator_rt.mode_keys import ModeKeys
# A features or labels tensor given alone is keyed so, as 2.15 keyed it.
_SINGLE_TENSOR_KEYS = {'feature': 'feature', 'label': 'label'}


def saved_model_checkpoint(saved_model_dir: str) -> str:
  """The variables checkpoint of the SavedModel in `saved_model_dir`
  (`<dir>/variables/variables`).

  Raises:
    UserInputError: (a ValueError) it has none.
  """
  variables = os.path.join(tf.compat.as_text(saved_model_dir), 'variables')
  if not tf.io.gfile.exists(os.path.join(variables, 'variables.index')):
    raise UserInputError(
        'Directory provided has an invalid SavedModel format: '
        f'{saved_model_dir} (no variables/variables.index there).')
  return os.path.join(variables, 'variables')


def clear_saved_model_collections() -> None:
  """Empties the default graph's collections that SavedModel loading fills
  and export expects empty (assets, init ops, the train op)."""
  for key in (tf.saved_model.ASSETS_KEY,
              tf.compat.v1.saved_model.LEGACY_INIT_OP_KEY,
              tf.compat.v1.saved_model.MAIN_OP_KEY,
              constants.TRAIN_OP_KEY):
    del tf.compat.v1.get_collection_ref(key)[:]


def check_same_dtype_and_shape(tensor, tensor_info, name: str) -> None:
  """`tensor` has the dtype of the signature input `tensor_info` and a
  compatible shape.

  Raises:
    UserInputError: (a ValueError) it has not; the message names input
      `name` and what differs.
  """
  expected_dtype = tf.dtypes.DType(tensor_info.dtype)
  expected_shape = tf.TensorShape(tensor_info.tensor_shape)
  dtype_error = tensor.dtype != expected_dtype
  shape_error = not tensor.shape.is_compatible_with(expected_shape)
  if dtype_error or shape_error:
    message = f'Tensor shape and/or dtype validation failed for input {name}:'
    if dtype_error:
      message += f'\n\tExpected dtype: {expected_dtype}, Got: {tensor.dtype}'
    if shape_error:
      message += f'\n\tExpected shape: {expected_shape}, Got: {tensor.shape}'
    raise UserInputError(message)


def _as_dict(tensors, field: str):
  if not isinstance(tensors, dict):
    return {_SINGLE_TENSOR_KEYS[field]: tensors}
  return tensors


def input_map(signature_def, features, labels):
  """{name of a signature input in the SavedModel's graph (and `^name`,
  its use as a control input): the features' or labels' tensor of that
  input's key}: what loading the graph replaces its inputs with. A tensor
  given alone is keyed 'feature' (features) or 'label' (labels).

  Raises:
    UserInputError: (a ValueError) an input's key is in neither, or its
      tensor's dtype or shape is not the input's.
  """
  features = _as_dict(features, 'feature')
  labels = None if labels is None else _as_dict(labels, 'label')
  found = {}
  for key, tensor_info in signature_def.inputs.items():
    name = tensor_info.name.split(':')[0]
    if key in features:
      tensor = features[key]
    elif labels is not None and key in labels:
      tensor = labels[key]
    else:
      raise UserInputError(
          f'Key "{key}" not found in features or labels passed in to the '
          f'model function. All required keys: {list(signature_def.inputs)}')
    check_same_dtype_and_shape(tensor, tensor_info, key)
    found[name] = found['^' + name] = tensor
  return found


def eval_metrics(output_dict):
  """{metric name: (value, update_op)} of the outputs
  `metrics/<name>/value` that have a `metrics/<name>/update_op` beside
  them (a name may hold '/')."""
  metrics = {}
  for key, tensor in output_dict.items():
    parts = key.split(SEPARATOR)
    if parts[0] != METRICS_NAME or parts[-1] != METRIC_VALUE_SUFFIX:
      continue
    name = SEPARATOR.join(parts[:-1])
    update = output_dict.get(f'{name}{SEPARATOR}{METRIC_UPDATE_SUFFIX}')
    if update is not None:
      metrics[name] = (tensor, update)
  return metrics


def mode_outputs(mode, output_dict, method_name):
  """(loss, predictions, metrics) of a signature's outputs: in PREDICT,
  (None, the outputs, None); in TRAIN and EVAL, `loss`, the
  `predictions/...` outputs and eval_metrics.

  Raises:
    UserInputError: (a RuntimeError) a TRAIN or EVAL signature whose method
      is not that mode's.
  """
  if mode == ModeKeys.PREDICT:
    return None, output_dict, None
  expected = (signature_constants.SUPERVISED_EVAL_METHOD_NAME
              if mode == ModeKeys.EVAL else
              signature_constants.SUPERVISED_TRAIN_METHOD_NAME)
  if method_name != expected:
    raise SavedModelContentError(
        f'Invalid SignatureDef method name for mode {mode}.\n\tExpected: '
        f'{expected}\n\tGot: {method_name}\nPlease ensure that the '
        'SavedModel was exported with '
        '`tf.estimator.experimental_export_all_saved_models()`.')
  predictions = {key: value for key, value in output_dict.items()
                 if key.split(SEPARATOR)[0] == PREDICTIONS_NAME}
  return output_dict[LOSS_NAME], predictions, eval_metrics(output_dict)


class SavedModelContentError(UserInputError, RuntimeError):
  """The SavedModel lacks what a mode needs (its MetaGraph, a signature of
  the mode's method, a single train op), or the graph it is imported into
  has a global step already: 2.15 raised a RuntimeError."""
