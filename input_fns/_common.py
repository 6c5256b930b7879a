"""Helpers shared by the bundled input_fns: params, sharding and batching.

The contract (see DESIGN.md): `params['batch_size']` is the GLOBAL batch
size. An input_fn called with a `tf.distribute.InputContext` shards itself
(one shard per input pipeline) and batches with the per-replica batch size;
called without one, it batches globally and leaves sharding and splitting
to the runtime. `shard_and_batch` implements that once for every input_fn.
"""

import math
from typing import Any, Callable, Mapping, Optional

import tensorflow as tf

from estimator_rt.core.errors import InputFnError
from estimator_rt.core.errors import shorten

# The features key the bundled model_fns read.
FEATURES_KEY = 'x'

# The largest global batch any bundled input_fn accepts: 16,777,216
# examples. Those that know their data set's size (digits, synthetic, tfds)
# refuse any batch larger than the data set; this bound is what stops an
# absurd batch_size where the size is unknown (files), before tf.data tries
# to fill a batch of that many examples and exhausts memory.
MAX_BATCH_SIZE = 2**24


def check_params(name: str, params: Any) -> Mapping[str, Any]:
  """Returns `params` (a mapping), or raises InputFnError naming `name`."""
  if params is None:
    return {}
  if not isinstance(params, Mapping):
    raise InputFnError(
        f'{name}: params must be a dict, got {type(params).__name__}: '
        f'{shorten(params)}')
  return params


def required(name: str, params: Mapping[str, Any], key: str) -> Any:
  """Returns `params[key]`, raising InputFnError if it is missing or None."""
  value = params.get(key)
  if value is None:
    raise InputFnError(
        f'{name}: params[{key!r}] is required but was not given.')
  return value


def int_param(name: str, params: Mapping[str, Any], key: str,
              default: Optional[int], *, minimum: int = 1) -> Optional[int]:
  """Returns `params.get(key, default)`, checked to be an int >= minimum.

  A None value (given, or as the default) is returned unchanged.
  """
  value = params.get(key, default)
  if value is None:
    return None
  if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
    raise InputFnError(
        f'{name}: params[{key!r}] must be an integer >= {minimum}, got '
        f'{shorten(value)}.')
  return value


def float_param(name: str, params: Mapping[str, Any], key: str,
                default: float, *, minimum: float = 0.0) -> float:
  """Returns `params.get(key, default)` as a float >= minimum."""
  value = params.get(key, default)
  if isinstance(value, bool) or not isinstance(value, (int, float)) or (
      not math.isfinite(value) or value < minimum):
    raise InputFnError(
        f'{name}: params[{key!r}] must be a finite number >= {minimum}, got '
        f'{shorten(value)}.')
  return float(value)


def bool_param(name: str, params: Mapping[str, Any], key: str,
               default: bool) -> bool:
  """Returns `params.get(key, default)`, checked to be a bool."""
  value = params.get(key, default)
  if not isinstance(value, bool):
    raise InputFnError(
        f'{name}: params[{key!r}] must be True or False, got '
        f'{shorten(value)}.')
  return value


def num_epochs(name: str, params: Mapping[str, Any], *,
               repeat_default: bool) -> Optional[int]:
  """Resolves params 'num_epochs' and 'repeat' into a number of passes.

  'num_epochs', when given, is the number of passes and takes precedence.
  Otherwise 'repeat' (default `repeat_default`) chooses between forever
  (returned as None) and one pass.
  """
  epochs = int_param(name, params, 'num_epochs', None)
  if epochs is not None:
    return epochs
  return None if bool_param(name, params, 'repeat', repeat_default) else 1


def global_batch_size(name: str, params: Mapping[str, Any], *,
                      num_examples: Optional[int] = None,
                      data: str = 'the data set') -> int:
  """Returns params['batch_size'], the global batch size, checked.

  Call it before materialising anything big: it is the cheap refusal of a
  batch that could never be filled, or only by exhausting memory.

  Args:
    name: the input_fn's name, for error messages.
    params: the input_fn's params.
    num_examples: the size of the data set, when it is known; a batch_size
      above it is refused (even a repeating data set: a batch spanning
      several epochs is a mistake, not a request).
    data: names the data set in the error, e.g. 'the digits train split'.

  Raises:
    InputFnError: 'batch_size' is missing, not an integer in [1,
      MAX_BATCH_SIZE], or larger than `num_examples`.
  """
  value = required(name, params, 'batch_size')
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise InputFnError(
        f"{name}: params['batch_size']={shorten(value)} must be an integer "
        f'from 1 to {MAX_BATCH_SIZE}.')
  if num_examples is not None and value > num_examples:
    raise InputFnError(
        f"{name}: params['batch_size']={shorten(value)} is larger than "
        f'{data} ({num_examples} examples); give a batch_size of at most '
        f'{num_examples}.')
  if value > MAX_BATCH_SIZE:
    raise InputFnError(
        f"{name}: params['batch_size']={shorten(value)} must be an integer "
        f'from 1 to {MAX_BATCH_SIZE}.')
  return value


def batch_size(name: str, params: Mapping[str, Any],
               input_context: Optional[tf.distribute.InputContext]) -> int:
  """Returns the batch size this pipeline batches with.

  That is params['batch_size'] (the global batch size) without an input
  context, and the per-replica share of it with one.

  Raises:
    InputFnError: 'batch_size' is missing, not an integer in [1,
      MAX_BATCH_SIZE], or not divisible by the number of replicas in sync.
  """
  global_batch = global_batch_size(name, params)
  if input_context is None:
    return global_batch
  try:
    return input_context.get_per_replica_batch_size(global_batch)
  except ValueError as e:
    raise InputFnError(
        f"{name}: params['batch_size']={global_batch} (the global batch "
        'size) is not divisible by the number of replicas in sync, '
        f'{input_context.num_replicas_in_sync}.') from e


def shard(dataset: tf.data.Dataset,
          input_context: Optional[tf.distribute.InputContext]
         ) -> tf.data.Dataset:
  """Keeps this input pipeline's shard of `dataset`.

  Element i goes to pipeline i % num_input_pipelines, so the pipelines
  together see every element exactly once. Without an input context (or
  with one pipeline) `dataset` is returned unchanged.
  """
  if input_context is None or input_context.num_input_pipelines == 1:
    return dataset
  return dataset.shard(input_context.num_input_pipelines,
                       input_context.input_pipeline_id)


def shard_and_batch(
    dataset: tf.data.Dataset,
    *,
    name: str,
    params: Mapping[str, Any],
    input_context: Optional[tf.distribute.InputContext],
    epochs: Optional[int],
    shuffle_buffer: int = 0,
    seed: Optional[int] = None,
    already_sharded: bool = False,
    map_batch_fn: Optional[Callable[..., Any]] = None,
) -> tf.data.Dataset:
  """Shards, shuffles, repeats, batches and prefetches `dataset`.

  In that order: sharding first so that each pipeline shuffles only its own
  examples, and shuffling before repeating so that epochs do not mix
  (every example is seen once per epoch).

  Args:
    dataset: unbatched examples.
    name: the input_fn's name, for error messages.
    params: the input_fn's params; 'batch_size' (global, required) and the
      optional 'drop_remainder' are read here.
    input_context: the `tf.distribute.InputContext`, or None.
    epochs: number of passes over the data; None repeats forever.
    shuffle_buffer: size of the shuffle buffer; 0 or 1 disables shuffling.
    seed: shuffle seed; with a seed the order is the same on every run
      (still reshuffled between epochs).
    already_sharded: the caller sharded the data itself (by file), so it is
      not sharded again here.
    map_batch_fn: applied to each batch (e.g. vectorized parsing of
      serialized records); it must return (features, labels) or features.

  Returns:
    The batched dataset. params['drop_remainder'] defaults to True for an
    infinite stream (where no remainder exists anyway, and a static batch
    dimension helps the model_fn's shape checks) and to False for a finite
    one, so that an evaluation sees every example.
  """
  size = batch_size(name, params, input_context)
  drop_remainder = bool_param(name, params, 'drop_remainder', epochs is None)
  if not already_sharded:
    dataset = shard(dataset, input_context)
  if shuffle_buffer > 1:
    dataset = dataset.shuffle(shuffle_buffer, seed=seed,
                              reshuffle_each_iteration=True)
  if epochs is None:
    dataset = dataset.repeat()
  elif epochs > 1:
    dataset = dataset.repeat(epochs)
  dataset = dataset.batch(size, drop_remainder=drop_remainder)
  if map_batch_fn is not None:
    dataset = dataset.map(map_batch_fn, num_parallel_calls=tf.data.AUTOTUNE)
  return dataset.prefetch(tf.data.AUTOTUNE)
