"""A dataset's ops in a graph, read from the graph: the chain of
single-input dataset ops from the dataset down to the source of its
elements, with what each batch and take states in constants.

`quick_start` counts a few-element input's elements by it and
`constant_elements` slices a dataset of constants by it; each leaves a
dataset alone where its chain holds an op it does not know.
"""

from typing import FrozenSet, List, NamedTuple, Optional, Tuple

import tensorflow as tf

# Ops that make a dataset of the tensors they take (no input dataset).
SOURCE_OPS = frozenset({'TensorDataset', 'TensorSliceDataset'})
# Batching ops: (input dataset, batch_size, ..., drop_remainder last).
_BATCH_OPS = frozenset({'BatchDatasetV2', 'ParallelBatchDataset'})


class Step(NamedTuple):
  """A batch of `size` elements (the last smaller one dropped if `drop`)
  or a take of `size` elements (-1: all of them)."""
  kind: str  # 'batch' or 'take'.
  size: int
  drop: bool = False


def walk(dataset_op: tf.Operation, *, passes: FrozenSet[str],
         most: int) -> Optional[Tuple[List[Step], tf.Operation]]:
  """(the batches and takes from `dataset_op` down, outermost first; the
  source op, one of SOURCE_OPS) where the chain is only those, with
  constant arguments, and ops of `passes` (which the caller knows to keep
  what it reads), at most `most` ops in all; None otherwise."""
  steps = []
  op = dataset_op
  for _ in range(most):
    kind = op.type
    if kind in SOURCE_OPS:
      return steps, op
    if kind in _BATCH_OPS:
      size = tf.get_static_value(op.inputs[1])
      drop = tf.get_static_value(op.inputs[-1])
      if size is None or drop is None or int(size) <= 0:
        return None
      steps.append(Step('batch', int(size), bool(drop)))
    elif kind == 'TakeDataset':
      size = tf.get_static_value(op.inputs[1])
      if size is None:
        return None
      steps.append(Step('take', int(size)))
    elif kind not in passes:
      return None
    op = op.inputs[0].op
  return None
