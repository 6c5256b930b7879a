"""tf.estimator 2.15's private module names that libraries and programs
call (estimator, model_fn, run_config, export, exporter, extenders,
early_stopping, keras_lib, hooks.fake_summary_writer,
tools.checkpoint_converter), as estimator_rt serves them, and the runtime's
errors that are also the TensorFlow error 2.15 raised (tf_errors.py).
Each test checks what 2.15's name did, in-process, on tiny inputs.
"""

import importlib
import os
import pickle
import unittest

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt.compat
from estimator_rt import errors
from estimator_rt import tf_errors

estimator_rt.compat.install()

_PACKAGE = 'tensorflow_estimator.python.estimator.'


def _served(name):
  return importlib.import_module(_PACKAGE + name)


# ------------------------------------------------------------- estimator


def test_maybe_overwrite_model_dir_and_session_config(tmp_path, monkeypatch):
  estimator = _served('estimator')
  config = estimator.maybe_overwrite_model_dir_and_session_config(
      None, str(tmp_path))
  assert config.model_dir == str(tmp_path)
  assert config.session_config.allow_soft_placement  # 2.15's default one.
  given = tf.compat.v1.ConfigProto(log_device_placement=True)
  config = estimator.maybe_overwrite_model_dir_and_session_config(
      tf.estimator.RunConfig(model_dir=str(tmp_path), session_config=given),
      None)
  assert config.session_config is given
  monkeypatch.setattr('tempfile.mkdtemp', lambda: str(tmp_path / 'temp'))
  assert estimator.maybe_overwrite_model_dir_and_session_config(
      None, None).model_dir == str(tmp_path / 'temp')
  with pytest.raises(ValueError, match='set both in constructor and '
                     '`RunConfig`, but with different values'):
    estimator.maybe_overwrite_model_dir_and_session_config(
        tf.estimator.RunConfig(model_dir=str(tmp_path)), '/elsewhere')
  with pytest.raises(ValueError, match='must be an instance of `RunConfig`'):
    estimator.maybe_overwrite_model_dir_and_session_config('config', None)


def test_default_warm_start_settings_read_a_saved_models_variables(tmp_path):
  estimator = _served('estimator')
  assert estimator._get_default_warm_start_settings(None) is None
  settings = estimator._get_default_warm_start_settings(b'/ckpt')
  assert settings.ckpt_to_initialize_from == '/ckpt'
  assert settings.vars_to_warm_start == '.*'
  saved = tmp_path / 'export' / '123'
  os.makedirs(saved / 'variables')
  (saved / 'variables' / 'variables.index').write_bytes(b'')
  assert estimator._get_default_warm_start_settings(
      str(saved)).ckpt_to_initialize_from == str(
          saved / 'variables' / 'variables')
  with pytest.raises(ValueError, match='warm_start_from must be a string or '
                     'a WarmStartSettings'):
    estimator._get_default_warm_start_settings(3)


def test_estimator_graph_helpers():
  estimator = _served('estimator')
  with tf.Graph().as_default():
    value, update = tf.compat.v1.metrics.mean(tf.constant([1., 3.]))
    other = tf.compat.v1.metrics.mean(tf.constant([5.]))
    op, values = estimator._extract_metric_update_ops(
        {'b': other, 'a': (value, update)})
    assert values == {'a': value, 'b': other[0]}
    metrics = estimator._verify_and_create_loss_metric({}, tf.constant(2.))
    with pytest.raises(ValueError, match='Metric with name "loss" is not '
                       'allowed'):
      estimator._verify_and_create_loss_metric(metrics, tf.constant(2.))
    assert estimator._get_loss_reduce_op_for_reporting() == (
        tf.distribute.ReduceOp.SUM)
    dataset = tf.data.Dataset.from_tensors(tf.ones([2, 1]))
    batch = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    assert estimator._has_dataset_or_queue_runner(tf.reshape(batch, [2]))
    assert not estimator._has_dataset_or_queue_runner(tf.ones([1]))
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.local_variables_initializer())
      session.run(op)
      assert session.run(values['a']) == 2.
      assert session.run(metrics['loss'][1]) == 2.
    scaffold = tf.compat.v1.train.Scaffold()
    ready = estimator.create_per_replica_ready_for_local_init_op(scaffold)
    assert ready is estimator.create_per_replica_ready_for_local_init_op(
        tf.compat.v1.train.Scaffold())  # One per graph.
    strategy = tf.distribute.get_strategy()
    combined = estimator._combine_distributed_scaffold(
        tf.compat.v1.train.Scaffold(init_op=tf.no_op(name='init')), strategy)
    assert combined.init_op is not None and combined.saver is None
  config = tf.estimator.RunConfig()
  assert estimator._get_replica_device_setter(config) is None
  with pytest.raises(ValueError, match='must include features'):
    estimator._verify_model_fn_args(lambda x: x, None)


# -------------------------------------------------------------- model_fn


def test_model_fn_field_checks_raise_2_15s_errors():
  model_fn = _served('model_fn')
  with tf.Graph().as_default():
    loss = tf.constant([2.])
    assert model_fn._validate_estimator_spec_loss(loss, 'train').shape == []
    with pytest.raises(ValueError, match='^Missing loss'):
      model_fn._validate_estimator_spec_loss(None, 'eval')
    with pytest.raises(TypeError, match='^loss must be Tensor, given: 1.0.$'):
      model_fn._check_is_tensor(1., 'loss')
    with pytest.raises(TypeError, match='must be Operation or Tensor'):
      model_fn._check_is_tensor_or_operation('op', 'train_op')
    with pytest.raises(ValueError, match='^Missing train_op'):
      model_fn._validate_estimator_spec_train_op(None, 'train')
    assert model_fn._validate_estimator_spec_predictions(None, 'eval') == {}
    with pytest.raises(ValueError, match='^Missing predictions'):
      model_fn._validate_estimator_spec_predictions(None, 'infer')
    outputs = model_fn._validate_estimator_spec_export_outputs(
        None, {'y': loss}, 'infer')
    assert list(outputs) == ['serving_default']
    assert model_fn._validate_estimator_spec_hooks(None) == ()
    with pytest.raises(TypeError, match='must be SessionRunHook instances'):
      model_fn._validate_estimator_spec_hooks(['hook'])
    assert isinstance(model_fn._validate_scaffold(None),
                      tf.compat.v1.train.Scaffold)
    with pytest.raises(TypeError, match='scaffold must be tf.train.Scaffold'):
      model_fn._validate_scaffold('scaffold')
    with pytest.raises(TypeError, match='eval_metric_ops must be a dict'):
      model_fn._validate_eval_metric_ops([])
    variable = tf.Variable(1., name='metric_var')
    model_fn._update_variable_collection('coll', {variable})
    model_fn._update_variable_collection('coll', {variable})
    assert tf.compat.v1.get_collection('coll') == [variable]
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match='must be from the default graph'):
      model_fn._validate_estimator_spec_loss(loss, 'train')
  assert model_fn._default_graph_error_message_template.format(
      'loss', 'x').startswith('loss with "x" must be from the default graph.')


# ------------------------------------------------------------ run_config


def test_run_config_helpers_read_tf_config_as_2_15():
  run_config = _served('run_config')
  spec = tf.train.ClusterSpec({'chief': ['c:1'], 'worker': ['w:1', 'w:2'],
                               'ps': ['p:1']})
  assert run_config._count_ps(spec) == 1
  assert run_config._count_worker(spec, 'chief') == 3
  assert run_config._get_global_id_in_cluster(spec, 'ps', 0, 'chief') == 3
  assert run_config._get_global_id_in_cluster(spec, 'worker', 1, 'chief') == 2
  assert run_config._get_session_master(spec, 'worker', 1, {}) == 'grpc://w:2'
  assert run_config._get_session_master(
      spec, 'worker', 1, {'session_master': 'x'}) == 'x'
  assert run_config._get_eval_session_master(
      'evaluator', {'eval_session_master': 'e'}) == 'e'
  assert run_config._get_eval_session_master('worker', {}) == ''
  assert run_config._validate_task_type_and_task_id(
      spec, {'type': 'worker', 'index': '1'}, 'chief') == ('worker', 1)
  with pytest.raises(ValueError, match='is not a valid task_id'):
    run_config._validate_task_type_and_task_id(
        spec, {'type': 'worker', 'index': 2}, 'chief')
  with pytest.raises(TypeError, match='it must be a dict'):
    run_config._validate_service('s')
  assert run_config._get_model_dir({'model_dir': '/m'}, None) == '/m'
  config = tf.estimator.RunConfig(save_checkpoints_steps=5)
  run_config._validate_properties(config)
  copy = config.replace(save_checkpoints_steps=7)
  assert copy.save_checkpoints_secs is None
  with pytest.raises(ValueError, match='cannot be both set'):
    config.replace(save_checkpoints_steps=1, save_checkpoints_secs=1)


# ----------------------------------------------------------------- export


def test_export_helpers_check_and_shape_as_2_15():
  export = _served('export.export')
  with tf.Graph().as_default():
    tensor = tf.zeros([4, 3], name='feat')
    assert export.wrap_and_check_input_tensors(tensor, 'feature') == {
        'feature': tensor}
    with pytest.raises(ValueError, match='receiver_tensor keys must be '
                       'strings or ints'):
      export.wrap_and_check_input_tensors({1.5: tensor}, 'receiver_tensor',
                                          allow_int_keys=True)
    with pytest.raises(ValueError, match='label x must be a Tensor'):
      export._check_tensor('v', 'x', error_label='label')
    placeholder = export._placeholder_from_tensor(tensor, 2)
    assert placeholder.shape.as_list() == [2, 3]
    assert placeholder.op.name.startswith('feat')
    made = export._placeholders_from_receiver_tensors_dict({'a': tensor})
    assert made['a'].shape.as_list() == [None, 3]
  assert export._SINGLE_TENSOR_DEFAULT_NAMES['receiver_tensor'] == 'input'


def test_model_function_runs_a_model_fn_in_each_mode_sharing_variables():
  """2.15's ModelFunction (which TF 2.15 no longer ran): train steps change
  the variables predict reads."""
  function = _served('export.function')
  model_fn_lib = _served('model_fn')

  def model_fn(features, labels, mode):
    v = tf.compat.v1.get_variable('v', initializer=2.)
    step = tf.compat.v1.train.get_global_step()
    loss = None if labels is None else tf.reduce_sum(v - labels)
    return model_fn_lib.EstimatorSpec(
        mode, predictions=features * v, loss=loss,
        train_op=tf.group(v.assign_add(1.), step.assign_add(1)))

  model = function.ModelFunction.from_function(model_fn)
  assert model.predict(tf.constant([3.]))['predictions'].numpy()[0] == 6.
  model.train(tf.constant([1.]), tf.constant([1.]))
  assert model.predict(tf.constant([3.]))['predictions'].numpy()[0] == 9.
  assert int(model.variables['global_step']) == 1
  assert model._functions['train'].expects_labels
  with pytest.raises(ValueError, match='multiple functions with name train'):
    model.add_mode(model_fn, 'train')
  fn, takes_labels = function._wrap_and_verify_model_fn(
      lambda features, mode: (features, mode), mode='infer')
  assert fn(1) == (1, 'infer') and not takes_labels
  assert function._input_receiver_fn_name('alt') == '_input_receiver_alt'


# --------------------------------------------------- exporter, extenders


def test_exporter_names_and_comparison_are_2_15s():
  exporter = _served('exporter')
  assert exporter.BestExporter().name == 'best_exporter'
  assert exporter._loss_smaller({'loss': 2.}, {'loss': 1.})
  with pytest.raises(ValueError, match='best_eval_result cannot be empty'):
    exporter._loss_smaller({}, {'loss': 1.})
  with pytest.raises(ValueError, match='must include current_eval_result'):
    exporter.BestExporter(compare_fn=lambda best_eval_result, other: True)
  with pytest.raises(ValueError, match='must not be None'):
    exporter.BestExporter(compare_fn=None)
  exporter._verify_compare_fn_args(
      lambda best_eval_result, current_eval_result: True)
  assert exporter._SavedModelExporter('s', None).should_export(
      eval_result=None, is_the_final_export=False)


def test_extenders_helpers():
  extenders = _served('extenders')
  with pytest.raises(ValueError, match='has following not expected args'):
    extenders._verify_metric_fn_args(lambda features, other: {})
  assert extenders._call_metric_fn(
      lambda labels, config: (labels, config), 'f', 'l', 'p', 'c') == (
          'l', 'c')


# -------------------------------------------------------- early_stopping


def test_early_stopping_private_hooks(tmp_path):
  served = _served('early_stopping')
  estimator = tf.estimator.Estimator(lambda features, labels, mode: None,
                                     model_dir=str(tmp_path))
  _served('estimator')._write_dict_to_summary(estimator.eval_dir(),
                                              {'auc': 0.9}, 10)
  assert [e.step for e in served._summaries(estimator.eval_dir())
          if e.summary.value] == [10]
  crossed = served._stop_if_threshold_crossed_hook(
      estimator, 'auc', 0.8, True, None, 0, 0, None)
  assert crossed._should_stop_fn()
  not_crossed = served._stop_if_threshold_crossed_hook(
      estimator, 'auc', 0.8, False, None, 0, 0, None)
  assert not not_crossed._should_stop_fn()
  no_improvement = served._stop_if_no_metric_improvement_hook(
      estimator, 'auc', 5, True, None, 0, 0, None)
  assert not no_improvement._should_stop_fn()
  assert served._CheckForStoppingHook().as_runtime_hook() is None
  with pytest.raises(TypeError, match='must be callable'):
    served._MultiWorkerEarlyStoppingHook('no', 1)
  hook = served._MultiWorkerEarlyStoppingHook(lambda: True, 1)
  with tf.Graph().as_default():
    tf.compat.v1.train.create_global_step()
    step = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
    with tf.compat.v1.train.SingularMonitoredSession(hooks=[hook]) as session:
      session.run(step)  # The predicate says stop: the variable is set.
      session.run(step)
      assert session.should_stop()


# -------------------------------------------------------------- keras_lib


def test_keras_lib_helpers():
  import keras  # pylint: disable=g-import-not-at-top
  keras_lib = _served('keras_lib')
  assert keras_lib._DEFAULT_SERVING_KEY == 'serving_default'
  error = keras_lib.FormattedKeyError('a\nb')
  assert isinstance(error, KeyError) and str(error) == 'a\nb'
  assert keras_lib._cast_tensor_to_floatx(tf.constant(1, tf.int64)).dtype == (
      tf.float32)
  assert tf.is_tensor(keras_lib._convert_tensor([1.]))
  features = {'features': {'x': 1}, 'sample_weights': 2}
  assert keras_lib._extract_sample_weight_tensors(features) == ({'x': 1}, 2)
  assert keras_lib.standardize_sample_weights(None, ['a', 'b']) == [None,
                                                                    None]
  assert keras_lib.standardize_sample_weights({'b': 3}, ['a', 'b']) == [
      None, 3]
  with pytest.raises(ValueError, match='Unknown entries in sample_weights'):
    keras_lib.standardize_sample_weights({'c': 3}, ['a', 'b'])
  with pytest.raises(ValueError, match='was a list of 1 elements'):
    keras_lib.standardize_sample_weights([1], ['a', 'b'])
  inputs = {'a': keras.Input((2,), name='a'), 'b': keras.Input((1,),
                                                               name='b')}
  joined = keras.layers.Concatenate()([inputs['a'], inputs['b']])
  model = keras.Model([inputs['a'], inputs['b']],
                      keras.layers.Dense(1, name='out')(joined))
  model.compile('sgd', 'mse', metrics=['mae'])
  assert keras_lib._any_weight_initialized(model)
  assert not keras_lib._any_weight_initialized(None)
  features = {'b': np.ones((3, 1), np.float32), 'a': np.ones((3, 2),
                                                             np.float32)}
  ins, targets, weights = keras_lib._convert_estimator_io_to_keras(
      model, features, {'out': np.zeros((3, 1), np.float32)})
  assert [t.shape.as_list() for t in ins] == [[3, 2], [3, 1]]
  assert len(targets) == 1 and weights is None
  with pytest.raises(KeyError, match='does not cover requested inputs'):
    keras_lib._convert_estimator_io_to_keras(model, {'a': 1}, None)
  clone = keras_lib._clone_and_build_model('train', model, None, features)
  assert clone is not model and clone.optimizer is not model.optimizer
  assert len(clone.weights) == len(model.weights)
  # Named as Keras 3's model.evaluate names them.
  assert list(keras_lib._convert_keras_metrics_to_estimator(model)) == ['mae']
  keras_lib._assert_valid_model(model)
  model_fn = keras_lib._create_keras_model_fn(model)
  spec = model_fn(features, None, 'infer')
  assert list(spec.predictions) == ['out']


def test_keras_lib_first_checkpoint_of_a_tf_keras_model(tmp_path):
  tf_keras = pytest.importorskip('tf_keras')
  keras_lib = _served('keras_lib')
  model = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(2,))])
  model.compile('sgd', 'mse')
  config = tf.estimator.RunConfig(model_dir=str(tmp_path))
  path = keras_lib._save_first_checkpoint(model, None, config, False)
  assert path == str(tmp_path / 'keras' / 'keras_model.ckpt')
  assert tf.train.latest_checkpoint(str(tmp_path / 'keras')) == path
  assert keras_lib._save_first_checkpoint(model, None, config, True) == path
  local = tmp_path / 'model.h5'
  local.write_bytes(b'h5')
  copied = keras_lib._get_file_from_google_storage(str(local), str(tmp_path))
  assert open(copied, 'rb').read() == b'h5'


# ---------------------------------------------------- fake_summary_writer


class _Case(unittest.TestCase):

  def runTest(self):
    pass


def test_fake_summary_writer_keeps_and_checks_what_hooks_write():
  fake = _served('hooks.fake_summary_writer').FakeSummaryWriter
  fake.install()
  try:
    writer = tf.compat.v1.summary.FileWriterCache.get('/fake/logdir')
    assert isinstance(writer, fake)
    with pytest.raises(ValueError, match='already installed'):
      fake.install()
  finally:
    fake.uninstall()
    tf.compat.v1.summary.FileWriterCache.clear()
  assert tf.compat.v1.summary.FileWriter is not fake
  writer = fake('/log')
  with tf.Graph().as_default():
    tf.compat.v1.train.create_global_step()
    step = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
    hook = tf.compat.v1.train.SummarySaverHook(
        save_steps=1, summary_writer=writer,
        summary_op=tf.compat.v1.summary.scalar('s', tf.constant(3.)))
    with tf.compat.v1.train.SingularMonitoredSession(hooks=[hook]) as session:
      session.run(step)
  writer.assert_summaries(_Case(), expected_logdir='/log',
                          expected_summaries={1: {'s': 3.}})


# ---------------------------------------------------- checkpoint_converter


def test_checkpoint_converter_helpers_fill_2_15s_maps(tmp_path):
  converter = _served('tools.checkpoint_converter')
  with tf.Graph().as_default():
    tf.Variable([1., 2.], name='dnn/w')
    tf.Variable([.5, .5], name='dnn/w/t_0/Adagrad')
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      path = saver.save(session, str(tmp_path / 'v1'))
  reader = tf.compat.v1.train.NewCheckpointReader(path)
  with tf.Graph().as_default():
    var_map, names = {}, {}
    converter._convert_variables_in_ckpt(
        'Adagrad', reader, sorted(reader.get_variable_to_shape_map()),
        var_map, names, 'dnn')
    converter._convert_hyper_params_in_graph('unread', 'Adagrad', var_map,
                                             names)
  assert names['training/Adagrad/dnn/w/accumulator'] == 'dnn/w/t_0/Adagrad'
  assert names['dnn/w'] == 'dnn/w'
  assert names['training/Adagrad/learning_rate'] == 'learning_rate'
  assert isinstance(var_map['dnn/w'], tf.Variable)


# ------------------------------------------------------------- tf_errors


def test_runtime_errors_are_also_the_tensorflow_error_2_15_raised():
  error = tf_errors.CheckpointMissingVariableError('Restoring ...: why')
  assert isinstance(error, tf.errors.NotFoundError)
  assert isinstance(error, errors.IncompatibleCheckpointError)
  assert isinstance(error, errors.UserInputError)  # The binary: exit 2.
  assert str(error) == error.message == 'Restoring ...: why'
  assert error.error_code == tf.errors.NOT_FOUND
  copy = pickle.loads(pickle.dumps(error))
  assert type(copy) is type(error) and str(copy) == str(error)
  lost = tf_errors.from_cause(
      errors.TaskLostError, 'A step failed: the ps is gone.',
      tf.errors.UnavailableError(None, None, 'socket closed'))
  assert isinstance(lost, tf.errors.UnavailableError)
  assert isinstance(lost, errors.TaskLostError)
  assert str(lost) == 'A step failed: the ps is gone.'
  saved = tf_errors.from_cause(errors.CheckpointSaveError, 'disk',
                               OSError('full'))
  assert type(saved) is errors.CheckpointSaveError
  assert isinstance(tf_errors.CheckpointDataLossError('x'),
                    tf.errors.DataLossError)
