"""`Head`: what tf.estimator 2.15's heads share, and the helpers they use.

A head turns a model's logits into tf.estimator's outputs: the training
loss and train op, predictions, evaluation metrics and export signatures
(`create_estimator_spec`). The heads here keep 2.15's public API, keys and
numbers; they return estimator_rt `EstimatorSpec`s and run in both engines
(metrics.py says how metrics follow the engine).
"""

import abc
import contextlib
from typing import Any, Dict, NamedTuple, Optional

from absl import logging
import tensorflow as tf

from estimator_rt.core import export_outputs as outputs_lib
from estimator_rt.core.errors import EagerModelFnError
from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import SubclassError
from estimator_rt.core.errors import UserInputError
from estimator_rt.estimator.head import checks
from estimator_rt.estimator.head import keys as keys_lib
from estimator_rt.estimator.head import metrics as metrics_lib
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec
from estimator_rt.core.spec import is_keras3

_P = keys_lib.PredictionKeys

SUM_OVER_BATCH_SIZE = 'sum_over_batch_size'
SUM = 'sum'
# tf.losses.Reduction.AUTO, which 2.15's heads accepted: the loss is
# reduced as SUM_OVER_BATCH_SIZE, but the optimizer= path does not divide
# it by the number of replicas (2.15 did that for SUM_OVER_BATCH_SIZE only).
AUTO = 'auto'
_REDUCTIONS = (SUM_OVER_BATCH_SIZE, SUM, AUTO)


def validate_loss_reduction(loss_reduction) -> None:
  """Refuses what 2.15 refused: NONE and anything not a reduction."""
  if loss_reduction not in _REDUCTIONS:
    raise UserInputError(
        f'Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` '
        f'for valid options: a head takes one of {_REDUCTIONS} (it needs a '
        'scalar loss, so not NONE).')


def validate_n_classes(n_classes):
  """`n_classes` as given, checked to be > 2 (a Python int; a tensor is
  checked when the graph runs, as 2.15 did)."""
  if isinstance(n_classes, int) and n_classes <= 2:
    raise UserInputError(
        f'n_classes must be > 2: {n_classes}. (BinaryClassHead is the head '
        'for two classes.)')
  return n_classes


def validate_update_ops(update_ops=None) -> None:
  if update_ops is not None and not isinstance(update_ops, (list, tuple)):
    raise UserInputError(
        f'update_ops should be a list or a tuple. Given type: '
        f'{type(update_ops)}.')


def validate_trainable_variables(trainable_variables=None) -> None:
  """What `create_estimator_spec(optimizer=...)` needs in a graph: the
  variables to train, as a list (TF2 has no TRAINABLE_VARIABLES collection
  to take them from)."""
  if trainable_variables is None:
    raise UserInputError(
        'trainable_variables cannot be None. Given None: give the list of '
        'variables the optimizer trains.')
  if not isinstance(trainable_variables, (list, tuple)):
    raise UserInputError(
        'trainable_variables should be a list or a tuple. Given type: '
        f'{type(trainable_variables)}.')


def add_class_predictions(out, keys, class_logits, n_classes,
                          label_vocabulary) -> None:
  """Adds the class predictions of `keys` to `out`: class_ids (argmax of
  `class_logits`, one per class), classes, all_class_ids, all_classes."""
  if _P.CLASS_IDS in keys or _P.CLASSES in keys:
    class_ids = tf.expand_dims(
        tf.math.argmax(class_logits, axis=-1, name=_P.CLASS_IDS), -1)
    if _P.CLASS_IDS in keys:
      out[_P.CLASS_IDS] = class_ids
    if _P.CLASSES in keys:
      out[_P.CLASSES] = class_names(class_ids, label_vocabulary)
  if _P.ALL_CLASS_IDS in keys:
    out[_P.ALL_CLASS_IDS] = all_class_ids(class_logits, n_classes)
  if _P.ALL_CLASSES in keys:
    out[_P.ALL_CLASSES] = all_classes(class_logits, n_classes,
                                      label_vocabulary)


def reduce_loss(unweighted_loss, weights, loss_reduction) -> tf.Tensor:
  """The weighted loss reduced as Keras reduced it for tf.estimator: SUM
  adds the weighted losses, SUM_OVER_BATCH_SIZE divides that by the number
  of loss elements (batch size * label dimension), and so does AUTO.

  Its ops have the names of 2.15's (Keras' and tf.compat.v1.losses'
  `compute_weighted_loss`): `weighted_loss/Sum` is the summed loss,
  `weighted_loss/value` the mean; programs fetch them by name.
  """
  with tf.name_scope('weighted_loss'):
    # Multiplied by 1. without weights, as 2.15 did (the same numbers).
    weights = 1. if weights is None else tf.cast(weights, tf.float32)
    weighted = tf.math.multiply(tf.cast(unweighted_loss, tf.float32),
                                weights)
    total = tf.reduce_sum(weighted)
    if loss_reduction == SUM:
      return total
    with tf.name_scope('num_elements') as scope:
      count = tf.cast(tf.size(weighted, name=scope), tf.float32)
    return tf.math.divide_no_nan(tf.reduce_sum(total), count, name='value')


# 2.15's checks, under the names its base_head module gave them.
check_dense_labels_match_logits_and_reshape = (
    checks.check_dense_labels_match_logits_and_reshape)
check_logits_final_dim = checks.check_logits_final_dim
get_weights_and_check_match_logits = checks.get_weights_and_check_match_logits
check_label_range = checks.check_label_range
call_loss_fn = checks.call_loss_fn
validate_loss_fn_args = checks.validate_loss_fn_args
check_prediction_keys = checks.check_prediction_keys


def label_ids(labels, label_vocabulary, *, head: str) -> tf.Tensor:
  """String labels as their index in `label_vocabulary` (int64; -1 for a
  label not in it, which the range check then refuses); other labels as
  they are. Without a vocabulary, string labels are refused."""
  if label_vocabulary is not None:
    # Made outside any function or loop being built (the graph engine's
    # in-graph loop): its initializer must run once, with the others.
    with tf.init_scope():
      table = tf.lookup.StaticHashTable(
          tf.lookup.KeyValueTensorInitializer(
              tf.constant(list(label_vocabulary)),
              tf.range(len(label_vocabulary), dtype=tf.int64)), -1)
    return table.lookup(labels)
  if labels.dtype == tf.string:
    raise UserInputError(f'{head}: labels are strings; give label_vocabulary.')
  return labels


def class_names(class_ids, label_vocabulary) -> tf.Tensor:
  """The `classes` prediction: the vocabulary's strings, or the ids as
  strings."""
  if label_vocabulary is not None:
    return tf.gather(tf.constant(list(label_vocabulary)), class_ids)
  return tf.strings.as_string(class_ids, name='str_classes')


def all_class_ids(logits, n_classes: int) -> tf.Tensor:
  batch = tf.shape(logits)[0]
  return tf.tile(tf.expand_dims(tf.range(n_classes), 0), [batch, 1])


def all_classes(logits, n_classes: int, label_vocabulary=None) -> tf.Tensor:
  batch = tf.shape(logits)[0]
  if label_vocabulary:
    names = tf.convert_to_tensor([list(label_vocabulary)])
  else:
    names = tf.strings.as_string(tf.expand_dims(tf.range(n_classes), 0))
  return tf.tile(names, [batch, 1])


def classification_output(scores, n_classes: int, label_vocabulary=None):
  """The ClassificationOutput 2.15 exported: every class name per example
  beside its scores."""
  return outputs_lib.ClassificationOutput(
      scores=scores, classes=all_classes(scores, n_classes, label_vocabulary))


def validate_v2_optimizer(optimizer) -> None:
  """2.15's check that `optimizer` is a Keras optimizer (here: Keras 2's,
  legacy or not, which a TF1-style model_fn trains with, or Keras 3's).

  Raises:
    UserInputError: (a ValueError) it is not.
  """
  import keras  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  if not isinstance(optimizer, (tf_keras.optimizers.Optimizer,
                                tf_keras.optimizers.legacy.Optimizer,
                                keras.optimizers.Optimizer)):
    raise UserInputError(
        'The given optimizer is not a tf.keras.optimizers.Optimizer '
        f'instance. Received optimizer of type {type(optimizer)} (a Keras '
        'optimizer: tf_keras.optimizers.legacy.* in a TF1-style model_fn, '
        'keras.optimizers.* in a TF2 one).')


def graph_optimizer(optimizer):
  """`optimizer` as a Keras 2 optimizer with `get_updates` (what 2.15's
  heads called): a `tf_keras.optimizers` instance (legacy or not), or a
  tf_keras optimizer name ('sgd', 'Adagrad', ...) made into one."""
  if isinstance(optimizer, str):
    import tf_keras  # pylint: disable=g-import-not-at-top
    try:
      return tf_keras.optimizers.get(optimizer, use_legacy_optimizer=True)
    except ValueError as e:
      raise UserInputError(
          f'create_estimator_spec: optimizer={optimizer!r} is not a tf_keras '
          'optimizer name.') from e
  if not callable(getattr(optimizer, 'get_updates', None)):
    message = (
        'The given optimizer is not a tf.keras.optimizers.Optimizer '
        f'instance. Received optimizer of type {type(optimizer)}: in a '
        'TF1-style model_fn (graph engine) give a Keras 2 optimizer, '
        'tf_keras.optimizers.legacy.* (what tf.keras.optimizers.legacy was '
        'in 2.15), or a TF2 model_fn a Keras 3 one.')
    if is_keras3(optimizer):
      # Keras 3's: a TF2 model_fn (engine_choice.py), which the eager engine
      # runs where no checkpoint has settled the graph engine.
      raise EagerModelFnError(
          message, reason='its head was given a Keras 3 optimizer')
    raise UserInputError(message)
  return optimizer


def create_estimator_spec_train_op(
    head_name, optimizer=None, trainable_variables=None,
    train_op_fn=None, update_ops=None, regularized_training_loss=None,
    loss_reduction=SUM_OVER_BATCH_SIZE):
  """The train op of 2.15's heads (its signature), built under the root
  name scope 'training' (so a Keras 2 optimizer's slots are named as 2.15
  named them, and 2.15's checkpoints load):

  - with `optimizer`: `optimizer.get_updates(loss, trainable_variables)`,
    a SUM_OVER_BATCH_SIZE loss first divided by the number of replicas
    (each replica's gradients are summed). It increments
    `optimizer.iterations`, which is the global step only if the model_fn
    made it so (`optimizer.iterations =
    tf.compat.v1.train.get_or_create_global_step()`, as 2.15's canned
    estimators did); otherwise the graph engine counts the step itself.
  - with `train_op_fn`: `train_op_fn(loss)`.

  Either is grouped with `update_ops`. `head_name` is not used (2.15 did
  not use it either).

  Raises:
    UserInputError: both or neither of optimizer and train_op_fn, or a bad
      optimizer, trainable_variables or update_ops (2.15's messages).
  """
  del head_name
  validate_update_ops(update_ops)
  loss = regularized_training_loss
  with tf.compat.v1.name_scope(''):  # Leaves the head's scope, as 2.15 did.
    with tf.name_scope('training'):
      if optimizer is not None:
        if train_op_fn is not None:
          raise UserInputError(
              'train_op_fn and optimizer cannot both be set: give one.')
        optimizer = graph_optimizer(optimizer)
        if not metrics_lib.in_graph_engine():
          # Before get_updates touches the optimizer (a library's keeps
          # state it makes on first use, which would hold eager tensors).
          raise GraphModelFnError(
              f'create_estimator_spec_train_op: optimizer={optimizer!r} is a '
              'Keras 2 optimizer, whose get_updates builds a graph.',
              reason='its head trains with a Keras 2 optimizer (get_updates)')
        validate_trainable_variables(trainable_variables)
        if loss_reduction == SUM_OVER_BATCH_SIZE:
          replicas = tf.distribute.get_strategy().num_replicas_in_sync
          if replicas > 1:
            loss *= 1. / replicas
        train_op = optimizer.get_updates(loss, list(trainable_variables))[0]
      elif train_op_fn is not None:
        train_op = train_op_fn(loss)
      else:
        raise UserInputError(
            'train_op_fn and optimizer cannot both be None: in TRAIN give '
            'create_estimator_spec one of them.')
      if update_ops is not None:
        train_op = tf.group(train_op, *update_ops)
      return train_op


def create_train_op(*, optimizer, trainable_variables, train_op_fn,
                    update_ops, loss, loss_reduction):
  """`create_estimator_spec_train_op` with estimator_rt's argument names."""
  return create_estimator_spec_train_op(
      None, optimizer=optimizer, trainable_variables=trainable_variables,
      train_op_fn=train_op_fn, update_ops=update_ops,
      regularized_training_loss=loss, loss_reduction=loss_reduction)


def create_estimator_spec_summary(regularized_training_loss,
                                  regularization_losses=None,
                                  summary_key_fn=None) -> None:
  """2.15's training summaries: the loss, and the regularization loss when
  `regularization_losses` is given, under their keys (`summary_key_fn`
  names them for a head: 'loss/<head name>'), at the root name scope."""
  keys = keys_lib.MetricKeys
  key = summary_key_fn or (lambda name: name)
  with tf.compat.v1.name_scope(''):
    tf.compat.v1.summary.scalar(key(keys.LOSS), regularized_training_loss)
    if regularization_losses is not None:
      tf.compat.v1.summary.scalar(key(keys.LOSS_REGULARIZATION),
                                  tf.math.add_n(regularization_losses))


def update_metric_with_broadcast_weights(eval_metric, values, weights):
  """2.15's: updates a mean metric with `values` (as float32) and
  `weights` broadcast to their shape."""
  values = tf.cast(values, tf.float32)
  if weights is not None:
    weights = tf.compat.v2.__internal__.ops.broadcast_weights(weights, values)
  eval_metric.update_state(values=values, sample_weight=weights)


def create_eval_metrics_tuple(fn, kwargs):
  """2.15's helper for TPUEstimatorSpec's `eval_metrics`: `(metric_fn,
  tensors)`, where `metric_fn(**tensors)` calls `fn` with `kwargs` (its
  non-tensor values bound, since TPUEstimator passes tensors only)."""
  tensors = {k: v for k, v in kwargs.items() if tf.is_tensor(v)}
  others = {k: v for k, v in kwargs.items() if not tf.is_tensor(v)}

  def metric_fn(**given):
    return fn(**dict(others, **given))

  return metric_fn, tensors


_warned_trainable_variables = []


def eager_train_spec(*, optimizer, loss, predictions, trainable_variables,
                     update_ops, loss_reduction) -> EstimatorSpec:
  """The TRAIN spec of a head in a TF2 model_fn (eager engine): the loss
  and a Keras 3 optimizer, which the runtime applies to the gradients of
  every trainable variable the model_fn created. EstimatorSpec cannot
  express a narrower set, so `trainable_variables` is not used here (a
  warning says so when it is given); nor are `update_ops` (Keras 3 layers
  update their state when called)."""
  import keras  # pylint: disable=g-import-not-at-top
  if isinstance(optimizer, str) or callable(
      getattr(optimizer, 'get_updates', None)):
    # 2.15's way (get_updates builds graph ops): a TF1-style model_fn,
    # which the graph engine then runs (see engine_choice.py).
    raise GraphModelFnError(
        f'create_estimator_spec: optimizer={optimizer!r} is a Keras 2 '
        'optimizer, whose get_updates builds a graph.',
        reason='its head trains with a Keras 2 optimizer (get_updates)')
  if not isinstance(optimizer, keras.optimizers.Optimizer):
    raise UserInputError(
        f'create_estimator_spec: optimizer={optimizer!r} in a TF2 model_fn '
        '(eager engine) must be a Keras 3 optimizer (keras.optimizers.*); '
        'Keras 2 optimizers run in TF1-style model_fns (graph engine).')
  if trainable_variables is not None and not _warned_trainable_variables:
    _warned_trainable_variables.append(True)
    logging.warning(
        'create_estimator_spec: trainable_variables is not used in a TF2 '
        'model_fn (eager engine): the runtime trains every trainable '
        'variable; freeze a layer with layer.trainable = False instead.')
  del update_ops
  spec = EstimatorSpec(mode=ModeKeys.TRAIN, predictions=predictions,
                       loss=loss, optimizer=optimizer)
  # 2.15 left a summed loss undivided by the number of replicas (only
  # SUM_OVER_BATCH_SIZE was divided, see create_train_op), so replicas'
  # gradients add up to the global batch's sum. AUTO's loss is a mean and
  # trains as one here (2.15's graph path left it undivided too, giving N
  # replicas N times one replica's step; the graph engine keeps that).
  spec.loss_is_sum = loss_reduction == SUM
  return spec


class LossParts(NamedTuple):
  """A head's training loss and what it was computed from.

  Attributes:
    regularized: the training loss with the regularization losses added.
    loss: the weighted losses reduced, without them.
    unweighted: the per-example (per-element) losses.
    weights: the example weights ([batch, 1]), or None.
  """
  regularized: tf.Tensor
  loss: tf.Tensor
  unweighted: tf.Tensor
  weights: Optional[tf.Tensor]


class _HeadMeta(abc.ABCMeta):
  """`Head`'s metaclass: tf.estimator 2.15's v1 heads (`canned.head._Head`
  and its classes, v1_head.py) are not `Head`s, as in 2.15, although they
  reuse the TF2 heads' code by subclassing them here; libraries tell the two
  kinds apart with `isinstance(head, tf.estimator.Head)` (TF Constrained
  Optimization's HeadV1 and HeadV2 do). Only `Head` itself answers so: the
  concrete TF2 head classes still count their v1 subclasses."""

  def __subclasscheck__(cls, subclass):
    if cls is Head and getattr(subclass, 'is_v1_head', False):
      return False
    return super().__subclasscheck__(subclass)

  def __instancecheck__(cls, instance):
    return cls.__subclasscheck__(type(instance))


class Head(metaclass=_HeadMeta):
  """tf.estimator's Head (2.15's `tf.estimator.Head`): logits in,
  EstimatorSpec out.

  What a head defines: `name`, `logits_dimension`, `loss_reduction`,
  `loss`, `predictions`, `metrics`, `update_metrics`, and either
  `create_estimator_spec` or `_create_tpu_estimator_spec` (whose
  TPUEstimatorSpec `create_estimator_spec` then turns into an
  EstimatorSpec, as 2.15 did). The heads here derive from `SingleHead`
  (one logits tensor) or define create_estimator_spec (MultiHead,
  SequentialHeadWrapper).
  """

  # Abstract as in 2.15 (a subclass that leaves one out cannot be made,
  # with 2.15's TypeError naming them): `name`, `logits_dimension`,
  # `loss_reduction` and the four methods below.

  @property
  @abc.abstractmethod
  def name(self) -> Optional[str]:
    """The head's name: metric and summary keys get '/name' appended."""

  @property
  @abc.abstractmethod
  def logits_dimension(self) -> int:
    """The size of the logits' last dimension."""

  @property
  @abc.abstractmethod
  def loss_reduction(self) -> str:
    """How the training loss is reduced over the batch."""

  def _summary_key(self, key: str) -> str:
    return f'{key}/{self.name}' if self.name else key

  @abc.abstractmethod
  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    """The regularized training loss, a scalar."""

  @abc.abstractmethod
  def predictions(self, logits, keys=None) -> Dict[str, tf.Tensor]:
    """The predictions of `keys` (all when None)."""

  @abc.abstractmethod
  def metrics(self, regularization_losses=None) -> Dict[str, Any]:
    """New metric objects, by key."""

  @abc.abstractmethod
  def update_metrics(self, eval_metrics, features, logits, labels,
                     mode=None, regularization_losses=None):
    """Updates `eval_metrics` (from `metrics()`) with one batch; returns
    them. (2.15's abstract signature has `mode`; its heads leave it out.)"""

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None) -> EstimatorSpec:
    """The EstimatorSpec of `mode` for `logits`: for a head that defines
    `_create_tpu_estimator_spec` only, its TPUEstimatorSpec as an
    EstimatorSpec (see SingleHead.create_estimator_spec for the arguments).

    Raises:
      SubclassError: (a NotImplementedError) the head defines neither.
    """
    try:
      tpu_spec = self._create_tpu_estimator_spec(
          features=features, mode=mode, logits=logits, labels=labels,
          optimizer=optimizer, trainable_variables=trainable_variables,
          train_op_fn=train_op_fn, update_ops=update_ops,
          regularization_losses=regularization_losses)
    except NotImplementedError as e:
      raise SubclassError(
          'Subclasses of Head must implement `create_estimator_spec()` or '
          f'_create_tpu_estimator_spec(). {type(self).__name__} implements '
          'neither.') from e
    return tpu_spec.as_estimator_spec()

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, trainable_variables=None,
                                 train_op_fn=None, update_ops=None,
                                 regularization_losses=None):
    """A TPUEstimatorSpec for `mode`; heads that have none (all here) leave
    this as it is.

    Raises:
      SubclassError: (a NotImplementedError) always, here.
    """
    raise SubclassError(
        'TPUEstimatorSpec not available for this model head. '
        f'({type(self).__name__} defines create_estimator_spec only.)')

  def _train_spec(self, *, loss, predictions, optimizer, trainable_variables,
                  train_op_fn, update_ops, regularization_losses,
                  eval_metric_ops=None, loss_parts=None) -> EstimatorSpec:
    """The TRAIN spec for the head's regularized `loss` (`loss_parts`: what
    it was computed from, for the v1 heads' mean loss)."""
    if (optimizer is not None and train_op_fn is None and
        not metrics_lib.in_graph_engine()):
      # A TF2 model_fn: the eager engine differentiates and applies.
      return eager_train_spec(
          optimizer=optimizer, loss=loss, predictions=predictions,
          trainable_variables=trainable_variables, update_ops=update_ops,
          loss_reduction=self.loss_reduction)
    train_op = create_train_op(
        optimizer=optimizer, trainable_variables=trainable_variables,
        train_op_fn=train_op_fn, update_ops=update_ops, loss=loss,
        loss_reduction=self.loss_reduction)
    # After the train op, as 2.15 made it (the names are the same).
    mean_loss = (self._v1_mean_loss(loss_parts) if loss_parts is not None
                 else None)
    self._write_loss_summary(loss, regularization_losses, mean_loss)
    return EstimatorSpec(mode=ModeKeys.TRAIN, predictions=predictions,
                         loss=loss, train_op=train_op,
                         eval_metric_ops=eval_metric_ops)

  def _v1_mean_loss(self, parts: 'LossParts') -> Optional[tf.Tensor]:
    """The v1 heads' mean loss (see SingleHead); None here."""
    del parts
    return None

  def _write_loss_summary(self, loss, regularization_losses,
                          mean_loss=None) -> None:
    """The training summaries 2.15 wrote: the loss (the v1 heads' mean
    loss, and the regularization loss) under the head's keys; the graph
    engine records them."""
    if not metrics_lib.in_graph_engine():
      return
    create_estimator_spec_summary(loss, regularization_losses,
                                  summary_key_fn=self._summary_key)
    if mean_loss is not None:
      with tf.compat.v1.name_scope(''):
        tf.compat.v1.summary.scalar(
            self._summary_key(keys_lib.MetricKeys.LOSS_MEAN), mean_loss)


class SingleHead(Head):
  """The heads over one logits tensor (BinaryClassHead, MultiClassHead,
  MultiLabelHead, RegressionHead): what they share.

  A subclass defines `logits_dimension`, `_processed_labels(logits,
  labels)` (the labels as the loss takes them, checked), `_default_loss`
  (the unreduced loss without a `loss_fn`), `predictions`, `metrics`,
  `update_metrics` and `_export_outputs(predictions)`; this class computes
  the loss as 2.15 did and builds the EstimatorSpec of each mode.
  """

  _name: Optional[str] = None
  _loss_reduction: str = SUM_OVER_BATCH_SIZE
  _weight_column = None
  _loss_fn = None

  @property
  def name(self) -> Optional[str]:
    """The head's name: metric and summary keys get '/name' appended."""
    return self._name

  @property
  def loss_reduction(self) -> str:
    """How the training loss is reduced over the batch."""
    return self._loss_reduction

  # The last dimension of the unreduced loss (`loss_fn`'s is checked) and
  # whether weights may have one per logit (RegressionHead's).
  _LOSS_DIMENSION_IS_LOGITS_DIMENSION = False
  _PER_LOGIT_WEIGHTS = False
  # Whose op names the graph gets: tf.estimator 2.15's heads' (False: the
  # loss under `<head>/losses`), or, for the tf.compat.v1.estimator canned
  # estimators, 2.15's v1 heads' (canned/head.py: the loss right under the
  # head's scope, and in TRAIN with a summed loss the mean loss
  # `<head>/truediv` and its `average_loss` summary). Programs fetch these
  # tensors by name (LoggingTensorHook); the numbers are the same.
  _V1_OP_NAMES = False

  def _init_common(self, *, weight_column, loss_reduction, loss_fn, name):
    """What every head's constructor stores, checked."""
    validate_loss_reduction(loss_reduction)
    if loss_fn:
      validate_loss_fn_args(loss_fn)
    self._weight_column = weight_column
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name

  def _processed_labels(self, logits, labels) -> tf.Tensor:
    """`labels` as the loss takes them (dense, ids, float), checked."""
    raise SubclassError(f'{type(self).__name__}._processed_labels')

  def _default_loss(self, labels, logits) -> tf.Tensor:
    """The unreduced loss when no `loss_fn` was given."""
    raise SubclassError(f'{type(self).__name__}._default_loss')

  def _unweighted_loss_and_weights(self, logits, labels, features):
    """The unreduced loss ([D0, ... DN, 1], or one per label dimension)
    and the example weights (1. without a weight column), as 2.15 computed
    them."""
    if self._loss_fn:
      unweighted = call_loss_fn(
          loss_fn=self._loss_fn, labels=labels, logits=logits,
          features=features,
          expected_loss_dim=(self.logits_dimension if
                             self._LOSS_DIMENSION_IS_LOGITS_DIMENSION else 1))
    else:
      unweighted = self._default_loss(labels, logits)
    weights = get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits,
        allow_per_logit_weights=self._PER_LOGIT_WEIGHTS)
    return unweighted, weights

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    """The regularized training loss: the weighted per-example losses
    reduced by `loss_reduction`, plus `regularization_losses`."""
    del mode
    return self._loss_parts(labels, logits, features,
                            regularization_losses).regularized

  def _loss_parts(self, labels, logits, features,
                  regularization_losses) -> 'LossParts':
    """The training loss and what it was computed from (see LossParts),
    under 2.15's names (see _V1_OP_NAMES)."""
    scope = (contextlib.nullcontext() if self._V1_OP_NAMES
             else tf.name_scope('losses'))
    with scope:
      logits = check_logits_final_dim(logits, self.logits_dimension)
      labels = self._processed_labels(logits, labels)
      unweighted, weights = self._unweighted_loss_and_weights(
          logits, labels, features)
      loss = reduce_loss(unweighted, weights, self._loss_reduction)
      regularized = loss
      if regularization_losses is not None:
        regularized = loss + tf.math.add_n(regularization_losses)
      return LossParts(regularized=regularized, loss=loss,
                       unweighted=unweighted, weights=weights)

  def _v1_mean_loss(self, parts: 'LossParts') -> Optional[tf.Tensor]:
    """2.15's v1 heads' mean loss in TRAIN, `<head>/truediv` (the summed
    loss over the sum of the example weights), or None where they had none
    (another head family, or a loss that is not a sum)."""
    if not self._V1_OP_NAMES or self._loss_reduction != SUM:
      return None
    weights = 1. if parts.weights is None else parts.weights
    weight_sum = tf.reduce_sum(weights * tf.ones_like(parts.unweighted))
    return parts.loss / weight_sum

  def _export_outputs(self, predictions) -> Dict[str, Any]:
    """The export signatures of a PREDICT spec."""
    raise SubclassError(f'{type(self).__name__}._export_outputs')

  def _check_prediction_keys(self, keys, valid):
    check_prediction_keys(keys, valid)

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None) -> EstimatorSpec:
    """The EstimatorSpec of `mode` for `logits`.

    Args:
      features: the input_fn's features (the weight column is read here).
      mode: a ModeKeys value.
      logits: [D0, ... DN, logits_dimension] (often [batch, dimension]).
      labels: required in TRAIN and EVAL.
      optimizer: in TRAIN, in a TF1-style model_fn (graph engine), a Keras 2
        optimizer (`tf_keras.optimizers.legacy.*` or a tf_keras name):
        train_op = optimizer.get_updates(loss, trainable_variables), as in
        2.15 (see `create_estimator_spec_train_op` about the global step);
        in a TF2 model_fn (eager engine), a Keras 3 optimizer, returned in
        the spec for the runtime to apply to every trainable variable.
      trainable_variables: a list of what `optimizer` trains (required in
        the graph engine; not used in the eager engine).
      train_op_fn: in TRAIN, `train_op_fn(loss)` -> train op, instead of an
        optimizer.
      update_ops: ops to run with each training step (batch norm).
      regularization_losses: scalars added to the training loss.

    In a graph, EVAL's `eval_metric_ops` are `(value, update_op)` pairs
    (2.15's EstimatorSpec made them so of the metric objects); in the eager
    engine, Keras metric objects.

    A subclass that overrides `_create_tpu_estimator_spec` and not this
    method (a library's head built on 2.15's, which routed every call
    through it) gets that method's TPUEstimatorSpec as an EstimatorSpec.
    """
    if (type(self)._create_tpu_estimator_spec is not
        SingleHead._create_tpu_estimator_spec):
      return Head.create_estimator_spec(
          self, features=features, mode=mode, logits=logits, labels=labels,
          optimizer=optimizer, trainable_variables=trainable_variables,
          train_op_fn=train_op_fn, update_ops=update_ops,
          regularization_losses=regularization_losses)
    with tf.name_scope(self._name or 'head'):
      predictions = self.predictions(logits)
      if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode=ModeKeys.PREDICT, predictions=predictions,
                             export_outputs=self._export_outputs(predictions))
      # The v1 heads' mean loss needs the parts; other heads call their
      # own `loss` (a subclass may define it), as 2.15's did.
      parts = (self._loss_parts(labels, logits, features,
                                regularization_losses)
               if self._V1_OP_NAMES else None)
      loss = parts.regularized if parts else self.loss(
          labels, logits, features=features, mode=mode,
          regularization_losses=regularization_losses)
      if mode == ModeKeys.EVAL:
        eval_metrics = self.update_metrics(
            self.metrics(regularization_losses=regularization_losses),
            features, logits, labels,
            regularization_losses=regularization_losses)
        return EstimatorSpec(
            mode=ModeKeys.EVAL, predictions=predictions, loss=loss,
            eval_metric_ops=metrics_lib.as_eval_metric_ops(eval_metrics))
      if mode != ModeKeys.TRAIN:
        raise UserInputError(f'create_estimator_spec: mode={mode!r} is not '
                             'one of train, eval, infer.')
      return self._train_spec(
          loss=loss, predictions=predictions, optimizer=optimizer,
          trainable_variables=trainable_variables, train_op_fn=train_op_fn,
          update_ops=update_ops, regularization_losses=regularization_losses,
          loss_parts=parts)
