"""BaselineClassifier / Regressor / Estimator: a model that ignores the
features and learns one bias per logit (the label distribution, or the
mean label), as tf.estimator 2.15 built it: one variable `baseline/bias`
of shape [logits_dimension], trained by Ftrl at 0.3 by default (any named
optimizer gets 0.3).
"""

import tensorflow as tf

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.head import head_utils
from estimator_rt.estimator.canned import optimizers
from estimator_rt.core.errors import UserInputError

LEARNING_RATE = 0.3


def weight_key(weight_column):
  if weight_column is None or isinstance(weight_column, str):
    return weight_column
  key = getattr(weight_column, 'key', None)
  if not isinstance(key, str):
    raise UserInputError(
        f'weight_column={weight_column!r} must be a string or a '
        'tf.feature_column.numeric_column.')
  return key


def batch_size(features, weight_key):
  """The batch size every feature (the weight aside, which serving does
  not feed) agrees on, with the checks that they do."""
  if isinstance(features, tf.Tensor):
    return tf.compat.v1.shape(features)[0], []
  if not features:
    raise UserInputError(
        'Baseline estimator: the input_fn gave no features; the batch size '
        'is read from them, so give at least one.')
  size, checks = None, []
  for key, feature in features.items():
    if key == weight_key:
      continue
    first = tf.compat.v1.shape(feature)[0]
    if size is None:
      size = first
    else:
      checks.append(tf.compat.v1.debugging.assert_equal(size, first))
  return size, checks


def build_baseline(*, features, logits_dimension: int, weight_column=None):
  """The baseline's bias variable `baseline/bias` [logits_dimension] and
  its logits: the bias repeated for each example of `features` (whose
  batch sizes, the weight's aside, are checked to agree)."""
  size, checks = batch_size(features, weight_key(weight_column))
  with tf.name_scope('baseline'):
    # Made outside the checks: an initializer that depended on them would
    # read the input before it is ready (tf.estimator 2.15's baselines failed
    # to start on two or more features that way).
    bias = tf.Variable(lambda: tf.zeros([logits_dimension]), name='bias')
    with tf.control_dependencies(checks):
      logits = tf.math.multiply(bias, tf.ones([size, logits_dimension]))
  return bias, logits


def baseline_model_fn(*, features, labels, mode, head, optimizer,
                      weight_column):
  """The TF2 baseline's model_fn body (the v1 classes': v1_model_fns)."""
  bias, logits = build_baseline(
      features=features, logits_dimension=head.logits_dimension,
      weight_column=weight_column)
  part = optimizers.Part(optimizer=optimizer, learning_rate=LEARNING_RATE,
                         variables=[bias])
  return base.estimator_spec(
      head=head, features=features, mode=mode, labels=labels, logits=logits,
      parts=[part])


class BaselineEstimator(base.CannedEstimator):
  """A baseline with any head; tf.estimator 2.15's signature."""

  def __init__(self, head, model_dir=None, optimizer='Ftrl', config=None):
    # The head's (a user's head may have none).
    weight_column = getattr(head, '_weight_column', None)
    def _model_fn(features, labels, mode):
      return baseline_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          optimizer=optimizer, weight_column=weight_column)

    super().__init__(_model_fn, model_dir=model_dir, config=config)


class BaselineClassifier(BaselineEstimator):
  """Predicts the label distribution seen in training; 2.15's signature."""

  def __init__(self, model_dir=None, n_classes=2, weight_column=None,
               label_vocabulary=None, optimizer='Ftrl', config=None,
               loss_reduction=base.SUM_OVER_BATCH_SIZE):
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(head, model_dir=model_dir, optimizer=optimizer,
                     config=config)


class BaselineRegressor(BaselineEstimator):
  """Predicts the mean label seen in training; 2.15's signature."""

  def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
               optimizer='Ftrl', config=None,
               loss_reduction=base.SUM_OVER_BATCH_SIZE):
    head = base.regression_head(label_dimension, weight_column=weight_column,
                                loss_reduction=loss_reduction)
    super().__init__(head, model_dir=model_dir, optimizer=optimizer,
                     config=config)
