"""Every module-level name tf.estimator 2.15's modules defined, served here.

The inventory (tests/data/tf_estimator_215/module_names.json) was made from
tf.estimator 2.15 itself by scripts/tf_estimator_215/list_module_names.py:
79 modules, 553 names (functions, classes and plain constants, public and
private). For every entry, under both of 2.15's module paths
(`tensorflow_estimator.python.estimator.X` and `tensorflow.python.estimator.X`):

  - the module imports and the name resolves;
  - a function or class is called as 2.15's was (`compatible_signature`):
    2.15's parameters, in order, with their names, kinds and defaults (a
    class: its constructor's); where 2.15 required a parameter, a default
    here is allowed, and parameters 2.15 did not have only as keyword-only
    ones with defaults (estimator_rt's own additions, which no 2.15 call
    passes);
  - a constant has 2.15's value.

What each name *does* is tested where its behaviour is (the served modules'
tests); this file checks that nothing of 2.15's surface is absent or shaped
differently. A name whose behaviour cannot exist here (TPU hardware) is
served as a refusal: it resolves, has 2.15's signature, and raises one clear
error when used (`REFUSED` below, each with its reason in the README).
"""

import importlib
import importlib.util
import inspect
import json
import os
import re

import pytest

import estimator_rt.compat

estimator_rt.compat.install()

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, 'data', 'tf_estimator_215',
                       'module_names.json')) as f:
  INVENTORY = json.load(f)

PACKAGE = 'tensorflow_estimator.python.estimator'
TF_PACKAGE = 'tensorflow.python.estimator'

# Names not served yet, by module: this list only shrinks (the test fails
# for a name listed here that is served, so that the list stays true).
NOT_SERVED_YET = {
    'canned.saved_model_estimator': {
        'SavedModelEstimator',
    },
    'canned.timeseries.ar_model': {
        'ARModel', 'LSTMPredictionModel',
    },
    'canned.timeseries.estimators': {
        'LSTMAutoRegressor', 'TimeSeriesRegressor',
    },
    'canned.timeseries.saved_model_utils': {
        '_canonicalize_numpy_data', '_colate_features_to_feeds_and_fetches',
        'cold_start_filter', 'filter_continuation', 'predict_continuation',
    },
    'early_stopping': {
        '_CheckForStoppingHook', '_EVENT_FILE_GLOB_PATTERN',
        '_MultiWorkerEarlyStoppingHook',
        '_stop_if_no_metric_improvement_hook',
        '_stop_if_threshold_crossed_hook', '_summaries',
    },
    'estimator': {
        '_combine_distributed_scaffold', '_extract_metric_update_ops',
        '_get_default_warm_start_settings',
        '_get_loss_reduce_op_for_reporting', '_get_replica_device_setter',
        '_has_dataset_or_queue_runner', '_verify_and_create_loss_metric',
        '_verify_model_fn_args', 'create_per_replica_ready_for_local_init_op',
        'maybe_overwrite_model_dir_and_session_config',
    },
    'export.export': {
        '_SINGLE_TENSOR_DEFAULT_NAMES', '_check_tensor', '_check_tensor_key',
        '_placeholder_from_tensor',
        '_placeholders_from_receiver_tensors_dict',
        'wrap_and_check_input_tensors',
    },
    'export.function': {
        'EstimatorSpecFunction', 'ModelFunction', '_EstimatorSpecFunction',
        '_canonicalize_receiver_tensors', '_filter_estimator_spec_outputs',
        '_input_receiver_fn_name', '_prune_receiver_tensors',
        '_wrap_and_verify_model_fn',
    },
    'exporter': {
        'BestExporter', '_SavedModelExporter', '_loss_smaller',
        '_verify_compare_fn_args',
    },
    'extenders': {
        '_call_metric_fn', '_verify_metric_fn_args',
    },
    'hooks.fake_summary_writer': {
        'FakeSummaryWriter',
    },
    'inputs.numpy_io': {
        '_TARGET_KEY', '_get_unique_target_key',
        '_validate_and_convert_features', 'string_types',
    },
    'inputs.pandas_io': {
        'HAS_PANDAS', '_get_unique_target_key',
    },
    'keras_lib': {
        'FormattedKeyError', '_DEFAULT_SERVING_KEY',
        '_any_weight_initialized', '_assert_valid_model',
        '_cast_tensor_to_floatx', '_clone_and_build_model',
        '_convert_estimator_io_to_keras',
        '_convert_keras_metrics_to_estimator', '_convert_tensor',
        '_create_keras_model_fn', '_extract_sample_weight_tensors',
        '_get_file_from_google_storage', '_save_first_checkpoint',
        'standardize_sample_weights',
    },
    'model_fn': {
        '_check_is_tensor', '_check_is_tensor_or_operation',
        '_default_graph_error_message_template',
        '_update_variable_collection',
        '_validate_estimator_spec_export_outputs',
        '_validate_estimator_spec_hooks', '_validate_estimator_spec_loss',
        '_validate_estimator_spec_predictions',
        '_validate_estimator_spec_train_op', '_validate_eval_metric_ops',
        '_validate_scaffold',
    },
    'run_config': {
        '_count_ps', '_count_worker', '_get_eval_session_master',
        '_get_global_id_in_cluster', '_get_model_dir', '_get_session_master',
        '_validate_properties', '_validate_save_ckpt_with_replaced_keys',
        '_validate_service', '_validate_task_type_and_task_id',
    },
    'tools.checkpoint_converter': {
        '_add_new_variable', '_add_opt_variable',
        '_convert_hyper_params_in_graph', '_convert_variables_in_ckpt',
        'main',
    },
    'tpu._tpu_estimator_embedding': {
        'EmbeddingConfig', 'EmbeddingConfigSpec', '_EMBEDDING_COLUMN_CLASSES',
        '_LEN_TABLE_NAME_PREFIX', '_SUPPORTED_FEATURE_COLUMNS',
        '_SUPPORTED_OPTIMIZERS', '_TABLE_NAME_PREFIX',
        '_TPU_DEVICE_SPECIFIC_EMBEDDING_COLUMNS',
        '_TPU_EMBEDDING_COLUMN_CLASSES',
        '_get_embedding_var_name_from_table_name',
        '_get_embedding_variable_name', '_get_slot_variable_names',
        '_get_sparse_feature_from_feature',
        '_get_table_name_from_embedding_var_name',
        '_get_weights_from_features', '_maybe_dense_to_sparse',
        '_split_tensor', 'get_configs_from_feature_columns',
        'get_full_variable_names', 'get_tpu_embedding_columns',
        'split_inputs',
    },
    'tpu.tpu_context': {
        'TPUContext', '_DEFAULT_COORDINATOR_JOB_NAME', '_DEFAULT_JOB_NAME',
        '_InternalTPUContext', '_LOCAL_MASTERS',
        '_NUM_CORES_TO_COMPUTATION_SHAPE', '_OneCoreTPUContext',
        '_TPUEstimatorReplicaContext', '_get_tpu_context',
    },
    'tpu.tpu_estimator': {
        'BatchConfig', 'CatchInvalidHostcallFunctions',
        'ExamplesPerSecondHook', 'InstallSignalHandlerHook', 'PeriodicLogger',
        'TPUInfeedOutfeedSessionHook',
        'TPUInfeedOutfeedSessionHookForPrediction', 'TensorPacker',
        '_CROSS_REPLICA_SUM_OP', '_CapturedObject', '_CapturingContext',
        '_INFERENCE_ON_TPU_MODE', '_INITIAL_LOSS', '_InputPipeline',
        '_KEY_WHEN_PREDICTIONS_IS_A_TENSOR', '_ModelFnWrapper', '_NotSaver',
        '_ONE_GIGABYTE', '_OpQueueContext', '_OpSignalOnceQueueContext',
        '_OutfeedHostCall', '_OutfeedHostCallHook', '_SIGNAL',
        '_SetEvalIterationsHook', '_StoppingPredictHook',
        '_TENSOR_PACKER_CONCATENATED_SMALL_FEATURES_KEY',
        '_TENSOR_PACKER_MINIMUM_NUM_SMALL_FEATURES_TO_GROUP',
        '_TENSOR_PACKER_SMALL_FEATURE_DIM_SIZE', '_TPU_ENQUEUE_OPS',
        '_TPU_TRAIN_OP', '_ZERO_LOSS', '_add_item_to_params',
        '_build_computation_for_inference',
        '_build_tpu_computation_for_inference', '_check_add_preemption_hook',
        '_create_global_step', '_eval_on_tpu_system', '_extract_key_names',
        '_get_scaffold', '_increase_eval_step_op', '_is_iterable',
        '_predict_on_tpu_system', '_sync_variables_ops',
        '_train_on_tpu_system', '_validate_tpu_training_graph',
        '_verify_cross_hosts_transfer_size',
        '_wrap_computation_in_while_loop',
        '_wrap_computation_in_while_loop_with_stopping_signals',
        'call_computation', 'export_estimator_savedmodel',
        'generate_broadcast_enqueue_ops_fn',
        'generate_per_core_enqueue_ops_fn_for_host',
        'generate_per_host_enqueue_ops_fn_for_host',
        'generate_per_host_v2_enqueue_ops_fn_for_host', 'inference_on_tpu',
        'model_fn_inference_on_tpu',
    },
    'training': {
        'EvalSpec',
    },
}


def _entries():
  for module_name, names in sorted(INVENTORY.items()):
    for name, entry in sorted(names.items()):
      yield module_name, name, entry


def _import(module_name):
  try:
    return importlib.import_module(module_name), None
  except Exception as e:  # pylint: disable=broad-except
    return None, f'{type(e).__name__}: {e}'


def _signature(value):
  from scripts.tf_estimator_215 import list_module_names  # pylint: disable=g-import-not-at-top
  return list_module_names.signature_of(value)


# A default that is a private sentinel (`_USE_DEFAULT = object()`): its
# repr tells nothing but that it is one.
_SENTINEL = '<object object at 0x...>'
# What 2.15's classes that define no constructor of their own show.
_NO_CONSTRUCTOR = ([['args', 'VAR_POSITIONAL', None],
                    ['kwargs', 'VAR_KEYWORD', None]],
                   [['self', 'POSITIONAL_ONLY', None],
                    ['args', 'VAR_POSITIONAL', None],
                    ['kwargs', 'VAR_KEYWORD', None]])
_LITERAL = re.compile(r"^(None|True|False|-?[0-9.e+-]+|'.*'|\".*\"|\(.*\)|"
                      r"\[.*\]|\{.*\})$")


def _same_default(here, then):
  if here == then or then is None:
    return True
  return then == _SENTINEL and here is not None and not _LITERAL.match(here)


def compatible_signature(here, then):
  """Why `here` (a signature as list_module_names.signature_of gives it)
  does not take every call 2.15's `then` took, or None."""
  if then in _NO_CONSTRUCTOR:
    return None
  if here is None:
    return 'no signature here'
  if len(here) < len(then):
    return f'2.15 has {len(then)} parameters, here {len(here)}'
  for (name, kind, default), (name_then, kind_then, default_then) in zip(
      here, then):
    if (name, kind) != (name_then, kind_then):
      return f'parameter {name} ({kind}) where 2.15 has {name_then} ({kind_then})'
    if not _same_default(default, default_then):
      return f'{name}={default} where 2.15 has {name}={default_then}'
  for name, kind, default in here[len(then):]:
    if kind != 'KEYWORD_ONLY' or default is None:
      return f'parameter {name} ({kind}, default {default}) 2.15 did not have'
  return None


# Constants whose 2.15 value said what the environment had: the value here
# must say what this environment has.
_ENVIRONMENT_CONSTANTS = {
    'HAS_PANDAS': lambda: importlib.util.find_spec('pandas') is not None,
}


def _problem(module_name, name, entry):
  """What is wrong with `name` as served under `module_name`, or None."""
  module, error = _import(module_name)
  if module is None:
    return f'the module does not import ({error})'
  if name not in vars(module) and not hasattr(module, name):
    return 'missing'
  value = getattr(module, name)
  if entry['kind'] in ('function', 'class'):
    if not callable(value):
      return f'not callable: {value!r}'
    if entry['signature'] is not None:
      why = compatible_signature(_signature(value), entry['signature'])
      if why is not None:
        return f'signature: {why}'
    return None
  if name in _ENVIRONMENT_CONSTANTS:
    expected = _ENVIRONMENT_CONSTANTS[name]()
    return None if value == expected else f'{value!r} where this environment has {expected!r}'
  if 'value' in entry:
    from scripts.tf_estimator_215 import list_module_names  # pylint: disable=g-import-not-at-top
    try:
      served = list_module_names._json_value(value)  # pylint: disable=protected-access
    except (TypeError, ValueError):
      return f'value {value!r} != 2.15\'s {entry["value"]!r}'
    if served != entry['value']:
      return f'value {served!r} != 2.15\'s {entry["value"]!r}'
  return None


def test_the_inventory_is_2_15s_whole_surface():
  assert len(INVENTORY) == 79
  assert sum(map(len, INVENTORY.values())) == 553


def test_every_2_15_name_resolves_with_2_15s_shape_under_both_paths():
  problems = []
  stale = []
  for module_name, name, entry in _entries():
    waived = name in NOT_SERVED_YET.get(module_name[len(PACKAGE) + 1:], ())
    for path in (module_name, TF_PACKAGE + module_name[len(PACKAGE):]):
      problem = _problem(path, name, entry)
      if problem is not None and not waived:
        problems.append(f'{path}.{name}: {problem}')
      if problem is None and waived and path == module_name:
        stale.append(f'{module_name}.{name}')
  total = sum(map(len, INVENTORY.values()))
  waived = sum(map(len, NOT_SERVED_YET.values()))
  print(f'{total - waived} of {total} names of tf.estimator 2.15 served '
        f'with its shape; {waived} not yet')
  assert not problems, f'{len(problems)} problems:\n' + '\n'.join(problems)
  assert not stale, ('served now, remove from NOT_SERVED_YET:\n' +
                     '\n'.join(stale))


def test_both_paths_are_one_module_object():
  for module_name in INVENTORY:
    module, _ = _import(module_name)
    if module is None:
      continue
    alias, _ = _import(TF_PACKAGE + module_name[len(PACKAGE):])
    assert alias is module, module_name


def refused_names():
  """The inventory's names served as a refusal (estimator_rt/compat/
  not_yet.py: the object carries its one-line reason as `not_yet`)."""
  found = {}
  for module_name, name, _ in _entries():
    module, _ = _import(module_name)
    value = getattr(module, name, None) if module is not None else None
    why = getattr(value, 'not_yet', None)
    if isinstance(why, str):
      found[f'{module_name}.{name}'] = why
  return found


def test_refused_names_stay_under_5_percent_and_each_says_why():
  refused = refused_names()
  print(f'{len(refused)} of 553 names refused:')
  for name, why in sorted(refused.items()):
    print(f'  {name}: {why}')
  assert len(refused) <= 0.05 * 553
  assert all(len(why) > 20 for why in refused.values()), refused
