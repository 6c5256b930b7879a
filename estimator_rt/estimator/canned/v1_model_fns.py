"""The tf.compat.v1.estimator canned estimators' model_fns, built as
tf.estimator 2.15's `_dnn_model_fn`, `_linear_model_fn`,
`_dnn_linear_combined_model_fn` and `_baseline_model_fn` built them.

Code around a v1 canned estimator reads its graph, not only its numbers: a
wrapping model_fn groups the graph's `UPDATE_OPS` with a train op of its
own, a regulariser re-enters the model's variable scope with a
partitioner, a test hands it a head or an optimizer that checks how it is
called. So the structure is 2.15's:

  - each model is built under its variable scope ('dnn', 'linear') with
    2.15's partitioner, `min_max_variable_partitioner` over the
    `config.num_ps_replicas` parameter servers (a part of at least 256 KiB
    for the DNN's layers, 64 MiB for its input layer and the linear
    model). On one machine every weight is a PartitionedVariable of one
    part (`dnn/hiddenlayer_0/kernel/part_0`), saved under its full name
    (`dnn/hiddenlayer_0/kernel`);
  - the DNN is a Keras 2 model of `tf.compat.v1.layers` (tf_keras's legacy
    layers, whose batch normalization puts its moving-average updates into
    the graph's UPDATE_OPS); v1 feature columns go through TensorFlow's v1
    input layer and linear model, v2 ones through Keras 2's v1
    DenseFeatures and estimator_rt's linear model (linear_logits.py);
  - the head (a v1 `_Head`) gets the logits and a `tf.compat.v1.train`
    optimizer, whose `minimize` its train op calls at the global step (the
    combined model and the baseline hand it a train_op_fn instead), inside
    the model's variable scope: the slots are then named as 2.15's were
    (`dnn/dnn/hiddenlayer_0/kernel/part_0/Adagrad`, saved as
    `dnn/hiddenlayer_0/kernel/t_0/Adagrad`).
"""

import functools

import tensorflow as tf
from tensorflow.python.feature_column import feature_column as fc_v1
from tensorflow.python.feature_column import feature_column_lib

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.canned import linear_logits
from estimator_rt.estimator.canned import optimizers
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys

# 2.15's learning rates of a named optimizer, and the cap of the linear
# model's default (1/sqrt(number of columns) below it).
DNN_LEARNING_RATE = 0.05
LINEAR_LEARNING_RATE = 0.2
COMBINED_DNN_LEARNING_RATE = 0.001
COMBINED_LINEAR_LEARNING_RATE = 0.005
BASELINE_LEARNING_RATE = 0.3

# 2.15's smallest part of a partitioned input layer or linear model.
_LARGE_SLICE_BYTES = 64 << 20


def _num_ps_replicas(config) -> int:
  return config.num_ps_replicas if config else 0


def _partitioner(config, *, min_slice_size=None):
  """2.15's partitioner of a v1 canned model's variables: as many parts as
  parameter servers, each at least `min_slice_size` bytes (TensorFlow's
  default, 256 KiB, for None); one part without parameter servers."""
  kwargs = {} if min_slice_size is None else {'min_slice_size': min_slice_size}
  return tf.compat.v1.min_max_variable_partitioner(
      max_partitions=_num_ps_replicas(config), **kwargs)


expanded = linear_logits.expanded


def _legacy_layers():
  """tf_keras's `tf.compat.v1.layers` (what 2.15's tf.compat.v1.layers
  was)."""
  import tf_keras  # pylint: disable=g-import-not-at-top,unused-import
  from tf_keras.api._v1.keras.__internal__.legacy import layers  # pylint: disable=g-import-not-at-top
  return layers


def _v1_dense_features():
  """Keras 2's v1 DenseFeatures (tf.compat.v1.keras.layers.DenseFeatures),
  whose variables take the variable scope's partitioner."""
  from tf_keras.api._v1.keras import layers  # pylint: disable=g-import-not-at-top
  return layers.DenseFeatures


def _is_v2_columns(columns) -> bool:
  return feature_column_lib.is_feature_column_v2(columns)


def previous_name_scope() -> str:
  """The current name scope without its last component, with a trailing
  '/' (re-entered, a name scope is not made unique again)."""
  current = tf.compat.v1.get_default_graph().get_name_scope()
  return current.rsplit('/', 1)[0] + '/'


@functools.lru_cache(maxsize=None)
def dnn_model_class():
  """2.15's `_DNNModel` (made on first use: tf_keras loads then)."""
  import tf_keras  # pylint: disable=g-import-not-at-top

  class DNNModel(tf_keras.Model):
    """The v1 DNN: an input layer, hidden `tf.compat.v1.layers.Dense`
    layers 'hiddenlayer_<i>' (with dropout while training and batch
    normalization 'batchnorm_<i>' if asked) and a 'logits' layer, each in
    the variable scope it was made in. `call(features, mode)` gives the
    logits."""

    def __init__(self, units, hidden_units, feature_columns, activation_fn,
                 dropout, input_layer_partitioner, batch_norm, name=None,
                 **kwargs):
      super().__init__(name=name, **kwargs)
      layers = _legacy_layers()
      if _is_v2_columns(feature_columns):
        self._input_layer = _v1_dense_features()(
            feature_columns=feature_columns, name='input_layer')
      else:
        self._input_layer = fc_v1.InputLayer(
            feature_columns=feature_columns, name='input_layer',
            create_scope_now=False)
      setattr(self, 'input_layer', self._input_layer)
      self._dropout = dropout
      self._batch_norm = batch_norm
      self._hidden = []
      for index, width in enumerate(hidden_units):
        with tf.compat.v1.variable_scope(f'hiddenlayer_{index}') as scope:
          dense = layers.Dense(
              units=width, activation=activation_fn,
              kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
              name=scope, _scope=scope)
          setattr(self, scope.name, dense)
          dropout_layer = None
          if dropout is not None:
            dropout_layer = layers.Dropout(rate=dropout)
            setattr(self, dropout_layer.name, dropout_layer)
          norm = None
          if batch_norm:
            # tf.estimator's momentum: the batch statistics move slowly.
            norm = layers.BatchNormalization(
                momentum=0.999, trainable=True, name=f'batchnorm_{index}',
                _scope=f'batchnorm_{index}')
            setattr(self, norm.name, norm)
          self._hidden.append((scope.name, dense, dropout_layer, norm))
      with tf.compat.v1.variable_scope('logits') as scope:
        self._logits_layer = layers.Dense(
            units=units, activation=None,
            kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
            name=scope, _scope=scope)
        setattr(self, scope.name, self._logits_layer)
        self._logits_scope = scope.name
      self._input_layer_partitioner = input_layer_partitioner

    def call(self, features, mode):  # pylint: disable=arguments-differ
      training = mode == ModeKeys.TRAIN
      # Out of the name scope Keras opens for the model: 2.15's op names.
      with tf.name_scope(previous_name_scope()):
        with tf.compat.v1.variable_scope(
            'input_from_feature_columns',
            partitioner=self._input_layer_partitioner):
          try:
            net = self._input_layer(features, training=training)
          except TypeError:  # TensorFlow's v1 InputLayer takes no mode.
            net = self._input_layer(features)
        for scope_name, dense, dropout_layer, norm in self._hidden:
          net = dense(net)
          if dropout_layer is not None and training:
            net = dropout_layer(net, training=True)
          if norm is not None:
            net = norm(net, training=training)
          base.add_layer_summary(net, scope_name)
        logits = self._logits_layer(net)
        base.add_layer_summary(logits, self._logits_scope)
        return logits

  return DNNModel


def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn,
                         dropout, input_layer_partitioner, batch_norm):
  """tf.compat.v1.estimator.experimental.dnn_logit_fn_builder: a
  `logit_fn(features, mode)` returning the v1 DNN's logits (its variables
  in the current variable scope).

  Raises:
    ValueError: `units` is not an int.
  """
  if isinstance(units, bool) or not isinstance(units, int):
    raise UserInputError(
        f'units must be an int.  Given type: {type(units)} (units={units!r} '
        'is the logits dimension).')

  def dnn_logit_fn(features, mode):
    model = dnn_model_class()(
        units, hidden_units, feature_columns, activation_fn, dropout,
        input_layer_partitioner, batch_norm, name='dnn')
    return model(features, mode)

  return dnn_logit_fn


def _head_spec(head, *, use_tpu=False, **kwargs):
  """The head's EstimatorSpec (its TPUEstimatorSpec with `use_tpu`)."""
  if use_tpu:
    return head._create_tpu_estimator_spec(**kwargs)  # pylint: disable=protected-access
  return head.create_estimator_spec(**kwargs)


def dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns,
                 optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
                 input_layer_partitioner=None, config=None, use_tpu=False,
                 batch_norm=False):
  """2.15's `_dnn_model_fn`: the v1 DNN under variable scope 'dnn', its
  logits handed to `head` with `optimizer` (a name gets learning rate
  0.05). With `use_tpu`, no partitioning and the head's TPUEstimatorSpec.

  Raises:
    ValueError: `features` is not a dict, or a bad optimizer.
  """
  optimizer = optimizers.compat_v1(optimizer,
                                   learning_rate=DNN_LEARNING_RATE)
  base.check_features(features, estimator_name='the DNN model_fn')
  partitioner = None if use_tpu else _partitioner(config)
  with tf.compat.v1.variable_scope('dnn', values=tuple(features.values()),
                                   partitioner=partitioner):
    if input_layer_partitioner is None and not use_tpu:
      input_layer_partitioner = _partitioner(
          config, min_slice_size=_LARGE_SLICE_BYTES)
    logits = dnn_logit_fn_builder(
        units=head.logits_dimension, hidden_units=hidden_units,
        feature_columns=feature_columns, activation_fn=activation_fn,
        dropout=dropout, input_layer_partitioner=input_layer_partitioner,
        batch_norm=batch_norm)(features=features, mode=mode)
    return _head_spec(head, use_tpu=use_tpu, features=features, mode=mode,
                      labels=labels, optimizer=optimizer, logits=logits)


def linear_logit_fn_builder(units, feature_columns, sparse_combiner='sum'):
  """tf.compat.v1.estimator.experimental.linear_logit_fn_builder: a
  `logit_fn(features)` returning the linear model's logits (its variables
  `linear_model/<column>/weights` and `linear_model/bias_weights` in the
  current variable scope), with 2.15's summaries of the bias and of the
  fraction of zero weights."""

  def linear_logit_fn(features):
    if _is_v2_columns(feature_columns):
      logits, weights, bias = linear_logits.build_linear(
          units=units, feature_columns=feature_columns,
          sparse_combiner=sparse_combiner, features=features,
          scope='linear_model', ops_scope=linear_logits.V1_OPS_SCOPE)
      weights, bias = expanded(weights), expanded([bias])
    else:
      model = fc_v1._LinearModel(  # pylint: disable=protected-access
          feature_columns=feature_columns, units=units,
          sparse_combiner=sparse_combiner, name='linear_model')
      logits = model(features)
      by_column = model.cols_to_vars()
      bias = by_column.pop('bias')
      # Each column's variables are a list (a partitioned one's parts).
      weights = expanded(variable for variables in by_column.values()
                         for variable in variables)
    if units > 1:
      tf.compat.v1.summary.histogram('bias', bias)
    else:
      tf.compat.v1.summary.scalar('bias', bias[0][0])
    tf.compat.v1.summary.scalar('fraction_of_zero_weights',
                                linear_logits.fraction_of_zero(weights))
    return logits

  return linear_logit_fn


def default_linear_optimizer(feature_columns):
  """2.15's default for the v1 linear model: Ftrl at min(0.2,
  1/sqrt(number of columns))."""
  rate = min(LINEAR_LEARNING_RATE, 1.0 / (len(feature_columns) ** 0.5))
  return tf.compat.v1.train.FtrlOptimizer(learning_rate=rate)


def linear_model_fn(features, labels, mode, head, feature_columns, optimizer,
                    partitioner, config, sparse_combiner='sum'):
  """2.15's `_linear_model_fn`: the linear model under variable scope
  'linear' (`partitioner`, or 2.15's), its logits handed to `head` with
  `optimizer` (None: default_linear_optimizer; a name: learning rate 0.2).
  A LinearSDCA optimizer trains by SDCA instead (linear_sdca.py).

  Raises:
    ValueError: `features` is not a dict, or a bad optimizer.
  """
  from estimator_rt.estimator.canned import linear_sdca  # pylint: disable=g-import-not-at-top
  base.check_features(features, estimator_name='the linear model_fn')
  partitioner = partitioner or _partitioner(
      config, min_slice_size=_LARGE_SLICE_BYTES)
  with tf.compat.v1.variable_scope('linear', values=tuple(features.values()),
                                   partitioner=partitioner):
    if isinstance(optimizer, linear_sdca.LinearSDCA):
      return linear_sdca.sdca_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          feature_columns=feature_columns, optimizer=optimizer,
          scope='linear_model', ops_scope=linear_logits.V1_OPS_SCOPE)
    logits = linear_logit_fn_builder(
        units=head.logits_dimension, feature_columns=feature_columns,
        sparse_combiner=sparse_combiner)(features=features)
    optimizer = optimizers.compat_v1(
        optimizer or default_linear_optimizer(feature_columns),
        learning_rate=LINEAR_LEARNING_RATE)
    return head.create_estimator_spec(features=features, mode=mode,
                                      labels=labels, optimizer=optimizer,
                                      logits=logits)


def combined_linear_learning_rate(num_columns: int) -> float:
  """2.15's learning rate of the wide & deep model's named linear
  optimizer: min(0.005, 1/sqrt(number of linear columns))."""
  return min(COMBINED_LINEAR_LEARNING_RATE, 1.0 / (num_columns ** 0.5))


def check_no_sync_replicas_optimizer(optimizer) -> None:
  """ValueError for a SyncReplicasOptimizer: it cannot drive two
  optimizers."""
  if isinstance(optimizer, tf.compat.v1.train.SyncReplicasOptimizer):
    raise UserInputError(
        'SyncReplicasOptimizer does not support multi optimizers case. '
        'Therefore, it is not supported in DNNLinearCombined model. '
        'If you want to use this optimizer, please use either DNN or Linear '
        'model.')


def combined_model_fn(features, labels, mode, head,
                      linear_feature_columns=None, linear_optimizer='Ftrl',
                      dnn_feature_columns=None, dnn_optimizer='Adagrad',
                      dnn_hidden_units=None, dnn_activation_fn=tf.nn.relu,
                      dnn_dropout=None, input_layer_partitioner=None,
                      config=None, batch_norm=False,
                      linear_sparse_combiner='sum'):
  """2.15's `_dnn_linear_combined_model_fn`: the v1 DNN under 'dnn' and the
  linear model under 'linear', their logits added and handed to `head` with
  a train_op_fn that minimizes each part's trainable variables with its
  optimizer (named: the DNN's at 0.001, the linear one's at
  combined_linear_learning_rate), then adds one to the global step.

  Raises:
    ValueError: `features` is not a dict, neither part has a column, the
      DNN has columns and no hidden units, or a SyncReplicasOptimizer.
  """
  base.check_features(features, estimator_name='the wide & deep model_fn')
  if not linear_feature_columns and not dnn_feature_columns:
    raise UserInputError(
        'Either linear_feature_columns or dnn_feature_columns must be '
        'defined.')
  input_layer_partitioner = input_layer_partitioner or _partitioner(
      config, min_slice_size=_LARGE_SLICE_BYTES)
  parts, logits = [], []
  if dnn_feature_columns:
    dnn_optimizer = optimizers.compat_v1(
        dnn_optimizer, learning_rate=COMBINED_DNN_LEARNING_RATE,
        what='dnn_optimizer')
    check_no_sync_replicas_optimizer(dnn_optimizer)
    if not dnn_hidden_units:
      raise UserInputError(
          'dnn_hidden_units must be defined when dnn_feature_columns is '
          f'specified (dnn_hidden_units={dnn_hidden_units!r}).')
    with tf.compat.v1.variable_scope(
        'dnn', values=tuple(features.values()),
        partitioner=_partitioner(config)) as scope:
      logits.append(dnn_logit_fn_builder(
          units=head.logits_dimension, hidden_units=dnn_hidden_units,
          feature_columns=dnn_feature_columns,
          activation_fn=dnn_activation_fn, dropout=dnn_dropout,
          input_layer_partitioner=input_layer_partitioner,
          batch_norm=batch_norm)(features=features, mode=mode))
      parts.append((dnn_optimizer, scope.name))
  if linear_feature_columns:
    linear_optimizer = optimizers.compat_v1(
        linear_optimizer,
        learning_rate=combined_linear_learning_rate(
            len(linear_feature_columns)),
        what='linear_optimizer')
    check_no_sync_replicas_optimizer(linear_optimizer)
    with tf.compat.v1.variable_scope(
        'linear', values=tuple(features.values()),
        partitioner=input_layer_partitioner) as scope:
      logits.append(linear_logit_fn_builder(
          units=head.logits_dimension, feature_columns=linear_feature_columns,
          sparse_combiner=linear_sparse_combiner)(features=features))
      base.add_layer_summary(logits[-1], scope.name)
      parts.append((linear_optimizer, scope.name))

  def train_op_fn(loss):
    global_step = tf.compat.v1.train.get_global_step()
    train_op = tf.group(*[
        optimizer.minimize(loss, var_list=tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope=scope))
        for optimizer, scope in parts])
    with tf.control_dependencies([train_op]):
      return tf.compat.v1.assign_add(global_step, 1).op

  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, train_op_fn=train_op_fn,
      logits=logits[0] + logits[1] if len(logits) == 2 else logits[0])


def baseline_logit_fn_builder(num_outputs, weight_column=None):
  """2.15's `_baseline_logit_fn_builder`: a `logit_fn(features)` giving the
  bias `baseline/bias` [num_outputs] (a v1 variable) repeated for each
  example, once the features (the weight's aside) agree on the batch
  size."""
  from estimator_rt.estimator.canned import baseline  # pylint: disable=g-import-not-at-top

  def baseline_logit_fn(features):
    size, checks = baseline.batch_size(features,
                                       baseline.weight_key(weight_column))
    with tf.compat.v1.variable_scope('baseline'):
      # Its initializer must not wait for the input (2.15's did, and its
      # baselines failed to start on two or more features).
      with tf.control_dependencies(None):
        bias = tf.compat.v1.get_variable(
            'bias', shape=[num_outputs],
            initializer=tf.compat.v1.initializers.zeros)
      with tf.control_dependencies(checks):
        return tf.math.multiply(bias, tf.ones([size, num_outputs]))

  return baseline_logit_fn


def baseline_model_fn(features, labels, mode, head, optimizer,
                      weight_column=None, config=None):
  """2.15's `_baseline_model_fn`: the baseline's logits handed to `head`
  with a train_op_fn minimizing the loss with `optimizer` (a name gets
  learning rate 0.3) at the global step."""
  del config
  logits = baseline_logit_fn_builder(head.logits_dimension,
                                     weight_column)(features)

  def train_op_fn(loss):
    opt = optimizers.compat_v1(optimizer,
                               learning_rate=BASELINE_LEARNING_RATE)
    return opt.minimize(loss,
                        global_step=tf.compat.v1.train.get_global_step())

  return head.create_estimator_spec(features=features, mode=mode,
                                    logits=logits, labels=labels,
                                    train_op_fn=train_op_fn)
