"""Which Keras `tf.keras` is in a process.

The rule is written once, for users, in docs/moving-from-tf-estimator.md
(Keras): TF_USE_LEGACY_KERAS set by the user decides; else a process whose
own code uses tf.estimator (a program's main file and its own modules, a
pytest run's test files: program_code.py) gets Keras 2 (tf_keras) when
TensorFlow is first imported (`choose_for_program`, called by startup.py's
hook); else Keras 2 at the first use of tf.estimator if no `tf.keras` was
resolved yet, or one warning if it already is Keras 3
(`choose_on_first_use`). `decide` says which and why (also for `--check`).
The TF1 layers are tf_keras's in any case (core/legacy_layers.py).
"""

import importlib.util
import os
import re
import sys
import types
from typing import Optional, Tuple

from absl import logging

VARIABLE = 'TF_USE_LEGACY_KERAS'
KERAS_2 = 'Keras 2 (tf_keras)'
KERAS_3 = 'Keras 3'
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


def first_use(files) -> Optional[Tuple[str, int, str]]:
  """(file, line, name) of the first use of a tf.estimator name or module
  path in `files` (scan.py; a file that does not parse has none), or None."""
  from estimator_rt.compat import scan  # pylint: disable=g-import-not-at-top
  for path in files:
    try:
      with open(path, 'rb') as f:
        uses = scan.scan_source(f.read(), path)
    except (OSError, SyntaxError, ValueError, RecursionError):
      continue
    for use in uses:
      if use.kind == scan.ESTIMATOR:
        return path, use.line, use.qualified
  return None


def decide(program) -> Tuple[str, str]:
  """(the Keras `tf.keras` is for `program`, a program_code.Program: KERAS_2
  or KERAS_3; why, in words), TF_USE_LEGACY_KERAS aside (it decides when
  set)."""
  found = first_use(program.candidates)
  if found is None:
    read = f'{len(program.files)} file{"" if len(program.files) == 1 else "s"}'
    return KERAS_3, (f'the code of {program.description} does not use '
                     f'tf.estimator ({read} read'
                     f'{"" if program.complete else ", the search cut short"})')
  path, line, name = found
  relative = os.path.relpath(path)
  where = path if relative.startswith(os.pardir) else relative
  if name.startswith('tensorflow.'):
    name = 'tf.' + name[len('tensorflow.'):]
  return KERAS_2, (f'the code of {program.description} uses tf.estimator '
                   f'({name}, {where}:{line})')


def choose_for_program(program) -> None:
  """Keras 2 for `program` (program_code.Program, the code this process
  runs) if it uses tf.estimator; called before TensorFlow is imported."""
  if VARIABLE in os.environ or _package_dir('tf_keras') is None:
    return
  keras, reason = decide(program)
  if keras == KERAS_2:
    os.environ[VARIABLE] = '1'
    _say(logging.INFO,
         f'estimator_rt: {reason}, so tf.keras is Keras 2 (tf_keras) for '
         'it, as under TensorFlow <= 2.15 and `python -m '
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
