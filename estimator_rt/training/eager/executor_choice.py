"""Which of TensorFlow's executors runs a local training loop's function.

TensorFlow runs a function on its default executor, which hands every op
whose inputs are ready to a pool of threads. For a step of a few hundred
small ops (a linear model; an MLP of a few dozen units on a batch of a
hundred) those hand-offs cost more than the ops. Its single-threaded
executor (made for tf.data's small functions, chosen with
`tf.experimental.function_executor_type`) runs the same kernels one after
the other on the calling thread; each kernel still uses the intra-op
threads. On the 2-core machine (`python -m scripts.bench.executor_probe`,
bare TF2 loops alternating): 1.86x the steps/s of an MLP of 32 units on a
batch of 32, 1.40x on W2 (64-32 units, batch 128), 1.18x on W1 (linear,
batch 64); but 0.66x at 128 units on a batch of 128, 0.68x at 256 units
on 32, and 0.31x on W3's CNN. Larger steps lose TensorFlow's lowering of
the loop to Switch/Merge (which that executor cannot run) and, with it,
oneDNN's rewrite of the ops inside, and the parallel ops.

The kernels and the order of dependent ops are the same on both, so are
the numbers, but for float32 rounding: the default executor runs the
loop lowered into one graph, which Grappler and oneDNN rewrite (fused
ops), and a fused sum can round differently (1 ulp in one Adam slot after
30 steps in tests/test_executor_choice.py; W2's bare loop bitwise equal
after 300 steps). The choice is
made before the loop is traced (a loop traced for the default executor is
lowered, and the model_fn is traced once per `train`), from what the
model_fn's build call left: every variable of at most 2 dimensions and
`SMALL_ELEMENTS` elements, and every tensor of the input's first batch,
and the batch times every variable dimension (an activation's size in a
dense layer), at most `SMALL_ELEMENTS`. Only for one replica (the default
or a one_device strategy), without XLA, in a process of CPU devices alone,
where TensorFlow has the executor. Once traced, the loop
stays on it only if its trace holds nothing the executor deadlocks on or
waits in (`runs_safely`: a `tf.cond` nested in a `tf.cond` or a
`tf.function` inside the loop hangs on TensorFlow 2.21); else, and where
TensorFlow refuses the function (a construct it cannot run, before any
op ran), the loop runs on the default executor (`CompiledTrainLoop`),
with its unlowered trace, which on small steps is as fast as the lowered
one (W2 4,506 / 4,635 / 4,389 steps/s lowered against 4,694 / 4,504 /
4,515 unlowered, bare loops on the default executor).

ESTIMATOR_RT_SINGLE_THREADED_EXECUTOR=0 keeps every loop on the default
executor: the way out should a loop meet a TensorFlow fault of that
executor the check does not know.
"""

import contextlib
import os
from typing import Any, ContextManager, Iterable, List, Optional

import tensorflow as tf

SINGLE_THREADED = 'SINGLE_THREADED_EXECUTOR'
ENV_VAR = 'ESTIMATOR_RT_SINGLE_THREADED_EXECUTOR'
_OFF = ('0', 'false', 'no', 'off')
# The largest tensor of a step the single-threaded executor is chosen for:
# 32 KiB of float32. The probe's MLPs won up to 8,192-element activations
# (1.30x at 64 units, batch 128) and lost from 16,384 (0.66x at 128 units,
# batch 128; 0.68x at 256 units, batch 32, whose middle kernel has 65,536).
SMALL_ELEMENTS = 8192
# What TensorFlow says, and raises, when the executor refuses a function's
# graph.
REFUSAL = 'Single-threaded executor'
REFUSAL_ERRORS = (tf.errors.FailedPreconditionError,
                  tf.errors.UnimplementedError)


def _single_device_cpu(strategy: tf.distribute.Strategy) -> bool:
  default = tf.distribute.get_strategy()
  if strategy is not default and not isinstance(
      strategy, tf.distribute.OneDeviceStrategy):
    return False
  # A model_fn may still place an op on another CPU device of the process:
  # TensorFlow then refuses the partitioned function (see module doc).
  return all(d.device_type == 'CPU'
             for d in tf.config.list_logical_devices())


def _elements(shape: tf.TensorShape) -> Optional[int]:
  return shape.num_elements() if shape.is_fully_defined() else None


def small_step(variables: Iterable[tf.Variable], sample: Any) -> bool:
  """Whether a step over `variables` on a batch like `sample` (the
  input's first (features, labels)) is small (see the module docstring)."""
  dimensions = [1]
  for variable in variables:
    shape = variable.shape
    size = _elements(shape)
    if shape.rank is None or shape.rank > 2 or size is None or (
        size > SMALL_ELEMENTS):
      return False
    dimensions.extend(shape.as_list())
  batch = 1
  for tensor in tf.nest.flatten(sample, expand_composites=True):
    shape = getattr(tensor, 'shape', None)
    size = _elements(shape) if shape is not None else None
    if size is None or size > SMALL_ELEMENTS:
      return False
    if shape.rank:
      batch = max(batch, shape[0])
  return batch * max(dimensions) <= SMALL_ELEMENTS


def choose(*, strategy: tf.distribute.Strategy, jit_compile: bool,
           variables: Iterable[tf.Variable], sample: Any) -> Optional[str]:
  """The executor a local training loop runs on: SINGLE_THREADED for a
  small step where it may run (see the module docstring), else None
  (TensorFlow's default)."""
  if (jit_compile or not available() or
      os.environ.get(ENV_VAR, '').strip().lower() in _OFF or
      tf.config.functions_run_eagerly() or
      not tf.compat.v1.control_flow_v2_enabled() or
      not _single_device_cpu(strategy)):
    return None
  return SINGLE_THREADED if small_step(variables, sample) else None


# Ops that wait for other ops or threads, or that need the default
# executor's machinery (another device, Python): never run on the
# single-threaded executor, whatever the measurements.
_WAITING_OPS = ('Queue', 'Barrier', 'Collective', 'Nccl', '_Send', '_Recv',
                '_HostSend', '_HostRecv', 'Send', 'Recv', 'PyFunc',
                'EagerPyFunc')


def _called(node) -> List[str]:
  """The functions a NodeDef calls (its function-valued attributes)."""
  names = []
  for value in node.attr.values():
    if value.HasField('func'):
      names.append(value.func.name)
    names.extend(f.name for f in value.list.func)
  return names


def runs_safely(graph: tf.Graph) -> bool:
  """Whether a loop traced on the single-threaded executor (`graph`: its
  trace) holds only what that executor was seen to run.

  TensorFlow 2.21's executor deadlocks on a `tf.cond` nested in a
  `tf.cond`, or in a `tf.function`, inside the loop (the call never
  returns). It ran a `tf.cond`, a `tf.while_loop` or a `tf.function` in
  the loop's body (`scripts.bench.executor_probe --nested_cond`). So: the
  loop's graph calls functions from one op (its `tf.while_loop`); what
  the loop's body and condition call holds no call of its own; and no op
  anywhere waits for another (_WAITING_OPS).
  """
  graph_def = graph.as_graph_def()
  library = {f.signature.name: f for f in graph_def.library.function}
  top_calls = [n for n in graph_def.node if _called(n)]
  if len(top_calls) != 1:
    return False
  nodes = list(graph_def.node)
  for loop_function in _called(top_calls[0]):
    if loop_function not in library:
      return False
    body = library[loop_function].node_def
    nodes.extend(body)
    for name in (name for node in body for name in _called(node)):
      if name not in library or any(
          _called(n) for n in library[name].node_def):
        return False
      nodes.extend(library[name].node_def)
  return not any(n.op.startswith(_WAITING_OPS) for n in nodes)


def available() -> bool:
  """Whether this TensorFlow lets a program choose the executor."""
  return hasattr(tf.experimental, 'function_executor_type')


def executor_scope(executor: Optional[str]) -> ContextManager:
  """The context in which functions are traced and called to run on
  `executor` (None: the default executor, nothing to enter)."""
  if executor is None:
    return contextlib.nullcontext()
  return tf.experimental.function_executor_type(executor)


def refused(error: BaseException) -> bool:
  """Whether `error` is the single-threaded executor refusing a graph
  (reported when the function is instantiated, before any op ran)."""
  return isinstance(error, REFUSAL_ERRORS) and REFUSAL in str(error)
