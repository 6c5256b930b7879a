"""LinearModel: the linear model on feature columns as a Keras 2 model, as
tf.estimator 2.15 offered it (`canned.linear.LinearModel`).

    model = LinearModel([price_buckets, keywords], units=1)
    predictions = model(features)     # [batch, units]

A `tf_keras.Model` (Keras 2: what `tf.keras` was for tf.estimator 2.15, and
is under `python -m estimator_rt.compat`) holding one `LinearModelLayer`
of the same name, which computes what the linear estimators compute
(linear_logits.py's `weighted_sum`): one weight row per categorical bucket or
dense value of each column (in order of name), combined by
`sparse_combiner` for multivalent categorical columns, plus a bias. Its
variables are `<name>/<column>/weights` [width, units] and
`<name>/bias_weights` [units], zero-initialized, under the current variable
scope, as 2.15 named them; its ops are in name scope `<name>` (the layer's
own, inside the model's).

Imports tf_keras: it is loaded by whoever uses this module only (the
runtime's estimators build the linear model without Keras).
"""

import tensorflow as tf
from tensorflow.python.autograph.impl import api as autograph_api
from tensorflow.python.feature_column import serialization
import tf_keras

from estimator_rt.estimator.canned import linear_logits

from estimator_rt.core.errors import UserInputError


def _not_converted(call):
  """Marks a Keras `call` as one AutoGraph leaves as it is (as TensorFlow
  marks the functions it has converted), returning it unwrapped.

  Keras runs a subclassed layer's call() through AutoGraph, which would
  turn the UserInputErrors these raise into its StagingErrors; there is no
  tensor-dependent control flow in them to convert. (tf.autograph's
  do_not_convert wraps the function, which hides its signature from
  Keras.)
  """
  return autograph_api.autograph_artifact(call)


class LinearModelLayer(tf_keras.layers.Layer):
  """The layer that computes LinearModel's output (see the module
  docstring); 2.15's `_LinearModelLayer`, with its signature, config and
  attributes (`_feature_columns`, `_units`, `_sparse_combiner`, `bias`).

  Raises (constructing it):
    ValueError: feature_columns is empty, a dict, holds a non-column or
      two columns of one name, or a column neither dense nor categorical
      (a UserInputError).
  """

  def __init__(self, feature_columns, units=1, sparse_combiner='sum',
               trainable=True, name=None, **kwargs):
    super().__init__(name=name, trainable=trainable, **kwargs)
    self._feature_columns = linear_logits.linear_columns(feature_columns)
    self._units = units
    self._sparse_combiner = sparse_combiner
    # Feature-column state (weights, embedding tables) as this layer's
    # weights, made with tf.compat.v1.get_variable (so they take the
    # variable scope's name).
    self._state_manager = tf.__internal__.feature_column.StateManager(
        self, self.trainable)
    self.bias = None

  def build(self, input_shape):
    del input_shape  # A dict of features: the columns give the shapes.
    zeros = tf_keras.initializers.zeros()
    # Variable scopes without name scopes: the variables are named by the
    # scopes (2.15's checkpoint names), the ops by call()'s name scopes.
    with tf.compat.v1.variable_scope(self.name, auxiliary_name_scope=False):
      for column in self._feature_columns:
        with tf.compat.v1.variable_scope(linear_logits.column_scope(column),
                                         auxiliary_name_scope=False):
          column.create_state(self._state_manager)
          self._state_manager.create_variable(
              column, name='weights', dtype=tf.float32,
              shape=linear_logits.weights_shape(column, self._units),
              initializer=zeros, trainable=self.trainable)
      self.bias = self.add_weight(
          name='bias_weights', dtype=tf.float32, shape=[self._units],
          initializer=zeros, trainable=self.trainable, use_resource=True,
          getter=tf.compat.v1.get_variable)
    super().build(None)

  @_not_converted
  def call(self, features):  # pylint: disable=arguments-differ
    if not isinstance(features, dict):
      raise UserInputError(
          'We expected a dictionary here. Instead we got: '
          f'{features!r}; LinearModel reads its features by column key, '
          'from a dict of tensors.')
    with tf.name_scope(self.name):
      return linear_logits.weighted_sum(
          self._feature_columns, features=features,
          state=self._state_manager, sparse_combiner=self._sparse_combiner,
          bias=self.bias)

  def get_config(self):
    config = super().get_config()
    config.update(
        feature_columns=serialization.serialize_feature_columns(
            self._feature_columns),
        units=self._units, sparse_combiner=self._sparse_combiner)
    return config

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    columns = serialization.deserialize_feature_columns(
        config.pop('feature_columns'), custom_objects=custom_objects)
    return cls(feature_columns=columns, **config)


class LinearModel(tf_keras.Model):
  """A linear prediction (logits, or the regression itself) from
  `feature_columns`; tf.estimator 2.15's `canned.linear.LinearModel`.

  Args:
    feature_columns: dense and categorical `tf.feature_column` columns
      (a categorical column counts as its one-hot indicator).
    units: the output's width.
    sparse_combiner: how a multivalent categorical column's weights are
      combined per example: 'sum' (default), 'mean' or 'sqrtn'.
    trainable: whether the weights are trainable (and in the
      TRAINABLE_VARIABLES collection).
    name: the model's name, and its variables' scope (default
      'linear_model').
    **kwargs: for the Keras layer.

  Calling it on a dict of features gives a float32 [batch, units] tensor.
  """

  def __init__(self, feature_columns, units=1, sparse_combiner='sum',
               trainable=True, name=None, **kwargs):
    super().__init__(name=name, **kwargs)
    self.layer = LinearModelLayer(feature_columns, units, sparse_combiner,
                                  trainable, name=self.name, **kwargs)

  @_not_converted
  def call(self, features):  # pylint: disable=arguments-differ
    return self.layer(features)

  @property
  def bias(self):
    """The bias variable (None until the model is called)."""
    return self.layer.bias
