"""tf.estimator 2.15's v1 heads (its `canned/head.py`): the `_Head` base
class that libraries subclass (DeepCTR, EasyRec, TensorFlow Privacy, ...),
`LossSpec`, and the binary, multi-class and regression heads of the
tf.compat.v1.estimator canned estimators.

The v1 heads here are estimator_rt's heads (their predictions, labels,
unreduced losses, metrics and export outputs) in 2.15's v1 protocol, which
libraries subclass piece by piece:

  - `create_estimator_spec(features, mode, logits, labels=None,
    optimizer=None, train_op_fn=None, regularization_losses=None)` is
    `_create_tpu_estimator_spec(...)`'s TPUEstimatorSpec as an
    EstimatorSpec, so a subclass that overrides `_create_tpu_estimator_spec`
    alone (TensorFlow Privacy's DP heads) is what runs;
  - `create_loss(features, mode, logits, labels)` returns a `LossSpec` (the
    training loss unregularized, the unreduced loss, the weights and the
    processed labels), the loss reduced by
    `tf.compat.v1.losses.compute_weighted_loss` with the head's
    `_loss_reduction`, any `tf.compat.v1.losses.Reduction` (summed by
    default; NONE leaves one loss per example);
  - `_eval_metric_ops(...)`, with 2.15's arguments per head, returns the
    metrics' `(value, update_op)` pairs;
  - in TRAIN, `optimizer` is a `tf.compat.v1.train.Optimizer`:
    `optimizer.minimize(loss, global_step=get_global_step())`, grouped with
    the graph's UPDATE_OPS (`append_update_ops`), and with a summed loss the
    mean loss is reported too (`average_loss`);
  - the binary head's auc and auc_precision_recall are
    tf.compat.v1.metrics.auc's (trapezoidal);
  - the protected attributes 2.15's subclasses read: `_name`,
    `_weight_column`, `_label_vocabulary`, `_n_classes`, `_thresholds`,
    `_loss_fn`, `_loss_reduction` (the v1 value given),
    `_logits_dimension`, `_inverse_link_fn`.

They run in a graph (a TF1-style model_fn, the graph engine), as 2.15's
did.
"""

import abc
import collections

import tensorflow as tf

from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import SubclassError
from estimator_rt.core.errors import UserInputError
from estimator_rt.estimator.head import base_head
from estimator_rt.estimator.head import binary_class_head
from estimator_rt.estimator.head import keys as keys_lib
from estimator_rt.estimator.head import metrics as metrics_lib
from estimator_rt.estimator.head import multi_class_head
from estimator_rt.estimator.head import regression_head
from estimator_rt.core.mode_keys import ModeKeys

_P = keys_lib.PredictionKeys
_M = keys_lib.MetricKeys

LossSpec = collections.namedtuple(
    'LossSpec', ['training_loss', 'unreduced_loss', 'weights',
                 'processed_labels'])

V1_SUM = tf.compat.v1.losses.Reduction.SUM  # 'weighted_sum'


def check_v1_reduction(loss_reduction) -> None:
  """2.15's check: `loss_reduction` is a tf.compat.v1.losses.Reduction.

  Raises:
    UserInputError: (a ValueError) it is not.
  """
  if loss_reduction not in tf.compat.v1.losses.Reduction.all():
    raise UserInputError(
        f'Invalid loss_reduction: {loss_reduction}. (A v1 head takes a '
        f'tf.compat.v1.losses.Reduction: {tf.compat.v1.losses.Reduction.all()}'
        '.)')


def _as_reduction(loss_reduction) -> str:
  """The heads' (TF2) reduction nearest a v1 one: SUM for a sum, else
  SUM_OVER_BATCH_SIZE (every other v1 reduction is a mean, or none)."""
  return base_head.SUM if loss_reduction == V1_SUM else (
      base_head.SUM_OVER_BATCH_SIZE)


def summary_key(head_name, val: str) -> str:
  """`val/head_name`, or `val` for a head without a name (2.15's
  `_summary_key`)."""
  return f'{val}/{head_name}' if head_name else val


def append_update_ops(train_op):
  """`train_op` grouped with the graph's UPDATE_OPS (batch normalization's
  moving statistics), or as it is when there are none (2.15's
  `_append_update_ops`)."""
  update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
  if update_ops:
    return tf.group(train_op, *update_ops)
  return train_op


class V1Head(abc.ABC):
  """2.15's `_Head` (tf.estimator's v1 head interface): a subclass defines
  `name`, `logits_dimension`, `create_loss` and either
  `create_estimator_spec` or `_create_tpu_estimator_spec` (whose
  TPUEstimatorSpec `create_estimator_spec` turns into an EstimatorSpec).
  Not a `tf.estimator.Head`, as in 2.15 (see base_head._HeadMeta)."""

  is_v1_head = True

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
    """The EstimatorSpec of `mode`: the head's TPUEstimatorSpec as an
    EstimatorSpec.

    Raises:
      SubclassError: (a NotImplementedError) the head defines neither
        create_estimator_spec nor _create_tpu_estimator_spec.
    """
    try:
      # Positionally, as 2.15 called it (overrides name them their way).
      tpu_spec = self._create_tpu_estimator_spec(
          features, mode, logits, labels, optimizer, train_op_fn,
          regularization_losses)
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


def _require_graph(head) -> None:
  """2.15's v1 heads build a graph (tf.compat.v1 metrics, `optimizer.minimize`
  of a loss tensor), as 2.15's only did: the eager engine's build call is
  sent to the graph engine here, before the head or its subclass touches
  anything (a library's optimizer keeps state it creates on first use, which
  an eager attempt would leave holding eager tensors).

  Raises:
    GraphModelFnError: the model_fn runs in the eager engine.
  """
  if metrics_lib.in_graph_engine():
    return
  raise GraphModelFnError(
      f'{type(head).__name__} is a v1 head (tf.estimator\'s `_Head`), which '
      'builds a graph.', reason='it uses a v1 head (canned.head._Head)')


def _v1_train_op(loss, optimizer, train_op_fn):
  """2.15's v1 train op: `optimizer.minimize` at the global step, or
  `train_op_fn(loss)`, with the graph's UPDATE_OPS.

  Raises:
    UserInputError: both or neither of optimizer and train_op_fn.
  """
  if optimizer is not None:
    if train_op_fn is not None:
      raise UserInputError(
          'train_op_fn and optimizer cannot both be set. (Give one.)')
    train_op = optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
  elif train_op_fn is not None:
    train_op = train_op_fn(loss)
  else:
    raise UserInputError(
        'train_op_fn and optimizer cannot both be None. (In TRAIN give '
        'create_estimator_spec one of them.)')
  return append_update_ops(train_op)


class _V1Behaviour:
  """What a v1 head adds to estimator_rt's head it derives from (see the
  module docstring). Placed first among a v1 head's bases, V1Head last:
  the head's own name and logits_dimension then win over V1Head's abstract
  ones. A head defines `_eval_metric_ops` (2.15's arguments) and
  `_eval_metric_arguments` (those arguments, for one batch)."""

  _V1_OP_NAMES = True

  def _keep_v1_reduction(self, loss_reduction) -> None:
    """After the head's constructor: `_loss_reduction` is the v1 value, as
    2.15's v1 heads (and their subclasses) had it."""
    self._loss_reduction = loss_reduction

  @property
  def loss_reduction(self) -> str:
    """The heads' reduction nearest the v1 one (how a canned estimator
    scales a mean loss for its replicas)."""
    return _as_reduction(self._loss_reduction)

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, train_op_fn=None,
                            regularization_losses=None):
    """V1Head's (the head's `_create_tpu_estimator_spec` as an
    EstimatorSpec), in a graph.

    Raises:
      GraphModelFnError: called by the eager engine (see _require_graph).
    """
    _require_graph(self)
    return V1Head.create_estimator_spec(
        self, features, mode, logits, labels=labels, optimizer=optimizer,
        train_op_fn=train_op_fn, regularization_losses=regularization_losses)

  def create_loss(self, features, mode, logits, labels):
    """The LossSpec of 2.15's v1 heads: the training loss before
    regularization (reduced by `_loss_reduction`), the unreduced loss, the
    weights, the processed labels."""
    del mode
    logits = base_head.check_logits_final_dim(logits, self.logits_dimension)
    labels = self._processed_labels(logits, labels)
    unreduced, weights = self._unweighted_loss_and_weights(logits, labels,
                                                           features)
    loss = tf.compat.v1.losses.compute_weighted_loss(
        unreduced, weights=weights, reduction=self._loss_reduction)
    return LossSpec(training_loss=loss, unreduced_loss=unreduced,
                    weights=weights, processed_labels=labels)

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    """The training loss of `create_loss`, plus `regularization_losses`."""
    loss = self.create_loss(features, mode, logits, labels).training_loss
    if regularization_losses:
      loss = tf.math.add_n([loss] + list(regularization_losses))
    return loss

  def _v1_eval_metric_ops(self, regularization_loss, **tensors):
    """The head's metrics updated with one batch's `tensors` (its
    `_update_metrics_with` arguments), as `(value, update_op)` pairs."""
    eval_metrics = self.metrics(
        regularization_losses=(None if regularization_loss is None else
                               [regularization_loss]))
    self._update_metrics_with(eval_metrics,
                              regularization_loss=regularization_loss,
                              **tensors)
    return metrics_lib.as_eval_metric_ops(eval_metrics,
                                          update_gives_value=True)

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, train_op_fn=None,
                                 regularization_losses=None):
    """2.15's v1 spec of `mode` (see the module docstring), as a
    TPUEstimatorSpec.

    Raises:
      UserInputError: both or neither of optimizer and train_op_fn in
        TRAIN.
    """
    from estimator_rt.estimator.tpu import tpu_estimator as tpu  # pylint: disable=g-import-not-at-top
    with tf.compat.v1.name_scope(self._name, 'head'):
      logits = base_head.check_logits_final_dim(logits,
                                                self.logits_dimension)
      predictions = self.predictions(logits)
      if mode == ModeKeys.PREDICT:
        return tpu.TPUEstimatorSpec(
            mode=ModeKeys.PREDICT, predictions=predictions,
            export_outputs=self._export_outputs(predictions))
      loss_spec = self.create_loss(features=features, mode=mode,
                                   logits=logits, labels=labels)
      regularization_loss = None
      loss = loss_spec.training_loss
      if regularization_losses:
        regularization_loss = tf.math.add_n(regularization_losses)
        loss = tf.math.add_n([loss, regularization_loss])
      if mode == ModeKeys.EVAL:
        arguments = self._eval_metric_arguments(logits, predictions,
                                                loss_spec)
        arguments['regularization_loss'] = regularization_loss
        return tpu.TPUEstimatorSpec(
            mode=ModeKeys.EVAL, predictions=predictions, loss=loss,
            eval_metrics=base_head.create_eval_metrics_tuple(
                self._eval_metric_ops, arguments))
      train_op = _v1_train_op(loss, optimizer, train_op_fn)
      mean_loss = None
      if self._loss_reduction == V1_SUM:
        # The mean over the examples' weights, reported beside the sum.
        weight_sum = tf.math.reduce_sum(
            loss_spec.weights * tf.ones_like(loss_spec.unreduced_loss))
        mean_loss = loss_spec.training_loss / weight_sum
    with tf.compat.v1.name_scope(''):
      tf.compat.v1.summary.scalar(summary_key(self._name, _M.LOSS), loss)
      if mean_loss is not None:
        tf.compat.v1.summary.scalar(summary_key(self._name, _M.LOSS_MEAN),
                                    mean_loss)
      if regularization_loss is not None:
        tf.compat.v1.summary.scalar(
            summary_key(self._name, _M.LOSS_REGULARIZATION),
            regularization_loss)
    return tpu.TPUEstimatorSpec(mode=ModeKeys.TRAIN, predictions=predictions,
                                loss=loss, train_op=train_op)


class BinaryLogisticHead(_V1Behaviour, binary_class_head.BinaryClassHead,
                         V1Head):
  """2.15's `_BinaryLogisticHeadWithSigmoidCrossEntropyLoss`."""

  def __init__(self, weight_column=None, thresholds=None,
               label_vocabulary=None, loss_reduction=V1_SUM, loss_fn=None,
               name=None):
    check_v1_reduction(loss_reduction)
    super().__init__(weight_column=weight_column, thresholds=thresholds,
                     label_vocabulary=label_vocabulary,
                     loss_reduction=_as_reduction(loss_reduction),
                     loss_fn=loss_fn, name=name)
    self._keep_v1_reduction(loss_reduction)

  def _auc(self, *, curve: str, name: str):
    return metrics_lib.trapezoidal_auc(curve=curve, name=name)

  def _eval_metric_ops(self, labels, logits, logistic, class_ids, weights,
                       unreduced_loss, regularization_loss):
    """The metrics' (value, update_op) pairs for one batch (2.15's)."""
    del logits  # 2.15's metrics read the logistic.
    return self._v1_eval_metric_ops(
        regularization_loss, labels=labels, logistic=logistic,
        class_ids=class_ids, weights=weights, unreduced_loss=unreduced_loss)

  def _eval_metric_arguments(self, logits, predictions, loss_spec):
    return {'labels': loss_spec.processed_labels, 'logits': logits,
            'logistic': predictions[_P.LOGISTIC],
            'class_ids': predictions[_P.CLASS_IDS],
            'weights': loss_spec.weights,
            'unreduced_loss': loss_spec.unreduced_loss}


class MultiClassSoftmaxHead(_V1Behaviour, multi_class_head.MultiClassHead,
                            V1Head):
  """2.15's `_MultiClassHeadWithSoftmaxCrossEntropyLoss`."""

  def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
               loss_reduction=V1_SUM, loss_fn=None, name=None):
    check_v1_reduction(loss_reduction)
    super().__init__(n_classes, weight_column=weight_column,
                     label_vocabulary=label_vocabulary,
                     loss_reduction=_as_reduction(loss_reduction),
                     loss_fn=loss_fn, name=name)
    self._keep_v1_reduction(loss_reduction)

  def _eval_metric_ops(self, labels, class_ids, weights, unreduced_loss,
                       regularization_loss):
    """The metrics' (value, update_op) pairs for one batch (2.15's)."""
    return self._v1_eval_metric_ops(
        regularization_loss, labels=labels, class_ids=class_ids,
        weights=weights, unreduced_loss=unreduced_loss)

  def _eval_metric_arguments(self, logits, predictions, loss_spec):
    del logits
    return {'labels': loss_spec.processed_labels,
            'class_ids': predictions[_P.CLASS_IDS],
            'weights': loss_spec.weights,
            'unreduced_loss': loss_spec.unreduced_loss}


class MeanSquaredErrorHead(_V1Behaviour, regression_head.RegressionHead,
                           V1Head):
  """2.15's `_RegressionHeadWithMeanSquaredErrorLoss`."""

  def __init__(self, label_dimension, weight_column=None,
               loss_reduction=V1_SUM, loss_fn=None, inverse_link_fn=None,
               name=None):
    check_v1_reduction(loss_reduction)
    super().__init__(label_dimension=label_dimension,
                     weight_column=weight_column,
                     loss_reduction=_as_reduction(loss_reduction),
                     loss_fn=loss_fn, inverse_link_fn=inverse_link_fn,
                     name=name)
    self._keep_v1_reduction(loss_reduction)

  def _eval_metric_ops(self, predicted_value, labels, weights, unreduced_loss,
                       regularization_loss):
    """The metrics' (value, update_op) pairs for one batch (2.15's)."""
    return self._v1_eval_metric_ops(
        regularization_loss, predicted_value=predicted_value,
        labels=tf.cast(labels, tf.float32), weights=weights,
        unreduced_loss=unreduced_loss)

  def _eval_metric_arguments(self, logits, predictions, loss_spec):
    del logits
    return {'predicted_value': predictions[_P.PREDICTIONS],
            'labels': loss_spec.processed_labels,
            'weights': loss_spec.weights,
            'unreduced_loss': loss_spec.unreduced_loss}


def _check_factory_reduction(loss_reduction) -> None:
  """2.15's factories refused NONE as well (the classes take it: a
  subclass may reduce the per-example losses itself).

  Raises:
    UserInputError: (a ValueError) NONE or not a v1 reduction.
  """
  check_v1_reduction(loss_reduction)
  if loss_reduction == tf.compat.v1.losses.Reduction.NONE:
    raise UserInputError(
        f'Invalid loss_reduction: {loss_reduction}. (A head made by this '
        'function reduces the loss to a scalar.)')


def binary_logistic_head(weight_column=None, thresholds=None,
                         label_vocabulary=None, loss_reduction=V1_SUM,
                         loss_fn=None, name=None) -> BinaryLogisticHead:
  """2.15's `_binary_logistic_head_with_sigmoid_cross_entropy_loss`."""
  _check_factory_reduction(loss_reduction)
  return BinaryLogisticHead(
      weight_column=weight_column, thresholds=thresholds,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction,
      loss_fn=loss_fn, name=name)


def multi_class_head(n_classes, weight_column=None, label_vocabulary=None,
                     loss_reduction=V1_SUM, loss_fn=None,
                     name=None) -> MultiClassSoftmaxHead:
  """2.15's `_multi_class_head_with_softmax_cross_entropy_loss`."""
  _check_factory_reduction(loss_reduction)
  return MultiClassSoftmaxHead(
      n_classes, weight_column=weight_column,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction,
      loss_fn=loss_fn, name=name)


def regression_head(weight_column=None, label_dimension=1,
                    loss_reduction=V1_SUM, loss_fn=None, inverse_link_fn=None,
                    name=None) -> MeanSquaredErrorHead:
  """2.15's `_regression_head`."""
  _check_factory_reduction(loss_reduction)
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
