"""TF1-style layers from tf_keras whichever Keras `tf.keras` is.

`tf.compat.v1.layers` (`dense`, `Dense`, `BatchNormalization`, ...) and
`tf.compat.v1.nn.rnn_cell` are Keras 2 layers. TensorFlow serves each
through a `KerasLazyLoader` that picks a Keras when first used: Keras 3,
which refuses ("`dense` is not available with Keras 3"), unless the whole
process sets TF_USE_LEGACY_KERAS, which also turns `tf.keras` into Keras 2.
`route_v1_layers_to_tf_keras` makes exactly those loaders pick tf_keras's
legacy layers, the layers tf.estimator model_fns were written against, and
leaves `tf.keras` as it is: Keras 3 has nothing to serve there, so the
routing can only turn an error into what TensorFlow 2.15 did.

TensorFlow has one loader per API module object, and a program can hold
several of them (`tf.compat.v1` bound before `import tensorflow.compat.v1`
is another module than after; `tf.compat.v2.compat.v1` is a third). So the
choice is made in the loader class, for every instance, made before or
after, wherever it is reached from. tf_keras is imported on first use
(about a second), so programs that never touch these layers pay nothing.

Who routes: the import hook as soon as TensorFlow is imported
(estimator_rt/compat/startup.py, which loads this file alone), `import
estimator_rt` likewise (training/graph/route_on_import.py), and the engine
choice. Standard library and TensorFlow's lazy loader only.

Routed layers are also built without re-setting their classes' bases when
they are already right (`_skip_repeated_swaps`): the same classes, a few
milliseconds less per layer a model_fn builds.
"""

import importlib
import importlib.util
import sys
import weakref

# The Keras 2 modules that TensorFlow's v1 API serves from Keras.
_LEGACY_SUBMODULE_PREFIX = '__internal__.legacy.'
_TF_KERAS_V1 = 'tf_keras.api._v1.keras'


def _is_legacy(loader) -> bool:
  submodule = vars(loader).get('_tfll_submodule')
  return bool(submodule) and submodule.startswith(_LEGACY_SUBMODULE_PREFIX)


def _initialize_as_tf_keras(loader) -> None:
  """Points a legacy-layers loader at tf_keras, as TF_USE_LEGACY_KERAS=1
  would (the module is imported on first attribute use)."""
  from tensorflow.python.util import lazy_loader  # pylint: disable=g-import-not-at-top
  loader._tfll_initialized = True  # pylint: disable=protected-access
  loader._tfll_keras_version = 'tf_keras'  # pylint: disable=protected-access
  lazy_loader.LazyLoader.__init__(
      loader, loader._tfll_name, loader._tfll_parent_module_globals,  # pylint: disable=protected-access
      f'{_TF_KERAS_V1}.{loader._tfll_submodule}')  # pylint: disable=protected-access


# tf_keras's module that picks a layer's v1 or v2 base classes.
_VERSION_UTILS = 'tf_keras.src.utils.version_utils'


def _hierarchy(cls: type) -> tuple:
  """Every class of `cls`'s MRO but `cls` with its bases, and `cls`'s
  bases: what `swap_class` reads and sets (holds no reference to `cls`)."""
  return (cls.__bases__,) + tuple((c, c.__bases__) for c in cls.__mro__[1:])


def _skip_repeated_swaps(version_utils) -> None:
  """Makes tf_keras's `swap_class` return at once when the same swap was
  the last one made on an unchanged hierarchy.

  Every tf_keras layer's construction swaps its class to the v1 or v2
  bases (`LayerVersionSelector.__new__`), assigning `__bases__` along its
  hierarchy even when they are already those: CPython then recomputes the
  MRO and slots of every subclass, which for `tf.compat.v1.layers` is every
  legacy layer class (about 5 ms a layer, a tenth of a TF1 predict call). A
  swap is idempotent, so repeating the last one on the hierarchy it left
  changes nothing: it is skipped. Any other swap, or a hierarchy changed
  since, runs tf_keras's own. Idempotent (the function is marked)."""
  original = version_utils.swap_class
  if getattr(original, 'estimator_rt_skips_repeats', False):
    return
  # class -> {(v2 class, v1 class, use_v2): the hierarchy the swap left};
  # weak, so classes a model_fn defines per call are not kept.
  last_swaps = weakref.WeakKeyDictionary()

  def swap_class(cls, v2_cls, v1_cls, use_v2):
    key = (v2_cls, v1_cls, bool(use_v2))
    try:
      done = last_swaps.get(cls, {})
    except TypeError:  # Not weakly referenceable: tf_keras's own.
      return original(cls, v2_cls, v1_cls, use_v2)
    if done.get(key) == _hierarchy(cls):
      return cls
    result = original(cls, v2_cls, v1_cls, use_v2)
    if result is cls:
      last_swaps[cls] = {key: _hierarchy(cls)}
    return result

  swap_class.estimator_rt_skips_repeats = True
  version_utils.swap_class = swap_class


def _patched_initialize(original):
  def initialize(self):
    if _is_legacy(self) and importlib.util.find_spec('tf_keras') is not None:
      _initialize_as_tf_keras(self)
      try:  # tf_keras is imported now anyway: the layers are read next.
        _skip_repeated_swaps(importlib.import_module(_VERSION_UTILS))
      except (ImportError, AttributeError):  # Another tf_keras layout.
        pass
    else:  # No tf_keras: TensorFlow's own message says to install it.
      original(self)
  initialize.estimator_rt_routed = True
  return initialize


def route_v1_layers_to_tf_keras() -> None:
  """Makes `tf.compat.v1.layers` and `tf.compat.v1.nn.rnn_cell` tf_keras's
  legacy layers however they are reached (idempotent; TensorFlow's lazy
  loader module must be imported)."""
  from tensorflow.python.util import lazy_loader  # pylint: disable=g-import-not-at-top
  loader_class = lazy_loader.KerasLazyLoader
  if getattr(loader_class._initialize, 'estimator_rt_routed', False):  # pylint: disable=protected-access
    return
  loader_class._initialize = _patched_initialize(loader_class._initialize)  # pylint: disable=protected-access
  # Loaders already used chose Keras 3 (and refused): they choose again.
  for name, module in list(sys.modules.items()):
    if not name.startswith('tensorflow'):
      continue
    for value in list(getattr(module, '__dict__', {}).values()):
      if (isinstance(value, loader_class) and _is_legacy(value) and
          vars(value).get('_tfll_keras_version') == 'keras_3'):
        value._tfll_initialized = False  # pylint: disable=protected-access
