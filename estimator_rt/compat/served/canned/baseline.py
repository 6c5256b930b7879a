"""tensorflow_estimator.python.estimator.canned.baseline, over estimator_rt.

The names of 2.15's module that code and 2.15's own tests use besides the
public ones (BaselineClassifier, BaselineClassifierV2, ..., which come from
module_paths.json): the model_fns and builders with 2.15's signatures, over
estimator_rt's baseline (estimator_rt/estimator/canned/baseline.py: one variable
`baseline/bias` repeated per example).
"""

import tensorflow as tf
from tensorflow.python.feature_column import feature_column as _fc_v1
from tensorflow.python.feature_column import feature_column_v2 as _fc_v2

from estimator_rt.estimator.canned import baseline as _baseline
from estimator_rt.estimator.canned import base as _base
from estimator_rt.estimator.canned import v1_model_fns as _v1_model_fns
from estimator_rt.compat.served.canned import optimizers as _optimizers
from estimator_rt.core.errors import UserTypeError
from estimator_rt.core.mode_keys import ModeKeys

_LEARNING_RATE = _baseline.LEARNING_RATE


def _weight_column_key(weight_column, column_class, class_name):
  if weight_column is None or isinstance(weight_column, str):
    return weight_column
  if not isinstance(weight_column, column_class):
    raise UserTypeError(
        f'Weight column must be either a string or {class_name}. Given '
        f'type: {type(weight_column)}.')
  return weight_column.key


def _get_weight_column_key(weight_column):
  """The features key of `weight_column` (a string, or a v1
  `_NumericColumn`'s key), or None.

  Raises:
    TypeError: anything else.
  """
  return _weight_column_key(weight_column, _fc_v1._NumericColumn,  # pylint: disable=protected-access
                            '_NumericColumn')


def _get_weight_column_key_v2(weight_column):
  """The features key of `weight_column` (a string, or a
  `tf.feature_column.numeric_column`'s key), or None.

  Raises:
    TypeError: anything else.
  """
  return _weight_column_key(weight_column, _fc_v2.NumericColumn,
                            'NumericColumn')


def _get_batch_size_and_size_checks(features, weight_column_key):
  """(size_checks, batch_size): the first dimension of the first feature
  and the assertions that every other one (the weight aside, which serving
  does not feed) has the same."""
  batch_size, checks = _baseline.batch_size(features, weight_column_key)
  return checks, batch_size


def _baseline_model_fn_builder_v2(features, num_outputs, weight_column=None):
  """The baseline's variables and logits on `features`: ([bias], logits),
  the bias `baseline/bias` of shape [num_outputs] repeated per example."""
  bias, logits = _baseline.build_baseline(
      features=features, logits_dimension=num_outputs,
      weight_column=weight_column)
  return [bias], logits


# 2.15's v1 model_fn and logit_fn builder (v1_model_fns.py).
_baseline_logit_fn_builder = _v1_model_fns.baseline_logit_fn_builder
_baseline_model_fn = _v1_model_fns.baseline_model_fn


def _baseline_model_fn_v2(features, labels, mode, head, optimizer,
                          weight_column=None, config=None,
                          loss_reduction=_base.SUM_OVER_BATCH_SIZE):
  """The TF2 baseline estimators' model_fn, as 2.15 wrote it: the head's
  spec for the baseline's logits, trained by `optimizer` as a Keras 2
  legacy optimizer (a name: learning rate 0.3) counting the global step;
  a SUM_OVER_BATCH_SIZE loss is divided by the number of replicas (their
  gradients are summed)."""
  del config
  variables, logits = _baseline_model_fn_builder_v2(
      features, head.logits_dimension, weight_column)
  opt = None
  if mode == ModeKeys.TRAIN:
    opt = _optimizers.get_optimizer_instance_v2(optimizer,
                                                learning_rate=_LEARNING_RATE)
    # Hooks count steps by the global step: the optimizer advances it.
    opt.iterations = tf.compat.v1.train.get_or_create_global_step()

  def train_op_fn(loss):
    return opt.get_updates(_base.per_replica_loss(loss, loss_reduction),
                           variables)[0]

  return head.create_estimator_spec(features=features, mode=mode,
                                    logits=logits, labels=labels,
                                    train_op_fn=train_op_fn)
