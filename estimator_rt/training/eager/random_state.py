"""The eager engine's seeding at the start of a call, and when that seeding
must clear TensorFlow's kernel caches.

tf.estimator 2.15 built a new graph for every call under the RunConfig's
`tf_random_seed`: the call's initializers, dropout masks and random input
drew the same numbers as the previous call's, each stateful random op's
kernel starting its sequence again. The eager engine seeds Python, NumPy,
Keras and TensorFlow where such a call starts (`seed`). TensorFlow's own
`tf.random.set_seed` also clears the eager context's kernel caches: that is
what starts a stateful random op's kernel again, and it also makes every
compiled function instantiate again (Grappler included): 60-100 ms of a
10-step `train` or a one-batch `evaluate` on the calls benchmark's TF2
model_fn, most of such a call.

So the caches are cleared only when a kernel in them holds a random
sequence that the runtime's calls started: a seeded stateful random op
that ran eagerly in an input_fn, a model_fn or the engine (`watching` sees
those), or a compiled loop the engine keeps and runs again that holds one
(`mark_random_state`). Otherwise the seed is set as `tf.random.set_seed`
sets it, without the clearing. Random ops a program runs outside the
runtime's calls keep their place in their sequence, as they did with
tf.estimator 2.15, which never seeded the eager context.
"""

import contextlib
import functools
import random
import threading
from typing import Callable, Iterator

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.framework import op_callbacks  # pylint: disable=g-direct-tensorflow-import

_lock = threading.Lock()
# Whether a kernel holding a random sequence a call started may be cached
# since the caches were last cleared (process-wide, as the caches are).
_random_kernels_cached = True  # Unknown until the first clearing.


def mark_random_state() -> None:
  """Notes that a kernel holding a random sequence ran (a kept compiled
  loop with a seeded stateful random op): the next `seed` clears."""
  global _random_kernels_cached
  with _lock:
    _random_kernels_cached = True


_SEED_ATTRS = ('seed', 'seed2', b'seed', b'seed2')


def _is_seeded_stateful_random(op_type, attrs) -> bool:
  """Whether an eagerly run op draws from a sequence its kernel keeps: a
  seed attribute set, not a stateless op. (`attrs` alternate names and
  values; names are str or bytes, as TensorFlow's paths hand them.)"""
  if not attrs:
    return False
  if isinstance(op_type, bytes):
    op_type = op_type.decode('utf-8', 'replace')
  if op_type.startswith('Stateless'):
    return False
  return any(name in _SEED_ATTRS and value
             for name, value in zip(attrs[::2], attrs[1::2]))


def _note_op(op_type, inputs, attrs, outputs, op_name=None, graph=None):
  """An op callback: an eagerly run seeded stateful random op marks."""
  del inputs, outputs, op_name
  if graph is not None:
    return None
  try:
    seeded = _is_seeded_stateful_random(op_type, attrs)
  except Exception:  # pylint: disable=broad-except
    seeded = True  # Never fails the op; unsure means clear at the next seed.
  if seeded:
    mark_random_state()
  return None


@contextlib.contextmanager
def watching() -> Iterator[None]:
  """Within: every op this thread runs eagerly is looked at, and a seeded
  stateful random op marks (`mark_random_state`). Ops built into graphs
  are not: a compiled loop is looked at as a whole (`loop_has_random_state`)."""
  op_callbacks.add_op_callback(_note_op)
  try:
    yield
  finally:
    op_callbacks.remove_op_callback(_note_op)


def watched(method: Callable) -> Callable:
  """`method`, run `watching` (not for generators: they run later)."""
  @functools.wraps(method)
  def wrapper(*args, **kwargs):
    with watching():
      return method(*args, **kwargs)
  return wrapper


def loop_has_random_state(graph: tf.Graph) -> bool:
  """Whether a compiled loop's traced `graph` holds a seeded stateful
  random op, whose kernel keeps its place in its sequence between runs."""
  from estimator_rt.training import graph_identity  # pylint: disable=g-import-not-at-top
  return graph_identity.runs_seeded_random_ops(graph)


def seed(value: int) -> None:
  """Seeds Python's `random`, NumPy, Keras and TensorFlow's eager op seeds
  with `value`, as `keras.utils.set_random_seed` does, clearing the kernel
  caches only if a call's random sequence may be in them (see the module
  docstring)."""
  global _random_kernels_cached
  ctx = context.context()
  with _lock:
    clear = _random_kernels_cached or not _can_seed_without_clearing(ctx)
    _random_kernels_cached = False
  if clear:
    keras.utils.set_random_seed(value)
    return
  _seed_keras(value)
  random.seed(value)
  np.random.seed(value)
  # tf.random.set_seed's eager part (context.Context._set_global_seed)
  # without its TFE_ContextClearCaches: ops made from now on draw the same
  # op seeds as after a new seed.
  ctx._seed = value  # pylint: disable=protected-access
  ctx._rng = random.Random(value)  # pylint: disable=protected-access


def _can_seed_without_clearing(ctx) -> bool:
  """Whether this TensorFlow's and Keras's seeding can be done piecewise
  (the attributes `seed` sets exist); if not, `seed` clears as before."""
  return (tf.executing_eagerly() and hasattr(ctx, '_seed') and
          hasattr(ctx, '_rng') and _keras_seed_names() is not None)


def _keras_seed_names():
  """(global_state module, the global seed's name, the global
  SeedGenerator's name) of this Keras, or None."""
  try:
    from keras.src.backend.common import global_state  # pylint: disable=g-import-not-at-top
    from keras.src.random import seed_generator  # pylint: disable=g-import-not-at-top
    from keras.src.utils import rng_utils  # pylint: disable=g-import-not-at-top
    return (global_state, rng_utils.GLOBAL_RANDOM_SEED,
            seed_generator.GLOBAL_SEED_GENERATOR)
  except (ImportError, AttributeError):
    return None


def _seed_keras(value: int) -> None:
  """What keras.utils.set_random_seed sets in Keras itself: the global
  seed, and no global SeedGenerator (the next is made from the seed)."""
  global_state, seed_name, generator_name = _keras_seed_names()
  global_state.set_global_attribute(seed_name, value)
  global_state.set_global_attribute(generator_name, None)
