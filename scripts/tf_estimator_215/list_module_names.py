r"""Lists every module-level name tf.estimator 2.15's own modules define.

    .venv-tf215/bin/python scripts/tf_estimator_215/list_module_names.py

For each module under `tensorflow_estimator.python.estimator` that imports
in a tf.estimator 2.15 environment (test files and the API's generated
`api` package aside: 79 modules), the names the module itself defines:
functions and classes whose `__module__` is that module, and plain
constants (str, int, float, bool, None-free tuples, lists, dicts,
frozensets), public and private. Modules and objects it imports from
elsewhere are left out: they belong to the module that defines them.

Each name is recorded with what tests/test_compat_inventory.py checks of the
name served here:

  - `kind`: 'function', 'class' or 'constant';
  - `signature`: for a function or a class, how it is called (a class: its
    constructor's parameters, `self` aside), as [name, kind, default]
    (default as its repr with memory addresses blanked, or None for none),
    or null where Python cannot tell;
  - `value`: for a constant, its JSON form (sets as sorted lists, tuples as
    lists) where it has one, else its repr under `repr`.

Written to tests/data/tf_estimator_215/module_names.json.
"""

import importlib
import inspect
import json
import os
import pkgutil
import re
import sys
import types

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
OUTPUT = os.path.join(_REPO_ROOT, 'tests', 'data', 'tf_estimator_215',
                      'module_names.json')
PACKAGE = 'tensorflow_estimator.python.estimator'
CONSTANTS = (str, int, float, bool, tuple, list, dict, frozenset)


def _skipped(module_name: str) -> bool:
  """Test files and the generated API package: not modules of 2.15's own
  code in the sense of the inventory."""
  return (module_name.endswith('_test') or '_test_' in module_name or
          '.testing' in module_name or module_name.endswith('test_util') or
          'testing_utils' in module_name or '.api.' in module_name or
          module_name.endswith('.api'))


# Memory addresses in a default's repr (`<function relu at 0x7f...>`).
_ADDRESS = re.compile(r' at 0x[0-9a-fA-F]+')


def signature_of(value):
  """How `value` is called: [[name, kind, default repr or None], ...], or
  None where Python cannot tell (a class: its constructor's, as
  `inspect.signature` gives it, without `self`)."""
  try:
    signature = inspect.signature(value)
  except (TypeError, ValueError):
    return None
  found = []
  for parameter in signature.parameters.values():
    default = (None if parameter.default is inspect.Parameter.empty else
               _ADDRESS.sub(' at 0x...', repr(parameter.default)))
    found.append([parameter.name, parameter.kind.name, default])
  return found


def _json_value(value):
  if isinstance(value, frozenset):
    return {'frozenset': sorted(_json_value(v) for v in value)}
  if isinstance(value, (tuple, list)):
    return [_json_value(v) for v in value]
  if isinstance(value, dict):
    return {str(k): _json_value(v) for k, v in value.items()}
  json.dumps(value)  # Raises for what JSON cannot hold.
  return value


def describe(module_name: str, name: str, value) -> dict:
  if isinstance(value, type):
    return {'kind': 'class', 'signature': signature_of(value)}
  if isinstance(value, types.FunctionType):
    return {'kind': 'function', 'signature': signature_of(value)}
  try:
    return {'kind': 'constant', 'value': _json_value(value)}
  except (TypeError, ValueError):
    return {'kind': 'constant', 'repr': repr(value)}


def module_names(module_name: str, module) -> dict:
  found = {}
  for name, value in vars(module).items():
    if name.startswith('__') or isinstance(value, types.ModuleType):
      continue
    if isinstance(value, (types.FunctionType, type)):
      if getattr(value, '__module__', None) == module_name:
        found[name] = describe(module_name, name, value)
    elif isinstance(value, CONSTANTS):
      found[name] = describe(module_name, name, value)
  return dict(sorted(found.items()))


def main() -> int:
  inventory = {}
  root = importlib.import_module(PACKAGE)
  for info in pkgutil.walk_packages(root.__path__, PACKAGE + '.'):
    if _skipped(info.name):
      continue
    try:
      module = importlib.import_module(info.name)
    except Exception as e:  # pylint: disable=broad-except
      print('does not import on 2.15:', info.name, type(e).__name__,
            file=sys.stderr)
      continue
    inventory[info.name] = module_names(info.name, module)
  with open(OUTPUT, 'w') as f:
    json.dump(inventory, f, indent=1, sort_keys=True)
    f.write('\n')
  print(len(inventory), 'modules,', sum(map(len, inventory.values())),
        'names ->', OUTPUT)
  return 0


if __name__ == '__main__':
  sys.exit(main())
