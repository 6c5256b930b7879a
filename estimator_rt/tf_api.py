"""Adding names to TensorFlow's public API modules.

`tf.compat.v1` reached as an attribute and the module that `import
tensorflow.compat.v1` gives can be two objects, and either may be one of
TensorFlow's lazy `TFModuleWrapper`s, which read the module inside them. A
name meant for "tf.compat.v1" goes on all of them.
"""

import importlib
from typing import Any

import tensorflow as tf


def _objects_of(path: str):
  """Every object that stands for API module `path` ('tensorflow',
  'tensorflow.compat.v1', ...)."""
  found = [importlib.import_module(path)]
  attribute = tf
  for part in path.split('.')[1:]:
    attribute = getattr(attribute, part)
  found.append(attribute)
  for module in list(found):
    wrapped = getattr(module, '_tfmw_wrapped_module', None)
    if wrapped is not None:
      found.append(wrapped)
  unique = []
  for module in found:
    if all(module is not seen for seen in unique):
      unique.append(module)
  return unique


def set_attribute(path: str, name: str, value: Any) -> None:
  """Makes `<path>.<name>` be `value` however the module is reached."""
  for module in _objects_of(path):
    setattr(module, name, value)


def get_attribute(path: str, name: str) -> Any:
  """`<path>.<name>` as `import <path>` gives it."""
  return getattr(importlib.import_module(path), name)
