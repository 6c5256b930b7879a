"""TF1-style layers routed to tf_keras as soon as TensorFlow is imported.

`import estimator_rt` does not import TensorFlow (see the package's
docstring). A program that imports estimator_rt first and TensorFlow next
can build `tf.compat.v1.layers` at once, before it uses any estimator_rt
name (a module-level graph, a helper run at import): those layers must
already be tf_keras' legacy ones then (estimator_rt/core/legacy_layers.py), not
Keras 3's, which refuse. So this module watches for the module that defines
TensorFlow's lazy Keras loaders and routes them as soon as it has run,
while TensorFlow's own import is still going on, before any loader is
used. Standard library only: it is imported before TensorFlow.
"""

import importlib
import importlib.abc
import sys

# Defines `KerasLazyLoader`, whose class the routing patches; imported early
# in `import tensorflow`, before the API modules make their loaders.
_WATCHED = 'tensorflow.python.util.lazy_loader'


def _route() -> None:
  # Imported only now: the routing module imports TensorFlow's.
  importlib.import_module('estimator_rt.core.legacy_layers'
                          ).route_v1_layers_to_tf_keras()


class _RouteWhenLoaded(importlib.abc.MetaPathFinder):
  """Finds nothing itself: lets the finders after it find `_WATCHED`, and
  routes the layers once that module has executed."""

  def find_spec(self, fullname, path, target=None):
    if fullname != _WATCHED:
      return None
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
      execute(module)
      self.remove()
      _route()

    spec.loader.exec_module = exec_module
    return spec

  def remove(self) -> None:
    if self in sys.meta_path:
      sys.meta_path.remove(self)


def route_when_tensorflow_loads() -> None:
  """Routes the TF1-style layers now if TensorFlow is imported, else as
  soon as it is (idempotent)."""
  if _WATCHED in sys.modules:
    _route()
    return
  if not any(isinstance(finder, _RouteWhenLoaded)
             for finder in sys.meta_path):
    sys.meta_path.insert(0, _RouteWhenLoaded())
