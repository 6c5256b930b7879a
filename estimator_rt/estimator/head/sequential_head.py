"""SequentialHeadWrapper: a head applied at every step of a sequence
(tf.estimator 2.15's, used by its RNN estimators).

Logits and labels are [batch, steps, ...]; a boolean or 0/1 mask feature
[batch, steps] marks the real steps. In TRAIN and EVAL the steps the mask
keeps are flattened into one batch (as are the features named in
`feature_columns`, e.g. a weight column) and the wrapped static head does
the rest; in PREDICT the static head's predictions keep their sequence
shape and the mask is predicted too.
"""

import abc
from collections.abc import Iterable

import tensorflow as tf

from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError
from estimator_rt.estimator.head import base_head
from estimator_rt.estimator.head import multi_head
from estimator_rt.core.mode_keys import ModeKeys


class _SequentialHead(base_head.Head):
  """A head whose inputs are sequences; it names the mask feature."""

  @property
  @abc.abstractmethod
  def input_sequence_mask_key(self):
    """The key of the sequence mask among the features."""


# 2.15 kept this base class private (`_SequentialHead`); the public name is
# for code that subclasses it or checks isinstance against it here.
SequentialHead = _SequentialHead

_MASK_MISMATCH = 'Tensor shape is incompatible with provided mask.'


def _flatten_tensor(tensor, sequence_mask, expected_length):
  """[batch, steps, D...] -> [kept steps, D...] (D = 1 for rank 2): the
  steps `sequence_mask` keeps, or a SparseTensor's values (its indices
  sorted).

  Raises:
    UserInputError: `tensor` has fewer than 2 dimensions, is neither a
      Tensor nor a SparseTensor, or (eagerly) does not fit the mask.
  """
  rank = tensor.shape.rank
  if rank is None or rank < 2:
    raise UserInputError(
        'Input tensor expected to have at least 2 dimensions, got '
        f'{rank} instead: [batch, steps, ...].')
  if isinstance(tensor, tf.SparseTensor):
    flat = tf.sparse.reorder(tensor).values
    if rank > 2:
      flat = tf.reshape(flat, tf.concat([[-1], tensor.shape[2:]], axis=0))
  elif isinstance(tensor, tf.Tensor):
    flat = tf.boolean_mask(tensor, sequence_mask)
  else:
    raise UserInputError(
        '`tensor` expected to be a `Tensor` or  `SparseTensor` got '
        f'`{tensor}` instead.')
  if rank == 2:
    flat = tf.expand_dims(flat, -1)
    expected_shape = tf.concat([[expected_length], [1]], axis=0)
  else:
    expected_shape = tf.concat([[expected_length], tensor.shape[2:]], axis=0)
  if tf.executing_eagerly():
    if tuple(flat.shape.as_list()) != tuple(expected_shape.numpy()):
      raise UserInputError(_MASK_MISMATCH)
    return flat
  check = tf.compat.v1.debugging.assert_equal(
      tf.compat.v1.shape(flat), expected_shape, message=_MASK_MISMATCH)
  with tf.control_dependencies([check]):
    return tf.identity(flat)


class SequentialHeadWrapper(_SequentialHead):
  """Applies `static_head` to each real step of a sequence; 2.15's
  signature.

  Args:
    static_head: the head for one step (not a MultiHead).
    sequence_length_mask: the feature key of the [batch, steps] mask.
    feature_columns: a feature key or list of them to flatten with the
      logits (what the static head reads from features, e.g. its
      weight_column).

  Raises:
    TypeError: `sequence_length_mask` or a feature column is not a string.
    ValueError: `static_head` is a MultiHead.
  """

  def __init__(self, static_head, sequence_length_mask='sequence_length_mask',
               feature_columns=None):
    if not isinstance(sequence_length_mask, str):
      raise UserTypeError(
          '`sequence_mask` column must be a string. Given type: '
          f'{type(sequence_length_mask)}.')
    feature_columns = feature_columns or []
    if not isinstance(feature_columns, Iterable):
      raise UserTypeError(
          '`feature_columns` must be either a string or an iterable of '
          f'strings got {type(feature_columns)} instead.')
    if isinstance(feature_columns, str):
      feature_columns = [feature_columns]
    feature_columns = list(feature_columns)
    for column in feature_columns:
      if not isinstance(column, str):
        raise UserTypeError(
            f'Column must a string. Given type: {type(column)}.')
    if isinstance(static_head, multi_head.MultiHead):
      raise UserInputError(
          '`MultiHead` is not supported with `SequentialHeadWrapper`.')
    self._static_head = static_head
    self._sequence_length_mask = sequence_length_mask
    self._feature_columns = feature_columns

  @property
  def input_sequence_mask_key(self):
    return self._sequence_length_mask

  @property
  def static_head(self):
    """The wrapped head."""
    return self._static_head

  @property
  def logits_dimension(self):
    return self._static_head.logits_dimension

  @property
  def loss_reduction(self):
    return self._static_head.loss_reduction

  @property
  def name(self):
    """'<static head name>_sequential', or None when it has no name."""
    if self._static_head.name:
      return f'{self._static_head.name}_sequential'
    return None

  def _flatten(self, labels, logits, features):
    """(labels, logits, the feature_columns' features), each reduced to
    the steps the mask keeps."""
    key = self.input_sequence_mask_key
    if not isinstance(features, dict) or key not in features:
      found = list(features) if isinstance(features, dict) else features
      raise UserInputError(
          f'The provided sequence_length_mask key `{key}` should be included '
          f'in the features dictionary, but was not found. Found keys: '
          f'{found}.')
    mask = tf.convert_to_tensor(features[key])
    if mask.shape.rank != 2:
      raise UserInputError(
          f'Mask is expected to have two dimensions, got {mask.shape.rank} '
          'instead: [batch, steps].')
    with tf.name_scope('flatten'):
      length = tf.math.reduce_sum(tf.cast(mask, tf.int32))
      # A 0/1 mask too (tf.boolean_mask takes booleans only).
      mask = tf.cast(mask, tf.bool)
      flat_logits = _flatten_tensor(logits, mask, length)
      flat_labels = _flatten_tensor(labels, mask, length)
      flat_features = {}
      for column in self._feature_columns:
        if column not in features:
          raise UserInputError(
              f'`{column}` column expected in features dictionary.')
        flat_features[column] = _flatten_tensor(features[column], mask,
                                                length)
      return flat_labels, flat_logits, flat_features

  def loss(self, logits, labels, features=None, mode=None,
           regularization_losses=None):
    # (logits, labels) first: 2.15's order for this head.
    flat_labels, flat_logits, flat_features = self._flatten(
        labels, logits, features)
    return self._static_head.loss(
        logits=flat_logits, labels=flat_labels, features=flat_features,
        mode=mode, regularization_losses=regularization_losses)

  def predictions(self, logits, keys=None):
    return self._static_head.predictions(logits, keys=keys)

  def metrics(self, regularization_losses=None):
    return self._static_head.metrics(regularization_losses)

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    flat_labels, flat_logits, flat_features = self._flatten(
        labels, logits, features)
    return self._static_head.update_metrics(
        eval_metrics=eval_metrics, features=flat_features,
        logits=flat_logits, labels=flat_labels,
        regularization_losses=regularization_losses)

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None):
    """The static head's spec on the flattened steps (TRAIN, EVAL), or on
    the sequences with the mask predicted too (PREDICT)."""
    if mode == ModeKeys.PREDICT:
      spec = self._static_head.create_estimator_spec(
          features=features, mode=mode, logits=logits)
      predictions = dict(spec.predictions)
      predictions[self.input_sequence_mask_key] = features[
          self.input_sequence_mask_key]
      return spec._replace(predictions=predictions)  # pylint: disable=protected-access
    flat_labels, flat_logits, flat_features = self._flatten(
        labels, logits, features)
    return self._static_head.create_estimator_spec(
        features=flat_features, mode=mode, logits=flat_logits,
        labels=flat_labels, optimizer=optimizer,
        trainable_variables=trainable_variables, train_op_fn=train_op_fn,
        update_ops=update_ops, regularization_losses=regularization_losses)
