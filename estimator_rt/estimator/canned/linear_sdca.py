"""tf.estimator.experimental.LinearSDCA: the linear estimators trained by
stochastic dual coordinate ascent, as tf.estimator 2.15 trained them.

With `optimizer=LinearSDCA(example_id_column=...)`, a LinearClassifier
(two classes: logistic loss) or LinearRegressor (one label dimension:
squared loss) builds the same linear model (linear_logits.py: its variables,
logits and summaries) and trains it with an SDCA step over the batch
(sdca_model.py) instead of a gradient step: each categorical column is
one sparse feature (its ids pruned of negatives and deduplicated per
example, their weights summed), each dense column (rank 1) and the bias
(a column of ones) a dense one; the labels are the targets as floats, the
example weights the head's weight column (or ones), the examples keyed by
the feature `example_id_column`. A chief hook copies the solver's
weights into the model's (with the L1 shrinkage) after every step.
"""

import tensorflow as tf
from tensorflow.python.feature_column import feature_column_v2 as fc_v2  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.estimator.canned import linear_logits
from estimator_rt.estimator.canned import sdca_model
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys


class LinearSDCA:
  """The SDCA optimizer of the linear estimators; 2.15's signature.

  Args:
    example_id_column: the feature holding each example's id (a string).
    num_loss_partitions: the number of workers.
    num_table_shards: the shards of the example-state table (None: 1).
    symmetric_l1_regularization: >= 0.
    symmetric_l2_regularization: > 0 (usually > 1).
    adaptive: sample examples adaptively.
  """

  def __init__(self, example_id_column, num_loss_partitions=1,
               num_table_shards=None, symmetric_l1_regularization=0.0,
               symmetric_l2_regularization=1.0, adaptive=False):
    self._example_id_column = example_id_column
    self._num_loss_partitions = num_loss_partitions
    self._num_table_shards = num_table_shards
    self._symmetric_l1_regularization = symmetric_l1_regularization
    self._symmetric_l2_regularization = symmetric_l2_regularization
    self._adaptive = adaptive

  def _prune_and_unique_sparse_ids(self, id_weight_pair):
    """The sparse feature of a categorical column's ids: negative ids
    (out of vocabulary) dropped, an id repeated in one example kept once
    with the sum of its weights."""
    ids = id_weight_pair.id_tensor
    if id_weight_pair.weight_tensor is not None:
      weights = id_weight_pair.weight_tensor.values
    else:
      weights = tf.ones([tf.shape(ids.indices)[0]], tf.float32)
    examples = tf.reshape(ids.indices[:, 0], [-1])
    flat_ids = tf.cast(tf.reshape(ids.values, [-1]), tf.int64)
    valid = tf.math.greater_equal(flat_ids, 0)
    flat_ids = tf.boolean_mask(flat_ids, valid)
    examples = tf.boolean_mask(examples, valid)
    weights = tf.boolean_mask(weights, valid)
    # One number per (example, id) pair, so that unique() merges repeats
    # within an example only.
    span = tf.math.reduce_max(flat_ids) + 1
    unique, index = tf.unique(span * examples + flat_ids)
    count = tf.shape(unique)[0]
    unique_examples = tf.math.unsorted_segment_min(examples, index, count)
    return sdca_model.SparseFeatureColumn(
        unique_examples, unique - span * unique_examples,
        tf.reshape(tf.math.unsorted_segment_sum(weights, index, count),
                   [-1]))

  def get_train_step(self, state_manager, weight_column_name, loss_type,
                     feature_columns, features, targets, bias_var,
                     global_step):
    """(the SDCA model, its training op) for this batch.

    Raises:
      ValueError: a dense column of rank above 1, or a column neither
        dense nor categorical.
    """
    batch_size = tf.shape(targets)[0]
    cache = fc_v2.FeatureTransformationCache(features)
    dense, dense_weights, sparse, sparse_weights = [], [], [], []
    for column in sorted(feature_columns, key=lambda c: c.name):
      if isinstance(column, fc_v2.CategoricalColumn):
        sparse.append(self._prune_and_unique_sparse_ids(
            column.get_sparse_tensors(cache, state_manager)))
        sparse_weights.append(state_manager.get_variable(column, 'weights'))
      elif isinstance(column, fc_v2.DenseColumn):
        if column.variable_shape.ndims != 1:
          raise UserInputError(
              f'Column {type(column).__name__} has rank '
              f'{column.variable_shape.ndims}, larger than 1. ({column.name}:'
              ' LinearSDCA takes dense columns of rank 1.)')
        dense.append(column.get_dense_tensor(cache, state_manager))
        dense_weights.append(state_manager.get_variable(column, 'weights'))
      else:
        raise UserInputError(
            f'LinearSDCA does not support column type '
            f'{type(column).__name__}. ({column.name})')
    # The bias: a dense feature of ones.
    dense.append(tf.ones([batch_size, 1]))
    dense_weights.append(bias_var)
    example_weights = (tf.reshape(features[weight_column_name], [-1])
                       if weight_column_name else tf.ones([batch_size]))
    model = sdca_model.SDCAModel(
        examples=dict(
            sparse_features=sparse, dense_features=dense,
            example_labels=tf.cast(tf.reshape(targets, [-1]), tf.float32),
            example_weights=example_weights,
            example_ids=features[self._example_id_column]),
        variables=dict(sparse_features_weights=sparse_weights,
                       dense_features_weights=dense_weights),
        options=dict(
            symmetric_l1_regularization=self._symmetric_l1_regularization,
            symmetric_l2_regularization=self._symmetric_l2_regularization,
            adaptive=self._adaptive,
            num_loss_partitions=self._num_loss_partitions,
            num_table_shards=self._num_table_shards, loss_type=loss_type))
    return model, model.minimize(global_step=global_step)


class SDCAUpdateWeightsHook(tf.compat.v1.train.SessionRunHook):
  """Runs the SDCA model's update_weights with every training step."""

  def __init__(self, sdca_model, train_op):
    self._model = sdca_model
    self._train_op = train_op
    self._update_op = None

  def begin(self):
    self._update_op = self._model.update_weights(self._train_op)

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._update_op)


def loss_type(head) -> str:
  """The SDCA loss of `head`: logistic for a binary classifier's, squared
  for a one-dimensional regression's.

  Raises:
    ValueError: any other head.
  """
  # pylint: disable=g-import-not-at-top
  from estimator_rt.estimator.head import binary_class_head
  from estimator_rt.estimator.head import regression_head
  # pylint: enable=g-import-not-at-top
  if isinstance(head, binary_class_head.BinaryClassHead):
    return 'logistic_loss'
  if (isinstance(head, regression_head.RegressionHead) and
      head.logits_dimension == 1):
    return 'squared_loss'
  raise UserInputError(
      f'Unsupported head type: {head} (LinearSDCA trains a binary '
      'classifier or a one-dimensional regressor).')


def check_arguments(*, feature_columns, sparse_combiner,
                    n_classes: int = 2, label_dimension: int = 1) -> None:
  """What LinearSDCA needs of a linear estimator's arguments, checked when
  it is made, with 2.15's messages.

  Raises:
    ValueError: sparse_combiner is not 'sum', a v1 feature column, more
      than two classes, or a label of more than one dimension.
  """
  from tensorflow.python.feature_column import feature_column_lib  # pylint: disable=g-import-not-at-top
  if sparse_combiner != 'sum':
    raise UserInputError(
        'sparse_combiner must be "sum" when optimizer is a LinearSDCA '
        f'object (got sparse_combiner={sparse_combiner!r}).')
  if not feature_column_lib.is_feature_column_v2(feature_columns):
    raise UserInputError('V2 feature columns required when optimizer is a '
                         'LinearSDCA object.')
  if n_classes > 2:
    raise UserInputError(
        'LinearSDCA cannot be used in a multi-class setting '
        f'(n_classes={n_classes}).')
  if label_dimension > 1:
    raise UserInputError(
        'LinearSDCA can only be used with one-dimensional label '
        f'(label_dimension={label_dimension}).')


def check_estimator(*, head, feature_columns, sparse_combiner) -> None:
  """check_arguments for a linear estimator of `head`, and the head is one
  SDCA trains (loss_type).

  Raises:
    ValueError: see check_arguments and loss_type.
  """
  from estimator_rt.estimator.head import multi_class_head  # pylint: disable=g-import-not-at-top
  dimension = getattr(head, 'logits_dimension', 1)
  multi_class = isinstance(head, multi_class_head.MultiClassHead)
  check_arguments(feature_columns=feature_columns,
                  sparse_combiner=sparse_combiner,
                  n_classes=dimension if multi_class else 2,
                  label_dimension=1 if multi_class else dimension)
  loss_type(head)


def sdca_model_fn(*, features, labels, mode, head, feature_columns,
                  optimizer, scope: str = 'linear/linear_model',
                  ops_scope: str = linear_logits.OPS_SCOPE):
  """The linear estimators' model_fn body for a LinearSDCA optimizer (see
  the module docstring); the linear model's variables in variable scope
  `scope` (the v1 classes: 'linear_model' in their partitioned 'linear'),
  its ops in `ops_scope` (see linear_logits.build_linear)."""
  loss = loss_type(head)
  state = linear_logits.new_state()
  logits, weights, bias = linear_logits.build_linear(
      units=1, feature_columns=feature_columns, sparse_combiner='sum',
      features=features, scope=scope, ops_scope=ops_scope, state=state)
  linear_logits.add_linear_summaries(weights, bias, 1)
  if mode != ModeKeys.TRAIN:
    return head.create_estimator_spec(features=features, mode=mode,
                                      labels=labels, logits=logits)
  model, train_op = optimizer.get_train_step(
      state, getattr(head, '_weight_column', None), loss, feature_columns,
      features, labels, bias, tf.compat.v1.train.get_global_step())
  spec = head.create_estimator_spec(
      features=features, mode=mode, labels=labels, logits=logits,
      train_op_fn=lambda unused_loss: train_op)
  return spec._replace(training_chief_hooks=(
      tuple(spec.training_chief_hooks) +
      (SDCAUpdateWeightsHook(model, train_op),)))
