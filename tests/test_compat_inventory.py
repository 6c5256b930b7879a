"""Every module-level name tf.estimator 2.15's modules defined, served here.

The inventory (tests/data/tf_estimator_215/module_names.json) was made from
tf.estimator 2.15 itself by scripts/tf_estimator_215/list_module_names.py:
79 modules, 553 names (functions, classes and plain constants, public and
private). For every entry, under both of 2.15's module paths
(`tensorflow_estimator.python.estimator.X` and `tensorflow.python.estimator.X`):

  - the module imports and the name resolves;
  - a function or class is called as 2.15's was (`compatible_signature`):
    2.15's parameters, in order, with their names, kinds and defaults (a
    class: its constructor's); where 2.15 required a parameter, a default
    here is allowed, and parameters 2.15 did not have only as keyword-only
    ones with defaults (estimator_rt's own additions, which no 2.15 call
    passes);
  - a constant has 2.15's value.

What each name *does* is tested where its behaviour is (the served modules'
tests); this file checks that nothing of 2.15's surface is absent or shaped
differently. A name whose behaviour cannot exist here (TPU hardware) is
served as a refusal: it resolves, has 2.15's signature, and raises one clear
error when used (`REFUSED` below, each with its reason in the README).
"""

import importlib
import importlib.util
import inspect
import json
import os
import re

import pytest

import estimator_rt.compat

estimator_rt.compat.install()

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, 'data', 'tf_estimator_215',
                       'module_names.json')) as f:
  INVENTORY = json.load(f)

PACKAGE = 'tensorflow_estimator.python.estimator'
TF_PACKAGE = 'tensorflow.python.estimator'

# Names not served yet, by module: this list only shrinks (the test fails
# for a name listed here that is served, so that the list stays true).
NOT_SERVED_YET = {}


# Defaults kept different from 2.15's on purpose, each with its reason
# (README's Differences says the same): {(module, name): {parameter:
# (default here, why)}}.
DIFFERENT_DEFAULTS = {
    ('training', 'EvalSpec'): {
        'start_delay_secs': (
            '0', "2.15's 120 only delayed a separate evaluator task's first "
            'evaluation by two minutes (it waits for a checkpoint anyway); '
            "every distributed job's evaluator would start later for nothing"),
    },
}


def _with_our_defaults(module_name, name, signature):
  """2.15's `signature` with the defaults DIFFERENT_DEFAULTS keeps."""
  for package in (PACKAGE, TF_PACKAGE):
    if module_name.startswith(package + '.'):
      module_name = module_name[len(package) + 1:]
  ours = DIFFERENT_DEFAULTS.get((module_name, name))
  if not ours or signature is None:
    return signature
  return [[p, kind, ours[p][0] if p in ours else default]
          for p, kind, default in signature]


def _entries():
  for module_name, names in sorted(INVENTORY.items()):
    for name, entry in sorted(names.items()):
      yield module_name, name, entry


def _import(module_name):
  try:
    return importlib.import_module(module_name), None
  except Exception as e:  # pylint: disable=broad-except
    return None, f'{type(e).__name__}: {e}'


def _signature(value):
  from scripts.tf_estimator_215 import list_module_names  # pylint: disable=g-import-not-at-top
  return list_module_names.signature_of(value)


# A default that is a private sentinel (`_USE_DEFAULT = object()`): its
# repr tells nothing but that it is one.
_SENTINEL = '<object object at 0x...>'
# What 2.15's classes that define no constructor of their own show.
_NO_CONSTRUCTOR = ([['args', 'VAR_POSITIONAL', None],
                    ['kwargs', 'VAR_KEYWORD', None]],
                   [['self', 'POSITIONAL_ONLY', None],
                    ['args', 'VAR_POSITIONAL', None],
                    ['kwargs', 'VAR_KEYWORD', None]])
_LITERAL = re.compile(r"^(None|True|False|-?[0-9.e+-]+|'.*'|\".*\"|\(.*\)|"
                      r"\[.*\]|\{.*\})$")


def _same_default(here, then):
  if here is not None:
    # A served module is the module of 2.15's path (finder.py): a default
    # defined there (a class) names that path in 2.15's repr.
    here = here.replace("'estimator_rt.compat.served.", f"'{PACKAGE}.")
  if here == then or then is None:
    return True
  return then == _SENTINEL and here is not None and not _LITERAL.match(here)


def compatible_signature(here, then):
  """Why `here` (a signature as list_module_names.signature_of gives it)
  does not take every call 2.15's `then` took, or None."""
  if then in _NO_CONSTRUCTOR:
    return None
  if here is None:
    return 'no signature here'
  if len(here) < len(then):
    return f'2.15 has {len(then)} parameters, here {len(here)}'
  for (name, kind, default), (name_then, kind_then, default_then) in zip(
      here, then):
    if (name, kind) != (name_then, kind_then):
      return f'parameter {name} ({kind}) where 2.15 has {name_then} ({kind_then})'
    if not _same_default(default, default_then):
      return f'{name}={default} where 2.15 has {name}={default_then}'
  for name, kind, default in here[len(then):]:
    if kind != 'KEYWORD_ONLY' or default is None:
      return f'parameter {name} ({kind}, default {default}) 2.15 did not have'
  return None


# Constants whose 2.15 value said what the environment had: the value here
# must say what this environment has.
_ENVIRONMENT_CONSTANTS = {
    'HAS_PANDAS': lambda: importlib.util.find_spec('pandas') is not None,
}


def _problem(module_name, name, entry):
  """What is wrong with `name` as served under `module_name`, or None."""
  module, error = _import(module_name)
  if module is None:
    return f'the module does not import ({error})'
  if name not in vars(module) and not hasattr(module, name):
    return 'missing'
  value = getattr(module, name)
  if entry['kind'] in ('function', 'class'):
    if not callable(value):
      return f'not callable: {value!r}'
    if entry['signature'] is not None:
      why = compatible_signature(
          _signature(value),
          _with_our_defaults(module_name, name, entry['signature']))
      if why is not None:
        return f'signature: {why}'
    return None
  if name in _ENVIRONMENT_CONSTANTS:
    expected = _ENVIRONMENT_CONSTANTS[name]()
    return None if value == expected else f'{value!r} where this environment has {expected!r}'
  if 'value' in entry:
    from scripts.tf_estimator_215 import list_module_names  # pylint: disable=g-import-not-at-top
    try:
      served = list_module_names._json_value(value)  # pylint: disable=protected-access
    except (TypeError, ValueError):
      return f'value {value!r} != 2.15\'s {entry["value"]!r}'
    if served != entry['value']:
      return f'value {served!r} != 2.15\'s {entry["value"]!r}'
  return None


def test_the_inventory_is_2_15s_whole_surface():
  assert len(INVENTORY) == 79
  assert sum(map(len, INVENTORY.values())) == 553


def test_every_2_15_name_resolves_with_2_15s_shape_under_both_paths():
  problems = []
  stale = []
  for module_name, name, entry in _entries():
    waived = name in NOT_SERVED_YET.get(module_name[len(PACKAGE) + 1:], ())
    for path in (module_name, TF_PACKAGE + module_name[len(PACKAGE):]):
      problem = _problem(path, name, entry)
      if problem is not None and not waived:
        problems.append(f'{path}.{name}: {problem}')
      if problem is None and waived and path == module_name:
        stale.append(f'{module_name}.{name}')
  total = sum(map(len, INVENTORY.values()))
  waived = sum(map(len, NOT_SERVED_YET.values()))
  print(f'{total - waived} of {total} names of tf.estimator 2.15 served '
        f'with its shape; {waived} not yet')
  assert not problems, f'{len(problems)} problems:\n' + '\n'.join(problems)
  assert not stale, ('served now, remove from NOT_SERVED_YET:\n' +
                     '\n'.join(stale))


def test_each_different_default_differs_and_says_why():
  for (module_name, name), parameters in DIFFERENT_DEFAULTS.items():
    entry = INVENTORY[f'{PACKAGE}.{module_name}'][name]
    then = {p: default for p, _, default in entry['signature']}
    value = getattr(importlib.import_module(f'{PACKAGE}.{module_name}'), name)
    here = {p: default for p, _, default in _signature(value)}
    for parameter, (ours, why) in parameters.items():
      assert here[parameter] == ours != then[parameter], (name, parameter)
      assert len(why) > 40


def test_both_paths_are_one_module_object():
  for module_name in INVENTORY:
    module, _ = _import(module_name)
    if module is None:
      continue
    alias, _ = _import(TF_PACKAGE + module_name[len(PACKAGE):])
    assert alias is module, module_name


def refused_names():
  """The inventory's names served as a refusal (estimator_rt/compat/
  not_yet.py: the object carries its one-line reason as `not_yet`)."""
  found = {}
  for module_name, name, _ in _entries():
    module, _ = _import(module_name)
    value = getattr(module, name, None) if module is not None else None
    why = getattr(value, 'not_yet', None)
    if isinstance(why, str):
      found[f'{module_name}.{name}'] = why
  return found


def test_refused_names_stay_under_5_percent_and_each_says_why():
  refused = refused_names()
  print(f'{len(refused)} of 553 names refused:')
  for name, why in sorted(refused.items()):
    print(f'  {name}: {why}')
  assert len(refused) <= 0.05 * 553
  assert all(len(why) > 20 for why in refused.values()), refused
