"""tf.estimator 2.15's module paths, served by estimator_rt.

2.15's modules lived under `tensorflow_estimator.python.estimator` and, in
TensorFlow <= 2.15, under `tensorflow.python.estimator` too (DeepCTR and
EasyRec import them from there). `Finder`, placed first on `sys.meta_path`
by `install()`, serves both: the two paths of one module are one module
object, as in 2.15.

What a path holds, in order:

  - a *served module*, where there is one: the module of the same relative
    path under `estimator_rt.compat.served` (`served/run_config.py` for
    `tensorflow_estimator.python.estimator.run_config`), which defines the
    names 2.15's module had, private ones included, over estimator_rt's
    objects. The path *is* that module object, so patching a name on it
    (as tests and libraries do) changes what its functions see. Packages
    are never served modules (`from package import module` looks the
    module up by the package's own name): a directory under `served`
    makes its path a package, holding its served modules;
  - otherwise, the public names 2.15's module held (module_paths.json, made
    from tf.estimator 2.15 by scripts/tf_estimator_215/
    list_module_paths.py), resolved to estimator_rt's objects, and a
    one-line AttributeError for any other name;
  - a served module also gets those public names when it does not define
    them itself, and the same one-line AttributeError.

A path that is none of these (a private module not served yet, or the test
code 2.15 shipped in its package) is not served, not even as an empty
module: importing it raises ModuleNotFoundError, unless a finder placed
ahead of this one serves it (as the runner of 2.15's own tests,
scripts/tf_estimator_215/run_own_tests.py, does for test code).
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import types
from typing import Dict, Optional, Set

ROOT = 'tensorflow_estimator'
PACKAGE = 'tensorflow_estimator.python.estimator'
# TensorFlow <= 2.15 served the same modules here.
TF_PACKAGE = 'tensorflow.python.estimator'
_SERVED = 'estimator_rt.compat.served'
# TensorFlow modules that TensorFlow <= 2.15 shipped for tf.estimator and
# 2.16 removed with it (tf.estimator programs and 2.15's tests import
# them), served by estimator_rt's module of that name.
REMOVED_TF_MODULES = {
    'tensorflow.python.distribute.estimator_training':
        'estimator_rt.compat.removed_tf.estimator_training',
    'tensorflow.python.tpu.tpu_embedding':
        'estimator_rt.compat.removed_tf.tpu_embedding',
}

# Module paths whose non-public names real code reads too, served by
# estimator_rt's objects ('module:attribute'): the heads' key classes.
_EXTRA_NAMES = {
    f'{PACKAGE}.canned.metric_keys': {
        'MetricKeys': 'estimator_rt.head.keys:MetricKeys'},
    f'{PACKAGE}.canned.prediction_keys': {
        'PredictionKeys': 'estimator_rt.head.keys:PredictionKeys'},
    # The spec a head's _create_tpu_estimator_spec returns (2.15's base of
    # TPUEstimatorSpec; estimator_rt's TPUEstimatorSpec has its fields and
    # as_estimator_spec).
    f'{PACKAGE}.model_fn': {
        '_TPUEstimatorSpec': 'estimator_rt.tpu:TPUEstimatorSpec'},
}


def load_paths() -> Dict[str, Dict[str, str]]:
  """module path -> {name: its tf.estimator 2.15 public name}."""
  with open(os.path.join(os.path.dirname(__file__),
                         'module_paths.json')) as f:
    return json.load(f)


def _extra(module_name: str) -> Dict[str, object]:
  found = {}
  for name, target in _EXTRA_NAMES.get(module_name, {}).items():
    module, attribute = target.split(':')
    found[name] = getattr(importlib.import_module(module), attribute)
  return found


def canonical(fullname: str) -> Optional[str]:
  """`fullname` as a `tensorflow_estimator...` path (its
  `tensorflow.python.estimator...` alias translated), or None if it is
  neither."""
  if fullname == ROOT or fullname.startswith(ROOT + '.'):
    return fullname
  if fullname == TF_PACKAGE or fullname.startswith(TF_PACKAGE + '.'):
    return PACKAGE + fullname[len(TF_PACKAGE):]
  return None


def _served_spec(path: str):
  """The spec of the estimator_rt.compat.served module (or package) of
  canonical `path`, or None."""
  if path != PACKAGE and not path.startswith(PACKAGE + '.'):
    return None
  try:
    return importlib.util.find_spec(_SERVED + path[len(PACKAGE):])
  except ModuleNotFoundError:  # A package on the way is not served.
    return None


def served_module_name(path: str) -> Optional[str]:
  """The estimator_rt.compat.served module serving canonical `path`, if it
  is a module (not a package) there."""
  spec = _served_spec(path)
  if spec is None or spec.submodule_search_locations is not None:
    return None
  return spec.name


def _is_served_package(path: str) -> bool:
  spec = _served_spec(path)
  return spec is not None and spec.submodule_search_locations is not None


def missing_name(module_path: str, name: str) -> AttributeError:
  """The one-line error for a name a served path does not have."""
  return AttributeError(
      f'{module_path}.{name} is not provided by estimator_rt: it serves the '
      'names of tf.estimator 2.15 it implements (see estimator_rt/compat/'
      'finder.py); use the public tf.estimator name, or run `python -m '
      'estimator_rt.compat --check` on your code to see what is served.')


class _TableModule(types.ModuleType):
  """A module path served from the table: its public names, and a
  one-line AttributeError for anything else."""

  def __getattr__(self, name: str):
    if name.startswith('__'):
      raise AttributeError(name)
    raise missing_name(self.__name__, name)


def _module_getattr(module_path: str):
  """A PEP 562 `__getattr__` for a served module, failing in one line."""

  def __getattr__(name):  # pylint: disable=invalid-name
    if name.startswith('__'):
      raise AttributeError(name)
    raise missing_name(module_path, name)

  return __getattr__


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
  """Imports `tensorflow_estimator`, `tensorflow.python.estimator` and
  the module paths under them (see the module docstring)."""

  def __init__(self, paths: Dict[str, Dict[str, str]]):
    self._paths = paths
    self._modules: Set[str] = {
        path for path, names in paths.items() if names or path in _EXTRA_NAMES}
    self._packages = {ROOT}
    for path in self._modules:
      parts = path.split('.')
      self._packages.update('.'.join(parts[:i]) for i in range(1, len(parts)))

  def _serves(self, path: str) -> bool:
    return (path in self._modules or self._is_package(path) or
            served_module_name(path) is not None)

  def _is_package(self, path: str) -> bool:
    return path in self._packages or _is_served_package(path)

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname in REMOVED_TF_MODULES:
      return importlib.machinery.ModuleSpec(fullname, self)
    name = canonical(fullname)
    if name is None:
      return None
    if not self._serves(name):
      # Raised rather than returning None: the path finders would otherwise
      # import an installed tensorflow_estimator's module (made for
      # TensorFlow 2.15) in its place. Its `name` is left unset: the import
      # system drops a ModuleNotFoundError named after the module that
      # `from package import module` asked for, and says only "cannot import
      # name 'module' ... (unknown location)".
      raise ModuleNotFoundError(
          f'{fullname} is not provided by estimator_rt: it serves the module '
          'paths of tf.estimator 2.15 it implements (see estimator_rt/compat/'
          'finder.py), not the test code 2.15 shipped. Import the public '
          'tf.estimator names instead, or run `python -m estimator_rt.compat '
          '--check` on your code to see what is served.')
    return importlib.machinery.ModuleSpec(
        fullname, self, is_package=self._is_package(name))

  def create_module(self, spec):
    module = _TableModule(spec.name)
    if spec.submodule_search_locations is not None:
      # No directory: its submodules are the ones this finder serves (or a
      # finder ahead of it), never files of an installed tensorflow_estimator.
      module.__path__ = []
    return module

  def exec_module(self, module):
    fullname = module.__name__
    if fullname in REMOVED_TF_MODULES:
      sys.modules[fullname] = importlib.import_module(
          REMOVED_TF_MODULES[fullname])
      return
    name = canonical(fullname)
    if name != fullname:
      # tensorflow.python.estimator...: the tensorflow_estimator module.
      sys.modules[fullname] = importlib.import_module(name)
      return
    served = served_module_name(name)
    if served is not None:
      target = importlib.import_module(served)
      if '__getattr__' not in vars(target):
        target.__getattr__ = _module_getattr(name)
      # The path is the served module itself (the import system returns
      # what is in sys.modules after exec_module).
      sys.modules[fullname] = target
    else:
      target = module
    self._fill(target, name)

  def _fill(self, target: types.ModuleType, name: str) -> None:
    """Puts the public names of 2.15's module `name` that `target` does
    not define itself into it."""
    from estimator_rt import compat  # pylint: disable=g-import-not-at-top
    from estimator_rt.compat import namespaces  # pylint: disable=g-import-not-at-top
    if name == ROOT and 'estimator' not in vars(target):
      target.estimator = namespaces.v2()
    for attribute, public in self._paths.get(name, {}).items():
      if attribute not in vars(target):
        setattr(target, attribute, compat.resolve(public))
    for attribute, value in _extra(name).items():
      if attribute not in vars(target):
        setattr(target, attribute, value)


def installed_finder() -> Optional[Finder]:
  for finder in sys.meta_path:
    if isinstance(finder, Finder):
      return finder
  return None
