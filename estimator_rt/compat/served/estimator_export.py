"""tf.estimator 2.15's `estimator_export` module: its export decorator.

Libraries built on tf.estimator decorated their classes and functions with
`estimator_export('estimator.Name')`, which marked them deprecated ("Use
tf.keras instead.") and recorded their API names. The decorator here does
both: the deprecation warning (TensorFlow's, once per symbol) and the names
in 2.15's attributes (`_estimator_api_names`, `_estimator_api_names_v1`).
TensorFlow 2.16 removed the `estimator` API from its `tf_export` module, so
the names are no longer in TensorFlow's registry: `tf_export.get_v1_names`
does not list them (it reads TensorFlow's and Keras's names only).
"""

import sys
from typing import Optional, Sequence, TypeVar

from tensorflow.python.util import deprecation
from tensorflow.python.util import tf_decorator

from estimator_rt.core.errors import UserInputError

T = TypeVar('T')

_API_NAME = 'estimator'
_NAMES = '_estimator_api_names'
_NAMES_V1 = '_estimator_api_names_v1'
_CONSTANTS = '_estimator_api_constants'
_CONSTANTS_V1 = '_estimator_api_constants_v1'


class estimator_export:  # pylint: disable=invalid-name
  """Exports a symbol under `estimator.*` names (2.15's decorator).

  Args:
    *args: its API names, dotted, under `estimator.` (the first is the
      canonical one).
    v1: its names in TensorFlow 1's API; by default `args`.

  Raises:
    ValueError: a name is not under `estimator.`.
  """

  def __init__(self, *args: str, v1: Optional[Sequence[str]] = None):
    self._names = args
    self._names_v1 = v1 if v1 is not None else args
    outside = [name for name in (*self._names, *self._names_v1)
               if not name.startswith(_API_NAME)]
    if outside:
      raise UserInputError(
          'Can only export symbols under package name of component: '
          f'{outside} are not under {_API_NAME!r}.')

  def __call__(self, func: T) -> T:
    """Marks `func` (a function or a class) deprecated and records its
    names; returns it."""
    func = deprecation.deprecated(None, 'Use tf.keras instead.')(func)
    _, undecorated = tf_decorator.unwrap(func)
    setattr(undecorated, _NAMES, self._names)
    setattr(undecorated, _NAMES_V1, self._names_v1)
    return func

  def export_constant(self, module_name: str, name: str) -> None:
    """Records constant `name` of module `module_name` under this export's
    names (in the module's `_estimator_api_constants` lists)."""
    module = sys.modules[module_name]
    for attribute, names in ((_CONSTANTS, self._names),
                             (_CONSTANTS_V1, self._names_v1)):
      if not hasattr(module, attribute):
        setattr(module, attribute, [])
      getattr(module, attribute).append((names, name))
