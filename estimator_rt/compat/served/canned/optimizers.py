"""tf.estimator 2.15's `canned.optimizers`: an optimizer from a name, an
object or a callable, as its canned estimators took `optimizer`.

`get_optimizer_instance` gives a `tf.compat.v1.train` optimizer (the v1
estimators'), `get_optimizer_instance_v2` a Keras 2 legacy one
(`tf_keras.optimizers.legacy`, what `tf.keras.optimizers.legacy` was in
2.15; the TF2 estimators'). Both return an object they are given as it is.
The classes behind the names are estimator_rt's (canned/optimizers.py),
which its canned estimators train with.
"""

import inspect

import tensorflow as tf

from estimator_rt.estimator.canned import optimizers as optimizers_lib
from estimator_rt.core.errors import UserInputError

_OPTIMIZER_CLS_NAMES = optimizers_lib._v1_classes()  # pylint: disable=protected-access
# tf_keras loads on first use (see _names_v2).
_OPTIMIZER_CLS_NAMES_V2 = None

# 2.15's learning rate for a named optimizer whose class has no default.
_LEARNING_RATE = 0.05


def _names_v2():
  global _OPTIMIZER_CLS_NAMES_V2
  if _OPTIMIZER_CLS_NAMES_V2 is None:
    _OPTIMIZER_CLS_NAMES_V2 = optimizers_lib._legacy_classes()  # pylint: disable=protected-access
  return _OPTIMIZER_CLS_NAMES_V2


def _unsupported_name(opt, names) -> UserInputError:
  return UserInputError(
      f'Unsupported optimizer name: {opt}. Supported names are: '
      f'{tuple(sorted(names))}')


def get_optimizer_instance(opt, learning_rate=None):
  """A `tf.compat.v1.train.Optimizer`: `opt` itself, what the callable
  `opt` returns, or the class named `opt` ('Adagrad', 'Adam', 'Ftrl',
  'RMSProp', 'SGD') with `learning_rate`.

  Raises:
    ValueError (UserInputError): an unknown name, a name without a
      learning rate, or something that is not a v1 optimizer.
  """
  if isinstance(opt, str):
    if opt not in _OPTIMIZER_CLS_NAMES:
      raise _unsupported_name(opt, _OPTIMIZER_CLS_NAMES)
    if not learning_rate:
      raise UserInputError(
          'learning_rate must be specified when opt is string '
          f'(opt={opt!r}, learning_rate={learning_rate!r}).')
    return _OPTIMIZER_CLS_NAMES[opt](learning_rate=learning_rate)
  if callable(opt):
    opt = opt()
  if not isinstance(opt, tf.compat.v1.train.Optimizer):
    raise UserInputError(
        f'The given object is not an Optimizer instance. Given: {opt} (a '
        'v1 estimator trains with a tf.compat.v1.train optimizer).')
  return opt


def _optimizer_has_default_learning_rate(opt):
  """Whether class `opt`'s constructor gives `learning_rate` a default."""
  parameter = inspect.signature(opt.__init__).parameters.get('learning_rate')
  return (parameter is not None and
          parameter.default is not inspect.Parameter.empty)


def _is_new_keras_optimizer(opt) -> bool:
  """A Keras optimizer that is not a legacy one: Keras 2's new
  `tf_keras.optimizers.Optimizer`, or a Keras 3 one."""
  import keras  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  return isinstance(opt, (tf_keras.optimizers.Optimizer,
                          keras.optimizers.Optimizer)) and not isinstance(
                              opt, tf_keras.optimizers.legacy.Optimizer)


def get_optimizer_instance_v2(opt, learning_rate=None):
  """A Keras 2 legacy optimizer: `opt` itself, what the callable `opt`
  returns, or the class named `opt` with `learning_rate` (None: the
  class's default learning rate, or 0.05 if it has none).

  A new (non-legacy) Keras optimizer is turned into the legacy one of its
  class with its settings, with a warning, when executing eagerly; in a
  graph it is refused, as in 2.15.

  Raises:
    ValueError (UserInputError): an unknown name, a new Keras optimizer in
      a graph, or something that is not a Keras optimizer.
  """
  names = _names_v2()
  if isinstance(opt, str):
    if opt not in names:
      raise _unsupported_name(opt, names)
    cls = names[opt]
    if learning_rate:
      return cls(learning_rate=learning_rate)
    if _optimizer_has_default_learning_rate(cls):
      return cls()
    return cls(learning_rate=_LEARNING_RATE)
  if callable(opt):
    opt = opt()
  if _is_new_keras_optimizer(opt):
    if not tf.executing_eagerly():
      raise UserInputError(
          'Please set your optimizer as an instance of '
          '`tf.keras.optimizers.legacy.Optimizer`, e.g., '
          f'`tf.keras.optimizers.legacy.{type(opt).__name__}`.'
          f'Received optimizer type: {type(opt)}.')
    # Converted with one warning (or refused, for a class of no known name).
    return optimizers_lib.keras_legacy(opt)
  import tf_keras  # pylint: disable=g-import-not-at-top
  if not isinstance(opt, tf_keras.optimizers.legacy.Optimizer):
    raise UserInputError(
        'The given object is not a tf.keras.optimizers.Optimizer instance.'
        f' Given: {opt} (a TF2 canned estimator trains with a '
        'tf.keras.optimizers.legacy optimizer).')
  return opt
