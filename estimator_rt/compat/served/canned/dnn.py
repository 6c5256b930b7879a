"""tf.estimator 2.15's `canned.dnn`: the DNN estimators and the model_fn
and logit_fn builders behind them, over estimator_rt's DNNs
(estimator_rt/estimator/canned/dnn.py: the TF2 classes' Keras 2 model,
named 'dnn', with 2.15's variable names; v1_model_fns.py: the v1 classes'
model, partitioned, as 2.15 built it).

The estimator classes (`DNNClassifierV2`, ...) are estimator_rt's, served
from module_paths.json. The private builders are here with 2.15's
signatures: `dnn_model_fn_v2` hands the head the optimizer, the trainable
variables and the update ops, as 2.15's did, so a head of one's own sees
the same call.
"""

import tensorflow as tf

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.canned import dnn as dnn_lib
from estimator_rt.estimator.canned import v1_model_fns
from estimator_rt.compat.served.canned import optimizers
from estimator_rt.core.mode_keys import ModeKeys

# The learning rate of a named optimizer in the v1 DNN.
_LEARNING_RATE = v1_model_fns.DNN_LEARNING_RATE

# The networks (Keras 2 models; `model(features, mode)` gives the logits).
_DNNModelV2 = dnn_lib.dnn_model_class()
_DNNModel = v1_model_fns.dnn_model_class()


_get_previous_name_scope = v1_model_fns.previous_name_scope


def _name_from_scope_name(name):
  """A scope name (`'a/b/'`) as the name of an op: without its trailing
  slash."""
  return name[:-1] if (name and name[-1] == '/') else name


_add_hidden_layer_summary = base.add_layer_summary


def _validate_features(features):
  """ValueError unless `features` is a dict (of tensors)."""
  base.check_features(features, estimator_name='the DNN model_fn')


def _dnn_model_fn_builder_v2(units, hidden_units, feature_columns,
                             activation_fn, dropout, batch_norm, features,
                             mode):
  """The DNN's logits on `features`, its trainable variables and its update
  ops (batch normalization's moving statistics).

  Raises:
    ValueError: `units` is not an int, or a column is a v1 feature column.
  """
  base.check_v2_columns(tuple(feature_columns), argument='feature_columns',
                        estimator_name='the DNN')
  return dnn_lib.build_dnn(
      units=units, hidden_units=hidden_units, feature_columns=feature_columns,
      activation_fn=activation_fn, dropout=dropout, batch_norm=batch_norm,
      features=features, mode=mode)


def dnn_logit_fn_builder_v2(units, hidden_units, feature_columns,
                            activation_fn, dropout, batch_norm):
  """A `logit_fn(features, mode)` returning the DNN's logits.

  Raises:
    ValueError: `units` is not an int (here; a v1 column when called).
  """
  dnn_lib.check_units(units)

  def dnn_logit_fn(features, mode):
    logits, _, _ = _dnn_model_fn_builder_v2(
        units, hidden_units, feature_columns, activation_fn, dropout,
        batch_norm, features, mode)
    return logits

  return dnn_logit_fn


def dnn_model_fn_v2(features,
                    labels,
                    mode,
                    head,
                    hidden_units,
                    feature_columns,
                    optimizer='Adagrad',
                    activation_fn=tf.nn.relu,
                    dropout=None,
                    config=None,
                    use_tpu=False,
                    batch_norm=False):
  """The TF2 DNN estimators' model_fn, as 2.15 wrote it: the DNN's logits
  given to `head.create_estimator_spec` (its `_create_tpu_estimator_spec`
  with `use_tpu`) with, in TRAIN, `optimizer` (a name: the Keras 2 legacy
  class with its default learning rate; see
  optimizers.get_optimizer_instance_v2) whose step counter is the global
  step, the trainable variables and the update ops.

  Raises:
    ValueError: `features` is not a dict.
  """
  del config
  _validate_features(features)
  logits, trainable_variables, update_ops = _dnn_model_fn_builder_v2(
      units=head.logits_dimension, hidden_units=hidden_units,
      feature_columns=feature_columns, activation_fn=activation_fn,
      dropout=dropout, batch_norm=batch_norm, features=features, mode=mode)
  if mode == ModeKeys.TRAIN:
    optimizer = optimizers.get_optimizer_instance_v2(optimizer)
    # Hooks count steps by the global step: the optimizer advances it.
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  if use_tpu:
    spec_fn = head._create_tpu_estimator_spec  # pylint: disable=protected-access
  else:
    spec_fn = head.create_estimator_spec
  return spec_fn(features=features, mode=mode, labels=labels,
                 optimizer=optimizer, logits=logits,
                 trainable_variables=trainable_variables,
                 update_ops=update_ops)


def _get_dnn_estimator_spec(use_tpu, head, features, labels, mode, logits,
                            optimizer):
  """The head's spec for `logits` trained by `optimizer`: its
  `_create_tpu_estimator_spec` with `use_tpu`, else its
  `create_estimator_spec`."""
  spec_fn = (head._create_tpu_estimator_spec if use_tpu  # pylint: disable=protected-access
             else head.create_estimator_spec)
  return spec_fn(features=features, mode=mode, labels=labels,
                 optimizer=optimizer, logits=logits)


# 2.15's v1 model_fn and logit_fn builder (v1_model_fns.py).
_dnn_model_fn = v1_model_fns.dnn_model_fn
dnn_logit_fn_builder = v1_model_fns.dnn_logit_fn_builder
