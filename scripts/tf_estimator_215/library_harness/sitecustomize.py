"""Gives a library's own code back what newer Pythons and TensorFlows moved.

On the PYTHONPATH of every process the library runners start, on both sides
(tf.estimator 2.15 and estimator_rt), so that a library's own break on a
newer Python or TensorFlow is not counted against either: this is the
harness, never the product.

- `inspect.getargspec` (removed in Python 3.11; TF-GAN 2.1.0 calls it): as
  Python 3.10 had it, `getfullargspec` narrowed to four fields, refusing a
  function with keyword-only parameters or annotations as 3.10 did.
- With LIBRARY_HARNESS_TF_NAMES=1 (a library written for TensorFlow <= 2.12,
  EasyRec, tf-slim 1.1.0): the module attributes TensorFlow 2.13 removed or
  moved, set on their old modules as each is imported (`nest.is_sequence`,
  the old name of `nest.is_nested`; `array_ops.stack` and `unstack`, moved
  to `array_ops_stack`; `control_flow_ops.case`, `cond`, `while_loop` and
  `Assert`, moved to modules of their own). TensorFlow 2.15 lacks them as
  2.21 does.
- With LIBRARY_HARNESS_NUMPY=1 (TF Lattice 2.0.13, AdaNet 0.9.0): the
  `interpolation` keyword of `numpy.quantile` and `percentile`, renamed
  `method` in NumPy 1.22 and removed in 2.4 (the 2.15 side's NumPy 1.26
  still has it), and `numpy.float`, the alias of `float` NumPy 1.24 removed
  (neither side has it).
"""

import collections
import functools
import importlib
import importlib.abc
import importlib.util
import inspect
import os
import sys
import types

if not hasattr(inspect, 'getargspec'):
  ArgSpec = collections.namedtuple('ArgSpec', 'args varargs keywords defaults')

  def getargspec(func):
    """Python 3.10's `inspect.getargspec`."""
    (args, varargs, varkw, defaults, kwonlyargs, unused_kwonlydefaults,
     annotations) = inspect.getfullargspec(func)
    if kwonlyargs or annotations:
      raise ValueError('Function has keyword-only parameters or annotations'
                       ', use inspect.signature() API which can support them')
    return ArgSpec(args, varargs, varkw, defaults)

  inspect.ArgSpec = ArgSpec
  inspect.getargspec = getargspec


# module -> {old attribute: (module that has it now, its name there)}
MOVED_TF_NAMES = {
    'tensorflow.python.util.nest': {
        'is_sequence': ('tensorflow.python.util.nest', 'is_nested')},
    'tensorflow.python.ops.array_ops': {
        'stack': ('tensorflow.python.ops.array_ops_stack', 'stack'),
        'unstack': ('tensorflow.python.ops.array_ops_stack', 'unstack')},
    'tensorflow.python.ops.control_flow_ops': {
        'case': ('tensorflow.python.ops.control_flow_case', 'case'),
        'cond': ('tensorflow.python.ops.cond', 'cond'),
        'while_loop': ('tensorflow.python.ops.while_loop', 'while_loop'),
        'Assert': ('tensorflow.python.ops.control_flow_assert', 'Assert')},
}


# old module -> the module that has its contents now
MOVED_TF_MODULES = {
    'tensorflow.python.training.tracking': 'tensorflow.python.trackable',
    'tensorflow.python.training.tracking.graph_view':
        'tensorflow.python.checkpoint.graph_view',
}


class _Alias(importlib.abc.Loader):
  """Loads a moved module's old name: a leaf module is the module at its
  new home; a package is a package of the old name (so that its moved
  submodules are looked up under the old name) reading its attributes from
  the new home."""

  def __init__(self, home):
    self._home = home
    self._home_spec = None

  def create_module(self, spec):
    home = importlib.import_module(self._home)
    if spec.submodule_search_locations is not None:
      package = types.ModuleType(spec.name)
      package.__getattr__ = lambda name: getattr(home, name)
      return package
    self._home_spec = home.__spec__
    return home

  def exec_module(self, module):
    if self._home_spec is not None:
      # The import system set the old name's spec on it: its own stays.
      module.__spec__ = self._home_spec


class _OldModuleNames(importlib.abc.MetaPathFinder):
  """Finds MOVED_TF_MODULES' old names (TensorFlow no longer has them)."""

  def find_spec(self, name, path=None, target=None):
    if name not in MOVED_TF_MODULES:
      return None
    home = MOVED_TF_MODULES[name]
    is_package = hasattr(importlib.import_module(home), '__path__')
    return importlib.util.spec_from_loader(name, _Alias(home),
                                           is_package=is_package)


def _give_back_tf_names(module) -> None:
  """Resolves the old names of `module` when read (a module __getattr__:
  their new homes may import `module` themselves)."""
  moved = MOVED_TF_NAMES[module.__name__]
  previous = module.__dict__.get('__getattr__')

  def __getattr__(name):  # pylint: disable=invalid-name
    if name in moved:
      home, new_name = moved[name]
      return getattr(importlib.import_module(home), new_name)
    if previous is not None:
      return previous(name)
    raise AttributeError(
        f'module {module.__name__!r} has no attribute {name!r}')

  module.__getattr__ = __getattr__


def _accept_interpolation(function):
  """`function` (numpy.quantile or percentile) taking `interpolation=` as
  NumPy < 2.4 did, as the `method` it was renamed to."""
  if 'interpolation' in inspect.signature(function).parameters:
    return function

  @functools.wraps(function)
  def with_interpolation(*args, interpolation=None, **kwargs):
    if interpolation is not None:
      kwargs['method'] = interpolation
    return function(*args, **kwargs)

  return with_interpolation


def _give_back_numpy(module) -> None:
  module.quantile = _accept_interpolation(module.quantile)
  module.percentile = _accept_interpolation(module.percentile)
  if 'float' not in vars(module):
    module.float = float


class _GiveBackOnImport(importlib.abc.MetaPathFinder):
  """Lets the other finders load one of `after_import`'s modules, then
  calls its function on it."""

  def __init__(self, after_import):
    self._after_import = after_import

  def find_spec(self, name, path=None, target=None):
    if name not in self._after_import:
      return None
    for finder in sys.meta_path:
      if finder is self or not hasattr(finder, 'find_spec'):
        continue
      spec = finder.find_spec(name, path, target)
      if spec is not None and spec.loader is not None:
        exec_module = spec.loader.exec_module

        def exec_and_give_back(module, exec_module=exec_module,
                               give_back=self._after_import[name]):
          exec_module(module)
          give_back(module)

        spec.loader.exec_module = exec_and_give_back
        return spec
    return None


_AFTER_IMPORT = {}
if os.environ.get('LIBRARY_HARNESS_TF_NAMES') == '1':
  _AFTER_IMPORT.update((name, _give_back_tf_names) for name in MOVED_TF_NAMES)
if os.environ.get('LIBRARY_HARNESS_NUMPY') == '1':
  _AFTER_IMPORT['numpy'] = _give_back_numpy
if _AFTER_IMPORT:
  sys.meta_path.insert(0, _GiveBackOnImport(_AFTER_IMPORT))
if os.environ.get('LIBRARY_HARNESS_TF_NAMES') == '1':
  sys.meta_path.append(_OldModuleNames())
