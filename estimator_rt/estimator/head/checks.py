"""The checks tf.estimator 2.15's heads made of their inputs, with its
messages.

Each check works two ways, as 2.15's did:

  - run eagerly (`tf.executing_eagerly()`: a head used outside any graph or
    function), it looks at the values and static shapes at once and raises
    a ValueError (an estimator_rt `UserInputError`) whose message starts
    with 2.15's;
  - building a graph (the graph engine, a `tf.function` of the eager
    engine, a test's `tf.Graph`), it refuses what the static shapes already
    show the same way, and adds assert ops for the rest: a bad batch then
    fails at run time with an `InvalidArgumentError` carrying 2.15's message
    and data (`[expected_labels_shape: ] [2 1] [labels_shape: ] [2 2]`).

Programs and tests match these messages (assertRaisesRegexp), so their
first words are 2.15's; estimator_rt's explanation follows.
"""

import inspect
from typing import Optional, Tuple

import tensorflow as tf

from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError

# tf.estimator 2.15's messages (its head/base_head.py's `_*_ERR_MSG`,
# which libraries raise and match). estimator_rt's errors are these, with
# what to do added after them (the sparse one names TF2's function).
LABEL_NONE_ERR_MSG = (
    'You must provide a labels Tensor. Given: None. '
    'Suggested troubleshooting steps: Check that your data contains your label '
    'feature. Check that your input_fn properly parses and returns labels.')
SPARSE_LABEL_ERR_MSG = (
    'SparseTensor labels are not supported. Labels must be a Tensor of shape '
    '[D0, D1, ..., DN, {}], e.g. [batch_size, {}].Suggested Fix (1): Check the'
    ' label feature in your data. Each example must contain {} value(s). If '
    'not, your choice of label was probably incorrect. Suggested Fix (2): In '
    'your input_fn, use tf.sparse_tensor_to_dense() to turn labels into a '
    'Tensor.')
MISMATCHED_LABEL_DIM_ERR_MSG = (
    'Mismatched label shape. Expected labels dimension={}.  Received {}. '
    'Suggested Fix: If your classifier expects one-hot encoding label, check '
    'your n_classes argument to the estimator and/or the shape of your label. '
    'Otherwise, check the shape of your label.')
LABEL_SHAPE_ERR_MSG = (
    'labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your '
    'n_classes argument to the head and/or the shape of your label.')
VALIDATION_ERROR_MSG = '{} should be a list or a tuple. Given type: {}.'

LABEL_NONE_MESSAGE = LABEL_NONE_ERR_MSG + (
    ' (In TRAIN and EVAL the input_fn must return (features, labels).)')
_SPARSE_LABELS_MESSAGE = SPARSE_LABEL_ERR_MSG.replace(
    'tf.sparse_tensor_to_dense()', 'tf.sparse.to_dense()')
_LABEL_DIMENSION_MESSAGE = MISMATCHED_LABEL_DIM_ERR_MSG
_LABEL_SHAPE_MESSAGE = LABEL_SHAPE_ERR_MSG

_LOGITS_SHAPE_MESSAGE = 'logits shape must be [D0, D1, ... DN, logits_dimension]'


def _eager() -> bool:
  return tf.executing_eagerly()


def _shape(tensor) -> Tuple:
  """The static shape of `tensor` as a tuple (None for unknown dims), or
  None for an unknown rank."""
  if tensor.shape.rank is None:
    return None
  return tuple(tensor.shape.as_list())


def check_dense_labels_match_logits_and_reshape(labels, logits,
                                                expected_labels_dimension):
  """`labels` as a dense tensor of shape [D0, ... DN, expected dimension]
  for `logits` of shape [D0, ... DN, logits_dimension]; labels of shape
  [D0, ... DN] get their last dimension added.

  Raises:
    UserInputError: labels are None or sparse, or their static shape does
      not fit (2.15's messages).
  """
  if labels is None:
    raise UserInputError(LABEL_NONE_MESSAGE)
  with tf.compat.v1.name_scope('labels', values=(labels, logits)) as scope:
    labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
    if isinstance(labels, tf.SparseTensor):
      raise UserInputError(
          _SPARSE_LABELS_MESSAGE.format(*[expected_labels_dimension] * 3))
    labels_rank, logits_rank = labels.shape.rank, logits.shape.rank
    if (labels_rank is not None and logits_rank is not None and
        labels_rank == logits_rank - 1):
      labels = tf.expand_dims(labels, -1)
    if _eager():
      return _check_labels_now(labels, logits, expected_labels_dimension)
    rank_check = tf.compat.v1.debugging.assert_rank_at_least(
        labels, 2,
        message=_LABEL_SHAPE_MESSAGE.format(expected_labels_dimension))
    with tf.control_dependencies([rank_check]):
      last = labels.shape[-1] if labels.shape.rank else None
      if last is not None and last != expected_labels_dimension:
        raise UserInputError(
            _LABEL_DIMENSION_MESSAGE.format(expected_labels_dimension, last))
      logits_shape = tf.compat.v1.shape(logits)
      expected_shape = tf.concat(
          [logits_shape[:-1], [expected_labels_dimension]], axis=0)
      labels_shape = tf.compat.v1.shape(labels)
      shape_check = tf.compat.v1.debugging.assert_equal(
          expected_shape, labels_shape,
          message=_LABEL_SHAPE_MESSAGE.format(expected_labels_dimension),
          data=['expected_labels_shape: ', expected_shape,
                'labels_shape: ', labels_shape])
      with tf.control_dependencies([shape_check]):
        return tf.identity(labels, name=scope)


def _check_labels_now(labels, logits, expected_labels_dimension):
  labels_shape = _shape(labels)
  if len(labels_shape) < 2:
    raise UserInputError(
        f'labels must have rank at least 2.  Received rank '
        f'{len(labels_shape)}, shape {labels_shape}')
  if labels_shape[-1] != expected_labels_dimension:
    raise UserInputError(_LABEL_DIMENSION_MESSAGE.format(
        expected_labels_dimension, labels_shape[-1]))
  expected_shape = _shape(logits)[:-1] + (expected_labels_dimension,)
  if expected_shape != labels_shape:
    raise UserInputError(
        f'{_LABEL_SHAPE_MESSAGE.format(expected_labels_dimension)}, '
        f'expected_labels_shape: {expected_shape}. labels_shape: '
        f'{labels_shape}.')
  return labels


def check_logits_final_dim(logits, expected_logits_dimension):
  """`logits` as float32, checked to be [D0, ... DN, expected dimension]
  (rank 2 at least).

  Raises:
    UserInputError: the static shape does not fit.
  """
  with tf.compat.v1.name_scope('logits', values=(logits,)) as scope:
    logits = tf.cast(logits, tf.float32)
    static = _shape(logits)
    if _eager():
      if len(static) < 2:
        raise UserInputError(
            f'logits must have rank at least 2.  Received rank {len(static)}, '
            f'shape {static}')
      if (isinstance(expected_logits_dimension, int) and
          static[-1] != expected_logits_dimension):
        raise UserInputError(
            f'{_LOGITS_SHAPE_MESSAGE}, got {static}. The head\'s '
            f'logits_dimension is {expected_logits_dimension}.')
      return logits
    shape = tf.compat.v1.shape(logits)
    rank_check = tf.compat.v1.debugging.assert_rank_at_least(
        logits, 2, data=[shape], message=_LOGITS_SHAPE_MESSAGE)
    with tf.control_dependencies([rank_check]):
      if static is not None and static[-1] is not None:
        if (isinstance(expected_logits_dimension, int) and
            static[-1] != expected_logits_dimension):
          raise UserInputError(
              f'{_LOGITS_SHAPE_MESSAGE}, got {logits.shape}. The head\'s '
              f'logits_dimension is {expected_logits_dimension}.')
        return logits
      dimension_check = tf.compat.v1.debugging.assert_equal(
          expected_logits_dimension, shape[-1], data=[shape],
          message=_LOGITS_SHAPE_MESSAGE)
      with tf.control_dependencies([dimension_check]):
        return tf.identity(logits, name=scope)


def weights_from_features(features, weight_column):
  """The weight column's values, as float32, from `features` (what 2.15's
  numeric column gave: its normalizer_fn applied), or 1. without one.

  Raises:
    UserTypeError: `weight_column` is neither a string nor a numeric
      column.
    UserInputError: the weights are missing, sparse or not numbers.
  """
  if weight_column is None:
    return 1.
  if isinstance(weight_column, str):
    key, normalizer = weight_column, None
  elif is_numeric_column(weight_column):
    key, normalizer = weight_column.key, weight_column.normalizer_fn
  else:
    raise UserTypeError(
        'Weight column must be either a string or NumericColumn. Given type: '
        f'{type(weight_column)}.')
  if not isinstance(features, dict) or key not in features:
    present = sorted(features) if isinstance(features, dict) else features
    raise UserInputError(
        f'Feature {key} is not in features dictionary: the weight_column '
        f'{key!r} must be one of the features, got {present!r}.')
  weights = features[key]
  if isinstance(weights, tf.SparseTensor):
    raise UserInputError(
        f'The corresponding Tensor of numerical column must be a Tensor. '
        f'SparseTensor is not supported: the weight column {key!r} is '
        'sparse.')
  weights = tf.convert_to_tensor(weights)
  if normalizer is not None:
    weights = normalizer(weights)
  if not (weights.dtype.is_floating or weights.dtype.is_integer):
    raise UserInputError(
        'Weight column should be castable to float. Given dtype: '
        f'{weights.dtype} (weight_column {key!r}).')
  return tf.cast(weights, tf.float32, name='weights')


def is_numeric_column(column) -> bool:
  """Whether `column` is a numeric feature column (tf.feature_column's or
  the v1 `_NumericColumn`)."""
  # Both feature column families: tf.feature_column.numeric_column's and
  # the v1 `_NumericColumn` (duck-typed: TensorFlow's classes are private).
  return (type(column).__name__ in ('NumericColumn', '_NumericColumn') and
          hasattr(column, 'key'))


def get_weights_and_check_match_logits(features, weight_column, logits,
                                       allow_per_logit_weights=False):
  """The example weights, of shape [D0, ... DN, 1] (or [D0, ... DN,
  logits_dimension] with `allow_per_logit_weights`) for `logits` of shape
  [D0, ... DN, logits_dimension]; [D0, ... DN] weights get their last
  dimension added. 1. without a weight column.

  Raises:
    UserInputError: the static shapes do not fit (2.15's message).
  """
  if allow_per_logit_weights:
    message = ('weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] '
               'or [D0, D1, ... DN, logits_dimension]')
  else:
    message = 'weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]'
  values = tuple(features.values()) if isinstance(features, dict) else ()
  with tf.compat.v1.name_scope('weights', values=values + (logits,)) as scope:
    weights = weights_from_features(features, weight_column)
    if weight_column is None:
      return weights
    if _eager():
      return _check_weights_now(weights, logits, allow_per_logit_weights,
                                message)
    weights_shape = tf.compat.v1.shape(weights, name='weights_shape')
    logits_shape = tf.compat.v1.shape(logits, name='logits_shape')
    data = ['logits_shape: ', logits_shape, 'weights_shape: ', weights_shape]
    if (weights.shape.rank is not None and logits.shape.rank is not None and
        weights.shape.rank == logits.shape.rank - 1):
      check = tf.compat.v1.debugging.assert_equal(
          logits_shape[:-1], weights_shape, message=message, data=data)
      with tf.control_dependencies([check]):
        return tf.expand_dims(weights, -1, name=scope)
    one_per_example = tf.concat([logits_shape[:-1], [1]], axis=0)
    if allow_per_logit_weights:
      fits = tf.math.reduce_any([
          _same_shape(logits_shape, weights_shape),
          _same_shape(one_per_example, weights_shape)])
      check = tf.debugging.Assert(fits, data=[message] + data)
    else:
      check = tf.compat.v1.debugging.assert_equal(
          one_per_example, weights_shape, message=message, data=data)
    with tf.control_dependencies([check]):
      return tf.identity(weights, name=scope)


def _same_shape(a, b):
  # Shapes of different ranks are different; tf.equal would not broadcast.
  return tf.cond(
      tf.equal(tf.size(a), tf.size(b)),
      lambda: tf.reduce_all(tf.equal(a, b)),
      lambda: tf.constant(False))


def _check_weights_now(weights, logits, allow_per_logit_weights, message):
  weights_shape, logits_shape = _shape(weights), _shape(logits)
  error = UserInputError(f'{message}, logits_shape: {logits_shape}. '
                         f'weights_shape: {weights_shape}.')
  if len(weights_shape) == len(logits_shape) - 1:
    if weights_shape != logits_shape[:-1]:
      raise error
    return tf.expand_dims(weights, -1)
  allowed = [logits_shape[:-1] + (1,)]
  if allow_per_logit_weights:
    allowed.append(logits_shape)
  if weights_shape not in allowed:
    raise error
  return weights


def fn_args(fn) -> Tuple[str, ...]:
  """The names of the arguments `fn` takes by name (a bound method's
  `self` excluded), as 2.15's messages list them."""
  try:
    parameters = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError):  # A builtin: it takes what it is given.
    return ('labels', 'logits')
  return tuple(p.name for p in parameters
               if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def validate_loss_fn_args(loss_fn) -> None:
  """`loss_fn` must take labels and logits, and may take features and
  loss_reduction.

  Raises:
    UserInputError: it does not (2.15's messages).
  """
  arguments = fn_args(loss_fn)
  for required in ('labels', 'logits'):
    if required not in arguments:
      raise UserInputError(
          f'loss_fn must contain argument: {required}. Given arguments: '
          f'{arguments}')
  unexpected = [argument for argument in arguments if argument not in
                ('labels', 'logits', 'features', 'loss_reduction')]
  if unexpected:
    raise UserInputError(
        f'loss_fn has unexpected args: {unexpected} (it may take labels, '
        'logits, features and loss_reduction).')


def call_loss_fn(loss_fn, labels, logits, features, expected_loss_dim=1):
  """`loss_fn(labels=, logits=[, features=])`, checked to be of shape
  [D0, ... DN, expected_loss_dim] for logits [D0, ... DN, dimension].

  Raises:
    UserInputError: eagerly, the loss has another shape (building a graph,
      an assert fails at run time instead).
  """
  kwargs = {'features': features} if 'features' in fn_args(loss_fn) else {}
  values = [labels, logits]
  if isinstance(features, dict):
    values += list(features.values())
  with tf.compat.v1.name_scope('call_loss_fn', values=values):
    loss = loss_fn(labels=labels, logits=logits, **kwargs)
    message = ('loss_fn must return Tensor of shape '
               f'[D0, D1, ... DN, {expected_loss_dim}]. ')
    if _eager():
      loss = tf.convert_to_tensor(loss)
      expected = _shape(logits)[:-1] + (expected_loss_dim,)
      if _shape(loss) != expected:
        raise UserInputError(
            f'{message}logits_shape: {_shape(logits)} loss_shape: '
            f'{_shape(loss)}')
      return loss
    logits_shape = tf.compat.v1.shape(logits, name='logits_shape')
    expected = tf.concat([logits_shape[:-1], [expected_loss_dim]], axis=0,
                         name='expected_loss_shape')
    loss_shape = tf.compat.v1.shape(loss, name='loss_shape')
    check = tf.debugging.Assert(
        _same_shape(loss_shape, expected),
        data=[message, 'logits_shape: ', logits_shape, 'loss_shape: ',
              loss_shape],
        name='check_loss_shape')
    with tf.control_dependencies([check]):
      return tf.identity(loss)


def check_label_range(labels, n_classes, message: Optional[str] = None, *,
                      v1_wording: bool = False):
  """`labels`, checked to lie in [0, n_classes - 1]; `v1_wording`: in a
  graph, 2.15's v1 heads' messages ('Labels must <= n_classes - 1', 'Labels
  must >= 0'), which programs and tests match.

  Raises:
    UserInputError: eagerly, a label is out of range (building a graph, an
      assert fails at run time instead, or at once if the labels are
      constants).
  """
  with tf.compat.v1.name_scope('check_label_range', values=(labels,)):
    labels = tf.convert_to_tensor(labels)
    if _eager():
      if not tf.reduce_all(tf.math.less_equal(labels, n_classes - 1)):
        raise UserInputError(message or f'Labels must be <= {n_classes} - 1')
      if not tf.reduce_all(tf.math.greater_equal(labels, 0)):
        raise UserInputError(message or 'Labels must be >= 0')
      return labels
    at_most = tf.compat.v1.debugging.assert_less_equal(
        labels, tf.convert_to_tensor(n_classes - 1, dtype=labels.dtype),
        message=message or ('Labels must <= n_classes - 1' if v1_wording
                            else 'Labels must be <= n_classes - 1'))
    at_least = tf.compat.v1.debugging.assert_non_negative(
        labels, message=message or ('Labels must >= 0' if v1_wording
                                    else 'Labels must be >= 0'))
    with tf.control_dependencies((at_most, at_least)):
      return tf.identity(labels)


def check_prediction_keys(pred_keys, valid_keys) -> None:
  """Raises UserInputError for a key of `pred_keys` not in `valid_keys`."""
  for key in pred_keys:
    if key not in valid_keys:
      raise UserInputError(
          f'Prediction key must be in PredictionKeys, given: {key}.'
          f'Valid prediction keys include {valid_keys}.')
