"""LinearClassifier, LinearRegressor, LinearEstimator: one weight per
feature value (categorical columns as one-hot), as tf.estimator 2.15 built
them.

The linear model itself (its variables and logits) is linear_logits.py's.

With `optimizer=LinearSDCA(...)` the same model trains by stochastic dual
coordinate ascent instead (linear_sdca.py).
"""

import math
from typing import Sequence


from estimator_rt.estimator.canned import base
from estimator_rt.estimator.canned import linear_logits
from estimator_rt.estimator.canned import linear_sdca
from estimator_rt.estimator.head import head_utils
from estimator_rt.estimator.canned import optimizers

# tf.estimator's learning rate for a named linear optimizer, and the cap on
# the default Ftrl's (1/sqrt(number of columns) below it).
LEARNING_RATE = 0.2


def default_optimizer(columns: Sequence):
  """Keras 2's legacy Ftrl at min(0.2, 1/sqrt(number of columns)), 2.15's
  default for optimizer=None (the v1 classes': v1_model_fns)."""
  rate = min(LEARNING_RATE, 1.0 / math.sqrt(len(columns)))
  import tf_keras  # pylint: disable=g-import-not-at-top
  return tf_keras.optimizers.legacy.Ftrl(learning_rate=rate)


def linear_model_fn(*, features, labels, mode, head, feature_columns,
                    optimizer, sparse_combiner, estimator_name):
  """The TF2 canned linear model's model_fn body (the v1 classes':
  v1_model_fns)."""
  base.check_features(features, estimator_name=estimator_name)
  if isinstance(optimizer, linear_sdca.LinearSDCA):
    return linear_sdca.sdca_model_fn(
        features=features, labels=labels, mode=mode, head=head,
        feature_columns=feature_columns, optimizer=optimizer)
  logits, weights, bias = linear_logits.build_linear(
      units=head.logits_dimension, feature_columns=feature_columns,
      sparse_combiner=sparse_combiner, features=features,
      ops_scope=linear_logits.OPS_SCOPE)
  linear_logits.add_linear_summaries(weights, bias, head.logits_dimension)
  if optimizer is None:
    optimizer = default_optimizer(feature_columns)
  part = optimizers.Part(optimizer=optimizer, learning_rate=LEARNING_RATE,
                         variables=weights + [bias])
  return base.estimator_spec(
      head=head, features=features, mode=mode, labels=labels, logits=logits,
      parts=[part])


# tf.estimator.experimental.LinearSDCA (linear_sdca.py).
LinearSDCA = linear_sdca.LinearSDCA


class LinearEstimator(base.CannedEstimator):
  """A linear model with any head; tf.estimator 2.15's signature.

  `optimizer`: a name gets learning rate 0.2 (so the default, 'Ftrl', is
  Ftrl at 0.2, as in 2.15); None gets Ftrl at min(0.2, 1/sqrt(number of
  columns)); an object or callable is used as given.
  """

  def __init__(self, head, feature_columns, model_dir=None, optimizer='Ftrl',
               config=None, sparse_combiner='sum', warm_start_from=None):
    columns = tuple(feature_columns or ())
    name = type(self).__name__
    base.check_v2_columns(columns, argument='feature_columns',
                          estimator_name=name)
    linear_logits.check_sparse_combiner(sparse_combiner)
    if isinstance(optimizer, linear_sdca.LinearSDCA):
      linear_sdca.check_estimator(head=head, feature_columns=columns,
                                  sparse_combiner=sparse_combiner)

    def _model_fn(features, labels, mode):
      return linear_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          feature_columns=columns, optimizer=optimizer,
          sparse_combiner=sparse_combiner, estimator_name=name)

    super().__init__(_model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class LinearClassifier(LinearEstimator):
  """A linear classifier (logistic regression for two classes, softmax for
  more); tf.estimator 2.15's signature and defaults."""

  def __init__(self, feature_columns, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None, optimizer='Ftrl',
               config=None, warm_start_from=None,
               loss_reduction=base.SUM_OVER_BATCH_SIZE,
               sparse_combiner='sum'):
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(head, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, config=config,
                     sparse_combiner=sparse_combiner,
                     warm_start_from=warm_start_from)


class LinearRegressor(LinearEstimator):
  """A linear regressor; tf.estimator 2.15's signature and defaults."""

  def __init__(self, feature_columns, model_dir=None, label_dimension=1,
               weight_column=None, optimizer='Ftrl', config=None,
               warm_start_from=None, loss_reduction=base.SUM_OVER_BATCH_SIZE,
               sparse_combiner='sum'):
    head = base.regression_head(label_dimension, weight_column=weight_column,
                                loss_reduction=loss_reduction)
    super().__init__(head, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, config=config,
                     sparse_combiner=sparse_combiner,
                     warm_start_from=warm_start_from)
