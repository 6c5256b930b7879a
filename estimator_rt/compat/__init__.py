"""tf.estimator for TensorFlow 2.16+: its names and module paths, resolved
to estimator_rt.

    import estimator_rt.compat
    estimator_rt.compat.install()
    import tensorflow as tf
    tf.estimator.Estimator(...)          # estimator_rt.Estimator

or, for a program left as it is:

    python -m estimator_rt.compat PROGRAM.py [ARGS...]

`install()` (explicit, idempotent) makes these resolve to estimator_rt's
objects:

  - `tf.estimator`, `tf.compat.v2.estimator` and `tf.compat.v1.estimator`
    (and their nestings, `tf.compat.v2.compat.v1.estimator`, ...),
    with every one of tf.estimator 2.15's public names (see
    namespaces.py; the few that estimator_rt does not support, the RNN
    estimators, resolve to placeholders that refuse in one
    line);
  - `import tensorflow_estimator` and the module paths under
    `tensorflow_estimator.python.estimator` that hold public objects in
    tf.estimator 2.15 (`estimator`, `run_config`, `model_fn`, `training`,
    `mode_keys`, `exporter`, `export.export`, `export.export_output`,
    `hooks.*`, `canned.*`, `head.*`, `tpu.*`, ...; module_paths.json,
    made from tf.estimator 2.15 by
    scripts/tf_estimator_215/list_module_paths.py). Such a module holds the
    public names it held in 2.15; asking it for anything else (a private
    helper) raises AttributeError naming the module and the name. A module
    path that held no public object (a private module, or the test code that
    2.15 shipped in its package, such as canned/dnn_testing_utils) is not
    served, not even as an empty module: importing it raises
    ModuleNotFoundError, unless a finder placed ahead of this one on
    sys.meta_path serves it (as the runner of 2.15's own tests,
    scripts/tf_estimator_215/run_own_tests.py, does for test code).

`python -m estimator_rt.compat --check DIR...` tells, without running it,
what of this a codebase uses and whether each use runs here (check.py).

Where it stops: private names of tensorflow_estimator, and the parts of the
API that estimator_rt refuses in one line (see the README's "Moving from
tf.estimator").
"""

import importlib.abc
import importlib.machinery
import json
import os
import sys
import types
from typing import Dict, Optional, Set

_ROOT = 'tensorflow_estimator'
_PACKAGE = 'tensorflow_estimator.python.estimator'
_installed = False


# Module paths whose non-public names real code reads too, served by
# estimator_rt's objects ('module:attribute'): the heads' key classes, and
# what tf_keras's tf.keras.estimator.model_to_estimator calls.
_EXTRA_NAMES = {
    f'{_PACKAGE}.canned.metric_keys': {
        'MetricKeys': 'estimator_rt.head.keys:MetricKeys'},
    f'{_PACKAGE}.canned.prediction_keys': {
        'PredictionKeys': 'estimator_rt.head.keys:PredictionKeys'},
    f'{_PACKAGE}.keras_lib': {
        'model_to_estimator':
            'estimator_rt.keras_estimator:model_to_estimator_for_compat'},
}


def _extra(module_name: str) -> Dict[str, object]:
  import importlib  # pylint: disable=g-import-not-at-top
  found = {}
  for name, target in _EXTRA_NAMES.get(module_name, {}).items():
    module, attribute = target.split(':')
    found[name] = getattr(importlib.import_module(module), attribute)
  return found


def _load_paths() -> Dict[str, Dict[str, str]]:
  with open(os.path.join(os.path.dirname(__file__),
                         'module_paths.json')) as f:
    return json.load(f)


def resolve(public_name: str):
  """The object of tf.estimator 2.15's public name `public_name` (e.g.
  'tf.estimator.export.PredictOutput', 'tf.compat.v1.estimator.tpu.
  TPUEstimator'), as installed."""
  from estimator_rt.compat import namespaces  # pylint: disable=g-import-not-at-top
  for prefix, namespace in (('tf.compat.v1.estimator.', namespaces.v1),
                            ('tf.compat.v2.estimator.', namespaces.v2),
                            ('tf.estimator.', namespaces.v2)):
    if public_name.startswith(prefix):
      value = namespace()
      for part in public_name[len(prefix):].split('.'):
        value = getattr(value, part)
      return value
  raise KeyError(public_name)


class _ServedModule(types.ModuleType):
  """A tensorflow_estimator module path served by estimator_rt: its public
  names, and a one-line AttributeError for anything else."""

  def __getattr__(self, name: str):
    if name.startswith('__'):
      raise AttributeError(name)
    raise AttributeError(
        f'{self.__name__}.{name} is not provided by estimator_rt: only the '
        'names that tf.estimator 2.15 made public are (see estimator_rt/'
        'compat/__init__.py); use the public tf.estimator name.')


def _implemented(paths: Dict[str, Dict[str, str]]) -> Set[str]:
  """The module paths of the table that hold at least one name here."""
  return {path for path, names in paths.items()
          if names or path in _EXTRA_NAMES}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
  """Imports `tensorflow_estimator` and its module paths from the table.

  It serves the module paths it implements (those holding at least one of
  2.15's public names, or a name of _EXTRA_NAMES) and the packages on the way
  to them, and nothing else: a path that held no public object would only be
  an empty stand-in, hiding that it is not implemented until a name is read
  from it, and hiding it from a finder placed ahead of this one to serve it
  (2.15's testing modules, for its own tests).
  """

  def __init__(self, paths: Dict[str, Dict[str, str]]):
    self._paths = paths
    self._modules = _implemented(paths)
    self._packages = {_ROOT}
    for path in self._modules:
      parts = path.split('.')
      self._packages.update('.'.join(parts[:i]) for i in range(1, len(parts)))

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname != _ROOT and not fullname.startswith(_ROOT + '.'):
      return None
    if fullname not in self._modules and fullname not in self._packages:
      # Raised rather than returning None: the path finders would otherwise
      # import an installed tensorflow_estimator's module (made for
      # TensorFlow 2.15) in its place. Its `name` is left unset: the import
      # system drops a ModuleNotFoundError named after the module that
      # `from package import module` asked for, and says only "cannot import
      # name 'module' ... (unknown location)".
      raise ModuleNotFoundError(
          f'{fullname} is not provided by estimator_rt: only the module '
          'paths that held tf.estimator 2.15\'s public objects are (not its '
          'private modules, nor the test code it shipped). Import the public '
          'tf.estimator names instead.')
    return importlib.machinery.ModuleSpec(
        fullname, self, is_package=fullname in self._packages)

  def create_module(self, spec):
    module = _ServedModule(spec.name)
    if spec.name in self._packages:
      # No directory: its submodules are the ones this finder serves (or a
      # finder ahead of it), never files of an installed tensorflow_estimator.
      module.__path__ = []
    return module

  def exec_module(self, module):
    from estimator_rt.compat import namespaces  # pylint: disable=g-import-not-at-top
    if module.__name__ == _ROOT:
      module.estimator = namespaces.v2()
    for name, public in self._paths.get(module.__name__, {}).items():
      setattr(module, name, resolve(public))
    for name, value in _extra(module.__name__).items():
      setattr(module, name, value)


def _finder() -> Optional[_Finder]:
  for finder in sys.meta_path:
    if isinstance(finder, _Finder):
      return finder
  return None


def install() -> None:
  """Makes tf.estimator's names and module paths resolve to estimator_rt
  (see the module docstring). Idempotent; imports TensorFlow."""
  global _installed
  if _installed:
    return
  from estimator_rt import tf_api  # pylint: disable=g-import-not-at-top
  from estimator_rt.compat import namespaces  # pylint: disable=g-import-not-at-top
  if 'tensorflow_estimator' in sys.modules and _finder() is None:
    raise ImportError(
        'estimator_rt.compat.install(): the real tensorflow_estimator is '
        'already imported; install() must come first (or run the program '
        'with python -m estimator_rt.compat).')
  v1, v2 = namespaces.v1(), namespaces.v2()
  # TensorFlow nests its compat namespaces (tf.compat.v2.compat.v1 is a
  # module of its own); 2.15 had `estimator` in each.
  for path, namespace in (('tensorflow', v2), ('tensorflow.compat.v2', v2),
                          ('tensorflow.compat.v1', v1),
                          ('tensorflow.compat.v2.compat.v1', v1),
                          ('tensorflow.compat.v2.compat.v2', v2),
                          ('tensorflow.compat.v1.compat.v1', v1),
                          ('tensorflow.compat.v1.compat.v2', v2)):
    tf_api.set_attribute(path, 'estimator', namespace)
    sys.modules[f'{path}.estimator'] = namespace
  # Ahead of the path finders: an installed tensorflow_estimator package
  # (made for TensorFlow 2.15) must not be imported.
  sys.meta_path.insert(0, _Finder(_load_paths()))
  _installed = True


def is_installed() -> bool:
  return _installed
