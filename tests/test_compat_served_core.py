"""tf.estimator 2.15's private module names of the Estimator core and
export, as estimator_rt serves them (estimator_rt/compat/served/): gc,
util, early_stopping, estimator, model_fn, export. Behaviours here are the
ones 2.15's code and libraries rely on; each test fails without them.
"""

import importlib
import inspect
import os

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt.compat
from estimator_rt.training import early_stopping as runtime_early_stopping
from estimator_rt.training import engine as engine_lib

estimator_rt.compat.install()

_PACKAGE = 'tensorflow_estimator.python.estimator.'


def _served(name):
  return importlib.import_module(_PACKAGE + name)


# ------------------------------------------------------------------- gc


def test_gc_filters_keep_what_2_15_kept():
  gc = _served('gc')
  paths = [gc.Path('/e', v) for v in (0, 1, 3, 5, 6, 9)]
  assert gc._largest_export_versions(2)(paths) == paths[-2:]
  assert gc._mod_export_version(3)(paths) == [paths[0], paths[2], paths[4],
                                              paths[5]]
  # Intervals [0, 3], (3, 6], (6, 9]: the largest of each.
  assert gc._one_of_every_n_export_versions(3)(paths) == [
      paths[2], paths[4], paths[5]]
  keep = gc._largest_export_versions(1)
  assert gc._negation(keep)(paths) == paths[:-1]
  assert gc._union(keep, gc._mod_export_version(5))(paths) == [
      paths[0], paths[3], paths[5]]


def test_gc_get_paths_parses_and_strips_remote_separators(tmp_path):
  gc = _served('gc')
  for name in ('1', '2', 'junk'):
    os.mkdir(tmp_path / name)

  def parser(path):
    base = os.path.basename(path.path)
    return path._replace(export_version=int(base)) if base.isdigit() else None

  assert gc._get_paths(str(tmp_path), parser) == [
      gc.Path(str(tmp_path / '1'), 1), gc.Path(str(tmp_path / '2'), 2)]
  from tensorflow.python.platform import gfile  # pylint: disable=g-import-not-at-top
  original = gfile.ListDirectory
  gfile.ListDirectory = lambda _: ['7/']
  try:
    assert gc._get_paths('gs://b/x', parser) == [gc.Path('gs://b/x/7', 7)]
  finally:
    gfile.ListDirectory = original


# ----------------------------------------------------------------- util


def test_util_parse_input_fn_result_reads_a_dataset_in_a_session():
  util = _served('util')
  with tf.Graph().as_default():
    dataset = tf.data.Dataset.from_tensor_slices(([[1, 2]], [[3]]))
    features, labels, hooks = util.parse_input_fn_result(dataset)
    with tf.compat.v1.train.MonitoredSession(hooks=hooks) as session:
      got = session.run([features, labels])
  assert [list(v) for v in got] == [[1, 2], [3]]
  assert isinstance(hooks[0], util._DatasetInitializerHook)
  with pytest.raises(ValueError, match='input_fn should return'):
    util.parse_input_fn_result((1, 2, 3))
  assert util.parse_input_fn_result({'x': 1})[1:] == (None, [])


# -------------------------------------------------------- early stopping


def _session_run(hooks):
  with tf.Graph().as_default():
    tf.compat.v1.train.create_global_step()
    no_op = tf.no_op()
    with tf.compat.v1.train.SingularMonitoredSession(hooks=hooks) as session:
      session.run(no_op)
      return session.should_stop()


def test_early_stopping_hooks_are_session_hooks_and_runtime_hooks(tmp_path):
  served = _served('early_stopping')
  estimator = _served('estimator').Estimator(
      lambda features, labels, mode: None, model_dir=str(tmp_path))
  _served('estimator')._write_dict_to_summary(
      estimator.eval_dir(), {'loss': 0.5, 'global_step': 10}, 10)
  higher = served.stop_if_higher_hook(estimator, 'loss', 0.4,
                                      run_every_secs=0)
  lower = served.stop_if_lower_hook(estimator, 'loss', 0.4, run_every_secs=0)
  assert isinstance(higher, tf.compat.v1.train.SessionRunHook)
  assert _session_run([higher]) and not _session_run([lower])
  # Given to train, it runs as the runtime's hook (both engines).
  runtime, session = engine_lib.split_hooks([higher])
  assert session == [] and len(runtime) == 1
  assert isinstance(runtime[0], runtime_early_stopping._StopOnPredicateHook)
  with pytest.raises(TypeError, match='must have type'):
    served.make_early_stopping_hook(object(), lambda: True)
  with pytest.raises(ValueError, match='Only one of'):
    served.make_early_stopping_hook(estimator, lambda: True, 1, 1)


def test_read_eval_metrics_reads_one_process_file_per_directory(tmp_path):
  estimator_module = _served('estimator')
  for step in (1, 2):
    estimator_module._write_dict_to_summary(str(tmp_path), {
        'loss': step / 10, 'nothing': None,
        'array': np.array([1., 2.])}, step)
  assert len(os.listdir(tmp_path)) == 1  # Appended, as FileWriterCache did.
  metrics = _served('early_stopping').read_eval_metrics(str(tmp_path))
  assert list(metrics) == [1, 2]
  assert metrics[2] == pytest.approx({'loss': 0.2})
  assert _served('early_stopping').read_eval_metrics(
      str(tmp_path / 'none')) == {}


def test_write_dict_writes_summary_bytes_under_numbered_tags(tmp_path):
  with tf.Graph().as_default():
    image = tf.compat.v1.summary.image('image', tf.zeros([2, 3, 3, 1]),
                                       max_outputs=2)
    with tf.compat.v1.Session() as session:
      serialized = session.run(image)
  _served('estimator')._write_dict_to_summary(str(tmp_path),
                                              {'foo': serialized}, 5)
  (path,) = tf.io.gfile.glob(str(tmp_path / 'events*'))
  tags = [v.tag for e in tf.compat.v1.train.summary_iterator(path)
          for v in e.summary.value]
  assert tags == ['foo/0', 'foo/1']


def test_write_dict_writes_numbers_as_simple_values(tmp_path):
  """As 2.15 did: code reading eval results with summary_iterator (2.15's
  BestExporter, its tests) reads `simple_value`."""
  _served('estimator')._write_dict_to_summary(
      str(tmp_path), {'loss': 60, 'auc': np.float32(0.5), 'global_step': 3,
                      'mean': np.float64(0.25), 'count': np.int64(7),
                      # 2.15 skipped these (not its types), and wrote a
                      # 0-d array as a tensor.
                      'half': np.float16(1.5), 'flag': np.bool_(True),
                      'array': np.array(2.5, np.float32)},
      3)
  (path,) = tf.io.gfile.glob(str(tmp_path / 'events*'))
  values = {v.tag: v.simple_value
            for e in tf.compat.v1.train.summary_iterator(path)
            for v in e.summary.value if v.HasField('simple_value')}
  assert values == {'loss': 60.0, 'auc': 0.5, 'mean': 0.25, 'count': 7.0}
  tags = [v.tag for e in tf.compat.v1.train.summary_iterator(path)
          for v in e.summary.value]
  assert sorted(tags) == ['array', 'auc', 'count', 'loss', 'mean']


# -------------------------------------------------------------- model_fn


def test_estimator_spec_is_2_15_namedtuple_and_replace_revalidates():
  model_fn = _served('model_fn')
  with tf.Graph().as_default():
    predictions = tf.constant([[1.]])
    spec = model_fn.EstimatorSpec('infer', predictions={'y': predictions})
    assert spec._fields[:3] == ('mode', 'predictions', 'loss')
    # PREDICT's export_outputs, completed as 2.15 did.
    assert list(spec.export_outputs) == ['serving_default']
    replaced = spec._replace(predictions={'z': predictions})
    assert set(replaced.export_outputs['serving_default'].outputs) == {'z'}
    with pytest.raises(ValueError, match='mode of EstimatorSpec'):
      spec._replace(mode='train')
    with pytest.raises(TypeError, match='predictions.* must be Tensor'):
      spec._replace(predictions={'y': 1.})
  assert model_fn.LOSS_METRIC_KEY == 'loss'


def test_estimator_spec_refuses_a_tensor_of_another_graph():
  model_fn = _served('model_fn')
  with tf.Graph().as_default():
    loss = tf.constant(1.)
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match='must be from the default graph'):
      model_fn.EstimatorSpec('eval', loss=loss)


def test_verify_model_fn_args_as_2_15():
  model_fn = _served('model_fn')

  def good(features, labels, mode, params):
    del features, labels, mode, params

  model_fn.verify_model_fn_args(good, params={'a': 1})
  with pytest.raises(ValueError, match='must include features'):
    model_fn.verify_model_fn_args(lambda x: x, None)
  with pytest.raises(ValueError, match='not expected args'):
    model_fn.verify_model_fn_args(lambda features, other: 0, None)


# ---------------------------------------------------------------- export


def test_export_receivers_check_and_wrap_as_2_15():
  export = _served('export.export')
  with tf.Graph().as_default():
    feature = tf.constant([1.])
    receiver = export.ServingInputReceiver(feature, tf.constant(['a']))
    assert list(receiver.features) == ['feature']
    assert list(receiver.receiver_tensors) == ['input']
    tensor_receiver = export.TensorServingInputReceiver(feature, feature)
    assert tensor_receiver.features is feature
    with pytest.raises(ValueError, match='receiver_tensor.* must be a Tensor'):
      export.ServingInputReceiver(feature, 'not a tensor')
    with pytest.raises(ValueError, match='feature keys must be strings'):
      export.ServingInputReceiver({1.5: feature}, feature)
    supervised = export.SupervisedInputReceiver(feature, feature, feature)
    assert supervised.features is feature and supervised.labels is feature


def test_supervised_receiver_fn_from_input_fn():
  export = _served('export.export')

  def input_fn():
    return tf.data.Dataset.from_tensors(
        ({'x': tf.zeros([2, 3])}, tf.zeros([2, 1])))

  with tf.Graph().as_default():
    receiver = export.build_supervised_input_receiver_fn_from_input_fn(
        input_fn)()
  assert sorted(receiver.receiver_tensors) == ['label', 'x']
  assert receiver.features['x'].shape.as_list() == [None, 3]
  with pytest.raises(ValueError, match='distinct keys'):
    export.build_raw_supervised_input_receiver_fn(
        {'label': tf.zeros([1])}, tf.zeros([1]))


def test_exporters_check_exports_to_keep_and_take_no_eval_result():
  exporter = importlib.import_module(
      'tensorflow_estimator.python.estimator.exporter')
  for cls in (exporter.LatestExporter, exporter.BestExporter):
    with pytest.raises(ValueError, match='must be positive number'):
      cls('name', lambda: None, exports_to_keep=0)
  best = exporter.BestExporter('best', lambda: None)
  # tf.estimator's BestExporter exported the first result, even None.
  assert best.should_export(eval_result=None, is_the_final_export=False)


# ------------------------------------------------------- Estimator subclass


def test_a_subclass_reads_2_15s_protected_attributes(tmp_path):
  """AdaNet's Estimator reads `self._model_dir` after 2.15's __init__;
  the others are what 2.15's __init__ set from the config."""
  seen = {}

  class Subclass(tf.estimator.Estimator):

    def __init__(self, model_dir):
      config = tf.estimator.RunConfig(model_dir=model_dir,
                                      session_config=tf.compat.v1.ConfigProto(
                                          log_device_placement=False))
      super().__init__(model_fn=lambda features, labels, mode: None,
                       config=config, warm_start_from=None)
      seen['report_dir'] = os.path.join(self._model_dir, 'report')
      seen['session_config'] = self._session_config
      seen['distributions'] = (self._train_distribution,
                               self._eval_distribution)
      seen['warm_start'] = self._warm_start_settings

  estimator = Subclass(str(tmp_path / 'm'))
  assert seen['report_dir'] == os.path.join(estimator.model_dir, 'report')
  assert seen['session_config'] is estimator.config.session_config
  assert seen['distributions'] == (None, None)
  assert seen['warm_start'] is None


def test_a_config_subclass_may_make_model_dir_a_read_only_property(tmp_path):
  """2.15 kept RunConfig's values in private attributes, so a subclass's
  property won; construction, replace() and Estimator still work."""
  fixed = str(tmp_path / 'fixed')

  class FakeConfig(tf.estimator.RunConfig):

    @property
    def model_dir(self):
      return fixed

  model_fn = lambda features, labels: None
  assert FakeConfig().replace(model_dir=str(tmp_path / 'x')).model_dir == fixed
  estimator = tf.estimator.Estimator(model_fn, config=FakeConfig(),
                                     model_dir=fixed)
  assert estimator.model_dir == fixed
  assert isinstance(estimator.config, FakeConfig)
  with pytest.raises(ValueError, match='set both in constructor and '
                     '`RunConfig`, but with different values'):
    tf.estimator.Estimator(model_fn, config=FakeConfig(),
                           model_dir=str(tmp_path / 'other'))


def test_a_run_config_takes_new_attributes_but_keeps_its_fields_frozen():
  """2.15's RunConfig took any attribute (programs tag a config, which the
  model_fn then reads); its properties had no setters."""
  config = tf.estimator.RunConfig()
  config.i_am_test = True
  assert config.replace(tf_random_seed=3).i_am_test
  with pytest.raises(AttributeError, match='use config.replace'):
    config.model_dir = '/elsewhere'
  # 2.15's private storage of a field sets the field.
  config._session_config = tf.compat.v1.ConfigProto(log_device_placement=True)
  assert config.session_config.log_device_placement


def test_estimator_constructor_as_2_15(tmp_path):
  # The config is checked before the model_fn.
  with pytest.raises(ValueError, match='an instance of `RunConfig`'):
    tf.estimator.Estimator(model_fn=None, config='NotARunConfig')
  with pytest.raises(ValueError, match='model_fn must be provided'):
    tf.estimator.Estimator(model_fn=None)

  def model_fn(features, labels, mode, params):
    return ('called', features, labels, mode, params)

  estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path),
                                     params={'p': 1})
  assert estimator._session_config.allow_soft_placement
  # The model_fn property is bound to params, with 2.15's signature, and
  # named as the user's function in errors.
  bound = estimator.model_fn
  assert list(inspect.signature(bound).parameters) == [
      'features', 'labels', 'mode', 'config']
  assert bound('f', 'l', 'train', None) == ('called', 'f', 'l', 'train',
                                            {'p': 1})
  assert bound.__qualname__ == model_fn.__qualname__


def test_estimator_errors_start_with_2_15s_phrases(tmp_path):
  """Code matched 2.15's messages (assertRaisesRegex, `except`): they
  start ours, with 2.15's exception classes; nothing is run or written."""

  def unreachable_model_fn(features, labels, mode):
    raise AssertionError('the model_fn must not be called')

  def input_fn():
    return tf.data.Dataset.from_tensors(({'x': [1.]}, [1.]))

  estimator = tf.estimator.Estimator(unreachable_model_fn,
                                     model_dir=str(tmp_path / 'm'))
  with pytest.raises(ValueError, match='Must specify steps > 0, given: 0'):
    estimator.train(input_fn, steps=0)
  with pytest.raises(ValueError, match='Must specify max_steps > 0, given: '):
    estimator.train(input_fn, max_steps=-1)
  with pytest.raises(ValueError, match='Must specify steps > 0, given: -1'):
    estimator.evaluate(input_fn, steps=-1)
  with pytest.raises(TypeError, match='Hooks must be a SessionRunHook, '
                     "given: 'NotAHook'"):
    estimator.train(input_fn, steps=1, hooks=['NotAHook'])
  with pytest.raises(TypeError, match='Hooks must be a SessionRunHook'):
    estimator.predict(input_fn, hooks=['NotAHook'])
  with pytest.raises(TypeError, match='must be a list of '
                     'CheckpointSaverListener'):
    estimator.train(input_fn, steps=1, saving_listeners=['not-a-listener'])
  with pytest.raises(ValueError, match='Could not find trained model'):
    estimator.get_variable_names()
  assert not (tmp_path / 'm').exists()

  class EvaluatorConfig(tf.estimator.RunConfig):

    @property
    def task_type(self):
      return 'evaluator'

  with pytest.raises(ValueError, match='train_and_evaluate'):
    tf.estimator.Estimator(unreachable_model_fn, config=EvaluatorConfig(),
                           model_dir=str(tmp_path / 'e')).train(input_fn,
                                                                steps=1)


def test_predict_keys_errors_start_with_2_15s_phrases():
  with pytest.raises(ValueError, match='predict_keys argument is not valid '
                     'in case of non-dict predictions'):
    engine_lib.check_predict_keys(['y'], ['predictions'], single=True)
  # 2.15 printed `predictions.keys()` (side-by-side check, estimator_tf1).
  with pytest.raises(ValueError, match=r"Expected to run at least one output "
                     r"from dict_keys\(\['y1', 'y2'\]\), provided \['y3'\]"):
    engine_lib.check_predict_keys(['y3'], ['y1', 'y2'])
  # As 2.15, an unknown key beside a known one is dropped.
  assert engine_lib.check_predict_keys(['y1', 'y3'], ['y1', 'y2']) == ['y1']
  assert engine_lib.check_predict_keys(['y1'], ['y1', 'y2']) == ['y1']


@pytest.mark.parametrize('model_fn,phrase', [
    (lambda features, labels: 'NotGoodNotGood',
     'model_fn should return an EstimatorSpec: model_fn .* returned str'),
    (lambda features: None, 'model_fn does not take labels, but input_fn '
     'returns labels'),
], ids=['not_a_spec', 'labels'])
def test_model_fn_errors_start_with_2_15s_phrases(tmp_path, model_fn, phrase):
  estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
  with pytest.raises(ValueError, match=phrase):
    estimator.train(
        lambda: tf.data.Dataset.from_tensors(({'x': [1.]}, [1.])), steps=1)


def test_reserved_metric_names_and_uneven_predictions_as_2_15():
  from estimator_rt.core import spec as spec_lib  # pylint: disable=g-import-not-at-top
  for name, quoted in (('global_step', '`global_step`'), ('loss', '"loss"')):
    with pytest.raises(ValueError, match=f'Metric with name {quoted} is not '
                       f"allowed.*eval_metric_ops\\['{name}'\\]"):
      spec_lib.check_metric_names({name: None, 'mae': None}, 'model_fn f')
  spec_lib.check_metric_names({'mae': None}, 'model_fn f')
  uneven = [{'y1': np.zeros((1, 1)), 'y2': np.zeros((2, 1))}]
  with pytest.raises(ValueError, match='Batch length of predictions should '
                     "be same.*'y1': 1, 'y2': 2"):
    list(engine_lib.yield_predictions(uneven, single=False, keys=None,
                                      yield_single_examples=True))
  # Whole batches need no common length.
  assert len(list(engine_lib.yield_predictions(
      uneven, single=False, keys=None, yield_single_examples=False))) == 1


def test_stop_at_checkpoint_step_hooks_are_2_15s_session_hooks(tmp_path):
  hooks = _served('hooks.hooks')

  class WorkerConfig(tf.estimator.RunConfig):

    @property
    def is_chief(self):
      return False

  model_fn = lambda features, labels: None
  chief = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
  hook = hooks.make_stop_at_checkpoint_step_hook(chief, 300)
  assert isinstance(hook, tf.compat.v1.train.StopAtStepHook)
  assert hook._last_step == 300
  worker = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path),
                                  config=WorkerConfig())
  hook = hooks.make_stop_at_checkpoint_step_hook(worker, 300, 7)
  assert isinstance(hook, hooks._StopAtCheckpointStepHook)
  assert (hook._model_dir, hook._last_step) == (str(tmp_path), 300)
  # Estimator.train runs it as the runtime's hook of the same rule.
  runtime, session = engine_lib.split_hooks([hook])
  assert session == []
  assert isinstance(runtime[0], runtime_early_stopping._StopAtCheckpointStepHook)
  assert runtime[0]._wait_secs == 7


# ------------------------------------------------- export.function, export


def test_wrapped_graph_runs_a_model_fn_and_receivers_as_functions():
  function = _served('export.function')
  model_fn_lib = _served('model_fn')
  export_lib = _served('export.export')

  def model_fn(features, labels, mode):
    v = tf.Variable(lambda: tf.constant(2), name='v')
    return model_fn_lib.EstimatorSpec(
        mode, predictions=features * v + labels, loss=tf.constant(1) + v,
        train_op=tf.compat.v1.assign_add(
            tf.compat.v1.train.get_global_step(), 1))

  graph = function._EstimatorWrappedGraph()
  fn = graph.wrap_model_fn(model_fn, mode='train',
                           args=[tf.constant(3), tf.constant(4), 'train'],
                           kwargs={})
  assert int(graph.global_step) == 0
  assert int(fn(tf.constant(3), tf.constant(4))['predictions']) == 10
  assert int(graph.global_step) == 1
  # 2.15 took an integer loss; the spec holds it as a float.
  assert graph.estimator_spec.loss.dtype == tf.float32
  with pytest.raises(ValueError, match='only called once per graph'):
    graph.wrap_model_fn(model_fn, mode='eval', args=[], kwargs={})

  def receiver_fn():
    text = tf.compat.v1.placeholder(tf.string)
    lowered = tf.strings.lower(text)
    # The alternative receives what the features are computed from.
    return export_lib.ServingInputReceiver(
        {'upper': tf.strings.upper(lowered)}, {'text': text},
        {'raw': lowered})

  functions = dict((name, f) for f, name in
                   function._EstimatorWrappedGraph().wrap_input_receiver_fn(
                       receiver_fn))
  assert functions[None](tf.constant('ab'))['upper'].numpy() == b'AB'
  assert functions['raw'](tf.constant('cd'))['upper'].numpy() == b'CD'


def test_estimator_export_deprecates_and_names_the_symbol():
  estimator_export = _served('estimator_export').estimator_export

  class Exported:
    pass

  assert estimator_export('estimator.Exported')(Exported) is Exported
  assert Exported._estimator_api_names == ('estimator.Exported',)
  assert Exported._estimator_api_names_v1 == ('estimator.Exported',)
  with pytest.raises(ValueError, match='under package name of component'):
    estimator_export('keras.Exported')
