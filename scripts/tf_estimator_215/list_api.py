r"""Lists tf.estimator 2.15's public API into tests/data/tf_estimator_215/api.json.

    scripts/tf_estimator_215/make_venv.sh            # once: .venv-tf215
    .venv-tf215/bin/python scripts/tf_estimator_215/list_api.py

Walks `tf.estimator`, `tf.compat.v1.estimator` and `tf.compat.v2.estimator`
(and `tf.keras.estimator`) with `dir()`, into every submodule, and records
each public name: what it is (module, class, function, constant) and, for
what can be called, its parameters in order (name, kind, whether it has a
default, and the default's repr when it is a plain value). Classes also get
their public methods' and properties' names and the methods' parameters.
The tests check estimator_rt's compatibility layer against this file:
every name resolves, every callable takes the same parameters in the same
order.

Refuses to run on TensorFlow 2.16 or later, which has no tf.estimator.
"""

import inspect
import json
import os
import sys
import types

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
OUTPUT = os.path.join(_REPO_ROOT, 'tests', 'data', 'tf_estimator_215',
                      'api.json')
ROOTS = ('tf.estimator', 'tf.compat.v1.estimator', 'tf.compat.v2.estimator',
         'tf.keras.estimator')
_PLAIN = (bool, int, float, str, type(None))


def _default(value):
  if isinstance(value, _PLAIN):
    return value
  if isinstance(value, (tuple, list)) and all(
      isinstance(v, _PLAIN) for v in value):
    return list(value)
  return repr(type(value).__name__)


def _parameters(fn):
  try:
    signature = inspect.signature(fn)
  except (TypeError, ValueError):
    return None
  found = []
  for parameter in signature.parameters.values():
    entry = {'name': parameter.name, 'kind': parameter.kind.name}
    if parameter.default is not inspect.Parameter.empty:
      entry['default'] = _default(parameter.default)
    found.append(entry)
  return found


def _class_entry(cls):
  methods, properties = {}, []
  for name in sorted(dir(cls)):
    if name.startswith('_') and name not in ('__init__', '__new__'):
      continue
    try:
      attribute = inspect.getattr_static(cls, name)
    except AttributeError:
      continue
    if isinstance(attribute, property):
      properties.append(name)
    elif isinstance(attribute, (staticmethod, classmethod)):
      parameters = _parameters(getattr(cls, name))
      if name == '__new__' and parameters and parameters[0]['name'] == 'cls':
        parameters = parameters[1:]
      if name != '__new__' or attribute is cls.__dict__.get('__new__'):
        methods[name] = parameters
    elif inspect.isfunction(attribute):
      parameters = _parameters(attribute)
      if parameters and parameters[0]['name'] in ('self', 'cls', '_cls'):
        parameters = parameters[1:]
      methods[name] = parameters
  if methods.get('__init__') and [p['name'] for p in methods['__init__']] == [
      'args', 'kwargs']:
    del methods['__init__']  # object's: the signature is __new__'s.
  return {'kind': 'class', 'methods': methods, 'properties': properties,
          'bases': [b.__name__ for b in cls.__mro__[1:-1]]}


def _entry(value):
  if isinstance(value, types.ModuleType):
    return {'kind': 'module'}
  if inspect.isclass(value):
    return _class_entry(value)
  if callable(value):
    return {'kind': 'function', 'parameters': _parameters(value)}
  return {'kind': 'constant', 'value': _default(value)}


def _walk(prefix, module, names, seen):
  for name in sorted(dir(module)):
    if name.startswith('_'):
      continue
    value = getattr(module, name)
    path = f'{prefix}.{name}'
    names[path] = _entry(value)
    if isinstance(value, types.ModuleType) and id(value) not in seen:
      seen.add(id(value))
      _walk(path, value, names, seen)


def main():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  major, minor = (int(p) for p in tf.__version__.split('.')[:2])
  if (major, minor) >= (2, 16):
    sys.exit(f'error: TensorFlow {tf.__version__} has no tf.estimator; run '
             'this with .venv-tf215/bin/python.')
  names = {}
  for root in ROOTS:
    module = tf
    for part in root.split('.')[1:]:
      module = getattr(module, part)
    names[root] = {'kind': 'module'}
    _walk(root, module, names, set())
  with open(OUTPUT, 'w') as f:
    json.dump({'tensorflow': tf.__version__, 'names': names}, f, indent=1,
              sort_keys=True)
  counts = {root: sum(1 for n in names if n.startswith(root + '.'))
            for root in ROOTS}
  print(f'{len(names)} names ({counts}) -> {OUTPUT}')


if __name__ == '__main__':
  main()
