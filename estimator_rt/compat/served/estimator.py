"""tf.estimator 2.15's `estimator` module, over estimator_rt's Estimator.

`Estimator` (2.15's v1 class, `tf.compat.v1.estimator.Estimator`) and
`EstimatorV2` (`tf.estimator.Estimator`) are both the runtime's Estimator,
which has 2.15's protected methods subclasses call (`_call_model_fn`,
`_call_input_fn`, `_get_iterator_from_input_fn`, `_create_global_step`,
...: estimator_rt/estimator/protected_methods.py) and refuses, as 2.15 did,
subclasses that override its members (estimator_rt/estimator/overrides.py). Here
are the module's other helpers that code imports, each the runtime's
policy where it has one: resolving a config's model_dir and session config
(`maybe_overwrite_model_dir_and_session_config`, which Estimator
subclasses and canned-estimator libraries call), warm-start settings,
checking a model_fn's arguments, hooks and overrides, writing a dict of
results as a summary, reading a model_dir's global step; and the graph
helpers 2.15's Estimator built its graphs with (the loss metric, metric
update ops, a Scaffold combined across replicas, the replica device
setter), which its subclasses call while building theirs.
"""

import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.estimator import estimator as estimator_lib
from estimator_rt.estimator.canned import base as canned_base
from estimator_rt.estimator import overrides
from estimator_rt.core import summaries
from estimator_rt.estimator import warm_starting
from estimator_rt.compat.served import model_fn as model_fn_lib
from estimator_rt.training.graph import model as graph_model
from estimator_rt.cluster.run_config import get_default_session_config
from estimator_rt.core.spec import check_metric_names
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError
from estimator_rt.estimator.estimator import Estimator
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.estimator.warm_starting import VocabInfo
from estimator_rt.estimator.warm_starting import WarmStartSettings

EstimatorV2 = Estimator

# What libraries' canned estimators record their type in (2.15's gauge).
_canned_estimator_api_gauge = canned_base.API_GAUGE

# The arguments a model_fn may declare.
_VALID_MODEL_FN_ARGS = model_fn_lib._VALID_MODEL_FN_ARGS  # pylint: disable=protected-access

_verify_model_fn_args = model_fn_lib.verify_model_fn_args


def maybe_overwrite_model_dir_and_session_config(config, model_dir):
  """`config` (None: a default RunConfig) as an Estimator uses it: its
  session_config filled with the default one if None, and its model_dir
  set to `model_dir` (which must agree with config.model_dir if both are
  set), or else to a new temporary directory.

  Raises:
    ValueError: `config` is not a RunConfig, or the model_dirs differ.
  """
  if config is None:
    tf.compat.v1.logging.info('Using default config.')
  config = estimator_lib.checked_config(config)
  if config.session_config is None:
    config = config.replace(session_config=get_default_session_config())
  return estimator_lib.config_with_model_dir(config, model_dir)


def _get_default_warm_start_settings(warm_start_from):
  """`warm_start_from` as WarmStartSettings (None for None): a path is a
  checkpoint or model_dir, or a SavedModel whose variables are used.

  Raises:
    ValueError: it is neither a path nor WarmStartSettings.
  """
  return warm_starting.settings_of(warm_start_from)


def _get_loss_reduce_op_for_reporting():
  """How replicas' losses are combined for reporting: the optimizer's loss
  reduction where the graph marks the loss as scaled by it, else SUM."""
  graph = tf.compat.v1.get_default_graph()
  if getattr(graph, '_is_loss_scaled_by_optimizer', False):
    return tf.compat.v1.distribute.get_loss_reduction()
  return tf.distribute.ReduceOp.SUM


def _verify_and_create_loss_metric(eval_metric_ops, loss, distribution=None):
  """Adds the mean of `loss` (per replica under `distribution`) to
  `eval_metric_ops` as 'loss', as evaluation reports it, and returns them.

  Raises:
    ValueError: they hold a 'loss' already.
  """
  names = {name: None for name in eval_metric_ops
           if name == model_fn_lib.LOSS_METRIC_KEY}
  check_metric_names(names, 'the model_fn')
  if distribution is None:
    metric = tf.compat.v1.metrics.mean(loss)
  else:
    metric = distribution.extended.call_for_each_replica(
        tf.compat.v1.metrics.mean, args=(loss,))
  eval_metric_ops[model_fn_lib.LOSS_METRIC_KEY] = metric
  return eval_metric_ops


def _extract_metric_update_ops(eval_dict, distribution=None):
  """(one op running every metric's update, {name: value}) of a dict of
  `(value, update_op)` pairs, by name (so every graph is the same); the
  op is None for no metrics."""
  updates = []
  values = {}
  for name, (value, update) in sorted(eval_dict.items()):
    values[name] = value
    updates.append(distribution.group(update) if distribution else update)
  return (tf.group(*updates) if updates else None), values


def _has_dataset_or_queue_runner(maybe_tensor):
  """Whether the tensors an input_fn returned come from a dataset's
  iterator or the graph has queue runners: only then does reading them
  end (so predicting on them does)."""
  return graph_model.has_dataset_or_queue_runner(maybe_tensor)


def _get_replica_device_setter(config):
  """A `replica_device_setter` placing variables round robin on `config`'s
  ps tasks and other ops on its task, or None without ps tasks."""
  if config.num_ps_replicas <= 0:
    return None
  worker_device = (f'/job:{config.task_type}/task:{config.task_id}'
                   if config.task_type else '/job:worker')
  from tensorflow.python.training import device_setter  # pylint: disable=g-import-not-at-top
  return tf.compat.v1.train.replica_device_setter(
      ps_tasks=config.num_ps_replicas, worker_device=worker_device,
      merge_devices=True, ps_ops=list(device_setter.STANDARD_PS_OPS),
      cluster=config.cluster_spec)


def create_per_replica_ready_for_local_init_op(scaffold):
  """`scaffold.ready_for_local_init_op`, or the graph's default one (the
  global variables not initialized yet), made once per graph."""
  if scaffold.ready_for_local_init_op:
    return scaffold.ready_for_local_init_op
  return tf.compat.v1.train.Scaffold.get_or_default(
      'ready_for_local_init_op',
      tf.compat.v1.GraphKeys.READY_FOR_LOCAL_INIT_OP,
      lambda: tf.compat.v1.report_uninitialized_variables(
          tf.compat.v1.global_variables()))


def _combine_distributed_scaffold(grouped_scaffold, distribution):
  """One Scaffold of the Scaffolds `call_for_each_replica` returned: the
  replicas' init, local init and summary ops grouped, their ready ops
  concatenated, the first replica's saver and init_fn, their feed dicts
  grouped."""
  scaffolds = distribution.experimental_local_results(grouped_scaffold)

  def grouped(field):
    values = [getattr(s, field) for s in scaffolds
              if getattr(s, field) is not None]
    return distribution.group(values) if values else None

  def first(field):
    values = [getattr(s, field) for s in scaffolds
              if getattr(s, field) is not None]
    return values[0] if values else None

  def per_replica(fn):
    value = distribution.extended.call_for_each_replica(
        fn, args=(grouped_scaffold,))
    if value is None:
      return None
    parts = tf.nest.flatten(distribution.experimental_local_results(value))
    return parts[0] if len(parts) == 1 else tf.concat(parts, 0)

  return tf.compat.v1.train.Scaffold(
      init_op=grouped('init_op'),
      ready_op=per_replica(lambda scaffold: scaffold.ready_op),
      ready_for_local_init_op=per_replica(
          create_per_replica_ready_for_local_init_op),
      local_init_op=grouped('local_init_op'),
      summary_op=grouped('summary_op'),
      saver=first('saver'),
      init_feed_dict=grouped('init_feed_dict'),
      init_fn=first('_user_init_fn'))


def _dict_to_str(dictionary):
  """`k = v, ...` of `dictionary` by key, bytes values left out."""
  return ', '.join(f'{k} = {v}' for k, v in sorted(dictionary.items())
                   if not isinstance(v, bytes))


def _write_dict_to_summary(output_dir, dictionary, current_global_step):
  """Writes `dictionary` as one summary event at `current_global_step` in
  `output_dir`: numbers as scalars, bytes holding a serialized Summary as
  its values (tagged `key/i`), arrays as tensors; None values and
  'global_step' are left out."""
  tf.compat.v1.logging.info('Saving dict for global step %d: %s',
                            current_global_step, _dict_to_str(dictionary))
  summaries.write_dict(output_dir, dictionary, current_global_step)


def _write_checkpoint_path_to_summary(output_dir, checkpoint_path,
                                      current_global_step):
  """Writes `checkpoint_path` as a string tensor tagged 'checkpoint_path'
  at `current_global_step` in `output_dir`."""
  writer = summaries.directory_writer(output_dir)
  writer.write_summary(summaries.checkpoint_path_summary(checkpoint_path),
                       current_global_step)
  writer.flush()
  summaries.leave_in_file_writer_cache(output_dir)


def _load_global_step_from_checkpoint_dir(checkpoint_dir):
  """The global step of `checkpoint_dir`'s latest checkpoint; 0 if there is
  none (or it cannot be read)."""
  try:
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    return checkpoints.checkpoint_step(latest) if latest else 0
  except Exception:  # pylint: disable=broad-except
    return 0


def _check_checkpoint_available(model_dir):
  """Raises ValueError if `model_dir` holds no checkpoint."""
  if not tf.train.latest_checkpoint(model_dir):
    raise UserInputError(
        f'Could not find trained model in model_dir: {model_dir}.')


def _assert_members_are_not_overridden(cls, obj):
  """Raises ValueError if `obj`'s class overrides a member of `cls`, other
  than the few 2.15 allowed (see estimator_rt/estimator/overrides.py)."""
  overrides.check_not_overridden(cls, obj)


def _check_hooks_type(hooks):
  """`hooks` as a list, if each is a SessionRunHook.

  Raises:
    TypeError: one is not.
  """
  hooks = list(hooks or [])
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise UserTypeError(f'Hooks must be a SessionRunHook, given: {hook}')
  return hooks


def _check_listeners_type(saving_listeners):
  """`saving_listeners` as a list, if each is a CheckpointSaverListener.

  Raises:
    TypeError: one is not.
  """
  listeners = list(saving_listeners or [])
  for listener in listeners:
    if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
      raise UserTypeError(
          'saving_listeners must be a list of CheckpointSaverListener, '
          f'given: {listener}')
  return listeners


__all__ = ['Estimator', 'EstimatorV2', 'ModeKeys', 'VocabInfo',
           'WarmStartSettings']
