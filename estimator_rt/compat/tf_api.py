"""Adding names to TensorFlow's public API modules.

`tf.compat.v1` reached as an attribute and the module that `import
tensorflow.compat.v1` gives can be two objects, and either may be one of
TensorFlow's lazy `TFModuleWrapper`s, which read the module inside them. A
name meant for "tf.compat.v1" goes on all of them.
"""

import importlib
from typing import Any

from estimator_rt.compat import startup


def _objects_of(path: str):
  """Every object that stands for API module `path` ('tensorflow',
  'tensorflow.compat.v1', ...): the import hook's rule (it puts stand-ins
  for `estimator` there before estimator_rt is imported)."""
  return startup.api_module_objects(path)


def set_attribute(path: str, name: str, value: Any) -> None:
  """Makes `<path>.<name>` be `value` however the module is reached."""
  for module in _objects_of(path):
    setattr(module, name, value)


def get_attribute(path: str, name: str) -> Any:
  """`<path>.<name>` as `import <path>` gives it."""
  return getattr(importlib.import_module(path), name)
