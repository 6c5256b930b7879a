"""tf.estimator 2.15's `canned.dnn_linear_combined`: wide & deep, over
estimator_rt's (estimator_rt/estimator/canned/dnn_linear_combined.py: the DNN and
linear models with 2.15's variable names, their logits added).

The estimator classes (`DNNLinearCombinedClassifierV2`, ...) are
estimator_rt's, served from module_paths.json; the private model_fn and
helpers are here with 2.15's signatures.
"""

import tensorflow as tf

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.canned import dnn_linear_combined as combined_lib
from estimator_rt.estimator.canned import v1_model_fns
from estimator_rt.core.errors import UserInputError

_DNN_LEARNING_RATE = combined_lib.DNN_LEARNING_RATE
_LINEAR_LEARNING_RATE = combined_lib.LINEAR_LEARNING_RATE


_check_no_sync_replicas_optimizer = (
    v1_model_fns.check_no_sync_replicas_optimizer)


def _linear_learning_rate(num_linear_feature_columns):
  """The linear part's default learning rate: min(0.005, 1/sqrt(number of
  linear columns))."""
  return combined_lib.linear_learning_rate(num_linear_feature_columns)


def _add_layer_summary(value, tag):
  """The summaries of a layer's output (its fraction of zero values and
  its histogram)."""
  base.add_layer_summary(value, tag)


def _validate_feature_columns(linear_feature_columns, dnn_feature_columns):
  """Both parts' columns in one list.

  Raises:
    ValueError: neither part has a column.
  """
  feature_columns = (list(linear_feature_columns or []) +
                     list(dnn_feature_columns or []))
  if not feature_columns:
    raise UserInputError(
        'Either linear_feature_columns or dnn_feature_columns must be '
        'defined (both are empty).')
  return feature_columns


def _dnn_linear_combined_model_fn_v2(
    features,
    labels,
    mode,
    head,
    linear_feature_columns=None,
    linear_optimizer='Ftrl',
    dnn_feature_columns=None,
    dnn_optimizer='Adagrad',
    dnn_hidden_units=None,
    dnn_activation_fn=tf.nn.relu,
    dnn_dropout=None,
    config=None,
    batch_norm=False,
    linear_sparse_combiner='sum',
    loss_reduction=base.SUM_OVER_BATCH_SIZE):
  """The TF2 wide & deep model_fn: the DNN's and the linear model's logits
  added and given to `head.create_estimator_spec` with a train_op_fn that
  trains each part with its optimizer (the DNN's advancing the global
  step), the loss scaled for the replicas by `loss_reduction`.

  Raises:
    ValueError: `features` is not a dict, neither part has a column, or
      the DNN has columns and no hidden units.
  """
  del config
  base.check_features(features, estimator_name='the wide & deep model_fn')
  if not linear_feature_columns and not dnn_feature_columns:
    _validate_feature_columns(linear_feature_columns, dnn_feature_columns)
  if dnn_feature_columns and not dnn_hidden_units:
    raise UserInputError(
        'dnn_hidden_units must be defined when dnn_feature_columns is '
        f'specified (dnn_hidden_units={dnn_hidden_units!r}).')
  for optimizer in (linear_optimizer, dnn_optimizer):
    _check_no_sync_replicas_optimizer(optimizer)
  return combined_lib.combined_model_fn(
      features=features, labels=labels, mode=mode, head=head,
      linear_feature_columns=tuple(linear_feature_columns or ()),
      linear_optimizer=linear_optimizer,
      dnn_feature_columns=tuple(dnn_feature_columns or ()),
      dnn_optimizer=dnn_optimizer, dnn_hidden_units=dnn_hidden_units,
      dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
      batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner,
      estimator_name='the wide & deep model_fn',
      loss_reduction=loss_reduction)


# 2.15's v1 model_fn (v1_model_fns.py).
_dnn_linear_combined_model_fn = v1_model_fns.combined_model_fn


def _init_dnn_linear_combined_estimator(head, linear_feature_columns,
                                        linear_optimizer, dnn_feature_columns,
                                        dnn_optimizer, dnn_hidden_units,
                                        dnn_activation_fn, dnn_dropout,
                                        input_layer_partitioner,
                                        linear_sparse_combiner):
  """(both parts' columns in one list, a `model_fn(features, labels, mode,
  config)` calling _dnn_linear_combined_model_fn with these arguments).

  Raises:
    ValueError: neither part has a column.
  """
  feature_columns = _validate_feature_columns(linear_feature_columns,
                                              dnn_feature_columns)

  def _model_fn(features, labels, mode, config):
    return _dnn_linear_combined_model_fn(
        features=features, labels=labels, mode=mode, head=head,
        linear_feature_columns=linear_feature_columns,
        linear_optimizer=linear_optimizer,
        dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=dnn_hidden_units,
        dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
        input_layer_partitioner=input_layer_partitioner, config=config,
        linear_sparse_combiner=linear_sparse_combiner)

  return feature_columns, _model_fn
