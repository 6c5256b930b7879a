"""What TF1-style code needs from TensorFlow 2.16+ that Keras 3 changed.

Keras 3 under a graph built the TF1 way: layer names numbered per graph,
tf_keras initializers seeded from the graph's seed, and variable writes
that a train_op can depend on. (The TF1 layers themselves are tf_keras's:
estimator_rt/core/legacy_layers.py.)
"""

import collections
import contextlib
import random
from typing import Iterator, Optional

import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph  # pylint: disable=g-direct-tensorflow-import

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

