"""TPUEstimatorSpec's host calls (`eval_metrics` and `host_call`): a
function and the tensors to call it with, run on the host CPU.

tf.estimator 2.15's `_OutfeedHostCall` validated them and either called
them on the CPU, when there was no TPU (`create_cpu_hostcall`, what
estimator_rt runs), or sent their tensors from each TPU core through the
outfeed and called the function on the concatenated batches
(`record`, `create_enqueue_op`, `create_tpu_hostcall`: built here as 2.15
built them, as graph ops that only a TPU runs). On the CPU, the ops a
`host_call` returns run at every training step through
`OutfeedHostCallHook`, which also initializes and flushes the TF2 summary
writers they write with (`tf.compat.v2.summary.create_file_writer` in a
graph).
"""

import collections
import inspect

from absl import logging
import tensorflow as tf
from tensorflow.python.ops import control_flow_ops  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import summary_ops_v2  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu.ops import tpu_ops  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.errors import UserInputError
from estimator_rt.errors import UserTypeError

# tf.estimator's InputPipelineConfig.BROADCAST (estimator_rt.tpu's).
_BROADCAST = 4
# The TF1 summary ops a host_call may not build (2.15's list): on a TPU
# they ran outside the summary writer's step.
_V1_SUMMARY_OPS = ('AudioSummary', 'AudioSummaryV2', 'HistogramSummary',
                   'ImageSummary', 'MergeSummary', 'ScalarSummary',
                   'TensorSummary', 'TensorSummaryV2')


class CatchInvalidHostcallFunctions(control_flow_ops.XLAControlFlowContext):
  """The control flow context a TPU host call's function is built in:
  a TF1 summary op (`tf.compat.v1.summary.*`) raises there."""

  def AddOp(self, op):  # pylint: disable=invalid-name
    if op.type in _V1_SUMMARY_OPS:
      raise UserInputError('Please use tf.contrib.summary instead of '
                           f'tf.summary inside of host_calls (op {op.name}, '
                           f'{op.type}).')


def _call(name, host_fn, tensors):
  """host_fn(*tensors), or host_fn(**tensors) for a dict."""
  if isinstance(tensors, (tuple, list)):
    return host_fn(*tensors)
  try:
    return host_fn(**tensors)
  except TypeError as e:
    logging.warning(
        "Exception while calling %s: %s. It is likely the tensors (%s[1]) do "
        "not match the function's arguments", name, e, name)
    raise


class OutfeedHostCall:
  """tf.estimator 2.15's `_OutfeedHostCall` (see the module docstring)."""

  def __init__(self, ctx, outfeed_every_n_steps=1):
    self._ctx = ctx
    self._names = []
    # Keyed by the host call's name ('eval_metrics', 'host_call', ...).
    self._host_fns = {}
    self._tensor_keys = collections.defaultdict(list)
    self._tensors = collections.defaultdict(list)
    self._tensor_dtypes = collections.defaultdict(list)
    self._tensor_shapes = collections.defaultdict(list)
    self._outfeed_every_n_steps = outfeed_every_n_steps

  @staticmethod
  def validate(host_calls):
    """Checks each `(function, tensors)` of `host_calls` ({name: host
    call}) as 2.15 did.

    Raises:
      ValueError: not a pair, or tensors not a list, tuple or dict.
      TypeError: a function that is not callable.
      RuntimeError: a list of tensors whose length is not the function's
        argument count (unless it takes *args).
    """
    for name, host_call in host_calls.items():
      if not isinstance(host_call, (tuple, list)):
        raise UserInputError(f'{name} should be tuple or list (got '
                             f'{type(host_call).__name__}).')
      if len(host_call) != 2:
        raise UserInputError(f'{name} should have two elements (got '
                             f'{len(host_call)}).')
      host_fn, tensors = host_call
      if not callable(host_fn):
        raise UserTypeError(f'{name}[0] should be callable (got '
                            f'{host_fn!r}).')
      if not isinstance(tensors, (tuple, list, dict)):
        raise UserInputError(f'{name}[1] should be tuple or list, or dict '
                             f'(got {type(tensors).__name__}).')
      if isinstance(tensors, (tuple, list)):
        kinds = [p.kind for p in inspect.signature(host_fn).parameters.values()]
        positional = sum(kind in (inspect.Parameter.POSITIONAL_ONLY,
                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)
                         for kind in kinds)
        if (inspect.Parameter.VAR_POSITIONAL not in kinds and
            len(tensors) != positional):
          raise RuntimeError(
              f'In TPUEstimatorSpec.{name}, length of tensors {len(tensors)} '
              'does not match method args of the function, which takes '
              f'{positional}.')

  @staticmethod
  def create_cpu_hostcall(host_calls):
    """{name: what its function returns called on its tensors}: the host
    calls run on the CPU, as without a TPU.

    Raises:
      see `validate`; TypeError: a dict of tensors the function does not
        take.
    """
    OutfeedHostCall.validate(host_calls)
    return {name: _call(name, host_fn, tensors)
            for name, (host_fn, tensors) in host_calls.items()}

  def record(self, host_calls):
    """Records the host calls' functions and their tensors' structure."""
    for name, (host_fn, tensors) in host_calls.items():
      self._names.append(name)
      self._host_fns[name] = host_fn
      if isinstance(tensors, dict):
        items = list(tensors.items())
        self._tensor_keys[name] = [key for key, _ in items]
        values = [tensor for _, tensor in items]
      else:
        self._tensor_keys[name] = None
        values = list(tensors)
      for tensor in values:
        self._tensors[name].append(tensor)
        self._tensor_dtypes[name].append(tensor.dtype)
        self._tensor_shapes[name].append(tensor.shape)

  def create_enqueue_op(self, step=None):
    """The TPU outfeed ops of the recorded tensors (one on core 0; every
    `outfeed_every_n_steps` steps of the loop, counted by `step`), or []
    with nothing recorded.

    Raises:
      ValueError: outfeed_every_n_steps > 1 without `step`.
    """
    if not self._names:
      return []
    tensors = [t for name in self._names for t in self._tensors[name]]
    if self._outfeed_every_n_steps > 1 and step is None:
      raise UserInputError(
          'If outfeed is requested every n steps, you must pass a tensor '
          'whose value is the step number within the current training loop.')
    with tf.compat.v1.device(tf.compat.v1.tpu.core(0)):
      if self._outfeed_every_n_steps == 1:
        return [tpu_ops.outfeed_enqueue_tuple(tensors)]
      return [tf.compat.v1.cond(
          tf.math.equal(tf.math.floormod(step, self._outfeed_every_n_steps),
                        0),
          lambda: tpu_ops.outfeed_enqueue_tuple(tensors), tf.no_op)]

  def create_tpu_hostcall(self):
    """{name: its function called on the outfed tensors of every replica,
    concatenated along the batch (in BROADCAST mode, the first replica's)},
    with '__force_dequeue' grouping every dequeue op.

    Raises:
      RuntimeError: a scalar tensor (which cannot be concatenated).
    """
    if not self._names:
      return {}
    dtypes = [d for name in self._names for d in self._tensor_dtypes[name]]
    shapes = [s for name in self._names for s in self._tensor_shapes[name]]
    per_tensor = [[] for _ in dtypes]  # Each tensor's value per replica.
    for replica in range(self._ctx.num_replicas):
      host_device, ordinal = self._ctx.device_for_replica(replica)
      with tf.compat.v1.device(host_device):
        outfed = tpu_ops.outfeed_dequeue_tuple(dtypes=dtypes, shapes=shapes,
                                               device_ordinal=ordinal)
        for values, value in zip(per_tensor, outfed):
          values.append(value)
    everything = [value for values in per_tensor for value in values]
    broadcast = (self._ctx.config.tpu_config.per_host_input_for_training ==
                 _BROADCAST)
    results = {}
    position = 0
    with tf.compat.v1.device(
        self._ctx.tpu_host_placement_function(replica_id=0)):
      for name in self._names:
        count = len(self._tensors[name])
        combined = []
        for values in per_tensor[position:position + count]:
          if broadcast:
            # Every core computed the same outputs from the same input.
            with tf.control_dependencies(values):
              combined.append(tf.identity(values[0]))
            continue
          if values[0].shape.ndims == 0:
            raise RuntimeError(
                'All tensors outfed from TPU should preserve batch size '
                f'dimension, but got scalar {values[0]}')
          combined.append(tf.concat(values, axis=0))
        position += count
        keys = self._tensor_keys[name]
        arguments = dict(zip(keys, combined)) if keys is not None else combined
        results[name] = self._call_host_fn(name, arguments)
    results['__force_dequeue'] = tf.group(*everything)
    return results

  def _call_host_fn(self, name, arguments):
    context = CatchInvalidHostcallFunctions()
    context.Enter()
    result = _call(name, self._host_fns[name], arguments)
    context.Exit()
    context.ExitResult(result)
    return result


class OutfeedHostCallHook(tf.compat.v1.train.SessionRunHook):
  """Runs a host_call's ops (`tensors`) at every step on the CPU, with the
  TF2 summary writers of the graph initialized after the session is
  created and flushed at the end."""

  def __init__(self, tensors):
    self._tensors = tensors

  def begin(self):
    self._init_ops = summary_ops_v2.summary_writer_initializer_op()
    # Each initializer's first input is its writer: the ones to flush.
    self._finalize_ops = [
        summary_ops_v2.legacy_raw_flush(writer=op.inputs[0])
        for op in self._init_ops]

  def after_create_session(self, session, coord):
    del coord
    session.run(self._init_ops)

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._tensors)

  def end(self, session):
    session.run(self._finalize_ops)
