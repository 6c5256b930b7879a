"""Helpers shared by the bundled model_fns: params, features, label shapes.

Every check here runs on *static* shapes, so a mismatch is reported once, at
trace time, as an `ert.ModelFnError` that names the model_fn and both shapes,
instead of as a broadcasting error (or, worse, a silently broadcast loss)
deep inside a compiled step. Dimensions that are unknown when the model_fn is
traced (a batch dimension of None) cannot be checked here; the loss op
itself still fails at run time if they disagree.
"""

import math
from typing import Any, Mapping, Optional

import keras
import tensorflow as tf

from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import shorten
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec

# The features key the bundled input_fns produce and the model_fns read.
FEATURES_KEY = 'x'

# The most weights one Dense layer of a bundled model_fn may have: 2**28,
# 1 GiB of float32. A larger one is a typo in params (hidden_units or
# n_classes of a billion), refused before its initializer allocates it.
MAX_LAYER_WEIGHTS = 2**28


def eager_engine_model_fn(model_fn):
  """Marks a bundled model_fn as estimator_rt's TF2 API (it returns a Keras
  optimizer in TRAIN mode, which only the eager engine applies), so that on
  a fresh model_dir its first call is the eager engine's build call, not a
  graph build whose only outcome would be to send it there (see
  `estimator_rt.training.engine_choice`, rule 3). Returns `model_fn`."""
  model_fn.eager_engine_reason = (
      f'it is {model_fn.__module__}.{model_fn.__name__}, a TF2 model_fn '
      'of estimator_rt')
  return model_fn


def merge_params(name: str, defaults: Mapping[str, Any],
                 params: Optional[Mapping[str, Any]]) -> dict:
  """Returns `defaults` overridden by `params`, after checking `params`.

  Keys of `params` that `defaults` does not know are kept (the runtime puts
  its own keys, such as 'batch_size', into the same dict) and ignored.

  Args:
    name: the model_fn's name, for error messages.
    defaults: the model_fn's DEFAULT_PARAMS.
    params: what the model_fn received; None means "all defaults".

  Raises:
    ModelFnError: `params` is neither None nor a mapping.
  """
  if params is None:
    return dict(defaults)
  if not isinstance(params, Mapping):
    raise ModelFnError(
        f'{name}: params must be a dict, got {type(params).__name__}: '
        f'{shorten(params)}')
  merged = dict(defaults)
  merged.update(params)
  return merged


def check_mode(name: str, mode: str) -> None:
  """Raises ModelFnError if `mode` is not one of `ModeKeys.ALL`."""
  if mode not in ModeKeys.ALL:
    raise ModelFnError(
        f'{name}: mode={mode!r} is not one of {ModeKeys.ALL}.')


def positive_number(name: str, params: Mapping[str, Any], key: str) -> float:
  """Returns `params[key]` as a float, raising ModelFnError unless it is > 0."""
  value = params[key]
  if isinstance(value, bool) or not isinstance(value, (int, float)) or (
      not math.isfinite(value) or value <= 0):
    raise ModelFnError(
        f'{name}: params[{key!r}] must be a finite positive number, got '
        f'{shorten(value)}.')
  return float(value)


def n_classes(name: str, params: Mapping[str, Any]) -> int:
  """Returns params['n_classes'], raising ModelFnError unless it is >= 2."""
  value = params['n_classes']
  if isinstance(value, bool) or not isinstance(value, int) or value < 2:
    raise ModelFnError(
        f'{name}: params[\'n_classes\'] must be an integer >= 2, got '
        f'{shorten(value)}.')
  return value


def check_dense_size(name: str, what: str, fan_in: Optional[int],
                     units: int) -> None:
  """Refuses a Dense layer of more than MAX_LAYER_WEIGHTS weights.

  Args:
    name: the model_fn's name, for error messages.
    what: the param that sets `units`, e.g. "params['hidden_units'][0]".
    fan_in: the layer's input size (None when unknown at trace time: then
      nothing is checked).
    units: the layer's output size.
  """
  if fan_in is not None and fan_in * units > MAX_LAYER_WEIGHTS:
    raise ModelFnError(
        f'{name}: {what}={units} makes a Dense layer of {fan_in} x {units} '
        f'= {fan_in * units} weights; at most {MAX_LAYER_WEIGHTS} (1 GiB of '
        f'float32) are built. Lower {what}.')


def make_optimizer(name: str,
                   params: Mapping[str, Any]) -> keras.optimizers.Optimizer:
  """Builds the Keras optimizer named by params['optimizer'].

  Args:
    name: the model_fn's name, for error messages.
    params: must hold 'optimizer' ('adam' or 'sgd', case-insensitive) and
      'learning_rate' (> 0).

  Raises:
    ModelFnError: an unknown optimizer name or a bad learning rate.
  """
  learning_rate = positive_number(name, params, 'learning_rate')
  kind = params['optimizer']
  kind = kind.lower() if isinstance(kind, str) else kind
  if kind == 'adam':
    return keras.optimizers.Adam(learning_rate)
  if kind == 'sgd':
    return keras.optimizers.SGD(learning_rate)
  raise ModelFnError(
      f"{name}: params['optimizer'] must be 'adam' or 'sgd', got "
      f'{shorten(params["optimizer"])}.')


def get_inputs(name: str, features: Any) -> tf.Tensor:
  """Returns the model input: `features['x']`, or `features` if a tensor.

  The result is cast to float32, the dtype the Keras layers compute in, so
  integer pixels (uint8 images from TFDS, say) can be fed unchanged.

  Raises:
    ModelFnError: `features` is a dict without 'x', or neither a dict nor a
      tensor.
  """
  if isinstance(features, Mapping):
    if FEATURES_KEY not in features:
      raise ModelFnError(
          f'{name}: features must hold the key {FEATURES_KEY!r}; got keys '
          f'{sorted(features)}. Have the input_fn return '
          f'({{{FEATURES_KEY!r}: tensor}}, labels).')
    x = features[FEATURES_KEY]
  else:
    x = features
  if not tf.is_tensor(x):
    try:
      x = tf.convert_to_tensor(x)
    except (TypeError, ValueError) as e:
      raise ModelFnError(
          f'{name}: features must be a tensor or a dict with key '
          f'{FEATURES_KEY!r}, got {type(features).__name__}.') from e
  return tf.cast(x, tf.float32)


def require_labels(name: str, mode: str, labels: Any) -> tf.Tensor:
  """Returns `labels` as a tensor, raising ModelFnError if they are missing.

  TRAIN and EVAL compute a loss, so they need labels; the input_fn must then
  return (features, labels) rather than features alone.
  """
  if labels is None:
    raise ModelFnError(
        f'{name}: labels are required in {mode!r} mode but were None; the '
        'input_fn must return a (features, labels) pair.')
  if isinstance(labels, Mapping):
    raise ModelFnError(
        f'{name}: labels must be a tensor, got a dict with keys '
        f'{sorted(labels)}.')
  return tf.convert_to_tensor(labels)


def _batch_dims_differ(a: tf.TensorShape, b: tf.TensorShape) -> bool:
  # Unknown dimensions are compatible with anything: only two known,
  # different values are a certain mismatch.
  return (a.rank is not None and b.rank is not None and a.rank >= 1 and
          b.rank >= 1 and a[0] is not None and b[0] is not None and
          a[0] != b[0])


def regression_labels(name: str, labels: tf.Tensor,
                      predictions: tf.Tensor) -> tf.Tensor:
  """Returns float32 `labels` reshaped to the shape of `predictions`.

  `predictions` has shape [batch]. Labels of shape [batch] or [batch, 1] are
  accepted (the second is what `from_tensors([1.])`-style pipelines give);
  anything else is an error rather than being broadcast, since MSE between a
  [batch] and a [batch, k] tensor is silently a [batch, batch*k] mess.

  Raises:
    ModelFnError: the shapes cannot be made equal; the message names both.
  """
  labels = tf.cast(labels, tf.float32)
  shape = labels.shape
  if shape.rank == predictions.shape.rank + 1 and shape[-1] == 1:
    labels = tf.squeeze(labels, axis=-1)
  if not labels.shape.is_compatible_with(predictions.shape):
    raise ModelFnError(
        f'{name}: labels of shape {shape} do not match predictions of shape '
        f'{predictions.shape}; give one label per example, shaped [batch] '
        'or [batch, 1].')
  if labels.shape.rank is None:
    # Rank unknown at trace time: reshape so the loss sees matching shapes,
    # and let the reshape fail at run time if the sizes differ.
    labels = tf.reshape(labels, tf.shape(predictions))
  return labels


def sparse_class_labels(name: str, labels: tf.Tensor,
                        logits: tf.Tensor) -> tf.Tensor:
  """Returns int64 class ids of shape [batch] for `logits` [batch, classes].

  Accepts integer labels (any integer dtype) of shape [batch] or
  [batch, 1]; float labels are refused, not truncated.

  Raises:
    ModelFnError: the labels look one-hot ([batch, classes]), have a
      different batch size than the logits, or another rank (the message
      names both shapes), or a non-integer dtype.
  """
  shape = labels.shape
  n = logits.shape[-1]
  if shape.rank == 2 and shape[-1] is not None and shape[-1] > 1:
    hint = (' They look one-hot encoded; pass the class index instead '
            '(e.g. tf.argmax(labels, -1)).' if shape[-1] == n else '')
    raise ModelFnError(
        f'{name}: expected sparse integer labels of shape [batch] or '
        f'[batch, 1] for logits of shape {logits.shape}, got labels of shape '
        f'{shape}.{hint}')
  if shape.rank is not None and shape.rank not in (1, 2):
    raise ModelFnError(
        f'{name}: expected sparse integer labels of shape [batch] or '
        f'[batch, 1] for logits of shape {logits.shape}, got labels of shape '
        f'{shape}.')
  if _batch_dims_differ(shape, logits.shape):
    raise ModelFnError(
        f'{name}: labels of shape {shape} and logits of shape '
        f'{logits.shape} have different batch sizes ({shape[0]} vs '
        f'{logits.shape[0]}).')
  if not labels.dtype.is_integer:
    # Checked on the static dtype, so at trace time and never per step.
    # Float labels used to be cast, which truncated 0.5-9.5 to classes
    # 0-9 and trained without a word: a regression target or a wrong
    # column would have passed for class ids.
    raise ModelFnError(
        f'{name}: labels must be integer class ids, got dtype '
        f'{labels.dtype.name}. Cast them to integer class ids in the '
        'input_fn (e.g. tf.cast(labels, tf.int64), or label_dtype=\'int64\' '
        'for input_fns.files.csv_input_fn); for real-valued targets use a '
        'regressor such as model_fns.linear.')
  return tf.reshape(tf.cast(labels, tf.int64), [-1])


def classifier_spec(name: str, mode: str, params: Mapping[str, Any],
                    logits: tf.Tensor, labels: Any):
  """Builds the EstimatorSpec shared by the MLP and CNN classifiers.

  PREDICT: predictions {'class_ids': int64 [batch], 'probabilities':
  float32 [batch, n_classes]}. EVAL: the mean sparse softmax cross-entropy
  and an 'accuracy' metric (keras.metrics.SparseCategoricalAccuracy, already
  updated with this batch). TRAIN: the same loss and the optimizer named by
  params['optimizer'] (default 'adam').
  """
  if mode == ModeKeys.PREDICT:
    return EstimatorSpec(
        mode,
        predictions={
            'class_ids': tf.argmax(logits, axis=-1, output_type=tf.int64),
            'probabilities': tf.nn.softmax(logits, axis=-1),
        })
  class_ids = sparse_class_labels(name, require_labels(name, mode, labels),
                                  logits)
  # The default reduction ('sum_over_batch_size') is the mean over this
  # replica's batch, which is what EstimatorSpec.loss must be.
  loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
      class_ids, logits)
  if mode == ModeKeys.EVAL:
    accuracy = keras.metrics.SparseCategoricalAccuracy(name='accuracy')
    accuracy.update_state(class_ids, logits)
    return EstimatorSpec(mode, loss=loss,
                         eval_metric_ops={'accuracy': accuracy})
  return EstimatorSpec(mode, loss=loss,
                       optimizer=make_optimizer(name, params))
