"""Whether two graphs built by two calls are the same graph, and whether a
graph runs again in its session as it would in a new one.

tf.estimator 2.15 built a new graph for every call, calling the input_fn
and the model_fn again. Two builds of the same code give the same GraphDef
but for names TensorFlow numbers for the whole process: the functions of a
graph (a dataset's `map`, a `tf.cond`'s branches; `..._true_4016`) and
custom gradients' types (`CustomGradient-3723`). `fingerprint` hashes a
graph's nodes, and the functions they use, with those numbered names
replaced by their order of first use, so two builds of the same code
agree, and any other difference (a constant, a shape, an attribute, a
node) makes them differ.
"""

import hashlib
from typing import Dict, List, Optional

import tensorflow as tf
from tensorflow.core.framework import function_pb2  # pylint: disable=g-direct-tensorflow-import

# Attributes whose string values TensorFlow numbers process-wide.
_NUMBERED_STRINGS = ('_gradient_op_type',)
# The attribute listing the nodes a node is colocated with (`loc:@name`),
# and what stands for the derived ones (see `fingerprint`).
_COLOCATION = '_class'
_DERIVED = b'loc:@<derived>'


def _functions_used(attr_map) -> List[str]:
  used = []
  for key in sorted(attr_map):
    value = attr_map[key]
    if value.HasField('func'):
      used.append(value.func.name)
    used.extend(function.name for function in value.list.func)
  return used


class _Canonical:
  """Numbered names -> their order of first use in one GraphDef; the names
  of `derived` nodes in colocation attributes -> one mark."""

  def __init__(self, derived: frozenset = frozenset()):
    self._names: Dict[str, str] = {}
    self._derived = derived

  def name(self, name: str) -> str:
    if name not in self._names:
      self._names[name] = f'__{len(self._names)}'
    return self._names[name]

  def _canonical_already(self, message, attr_maps) -> bool:
    """Whether `message` holds nothing `serialized` would change (most
    nodes: no function, numbered string or colocation to rename)."""
    if isinstance(message, function_pb2.FunctionDef):
      return False
    for attr_map in attr_maps(message):
      for key, value in attr_map.items():
        # One look at which value the attribute holds: reading `list` or
        # `s` of an attribute holding something else costs a message each.
        kind = value.WhichOneof('value')
        if (kind == 'func' or (kind == 'list' and value.list.func) or
            (kind == 's' and key in _NUMBERED_STRINGS and value.s) or
            (key == _COLOCATION and self._derived)):
          return False
    return True

  def serialized(self, message, attr_maps) -> bytes:
    """`message` (a NodeDef or FunctionDef) serialized with the numbered
    names in `attr_maps(copy)` (its attribute maps) made canonical."""
    if self._canonical_already(message, attr_maps):
      return message.SerializeToString(deterministic=True)
    copy = type(message)()
    copy.CopyFrom(message)
    if isinstance(copy, function_pb2.FunctionDef):
      copy.signature.name = self.name(copy.signature.name)
    for attr_map in attr_maps(copy):
      for key in sorted(attr_map):
        value = attr_map[key]
        if value.HasField('func'):
          value.func.name = self.name(value.func.name)
        for function in value.list.func:
          function.name = self.name(function.name)
        if key in _NUMBERED_STRINGS and value.s:
          value.s = self.name(value.s.decode('utf-8', 'replace')).encode()
        if key == _COLOCATION and self._derived:
          colocated = [_DERIVED if name[len(b'loc:@'):].decode(
              'utf-8', 'replace') in self._derived else name
                       for name in value.list.s]
          del value.list.s[:]
          value.list.s.extend(colocated)
    return copy.SerializeToString(deterministic=True)


def fingerprint(graph_def: tf.compat.v1.GraphDef, *, first_node: int = 0,
                end_node: Optional[int] = None,
                input_rewritten: bool = False) -> str:
  """A hash of `graph_def`'s nodes from index `first_node` up to
  `end_node` (a part of a graph: the nodes its ops added between two
  points; a GraphDef holds them in the order they were made) and of the
  functions they use, equal for two builds of the same code (see the
  module docstring).

  `input_rewritten`: the nodes just before the part are made from those
  before them alone, and may be made differently in two builds (the graph
  engine's rewrite of the input); a node of the part colocated with any
  node before the part then counts as colocated with one mark (TensorFlow colocates an iterator's `get_next` with its dataset,
  the input_fn's or the rewritten one). Colocation only places ops on
  devices: a graph kept on one device computes the same either way."""
  derived = frozenset(node.name for node in graph_def.node[:first_node]
                      ) if input_rewritten else frozenset()
  canonical = _Canonical(derived)
  digest = hashlib.sha256()
  library = {f.signature.name: f for f in graph_def.library.function}
  pending = []
  for node in graph_def.node[first_node:end_node]:
    serialized = canonical.serialized(node, lambda n: [n.attr])
    digest.update(len(serialized).to_bytes(8, 'little') + serialized)
    if library:  # Only the library's functions are hashed.
      pending.extend(_functions_used(node.attr))
  seen = set()
  while pending:  # The functions used, in order of first use.
    name = pending.pop(0)
    if name in seen or name not in library:
      continue
    seen.add(name)
    function = library[name]
    serialized = canonical.serialized(
        function, lambda f: [f.attr] + [n.attr for n in f.node_def])
    digest.update(len(serialized).to_bytes(8, 'little') + serialized)
    for node in function.node_def:
      pending.extend(_functions_used(node.attr))
  return digest.hexdigest()


def _initializers(graph: tf.Graph) -> set:
  """The names of the ops that compute variables' initial values (run
  once, when a session initializes them; a kept session restores)."""
  pending = []
  for collection in (tf.compat.v1.GraphKeys.GLOBAL_VARIABLES,
                     tf.compat.v1.GraphKeys.LOCAL_VARIABLES):
    for variable in graph.get_collection(collection):
      initializer = getattr(variable, 'initializer', None)
      if initializer is not None:
        pending.append(initializer)
  seen = set()
  while pending:
    op = pending.pop()
    if op.name in seen:
      continue
    seen.add(op.name)
    pending.extend(t.op for t in op.inputs)
    pending.extend(op.control_inputs)
  return seen


def _is_seeded(node_def) -> bool:
  return any(key in node_def.attr and node_def.attr[key].i
             for key in ('seed', 'seed2'))


def runs_seeded_random_ops(graph: tf.Graph,
                           graph_def: Optional[tf.compat.v1.GraphDef] = None
                           ) -> bool:
  """Whether `graph` holds a seeded stateful random op (a dropout's
  `RandomUniform` under a graph seed) outside its variables' initializers.
  Such an op's kernel keeps its place in its random sequence for as long as
  its session lives, where a new session starts it again: a kept session
  would draw other numbers than tf.estimator 2.15's new session did, so such
  a graph's session is not kept. (A dataset's shuffle starts again with its
  iterator, and stateless ops draw from their inputs: neither counts.)"""
  initializers = _initializers(graph)
  if graph_def is None:  # `graph`'s, if the caller has it already.
    graph_def = graph.as_graph_def()
  for node in graph_def.node:
    if (node.name not in initializers and not node.op.startswith('Stateless')
        and _is_seeded(node)):
      return True
  for function in graph_def.library.function:
    if any(not node.op.startswith('Stateless') and _is_seeded(node)
           for node in function.node_def):
      return True
  return False
