"""tensorflow_estimator.python.estimator.canned.linear, over estimator_rt.

The names of 2.15's module that code and 2.15's own tests use besides the
public ones (LinearClassifier, LinearClassifierV2, ..., which come from
module_paths.json): the Keras `LinearModel` and its layer, the model_fns
and logit_fn builders with 2.15's signatures (which hand the head the
optimizer, as 2.15's did, so a head of one's own sees the same call), the
SDCA pieces and the helpers `_compute_fraction_of_zero`, ...
"""

import tensorflow as tf

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.canned import linear_logits
from estimator_rt.estimator.canned import linear as _linear
from estimator_rt.estimator.canned import linear_model as _linear_model
from estimator_rt.estimator.canned import linear_sdca as _linear_sdca
from estimator_rt.estimator.canned import v1_model_fns as _v1_model_fns
from estimator_rt.compat.served.canned import optimizers as _optimizers
from estimator_rt.core.mode_keys import ModeKeys

LinearModel = _linear_model.LinearModel
_LinearModelLayer = _linear_model.LinearModelLayer
_SDCAUpdateWeightsHook = _linear_sdca.SDCAUpdateWeightsHook

_LEARNING_RATE = _linear.LEARNING_RATE


def _compute_fraction_of_zero(variables):
  """The fraction of zero values over `variables` (tensors or variables,
  nested lists allowed): NaN if they hold no value at all.

  Raises:
    ValueError: `variables` is empty.
  """
  return linear_logits.fraction_of_zero(tf.nest.flatten(variables))


_get_default_optimizer = _v1_model_fns.default_linear_optimizer


def _get_default_optimizer_v2(feature_columns):
  """Keras 2's legacy Ftrl at min(0.2, 1/sqrt(number of columns)): the TF2
  linear estimators' optimizer=None."""
  return _linear.default_optimizer(feature_columns)


_get_expanded_variable_list = _v1_model_fns.expanded


def _validate_linear_sdca_optimizer_for_linear_classifier(
    feature_columns, n_classes, optimizer, sparse_combiner):
  """With a LinearSDCA optimizer: ValueError unless sparse_combiner is
  'sum', the columns are v2 ones and n_classes is 2."""
  if isinstance(optimizer, _linear_sdca.LinearSDCA):
    _linear_sdca.check_arguments(feature_columns=feature_columns,
                                 sparse_combiner=sparse_combiner,
                                 n_classes=n_classes)


def _validate_linear_sdca_optimizer_for_linear_regressor(
    feature_columns, label_dimension, optimizer, sparse_combiner):
  """With a LinearSDCA optimizer: ValueError unless sparse_combiner is
  'sum', the columns are v2 ones and label_dimension is 1."""
  if isinstance(optimizer, _linear_sdca.LinearSDCA):
    _linear_sdca.check_arguments(feature_columns=feature_columns,
                                 sparse_combiner=sparse_combiner,
                                 label_dimension=label_dimension)


def _linear_model_fn_builder_v2(units, feature_columns, sparse_combiner='sum',
                                features=None):
  """The TF2 linear model's logits on `features` and its variables (the
  weights, then the bias), with the bias and fraction-of-zero summaries.

  Raises:
    ValueError: a v1 feature column.
  """
  base.check_v2_columns(tuple(feature_columns), argument='feature_columns',
                        estimator_name='the linear model')
  logits, weights, bias = linear_logits.build_linear(
      units=units, feature_columns=feature_columns,
      sparse_combiner=sparse_combiner, features=features,
      ops_scope=linear_logits.OPS_SCOPE)
  linear_logits.add_linear_summaries(weights, bias, units)
  return logits, weights + [bias]


def linear_logit_fn_builder_v2(units, feature_columns, sparse_combiner='sum'):
  """A `logit_fn(features)` returning the TF2 linear model's logits
  (see _linear_model_fn_builder_v2)."""

  def linear_logit_fn(features):
    logits, _ = _linear_model_fn_builder_v2(
        units, feature_columns, sparse_combiner=sparse_combiner,
        features=features)
    return logits

  return linear_logit_fn


def _sdca_model_fn(features, labels, mode, head, feature_columns, optimizer):
  """The linear model trained by `optimizer`, a LinearSDCA, with `head` (a
  binary classifier's or a one-dimensional regressor's): the head's spec,
  in TRAIN with the SDCA train op and the hook that updates the weights.

  Raises:
    ValueError: another head.
  """
  return _linear_sdca.sdca_model_fn(
      features=features, labels=labels, mode=mode, head=head,
      feature_columns=feature_columns, optimizer=optimizer)


def _linear_model_fn_v2(features, labels, mode, head, feature_columns,
                        optimizer, config, sparse_combiner='sum'):
  """The TF2 linear estimators' model_fn, as 2.15 wrote it: the linear
  model's logits given to `head.create_estimator_spec` with, in TRAIN,
  `optimizer` as a Keras 2 legacy optimizer (None: Ftrl at min(0.2,
  1/sqrt(columns)); a name: learning rate 0.2) counting the global step,
  and the model's variables; a LinearSDCA goes to _sdca_model_fn.

  Raises:
    ValueError: `features` is not a dict.
  """
  del config
  base.check_features(features, estimator_name='the linear model_fn')
  if isinstance(optimizer, _linear_sdca.LinearSDCA):
    return _sdca_model_fn(features, labels, mode, head, feature_columns,
                          optimizer)
  logits, trainable_variables = _linear_model_fn_builder_v2(
      units=head.logits_dimension, feature_columns=feature_columns,
      sparse_combiner=sparse_combiner, features=features)
  if mode == ModeKeys.TRAIN:
    optimizer = _optimizers.get_optimizer_instance_v2(
        optimizer or _get_default_optimizer_v2(feature_columns),
        learning_rate=_LEARNING_RATE)
    # Hooks count steps by the global step: the optimizer advances it.
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=optimizer,
      trainable_variables=trainable_variables, logits=logits)


# 2.15's v1 model_fn and logit_fn builder (v1_model_fns.py).
_linear_model_fn = _v1_model_fns.linear_model_fn
linear_logit_fn_builder = _v1_model_fns.linear_logit_fn_builder
