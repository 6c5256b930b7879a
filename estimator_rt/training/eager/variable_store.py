"""One set of variables shared by every call of a `model_fn`.

The runtime calls `model_fn` once eagerly (the *build call*) to create the
variables, then again inside each compiled function. Keras 3 cannot create
variables inside a traced function under a distribution strategy, and a
model_fn may build a fresh `keras.Sequential` on every call, so later calls
must not create anything: a `tf.variable_creator_scope` hands the build
call's variables back, in creation order, to whatever asks for a new one.
"""

import contextlib
import sys
from typing import Callable, Dict, Iterable, List, Set

import keras
import tensorflow as tf

from estimator_rt.core.errors import ModelFnError


def _describe(name, shape, dtype) -> str:
  shape = 'unknown shape' if shape is None else f'shape {tuple(shape)}'
  dtype = getattr(dtype, 'name', dtype)
  return f'{name!r} with {shape} {dtype}'


def _keras_variable_making(initial_value):
  """The Keras 3 variable whose `tf.Variable` `initial_value` makes, if it
  is Keras's `lambda: initializer(self._shape, dtype=self._dtype)`: that
  variable knows the shape already, and asking it costs nothing, where
  calling the initializer builds its ops (milliseconds per variable, in
  every trace)."""
  for cell in getattr(initial_value, '__closure__', None) or ():
    try:
      held = cell.cell_contents
    except ValueError:  # An empty cell.
      continue
    if isinstance(held, keras.Variable):
      return held
  return None


def _requested_shape_dtype(kwargs):
  """Shape and dtype a `tf.Variable(...)` call asks for, where known."""
  shape = kwargs.get('shape')
  dtype = kwargs.get('dtype')
  value = kwargs.get('initial_value')
  if callable(value) and shape is None:
    owner = _keras_variable_making(value)
    if owner is not None:
      return tf.TensorShape(owner.shape), tf.as_dtype(owner.dtype).base_dtype
    # Another initializer function: calling it is the one way to learn the
    # shape. Call it in a scratch graph: in the traced step its random ops
    # would be built into every step.
    try:
      with tf.Graph().as_default():
        probe = value()
        shape, dtype = probe.shape, dtype or probe.dtype
    except Exception:  # pylint: disable=broad-except
      pass  # An initializer that only works in its own context: unchecked.
    value = None
  elif callable(value):
    value = None
  if value is not None and shape is None:
    try:
      value = tf.convert_to_tensor(value, dtype_hint=dtype)
      shape = value.shape
      dtype = dtype or value.dtype
    except (TypeError, ValueError):
      pass
  if dtype is not None:
    dtype = tf.as_dtype(dtype).base_dtype
  return (None if shape is None else tf.TensorShape(shape)), dtype


def _made_by_an_optimizer() -> bool:
  """Whether the variable being created is a Keras optimizer's: one of its
  own methods (its constructor, `build`, `add_variable`) is on the stack.
  A Keras 3 optimizer creates its step count and learning rate when
  constructed, so a model_fn that makes one in every mode (as tf.estimator's
  users made theirs) creates them in EVAL and PREDICT too, where no spec
  names the optimizer."""
  frame = sys._getframe(2)  # pylint: disable=protected-access
  while frame is not None:
    caller = frame.f_locals.get('self')
    if isinstance(caller, keras.optimizers.Optimizer):
      return True
    frame = frame.f_back
  return False


class VariableStore:
  """Records the build call's variables and hands them to later calls.

  Use `recording()` around the build call and `reusing()` around every
  later call. A later call that asks for a variable the build call did not
  create, or one of another shape or dtype, fails with a `ModelFnError`
  naming the first mismatching variable.
  """

  def __init__(self, *, owner: str = 'model_fn'):
    self._owner = owner
    self._variables: List[tf.Variable] = []
    self._snapshots: Dict[int, tf.Tensor] = {}
    self._optimizer_made: Set[int] = set()  # Noted when asked (recording).

  @property
  def variables(self) -> List[tf.Variable]:
    """Every variable the build call created, in creation order."""
    return list(self._variables)

  def made_by_an_optimizer(self, variable: tf.Variable) -> bool:
    """Whether a Keras optimizer created `variable` in a build call
    recorded with `note_optimizer_variables`."""
    return id(variable) in self._optimizer_made

  @contextlib.contextmanager
  def recording(self, *, snapshot: Callable[[tf.Variable], bool] = None,
                note_optimizer_variables: bool = False):
    """Records variables created inside; optionally remembers their values.

    Args:
      snapshot: which variables to remember the value of right after
        creation, so that `reset` can put it back (a TRAIN build call may
        step an optimizer in its train_op or update batch-norm statistics;
        evaluation-local state must start fresh for each evaluation).
      note_optimizer_variables: note which variables a Keras optimizer
        creates (`made_by_an_optimizer`); this walks the call stack at
        every creation, so only the modes that ask pay for it.
    """

    def creator(next_creator, **kwargs):
      variable = next_creator(**kwargs)
      self._variables.append(variable)
      if note_optimizer_variables and _made_by_an_optimizer():
        self._optimizer_made.add(id(variable))
      if snapshot is not None and snapshot(variable):
        self._snapshots[id(variable)] = tf.identity(variable.read_value())
      return variable

    with tf.variable_creator_scope(creator):
      yield

  def reset(self, variables: Iterable[tf.Variable]) -> None:
    """Sets `variables` back to their values at creation (if remembered)."""
    for variable in variables:
      value = self._snapshots.get(id(variable))
      if value is not None:
        variable.assign(value)

  def forget_snapshots(self) -> None:
    """Frees the remembered values (they can be as large as the model)."""
    self._snapshots = {}

  @contextlib.contextmanager
  def reusing(self):
    """Hands back recorded variables, in order, instead of creating new ones.

    Each entry gets its own cursor, so replicas calling the model_fn on
    their own threads do not disturb each other.
    """
    cursor = [0]

    def creator(next_creator, **kwargs):
      del next_creator  # Never create: that is the point.
      index = cursor[0]
      name = kwargs.get('name') or '<unnamed>'
      shape, dtype = _requested_shape_dtype(kwargs)
      if index >= len(self._variables):
        raise ModelFnError(
            f'{self._owner} creates more variables than on its first call: '
            f'variable #{index} {_describe(name, shape, dtype)} is new (the '
            f'first call created {len(self._variables)}). A model_fn must '
            'create the same variables, in the same order, on every call.')
      variable = self._variables[index]
      same_shape = shape is None or shape.is_compatible_with(variable.shape)
      same_dtype = dtype is None or dtype == variable.dtype.base_dtype
      if not (same_shape and same_dtype):
        raise ModelFnError(
            f'{self._owner} creates different variables than on its first '
            f'call: variable #{index} is {_describe(name, shape, dtype)} now '
            f'but was {_describe(variable.name, variable.shape, variable.dtype)}'
            '. A model_fn must create the same variables, in the same order, '
            'on every call.')
      cursor[0] += 1
      return variable

    with tf.variable_creator_scope(creator):
      yield
