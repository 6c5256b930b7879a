"""model_to_estimator's training where the model_fn applies the
optimizers itself (its train_op), rather than returning one Keras 3
optimizer for the runtime to apply:

  - a tf_keras model compiled with a TF1 optimizer
    (`tf.compat.v1.train.RMSPropOptimizer(...)`, which tf_keras wraps in a
    `TFOptimizer`). Keras 3 has no counterpart of the TF1 optimizers
    (tf.compat.v1.train's RMSProp, for one, starts its mean square at 1,
    Keras 3's at 0), so the estimator trains with the TF1 optimizer
    itself, as tf.estimator 2.15 did: a fresh one of the same class and
    hyperparameters on every model_fn call;
  - a tf_keras WideDeepModel compiled with two optimizers, one for its
    linear part and one for its DNN part (as its own train_step applies
    them).

The gradients of the loss are scaled by 1/replicas (as a TF1 optimizer's
`compute_gradients` scaled them; both TF1 and Keras optimizers sum them
across replicas). The optimizers' state is created by the runtime's build
call and saved with the model.
"""

import inspect
from typing import Any, Callable, Optional, Sequence, Tuple

import tensorflow as tf

from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import shorten

# Constructor arguments a TF1 optimizer keeps under another attribute than
# `_<argument>`.
_ATTRIBUTE_ALIASES = {'learning_rate': ('_lr',)}
# Arguments that do not change what the optimizer computes.
_IGNORED = {'self', 'use_locking', 'name'}


def wrapped_v1_optimizer(optimizer) -> Optional[tf.compat.v1.train.Optimizer]:
  """The TF1 optimizer a tf_keras `TFOptimizer` wraps, or None."""
  inner = getattr(optimizer, 'optimizer', None)
  if (type(optimizer).__name__ == 'TFOptimizer' and
      isinstance(inner, tf.compat.v1.train.Optimizer)):
    return inner
  return None


def v1_optimizer_factory(
    optimizer: tf.compat.v1.train.Optimizer, *,
    owner: str) -> Callable[[], tf.compat.v1.train.Optimizer]:
  """A function making fresh TF1 optimizers of `optimizer`'s class and
  constructor arguments (read now: TF1 optimizers have no get_config, and
  keep each argument as `_<argument>`).

  Args:
    optimizer: the TF1 optimizer the Keras model was compiled with.
    owner: the Keras model's name, for errors.

  Raises:
    UserInputError: an argument it does not keep as a Python value (a
      tensor learning rate), so that no copy of it can be made.
  """
  cls = type(optimizer)
  kwargs = {}
  for name, parameter in inspect.signature(cls.__init__).parameters.items():
    if name in _IGNORED or parameter.kind in (parameter.VAR_POSITIONAL,
                                              parameter.VAR_KEYWORD):
      continue
    for attribute in (f'_{name}',) + _ATTRIBUTE_ALIASES.get(name, ()):
      if hasattr(optimizer, attribute):
        value = getattr(optimizer, attribute)
        break
    else:
      raise UserInputError(
          f'keras_model={owner!r}: its TF1 optimizer {cls.__name__} does not '
          f'show its argument {name!r}, so model_to_estimator cannot make '
          'one like it; compile the model with a Keras optimizer.')
    if tf.is_tensor(value) or isinstance(value, tf.Variable):
      raise UserInputError(
          f'keras_model={owner!r}: its TF1 optimizer {cls.__name__} has '
          f'{name}={shorten(value)}, a tensor, which model_to_estimator '
          'cannot carry into its own graphs; give a Python number.')
    kwargs[name] = value
  use_locking = getattr(optimizer, '_use_locking', False)
  return lambda: cls(use_locking=use_locking, **kwargs)


def train_op(tape: tf.GradientTape, loss: tf.Tensor, parts: Sequence[
    Tuple[Any, Sequence[tf.Variable]]]) -> Any:
  """Applies each (optimizer, variables) of `parts` to the gradients of
  `loss` (recorded by `tape`) with respect to its variables; returns the
  update (a constant where the optimizers return nothing: run eagerly,
  the update already ran; traced, their updates are stateful ops of the
  step, which run).

  Raises:
    UserInputError: the loss depends on none of the variables.
  """
  context = tf.distribute.get_replica_context()
  replicas = context.num_replicas_in_sync if context is not None else 1
  scaled = loss / tf.cast(replicas, loss.dtype) if replicas > 1 else loss
  variables = [v for _, part in parts for v in part]
  grads = iter(tape.gradient(scaled, variables))
  updates, applied = [], 0
  for optimizer, part in parts:
    # part first: zip then takes no gradient past the part's last.
    pairs = [(g, v) for v, g in zip(part, grads) if g is not None]
    if pairs:
      applied += len(pairs)
      updates.append(optimizer.apply_gradients(pairs))
  if not applied:
    raise UserInputError(
        'model_to_estimator: the compiled loss depends on none of the Keras '
        f'model\'s {len(variables)} trainable variables.')
  ops = [u for u in updates if isinstance(u, tf.Operation)]
  return tf.group(*ops) if ops and not tf.executing_eagerly() else (
      tf.constant(True))
