"""Which Keras `tf.keras` is for a tf.estimator program run without the
runner.

A tf.estimator program was written for TensorFlow <= 2.15, where `tf.keras`
was Keras 2: `tf.keras.optimizers.legacy`, `model.input_names`, Keras 2's
optimizer identifiers and `DenseFeatures` are Keras 2's. `python -m
estimator_rt.compat` sets TensorFlow's own switch, TF_USE_LEGACY_KERAS=1,
before the program starts (tf_keras is `tf.keras`). The import hook
(startup.py) makes the same choice for a program run with plain `python`,
at the moments it can still be made, and for tf.estimator programs only:

  - when TensorFlow is first imported, for a program whose main file uses
    tf.estimator (scan.py reads the file; it is not run): the variable is
    set before TensorFlow reads it, exactly as the runner sets it;
  - when tf.estimator is first used (a name read on `tf.estimator`, an
    import of `tensorflow_estimator`) while no `tf.keras` has been resolved
    yet: the variable is set, and TensorFlow's API packages look in tf_keras
    first for `import tensorflow.keras...`, as they would have had the
    variable been set when TensorFlow was imported. It is said once (an
    INFO line);
  - when tf.estimator is first used after `tf.keras` was resolved to Keras 3
    (a library or the program used it first), the choice is made: tf.keras
    stays Keras 3, and one warning says so and what to set.

TF_USE_LEGACY_KERAS set by the user (either way) is never changed, and a
program that never uses tf.estimator never reaches this module.
`estimator_rt.compat.install()` called by a program itself chooses nothing:
it changes what it says it changes.
"""

import importlib.util
import os
import re
import sys
import types

from absl import logging

VARIABLE = 'TF_USE_LEGACY_KERAS'
# The attributes of TensorFlow's API modules that TensorFlow resolves to a
# Keras when first used (KerasLazyLoader), besides the TF1 layers, which
# estimator_rt routes to tf_keras in any case (graph/compat.py).
_KERAS_ATTRIBUTES = ('keras', 'losses', 'metrics', 'optimizers',
                     'initializers')
# `import tensorflow.keras...` (and tensorflow.compat.v1.keras...): modules
# TensorFlow's API packages find on their __path__.
_KERAS_MODULE = re.compile(r'^tensorflow(\.compat\.v[12])*\.keras(\.|$)')

_said = []


def _package_dir(name: str):
  spec = importlib.util.find_spec(name)
  if spec is None or not spec.submodule_search_locations:
    return None
  return os.path.realpath(list(spec.submodule_search_locations)[0])


def main_file_uses_tf_estimator(path: str) -> bool:
  """Whether the Python file `path` uses a tf.estimator name or module path
  (scan.py; a file that does not parse counts as not)."""
  from estimator_rt.compat import scan  # pylint: disable=g-import-not-at-top
  try:
    with open(path, 'rb') as f:
      uses = scan.scan_source(f.read(), path)
  except (OSError, SyntaxError, ValueError):
    return False
  return any(use.kind == scan.ESTIMATOR for use in uses)


def choose_for_main_program(path: str) -> None:
  """Keras 2 for the program whose main file is `path` if it uses
  tf.estimator; called before TensorFlow is imported."""
  if VARIABLE in os.environ or _package_dir('tf_keras') is None:
    return
  estimator_rt_dir = _package_dir('estimator_rt')
  if estimator_rt_dir and os.path.realpath(path).startswith(
      estimator_rt_dir + os.sep):
    return  # estimator_rt's own binaries are not tf.estimator programs.
  if main_file_uses_tf_estimator(path):
    os.environ[VARIABLE] = '1'
    _say(logging.INFO,
         f'estimator_rt: {path} uses tf.estimator, so tf.keras is Keras 2 '
         f'(tf_keras) for it, as under TensorFlow <= 2.15 and `python -m '
         f'estimator_rt.compat`; set {VARIABLE}=0 to keep Keras 3.')


def choose_on_first_use() -> None:
  """Keras 2 for a program that has just used tf.estimator, if tf.keras is
  not resolved yet; else one warning (see the module docstring)."""
  if VARIABLE in os.environ or _package_dir('tf_keras') is None:
    return
  if 'tensorflow' not in sys.modules:
    os.environ[VARIABLE] = '1'
  elif keras_3_in_use():
    _say(logging.WARNING,
         'estimator_rt: tf.estimator is used after tf.keras was already '
         'resolved to Keras 3 in this process, so tf.keras stays Keras 3; '
         'tf.estimator programs written for TensorFlow <= 2.15 meant Keras 2 '
         f'(tf_keras). Set {VARIABLE}=1 before the program starts (or run it '
         f'with `python -m estimator_rt.compat`) to run it with Keras 2, or '
         f'{VARIABLE}=0 to keep Keras 3 and silence this.')
    return
  else:
    os.environ[VARIABLE] = '1'
    _search_tf_keras_first()
  _say(logging.INFO,
       'estimator_rt: tf.estimator is used, so tf.keras is Keras 2 (tf_keras) '
       'in this process, as under TensorFlow <= 2.15 and `python -m '
       f'estimator_rt.compat`; set {VARIABLE}=0 to keep Keras 3.')


def _say(level: int, message: str) -> None:
  if not _said:
    _said.append(message)
    logging.log(level, message)


def _api_modules():
  """TensorFlow's imported modules (a lazy wrapper's inner module too)."""
  for name, module in list(sys.modules.items()):
    if name != 'tensorflow' and not name.startswith('tensorflow.'):
      continue
    yield name, module
    wrapped = vars(module).get('_tfmw_wrapped_module')
    if wrapped is not None:
      yield name, wrapped


def keras_3_in_use() -> bool:
  """Whether some `tf.keras` (or `tf.losses`, ..., `import
  tensorflow.keras`) of this process already is Keras 3."""
  from tensorflow.python.util import lazy_loader  # pylint: disable=g-import-not-at-top
  keras_dir = _package_dir('keras')
  for name, module in _api_modules():
    if _KERAS_MODULE.match(name):
      path = os.path.realpath(getattr(module, '__file__', None) or '')
      if keras_dir and path.startswith(keras_dir + os.sep):
        return True
    attributes = vars(module)
    for attribute in _KERAS_ATTRIBUTES:
      value = attributes.get(attribute)
      if isinstance(value, lazy_loader.KerasLazyLoader):
        if (vars(value).get('_tfll_initialized') and
            vars(value).get('_tfll_keras_version') == 'keras_3'):
          return True
      elif isinstance(value, types.ModuleType) and (
          value.__name__ == 'keras' or value.__name__.startswith('keras.')):
        return True
  return False


def _search_tf_keras_first() -> None:
  """Puts tf_keras's API directories ahead of Keras 3's on TensorFlow's API
  packages' __path__, as TensorFlow does when it is imported with the
  variable set (`import tensorflow.keras.layers` then finds tf_keras's)."""
  keras_dir, tf_keras_dir = _package_dir('keras'), _package_dir('tf_keras')
  if keras_dir is None or tf_keras_dir is None:
    return
  for _, module in _api_modules():
    path = vars(module).get('__path__')
    if not isinstance(path, list):
      continue
    for entry in list(path):
      relative = os.path.relpath(os.path.realpath(entry), keras_dir)
      if not relative.startswith(os.path.join('api', '_v')):
        continue
      replacement = os.path.join(tf_keras_dir, relative)
      if os.path.isdir(replacement) and replacement not in path:
        path.insert(0, replacement)
