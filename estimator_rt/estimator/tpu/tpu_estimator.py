"""tf.compat.v1.estimator.tpu: TPUEstimator run as tf.estimator ran it
without a TPU (`use_tpu=False`), which is how the Object Detection API and
other TPU-ready programs train on CPUs and GPUs.

With `use_tpu=False` tf.estimator's TPUEstimator was an Estimator that put
the mode's batch size in `params['batch_size']` (and `params['use_tpu']`
False) for the input_fn and the model_fn, and turned the model_fn's
`TPUEstimatorSpec` into an `EstimatorSpec` (`eval_metrics=(metric_fn,
tensors)` into `eval_metric_ops`, `scaffold_fn` into a Scaffold). So does
this one. With `use_tpu=True` it is built and validated as tf.estimator
validated it; running a TPU program (train, evaluate, predict, a TPU
export) checks its arguments as tf.estimator did and is then refused in
one line: there is no TPU here.
"""

import collections
import contextlib
import enum
import math
import re
from typing import Callable, Optional

import numpy as np
import tensorflow as tf

from estimator_rt.cluster import run_config as run_config_lib
from estimator_rt.estimator.tpu import checks as tpu_checks
from estimator_rt.estimator.tpu import context as tpu_context
from estimator_rt.estimator.tpu import examples_per_second
from estimator_rt.estimator.tpu import host_calls as tpu_host_calls
from estimator_rt.estimator.tpu import system as tpu_system
from estimator_rt.core import spec as spec_lib
from estimator_rt.core import user_fns
from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError
from estimator_rt.estimator.estimator import Estimator
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec


class InputPipelineConfig:
  """tf.estimator's constants for TPUConfig.per_host_input_for_training."""
  PER_SHARD_V1 = 1
  PER_HOST_V1 = 2
  PER_HOST_V2 = 3
  BROADCAST = 4
  SLICED = 5


IterationsPerLoopCounter = collections.namedtuple('IterationsPerLoopCounter',
                                                  ['value', 'unit'])
IterationsPerLoopCounter.__doc__ = (
    "tf.estimator's parsed iterations_per_loop: `value` steps (`unit` "
    "'count') or seconds (`unit` 'seconds').")

_ITERATIONS_PER_LOOP = re.compile(r'([1-9][0-9]*)([smh]?)')
_SECONDS_PER_UNIT = {'s': 1, 'm': 60, 'h': 3600}
# TPUConfig.num_cores_per_replica: the TPU topologies tf.estimator accepted.
_CORES_PER_REPLICA = (1, 2, 4, 8, 16, 32, 64, 128)


def check_positive_integer(value, name: str) -> None:
  """tf.estimator's check that `value` is a positive int or NumPy integer
  (True passes as 1, as in tf.estimator).

  Raises:
    UserTypeError (a TypeError): not an integer.
    UserInputError (a ValueError): not positive.
  """
  if not isinstance(value, (int, np.integer)):
    raise UserTypeError(f'{name} must be int, got {type(value)} ({name}='
                        f'{value!r}).')
  if value <= 0:
    raise UserInputError(f'{name} must be positive, got {value}.')


def parse_iterations_per_loop(iterations_per_loop) -> IterationsPerLoopCounter:
  """`TPUConfig.iterations_per_loop` as tf.estimator parsed it: a positive
  count (an int, or its digits without a leading zero) is `(count,
  'count')`; `'<N>s'`, `'<N>m'` or `'<N>h'` is `(seconds, 'seconds')`.

  Raises:
    UserInputError (a ValueError): anything else.
  """
  match = _ITERATIONS_PER_LOOP.fullmatch(str(iterations_per_loop))
  if match is None:
    raise UserInputError(
        'Invalid TPUConfig `iterations_per_loop` value. Value must be '
        'positive integer value or time-based value `<N><s|m|h>` where <N> '
        'is any positive integer and `s`, `m`, `h` are unit of time in '
        'seconds, minutes, hours respectively (TPUConfig: '
        f'iterations_per_loop={iterations_per_loop!r}; e.g. 100, `3600s`, '
        '`60m`, `1h`).')
  value, suffix = int(match.group(1)), match.group(2)
  if suffix:
    return IterationsPerLoopCounter(value * _SECONDS_PER_UNIT[suffix],
                                    'seconds')
  return IterationsPerLoopCounter(value, 'count')


def loop_steps(iterations_per_loop) -> Optional[int]:
  """The steps of one training loop that `TPUConfig.iterations_per_loop`
  asks for: its count; None for tf.estimator's time-based form ('<N>s',
  '<N>m', '<N>h'), whose loops the runtime already cuts by time.

  Raises:
    UserInputError: see `parse_iterations_per_loop`.
  """
  counter = parse_iterations_per_loop(iterations_per_loop)
  return counter.value if counter.unit == 'count' else None


def _tpu_job_name_from_tf_config() -> Optional[str]:
  """TF_CONFIG's service.tpu_worker_job_name, as tf.estimator read it."""
  service = run_config_lib._read_tf_config().get(  # pylint: disable=protected-access
      run_config_lib._SERVICE_KEY) or {}  # pylint: disable=protected-access
  return service.get('tpu_worker_job_name') if isinstance(service,
                                                          dict) else None


class TPUConfig(collections.namedtuple('TPUConfig', [
    'iterations_per_loop', 'num_shards', 'num_cores_per_replica',
    'per_host_input_for_training', 'tpu_job_name',
    'initial_infeed_sleep_secs', 'input_partition_dims',
    'eval_training_input_configuration',
    'experimental_host_call_every_n_steps',
    'experimental_allow_per_host_v2_parallel_get_next',
    'experimental_feed_hook'])):
  """tf.estimator's TPU settings, validated as tf.estimator validated them.

  Without a TPU only `iterations_per_loop` has an effect: a TPUEstimator
  trains in loops of that many steps, one session run each (the graph
  engine's in-graph loop, as TPUEstimator's loop on a TPU), in place of
  RunConfig's steps_per_loop. As in tf.estimator, `per_host_input_for_
  training` True and False become PER_HOST_V1 and PER_SHARD_V1, and
  `tpu_job_name` defaults to TF_CONFIG's service.tpu_worker_job_name.

  Raises:
    ValueError: iterations_per_loop not a positive count or '<N>s|m|h';
      num_shards or initial_infeed_sleep_secs not positive; num_cores_per_
      replica not a power of 2 up to 128; input_partition_dims not of one
      or two items, or without PER_HOST_V2 and num_cores_per_replica;
      eval_training_input_configuration not PER_HOST_V1 or SLICED.
    TypeError: num_shards or initial_infeed_sleep_secs not an integer.
  """

  def __new__(cls, iterations_per_loop=2, num_shards=None,
              num_cores_per_replica=None, per_host_input_for_training=True,
              tpu_job_name=None, initial_infeed_sleep_secs=None,
              input_partition_dims=None,
              eval_training_input_configuration=InputPipelineConfig.PER_HOST_V1,
              experimental_host_call_every_n_steps=1,
              experimental_allow_per_host_v2_parallel_get_next=False,
              experimental_feed_hook=None):
    parse_iterations_per_loop(iterations_per_loop)
    if num_shards is not None:
      check_positive_integer(num_shards, 'TPUConfig num_shards')
    if input_partition_dims is not None:
      if len(input_partition_dims) not in (1, 2):
        raise UserInputError(
            'input_partition_dims must be a list/tuple with one or two '
            f'elements (TPUConfig: input_partition_dims='
            f'{input_partition_dims!r}).')
      if per_host_input_for_training is not InputPipelineConfig.PER_HOST_V2:
        raise UserInputError(
            'input_partition_dims is only supported in PER_HOST_V2 mode '
            '(TPUConfig: per_host_input_for_training='
            f'{per_host_input_for_training!r}).')
      if num_cores_per_replica is None:
        raise UserInputError(
            'input_partition_dims requires setting num_cores_per_replica '
            '(TPUConfig: num_cores_per_replica is None).')
    if (num_cores_per_replica is not None and
        num_cores_per_replica not in _CORES_PER_REPLICA):
      raise UserInputError(
          'num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; got '
          f'{num_cores_per_replica}')
    if eval_training_input_configuration not in (
        InputPipelineConfig.PER_HOST_V1, InputPipelineConfig.SLICED):
      raise UserInputError(
          'eval_training_input_configuration must be PER_HOST_V1 or SLICED; '
          f'got {eval_training_input_configuration}')
    # tf.estimator's legacy booleans, by identity (1 and 2 are modes).
    if per_host_input_for_training is False:
      per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
    elif per_host_input_for_training is True:
      per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
    if initial_infeed_sleep_secs:
      check_positive_integer(initial_infeed_sleep_secs,
                             'TPUConfig initial_infeed_sleep_secs')
    tpu_job_name = tpu_job_name or _tpu_job_name_from_tf_config()
    return super().__new__(
        cls, iterations_per_loop, num_shards, num_cores_per_replica,
        per_host_input_for_training, tpu_job_name, initial_infeed_sleep_secs,
        input_partition_dims, eval_training_input_configuration,
        experimental_host_call_every_n_steps,
        experimental_allow_per_host_v2_parallel_get_next,
        experimental_feed_hook)


class RunConfig(run_config_lib.RunConfig):
  """tf.estimator's tpu.RunConfig: a RunConfig with a `tpu_config`.

  `master` and `evaluation_master` are tf.estimator's: given ones win over
  TF_CONFIG's; `evaluation_master` defaults to `master` except on an
  evaluator task; `cluster` (a TPU cluster resolver) gives the master and
  the session config's cluster_def. Without a TPU they are reported, not
  used: the runtime's sessions are placed by its own cluster settings.

  Raises:
    ValueError: both `master` and `cluster`; a `cluster` and a
      session_config that has a cluster_def.
  """

  def __init__(self, tpu_config: Optional[TPUConfig] = None,
               evaluation_master=None, master=None, cluster=None, **kwargs):
    super().__init__(**kwargs)
    object.__setattr__(self, '_tpu_config', tpu_config or TPUConfig())
    object.__setattr__(self, '_cluster', cluster)
    given_master = master
    master = super().master
    if given_master is not None:
      if cluster is not None:
        raise UserInputError('Both master and cluster are set (tpu.RunConfig: '
                             f'master={given_master!r}); give one.')
      master = given_master
    elif cluster:
      master = cluster.master()
    if evaluation_master is None:
      evaluation_master = super().evaluation_master
      if (not evaluation_master and
          self.task_type != run_config_lib.TaskType.EVALUATOR):
        evaluation_master = master
    object.__setattr__(self, '_tpu_master', master)
    object.__setattr__(self, '_tpu_evaluation_master', evaluation_master)
    if cluster:
      self._merge_cluster_def(cluster.cluster_spec())

  def _merge_cluster_def(self, cluster_spec) -> None:
    """tf.estimator's session config for a cluster resolver: its cluster
    in the ConfigProto's cluster_def."""
    session_config = self.session_config
    if session_config is None:
      session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True,
                                                isolate_session_state=True)
    if session_config.HasField('cluster_def'):
      raise UserInputError('You cannot provide a ClusterResolver and '
                           'session_config.cluster_def.')
    if cluster_spec:
      session_config.cluster_def.CopyFrom(cluster_spec.as_cluster_def())
    object.__setattr__(self, 'session_config', session_config)

  def _maybe_overwrite_session_config_for_distributed_training(self) -> None:
    # tf.estimator's TPU programs ran in-graph: no between-graph device
    # filters, the session config stays the one given (or None).
    pass

  @property
  def master(self) -> str:
    return self._tpu_master

  @property
  def evaluation_master(self) -> str:
    return self._tpu_evaluation_master

  @property
  def tpu_config(self) -> TPUConfig:
    return self._tpu_config

  @property
  def cluster(self):
    return self._cluster

  def replace(self, **kwargs) -> 'RunConfig':
    """RunConfig.replace, and `tpu_config` as tf.estimator let it be
    replaced."""
    tpu_config = kwargs.pop('tpu_config', None)
    new = super().replace(**kwargs)
    if tpu_config is not None:
      object.__setattr__(new, '_tpu_config', tpu_config)
    return new


class TPUEstimatorSpec(collections.namedtuple('TPUEstimatorSpec', [
    'mode', 'predictions', 'loss', 'train_op', 'eval_metrics',
    'export_outputs', 'scaffold_fn', 'host_call', 'training_hooks',
    'evaluation_hooks', 'prediction_hooks'])):
  """tf.estimator's: what a TPUEstimator model_fn returns.

  `eval_metrics` and `host_call` are host calls, `(function, tensors)`
  with tensors a list or a dict of its arguments, validated as
  tf.estimator validated them (estimator_rt/estimator/tpu/host_calls.py).

  As 2.15's, it checks its train_op, loss, predictions and export_outputs
  as EstimatorSpec does (core/spec.py), completing them as it does: a
  scalar loss, `{}` for no predictions outside PREDICT, PREDICT's default
  PredictOutput of the predictions as `serving_default`.

  Raises:
    ValueError, TypeError, RuntimeError: a malformed host call (see
      `tpu_host_calls.OutfeedHostCall.validate`), or a field EstimatorSpec
      refuses.
    TypeError: a hook that is not a SessionRunHook.
  """

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metrics=None, export_outputs=None, scaffold_fn=None,
              host_call=None, training_hooks=None, evaluation_hooks=None,
              prediction_hooks=None):
    tpu_host_calls.OutfeedHostCall.validate(
        _host_calls(eval_metrics, host_call))
    training_hooks = tuple(training_hooks or [])
    evaluation_hooks = tuple(evaluation_hooks or [])
    prediction_hooks = tuple(prediction_hooks or [])
    for hook in training_hooks + evaluation_hooks + prediction_hooks:
      if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
        raise UserTypeError(
            f'All hooks must be SessionRunHook instances, given: {hook}')
    # Then the fields, in 2.15's order.
    train_op = spec_lib.validated_train(train_op, None, loss, mode)
    loss = spec_lib.validated_loss(loss, mode)
    predictions = spec_lib.validated_predictions(predictions, mode)
    export_outputs = spec_lib.validated_export_outputs(
        export_outputs, predictions, mode)[0]
    return super().__new__(cls, mode, predictions, loss, train_op,
                           eval_metrics, export_outputs, scaffold_fn,
                           host_call, training_hooks, evaluation_hooks,
                           prediction_hooks)

  def as_estimator_spec(self) -> EstimatorSpec:
    """The EstimatorSpec tf.estimator ran on the CPU: the host calls called
    on their tensors (`eval_metrics` giving the `eval_metric_ops`), the ops
    `host_call` returns run at every step by a hook of each mode (so a
    graph runs them: called eagerly, this raises GraphModelFnError, which
    sends the model_fn to the graph engine), `scaffold_fn` called."""
    if self.host_call is not None and tf.executing_eagerly():
      raise GraphModelFnError(
          'TPUEstimatorSpec.host_call runs its ops at every step through a '
          'SessionRunHook, in a graph.',
          reason='its TPUEstimatorSpec has a host_call')
    results = tpu_host_calls.OutfeedHostCall.create_cpu_hostcall(
        _host_calls(self.eval_metrics, self.host_call))
    hooks = ()
    if self.host_call is not None:
      hooks = (tpu_host_calls.OutfeedHostCallHook(results['host_call']),)
    return EstimatorSpec(
        self.mode, predictions=self.predictions, loss=self.loss,
        train_op=self.train_op, eval_metric_ops=results.get('eval_metrics'),
        export_outputs=self.export_outputs,
        scaffold=self.scaffold_fn() if self.scaffold_fn else None,
        training_hooks=self.training_hooks + hooks,
        evaluation_hooks=self.evaluation_hooks + hooks,
        prediction_hooks=self.prediction_hooks + hooks)


def _speed_report_schedule(log_step_count_steps, iterations_per_loop):
  """(every_n_steps, every_n_secs) of 2.15's ExamplesPerSecondHook: with
  `iterations_per_loop` in seconds, every that many seconds; else every
  ceil(log_step_count_steps / iterations_per_loop) steps (None, None: no
  report, log_step_count_steps being None)."""
  counter = parse_iterations_per_loop(iterations_per_loop)
  if counter.unit == 'seconds':
    return None, counter.value
  if log_step_count_steps is None:
    return None, None
  return int(math.ceil(float(log_step_count_steps) / counter.value)), None


def _host_calls(eval_metrics, host_call) -> dict:
  """A spec's host calls, by the name tf.estimator gave them."""
  host_calls = {}
  if eval_metrics is not None:
    host_calls['eval_metrics'] = eval_metrics
  if host_call is not None:
    host_calls['host_call'] = host_call
  return host_calls


_BATCH_SIZE_KEY = 'batch_size'
_CTX_KEY = 'context'
_USE_TPU_KEY = 'use_tpu'
# params keys TPUEstimator sets itself; a program's params may not hold them.
_RESERVED_PARAMS_KEYS = [_BATCH_SIZE_KEY, _CTX_KEY]


class ExportSavedModelApiVersion(enum.Enum):
  """tf.estimator's TPUEstimator export_saved_model_api_version."""
  V1 = 1
  V2 = 2


def _check_takes_params(model_fn: Callable) -> None:
  """tf.estimator's check, made when the model_fn is called: TPUEstimator
  gives the batch size in params['batch_size']."""
  args = user_fns.declared_args(model_fn)
  if '*' not in args and 'params' not in args:
    raise UserInputError(
        f'model_fn ({user_fns.fn_name(model_fn)}) does not include params '
        "argument, required by TPUEstimator to pass batch size as "
        "params['batch_size'].")


def _as_estimator_spec(model_fn: Callable) -> Callable:
  """`model_fn`, returning an EstimatorSpec for a TPUEstimatorSpec."""

  def model_fn_on_cpu(features, labels, mode, params, config):
    _check_takes_params(model_fn)
    spec = user_fns.call_model_fn(model_fn, features, labels, mode, params,
                                  config)
    return spec.as_estimator_spec() if isinstance(spec,
                                                  TPUEstimatorSpec) else spec

  return model_fn_on_cpu


def _check_train_steps_on_tpu(steps, max_steps) -> None:
  """What tf.estimator checked of train's steps before a TPU ran."""
  if steps is not None and max_steps is not None:
    raise UserInputError('Can not provide both steps and max_steps '
                         f'(steps={steps!r}, max_steps={max_steps!r}).')
  for name, value in (('steps', steps), ('max_steps', max_steps)):
    if value is not None and value <= 0:
      raise UserInputError(f'Must specify {name} > 0, given: {value}')
  if steps is None and max_steps is None:
    raise UserInputError(
        'For TPU training, one of `steps` or `max_steps` must be set. '
        'Cannot be both `None`.')
  if steps is not None:
    check_positive_integer(steps, 'Train steps')
  if max_steps is not None:
    check_positive_integer(max_steps, 'Train max_steps')


class TPUEstimator(Estimator):
  """tf.estimator's TPUEstimator, run as tf.estimator ran it with
  `use_tpu=False` (see the module's docstring).

  The constructor validates its arguments as tf.estimator did (with
  `use_tpu=True` too: the batch sizes, the input pipeline for model
  parallelism). With `use_tpu=True`, train, evaluate (with `eval_on_tpu`),
  predict and export_saved_model (with `export_to_tpu`) check what
  tf.estimator checked before a TPU ran (steps, the mode's batch size),
  then are refused in one line: there is no TPU here. The other TPU
  arguments are accepted; without a TPU they have no effect.

  Raises:
    ValueError: `config` not a tpu.RunConfig; params holding 'batch_size'
      or 'context'; with `use_tpu=True`, no train_batch_size, a batch size
      that is not a positive integer (a TypeError if not an integer), or
      PER_SHARD_V1 input with num_cores_per_replica, or an
      `embedding_config_spec` with input other than PER_HOST_V1 or V2; a
      `partition_strategy='mod'` embedding_config_spec without a TPU; a
      model_fn with arguments tf.estimator did not pass;
      export_saved_model_api_version not 1 or 2.
  """

  def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
               use_tpu=True, train_batch_size=None, eval_batch_size=None,
               predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
               export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
               embedding_config_spec=None,
               export_saved_model_api_version=ExportSavedModelApiVersion.V1):
    del batch_axis, export_to_cpu
    if not isinstance(config, RunConfig):
      raise UserInputError(
          '`config` must be provided with type `tpu_config.RunConfig` '
          f'(TPUEstimator: config={config!r}).')
    if params is not None and any(k in params for k in _RESERVED_PARAMS_KEYS):
      raise UserInputError(
          f'{_RESERVED_PARAMS_KEYS} are reserved keys but existed in params '
          f'{params}.')
    if use_tpu:
      if train_batch_size is None:
        raise UserInputError('`train_batch_size` cannot be `None` '
                             '(TPUEstimator with use_tpu=True).')
      check_positive_integer(train_batch_size, 'train_batch_size')
      if (config.tpu_config.per_host_input_for_training ==
          InputPipelineConfig.PER_SHARD_V1 and
          config.tpu_config.num_cores_per_replica):
        raise UserInputError(
            'Model parallelism only supports per host input for training. '
            'Please adjust TPURunconfig.per_host_input_for_training.')
      for name, size in (('eval_batch_size', eval_batch_size),
                         ('predict_batch_size', predict_batch_size)):
        if size is not None:
          check_positive_integer(size, name)
      if (embedding_config_spec and
          config.tpu_config.per_host_input_for_training not in (
              InputPipelineConfig.PER_HOST_V1,
              InputPipelineConfig.PER_HOST_V2)):
        raise UserInputError(
            'Only PER_HOST_V1 and PER_HOST_V2 is supported when using TPU '
            'Embedding; got '
            f'{config.tpu_config.per_host_input_for_training}.')
    if (not (use_tpu and eval_on_tpu) and embedding_config_spec and
        embedding_config_spec.partition_strategy == 'mod'):
      raise UserInputError('Mod sharding of embedding tables not supported '
                           'on CPU (EmbeddingConfigSpec: partition_strategy='
                           "'mod').")
    user_fns.check_model_fn(model_fn)
    if not (isinstance(export_saved_model_api_version,
                       ExportSavedModelApiVersion) or
            export_saved_model_api_version in (1, 2)):
      raise UserInputError('export_saved_model_api_version should be 1 or 2; '
                           f'got {export_saved_model_api_version}.')
    steps = loop_steps(config.tpu_config.iterations_per_loop)
    if steps is not None:
      # replace() keeps the other settings and the TPU ones.
      config = config.replace(steps_per_loop=steps)
    # As 2.15: the Estimator logs no step line of its own; the
    # examples-per-second report stands in for it (see `train`).
    self._log_every_n_steps, self._log_every_n_secs = _speed_report_schedule(
        config.log_step_count_steps, config.tpu_config.iterations_per_loop)
    config = config.replace(log_step_count_steps=None)
    self._use_tpu = bool(use_tpu)
    self._eval_on_tpu = bool(use_tpu and eval_on_tpu)
    self._export_to_tpu = bool(use_tpu and export_to_tpu)
    params = dict(params or {}, use_tpu=False)
    super().__init__(_as_estimator_spec(model_fn), model_dir=model_dir,
                     config=config, params=params,
                     warm_start_from=warm_start_from)
    self._user_model_fn = model_fn
    # As in tf.estimator, without a TPU the embedding_config_spec is
    # validated, then unused: the model_fn's TPU embedding columns embed on
    # the CPU.
    self._ctx = tpu_context.get_tpu_context(
        self.config, train_batch_size, eval_batch_size, predict_batch_size,
        use_tpu, eval_on_tpu, embedding_config_spec)

  def _refuse_tpu(self, what: str, mode: Optional[str] = None,
                  input_fn: Optional[Callable] = None) -> None:
    """Raises tf.estimator's errors for the configuration against TPU cores
    TensorFlow lists here (tpu_system) and for the program (tpu_checks),
    then the refusal."""
    if input_fn is not None:
      tpu_system.check_against_local_tpus(self.config, mode,
                                          self._global_batch_size(mode))
      tpu_checks.check_program(self._user_model_fn, input_fn, mode,
                               self.params, self.config,
                               self._global_batch_size(mode))
    _check_takes_params(self._user_model_fn)
    raise UserInputError(
        f'TPUEstimator(use_tpu=True).{what}: estimator_rt runs on CPUs and '
        'GPUs, not TPUs; pass use_tpu=False (the program then runs as '
        'tf.estimator ran it without a TPU).')

  def _global_batch_size(self, mode: str) -> Optional[int]:
    """The batch size the constructor was given for `mode`."""
    with self._ctx.with_mode(mode) as ctx:
      return ctx.global_batch_size

  def _check_batch_size_on_tpu(self, mode: str, name: str,
                               method: str) -> None:
    if self._global_batch_size(mode) is None:
      raise UserInputError(
          f'{name} in TPUEstimator constructor cannot be `None` if .{method} '
          'is running on TPU.')

  @contextlib.contextmanager
  def _batch_size_of(self, mode: str):
    """params['batch_size'] is the mode's batch size meanwhile (the params
    dict is the one the engines pass to the input_fn and the model_fn)."""
    previous = self._params.get('batch_size')
    size = self._global_batch_size(mode)
    if size is not None:
      self._params['batch_size'] = size
    try:
      yield
    finally:
      if previous is None:
        self._params.pop('batch_size', None)
      else:
        self._params['batch_size'] = previous

  def train(self, input_fn, hooks=None, steps=None, max_steps=None,
            saving_listeners=None):
    if self._use_tpu:
      _check_train_steps_on_tpu(steps, max_steps)
      self._refuse_tpu('train', ModeKeys.TRAIN, input_fn)
    if self._global_batch_size(ModeKeys.TRAIN) is None:
      raise UserInputError('TPUEstimator.train: train_batch_size is None; '
                           'give it to the constructor.')
    hooks = list(hooks or ())
    if (self._log_every_n_steps is not None or
        self._log_every_n_secs is not None):
      hooks.append(examples_per_second.ExamplesPerSecondLoopHook(
          batch_size=self._global_batch_size(ModeKeys.TRAIN),
          every_n_steps=self._log_every_n_steps,
          every_n_secs=self._log_every_n_secs,
          output_dir=(self.model_dir if self.config.save_summary_steps
                      else None)))
    with self._batch_size_of(ModeKeys.TRAIN):
      return super().train(input_fn, hooks, steps, max_steps,
                           saving_listeners)

  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    if self._eval_on_tpu:
      self._check_batch_size_on_tpu(ModeKeys.EVAL, 'eval_batch_size',
                                    'evaluate')
      if steps is None:
        raise UserInputError(
            'Evaluate `steps` must be set on TPU. Cannot be `None`.')
      check_positive_integer(steps, 'Eval steps')
      self._refuse_tpu('evaluate', ModeKeys.EVAL, input_fn)
    with self._batch_size_of(ModeKeys.EVAL):
      return super().evaluate(input_fn, steps, hooks, checkpoint_path, name)

  def _check_evaluation_in(self, engine, input_fn, **kwargs):
    # Within train (train_and_evaluate's check), whose batch size is set.
    with self._batch_size_of(ModeKeys.EVAL):
      super()._check_evaluation_in(engine, input_fn, **kwargs)

  def predict(self, input_fn, predict_keys=None, hooks=None,
              checkpoint_path=None, yield_single_examples=True):
    if self._use_tpu:
      self._check_batch_size_on_tpu(ModeKeys.PREDICT, 'predict_batch_size',
                                    'predict')
      self._refuse_tpu('predict', ModeKeys.PREDICT, input_fn)
    with self._batch_size_of(ModeKeys.PREDICT):
      # Read while the batch size is set: prediction is a generator.
      yield from super().predict(input_fn, predict_keys, hooks,
                                 checkpoint_path, yield_single_examples)


  def export_saved_model(self, export_dir_base, serving_input_receiver_fn=None,
                         assets_extra=None, as_text=False,
                         checkpoint_path=None,
                         experimental_mode=ModeKeys.PREDICT, **kwargs):
    if self._export_to_tpu:
      # tf.estimator added a TPU metagraph (tpu.rewrite of the model_fn).
      self._refuse_tpu('export_saved_model (export_to_tpu=True)')
    return super().export_saved_model(
        export_dir_base, serving_input_receiver_fn, assets_extra, as_text,
        checkpoint_path, experimental_mode, **kwargs)
