"""A dataset over Python state read once, as tf.estimator 2.15 read it.

tf.estimator built its graph from the input iterator's symbolic `get_next`
and read the dataset through that one iterator. The eager engine builds its
model from a real first batch, read before anything is written (a missing
file or an empty dataset is refused then). For most datasets reading that
batch on an iterator of its own costs nothing a program sees: a dataset
over files or tensors yields the same elements on every pass. A dataset
whose elements come from Python state does not: `Dataset.from_generator`
over a generator object (or a stream, a socket) loses the batch read for
the build to an iterator that is then thrown away, and a generator function
is called once more; so does a `tf.py_function` map that reads a stream.

For those datasets `reads_python_state` says so, and `read_on` gives the
training or evaluation loop a dataset that starts with the batch already
read and goes on from the same iterator: the source is read once, in
order, every batch reaching the loop. The price is one Python call per
batch (`from_generator`'s), paid only by datasets that already run Python
per element.
"""

import itertools
from typing import Any, Iterator

import tensorflow as tf

# The ops that run Python with state of its own, by the transformation a
# user writes that puts them in a pipeline. A numpy_function declared
# stateless (PyFuncStateless) gives the same elements on every pass.
PYTHON_STATE_OPS = {
    'PyFunc': 'Dataset.from_generator or tf.numpy_function',
    'EagerPyFunc': 'tf.py_function',
}

# The element specs `from_generator` can yield.
_YIELDABLE_SPECS = (tf.TensorSpec, tf.RaggedTensorSpec, tf.SparseTensorSpec)


def _function_ops(function) -> set:
  """The op types of a dataset transformation's function, with those of
  the functions it calls (a `flat_map` over a `from_generator`)."""
  graph_def = function.function.graph.as_graph_def()
  ops = {node.op for node in graph_def.node}
  for library_function in graph_def.library.function:
    ops.update(node.op for node in library_function.node_def)
  return ops


def reads_python_state(dataset: tf.data.Dataset) -> bool:
  """Whether `dataset`, or a dataset it reads, runs Python with state of
  its own (PYTHON_STATE_OPS) in a transformation's function; False for a
  dataset whose structure TensorFlow does not expose to Python.

  Walks the Python dataset objects, not a serialized graph: a dataset over
  large in-memory tensors would copy them into the serialization."""
  pending, seen = [dataset], set()
  try:
    while pending:
      current = pending.pop()
      if id(current) in seen:
        continue
      seen.add(id(current))
      for function in current._functions():  # pylint: disable=protected-access
        if _function_ops(function) & PYTHON_STATE_OPS.keys():
          return True
      pending.extend(current._inputs())  # pylint: disable=protected-access
  except (AttributeError, TypeError, ValueError):
    return False
  return False


def can_read_on(dataset: tf.data.Dataset) -> bool:
  """Whether `read_on` can carry `dataset`'s elements (`from_generator`
  yields tensors, ragged and sparse tensors only)."""
  return all(isinstance(spec, _YIELDABLE_SPECS)
             for spec in tf.nest.flatten(dataset.element_spec))


def _copied(element: Any) -> Any:
  """`element` with each tensor in a buffer of its own.

  `from_generator` hands TensorFlow back the buffers of the eager tensors
  it is given, and the loop's ops may then write their results into them
  in place (TensorFlow reuses a buffer it counts as its alone). Those
  buffers are the source dataset's elements, which can be the program's
  own NumPy arrays (a generator yielding slices of them): under two
  Mirrored replicas the loop overwrote the labels array a program's
  generator sliced, and every later training and evaluation of those
  arrays computed wrong values (tests/test_estimator.py). A copy per
  element keeps what the loop may overwrite the runtime's own."""
  return tf.nest.map_structure(lambda tensor: tf.raw_ops.DeepCopy(x=tensor),
                               element, expand_composites=True)


def read_on(first: Any, iterator: Iterator[Any],
            dataset: tf.data.Dataset) -> tf.data.Dataset:
  """A dataset of `first` and then the rest of `iterator`, the iterator of
  `dataset` that `first` came from, with `dataset`'s element spec.

  The first iterator made over it reads on; any later one reads `dataset`
  anew (a loop traced on one iterator and run on another still gets
  every element of a pass)."""
  unread = [itertools.chain([first], iterator)]

  def elements():
    return map(_copied, unread.pop() if unread else iter(dataset))

  return tf.data.Dataset.from_generator(
      elements, output_signature=dataset.element_spec)
