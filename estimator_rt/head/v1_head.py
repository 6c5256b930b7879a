"""tf.estimator 2.15's v1 heads (its `canned/head.py`): the `_Head` base
class that libraries subclass (DeepCTR, EasyRec, ...), `LossSpec`, and the
binary, multi-class and regression heads of the tf.compat.v1.estimator
canned estimators.

The v1 heads here are estimator_rt's heads with what differed in 2.15:

  - `create_loss(features, mode, logits, labels)` returns a `LossSpec`
    (the training loss unregularized, the unreduced loss, the weights and
    the processed labels);
  - `create_estimator_spec(features, mode, logits, labels=None,
    optimizer=None, train_op_fn=None, regularization_losses=None)`: the
    optimizer is a `tf.compat.v1.train.Optimizer`, and the train op is
    `optimizer.minimize(loss, global_step=get_global_step())` grouped with
    the graph's UPDATE_OPS;
  - the loss is summed by default (`tf.compat.v1.losses.Reduction.SUM`),
    and in TRAIN with a summed loss the mean loss is reported too
    (`average_loss`);
  - the graph has the v1 heads' op names (the loss right under the head's
    name scope, `head/weighted_loss/Sum`, `head/truediv`), and the binary
    head's auc and auc_precision_recall are tf.compat.v1.metrics.auc's
    (trapezoidal).

They run in a graph (a TF1-style model_fn, the graph engine), as 2.15's
did.
"""

import abc
import collections

import tensorflow as tf

from estimator_rt.errors import SubclassError
from estimator_rt.errors import UserInputError
from estimator_rt.head import base_head
from estimator_rt.head import binary_class_head
from estimator_rt.head import metrics as metrics_lib
from estimator_rt.head import multi_class_head
from estimator_rt.head import regression_head

LossSpec = collections.namedtuple(
    'LossSpec', ['training_loss', 'unreduced_loss', 'weights',
                 'processed_labels'])

# tf.compat.v1.losses.Reduction values -> the heads' (TF2) reductions.
_V1_REDUCTIONS = {
    'weighted_sum': base_head.SUM,
    'weighted_sum_over_batch_size': base_head.SUM_OVER_BATCH_SIZE,
    base_head.SUM: base_head.SUM,
    base_head.SUM_OVER_BATCH_SIZE: base_head.SUM_OVER_BATCH_SIZE,
}
V1_SUM = 'weighted_sum'


def reduction_of_v1(loss_reduction) -> str:
  """A tf.compat.v1.losses.Reduction as the heads' reduction.

  Raises:
    UserInputError: NONE, an unknown value, or one of the v1 reductions
      estimator_rt's heads do not compute (MEAN, SUM_BY_NONZERO_WEIGHTS).
  """
  reduction = _V1_REDUCTIONS.get(loss_reduction)
  if reduction is None:
    raise UserInputError(
        f'Invalid loss_reduction: {loss_reduction}. estimator_rt\'s v1 heads '
        'take tf.compat.v1.losses.Reduction.SUM or SUM_OVER_BATCH_SIZE.')
  return reduction


def summary_key(head_name, key: str) -> str:
  """`key/head_name`, or `key` for a head without a name (2.15's)."""
  return f'{key}/{head_name}' if head_name else key


class V1Head(abc.ABC):
  """2.15's `_Head` (tf.estimator's v1 head interface): a subclass defines
  `name`, `logits_dimension`, `create_loss` and either
  `create_estimator_spec` or `_create_tpu_estimator_spec` (whose
  TPUEstimatorSpec `create_estimator_spec` turns into an EstimatorSpec)."""

  @property
  @abc.abstractmethod
  def name(self):
    """The head's name (metric and summary keys get '/name'), or None."""

  @property
  @abc.abstractmethod
  def logits_dimension(self):
    """The size of the logits' last dimension."""

  @abc.abstractmethod
  def create_loss(self, features, mode, logits, labels):
    """A LossSpec for `logits` and `labels`."""

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, train_op_fn=None,
                            regularization_losses=None):
    """The EstimatorSpec of `mode`: here, the head's TPUEstimatorSpec as an
    EstimatorSpec.

    Raises:
      SubclassError: (a NotImplementedError) the head defines neither
        create_estimator_spec nor _create_tpu_estimator_spec.
    """
    try:
      tpu_spec = self._create_tpu_estimator_spec(
          features=features, mode=mode, logits=logits, labels=labels,
          optimizer=optimizer, train_op_fn=train_op_fn,
          regularization_losses=regularization_losses)
    except NotImplementedError as e:
      raise SubclassError(
          'Subclasses of _Head must implement `create_estimator_spec()` or '
          f'_create_tpu_estimator_spec(). {type(self).__name__} implements '
          'neither.') from e
    return tpu_spec.as_estimator_spec()

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, train_op_fn=None,
                                 regularization_losses=None):
    """A TPUEstimatorSpec; heads that have none leave this as it is.

    Raises:
      SubclassError: (a NotImplementedError) always, here.
    """
    raise SubclassError(
        'TPUEstimatorSpec not available for this model head. '
        f'({type(self).__name__} defines create_estimator_spec only.)')


def _minimize_fn(optimizer):
  """`train_op_fn` of a v1 optimizer: minimize at the global step, with the
  graph's UPDATE_OPS (batch norm's), as 2.15's v1 heads trained."""

  def train_op_fn(loss):
    train_op = optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    update_ops = tf.compat.v1.get_collection(
        tf.compat.v1.GraphKeys.UPDATE_OPS)
    return tf.group(train_op, *update_ops) if update_ops else train_op

  return train_op_fn


class _V1Behaviour:
  """What a v1 head adds to estimator_rt's head it derives from (see the
  module docstring). Placed first among a v1 head's bases, V1Head last:
  the head's own name and logits_dimension then win over V1Head's abstract
  ones, and `super().create_estimator_spec` is the head's."""

  _V1_OP_NAMES = True

  def create_loss(self, features, mode, logits, labels):
    """The LossSpec of 2.15's v1 heads: the training loss before
    regularization, the unreduced loss, the weights, the processed labels."""
    del mode
    logits = base_head.check_logits_final_dim(logits, self.logits_dimension)
    labels = self._processed_labels(logits, labels)
    unreduced, weights = self._unweighted_loss_and_weights(logits, labels,
                                                           features)
    loss = base_head.reduce_loss(unreduced, weights, self._loss_reduction)
    return LossSpec(training_loss=loss, unreduced_loss=unreduced,
                    weights=weights, processed_labels=labels)

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, train_op_fn=None,
                            regularization_losses=None):
    """The EstimatorSpec of `mode`, with 2.15's v1 signature: `optimizer`
    is a `tf.compat.v1.train.Optimizer`, minimized at the global step.

    Raises:
      UserInputError: both or neither of optimizer and train_op_fn in
        TRAIN (2.15's messages).
    """
    if optimizer is not None:
      if train_op_fn is not None:
        raise UserInputError(
            'train_op_fn and optimizer cannot both be set: give one.')
      train_op_fn = _minimize_fn(optimizer)
    return super().create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        train_op_fn=train_op_fn,
        regularization_losses=regularization_losses or None)


class BinaryLogisticHead(_V1Behaviour, binary_class_head.BinaryClassHead,
                         V1Head):
  """2.15's `_BinaryLogisticHeadWithSigmoidCrossEntropyLoss`."""

  def __init__(self, weight_column=None, thresholds=None,
               label_vocabulary=None, loss_reduction=V1_SUM, loss_fn=None,
               name=None):
    super().__init__(weight_column=weight_column, thresholds=thresholds,
                     label_vocabulary=label_vocabulary,
                     loss_reduction=reduction_of_v1(loss_reduction),
                     loss_fn=loss_fn, name=name)

  def _auc(self, *, curve: str, name: str):
    return metrics_lib.trapezoidal_auc(curve=curve, name=name)


class MultiClassSoftmaxHead(_V1Behaviour, multi_class_head.MultiClassHead,
                            V1Head):
  """2.15's `_MultiClassHeadWithSoftmaxCrossEntropyLoss`."""

  def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
               loss_reduction=V1_SUM, loss_fn=None, name=None):
    super().__init__(n_classes, weight_column=weight_column,
                     label_vocabulary=label_vocabulary,
                     loss_reduction=reduction_of_v1(loss_reduction),
                     loss_fn=loss_fn, name=name)


class MeanSquaredErrorHead(_V1Behaviour, regression_head.RegressionHead,
                           V1Head):
  """2.15's `_RegressionHeadWithMeanSquaredErrorLoss`."""

  def __init__(self, label_dimension, weight_column=None,
               loss_reduction=V1_SUM, loss_fn=None, inverse_link_fn=None,
               name=None):
    super().__init__(label_dimension=label_dimension,
                     weight_column=weight_column,
                     loss_reduction=reduction_of_v1(loss_reduction),
                     loss_fn=loss_fn, inverse_link_fn=inverse_link_fn,
                     name=name)


def binary_logistic_head(weight_column=None, thresholds=None,
                         label_vocabulary=None, loss_reduction=V1_SUM,
                         loss_fn=None, name=None) -> BinaryLogisticHead:
  """2.15's `_binary_logistic_head_with_sigmoid_cross_entropy_loss`."""
  return BinaryLogisticHead(
      weight_column=weight_column, thresholds=thresholds,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction,
      loss_fn=loss_fn, name=name)


def multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                     loss_reduction=V1_SUM, loss_fn=None,
                     name=None) -> MultiClassSoftmaxHead:
  """2.15's `_multi_class_head_with_softmax_cross_entropy_loss`."""
  return MultiClassSoftmaxHead(
      n_classes, weight_column=weight_column,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction,
      loss_fn=loss_fn, name=name)


def regression_head(weight_column=None, label_dimension=1,
                    loss_reduction=V1_SUM, loss_fn=None, inverse_link_fn=None,
                    name=None) -> MeanSquaredErrorHead:
  """2.15's `_regression_head`."""
  return MeanSquaredErrorHead(
      label_dimension=label_dimension, weight_column=weight_column,
      loss_reduction=loss_reduction, loss_fn=loss_fn,
      inverse_link_fn=inverse_link_fn, name=name)


def binary_logistic_or_multi_class_head(n_classes, weight_column,
                                        label_vocabulary, loss_reduction):
  """2.15's `_binary_logistic_or_multi_class_head`: the v1 head of an
  `n_classes` classifier."""
  if n_classes == 2:
    return binary_logistic_head(weight_column=weight_column,
                                label_vocabulary=label_vocabulary,
                                loss_reduction=loss_reduction)
  return multi_class_head(n_classes, weight_column=weight_column,
                          label_vocabulary=label_vocabulary,
                          loss_reduction=loss_reduction)
