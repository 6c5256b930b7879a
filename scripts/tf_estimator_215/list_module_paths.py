r"""Lists where tf.estimator 2.15's public objects live in its own package.

    .venv-tf215/bin/python scripts/tf_estimator_215/list_module_paths.py

Real programs import tf.estimator's modules by path
(`from tensorflow_estimator.python.estimator import model_fn as
model_fn_lib`, `...export import export_output`, `...canned import
dnn`). For every module under `tensorflow_estimator.python.estimator` this
records which of its attributes are objects of tf.estimator's public API
(by identity), and under which public name, into
estimator_rt/compat/module_paths.json; the compatibility layer serves those
modules with estimator_rt's objects of the same public names.

Test code that 2.15 shipped in its package (its test files, its testing
modules such as canned/dnn_testing_utils.py, and canned/v1, which holds
nothing else; test_code.py says which) is left out: those module paths are
not the product's to serve.
"""

import importlib
import importlib.util
import json
import os
import pkgutil
import sys
import types

import test_code

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
OUTPUT = os.path.join(_REPO_ROOT, 'estimator_rt', 'compat',
                      'module_paths.json')
PACKAGE = 'tensorflow_estimator.python.estimator'


def _public_objects(tf):
  """id(object) -> its public name ('tf.estimator.X' preferred)."""
  found = {}
  for root in ('tf.compat.v1.estimator', 'tf.estimator'):
    module = tf
    for part in root.split('.')[1:]:
      module = getattr(module, part)
    stack = [(root, module)]
    while stack:
      prefix, namespace = stack.pop()
      for name in dir(namespace):
        if name.startswith('_'):
          continue
        value = getattr(namespace, name)
        if isinstance(value, types.ModuleType):
          stack.append((f'{prefix}.{name}', value))
        else:
          found[id(value)] = f'{prefix}.{name}'
  return found


def _is_test_code(info: pkgutil.ModuleInfo) -> bool:
  """Whether the module `info` of the installed package is test code."""
  origin = importlib.util.find_spec(info.name).origin
  if info.ispkg:
    return test_code.is_test_only_package(os.path.dirname(origin))
  return test_code.is_test_code(origin)


def main():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if tuple(int(p) for p in tf.__version__.split('.')[:2]) >= (2, 16):
    sys.exit('error: run this with .venv-tf215/bin/python.')
  public = _public_objects(tf)
  package = importlib.import_module(PACKAGE)
  modules = {}
  for info in pkgutil.walk_packages(package.__path__, PACKAGE + '.'):
    if '.api.' in info.name or _is_test_code(info):
      continue
    try:
      module = importlib.import_module(info.name)
    except Exception:  # pylint: disable=broad-except
      continue
    names = {name: public[id(getattr(module, name))]
             for name in dir(module)
             if not name.startswith('__') and
             id(getattr(module, name)) in public}
    modules[info.name] = names
  with open(OUTPUT, 'w') as f:
    json.dump(modules, f, indent=1, sort_keys=True)
  print(f'{len(modules)} modules, '
        f'{sum(len(v) for v in modules.values())} names -> {OUTPUT}')


if __name__ == '__main__':
  main()
