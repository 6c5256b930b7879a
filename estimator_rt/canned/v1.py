"""The tf.compat.v1.estimator canned estimators: tf.estimator 2.15's v1
signatures over the same models (dnn.py, linear.py, dnn_linear_combined.py,
baseline.py), trained with `tf.compat.v1.train` optimizers as 2.15's v1
classes were.

Differences from the TF2 classes, all 2.15's: `loss_reduction` defaults to
`tf.compat.v1.losses.Reduction.SUM` (the loss is summed over the batch);
a named DNN optimizer gets learning rate 0.05; `input_layer_partitioner`
and `partitioner` are accepted and have no effect (variables are not
partitioned here: a parameter server holds each whole), with a warning;
a binary classifier's auc and auc_precision_recall are
tf.compat.v1.metrics.auc's (trapezoidal). The optimizers' variables are
named as 2.15's v1 models named them (optimizers.V1Naming), so 2.15's v1
checkpoints load.
"""

from absl import logging
import tensorflow as tf

from estimator_rt.canned import base
from estimator_rt.head import binary_class_head
from estimator_rt.head import metrics as metrics_lib
from estimator_rt.head import multi_class_head
from estimator_rt.head import regression_head
from estimator_rt.canned import baseline
from estimator_rt.canned import dnn
from estimator_rt.canned import dnn_linear_combined
from estimator_rt.canned import linear
from estimator_rt.canned import v1_columns
from estimator_rt.errors import UserInputError

# tf.compat.v1.losses.Reduction's values -> the heads' (TF2) ones.
_REDUCTIONS = {
    'weighted_sum': base.SUM,
    'weighted_sum_over_batch_size': base.SUM_OVER_BATCH_SIZE,
    base.SUM: base.SUM,
    base.SUM_OVER_BATCH_SIZE: base.SUM_OVER_BATCH_SIZE,
}


def _reduction(loss_reduction: str) -> str:
  reduction = _REDUCTIONS.get(loss_reduction)
  if reduction is None:
    raise UserInputError(
        f'loss_reduction={loss_reduction!r}: the canned estimators take '
        'tf.compat.v1.losses.Reduction.SUM or SUM_OVER_BATCH_SIZE '
        '(the heads\' reductions).')
  return reduction


class _V1BinaryClassHead(binary_class_head.BinaryClassHead):
  """2.15's v1 binary head, as far as it differs: auc and
  auc_precision_recall are tf.compat.v1.metrics.auc's (trapezoidal), and
  the graph has the v1 heads' op names (base_head.SingleHead._V1_OP_NAMES)."""

  _V1_OP_NAMES = True

  def _auc(self, *, curve: str, name: str):
    return metrics_lib.trapezoidal_auc(curve=curve, name=name)


class _V1MultiClassHead(multi_class_head.MultiClassHead):
  """2.15's v1 multi-class head: the v1 heads' op names."""

  _V1_OP_NAMES = True


class _V1RegressionHead(regression_head.RegressionHead):
  """2.15's v1 regression head: the v1 heads' op names."""

  _V1_OP_NAMES = True


def _classifier_head(n_classes, *, weight_column, label_vocabulary,
                     loss_reduction):
  """The head of a v1 canned classifier of `n_classes` (refused below 2 by
  MultiClassHead, naming n_classes)."""
  cls = _V1BinaryClassHead if n_classes == 2 else _V1MultiClassHead
  kwargs = dict(weight_column=weight_column,
                label_vocabulary=label_vocabulary,
                loss_reduction=_reduction(loss_reduction))
  return cls(**kwargs) if n_classes == 2 else cls(n_classes, **kwargs)


def _regression_head(label_dimension, *, weight_column, loss_reduction):
  """The head of a v1 canned regressor."""
  return _V1RegressionHead(label_dimension=label_dimension,
                           weight_column=weight_column,
                           loss_reduction=_reduction(loss_reduction))


def _no_partitioner(estimator_name: str, **partitioners) -> None:
  for argument, value in partitioners.items():
    if value is not None:
      logging.warning(
          '%s: %s=%r has no effect: estimator_rt does not partition '
          'variables.', estimator_name, argument, value)


class DNNEstimator(dnn.DNNEstimator):
  """tf.compat.v1.estimator.DNNEstimator (see this module's docstring)."""
  _V1 = True

  def __init__(self, head, hidden_units, feature_columns, model_dir=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, batch_norm=False):
    _no_partitioner(type(self).__name__,
                    input_layer_partitioner=input_layer_partitioner)
    feature_columns = v1_columns.v2_columns(feature_columns,
                                            argument='feature_columns')
    super().__init__(head, hidden_units, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, activation_fn=activation_fn,
                     dropout=dropout, config=config,
                     warm_start_from=warm_start_from, batch_norm=batch_norm)


class DNNClassifier(DNNEstimator):
  """tf.compat.v1.estimator.DNNClassifier."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               n_classes=2, weight_column=None, label_vocabulary=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction='weighted_sum',
               batch_norm=False):
    head = _classifier_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(head, hidden_units, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, activation_fn=activation_fn,
                     dropout=dropout,
                     input_layer_partitioner=input_layer_partitioner,
                     config=config, warm_start_from=warm_start_from,
                     batch_norm=batch_norm)


class DNNRegressor(DNNEstimator):
  """tf.compat.v1.estimator.DNNRegressor."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               label_dimension=1, weight_column=None, optimizer='Adagrad',
               activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction='weighted_sum',
               batch_norm=False):
    head = _regression_head(label_dimension, weight_column=weight_column,
                            loss_reduction=loss_reduction)
    super().__init__(head, hidden_units, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, activation_fn=activation_fn,
                     dropout=dropout,
                     input_layer_partitioner=input_layer_partitioner,
                     config=config, warm_start_from=warm_start_from,
                     batch_norm=batch_norm)


class LinearEstimator(linear.LinearEstimator):
  """tf.compat.v1.estimator.LinearEstimator."""
  _V1 = True

  def __init__(self, head, feature_columns, model_dir=None, optimizer='Ftrl',
               config=None, partitioner=None, sparse_combiner='sum',
               warm_start_from=None):
    _no_partitioner(type(self).__name__, partitioner=partitioner)
    feature_columns = v1_columns.v2_columns(feature_columns,
                                            argument='feature_columns')
    super().__init__(head, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, config=config,
                     sparse_combiner=sparse_combiner,
                     warm_start_from=warm_start_from)


class LinearClassifier(LinearEstimator):
  """tf.compat.v1.estimator.LinearClassifier."""

  def __init__(self, feature_columns, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None, optimizer='Ftrl',
               config=None, partitioner=None, warm_start_from=None,
               loss_reduction='weighted_sum', sparse_combiner='sum'):
    head = _classifier_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(head, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, config=config,
                     partitioner=partitioner,
                     sparse_combiner=sparse_combiner,
                     warm_start_from=warm_start_from)


class LinearRegressor(LinearEstimator):
  """tf.compat.v1.estimator.LinearRegressor."""

  def __init__(self, feature_columns, model_dir=None, label_dimension=1,
               weight_column=None, optimizer='Ftrl', config=None,
               partitioner=None, warm_start_from=None,
               loss_reduction='weighted_sum', sparse_combiner='sum'):
    head = _regression_head(label_dimension, weight_column=weight_column,
                            loss_reduction=loss_reduction)
    super().__init__(head, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, config=config,
                     partitioner=partitioner,
                     sparse_combiner=sparse_combiner,
                     warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(
    dnn_linear_combined.DNNLinearCombinedEstimator):
  """tf.compat.v1.estimator.DNNLinearCombinedEstimator."""
  _V1 = True

  def __init__(self, head, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               input_layer_partitioner=None, config=None, batch_norm=False,
               linear_sparse_combiner='sum', *, warm_start_from=None):
    _no_partitioner(type(self).__name__,
                    input_layer_partitioner=input_layer_partitioner)
    linear_feature_columns = v1_columns.v2_columns(
        linear_feature_columns, argument='linear_feature_columns')
    dnn_feature_columns = v1_columns.v2_columns(
        dnn_feature_columns, argument='dnn_feature_columns')
    super().__init__(
        head, model_dir=model_dir,
        linear_feature_columns=linear_feature_columns,
        linear_optimizer=linear_optimizer,
        dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=dnn_hidden_units,
        dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
        config=config, batch_norm=batch_norm,
        linear_sparse_combiner=linear_sparse_combiner,
        warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(DNNLinearCombinedEstimator):
  """tf.compat.v1.estimator.DNNLinearCombinedClassifier."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
               weight_column=None, label_vocabulary=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction='weighted_sum',
               batch_norm=False, linear_sparse_combiner='sum'):
    head = _classifier_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(
        head, model_dir=model_dir,
        linear_feature_columns=linear_feature_columns,
        linear_optimizer=linear_optimizer,
        dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=dnn_hidden_units,
        dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
        input_layer_partitioner=input_layer_partitioner, config=config,
        batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner,
        warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(DNNLinearCombinedEstimator):
  """tf.compat.v1.estimator.DNNLinearCombinedRegressor."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               label_dimension=1, weight_column=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction='weighted_sum',
               batch_norm=False, linear_sparse_combiner='sum'):
    head = _regression_head(label_dimension, weight_column=weight_column,
                            loss_reduction=loss_reduction)
    super().__init__(
        head, model_dir=model_dir,
        linear_feature_columns=linear_feature_columns,
        linear_optimizer=linear_optimizer,
        dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=dnn_hidden_units,
        dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
        input_layer_partitioner=input_layer_partitioner, config=config,
        batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner,
        warm_start_from=warm_start_from)


class BaselineEstimator(baseline.BaselineEstimator):
  """tf.compat.v1.estimator.BaselineEstimator."""
  _V1 = True


class BaselineClassifier(baseline.BaselineEstimator):
  """tf.compat.v1.estimator.BaselineClassifier."""
  _V1 = True

  def __init__(self, model_dir=None, n_classes=2, weight_column=None,
               label_vocabulary=None, optimizer='Ftrl', config=None,
               loss_reduction='weighted_sum'):
    head = _classifier_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(head, model_dir=model_dir, optimizer=optimizer,
                     config=config)


class BaselineRegressor(baseline.BaselineEstimator):
  """tf.compat.v1.estimator.BaselineRegressor."""
  _V1 = True

  def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
               optimizer='Ftrl', config=None, loss_reduction='weighted_sum'):
    head = _regression_head(label_dimension, weight_column=weight_column,
                            loss_reduction=loss_reduction)
    super().__init__(head, model_dir=model_dir, optimizer=optimizer,
                     config=config)
