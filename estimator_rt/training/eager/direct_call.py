"""Calling a traced `tf.function` again without tf.function's dispatch.

Each call of a `tf.function` binds its arguments to the function's
signature, computes their types, looks the trace up, then flattens the
arguments into tensors; each call of a `ConcreteFunction` still binds and
flattens. For the training loop, called once per `steps_per_loop` steps
with the same iterator, that is about 0.15-0.25 ms of each call on the
2-core machine (0.4 ms with a two-device MirroredStrategy's iterator): 1%
of a 100-step loop of the W2 benchmark, 4% of W1's. The call made here
flattens the arguments with `tf.nest.flatten(..., expand_composites=True)`
and runs the trace's flat call, which is what those steps come to for
arguments that are all tensors or composite tensors (an iterator, an int32
scalar).

`ConcreteFunction._call_flat` is TensorFlow's own, not a public API: where a
release lacks it or flattens differently (checked against the trace's
inputs), the concrete function's public call is used instead.
"""

from typing import Any, Callable, Sequence

import tensorflow as tf


def _flat(args: Sequence[Any]) -> list:
  return tf.nest.flatten(list(args), expand_composites=True)


def without_dispatch(concrete, example_args: Sequence[Any]) -> Callable:
  """`concrete` as a callable of the same arguments, skipping the binding.

  Args:
    concrete: a ConcreteFunction of positional arguments only.
    example_args: arguments it would be called with (what each call's
      arguments flatten like).

  Returns:
    `fn(*args)`, which returns what `concrete(*args)` returns.
  """
  call_flat = getattr(concrete, '_call_flat', None)
  flat = _flat(example_args)
  inputs = list(concrete.inputs)
  if (call_flat is None or
      len(flat) + len(concrete.captured_inputs) != len(inputs) or
      any(t.dtype != i.dtype for t, i in zip(flat, inputs))):
    return concrete

  def call(*args):
    # Read at each call, as ConcreteFunction's call reads them: a deferred
    # capture's value may change between calls.
    return call_flat(_flat(args), concrete.captured_inputs)

  return call
