"""Small convolutional classifier for images.

Conv2D(16, 3) - MaxPool - Conv2D(32, 3) - MaxPool - Flatten - Dense(64) -
Dense(n_classes), ReLU activations, 'same' padding throughout so that small
images (8x8 digits) keep a non-empty feature map. Pair it with
`input_fns.synthetic.images_input_fn`, `input_fns.tfds` (e.g. 'mnist'), or
`input_fns.digits` with params['image_shape'] = [8, 8, 1].

Params (see DEFAULT_PARAMS):
  n_classes: number of classes, >= 2 (default 10).
  learning_rate: > 0 (default 0.001).
  optimizer: 'adam' (default) or 'sgd'.
  image_shape: optional [H, W, C]; when set, features are reshaped to
    [batch, H, W, C] first, so flat vectors can be fed (default None).

Modes: as `model_fns.mlp`: PREDICT gives {'class_ids', 'probabilities'},
EVAL the mean cross-entropy and an 'accuracy' metric, TRAIN the same loss
and the optimizer.
"""

from typing import Any, Mapping, Optional

import keras
import tensorflow as tf

from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import shorten
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec
from . import _common

_NAME = 'model_fns.cnn.model_fn'

_HIDDEN_UNITS = 64

DEFAULT_PARAMS = {
    'n_classes': 10,
    'learning_rate': 0.001,
    'optimizer': 'adam',
    'image_shape': None,
}


def _images(x: tf.Tensor, image_shape: Any) -> tf.Tensor:
  """Returns `x` as [batch, H, W, C] images, or raises ModelFnError."""
  if image_shape is not None:
    if not isinstance(image_shape, (list, tuple)) or len(image_shape) != 3 or (
        not all(isinstance(d, int) and d > 0 for d in image_shape)):
      raise ModelFnError(
          f"{_NAME}: params['image_shape'] must be [H, W, C] with positive "
          f'integers, got {shorten(image_shape)}.')
    return tf.reshape(x, [-1, *image_shape])
  if x.shape.rank == 3:
    # [batch, H, W]: grayscale images without a channel axis.
    return x[..., tf.newaxis]
  if x.shape.rank != 4:
    raise ModelFnError(
        f'{_NAME}: features must be images of shape [batch, H, W, C] (or '
        f"[batch, H, W]), got {x.shape}. For flat vectors set "
        "params['image_shape'] = [H, W, C].")
  return x


def build_model(*, n_classes: int) -> keras.Sequential:
  """The CNN's layers, unbuilt (the benchmark's bare loop uses them too).

  Explicit layer names keep variable paths stable across calls.
  """
  return keras.Sequential([
      keras.layers.Conv2D(16, 3, padding='same', activation='relu',
                          name='conv_0'),
      keras.layers.MaxPooling2D(2, padding='same', name='pool_0'),
      keras.layers.Conv2D(32, 3, padding='same', activation='relu',
                          name='conv_1'),
      keras.layers.MaxPooling2D(2, padding='same', name='pool_1'),
      keras.layers.Flatten(name='flatten'),
      keras.layers.Dense(_HIDDEN_UNITS, activation='relu', name='hidden'),
      keras.layers.Dense(n_classes, name='logits'),
  ], name='cnn')


@_common.eager_engine_model_fn
def model_fn(features: Any, labels: Any, mode: str,
             params: Optional[Mapping[str, Any]]) -> EstimatorSpec:
  """Builds the CNN classifier for `mode`.

  Args:
    features: float (or integer pixel) images [batch, H, W, C] or
      [batch, H, W], or a dict holding them under 'x'. Values are used as
      given: scale them in the input_fn.
    labels: integer class ids (an integer dtype: float labels are refused,
      not truncated) of shape [batch] or [batch, 1]; None in PREDICT.
    mode: one of `ert.ModeKeys`.
    params: overrides for DEFAULT_PARAMS; other keys are ignored.

  Returns:
    An `ert.EstimatorSpec` for `mode`.

  Raises:
    ModelFnError: bad params (n_classes making a logits layer of more than
      `_common.MAX_LAYER_WEIGHTS` weights too), features that are not
      images, missing labels in TRAIN/EVAL, labels whose shape does not fit
      the logits, or labels of a non-integer dtype.
  """
  _common.check_mode(_NAME, mode)
  params = _common.merge_params(_NAME, DEFAULT_PARAMS, params)
  n_classes = _common.n_classes(_NAME, params)
  images = _images(_common.get_inputs(_NAME, features), params['image_shape'])
  # The logits layer is 64 x n_classes: refuse a billion classes before
  # its initializer tries to allocate them.
  _common.check_dense_size(_NAME, "params['n_classes']", _HIDDEN_UNITS,
                           n_classes)

  # Built on every call; the runtime makes each call reuse the variables of
  # the first.
  model = build_model(n_classes=n_classes)
  logits = model(images, training=mode == ModeKeys.TRAIN)
  return _common.classifier_spec(_NAME, mode, params, logits, labels)
