"""Training input that overlaps the step: the input_fn's dataset prefetched.

Without a prefetch, a training step's `get_next` computes its batch while
the step waits; with one, a tf.data thread computes the next batches while
the step runs. Both engines train on `overlapped(dataset)`.

Only a `prefetch` is added, of a fixed `PREFETCH_BATCHES`: it cannot change
the elements or their order, and it leaves the dataset's options as the user
set them. In particular it does not turn tf.data autotuning on or off (a
user's or a test's `options.autotune.enabled = False` stays: on a 2-core
machine, runs with autotuning sat idle for seconds at exit, DESIGN.md), and
it sets no parallelism: what could be parallelized without changing the
elements is tf.data's default already (TensorFlow 2.16+: stateless maps and
batch copying, `experimental_optimization.map_parallelization` and
`parallel_batch`), and a user who turned that off keeps it off.

A pipeline that already prefetches (a `prefetch` anywhere in the chain of
datasets the input_fn returned) is left as it is: its author chose the
buffer.
"""

import tensorflow as tf

# Batches computed ahead of the step: one in flight while the step runs and
# one ready for the next; more only holds memory on a CPU-bound machine.
PREFETCH_BATCHES = 2


def prefetches(dataset: tf.data.Dataset) -> bool:
  """Whether `dataset` or any dataset it is built from is a `prefetch`
  (tf.data's own classes: `Dataset.prefetch` makes a `_PrefetchDataset`)."""
  pending, seen = [dataset], set()
  while pending:
    current = pending.pop()
    if id(current) in seen:
      continue
    seen.add(id(current))
    if type(current).__name__ == '_PrefetchDataset':
      return True
    try:
      pending.extend(current._inputs())  # pylint: disable=protected-access
    except (AttributeError, NotImplementedError):
      pass  # A dataset class that does not list its inputs: stop there.
  return False


def overlapped(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """`dataset` with `PREFETCH_BATCHES` batches prefetched, unless it already
  prefetches (see the module docstring); the same elements in the same
  order either way."""
  if prefetches(dataset):
    return dataset
  return dataset.prefetch(PREFETCH_BATCHES)
