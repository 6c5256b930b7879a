"""The import hook that serves tf.estimator in every Python process of an
environment where estimator_rt is installed.

Installing the distribution puts `estimator_rt_compat.pth` into
site-packages. Python runs its one line at start: unless the environment
sets ESTIMATOR_RT_COMPAT=0 (or false, no, off: the line reads it, before
anything is loaded), it loads this file, and only this file (not the
estimator_rt package, nor any module Python has not imported already), and
calls `install_hook()`, which puts a `Hook` first on `sys.meta_path`. Standard library only, and nothing done at start but
that: a process that never imports TensorFlow pays for this file and one
finder consulted on each import (the median start-up cost is printed by
scripts/bench/startup.py).

What the hook does, and when:

  - `import tensorflow`: once TensorFlow's own `__init__` has run, a stand-in
    `estimator` namespace is put on `tf`, `tf.compat.v1`, `tf.compat.v2` and
    their nestings (`tf.compat.v2.compat.v1`, ...), and under those names
    in `sys.modules` (`import tensorflow.compat.v1.estimator`). A stand-in
    is cheap and imports nothing: `hasattr(tf, 'estimator')` and `from
    tensorflow.compat.v1 import estimator` cost nothing. The first name read
    on it (`tf.estimator.Estimator`) serves tf.estimator (below) and answers
    from the real namespace, which then replaces the stand-ins;
  - `import tensorflow_estimator` (and its module paths), the
    `tensorflow.python.estimator` paths, and the TensorFlow modules 2.16
    removed with tf.estimator (`SERVED_ROOTS`): serves tf.estimator when
    the module is loaded (a `find_spec` probe serves nothing), then imports
    it from the compatibility layer;
  - serving is `estimator_rt.compat.serve()`: it chooses the Keras a
    tf.estimator program meant where that can still be chosen
    (estimator_rt/compat/keras_choice.py), then does `install()`; the hook
    then steps aside (the layer's own finder and namespaces answer);
  - Keras: when TensorFlow is imported, a program whose own code uses
    tf.estimator (its main file or a module of its own it imports; for a
    pytest run, its test files) gets Keras 2 as `tf.keras`, as under
    `python -m estimator_rt.compat` (program_code.py finds the files,
    keras_choice.py reads those that say `estimator`; nothing is run), and
    `tf.compat.v1.layers` are tf_keras's whichever Keras `tf.keras` is
    (core/legacy_layers.py).

So a TensorFlow program that never touches tf.estimator keeps its tf.keras
and imports no more of estimator_rt than this file and the two it loads
alone when TensorFlow is imported (program_code.py, legacy_layers.py). Child processes: a
spawned one starts Python again (the .pth runs again); a forked one
inherits all of it.
"""

import os
import sys

# Nothing of importlib at start (not even importlib.abc's base classes: it
# imports importlib.resources): a process that has not imported it yet
# would pay a few milliseconds. The import system needs only the methods.
_ModuleType = type(sys)
_ModuleSpec = type(sys.__spec__)

# The module paths served on import, besides the `estimator` namespaces:
# tensorflow_estimator's, TensorFlow <= 2.15's alias of them, and the
# TensorFlow modules that 2.16 removed with tf.estimator
# (estimator_rt/compat/finder.py's REMOVED_TF_MODULES).
SERVED_ROOTS = ('tensorflow_estimator', 'tensorflow.python.estimator',
                'tensorflow.python.distribute.estimator_training',
                'tensorflow.python.tpu.tpu_embedding')

# TensorFlow's public API modules that held `estimator` in 2.15: tf, its two
# compat namespaces and their nestings (each a module of its own).
API_PATHS = {
    'tensorflow': 'v2',
    'tensorflow.compat.v2': 'v2',
    'tensorflow.compat.v1': 'v1',
    'tensorflow.compat.v2.compat.v1': 'v1',
    'tensorflow.compat.v2.compat.v2': 'v2',
    'tensorflow.compat.v1.compat.v1': 'v1',
    'tensorflow.compat.v1.compat.v2': 'v2',
}

def _is_under(fullname: str, root: str) -> bool:
  return fullname == root or fullname.startswith(root + '.')


def api_module_objects(path: str):
  """Every object that stands for TensorFlow's API module `path`
  ('tensorflow', 'tensorflow.compat.v1', ...): `tf.compat.v1` reached as an
  attribute and the module `import tensorflow.compat.v1` gives can be two
  objects, and either may be a lazy `TFModuleWrapper` around a third. A name
  meant for the module goes on all of them."""
  import importlib  # pylint: disable=g-import-not-at-top
  found = [importlib.import_module(path)]
  attribute = sys.modules['tensorflow']
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


def serve():
  """Serves tf.estimator now (estimator_rt.compat.serve), once; returns
  {'v1': tf.compat.v1.estimator, 'v2': tf.estimator}."""
  import importlib  # pylint: disable=g-import-not-at-top
  # install() removes the hook.
  return importlib.import_module('estimator_rt.compat').serve()


class StandIn(_ModuleType):
  """`tf.estimator` (or `tf.compat.v1.estimator`) until tf.estimator is
  served: the first public name read on it serves it, and is read from the
  real namespace (as is every later one, for code that kept the stand-in)."""

  def __init__(self, name: str, version: str):
    super().__init__(name, 'tf.estimator, served by estimator_rt on first '
                     'use (see estimator_rt/compat/startup.py).')
    self._estimator_rt_version = version

  def __getattr__(self, name: str):
    # Dunders are probes (inspect, copy, pickle, doctest), not uses.
    if name.startswith('__'):
      raise AttributeError(name)
    return getattr(serve()[self._estimator_rt_version], name)

  def __dir__(self):
    return dir(serve()[self._estimator_rt_version])


def put_stand_ins() -> None:
  """Puts the stand-in namespaces on TensorFlow's API modules, where no
  `estimator` is yet."""
  stand_ins = {version: StandIn('estimator', version)
               for version in ('v1', 'v2')}
  for path, version in API_PATHS.items():
    for module in api_module_objects(path):
      if 'estimator' not in vars(module):
        setattr(module, 'estimator', stand_ins[version])
    sys.modules.setdefault(f'{path}.estimator', stand_ins[version])


class _ServeOnLoad:
  """Loads a served module path by serving tf.estimator first, then
  importing it from the compatibility layer (whose finder then answers)."""

  def create_module(self, spec):
    return None

  def exec_module(self, module):
    import importlib  # pylint: disable=g-import-not-at-top
    fullname = module.__name__
    # Not left in sys.modules while serving: install() takes a
    # tensorflow_estimator found there for the real one, imported before it.
    del sys.modules[fullname]
    serve()
    # The import system returns what is in sys.modules after exec_module.
    sys.modules[fullname] = importlib.import_module(fullname)


class Hook:
  """First on sys.meta_path from interpreter start until tf.estimator is
  served (see the module docstring); finds nothing itself."""

  def find_spec(self, fullname, path=None, target=None):
    if fullname == 'tensorflow':
      return self._tensorflow_spec(fullname, path, target)
    if any(_is_under(fullname, root) for root in SERVED_ROOTS):
      return _ModuleSpec(fullname, _ServeOnLoad(), is_package=True)
    return None

  def _tensorflow_spec(self, fullname, path, target):
    """TensorFlow's own spec, its loader made to choose Keras for a
    tf.estimator program before TensorFlow executes and to put the
    stand-ins once it has (at import, not at a `find_spec` probe)."""
    spec = None
    for finder in sys.meta_path[sys.meta_path.index(self) + 1:]:
      find_spec = getattr(finder, 'find_spec', None)
      spec = find_spec(fullname, path, target) if find_spec else None
      if spec is not None:
        break
    if spec is None or spec.loader is None:
      return spec
    execute = spec.loader.exec_module

    def exec_module(module):
      spec.loader.exec_module = execute
      _choose_keras_for_program()
      execute(module)
      _load_alone('estimator_rt.core.legacy_layers'
                  ).route_v1_layers_to_tf_keras()
      put_stand_ins()

    spec.loader.exec_module = exec_module
    return spec


def _load_alone(name: str):
  """The module `name` of estimator_rt, loaded from its file alone, as the
  .pth file loads this one: not its packages (estimator_rt's `__init__`
  imports absl), so that a process that never uses tf.estimator loads no
  more of estimator_rt than the few standard-library modules the hook
  needs. `from estimator_rt.X import Y` finds it later (in sys.modules)."""
  module = sys.modules.get(name)
  if module is not None:
    return module
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  path = os.path.join(root, *name.split('.')[1:]) + '.py'
  loader = type(__loader__)(name, path)
  module = _ModuleType(name)
  vars(module).update(__spec__=_ModuleSpec(name, loader, origin=path),
                      __loader__=loader, __file__=path)
  sys.modules[name] = module
  try:
    exec(loader.get_code(name), vars(module))  # pylint: disable=exec-used
  except BaseException:
    del sys.modules[name]
    raise
  return module


def _choose_keras_for_program() -> None:
  """Keras 2 for a process whose own code uses tf.estimator (its main file
  and the modules of its own it imports; a pytest run's test files),
  decided before TensorFlow reads TF_USE_LEGACY_KERAS (program_code.py
  finds the code, keras_choice.py decides)."""
  if 'TF_USE_LEGACY_KERAS' in os.environ:
    return  # The user's (or the runner's) choice.
  program = _load_alone('estimator_rt.compat.program_code').of_this_process()
  if program is None or not program.candidates:
    return
  import importlib  # pylint: disable=g-import-not-at-top
  importlib.import_module('estimator_rt.compat.keras_choice'
                          ).choose_for_program(program)


def installed_hook():
  for finder in sys.meta_path:
    if isinstance(finder, Hook):
      return finder
  return None


def install_hook() -> None:
  """Puts the Hook first on sys.meta_path (idempotent; what the .pth runs)."""
  if installed_hook() is not None:
    return
  sys.meta_path.insert(0, Hook())
  if 'tensorflow' in sys.modules:
    put_stand_ins()


def remove_hook() -> None:
  hook = installed_hook()
  if hook is not None:
    sys.meta_path.remove(hook)
