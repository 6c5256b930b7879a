"""From an `input_fn` to the input a compiled loop iterates over.

Two kinds of input_fn, as in DESIGN.md:

* one that declares `input_context` shards and batches itself with the
  per-replica batch size; the strategy calls it once per input pipeline
  (`distribute_datasets_from_function`);
* one that does not returns a globally batched dataset; the strategy splits
  each batch across replicas and, across workers, shards the dataset by the
  RunConfig's `auto_shard_policy` (`experimental_distribute_dataset`).
"""

import dataclasses
import functools
import itertools
import os
import re
import shutil
import tempfile
from typing import Any, Callable, Iterator, Tuple

from absl import logging
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.inputs import overlap as input_overlap
from estimator_rt.inputs import quick_start
from estimator_rt.inputs import read_once
from estimator_rt.inputs import slice_batches
from estimator_rt.core import user_fns
from estimator_rt.core.errors import InputFnError

_POLICIES = {
    'AUTO': tf.data.experimental.AutoShardPolicy.AUTO,
    'FILE': tf.data.experimental.AutoShardPolicy.FILE,
    'DATA': tf.data.experimental.AutoShardPolicy.DATA,
    'OFF': tf.data.experimental.AutoShardPolicy.OFF,
}


def split_element(element: Any) -> Tuple[Any, Any]:
  """(features, labels) of a dataset element; labels is None if absent."""
  if isinstance(element, tuple):
    if len(element) == 2:
      return element[0], element[1]
    if len(element) == 1:
      return element[0], None
  return element, None


@dataclasses.dataclass(frozen=True)
class DistributedInput:
  """An input_fn's data, ready for a strategy.

  Attributes:
    dataset: what to iterate in a compiled loop (a distributed dataset, or
      the plain dataset under the default strategy; with `one_pass`, an
      iterator of its elements, the sample's first).
    sample: one local batch as (features, labels), for the build call.
    element_spec: the `element_spec` of the local dataset.
    infinite: whether the dataset repeats forever (then loops need no
      end-of-input check, which saves work on every step).
  """

  dataset: Any
  sample: Tuple[Any, Any]
  element_spec: Any
  infinite: bool


# Errors reading a dataset's first batch that come from the data or the
# pipeline the input_fn built (a missing or corrupt file, a failing map or
# py_function, a shape that does not batch), not from the machine.
_DATA_ERRORS = (tf.errors.NotFoundError, tf.errors.InvalidArgumentError,
                tf.errors.DataLossError, tf.errors.PermissionDeniedError,
                tf.errors.FailedPreconditionError, tf.errors.UnknownError)


def _first_element(dataset: tf.data.Dataset, role: str,
                   fn) -> Tuple[Any, Iterator[Any]]:
  """(the first element of `dataset`, the iterator it came from), read
  before anything is written; raises InputFnError if there is none or
  reading it (or starting the iterator) fails on the data."""
  try:
    iterator = iter(dataset)
    for element in iterator:
      return element, iterator
  except _DATA_ERRORS as e:
    raise InputFnError(
        f'{role} {user_fns.fn_name(fn)}: reading its first batch failed with '
        f'{user_fns.describe_exception(e)}') from e
  raise InputFnError(
      f'{role} {user_fns.fn_name(fn)!r} returned an empty '
      'dataset; it must yield at least one batch.')


def _undistributed(strategy: tf.distribute.Strategy) -> bool:
  """Whether `strategy` is the default one, outside any strategy's scope:
  it hands a dataset's elements on as they are."""
  return (not tf.distribute.has_strategy() and
          strategy is tf.distribute.get_strategy())


def make_input(strategy: tf.distribute.Strategy, input_fn: Callable,
               params: dict, *, auto_shard_policy: str = 'AUTO',
               role: str = 'input_fn', sample_only: bool = False,
               coordinator=None, replicate: bool = False,
               overlap: bool = False, one_pass: bool = False,
               config: Any = None) -> DistributedInput:
  """Calls `input_fn` and distributes its dataset with `strategy`.

  Args:
    strategy: the strategy whose replicas consume the data.
    input_fn: the user's input function.
    params: the Estimator's params (`params['batch_size']`, if present, is
      the global batch size).
    auto_shard_policy: 'AUTO', 'FILE', 'DATA' or 'OFF' for global datasets.
    role: names the function in errors (and its mode, see
      user_fns.call_input_fn).
    config: the Estimator's RunConfig, for input_fns that take `config`.
    sample_only: only produce `sample` and `element_spec` (for export);
      `dataset` is then None.
    coordinator: a `ClusterCoordinator` (parameter-server training): the
      dataset is then created on every worker (`create_per_worker_dataset`).
      Each worker reads the whole input_fn dataset, as with tf.estimator's
      parameter servers: shuffle it, and make it repeat.
    replicate: leave the global dataset undistributed (`dataset` is the
      input_fn's own): every worker iterates all of it and each replica
      takes its rows of each global batch (`split_across_replicas`). So
      every worker's iterator is in the same state and one iterator saved
      by the chief restores them all (checkpoint_input). input_fns that
      take an input_context are refused when there are several replicas:
      their batches are per replica.
    overlap: prefetch each dataset the input_fn returns onto the step
      (`input_overlap.overlapped`) and, with one replica, read in-memory
      slices a batch at a time (`slice_batches.gathered`): the same elements
      in the same order; training passes True.
    one_pass: under the default strategy, `dataset` is the iterator
      `sample` came from, `sample`'s element first (iterable once): the
      dataset is read once, as 2.15 read it (a stream's first element not
      twice). Prediction passes True; ignored where the data is distributed.
      Without it, a dataset over Python state is read once too (read_once),
      also where a strategy splits its batches in this process.

  Raises:
    InputFnError: the input_fn returned no dataset or an empty one.
  """
  takes_context = user_fns.input_fn_takes_context(input_fn)
  if replicate and takes_context:
    _refuse_context_with_replicas(strategy, input_fn, role)
  call = _dataset_maker(strategy, input_fn, params, role=role, config=config,
                        overlap=overlap, coordinator=coordinator)
  local = call(_one_pipeline(strategy) if takes_context else None)
  # The loop reads this call's dataset, in this process (not export's
  # sample alone, checkpoint_input's saved iterator or parameter servers'
  # per-worker datasets).
  in_process = not (sample_only or replicate) and coordinator is None
  undistributed = in_process and _undistributed(strategy)
  one_pass = one_pass and undistributed
  reads_on = in_process and not one_pass and _reads_on(
      local, undistributed or _split_here(strategy, local, takes_context))
  cardinality = int(local.cardinality())
  if one_pass:
    local = quick_start.started_quickly(local, cardinality)
  reader = _first_batch_reader(local, read_on=one_pass or reads_on)
  first, iterator = _first_element(reader, role, input_fn)
  sample = split_element(first)
  infinite = cardinality == int(tf.data.INFINITE_CARDINALITY)
  if one_pass:
    distributed = itertools.chain([first], iterator)
  elif sample_only:
    distributed = None
  else:
    if reads_on:
      # The loop (or the strategy splitting its batches) goes on from the
      # iterator the first batch came from; a default strategy hands it on.
      local = read_once.read_on(first, iterator, local)
    distributed = _for_the_strategy(
        strategy, local, call, takes_context=takes_context,
        coordinator=coordinator, replicate=replicate, infinite=infinite,
        auto_shard_policy=auto_shard_policy, role=role, input_fn=input_fn)
  return DistributedInput(dataset=distributed, sample=sample,
                          element_spec=local.element_spec, infinite=infinite)


def _first_batch_reader(local: tf.data.Dataset, *,
                        read_on: bool) -> tf.data.Dataset:
  """What make_input reads the first batch from: `local` itself where the
  loop reads on from that iterator (`read_on`), else a take(1) of it
  started without tf.data's rewrites (prefetching ahead, parallel maps),
  which cost more than that one batch."""
  if read_on:
    return local
  return quick_start.started_quickly(local.take(1), 1)


def _for_the_strategy(strategy: tf.distribute.Strategy,
                      local: tf.data.Dataset, call: Callable, *,
                      takes_context: bool, coordinator, replicate: bool,
                      infinite: bool, auto_shard_policy: str, role: str,
                      input_fn: Callable):
  """make_input's `dataset` read afresh by the loop: per worker
  (`coordinator`), undistributed (`replicate`) or distributed."""
  if coordinator is not None:
    require_repeating(infinite, what='parameter-server training')
    return coordinator.create_per_worker_dataset(
        lambda: strategy.distribute_datasets_from_function(
            lambda context: call(context if takes_context else None)))
  if replicate:
    if not takes_context:
      _check_splittable(local.element_spec, role, input_fn)
    return local  # Its batch is the global batch.
  return _distribute(strategy, local, call, takes_context=takes_context,
                     auto_shard_policy=auto_shard_policy)


def _reads_on(local: tf.data.Dataset, same_pipeline: bool) -> bool:
  """Whether the loop's dataset goes on from the iterator the first batch
  came from: a dataset over Python state (a generator, a stream) that the
  loop reads as this process's one pipeline (`same_pipeline`), read once as
  2.15 read it (read_once.py)."""
  return (same_pipeline and read_once.reads_python_state(local) and
          read_once.can_read_on(local))


def _split_here(strategy: tf.distribute.Strategy, local: tf.data.Dataset,
                takes_context: bool) -> bool:
  """Whether a strategy splits `local`'s own batches across its replicas
  (`_distribute`'s experimental_distribute_dataset), rather than have the
  input_fn called again for its loop: once per input pipeline (it takes an
  input_context) or once per replica (`_per_replica_call`)."""
  return not takes_context and not _per_replica_call(strategy,
                                                     local.element_spec)


def _per_replica_call(strategy: tf.distribute.Strategy,
                      element_spec) -> bool:
  """Whether elements with a part that has no batch dimension (a scalar)
  are made by calling the input_fn once per replica: such a part cannot be
  split across several replicas."""
  return (strategy.num_replicas_in_sync > 1 and
          _has_unbatched_part(element_spec))


def _one_pipeline(strategy: tf.distribute.Strategy
                  ) -> tf.distribute.InputContext:
  """The input context of the one input pipeline a local dataset is."""
  return tf.distribute.InputContext(
      num_input_pipelines=1, input_pipeline_id=0,
      num_replicas_in_sync=strategy.num_replicas_in_sync)


def _refuse_context_with_replicas(strategy: tf.distribute.Strategy,
                                  input_fn: Callable, role: str) -> None:
  """make_input(replicate=True) of an input_fn that takes an input_context
  is refused with several replicas: its batches are per replica."""
  if strategy.num_replicas_in_sync > 1:
    raise InputFnError(
        f'{role} {user_fns.fn_name(input_fn)!r} takes an input_context, '
        'which checkpoint_input does not support with a strategy: with '
        'checkpoint_input every worker reads the global batch and each '
        'replica takes its rows, so that one saved iterator resumes them '
        'all. Return globally batched data from input_fn(params), or turn '
        'checkpoint_input off.')


def _dataset_maker(strategy: tf.distribute.Strategy, input_fn: Callable,
                   params: dict, *, role: str, config: Any, overlap: bool,
                   coordinator) -> Callable:
  """make_input's `call(input_context)`: the input_fn's dataset
  (user_fns.call_input_fn), with `overlap` prefetched onto the step."""
  call = functools.partial(user_fns.call_input_fn, input_fn, params,
                           role=role, config=config)
  if not overlap:
    return call
  # One replica reads the dataset as it is: it may be rebuilt to read
  # in-memory slices a batch at a time. Distributed, the strategy rebatches
  # or shards it by its batch op, which the rebuilt one has not.
  gather = strategy.num_replicas_in_sync == 1 and coordinator is None
  return lambda context: input_overlap.overlapped(
      slice_batches.gathered(call(context)) if gather else call(context))


def _distribute(strategy: tf.distribute.Strategy, local: tf.data.Dataset,
                call: Callable, *, takes_context: bool,
                auto_shard_policy: str):
  """The input_fn's data distributed over the strategy's replicas."""
  if takes_context:
    if _undistributed(strategy):
      # The default strategy would call the input_fn again, with the one
      # pipeline's context `local` was made with.
      return local
    # The input_fn shards and batches itself, once per input pipeline.
    return strategy.distribute_datasets_from_function(call)
  if _per_replica_call(strategy, local.element_spec):
    # Elements without a batch dimension cannot be split across replicas:
    # each replica takes its own element instead, as tf.estimator's
    # replicas did.
    return strategy.distribute_datasets_from_function(
        lambda context: call(None))
  if _undistributed(strategy):
    # The default strategy hands the dataset on as it is; an auto-shard
    # option would only cost a dataset op per call.
    return strategy.experimental_distribute_dataset(local)
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = _POLICIES[
      auto_shard_policy]
  return strategy.experimental_distribute_dataset(local.with_options(options))


def require_repeating(infinite: bool, *, what: str) -> None:
  """Refuses a finite training input where the training length must come
  from max_steps (`what` names the training, e.g. 'parameter-server
  training'): workers that run out of input would leave the others
  waiting, or idle."""
  if not infinite:
    raise InputFnError(
        f'train input_fn returns a finite dataset; {what} needs one that '
        'repeats forever (add .repeat()); training length comes from '
        'max_steps.')


def _has_unbatched_part(element_spec) -> bool:
  """Whether some component of the elements is a scalar (no batch
  dimension to split)."""
  return any(getattr(spec, 'shape', None) is not None and spec.shape.rank == 0
             for spec in tf.nest.flatten(element_spec))


def _check_splittable(element_spec, role: str, fn) -> None:
  """`split_across_replicas` slices dense tensors along their batch axis."""
  for spec in tf.nest.flatten(element_spec):
    if not isinstance(spec, tf.TensorSpec) or spec.shape.rank == 0:
      raise InputFnError(
          f'{role} {user_fns.fn_name(fn)}: with checkpoint_input and a '
          f'strategy every element must be a batched dense tensor, got '
          f'{spec}. Turn checkpoint_input off for this input.')


def share_of_batch(element: Any, index, count) -> Any:
  """Part `index` of `count` of `element`, a batch of b rows: rows
  [index * b // count, (index + 1) * b // count) of every tensor,
  consecutive and as even as b allows. `index` may be a tensor."""
  rows = tf.shape(tf.nest.flatten(element)[0])[0]
  start = index * rows // count
  end = (index + 1) * rows // count
  return tf.nest.map_structure(lambda t: t[start:end], element)


def split_across_replicas(strategy: tf.distribute.Strategy,
                          element: Any) -> Any:
  """Each replica's rows of `element`, a global batch every worker holds
  (`share_of_batch`). The global replica id is used, so the workers of a
  multi-worker strategy take disjoint rows."""
  return strategy.experimental_distribute_values_from_function(
      lambda context: share_of_batch(element,
                                     context.replica_id_in_sync_group,
                                     context.num_replicas_in_sync))


def fingerprint(element: Any) -> tf.Tensor:
  """A float64 summary of `element`'s values and their order: two workers
  whose first batches differ get different fingerprints (but for a
  vanishingly unlikely coincidence). Numeric tensors only; others count 0."""
  total = tf.constant(0.0, tf.float64)
  for tensor in tf.nest.flatten(element):
    if not isinstance(tensor, tf.Tensor) or not (
        tensor.dtype.is_floating or tensor.dtype.is_integer or
        tensor.dtype.is_bool):
      continue
    values = tf.reshape(tf.cast(tensor, tf.float64), [-1])
    # Position weights make the sum depend on the order, not just the set.
    weights = 1.0 + tf.range(tf.size(values), dtype=tf.float64) / 7919.0
    total += tf.reduce_sum(values * weights)
  return total


def batch_size_of(features: Any) -> tf.Tensor:
  """The leading dimension of the first tensor in `features`, as float32."""
  first = tf.nest.flatten(features)[0]
  return tf.cast(tf.shape(first)[0], tf.float32)


# Where the input iterator sits in a training checkpoint (checkpoint_input).
ITERATOR_KEY = 'input_iterator'


def check_checkpointable(iterator, *, role: str) -> None:
  """Saves `iterator` once to a temporary directory, so that a pipeline
  TensorFlow cannot checkpoint is refused before model_dir is written.

  The probe writes the iterator's buffers (a large shuffle buffer too), once.
  `iterator` is a plain dataset iterator (`make_input(replicate=True)`):
  TensorFlow 2.21's distributed iterators cannot be saved at all.

  Raises:
    InputFnError: TensorFlow cannot save the dataset's iterator; names the
      transformation it complains about.
  """
  directory = tempfile.mkdtemp(prefix='estimator_rt_input_probe_')
  try:
    tf.train.Checkpoint(iterator=iterator).write(
        os.path.join(directory, 'probe'))
  except (tf.errors.OpError, ValueError, TypeError) as e:
    message = ' '.join(str(getattr(e, 'message', e)).split())
    named = _uncheckpointable_part(message)
    raise InputFnError(
        f'checkpoint_input=True: the dataset of {role} cannot be '
        f'checkpointed{named}: {message[:300]}. Turn checkpoint_input off '
        'or make the pipeline checkpointable (no Dataset.from_generator, no '
        'py_function or numpy_function in a map).') from None
  finally:
    shutil.rmtree(directory, ignore_errors=True)


def _uncheckpointable_part(message: str) -> str:
  """' (names it)' for what in the pipeline TensorFlow refused to save,
  read from its error message; '' if the message does not say."""
  stateful = re.search(r'\b([A-Za-z0-9_]+) is stateful', message)
  if stateful:
    op = stateful.group(1)
    # Stateful ops TensorFlow cannot save in an iterator: Python's.
    source = read_once.PYTHON_STATE_OPS.get(op)
    return (f' (it uses {source}: TensorFlow cannot save the state of its '
            f'{op} op)' if source else f' (its stateful op {op})')
  dataset = re.search(r'\b([A-Za-z0-9_]*Dataset[A-Za-z0-9_]*)\b', message)
  return f' ({dataset.group(1)})' if dataset else ''


def restore_iterator(iterator, path: str) -> bool:
  """Restores `iterator`'s position from checkpoint `path`, if it holds one.

  A checkpoint written without input state (checkpoint_input off, or an
  older run) leaves the input at its beginning, with one warning.

  Returns:
    Whether the position was restored.
  """
  keys = checkpoints.reader(path).get_variable_to_shape_map()
  if not any(key.startswith(ITERATOR_KEY + '/') for key in keys):
    logging.warning(
        'Checkpoint %s holds no input iterator state (saved with '
        'checkpoint_input off); the input starts from its beginning.', path)
    return False
  checkpoint = tf.train.Checkpoint(**{ITERATOR_KEY: iterator})
  checkpoint.read(path).expect_partial()
  return True
