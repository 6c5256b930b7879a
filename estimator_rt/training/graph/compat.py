"""What TF1-style code needs from TensorFlow 2.16+ that Keras 3 took away.

`tf.compat.v1.layers` (`dense`, `Dense`, `conv2d`, ...) and
`tf.compat.v1.nn.rnn_cell` are Keras 2 layers. TensorFlow serves each
through a `KerasLazyLoader` that picks a Keras when first used: Keras 3,
which refuses ("`dense` is not available with Keras 3"), unless the whole
process sets TF_USE_LEGACY_KERAS, which would also turn `tf.keras` into
Keras 2 for everything else. Instead the runtime makes exactly those
loaders pick tf_keras's legacy layers, the layers tf.estimator model_fns
were written against; `tf.keras` stays Keras 3.

TensorFlow has one loader per API module object, and a program can hold
several of them (`tf.compat.v1` bound before `import tensorflow.compat.v1`
is another module than after; `tf.compat.v2.compat.v1` is a third). So the
choice is made in the loader class, for every instance, made before or
after, wherever it is reached from. tf_keras is imported on first use
(about a second), so model_fns that never touch these layers pay nothing.
"""

import collections
import contextlib
import importlib.util
import random
import sys
from typing import Iterator, Optional

import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.util import lazy_loader

# The Keras 2 modules that TensorFlow's v1 API serves from Keras.
_LEGACY_SUBMODULE_PREFIX = '__internal__.legacy.'
_TF_KERAS_V1 = 'tf_keras.api._v1.keras'


def _is_legacy(loader) -> bool:
  submodule = vars(loader).get('_tfll_submodule')
  return bool(submodule) and submodule.startswith(_LEGACY_SUBMODULE_PREFIX)


def _initialize_as_tf_keras(loader) -> None:
  """Points a legacy-layers loader at tf_keras, as TF_USE_LEGACY_KERAS=1
  would (the module is imported on first attribute use)."""
  loader._tfll_initialized = True  # pylint: disable=protected-access
  loader._tfll_keras_version = 'tf_keras'  # pylint: disable=protected-access
  lazy_loader.LazyLoader.__init__(
      loader, loader._tfll_name, loader._tfll_parent_module_globals,  # pylint: disable=protected-access
      f'{_TF_KERAS_V1}.{loader._tfll_submodule}')  # pylint: disable=protected-access


def _patched_initialize(original):
  def initialize(self):
    if _is_legacy(self) and importlib.util.find_spec('tf_keras') is not None:
      _initialize_as_tf_keras(self)
    else:  # No tf_keras: TensorFlow's own message says to install it.
      original(self)
  initialize.estimator_rt_routed = True
  return initialize


def route_v1_layers_to_tf_keras() -> None:
  """Makes `tf.compat.v1.layers` and `tf.compat.v1.nn.rnn_cell` tf_keras's
  legacy layers however they are reached (idempotent)."""
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


# Keras 3 keeps the counters that make layer names unique ('dense',
# 'dense_1', ...) for the whole process, where Keras 2 kept them per graph.
# A graph built twice in one process (train, then evaluate) would name its
# Keras layers' variables differently each time, and name-based
# checkpoints would not restore: each graph gets fresh counters.
_KERAS_NAME_COUNTERS = ('object_name_uids', 'name_uids')


@contextlib.contextmanager
def keras2_seeds_per_graph(seed: Optional[int]) -> Iterator[None]:
  """With a graph-level `seed`, the seeds tf_keras (Keras 2) draws for its
  initializers drawn from a generator seeded with it, for one graph's
  build.

  tf.estimator 2.15's `tf.compat.v1.layers` initialized from the graph's
  seed (TensorFlow's v1 initializers); tf_keras' draw each initializer's
  seed from Python's `random` module unless `tf_keras.utils.
  set_random_seed` gave them a generator, so a seeded graph would start
  from other weights in every process. Python's own generator, and the
  generator tf_keras had, are left as they were."""
  backend = None
  if seed is not None:
    try:
      from tf_keras.src import backend  # pylint: disable=g-import-not-at-top
    except ImportError:  # No tf_keras: nothing draws from it.
      pass
  holder = getattr(backend, '_SEED_GENERATOR', None)
  if holder is None:
    yield
    return
  saved = getattr(holder, 'generator', None)
  holder.generator = random.Random(seed)
  try:
    yield
  finally:
    holder.generator = saved


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


@contextlib.contextmanager
def keras3_assigns_return_the_write() -> Iterator[None]:
  """Keras 3 variables' assign, assign_add and assign_sub give back what
  tf.Variable's give back in a graph, the value read after the write, for
  one graph's build.

  Keras 3 returns the value assigned, a tensor the write does not precede:
  a model_fn that applies its gradients with `v.assign_sub(...)` and makes
  its train_op depend on what that returned (as tf.estimator 2.15's users
  did with tf.keras variables, tf.Variables then) would build a train_op
  that never writes them, and train nothing. Eagerly and in a tf.function
  the write runs either way, so the original is kept there."""
  try:
    from keras.src.backend.common import variables  # pylint: disable=g-import-not-at-top
    from keras.src.backend.tensorflow import core  # pylint: disable=g-import-not-at-top
  except ImportError:  # Another Keras: its variables are not patched.
    yield
    return
  original = core.Variable.__dict__.get('assign')

  def assign(self, value):
    base = original or variables.Variable.assign
    if (tf.executing_eagerly() or variables.in_stateless_scope() or
        not isinstance(getattr(self, '_value', None), tf.Variable) or
        isinstance(tf.compat.v1.get_default_graph(), FuncGraph)):
      return base(self, value)
    graph = tf.compat.v1.get_default_graph()
    before = len(graph.get_operations())
    base(self, value)  # Keras' checks and its write.
    handle = self._value.handle
    writes = [op for op in graph.get_operations()[before:]
              if op.type == 'AssignVariableOp' and op.inputs[0] is handle]
    with tf.control_dependencies(writes):
      return self._value.read_value()

  core.Variable.assign = assign
  try:
    yield
  finally:
    if original is None:
      del core.Variable.assign
    else:
      core.Variable.assign = original

