"""tf.compat.v1.estimator.tpu: TPUEstimator run as tf.estimator ran it
without a TPU (`use_tpu=False`), which is how the Object Detection API and
other TPU-ready programs train on CPUs and GPUs.

With `use_tpu=False` tf.estimator's TPUEstimator was an Estimator that put
the mode's batch size in `params['batch_size']` (and `params['use_tpu']`
False) for the input_fn and the model_fn, and turned the model_fn's
`TPUEstimatorSpec` into an `EstimatorSpec` (`eval_metrics=(metric_fn,
tensors)` into `eval_metric_ops`, `scaffold_fn` into a Scaffold). So does
this one. `use_tpu=True` is refused in one line: there is no TPU here.
"""

import collections
import contextlib
import re
from typing import Any, Callable, Optional

from absl import logging

from estimator_rt import run_config as run_config_lib
from estimator_rt import user_fns
from estimator_rt.errors import UserInputError
from estimator_rt.estimator import Estimator
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.spec import EstimatorSpec


class InputPipelineConfig:
  """tf.estimator's constants for TPUConfig.per_host_input_for_training."""
  PER_SHARD_V1 = 1
  PER_HOST_V1 = 2
  PER_HOST_V2 = 3
  BROADCAST = 4
  SLICED = 5


def loop_steps(iterations_per_loop) -> Optional[int]:
  """The steps of one training loop that `TPUConfig.iterations_per_loop`
  asks for: its count (an int, or digits); None for tf.estimator's
  time-based form ('<N>s', '<N>m', '<N>h'), whose loops the runtime already
  cuts by time.

  Raises:
    UserInputError: anything else (tf.estimator refused it too).
  """
  match = re.fullmatch(r'([1-9][0-9]*)([smh]?)', str(iterations_per_loop))
  if match is None or isinstance(iterations_per_loop, bool):
    raise UserInputError(
        f'TPUConfig: iterations_per_loop={iterations_per_loop!r} must be a '
        "positive integer or a time '<N>s', '<N>m' or '<N>h'.")
  return None if match.group(2) else int(match.group(1))


class TPUConfig(collections.namedtuple('TPUConfig', [
    'iterations_per_loop', 'num_shards', 'num_cores_per_replica',
    'per_host_input_for_training', 'tpu_job_name',
    'initial_infeed_sleep_secs', 'input_partition_dims',
    'eval_training_input_configuration',
    'experimental_host_call_every_n_steps',
    'experimental_allow_per_host_v2_parallel_get_next',
    'experimental_feed_hook'])):
  """tf.estimator's TPU settings. Without a TPU only `iterations_per_loop`
  has an effect: a TPUEstimator trains in loops of that many steps, one
  session run each (the graph engine's in-graph loop, as TPUEstimator's
  loop on a TPU), in place of RunConfig's steps_per_loop."""

  def __new__(cls, iterations_per_loop=2, num_shards=None,
              num_cores_per_replica=None, per_host_input_for_training=True,
              tpu_job_name=None, initial_infeed_sleep_secs=None,
              input_partition_dims=None,
              eval_training_input_configuration=InputPipelineConfig.PER_HOST_V1,
              experimental_host_call_every_n_steps=1,
              experimental_allow_per_host_v2_parallel_get_next=False,
              experimental_feed_hook=None):
    return super().__new__(
        cls, iterations_per_loop, num_shards, num_cores_per_replica,
        per_host_input_for_training, tpu_job_name, initial_infeed_sleep_secs,
        input_partition_dims, eval_training_input_configuration,
        experimental_host_call_every_n_steps,
        experimental_allow_per_host_v2_parallel_get_next,
        experimental_feed_hook)


class RunConfig(run_config_lib.RunConfig):
  """tf.estimator's tpu.RunConfig: a RunConfig with a `tpu_config`.

  `evaluation_master`, `master` and `cluster` (a TPU cluster resolver) are
  accepted and have no effect without a TPU.
  """

  def __init__(self, tpu_config: Optional[TPUConfig] = None,
               evaluation_master=None, master=None, cluster=None, **kwargs):
    del evaluation_master, master
    super().__init__(**kwargs)
    object.__setattr__(self, '_tpu_config', tpu_config or TPUConfig())
    object.__setattr__(self, '_cluster', cluster)

  @property
  def tpu_config(self) -> TPUConfig:
    return self._tpu_config

  @property
  def cluster(self):
    return self._cluster


class TPUEstimatorSpec(collections.namedtuple('TPUEstimatorSpec', [
    'mode', 'predictions', 'loss', 'train_op', 'eval_metrics',
    'export_outputs', 'scaffold_fn', 'host_call', 'training_hooks',
    'evaluation_hooks', 'prediction_hooks'])):
  """tf.estimator's: what a TPUEstimator model_fn returns."""

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metrics=None, export_outputs=None, scaffold_fn=None,
              host_call=None, training_hooks=None, evaluation_hooks=None,
              prediction_hooks=None):
    return super().__new__(cls, mode, predictions, loss, train_op,
                           eval_metrics, export_outputs, scaffold_fn,
                           host_call, training_hooks or [],
                           evaluation_hooks or [], prediction_hooks or [])

  def as_estimator_spec(self) -> EstimatorSpec:
    """The EstimatorSpec tf.estimator ran on CPU: `eval_metrics`'
    metric_fn called on its tensors, `scaffold_fn` called; `host_call`
    (TPU outfeed summaries) is left out, with one warning."""
    eval_metric_ops = None
    if self.eval_metrics is not None:
      metric_fn, tensors = self.eval_metrics
      eval_metric_ops = (metric_fn(**tensors) if isinstance(tensors, dict)
                         else metric_fn(*tensors))
    if self.host_call is not None:
      logging.warning('TPUEstimatorSpec: host_call is not run without a TPU '
                      '(as in tf.estimator, it feeds TPU-side summaries).')
    return EstimatorSpec(
        self.mode, predictions=self.predictions, loss=self.loss,
        train_op=self.train_op, eval_metric_ops=eval_metric_ops,
        export_outputs=self.export_outputs,
        scaffold=self.scaffold_fn() if self.scaffold_fn else None,
        training_hooks=list(self.training_hooks),
        evaluation_hooks=list(self.evaluation_hooks),
        prediction_hooks=list(self.prediction_hooks))


def _as_estimator_spec(model_fn: Callable) -> Callable:
  """`model_fn`, returning an EstimatorSpec for a TPUEstimatorSpec."""

  def model_fn_on_cpu(features, labels, mode, params, config):
    spec = user_fns.call_model_fn(model_fn, features, labels, mode, params,
                                  config)
    return spec.as_estimator_spec() if isinstance(spec,
                                                  TPUEstimatorSpec) else spec

  return model_fn_on_cpu


class TPUEstimator(Estimator):
  """tf.estimator's TPUEstimator with `use_tpu=False` (see the module's
  docstring). The other TPU arguments are accepted; without a TPU they
  have no effect.

  Raises:
    UserInputError: `use_tpu=True`, an `embedding_config_spec`, or a
      model_fn without `params` (where the batch size goes).
  """

  def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
               use_tpu=True, train_batch_size=None, eval_batch_size=None,
               predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
               export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
               embedding_config_spec=None,
               export_saved_model_api_version=None):
    del batch_axis, eval_on_tpu, export_to_tpu, export_to_cpu
    del export_saved_model_api_version
    tpu_config = getattr(config, 'tpu_config', None)
    if tpu_config is not None:
      steps = loop_steps(tpu_config.iterations_per_loop)
      if steps is not None:
        # replace() keeps the other settings (and makes a plain RunConfig,
        # which is what the engines read).
        config = config.replace(steps_per_loop=steps)
    if use_tpu:
      raise UserInputError(
          'TPUEstimator(use_tpu=True): estimator_rt runs on CPUs and GPUs; '
          'pass use_tpu=False (the program then trains as tf.estimator ran '
          'it without a TPU).')
    if embedding_config_spec is not None:
      raise UserInputError(
          'TPUEstimator: embedding_config_spec is for TPU embeddings; '
          'without a TPU use feature columns in the model_fn.')
    if 'params' not in user_fns.declared_args(model_fn):
      raise UserInputError(
          f'TPUEstimator: model_fn {user_fns.fn_name(model_fn)} must take '
          "`params`: params['batch_size'] is how it gets the batch size.")
    self._batch_sizes = {ModeKeys.TRAIN: train_batch_size,
                         ModeKeys.EVAL: eval_batch_size,
                         ModeKeys.PREDICT: predict_batch_size}
    params = dict(params or {}, use_tpu=False)
    super().__init__(_as_estimator_spec(model_fn), model_dir=model_dir,
                     config=config, params=params,
                     warm_start_from=warm_start_from)

  @contextlib.contextmanager
  def _batch_size_of(self, mode: str):
    """params['batch_size'] is the mode's batch size meanwhile (the params
    dict is the one the engines pass to the input_fn and the model_fn)."""
    previous = self._params.get('batch_size')
    size = self._batch_sizes[mode]
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
    if self._batch_sizes[ModeKeys.TRAIN] is None:
      raise UserInputError('TPUEstimator.train: train_batch_size is None; '
                           'give it to the constructor.')
    with self._batch_size_of(ModeKeys.TRAIN):
      return super().train(input_fn, hooks, steps, max_steps,
                           saving_listeners)

  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    with self._batch_size_of(ModeKeys.EVAL):
      return super().evaluate(input_fn, steps, hooks, checkpoint_path, name)

  def predict(self, input_fn, predict_keys=None, hooks=None,
              checkpoint_path=None, yield_single_examples=True):
    with self._batch_size_of(ModeKeys.PREDICT):
      # Read while the batch size is set: prediction is a generator.
      yield from super().predict(input_fn, predict_keys, hooks,
                                 checkpoint_path, yield_single_examples)


_EMBEDDING_CONFIG_SPEC = (
    'tpu.experimental.EmbeddingConfigSpec configures TPU embeddings; '
    'without a TPU use feature columns in the model_fn')


def embedding_config_spec_refused(*args: Any, **kwargs: Any):
  """tf.estimator's tpu.experimental.EmbeddingConfigSpec: TPU only."""
  del args, kwargs
  raise UserInputError(_EMBEDDING_CONFIG_SPEC + '.')


# Refused whatever the arguments, marked as estimator_rt.compat.not_yet's
# placeholders are (`python -m estimator_rt.compat --check` reads it).
embedding_config_spec_refused.not_yet = _EMBEDDING_CONFIG_SPEC
