"""The tf.compat.v1.estimator canned estimators: tf.estimator 2.15's v1
classes, with their signatures, heads and model_fns (v1_model_fns.py:
2.15's structure, partitioned variables and `tf.compat.v1.train`
optimizers that the v1 head minimizes).

Their heads are 2.15's v1 heads (head/v1_head.py): `loss_reduction`
defaults to `tf.compat.v1.losses.Reduction.SUM` (the loss is summed over
the batch), a binary classifier's auc and auc_precision_recall are
tf.compat.v1.metrics.auc's (trapezoidal), the metrics' update ops give
their values. Named optimizers get 2.15's learning rates (DNN 0.05, linear
0.2 or min(0.2, 1/sqrt(columns)) by default, wide & deep 0.001 and
min(0.005, 1/sqrt(columns)), baseline 0.3).
"""

import tensorflow as tf

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.canned import linear_sdca
from estimator_rt.estimator.canned import v1_model_fns
from estimator_rt.estimator.head import v1_head
from estimator_rt.core.errors import UserInputError


def _classifier_head(n_classes, *, weight_column, label_vocabulary,
                     loss_reduction):
  """2.15's v1 head of an `n_classes` classifier."""
  return v1_head.binary_logistic_or_multi_class_head(
      n_classes, weight_column, label_vocabulary, loss_reduction)


def _regression_head(label_dimension, *, weight_column, loss_reduction):
  """2.15's v1 head of a regressor."""
  return v1_head.regression_head(label_dimension=label_dimension,
                                 weight_column=weight_column,
                                 loss_reduction=loss_reduction)


class DNNEstimator(base.CannedEstimator):
  """tf.compat.v1.estimator.DNNEstimator: the v1 DNN with any v1 head."""

  def __init__(self, head, hidden_units, feature_columns, model_dir=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, batch_norm=False):
    feature_columns = tuple(feature_columns or ())

    def _model_fn(features, labels, mode, config):
      return v1_model_fns.dnn_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          hidden_units=hidden_units, feature_columns=feature_columns,
          optimizer=optimizer, activation_fn=activation_fn, dropout=dropout,
          input_layer_partitioner=input_layer_partitioner, config=config,
          batch_norm=batch_norm)

    super().__init__(_model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNClassifier(DNNEstimator):
  """tf.compat.v1.estimator.DNNClassifier."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               n_classes=2, weight_column=None, label_vocabulary=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=tf.compat.v1.losses.Reduction.SUM,
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
               warm_start_from=None, loss_reduction=tf.compat.v1.losses.Reduction.SUM,
               batch_norm=False):
    head = _regression_head(label_dimension, weight_column=weight_column,
                            loss_reduction=loss_reduction)
    super().__init__(head, hidden_units, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, activation_fn=activation_fn,
                     dropout=dropout,
                     input_layer_partitioner=input_layer_partitioner,
                     config=config, warm_start_from=warm_start_from,
                     batch_norm=batch_norm)


class LinearEstimator(base.CannedEstimator):
  """tf.compat.v1.estimator.LinearEstimator: the v1 linear model with any
  v1 head."""

  def __init__(self, head, feature_columns, model_dir=None, optimizer='Ftrl',
               config=None, partitioner=None, sparse_combiner='sum',
               warm_start_from=None):
    feature_columns = tuple(feature_columns or ())
    if isinstance(optimizer, linear_sdca.LinearSDCA):
      linear_sdca.check_estimator(head=head, feature_columns=feature_columns,
                                  sparse_combiner=sparse_combiner)

    def _model_fn(features, labels, mode, config):
      return v1_model_fns.linear_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          feature_columns=feature_columns, optimizer=optimizer,
          partitioner=partitioner, config=config,
          sparse_combiner=sparse_combiner)

    super().__init__(_model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class LinearClassifier(LinearEstimator):
  """tf.compat.v1.estimator.LinearClassifier."""

  def __init__(self, feature_columns, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None, optimizer='Ftrl',
               config=None, partitioner=None, warm_start_from=None,
               loss_reduction=tf.compat.v1.losses.Reduction.SUM, sparse_combiner='sum'):
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
               loss_reduction=tf.compat.v1.losses.Reduction.SUM, sparse_combiner='sum'):
    head = _regression_head(label_dimension, weight_column=weight_column,
                            loss_reduction=loss_reduction)
    super().__init__(head, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, config=config,
                     partitioner=partitioner,
                     sparse_combiner=sparse_combiner,
                     warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(base.CannedEstimator):
  """tf.compat.v1.estimator.DNNLinearCombinedEstimator: the v1 wide & deep
  model with any v1 head; `warm_start_from` keyword only (2.15's class had
  none; the classifier and regressor pass theirs here)."""

  def __init__(self, head, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               input_layer_partitioner=None, config=None, batch_norm=False,
               linear_sparse_combiner='sum', *, warm_start_from=None):
    linear_feature_columns = tuple(linear_feature_columns or ())
    dnn_feature_columns = tuple(dnn_feature_columns or ())
    if not linear_feature_columns and not dnn_feature_columns:
      raise UserInputError(
          'Either linear_feature_columns or dnn_feature_columns must be '
          f'defined ({type(self).__name__}: both are empty).')

    def _model_fn(features, labels, mode, config):
      return v1_model_fns.combined_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          linear_feature_columns=linear_feature_columns,
          linear_optimizer=linear_optimizer,
          dnn_feature_columns=dnn_feature_columns,
          dnn_optimizer=dnn_optimizer, dnn_hidden_units=dnn_hidden_units,
          dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
          input_layer_partitioner=input_layer_partitioner, config=config,
          batch_norm=batch_norm,
          linear_sparse_combiner=linear_sparse_combiner)

    super().__init__(_model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(DNNLinearCombinedEstimator):
  """tf.compat.v1.estimator.DNNLinearCombinedClassifier."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
               weight_column=None, label_vocabulary=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=tf.compat.v1.losses.Reduction.SUM,
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
               warm_start_from=None, loss_reduction=tf.compat.v1.losses.Reduction.SUM,
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


class BaselineEstimator(base.CannedEstimator):
  """tf.compat.v1.estimator.BaselineEstimator: a bias per logit, with any
  v1 head."""

  def __init__(self, head, model_dir=None, optimizer='Ftrl', config=None):
    # The head's (a user's head may have none).
    weight_column = getattr(head, '_weight_column', None)

    def _model_fn(features, labels, mode, config):
      return v1_model_fns.baseline_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          optimizer=optimizer, weight_column=weight_column, config=config)

    super().__init__(_model_fn, model_dir=model_dir, config=config)


class BaselineClassifier(BaselineEstimator):
  """tf.compat.v1.estimator.BaselineClassifier."""

  def __init__(self, model_dir=None, n_classes=2, weight_column=None,
               label_vocabulary=None, optimizer='Ftrl', config=None,
               loss_reduction=tf.compat.v1.losses.Reduction.SUM):
    head = _classifier_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(head, model_dir=model_dir, optimizer=optimizer,
                     config=config)


class BaselineRegressor(BaselineEstimator):
  """tf.compat.v1.estimator.BaselineRegressor."""

  def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
               optimizer='Ftrl', config=None,
               loss_reduction=tf.compat.v1.losses.Reduction.SUM):
    head = _regression_head(label_dimension, weight_column=weight_column,
                            loss_reduction=loss_reduction)
    super().__init__(head, model_dir=model_dir, optimizer=optimizer,
                     config=config)
