"""Linear regressor: the model of TensorFlow's distribution-strategy README.

One `Dense(1)` layer trained with mean squared error and plain SGD. Pair it
with `input_fns.synthetic.linear_input_fn`.

Params (see DEFAULT_PARAMS):
  learning_rate: SGD learning rate, > 0 (default 0.2, the README's value).

Modes:
  PREDICT: predictions {'predictions': float32 [batch]}.
  EVAL: loss (mean squared error over the batch) and eval_metric_ops
    {'mse': keras.metrics.MeanSquaredError}.
  TRAIN: the same loss and a keras.optimizers.SGD.
"""

from typing import Any, Mapping, Optional

import keras
import tensorflow as tf

from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec
from . import _common

_NAME = 'model_fns.linear.model_fn'

DEFAULT_PARAMS = {'learning_rate': 0.2}


@_common.eager_engine_model_fn
def model_fn(features: Any, labels: Any, mode: str,
             params: Optional[Mapping[str, Any]]) -> EstimatorSpec:
  """Builds the linear regressor for `mode`.

  Args:
    features: a float tensor [batch, d] (or [batch], read as d = 1), or a
      dict holding it under 'x'.
    labels: float targets of shape [batch] or [batch, 1]; None in PREDICT.
    mode: one of `ert.ModeKeys`.
    params: overrides for DEFAULT_PARAMS; other keys are ignored.

  Returns:
    An `ert.EstimatorSpec` for `mode`.

  Raises:
    ModelFnError: bad params, features of another rank, missing labels in
      TRAIN/EVAL, or labels whose shape cannot match the predictions.
  """
  _common.check_mode(_NAME, mode)
  params = _common.merge_params(_NAME, DEFAULT_PARAMS, params)
  learning_rate = _common.positive_number(_NAME, params, 'learning_rate')
  x = _common.get_inputs(_NAME, features)
  if x.shape.rank == 1:
    x = x[:, tf.newaxis]
  if x.shape.rank != 2:
    raise ModelFnError(
        f'{_NAME}: features must have shape [batch, d], got {x.shape}.')

  # Built on every call; the runtime makes each call reuse the variables of
  # the first. The explicit name keeps variable paths stable across calls.
  model = keras.Sequential([keras.layers.Dense(1, name='dense')],
                           name='linear')
  predictions = tf.squeeze(model(x), axis=-1)  # [batch]
  if mode == ModeKeys.PREDICT:
    return EstimatorSpec(mode, predictions={'predictions': predictions})

  y = _common.regression_labels(
      _NAME, _common.require_labels(_NAME, mode, labels), predictions)
  loss = tf.reduce_mean(tf.square(y - predictions))
  if mode == ModeKeys.EVAL:
    mse = keras.metrics.MeanSquaredError(name='mse')
    # Rank-2 inputs give the metric one value per example. With rank-1
    # inputs Keras would average over the batch first and then weight every
    # batch equally, over-weighting a final partial batch.
    mse.update_state(y[:, tf.newaxis], predictions[:, tf.newaxis])
    return EstimatorSpec(mode, loss=loss, eval_metric_ops={'mse': mse})
  return EstimatorSpec(mode, loss=loss,
                       optimizer=keras.optimizers.SGD(learning_rate))
