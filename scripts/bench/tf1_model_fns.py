"""W1's and W2's models written as tf.estimator users wrote them
(`tf.compat.v1` layers, losses and optimizers), run unchanged on both sides
of `python -m scripts.bench --engine graph --peers`: by the graph engine
here and by tf.estimator 2.15 in its own environment.

This module is imported under both TensorFlow versions, so it imports only
the standard library at the top (as `tf_estimator_worker`). Each side gives
its own `EstimatorSpec` class (estimator_rt's, tf.estimator's) and the
same hyperparameters: layer sizes from the project's model_fns, the
optimizer's kind and settings from the bare side's Keras optimizer
(`hyperparameters`, from `scripts.bench.workloads`).
"""

from typing import Any, Callable, Dict

WORKLOADS = ('W1', 'W2')


def optimizer_params(optimizer) -> Dict[str, Any]:
  """A Keras optimizer (its `get_config()` and class name) as the params of
  the tf.compat.v1 optimizer doing the same steps.

  Raises:
    ValueError: the optimizer is not plain SGD or Adam (momentum, AMSGrad,
      weight decay, clipping, EMA...), which is not mirrored.
  """
  config = optimizer.get_config()
  kind = type(optimizer).__name__
  extras = {key: config.get(key) for key in
            ('weight_decay', 'clipnorm', 'global_clipnorm', 'clipvalue')
            if config.get(key) is not None}
  if config.get('use_ema'):
    extras['use_ema'] = True
  learning_rate = config['learning_rate']
  if isinstance(learning_rate, bool) or not isinstance(learning_rate,
                                                       (int, float)):
    extras['learning_rate'] = learning_rate
  if kind == 'SGD':
    if config.get('momentum') or config.get('nesterov'):
      extras['momentum'] = config.get('momentum')
    params = {'optimizer': 'sgd', 'learning_rate': float(learning_rate)}
  elif kind == 'Adam':
    if config.get('amsgrad'):
      extras['amsgrad'] = True
    params = {'optimizer': 'adam', 'learning_rate': float(learning_rate),
              'beta_1': float(config['beta_1']),
              'beta_2': float(config['beta_2']),
              # Keras' default is 1e-7 and tf.compat.v1's 1e-8: carried over
              # explicitly, as every other hyperparameter.
              'epsilon': float(config['epsilon'])}
  else:
    raise ValueError(f'the bare side uses a {kind} optimizer; the '
                     'tf.compat.v1 model_fns mirror only SGD and Adam.')
  if extras:
    raise ValueError(f'the bare side\'s {kind} has settings the '
                     f'tf.compat.v1 model_fns do not mirror: {extras}')
  return params


def v1_optimizer(hyperparameters: Dict[str, Any]):
  """The tf.compat.v1 optimizer of `optimizer_params`' settings."""
  # The learning rate is Keras' float32 value: tf.compat.v1 casts it to
  # float32 too, so both sides step with the same number.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if hyperparameters['optimizer'] == 'sgd':
    return tf.compat.v1.train.GradientDescentOptimizer(
        hyperparameters['learning_rate'])
  return tf.compat.v1.train.AdamOptimizer(
      hyperparameters['learning_rate'], beta1=hyperparameters['beta_1'],
      beta2=hyperparameters['beta_2'], epsilon=hyperparameters['epsilon'])


def _linear_logits(features, hyperparameters):
  """model_fns.linear: one dense unit, squeezed to [batch]."""
  del hyperparameters
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = features['x'] if isinstance(features, dict) else features
  return tf.squeeze(tf.compat.v1.layers.dense(x, 1), axis=-1)


def _mlp_logits(features, hyperparameters):
  """model_fns.mlp: flattened input, ReLU dense layers, logits."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  net = features['x'] if isinstance(features, dict) else features
  net = tf.reshape(net, [tf.shape(net)[0], -1])
  for units in hyperparameters['hidden_units']:
    net = tf.compat.v1.layers.dense(net, units, activation=tf.nn.relu)
  return tf.compat.v1.layers.dense(net, hyperparameters['n_classes'])


def _linear_loss(labels, outputs):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.compat.v1.losses.mean_squared_error(
      tf.cast(labels, tf.float32), outputs)


def _classifier_loss(labels, logits):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.compat.v1.losses.sparse_softmax_cross_entropy(
      tf.reshape(tf.cast(labels, tf.int64), [-1]), logits)


_MODELS = {'W1': (_linear_logits, _linear_loss),
           'W2': (_mlp_logits, _classifier_loss)}


def make_model_fn(workload: str, estimator_spec: Callable,
                  hyperparameters: Dict[str, Any]) -> Callable:
  """The TRAIN model_fn of `workload` (the benchmark only trains).

  Args:
    workload: 'W1' or 'W2'.
    estimator_spec: the side's EstimatorSpec class.
    hyperparameters: layer sizes and optimizer settings (see the module
      docstring); the model_fn's `params` are the input's.
  """
  if workload not in _MODELS:
    raise ValueError(f'workload {workload!r}: TF1-style model_fns exist for '
                     f'{WORKLOADS} only.')
  outputs_of, loss_of = _MODELS[workload]

  def model_fn(features, labels, mode, params):
    del params
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    loss = loss_of(labels, outputs_of(features, hyperparameters))
    train_op = v1_optimizer(hyperparameters).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return estimator_spec(mode, loss=loss, train_op=train_op)

  model_fn.__name__ = f'tf1_{workload}_model_fn'
  return model_fn
