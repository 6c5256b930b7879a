"""tensorflow_estimator.python.estimator.tpu.tpu_estimator, over
estimator_rt.tpu.

`TPUEstimator` and `TPUEstimatorSpec` are estimator_rt's (TPUEstimator runs
as tf.estimator ran it without a TPU). The other names are tf.estimator
2.15's constants and helpers, which programs, libraries and 2.15's tests
use directly, with 2.15's semantics wherever they need no TPU: the hooks of
its loops (stop at a step with time-based iterations_per_loop, evaluation
and prediction loops, examples/sec, Ctrl-C), the host calls run on the CPU
(`_OutfeedHostCall`, estimator_rt/tpu_host_calls.py), the inputs' wrappers
(stopping signals, padding, TensorPacker: estimator_rt/tpu_inputs.py), the
model_fn wrapper's CPU path, the while loops of TPU programs, the
export-output tensor round trip, `BatchConfig`.

What only a TPU runs (the infeed and outfeed threads and the TPU system's
initialization, the per-host and per-core infeed enqueue ops, the TPU
training, evaluation and prediction programs, TPU inference and its
export) is refused in one line each, with what to use instead
(`_REFUSED`, estimator_rt.compat.not_yet): estimator_rt runs no TPU
program.
"""

import collections
import copy
import functools
import time

from absl import logging
import numpy as np
import tensorflow as tf
from tensorflow.python.distribute.cluster_resolver import tpu_cluster_resolver  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import control_flow_ops  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import control_flow_util  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu import tpu as tpu_lib  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu import tpu_replication  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.training import evaluation  # pylint: disable=g-direct-tensorflow-import

from estimator_rt import export as export_lib
from estimator_rt import tpu_context
from estimator_rt import tpu_inputs
from estimator_rt import user_fns
from estimator_rt.compat.served.tpu.iteration_count_estimator import IterationCountEstimator
from estimator_rt.errors import UserInputError
from estimator_rt.errors import UserTypeError
from estimator_rt.mode_keys import ModeKeys
# pylint: disable=unused-import,g-bad-import-order
from estimator_rt.tpu import _BATCH_SIZE_KEY
from estimator_rt.tpu import _CTX_KEY
from estimator_rt.tpu import _RESERVED_PARAMS_KEYS
from estimator_rt.tpu import _USE_TPU_KEY
from estimator_rt.tpu import ExportSavedModelApiVersion
from estimator_rt.tpu import TPUEstimator
from estimator_rt.tpu import TPUEstimatorSpec
from estimator_rt.tpu_embedding import AdagradParameters
from estimator_rt.tpu_embedding import AdamParameters
from estimator_rt.tpu_embedding import EmbeddingConfigSpec
from estimator_rt.tpu_embedding import StochasticGradientDescentParameters
from estimator_rt.tpu_hooks import ExamplesPerSecondHook
from estimator_rt.tpu_hooks import InstallSignalHandlerHook
from estimator_rt.tpu_hooks import OpQueueContext as _OpQueueContext
from estimator_rt.tpu_hooks import OpSignalOnceQueueContext as _OpSignalOnceQueueContext
from estimator_rt.tpu_hooks import PeriodicLogger
from estimator_rt.tpu_hooks import Signal as _SIGNAL
from estimator_rt.tpu_host_calls import CatchInvalidHostcallFunctions
from estimator_rt.tpu_host_calls import OutfeedHostCall as _OutfeedHostCall
from estimator_rt.tpu_host_calls import OutfeedHostCallHook as _OutfeedHostCallHook
from estimator_rt.tpu_inputs import extract_key_names as _extract_key_names
from estimator_rt.tpu_inputs import Inputs as _Inputs
from estimator_rt.tpu_inputs import InputsWithStoppingSignals as _InputsWithStoppingSignals
from estimator_rt.tpu_inputs import PaddingSignals as _PaddingSignals
from estimator_rt.tpu_inputs import StopSignals as _StopSignals
from estimator_rt.tpu_inputs import TENSOR_PACKER_CONCATENATED_SMALL_FEATURES_KEY as _TENSOR_PACKER_CONCATENATED_SMALL_FEATURES_KEY
from estimator_rt.tpu_inputs import TENSOR_PACKER_MINIMUM_NUM_SMALL_FEATURES_TO_GROUP as _TENSOR_PACKER_MINIMUM_NUM_SMALL_FEATURES_TO_GROUP
from estimator_rt.tpu_inputs import TENSOR_PACKER_SMALL_FEATURE_DIM_SIZE as _TENSOR_PACKER_SMALL_FEATURE_DIM_SIZE
from estimator_rt.tpu_inputs import TensorPacker
# pylint: enable=unused-import,g-bad-import-order

# tf.estimator 2.15's constants.
_INITIAL_LOSS = 1e7
_ZERO_LOSS = 0.
_CROSS_REPLICA_SUM_OP = 'CrossReplicaSum'
_ONE_GIGABYTE = 1024 * 1024 * 1024
# Graph collections of a TPU program's infeed enqueue ops and train op.
_TPU_ENQUEUE_OPS = '_tpu_enqueue_ops'
_TPU_TRAIN_OP = '_tpu_train_op'
# The mode of a TPU inference metagraph in an export.
_INFERENCE_ON_TPU_MODE = '_inference_on_tpu'
_KEY_WHEN_PREDICTIONS_IS_A_TENSOR = '_key_when_predictions_is_a_tensor'
_TPU_ESTIMATOR = 'tpu_estimator'
_ITERATIONS_PER_LOOP_VAR = 'iterations_per_loop'

# tf.estimator 2.15's switch between two ways of building a TPU program's
# per-core infeed (programs and 2.15's tests set it). There is no TPU
# program here (TPUEstimator(use_tpu=True) refuses to run one), so it
# selects nothing; it is served with 2.15's value so that code setting it
# reaches that refusal.
_WRAP_INPUT_FN_INTO_WHILE_LOOP = False


def _create_or_get_iterations_per_loop():
  """The graph's `tpu_estimator/iterations_per_loop` variable (an int32
  local resource variable, in the collection `tpu_estimator_iterations_
  per_loop`), created next to the global step if the graph has none: the
  steps the next training loop runs.

  Raises:
    RuntimeError: the collection holds more than one variable.
  """
  graph = tf.compat.v1.get_default_graph()
  collection = f'{_TPU_ESTIMATOR}_{_ITERATIONS_PER_LOOP_VAR}'
  found = graph.get_collection(collection)
  if len(found) == 1:
    return found[0]
  if found:
    raise RuntimeError('Multiple iterations_per_loop_var in collection.')
  with graph.colocate_with(tf.compat.v1.train.get_global_step()):
    with tf.compat.v1.variable_scope(_TPU_ESTIMATOR,
                                     reuse=tf.compat.v1.AUTO_REUSE):
      return tf.compat.v1.get_variable(
          _ITERATIONS_PER_LOOP_VAR, shape=[], dtype=tf.int32,
          initializer=tf.compat.v1.initializers.zeros(), trainable=False,
          collections=[collection, tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
          use_resource=True)


class _TPUStopAtStepHook(tf.compat.v1.train.SessionRunHook):
  """Stops training at a step, setting the steps of each training loop.

  Before each loop it loads min(steps left, steps per loop) into the
  iterations_per_loop variable: `iterations_per_loop_counter.value` for a
  'count' unit; for a 'seconds' unit, the steps an IterationCountEstimator
  predicts fit in that many seconds (1 at first), from the loops' measured
  times. It requests a stop once the global step (read after each run)
  reaches the final step: `final_step`, or the first step + `num_steps`.

  Raises:
    ValueError: neither or both of `num_steps` and `final_step`; a unit
      other than 'count' and 'seconds'.
  """

  def __init__(self, iterations_per_loop_counter, num_steps=None,
               final_step=None):
    if num_steps is None and final_step is None:
      raise UserInputError(
          'One of `num_steps` or `final_step` must be specified.')
    if num_steps is not None and final_step is not None:
      raise UserInputError(
          'Only one of `num_steps` or `final_step` can be specified '
          f'(num_steps={num_steps!r}, final_step={final_step!r}).')
    if iterations_per_loop_counter.unit not in ('seconds', 'count'):
      raise UserInputError(
          'Only `count` or `seconds` are accepted as the '
          '`iterations_per_loop_counter.unit` (got '
          f'{iterations_per_loop_counter.unit!r}).')
    self._iterations_per_loop_counter = iterations_per_loop_counter
    self._num_steps = num_steps
    self._final_step = final_step
    self._next_iteration_count = 1
    self._iteration_count_estimator = None
    if iterations_per_loop_counter.unit == 'seconds':
      self._iteration_count_estimator = IterationCountEstimator()
    self._start_time = time.time()

  def _next_iterations(self, global_step, final_step):
    if self._iteration_count_estimator is not None:
      per_loop = self._iteration_count_estimator.get(
          self._iterations_per_loop_counter.value)
    else:
      per_loop = self._iterations_per_loop_counter.value
    self._next_iteration_count = min(final_step - global_step, per_loop)
    return self._next_iteration_count

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    if self._global_step_tensor is None:
      raise RuntimeError('Global step should be created.')
    self._iterations_per_loop_var = _create_or_get_iterations_per_loop()

  def after_create_session(self, session, coord):
    del coord
    global_step = session.run(self._global_step_tensor)
    if self._final_step is None:
      self._final_step = global_step + self._num_steps
    self._iterations_per_loop_var.load(
        self._next_iterations(global_step, self._final_step), session=session)

  def before_run(self, run_context):
    if self._iteration_count_estimator is not None:
      self._start_time = time.time()

  def after_run(self, run_context, run_values):
    if self._iteration_count_estimator is not None:
      elapsed = time.time() - self._start_time
      logging.info('ElapsedTime: %.3f', elapsed)
      self._iteration_count_estimator.update(elapsed,
                                             self._next_iteration_count)
    # Read here, not fetched in before_run: the loop moves the step itself.
    global_step = run_context.session.run(self._global_step_tensor)
    if global_step >= self._final_step:
      run_context.request_stop()
    else:
      self._iterations_per_loop_var.load(
          self._next_iterations(global_step, self._final_step),
          session=run_context.session)


_EXPORT_OUTPUT_TYPES = (
    '`export_output` must be have type `ClassificationOutput`, '
    '`RegressionOutput`, or `PredictOutput`')


def _export_output_to_tensors(export_output):
  """The tensors of `export_output`: [scores, classes] (either may be
  None) of a ClassificationOutput, [value] of a RegressionOutput, the
  outputs' values (in their order) of a PredictOutput.

  Raises:
    ValueError: another kind of output.
  """
  if isinstance(export_output, export_lib.ClassificationOutput):
    return [export_output.scores, export_output.classes]
  if isinstance(export_output, export_lib.RegressionOutput):
    return [export_output.value]
  if isinstance(export_output, export_lib.PredictOutput):
    return list(export_output.outputs.values())
  raise UserInputError(f'{_EXPORT_OUTPUT_TYPES}; got {export_output}.')


def _clone_export_output_with_tensors(export_output, tensors):
  """An output of `export_output`'s kind over `tensors` (in the order
  `_export_output_to_tensors` lists them).

  Raises:
    ValueError: another kind of output, or a wrong number of tensors.
  """
  if isinstance(export_output, export_lib.ClassificationOutput):
    if len(tensors) != 2:
      raise UserInputError(f'tensors must be of length 2; got {len(tensors)}.')
    return export_lib.ClassificationOutput(*tensors)
  if isinstance(export_output, export_lib.RegressionOutput):
    if len(tensors) != 1:
      raise UserInputError(f'tensors must be of length 1; got {len(tensors)}')
    return export_lib.RegressionOutput(*tensors)
  if isinstance(export_output, export_lib.PredictOutput):
    return export_lib.PredictOutput(
        dict(zip(export_output.outputs.keys(), tensors)))
  raise UserInputError(f'{_EXPORT_OUTPUT_TYPES}; got {export_output}.')




# ----------------------------------------------------------------------------
# Small helpers of 2.15's TPUEstimator.


def _is_iterable(obj):
  try:
    iter(obj)
    return True
  except TypeError:
    return False


def _add_item_to_params(params, key, value):
  """params[key] = value, for a dict or an HParams (set or added)."""
  if hasattr(params, 'set_hparam'):
    if key in params:
      params.set_hparam(key, value)
    else:
      params.add_hparam(key, value)
  else:
    params[key] = value


def _create_global_step(graph):
  """TPUEstimator's global step: an int64 resource variable in `graph`
  (the default graph for None), outside any name scope.

  Raises:
    ValueError: the graph has a global step already.
  """
  graph = graph or tf.compat.v1.get_default_graph()
  if tf.compat.v1.train.get_global_step(graph) is not None:
    raise UserInputError('"global_step" already exists.')
  with graph.as_default() as g, g.name_scope(None):
    return tf.compat.v1.get_variable(
        tf.compat.v1.GraphKeys.GLOBAL_STEP, shape=[], dtype=tf.int64,
        initializer=tf.compat.v1.initializers.zeros(), trainable=False,
        use_resource=True,
        collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES,
                     tf.compat.v1.GraphKeys.GLOBAL_STEP])


def _sync_variables_ops(ctx):
  """Ops reading every trainable variable back (with a NaN check), as
  after a TPU loop; a no-op in BROADCAST input mode, whose variables were
  too big to move."""
  if ctx.is_input_broadcast_with_iterators():
    return [tf.no_op()]
  return [tf.debugging.check_numerics(v.read_value(),
                                      f'Gradient for {v.name} is NaN').op
          for v in tf.compat.v1.trainable_variables()]


def _increase_eval_step_op(iterations_per_loop):
  """Adds `iterations_per_loop` - 1 to the eval step (evaluation adds the
  last 1 itself)."""
  eval_step = evaluation._get_or_create_eval_step()  # pylint: disable=protected-access
  return tf.compat.v1.assign_add(
      eval_step, tf.cast(iterations_per_loop - 1, dtype=eval_step.dtype),
      use_locking=True)


def _verify_cross_hosts_transfer_size(tensor_dict, message):
  """Raises ValueError if the tensors of `tensor_dict` hold 1 GiB or more
  (the protobuf limit of a transfer between hosts), naming their shapes."""
  total_size = 0
  shapes = {}
  for key, tensor in tensor_dict.items():
    shapes[key] = tensor.shape
    total_size += np.prod(tensor.shape) * tensor.dtype.size
  if total_size >= _ONE_GIGABYTE:
    described = '\n'.join(f' -- Key: {k}, Shape: {v}'
                          for k, v in shapes.items())
    raise UserInputError(
        f'{message} The transfer size is larger than the protobuf limit. '
        'Please consider to use Tensors with smaller shapes or reduce batch '
        f'size. Given:\n{described}')


def _check_add_preemption_hook(cluster):
  """Whether 2.15 added its Cloud TPU preemption hook: on GCE, with a
  TPUClusterResolver whose Cloud TPU API is reachable."""
  return bool(tpu_cluster_resolver.is_running_in_gce() and cluster and
              isinstance(cluster,
                         tf.distribute.cluster_resolver.TPUClusterResolver) and
              cluster._cloud_tpu_client.api_available())  # pylint: disable=protected-access


def _validate_tpu_training_graph(ctx):
  """2.15's check that a multi-replica TPU training graph sums gradients
  across replicas (a CrossReplicaSum op, from CrossShardOptimizer); not
  made with control flow v2 (TensorFlow 2's, always on here).

  Raises:
    ValueError: no CrossReplicaSum op with more than one replica.
  """
  if control_flow_util.ENABLE_CONTROL_FLOW_V2:
    return
  operations = tf.compat.v1.get_default_graph().get_operations()
  if (not any(op.type == _CROSS_REPLICA_SUM_OP for op in operations) and
      ctx.num_replicas > 1):
    raise UserInputError(
        'CrossShardOptimizer must be used for model training on TPUs.')


class _SetEvalIterationsHook(tf.compat.v1.train.SessionRunHook):
  """Loads `num_steps` into the iterations_per_loop variable once the
  session is created: the steps of an evaluation loop."""

  def __init__(self, num_steps):
    self._num_steps = num_steps

  def begin(self):
    self._iterations_per_loop_var = _create_or_get_iterations_per_loop()

  def after_create_session(self, session, coord):
    del coord
    self._iterations_per_loop_var.load(self._num_steps, session=session)


class _StoppingPredictHook(tf.compat.v1.train.SessionRunHook):
  """Ends prediction at the stopping batch: fetches the batch's scalar
  stopping signal with each run and raises OutOfRangeError (which ends
  the predictions, this batch dropped) when it says stop."""

  def __init__(self, scalar_stopping_signal):
    self._scalar_stopping_signal = scalar_stopping_signal

  def begin(self):
    self._iterations_per_loop_var = _create_or_get_iterations_per_loop()

  def after_create_session(self, session, coord):
    del coord
    # Prediction runs one batch per loop.
    self._iterations_per_loop_var.load(1, session=session)

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._scalar_stopping_signal)

  def after_run(self, run_context, run_values):
    if _StopSignals.should_stop(run_values.results):
      raise tf.errors.OutOfRangeError(None, None,
                                      'Stopped by stopping signal.')


class _NotSaver:
  """A stand-in for a saver that does not save: `save` logs `message`."""

  def __init__(self, message):
    self._message = message

  def save(self, *args, **kwargs):
    del args, kwargs
    logging.info(self._message)


class BatchConfig(collections.namedtuple('BatchConfig', [
    'num_batch_threads', 'max_batch_size', 'batch_timeout_micros',
    'allowed_batch_sizes', 'max_enqueued_batches'])):
  """tf.estimator's settings of the batching of TPU inference
  (`tf.nondifferentiable_batch_function`'s arguments)."""

  def __new__(cls, num_batch_threads, max_batch_size, batch_timeout_micros,
              allowed_batch_sizes, max_enqueued_batches=100):
    return super().__new__(cls, num_batch_threads, max_batch_size,
                           batch_timeout_micros, allowed_batch_sizes,
                           max_enqueued_batches)


class _CapturedObject:
  """One object captured inside a control flow body (`capture`, once) and
  read outside it (`get`).

  Raises:
    RuntimeError: a second capture, or a get before the capture.
  """

  def __init__(self):
    self._object = None
    self._captured = False

  def capture(self, o):
    if self._captured:
      raise RuntimeError(
          'InternalError: Object can capture only once. Please file bug.')
    self._captured = True
    self._object = o

  def get(self):
    if not self._captured:
      raise RuntimeError('InternalError: Object is not captured properly '
                         'before `get`. Please file bug.')
    return self._object


class _CapturingContext(control_flow_ops.ControlFlowContext):
  """A control flow context (entered with `with`) in which an op that uses
  a tensor of a TPU computation (one with the `_tpu_replicate` attribute)
  raises ValueError naming `message`: scaffold_fn and its Scaffold run on
  the CPU host."""

  def __init__(self, message):
    control_flow_ops.ControlFlowContext.__init__(self)
    self._message = message

  def to_control_flow_context_def(self, context_def, export_scope=None):
    super().to_control_flow_context_def(context_def, export_scope)

  def AddOp(self, op):  # pylint: disable=invalid-name
    for c in op.inputs:
      if tpu_replication._TPU_REPLICATE_ATTR in c.op.node_def.attr:  # pylint: disable=protected-access
        raise UserInputError(f'{self._message}: Op {op} depends on TPU '
                             f'computation {c}, which is not allowed.')

  def AddValue(self, value):
    self.AddOp(value.op)
    return value

  def __enter__(self):
    self._g = tf.compat.v1.get_default_graph()
    self._old = self._g._get_control_flow_context()  # pylint: disable=protected-access
    self._g._set_control_flow_context(self)  # pylint: disable=protected-access

  def __exit__(self, *unused):
    self._g._set_control_flow_context(self._old)  # pylint: disable=protected-access


def _get_scaffold(captured_scaffold_fn):
  """The Scaffold of the captured scaffold_fn (None without one), made
  and finalized in a `_CapturingContext`.

  Raises:
    ValueError: a scaffold_fn returning None.
  """
  with _CapturingContext(message='Inside scaffold_fn'):
    scaffold_fn = captured_scaffold_fn.get()
    scaffold = None
    if scaffold_fn:
      scaffold = scaffold_fn()
      if scaffold is None:
        raise UserInputError(
            'TPUEstimatorSpec.scaffold_fn returns None, which is not allowed')
  if scaffold:
    wrapped_finalize = scaffold.finalize

    def finalize():
      with _CapturingContext('Inside Scaffold.finalize'):
        wrapped_finalize()

    scaffold.finalize = finalize
  return scaffold


# ----------------------------------------------------------------------------
# The while loops of a TPU program's host side (plain TensorFlow).


def _wrap_computation_in_while_loop(device, op_fn):
  """A while loop on `device` running the ops `op_fn` builds
  iterations_per_loop times (one iteration at a time); its result is the
  count run."""

  def computation(i):
    with tf.control_dependencies(op_fn()):
      return i + 1

  iterations_per_loop_var = _create_or_get_iterations_per_loop()
  with tf.compat.v1.device(device):
    iterations = tf.identity(iterations_per_loop_var)
    return tf.compat.v1.while_loop(lambda i: i < iterations, computation,
                                   [tf.constant(0)], parallel_iterations=1)


def _wrap_computation_in_while_loop_with_stopping_signals(device, op_fn):
  """A while loop on `device` running the ops `op_fn` builds (it returns
  {'ops': ..., 'signals': ...}) until their stopping signal says stop; its
  result is the last signal."""

  def cond(scalar_stopping_signal):
    return tf.math.logical_not(_StopSignals.should_stop(
        scalar_stopping_signal))

  def computation(unused_scalar_stopping_signal):
    built = op_fn()
    with tf.control_dependencies(built['ops']):
      return _StopSignals.as_scalar_stopping_signal(built['signals'])

  with tf.compat.v1.device(device):
    return tf.compat.v1.while_loop(
        cond, computation, [_StopSignals.NON_STOPPING_SIGNAL],
        parallel_iterations=1)


# ----------------------------------------------------------------------------
# The model_fn wrapper.


class _ModelFnWrapper:
  """tf.estimator 2.15's wrapper of a TPUEstimator's model_fn: calls it as
  2.15 did (a deep copy of config and params, params['batch_size'] the
  mode's model_fn batch size, params['use_tpu'], params['context'] on a
  TPU), turning a TPUEstimatorSpec into an EstimatorSpec on the CPU
  (`call_without_tpu`), and into the steps of TPU loops
  (`convert_to_single_tpu_*_step`: their host calls go through the TPU
  outfeed, which only a TPU runs). TensorFlow's tensor tracer, which 2.15
  also hooked in when enabled by its flags, is not.
  """

  def __init__(self, model_fn, config, params, ctx):
    self._model_fn = model_fn
    self._config = config
    self._params = params
    self._ctx = ctx

  def call_without_tpu(self, features, labels, is_export_mode):
    return self._call_model_fn(features, labels,
                               is_export_mode=is_export_mode)

  def _add_embedding_features(self, features, hook_dummy_table_variables):
    """Adds the TPU embedding's activations to `features`: none here (the
    context has no embedding, or refuses one: TPU hardware)."""
    del features, hook_dummy_table_variables
    assert not self._ctx.embedding_config

  def convert_to_single_tpu_train_step(self, dequeue_fn):
    """(train_step, host_call, captured scaffold_fn, captured training
    hooks): train_step(step) builds one TPU training step on the inputs
    `dequeue_fn` gives, its host_call (or the loss, as 2.15 did to track
    progress) sent through the outfeed after the train_op."""
    host_call = _OutfeedHostCall(
        self._ctx, outfeed_every_n_steps=(
            self._config.tpu_config.experimental_host_call_every_n_steps))
    captured_scaffold_fn = _CapturedObject()
    captured_training_hooks = _CapturedObject()

    def train_step(step):
      features, labels = dequeue_fn().features_and_labels()
      self._add_embedding_features(features, True)
      spec = self._verify_estimator_spec(self._call_model_fn(features,
                                                             labels))
      loss, train_op = spec.loss, spec.train_op
      is_tpu_spec = isinstance(spec, TPUEstimatorSpec)
      captured_scaffold_fn.capture(spec.scaffold_fn if is_tpu_spec else None)
      captured_training_hooks.capture(spec.training_hooks)
      to_record = {}
      if self._ctx.feed_hook is not None:
        stopping_signals, name = (
            self._ctx.feed_hook.get_stopping_signals_and_name(features))
        if stopping_signals is not None:
          to_record[name] = [lambda **kwargs: kwargs, stopping_signals]
      with tf.control_dependencies([train_op]):
        outfeed_ops = []
        host_call_fn, host_call_args = None, []
        if is_tpu_spec and spec.host_call is not None:
          host_call_fn, host_call_args = spec.host_call
        if host_call_fn:
          if host_call_args:  # A host call without arguments is ignored.
            to_record['host_call'] = spec.host_call
          if to_record:
            host_call.record(to_record)
            outfeed_ops = host_call.create_enqueue_op(step)
        else:
          to_record['host_call'] = (lambda loss_t: loss_t,
                                    [tf.reshape(loss, [1])])
          host_call.record(to_record)
          outfeed_ops = host_call.create_enqueue_op(step)
        with tf.control_dependencies(outfeed_ops):
          return tf.identity(loss)

    return (train_step, host_call, captured_scaffold_fn,
            captured_training_hooks)

  def convert_to_single_tpu_eval_step(self, dequeue_fn):
    """(eval_step, host calls, captured scaffold_fn, captured evaluation
    hooks): eval_step(total_loss) builds one TPU evaluation step, adding
    its loss to `total_loss`, its eval_metrics' and host_call's tensors
    sent through the outfeed."""
    host_calls = _OutfeedHostCall(self._ctx)
    captured_scaffold_fn = _CapturedObject()
    captured_eval_hooks = _CapturedObject()

    def eval_step(total_loss):
      features, labels = dequeue_fn().features_and_labels()
      self._add_embedding_features(features, False)
      spec = self._call_model_fn(features, labels)
      if not isinstance(spec, TPUEstimatorSpec):
        raise RuntimeError('estimator_spec used by TPU evaluation must have '
                           f'type`TPUEstimatorSpec`. Got {type(spec)}')
      captured_scaffold_fn.capture(spec.scaffold_fn)
      captured_eval_hooks.capture(spec.evaluation_hooks)
      to_record = {}
      if spec.eval_metrics:
        to_record['eval_metrics'] = spec.eval_metrics
      if spec.host_call is not None:
        to_record['host_call'] = spec.host_call
      host_calls.record(to_record)
      with tf.control_dependencies(host_calls.create_enqueue_op()):
        return tf.math.add(total_loss, spec.loss)

    return eval_step, host_calls, captured_scaffold_fn, captured_eval_hooks

  def convert_to_single_tpu_predict_step(self, dequeue_fn):
    """(predict_step, host calls, captured scaffold_fn, captured prediction
    hooks): predict_step(signal) builds one TPU prediction step, its
    predictions and stopping signals (and host_call) sent through the
    outfeed; it returns the batch's scalar stopping signal."""
    host_calls = _OutfeedHostCall(self._ctx)
    captured_scaffold_fn = _CapturedObject()
    captured_predict_hooks = _CapturedObject()

    def predict_step(unused_scalar_stopping_signal):
      inputs = dequeue_fn()
      features, labels = inputs.features_and_labels()
      stopping_signals = inputs.signals()
      assert stopping_signals is not None, (
          'Internal Error: `signals` is missing.')
      spec = self._call_model_fn(features, labels, is_export_mode=False)
      if not isinstance(spec, TPUEstimatorSpec):
        raise RuntimeError('estimator_spec used by TPU prediction must have '
                           f'type`TPUEstimatorSpec`. Got {type(spec)}')
      self._verify_tpu_spec_predictions(spec.predictions)
      captured_scaffold_fn.capture(spec.scaffold_fn)
      captured_predict_hooks.capture(spec.prediction_hooks)
      identity_fn = lambda **kwargs: kwargs
      to_record = {'predictions': [identity_fn, spec.predictions],
                   'signals': [identity_fn, stopping_signals]}
      if spec.host_call is not None:
        to_record['host_call'] = spec.host_call
      host_calls.record(to_record)
      with tf.control_dependencies(host_calls.create_enqueue_op()):
        return _StopSignals.as_scalar_stopping_signal(stopping_signals)

    return (predict_step, host_calls, captured_scaffold_fn,
            captured_predict_hooks)

  def _verify_tpu_spec_predictions(self, predictions):
    """Checks that TPU predictions are a dict of tensors of static batch
    size.

    Raises:
      TypeError: not a dict.
      ValueError: a tensor whose batch size is not static.
    """
    if not isinstance(predictions, dict):
      raise UserTypeError(
          'TPUEstimatorSpec.predictions must be dict of Tensors.')
    for key, tensor in predictions.items():
      if tensor.shape.dims[0].value is None:
        raise UserInputError(
            f'The tensor with key ({key}) in TPUEstimatorSpec.predictions '
            f'has dynamic shape (should be static). Tensor: {tensor}')
    return predictions

  def _validate_model_features_and_labels(self, features, labels,
                                          is_export_mode):
    """On a TPU (not exporting), features and labels must have static
    shapes.

    Raises:
      ValueError: a tensor whose shape is not fully defined.
    """
    if is_export_mode or self._ctx.is_running_on_cpu(is_export_mode):
      return
    for obj, name in ((features, 'features'), (labels, 'labels')):
      if obj is None:
        continue
      for tensor in tf.nest.flatten(obj):
        if not tensor.shape.is_fully_defined():
          raise UserInputError(
              f'The {name} to the model returned by input_fn must have '
              f'static shape. Tensor: {tensor}')

  def _call_model_fn(self, features, labels, is_export_mode=False):
    """The model_fn's spec, called as the class docstring says.

    Raises:
      ValueError: labels for a model_fn that takes none; a model_fn without
        `params`; see `_validate_model_features_and_labels`.
    """
    self._validate_model_features_and_labels(features, labels,
                                             is_export_mode)
    model_fn_args = user_fns.declared_args(self._model_fn)
    config = copy.deepcopy(self._config)
    params = copy.deepcopy(self._params)
    kwargs = {}
    if 'labels' in model_fn_args:
      kwargs['labels'] = labels
    elif labels is not None:
      raise UserInputError(
          'model_fn does not take labels, but input_fn returns labels.')
    if 'mode' in model_fn_args:
      kwargs['mode'] = self._ctx.mode
    if 'config' in model_fn_args:
      kwargs['config'] = config
    if 'params' not in model_fn_args:
      raise UserInputError(
          f'model_fn ({self._model_fn}) does not include params argument, '
          "required by TPUEstimator to pass batch size as "
          "params['batch_size']")
    kwargs['params'] = params
    batch_size = (None if is_export_mode else
                  self._ctx.batch_size_for_model_fn)
    if batch_size is not None:
      _add_item_to_params(params, _BATCH_SIZE_KEY, batch_size)
    running_on_cpu = self._ctx.is_running_on_cpu(is_export_mode)
    if not is_export_mode:
      # An export set params['use_tpu'] already, by the metagraph's device.
      _add_item_to_params(params, _USE_TPU_KEY, not running_on_cpu)
    if not running_on_cpu:
      _add_item_to_params(params, _CTX_KEY, tpu_context.TPUContext(
          internal_ctx=self._ctx, call_from_input_fn=False))
    spec = self._model_fn(features=features, **kwargs)
    if not (running_on_cpu and isinstance(spec, TPUEstimatorSpec)):
      return spec
    # The CPU spec is built outside a TPU inference context, if in one.
    graph = tf.compat.v1.get_default_graph()
    context = graph._get_control_flow_context()  # pylint: disable=protected-access
    try:
      if isinstance(context, tpu_lib._TPUInferenceContext):  # pylint: disable=protected-access
        graph._set_control_flow_context(context.outer_context)  # pylint: disable=protected-access
      return spec.as_estimator_spec()
    finally:
      graph._set_control_flow_context(context)  # pylint: disable=protected-access

  def _verify_estimator_spec(self, estimator_spec):
    """A TPUEstimatorSpec as it is; an EstimatorSpec without
    training_chief_hooks (its Scaffold ignored on a TPU, with a warning).

    Raises:
      ValueError: an EstimatorSpec with training_chief_hooks.
    """
    if isinstance(estimator_spec, TPUEstimatorSpec):
      return estimator_spec
    if estimator_spec.training_chief_hooks:
      raise UserInputError(
          'training_chief_hooks returned by EstimatorSpec is not supported '
          'in TPUEstimator.If you want to pass training hooks, please pass '
          'via training_hooks.')
    if estimator_spec.scaffold:
      logging.warning('EstimatorSpec.Scaffold is ignored by TPU train/eval. '
                      'Please use TPUEstimatorSpec.')
    return estimator_spec


# ----------------------------------------------------------------------------
# Inference on a TPU: the model_fn's computation (plain graph building).


def _build_tpu_computation_for_inference(model_fn, features, labels, config,
                                         params):
  """(computation, capture): computation() calls the model_fn in PREDICT
  mode on `features` and returns its predictions' tensors (a tensor
  prediction under `_key_when_predictions_is_a_tensor`) then its export
  outputs' (None left out); capture.get() is then (the spec, the export
  outputs' tensors by key, those tensors flattened with their Nones, the
  predictions by key)."""
  capture = _CapturedObject()

  def computation():
    model_fn_args = user_fns.declared_args(model_fn)
    kwargs = {}
    if 'labels' in model_fn_args:
      kwargs['labels'] = labels
    if 'mode' in model_fn_args:
      kwargs['mode'] = ModeKeys.PREDICT
    if 'config' in model_fn_args:
      kwargs['config'] = config
    if 'params' in model_fn_args:
      kwargs['params'] = params
    spec = model_fn(features, **kwargs)
    export_outputs_dict = collections.OrderedDict(
        (key, _export_output_to_tensors(output))
        for key, output in spec.export_outputs.items())
    export_outputs_list = tf.nest.flatten(export_outputs_dict)
    export_outputs_tpu_list = [t for t in export_outputs_list
                               if t is not None]
    if isinstance(spec.predictions, dict):
      predictions_dict = collections.OrderedDict(spec.predictions.items())
    else:
      predictions_dict = {_KEY_WHEN_PREDICTIONS_IS_A_TENSOR: spec.predictions}
    capture.capture((spec, export_outputs_dict, export_outputs_list,
                     predictions_dict))
    return tf.nest.flatten(predictions_dict) + export_outputs_tpu_list

  return computation, capture


# ----------------------------------------------------------------------------
# The TPU input pipeline: its structure (CPU), its infeed (TPU only).


class _InputPipeline:
  """tf.estimator 2.15's TPU input pipeline: records the structure of the
  input_fn's features and labels (`InputsStructureRecorder`, with the
  context's input_partition_dims) and builds the TPU infeed
  (`generate_infeed_enqueue_ops_and_dequeue_fn`, refused here: see the
  module docstring)."""

  InputsStructureRecorder = tpu_inputs.InputsStructureRecorder

  def __init__(self, input_fn, batch_axis, ctx):
    self._inputs_structure_recorder = (
        tpu_inputs.InputsStructureRecorder(ctx.input_partition_dims))
    self._sharded_per_core = ctx.is_input_sharded_per_core()
    self._input_fn = input_fn
    self._infeed_queue = None
    self._ctx = ctx
    self._batch_axis = batch_axis

  def generate_infeed_enqueue_ops_and_dequeue_fn(self):
    """Refused: the infeed enqueue ops run on TPU hosts."""
    _refuse('_InputPipeline.generate_infeed_enqueue_ops_and_dequeue_fn',
            _INFEED)

  def _validate_input_pipeline(self):
    """Warns about an input pipeline of QueueRunners (slow on a TPU)."""
    if tf.compat.v1.get_default_graph().get_collection(
        tf.compat.v1.GraphKeys.QUEUE_RUNNERS):
      logging.warning(
          'Input pipeline contains one or more QueueRunners. It could be '
          'slow and not scalable. Please consider converting your input '
          'pipeline to use `tf.data` instead (see https://www.tensorflow.org/'
          'guide/datasets for instructions.')


# ----------------------------------------------------------------------------
# What only a TPU runs: refused (estimator_rt.compat.not_yet), each keeping
# 2.15's signature.

_INFEED = ('builds the TPU infeed enqueue ops of an input_fn, which run on '
           'the hosts of a TPU system; estimator_rt runs no TPU program: use '
           'TPUEstimator(use_tpu=False), which feeds the input_fn\'s batches '
           'to the model_fn on the CPU')
_SESSION_HOOK = ('initializes the TPU system and runs the infeed and outfeed '
                 'threads of a TPU program (TPU hardware); estimator_rt runs '
                 'no TPU program: use TPUEstimator(use_tpu=False)')
_TPU_LOOP = ('compiles the model_fn into a replicated TPU program '
             '(tpu.split_compile_and_shard), which only TPU hardware runs; '
             'use TPUEstimator(use_tpu=False), which runs the model_fn on '
             'the CPU')
_INFERENCE = ('builds TPU inference (tpu.rewrite in a TPUPartitionedCall '
              'placed on a TPU core), which only TPU hardware runs and '
              'estimator_rt does not export; export the CPU graph with '
              'export_saved_model of TPUEstimator(use_tpu=False) or of an '
              'Estimator')


def _refuse(name, why):
  raise UserInputError(f'tf.estimator tpu_estimator.{name}: {why}.')


def _refused(why):
  """Makes the function below it (2.15's signature, no body) a refusal:
  calling it raises one UserInputError naming it and `why`, which it
  carries as `not_yet` (estimator_rt.compat.not_yet's mark)."""

  def decorate(fn):

    @functools.wraps(fn)
    def refused(*args, **kwargs):
      del args, kwargs
      _refuse(fn.__name__, why)

    refused.not_yet = why
    return refused

  return decorate


class TPUInfeedOutfeedSessionHook(tf.compat.v1.train.SessionRunHook):
  """Refused: see `not_yet`."""
  not_yet = _SESSION_HOOK

  def __init__(self, ctx, enqueue_ops, dequeue_ops, tpu_compile_op,
               run_infeed_loop_on_coordinator=True, rendezvous=None,
               master=None, session_config=None, tpu_init_ops=None,
               outfeed_every_n_steps=1):
    _refuse(type(self).__name__, _SESSION_HOOK)


class TPUInfeedOutfeedSessionHookForPrediction(TPUInfeedOutfeedSessionHook):
  """Refused: see `not_yet`."""

  def __init__(self, ctx, enqueue_ops, dequeue_ops, tpu_compile_op,
               rendezvous=None, master=None, session_config=None):  # pylint: disable=super-init-not-called
    _refuse(type(self).__name__, _SESSION_HOOK)


# pylint: disable=unused-argument
@_refused(_INFEED)
def generate_per_core_enqueue_ops_fn_for_host(ctx, input_fn,
                                              inputs_structure_recorder,
                                              host_device, host_id):
  """Refused: see `not_yet`."""


@_refused(_INFEED)
def generate_per_host_enqueue_ops_fn_for_host(ctx, input_fn,
                                              inputs_structure_recorder,
                                              batch_axis, device, host_id):
  """Refused: see `not_yet`."""


@_refused(_INFEED)
def generate_per_host_v2_enqueue_ops_fn_for_host(ctx, input_fn,
                                                 inputs_structure_recorder,
                                                 device, host_id,
                                                 invocation_index):
  """Refused: see `not_yet`."""


@_refused(_INFEED)
def generate_broadcast_enqueue_ops_fn(ctx, input_fn, inputs_structure_recorder,
                                      num_hosts):
  """Refused: see `not_yet`."""


@_refused(_TPU_LOOP)
def _train_on_tpu_system(ctx, model_fn_wrapper, dequeue_fn):
  """Refused: see `not_yet`."""


@_refused(_TPU_LOOP)
def _eval_on_tpu_system(ctx, model_fn_wrapper, dequeue_fn):
  """Refused: see `not_yet`."""


@_refused(_TPU_LOOP)
def _predict_on_tpu_system(ctx, model_fn_wrapper, dequeue_fn):
  """Refused: see `not_yet`."""


@_refused(_INFERENCE)
def call_computation(computation_inputs, computation, batch_config=None):
  """Refused: see `not_yet`."""


@_refused(_INFERENCE)
def inference_on_tpu(computation, inputs_to_tpu, num_batch_threads,
                     max_batch_size, batch_timeout_micros,
                     allowed_batch_sizes=None, max_enqueued_batches=100):
  """Refused: see `not_yet`."""


@_refused(_INFERENCE)
def model_fn_inference_on_tpu(model_fn, features, labels=None, config=None,
                              params=None, batch_config=None):
  """Refused: see `not_yet`."""


@_refused(_INFERENCE)
def _build_computation_for_inference(model_fn, labels, config, params):
  """Refused: see `not_yet`."""


@_refused('exports a TPU inference metagraph (tags serve and tpu) of a '
          "trained Estimator's model_fn, which only TPU hardware runs and "
          "estimator_rt does not export; use the Estimator's "
          'export_saved_model, which exports its CPU graph')
def export_estimator_savedmodel(estimator, export_dir_base,
                                serving_input_receiver_fn, assets_extra=None,
                                as_text=False, checkpoint_path=None):
  """Refused: see `not_yet`."""
# pylint: enable=unused-argument
