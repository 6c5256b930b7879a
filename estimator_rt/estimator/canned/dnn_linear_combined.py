"""DNNLinearCombinedClassifier / Regressor / Estimator ("wide & deep"), as
tf.estimator 2.15 built them: the logits are the sum of a linear model's
(linear_logits.py, variables under 'linear/linear_model') and a DNN's (dnn.py,
under 'dnn'), each part trained by its own optimizer on the same loss.

Default optimizers: the linear part Ftrl at min(0.005, 1/sqrt(number of
linear columns)), the DNN part Adagrad at 0.001; a named optimizer gets
those learning rates too. The DNN optimizer's step counter is the global
step (the linear one keeps its own), so one training step advances the
global step once, as in 2.15.
"""

import math

import tensorflow as tf

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.head import head_utils
from estimator_rt.estimator.canned import dnn
from estimator_rt.estimator.canned import linear_logits as linear_logits_lib
from estimator_rt.estimator.canned import optimizers
from estimator_rt.core.errors import UserInputError

DNN_LEARNING_RATE = 0.001
LINEAR_LEARNING_RATE = 0.005


def linear_learning_rate(num_columns: int) -> float:
  """2.15's rule for the linear part: min(0.005, 1/sqrt(columns))."""
  return min(LINEAR_LEARNING_RATE, 1.0 / math.sqrt(num_columns))


def combined_model_fn(*, features, labels, mode, head, linear_feature_columns,
                      linear_optimizer, dnn_feature_columns, dnn_optimizer,
                      dnn_hidden_units, dnn_activation_fn, dnn_dropout,
                      batch_norm, linear_sparse_combiner, estimator_name,
                      loss_reduction=None):
  """The TF2 wide & deep model_fn body (the v1 classes': v1_model_fns);
  `loss_reduction` scales the loss for the replicas (None: the head's)."""
  base.check_features(features, estimator_name=estimator_name)
  logits, parts, update_ops = [], [], []
  if dnn_feature_columns:
    dnn_logits, variables, update_ops = dnn.build_dnn(
        units=head.logits_dimension, hidden_units=dnn_hidden_units,
        feature_columns=dnn_feature_columns,
        activation_fn=dnn_activation_fn or tf.nn.relu, dropout=dnn_dropout,
        batch_norm=batch_norm, features=features, mode=mode)
    logits.append(dnn_logits)
    parts.append(optimizers.Part(
        optimizer=dnn_optimizer, learning_rate=DNN_LEARNING_RATE,
        variables=variables, what='dnn_optimizer'))
  if linear_feature_columns:
    linear_logits, weights, bias = linear_logits_lib.build_linear(
        units=head.logits_dimension, feature_columns=linear_feature_columns,
        sparse_combiner=linear_sparse_combiner, features=features,
        ops_scope=linear_logits_lib.OPS_SCOPE)
    # 2.15 built wide & deep's linear part with the linear model's builder,
    # summaries included, then summarized its logits.
    linear_logits_lib.add_linear_summaries(weights, bias,
                                           head.logits_dimension)
    base.add_layer_summary(linear_logits, 'linear')
    logits.append(linear_logits)
    parts.append(optimizers.Part(
        optimizer=linear_optimizer,
        learning_rate=linear_learning_rate(len(linear_feature_columns)),
        variables=weights + [bias], what='linear_optimizer'))
  return base.estimator_spec(
      head=head, features=features, mode=mode, labels=labels,
      logits=_sum(logits), parts=parts, update_ops=update_ops, loss_reduction=loss_reduction)


def _sum(logits):
  """The DNN's logits plus the linear model's, the op `add` as 2.15 made it
  (programs fetch it by name), or the one part given."""
  if len(logits) == 1:
    return logits[0]
  dnn_logits, linear_logits = logits
  return tf.math.add(dnn_logits, linear_logits, name='add')


def _check_columns(linear_feature_columns, dnn_feature_columns,
                   dnn_hidden_units, name):
  if not linear_feature_columns and not dnn_feature_columns:
    raise UserInputError(
        'Either linear_feature_columns or dnn_feature_columns must be '
        f'defined ({name}: both are empty).')
  if dnn_feature_columns and not dnn_hidden_units:
    raise UserInputError(
        'dnn_hidden_units must be defined when dnn_feature_columns is '
        f'specified ({name}: dnn_hidden_units={dnn_hidden_units!r}; give '
        'the hidden layers\' widths).')
  shared = set(c.name for c in linear_feature_columns) & set(
      c.name for c in dnn_feature_columns)
  del shared  # 2.15 allowed a column in both parts; so does this.
  base.check_v2_columns(linear_feature_columns,
                        argument='linear_feature_columns', estimator_name=name)
  base.check_v2_columns(dnn_feature_columns, argument='dnn_feature_columns',
                        estimator_name=name)


class DNNLinearCombinedEstimator(base.CannedEstimator):
  """Wide & deep with any head; tf.estimator 2.15's signature, and
  `warm_start_from` (keyword only: 2.15's class had none; the classifier
  and regressor pass theirs here)."""

  def __init__(self, head, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, config=None,
               batch_norm=False, linear_sparse_combiner='sum', *,
               warm_start_from=None):
    name = type(self).__name__
    linear_columns = tuple(linear_feature_columns or ())
    dnn_columns = tuple(dnn_feature_columns or ())
    _check_columns(linear_columns, dnn_columns, dnn_hidden_units, name)

    def _model_fn(features, labels, mode):
      return combined_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          linear_feature_columns=linear_columns,
          linear_optimizer=linear_optimizer, dnn_feature_columns=dnn_columns,
          dnn_optimizer=dnn_optimizer, dnn_hidden_units=dnn_hidden_units,
          dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
          batch_norm=batch_norm,
          linear_sparse_combiner=linear_sparse_combiner, estimator_name=name)

    super().__init__(_model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(DNNLinearCombinedEstimator):
  """Wide & deep classifier; tf.estimator 2.15's signature and defaults."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
               weight_column=None, label_vocabulary=None, config=None,
               warm_start_from=None,
               loss_reduction=base.SUM_OVER_BATCH_SIZE, batch_norm=False,
               linear_sparse_combiner='sum'):
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
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


class DNNLinearCombinedRegressor(DNNLinearCombinedEstimator):
  """Wide & deep regressor; tf.estimator 2.15's signature and defaults."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               label_dimension=1, weight_column=None, config=None,
               warm_start_from=None,
               loss_reduction=base.SUM_OVER_BATCH_SIZE, batch_norm=False,
               linear_sparse_combiner='sum'):
    head = base.regression_head(label_dimension, weight_column=weight_column,
                                loss_reduction=loss_reduction)
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
