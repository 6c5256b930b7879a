"""DNNClassifier, DNNRegressor, DNNEstimator: feed-forward networks on
feature columns, as tf.estimator 2.15 built them.

The network is a Keras 2 (`tf_keras`) model named 'dnn': a `DenseFeatures`
input layer named 'input_from_feature_columns/input_layer', Dense layers
'hiddenlayer_0', 'hiddenlayer_1', ... (Glorot-uniform kernels, optional
dropout while training and batch normalization 'hiddenlayer_i/batchnorm_i'
with momentum 0.999), and a Dense 'logits' layer of the head's
logits_dimension. Built in the graph engine, its variables are named
`dnn/hiddenlayer_0/kernel`, ... as tf.estimator 2.15's were.
"""

import functools

import tensorflow as tf

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.head import head_utils
from estimator_rt.estimator.canned import optimizers
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys


def check_units(units) -> None:
  """ValueError (UserInputError) unless `units` is an int."""
  if isinstance(units, bool) or not isinstance(units, int):
    raise UserInputError(
        f'units must be an int.  Given type: {type(units)} (units={units!r} '
        'is the logits dimension).')


@functools.lru_cache(maxsize=None)
def dnn_model_class():
  """The network's class (2.15's `_DNNModelV2`, its constructor's
  signature), made on first use (tf_keras loads then)."""
  import tf_keras  # pylint: disable=g-import-not-at-top

  class DNNModel(tf_keras.Model):
    """Input layer, hidden layers, logits layer: see the module docstring.
    `call(features, mode)` gives the logits."""

    def __init__(self, units, hidden_units, feature_columns, activation_fn,
                 dropout, batch_norm, name=None, **kwargs):
      super().__init__(name=name, **kwargs)
      self._input_layer = tf_keras.layers.DenseFeatures(
          feature_columns=feature_columns,
          name='input_from_feature_columns/input_layer')
      self._dropout = dropout
      self._batch_norm = batch_norm
      self._hidden = []
      for index, width in enumerate(hidden_units):
        layer_name = f'hiddenlayer_{index}'
        dense = tf_keras.layers.Dense(
            units=width, activation=activation_fn,
            kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
            name=layer_name)
        dropout_layer = (tf_keras.layers.Dropout(rate=dropout)
                         if dropout is not None else None)
        # tf.estimator's momentum: the batch statistics move slowly.
        norm = (tf_keras.layers.BatchNormalization(
            momentum=0.999, trainable=True,
            name=f'{layer_name}/batchnorm_{index}') if batch_norm else None)
        self._hidden.append((layer_name, dense, dropout_layer, norm))
      self._logits = tf_keras.layers.Dense(
          units=units, activation=None,
          kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
          name='logits')

    def call(self, features, mode):  # pylint: disable=arguments-differ
      training = mode == ModeKeys.TRAIN
      net = self._input_layer(features, training=training)
      for layer_name, dense, dropout_layer, norm in self._hidden:
        net = dense(net)
        if dropout_layer is not None and training:
          net = dropout_layer(net, training=True)
        if norm is not None:
          net = norm(net, training=training)
        base.add_layer_summary(net, layer_name)
      logits = self._logits(net)
      base.add_layer_summary(logits, 'logits')
      return logits

  return DNNModel


def build_dnn(*, units, hidden_units, feature_columns, activation_fn,
              dropout, batch_norm, features, mode):
  """The DNN's logits on `features`, its trainable variables and its update
  ops (batch normalization's moving statistics)."""
  check_units(units)
  model = dnn_model_class()(
      units=units, hidden_units=tuple(hidden_units),
      feature_columns=tuple(feature_columns), activation_fn=activation_fn,
      dropout=dropout, batch_norm=batch_norm, name='dnn')
  logits = model(features, mode)
  return logits, model.trainable_variables, model.updates


def dnn_model_fn(*, features, labels, mode, head, hidden_units,
                 feature_columns, optimizer, activation_fn, dropout,
                 batch_norm, estimator_name):
  """The TF2 canned DNN's model_fn body (the v1 classes': v1_model_fns)."""
  base.check_features(features, estimator_name=estimator_name)
  logits, variables, update_ops = build_dnn(
      units=head.logits_dimension, hidden_units=hidden_units,
      feature_columns=feature_columns,
      activation_fn=activation_fn or tf.nn.relu, dropout=dropout,
      batch_norm=batch_norm, features=features, mode=mode)
  part = optimizers.Part(optimizer=optimizer, learning_rate=None,
                         variables=variables)
  return base.estimator_spec(
      head=head, features=features, mode=mode, labels=labels, logits=logits,
      parts=[part], update_ops=update_ops)


class DNNEstimator(base.CannedEstimator):
  """A DNN with any head (`estimator_rt.estimator.head` / tf.estimator's heads).

  Args: as tf.estimator 2.15's DNNEstimator: `head`, `hidden_units`,
  `feature_columns`, `model_dir`, `optimizer` ('Adagrad' by default: Keras
  2's Adagrad with its default learning rate 0.001), `activation_fn`
  (relu), `dropout`, `config`, `warm_start_from`, `batch_norm`.
  """

  def __init__(self, head, hidden_units, feature_columns, model_dir=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               config=None, warm_start_from=None, batch_norm=False):
    columns = tuple(feature_columns or ())
    name = type(self).__name__
    base.check_v2_columns(columns, argument='feature_columns',
                          estimator_name=name)

    def _model_fn(features, labels, mode):
      return dnn_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          hidden_units=hidden_units, feature_columns=columns,
          optimizer=optimizer, activation_fn=activation_fn, dropout=dropout,
          batch_norm=batch_norm, estimator_name=name)

    super().__init__(_model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNClassifier(DNNEstimator):
  """A DNN classifier: DNNEstimator with a BinaryClassHead (n_classes=2)
  or a MultiClassHead; tf.estimator 2.15's signature and defaults."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               n_classes=2, weight_column=None, label_vocabulary=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               config=None, warm_start_from=None,
               loss_reduction=base.SUM_OVER_BATCH_SIZE, batch_norm=False):
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(head, hidden_units, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, activation_fn=activation_fn,
                     dropout=dropout, config=config,
                     warm_start_from=warm_start_from, batch_norm=batch_norm)


class DNNRegressor(DNNEstimator):
  """A DNN regressor: DNNEstimator with a RegressionHead; tf.estimator
  2.15's signature and defaults."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               label_dimension=1, weight_column=None, optimizer='Adagrad',
               activation_fn=tf.nn.relu, dropout=None, config=None,
               warm_start_from=None, loss_reduction=base.SUM_OVER_BATCH_SIZE,
               batch_norm=False):
    head = base.regression_head(label_dimension, weight_column=weight_column,
                                loss_reduction=loss_reduction)
    super().__init__(head, hidden_units, feature_columns, model_dir=model_dir,
                     optimizer=optimizer, activation_fn=activation_fn,
                     dropout=dropout, config=config,
                     warm_start_from=warm_start_from, batch_norm=batch_norm)
