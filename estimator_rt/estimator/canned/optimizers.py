"""The optimizers canned estimators train with, named as tf.estimator named
them.

tf.estimator 2.15's canned estimators take `optimizer` as a name
('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'), an optimizer object, or a
callable returning one. They run in the graph engine (name-based
checkpoints, the variable names 2.15 wrote), where:

  - the TF2 classes (`tf.estimator.DNNClassifier`, ...) use Keras 2's
    `optimizers.legacy` (`tf_keras` here), whose `iterations` counter *is*
    the global step, as 2.15 made it;
  - the v1 classes (`tf.compat.v1.estimator.DNNClassifier`, ...) use
    `tf.compat.v1.train` optimizers and `minimize(global_step=...)`.

A legacy optimizer object trains the first graph it is built into itself,
as in tf.estimator 2.15 (so its `iterations` is the variable that graph
trained: the global step for the first part of a model, and
`estimator.get_variable_value(optimizer.iterations.name)` reads it); every
later graph (the next train call) gets a copy made from the settings it
had before that first use: an object built into one graph cannot make ops
in the next, where 2.15 failed. tf.estimator 2.15 refused a Keras
optimizer that was not a legacy one in a graph; here one of Keras 3 or
Keras 2's new optimizers of a known name is turned into the legacy one of
that name with the same settings, with one warning.
"""

import dataclasses
import inspect
import numbers
from typing import Any, Optional, Sequence
import weakref

from absl import logging
import tensorflow as tf

from estimator_rt.core.errors import UserInputError

NAMES = ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD')

# Keras optimizer class name -> tf.estimator's name for it.
_KERAS_CLASS_NAMES = {'Adagrad': 'Adagrad', 'Adam': 'Adam', 'Ftrl': 'Ftrl',
                      'RMSprop': 'RMSProp', 'SGD': 'SGD'}


def _legacy_classes():
  import tf_keras  # pylint: disable=g-import-not-at-top
  legacy = tf_keras.optimizers.legacy
  return {'Adagrad': legacy.Adagrad, 'Adam': legacy.Adam,
          'Ftrl': legacy.Ftrl, 'RMSProp': legacy.RMSprop, 'SGD': legacy.SGD}


def _v1_classes():
  train = tf.compat.v1.train
  return {'Adagrad': train.AdagradOptimizer, 'Adam': train.AdamOptimizer,
          'Ftrl': train.FtrlOptimizer, 'RMSProp': train.RMSPropOptimizer,
          'SGD': train.GradientDescentOptimizer}


def _unknown_name(opt: str, what: str) -> UserInputError:
  return UserInputError(
      f'Unsupported optimizer name: {opt}. Supported names are: '
      f'{tuple(sorted(NAMES))} ({what}={opt!r}: give one of them, an '
      'optimizer object, or a callable returning one).')


def _has_default_learning_rate(cls) -> bool:
  parameter = inspect.signature(cls.__init__).parameters.get('learning_rate')
  return (parameter is not None and
          parameter.default is not inspect.Parameter.empty)


def _is_legacy(opt: Any) -> bool:
  import tf_keras  # pylint: disable=g-import-not-at-top
  return isinstance(opt, tf_keras.optimizers.legacy.Optimizer)


# A legacy optimizer object a graph was built with -> its config before
# that, from which each later graph gets a copy.
_USED = weakref.WeakKeyDictionary()


def _is_unbuilt(opt: Any) -> bool:
  """Whether legacy optimizer `opt` has made no variable yet (no step
  counter, no hyperparameter or slot variable)."""
  return (getattr(opt, '_iterations', None) is None and
          not getattr(opt, '_hypers_created', False) and
          not getattr(opt, '_weights', None))


def _graph_config(opt: Any) -> Optional[dict]:
  """`opt.get_config()`, or None when a hyperparameter is a tensor (as
  `learning_rate=tf.compat.v1.train.exponential_decay(...)` is in a graph):
  get_config would run it, and its value belongs to that graph alone."""
  if any(tf.is_tensor(value) for value in
         getattr(opt, '_hyper', {}).values()):
    return None
  return opt.get_config()


def _for_this_graph(opt: Any):
  """`opt` itself the first time a graph is built with it (2.15 trained
  the user's object), a copy from its settings before that use after."""
  try:
    used = opt in _USED
  except TypeError:  # Not weakly referable: always a copy.
    return type(opt).from_config(opt.get_config())
  if used:
    config = _USED[opt]
    if config is None:
      raise UserInputError(
          f'optimizer {opt!r} has a hyperparameter that is a tensor of the '
          'graph it first trained in (such as learning_rate='
          'tf.compat.v1.train.exponential_decay(...)), and a new graph '
          'needs its own: pass a function that returns the optimizer '
          '(optimizer=lambda: ...), as tf.estimator\'s examples did.')
    return type(opt).from_config(config)
  if not _is_unbuilt(opt):
    # Built by the user's own code: its variables belong elsewhere.
    return type(opt).from_config(opt.get_config())
  _USED[opt] = _graph_config(opt)
  return opt


def _as_legacy(opt: Any, what: str):
  """A Keras 2 legacy optimizer with `opt`'s class and settings for this
  graph: `opt` itself or a copy (see _for_this_graph) if it is one, a new
  one otherwise."""
  if _is_legacy(opt):
    return _for_this_graph(opt)
  name = _KERAS_CLASS_NAMES.get(type(opt).__name__)
  if name is None:
    raise UserInputError(
        f'{what}={opt!r}: the canned estimators run in the graph engine, '
        'which trains with Keras 2 legacy optimizers '
        '(tf_keras.optimizers.legacy.*, tf.keras.optimizers.legacy.* under '
        'python -m estimator_rt.compat) or one of the names '
        f'{NAMES}; this optimizer has no legacy equivalent.')
  cls = _legacy_classes()[name]
  accepted = inspect.signature(cls.__init__).parameters
  given = _config_of(opt)
  config = {key: value for key, value in given.items()
            if key in accepted and key != 'name'}
  learning_rate = config.get('learning_rate')
  if isinstance(learning_rate, numbers.Real):  # numpy's read values too.
    config['learning_rate'] = float(learning_rate)
  else:
    # A schedule's config is a dict: the legacy class rebuilds it itself.
    config['learning_rate'] = opt.learning_rate
  logging.warning(
      '%s: a %s.%s runs as tf_keras.optimizers.legacy.%s with the same '
      'settings (the graph engine trains canned estimators with legacy '
      'optimizers, as tf.estimator did).', what, type(opt).__module__,
      type(opt).__name__, cls.__name__)
  return cls(**config)


def _config_of(opt: Any) -> dict:
  """`opt.get_config()`, also while a graph is built: a Keras 2 optimizer
  made eagerly (as programs make it) keeps its hyperparameters in eager
  variables, which get_config reads with .numpy(), in eager mode only."""
  if tf.executing_eagerly():
    return opt.get_config()
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  try:
    return opt.get_config()
  except NotImplementedError:  # .numpy() of an eager variable.
    with context.eager_mode():
      return opt.get_config()


def keras_legacy(opt: Any, *, learning_rate: Optional[float] = None,
                 what: str = 'optimizer'):
  """The Keras 2 legacy optimizer `opt` means, for this graph.

  A name or a callable gives a new optimizer; a legacy optimizer object is
  used itself the first time (see the module docstring), copied after.

  Args:
    opt: a name in NAMES, an optimizer object, or a callable returning one.
    learning_rate: for a name, its learning rate; None means the class's
      own default (tf.estimator 2.15's rule, with 0.05 for a class that has
      none).
    what: the argument's name, for errors.
  """
  if isinstance(opt, str):
    cls = _legacy_classes().get(opt)
    if cls is None:
      raise _unknown_name(opt, what)
    if learning_rate:
      return cls(learning_rate=learning_rate)
    return cls() if _has_default_learning_rate(cls) else cls(
        learning_rate=0.05)
  if callable(opt) and (inspect.isclass(opt) or
                        not hasattr(opt, 'get_config')):
    opt = opt()
  if not hasattr(opt, 'get_config'):
    raise UserInputError(
        'The given object is not a tf.keras.optimizers.Optimizer instance. '
        f'Given: {opt} ({what}: use one of {NAMES}, a '
        'tf_keras.optimizers.legacy optimizer, or a callable returning one).')
  return _as_legacy(opt, what)


def compat_v1(opt: Any, *, learning_rate: float, what: str = 'optimizer'):
  """The `tf.compat.v1.train.Optimizer` `opt` means (the v1 canned
  estimators'): a name with `learning_rate`, an object, or a callable."""
  if isinstance(opt, str):
    cls = _v1_classes().get(opt)
    if cls is None:
      raise _unknown_name(opt, what)
    return cls(learning_rate=learning_rate)
  if callable(opt) and not isinstance(opt, tf.compat.v1.train.Optimizer):
    opt = opt()
  if not isinstance(opt, tf.compat.v1.train.Optimizer):
    raise UserInputError(
        f'The given object is not an Optimizer instance. Given: {opt} '
        f'({what}: the tf.compat.v1.estimator canned estimators train with '
        'tf.compat.v1.train optimizers; give one, a callable returning one, '
        f'or one of {NAMES}).')
  return opt


@dataclasses.dataclass(frozen=True)
class Part:
  """One part of a canned model and what trains it.

  Attributes:
    optimizer: as the user gave it (a name, an object or a callable).
    learning_rate: what a name gets (None: the class's default).
    variables: the variables it trains.
    what: the constructor argument it came from, for errors.
  """
  optimizer: Any
  learning_rate: Optional[float]
  variables: Sequence[tf.Variable]
  what: str = 'optimizer'


def train_op(parts: Sequence[Part], loss: tf.Tensor, *,
             update_ops: Sequence[tf.Operation] = ()) -> tf.Operation:
  """The op that takes one training step on `loss` (already scaled for the
  replicas) and advances the global step once (the TF2 classes'; the v1
  classes' heads minimize, see v1_model_fns).

  Each part is applied with a Keras 2 legacy optimizer's `get_updates` (an
  optimizer may override it), whose step counter is the global step for
  the first part (so `get_updates` advances it; a second part keeps a
  counter of its own), as tf.estimator 2.15 did; with several replicas,
  its two halves with the gradients densified between them (see
  _needs_dense_gradients).
  """
  dense = _needs_dense_gradients()
  ops = []
  for index, part in enumerate(parts):
    optimizer = keras_legacy(part.optimizer, learning_rate=part.learning_rate,
                             what=part.what)
    if index == 0:
      optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    variables = list(part.variables)
    if dense:
      # What `get_updates` does, with the gradients densified.
      gradients = optimizer.get_gradients(loss, variables)
      ops.append(optimizer.apply_gradients(
          _densified(list(zip(gradients, variables)), True)))
    else:
      # 2.15 called `get_updates`, which an optimizer may override.
      ops.extend(optimizer.get_updates(loss, variables))
  return tf.group(*ops, *update_ops)


def _needs_dense_gradients() -> bool:
  """Whether sparse gradients (embedding and linear-model lookups) must be
  made dense before they are reduced: with more than one replica in a
  graph (mirrored on CPUs, multi_worker_mirrored), TensorFlow all-gathers
  an IndexedSlices gradient with collective ops that need every replica's
  to have the same number of rows, which differ with the batch's ids
  ("Shape mismatch in the collective instance"). The named optimizers
  update a variable the same from the dense gradient as from the sparse
  one (checked: wide & deep with Ftrl and Adagrad, a DNN with Adam, a
  linear model with SGD gave equal metrics after 20 steps either way)."""
  return tf.distribute.get_strategy().num_replicas_in_sync > 1


def _densified(pairs, dense: bool):
  if not dense:
    return pairs
  return [(tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g,
           v) for g, v in pairs]
