"""Multi-layer perceptron classifier on dense features.

Pair it with `input_fns.digits` (64 features, 10 classes) or
`input_fns.synthetic.classification_input_fn`.

Params (see DEFAULT_PARAMS):
  hidden_units: sizes of the ReLU hidden layers (default [64, 32]).
  n_classes: number of classes, >= 2 (default 10).
  learning_rate: > 0 (default 0.01).
  optimizer: 'adam' (default) or 'sgd'.
  dropout: dropout rate after each hidden layer in TRAIN, in [0, 1)
    (default 0.0: no dropout layers at all).

Modes:
  PREDICT: predictions {'class_ids': int64 [batch], 'probabilities':
    float32 [batch, n_classes]}.
  EVAL: loss (mean sparse softmax cross-entropy over the batch) and
    eval_metric_ops {'accuracy': keras.metrics.SparseCategoricalAccuracy}.
  TRAIN: the same loss and the chosen Keras optimizer.
"""

from typing import Any, Mapping, Optional

import keras
import tensorflow as tf

from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import shorten
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec
from . import _common

_NAME = 'model_fns.mlp.model_fn'

DEFAULT_PARAMS = {
    'hidden_units': [64, 32],
    'n_classes': 10,
    'learning_rate': 0.01,
    'optimizer': 'adam',
    'dropout': 0.0,
}


def _hidden_units(params: Mapping[str, Any]) -> list:
  units = params['hidden_units']
  if not isinstance(units, (list, tuple)) or not all(
      isinstance(u, int) and not isinstance(u, bool) and u > 0
      for u in units):
    raise ModelFnError(
        f"{_NAME}: params['hidden_units'] must be a list of positive "
        f'integers, got {shorten(units)}.')
  return list(units)


def _dropout(params: Mapping[str, Any]) -> float:
  rate = params['dropout']
  if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (
      0.0 <= rate < 1.0):
    raise ModelFnError(
        f"{_NAME}: params['dropout'] must be a number in [0, 1), got "
        f'{shorten(rate)}.')
  return float(rate)


def _check_layer_sizes(x: tf.Tensor, hidden_units: list,
                       n_classes: int) -> None:
  """Refuses layers too big to build (see _common.MAX_LAYER_WEIGHTS)."""
  fan_in = x.shape[1:].num_elements()  # Flattened; None if not static.
  for i, units in enumerate(hidden_units):
    _common.check_dense_size(_NAME, f"params['hidden_units'][{i}]", fan_in,
                             units)
    fan_in = units
  _common.check_dense_size(_NAME, "params['n_classes']", fan_in, n_classes)


def build_model(*, hidden_units, n_classes: int,
                dropout: float = 0.0) -> keras.Sequential:
  """The MLP's layers, unbuilt (the benchmark's bare loop uses them too).

  Explicit layer names keep variable paths stable across calls.
  """
  layers = [keras.layers.Flatten(name='flatten')]
  for i, units in enumerate(hidden_units):
    layers.append(keras.layers.Dense(units, activation='relu',
                                     name=f'hidden_{i}'))
    if dropout > 0.0:
      # Only added when used: a Dropout layer owns a seed variable, and a
      # model without dropout should not carry one into its checkpoints.
      layers.append(keras.layers.Dropout(dropout, name=f'dropout_{i}'))
  layers.append(keras.layers.Dense(n_classes, name='logits'))
  return keras.Sequential(layers, name='mlp')


@_common.eager_engine_model_fn
def model_fn(features: Any, labels: Any, mode: str,
             params: Optional[Mapping[str, Any]]) -> EstimatorSpec:
  """Builds the MLP classifier for `mode`.

  Args:
    features: a float tensor [batch, d], or a dict holding it under 'x'.
      Inputs of higher rank (images) are flattened to [batch, d].
    labels: integer class ids (an integer dtype: float labels are refused,
      not truncated) of shape [batch] or [batch, 1]; None in PREDICT.
    mode: one of `ert.ModeKeys`.
    params: overrides for DEFAULT_PARAMS; other keys are ignored.

  Returns:
    An `ert.EstimatorSpec` for `mode`.

  Raises:
    ModelFnError: bad params (a layer of more than
      `_common.MAX_LAYER_WEIGHTS` weights too), features of rank < 2,
      missing labels in TRAIN/EVAL, or labels whose shape does not fit the
      logits (one-hot labels, another batch size; the message names both
      shapes), or labels of a non-integer dtype.
  """
  _common.check_mode(_NAME, mode)
  params = _common.merge_params(_NAME, DEFAULT_PARAMS, params)
  n_classes = _common.n_classes(_NAME, params)
  hidden_units = _hidden_units(params)
  dropout = _dropout(params)
  x = _common.get_inputs(_NAME, features)
  if x.shape.rank is not None and x.shape.rank < 2:
    raise ModelFnError(
        f'{_NAME}: features must have shape [batch, d] (or [batch, ...] to '
        f'be flattened), got {x.shape}.')
  _check_layer_sizes(x, hidden_units, n_classes)

  # Built on every call; the runtime makes each call reuse the variables of
  # the first.
  model = build_model(hidden_units=hidden_units, n_classes=n_classes,
                      dropout=dropout)
  logits = model(x, training=mode == ModeKeys.TRAIN)
  return _common.classifier_spec(_NAME, mode, params, logits, labels)
