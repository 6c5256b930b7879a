"""tf.estimator for TensorFlow 2.16+: its names and module paths, resolved
to estimator_rt.

    import estimator_rt.compat
    estimator_rt.compat.install()
    import tensorflow as tf
    tf.estimator.Estimator(...)          # estimator_rt.Estimator

or, for a program left as it is:

    python -m estimator_rt.compat PROGRAM.py [ARGS...]

or nothing at all: installing the distribution installs an import hook
(startup.py, run by `estimator_rt_compat.pth` at interpreter start; off with
ESTIMATOR_RT_COMPAT=0) that does `serve()` when a program first uses
tf.estimator, so that `python PROGRAM.py` runs it too.

`install()` (explicit, idempotent) makes these resolve to estimator_rt's
objects:

  - `tf.estimator`, `tf.compat.v2.estimator` and `tf.compat.v1.estimator`
    (and their nestings, `tf.compat.v2.compat.v1.estimator`, ...),
    with every one of tf.estimator 2.15's public names (see
    namespaces.py);
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
API that estimator_rt refuses in one line (see
docs/moving-from-tf-estimator.md).
"""

import sys
import threading

from estimator_rt.compat import finder as finder_lib
from estimator_rt.compat import startup
from estimator_rt.core import log_handlers

_installed = False
# serve() can be reached from two threads at once (two first uses).
_serve_lock = threading.Lock()


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


def install() -> None:
  """Makes tf.estimator's names and module paths resolve to estimator_rt
  (see the module docstring). Idempotent; imports TensorFlow."""
  global _installed
  if _installed:
    return
  from estimator_rt.compat import tf_api  # pylint: disable=g-import-not-at-top
  from estimator_rt.compat import namespaces  # pylint: disable=g-import-not-at-top
  if ('tensorflow_estimator' in sys.modules and
      finder_lib.installed_finder() is None):
    raise ImportError(
        'estimator_rt.compat.install(): the real tensorflow_estimator is '
        'already imported; install() must come first (or run the program '
        'with python -m estimator_rt.compat).')
  served = {'v1': namespaces.v1(), 'v2': namespaces.v2()}
  # TensorFlow nests its compat namespaces (tf.compat.v2.compat.v1 is a
  # module of its own); 2.15 had `estimator` in each. The import hook's
  # stand-ins there, if any, are replaced.
  for path, version in startup.API_PATHS.items():
    tf_api.set_attribute(path, 'estimator', served[version])
    sys.modules[f'{path}.estimator'] = served[version]
  # Ahead of the path finders: an installed tensorflow_estimator package
  # (made for TensorFlow 2.15) must not be imported. In the import hook's
  # place if it is there (first since interpreter start), so that a finder
  # a program put ahead of it (as the runner of 2.15's own tests puts one
  # for their test code) stays ahead.
  hook = startup.installed_hook()
  sys.meta_path.insert(sys.meta_path.index(hook) if hook is not None else 0,
                       finder_lib.Finder(finder_lib.load_paths()))
  # Served: the layer's finder and namespaces answer from now on.
  startup.remove_hook()
  _installed = True


def is_installed() -> bool:
  return _installed


def serve():
  """What the import hook (startup.py) does when a program first uses
  tf.estimator: chooses the Keras the program meant where that can still be
  chosen (keras_choice.py), then `install()`. Returns {'v1':
  tf.compat.v1.estimator, 'v2': tf.estimator}."""
  with _serve_lock:
    if not _installed:
      # Before the first absl message (keras_choice's): absl gives the root
      # logger a handler at its first message, and TensorFlow's logger keeps
      # its own beside it, printing each of tf.estimator's lines twice.
      log_handlers.use_root_handler()
      from estimator_rt.compat import keras_choice  # pylint: disable=g-import-not-at-top
      keras_choice.choose_on_first_use()
      install()
  from estimator_rt.compat import namespaces  # pylint: disable=g-import-not-at-top
  return {'v1': namespaces.v1(), 'v2': namespaces.v2()}
