"""What TF1-style code needs from TensorFlow 2.16+ that Keras 3 took away.

`tf.compat.v1.layers` (`dense`, `Dense`, `conv2d`, ...) are Keras 2 layers.
TensorFlow routes them to Keras 3, which refuses ("`Dense` is not available
with Keras 3"), unless the whole process sets TF_USE_LEGACY_KERAS, which
would also turn `tf.keras` into Keras 2 for everything else. Instead the
runtime points only `tf.compat.v1.layers` at the `tf_keras` package's
legacy layers, the layers tf.estimator model_fns were written against;
`tf.keras` stays Keras 3. tf_keras is imported on first use (it takes
about a second), so model_fns that never touch these layers pay nothing.
"""

import collections
import contextlib
import importlib
import types
from typing import Iterator

import tensorflow as tf

from estimator_rt import tf_api

_LEGACY_LAYERS = 'tf_keras.api._v1.keras.__internal__.legacy.layers'


class _LegacyLayers(types.ModuleType):
  """`tf.compat.v1.layers`, loaded from tf_keras on first attribute use."""

  def __init__(self):
    super().__init__('tensorflow.compat.v1.layers')
    self._module = None

  def __getattr__(self, name):
    if name.startswith('__') or name == '_module':
      raise AttributeError(name)
    if self._module is None:
      try:
        self._module = importlib.import_module(_LEGACY_LAYERS)
      except ImportError as e:
        raise AttributeError(
            f'tf.compat.v1.layers.{name} needs the tf_keras package (Keras 3 '
            'has no TF1 layers): pip install tf_keras') from e
      # Importing tf_keras puts TensorFlow's own loader back: undo that.
      tf.compat.v1.layers = self
    return getattr(self._module, name)

  def __dir__(self):
    return dir(importlib.import_module(_LEGACY_LAYERS))


def route_v1_layers_to_tf_keras() -> None:
  """Makes `tf.compat.v1.layers` tf_keras's legacy layers (once)."""
  if not isinstance(tf_api.get_attribute('tensorflow.compat.v1', 'layers'),
                    _LegacyLayers):
    tf_api.set_attribute('tensorflow.compat.v1', 'layers', _LegacyLayers())


# Keras 3 keeps the counters that make layer names unique ('dense',
# 'dense_1', ...) for the whole process, where Keras 2 kept them per graph.
# A graph built twice in one process (train, then evaluate) would name its
# Keras layers' variables differently each time, and name-based
# checkpoints would not restore: each graph gets fresh counters.
_KERAS_NAME_COUNTERS = ('object_name_uids', 'name_uids')


@contextlib.contextmanager
def keras_names_per_graph() -> Iterator[None]:
  """Keras 3 layer names numbered from scratch for one graph's build."""
  try:
    from keras.src.backend.common import global_state  # pylint: disable=g-import-not-at-top
  except ImportError:  # Another Keras: nothing to reset.
    yield
    return
  saved = {name: global_state.get_global_attribute(name)
           for name in _KERAS_NAME_COUNTERS}
  for name in _KERAS_NAME_COUNTERS:
    global_state.set_global_attribute(name, collections.defaultdict(int))
  try:
    yield
  finally:
    for name, value in saved.items():
      global_state.set_global_attribute(name, value)
