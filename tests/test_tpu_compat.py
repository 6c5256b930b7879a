"""tf.estimator 2.15's `tpu` package as estimator_rt serves it
(estimator_rt/estimator/tpu/tpu_estimator.py, estimator_rt/compat/served/tpu/): TPUConfig's and
TPUEstimator's validation, tpu.RunConfig's masters, and the helpers
programs and 2.15's tests use directly. In-process, graph-mode pieces in
their own tf.Graph.
"""

import importlib
import json

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt
import estimator_rt.compat
from estimator_rt.estimator.tpu import tpu_estimator as tpu

estimator_rt.compat.install()

_PACKAGE = 'tensorflow_estimator.python.estimator.tpu.'


def _served(name):
  return importlib.import_module(_PACKAGE + name)


def _model_fn(features, labels, mode, params):
  del params
  w = tf.compat.v1.get_variable('w', [], initializer=tf.zeros_initializer())
  loss = tf.reduce_mean(tf.square(features['x'] * w - labels))
  return tpu.TPUEstimatorSpec(
      mode, loss=loss,
      train_op=tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
          loss, tf.compat.v1.train.get_or_create_global_step()))


def _input_fn(params):
  x = np.ones([8, 1], np.float32)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, x)).batch(
      params['batch_size'], drop_remainder=True)  # Static, as a TPU needs.


# -------------------------------------------------- TPUConfig, RunConfig


@pytest.mark.parametrize('value, expected', [
    (1, (1, 'count')), ('123', (123, 'count')), ('300s', (300, 'seconds')),
    ('2m', (120, 'seconds')), ('1h', (3600, 'seconds'))])
def test_iterations_per_loop_parses_as_in_2_15(value, expected):
  util = _served('util')
  assert util.parse_iterations_per_loop(value) == expected
  assert tpu.TPUConfig(iterations_per_loop=value).iterations_per_loop == value


@pytest.mark.parametrize('value', [0, -1, '01', '0h', '-1m', '7x', True])
def test_bad_iterations_per_loop_is_refused_by_tpu_config(value):
  with pytest.raises(ValueError, match='must be positive'):
    tpu.TPUConfig(iterations_per_loop=value)


def test_tpu_config_validates_as_2_15():
  with pytest.raises(ValueError, match='num_shards must be positive'):
    tpu.TPUConfig(num_shards=0)
  with pytest.raises(TypeError, match='num_shards must be int'):
    tpu.TPUConfig(num_shards=1.0)
  with pytest.raises(ValueError, match='128; got 7'):
    tpu.TPUConfig(num_cores_per_replica=7)
  with pytest.raises(ValueError, match='only supported in PER_HOST_V2'):
    tpu.TPUConfig(input_partition_dims=[[1, 2], None])
  with pytest.raises(ValueError, match='requires setting num_cores'):
    tpu.TPUConfig(per_host_input_for_training=3,
                  input_partition_dims=[[1, 2], None])
  with pytest.raises(ValueError, match='PER_HOST_V1 or SLICED'):
    tpu.TPUConfig(eval_training_input_configuration=3)
  # tf.estimator's booleans name input pipelines.
  assert tpu.TPUConfig(per_host_input_for_training=False
                      ).per_host_input_for_training == 1
  assert tpu.TPUConfig().per_host_input_for_training == 2


def test_tpu_run_config_masters_and_tf_config(monkeypatch):
  config = tpu.RunConfig(master='grpc://m:1')
  assert (config.master, config.evaluation_master) == ('grpc://m:1',
                                                       'grpc://m:1')
  config = tpu.RunConfig(master='grpc://m:1', evaluation_master='e')
  assert config.evaluation_master == 'e'
  assert tpu.RunConfig().master == ''
  monkeypatch.setenv('TF_CONFIG', json.dumps({
      'session_master': 'grpc://s:1',
      'service': {'tpu_worker_job_name': 'my_tpu'}}))
  config = tpu.RunConfig()
  assert (config.master, config.evaluation_master) == ('grpc://s:1',
                                                       'grpc://s:1')
  assert config.tpu_config.tpu_job_name == 'my_tpu'
  # A cluster task: tf.estimator's TPU programs ran in-graph, so no
  # between-graph device filters (a plain RunConfig gets them).
  monkeypatch.setenv('TF_CONFIG', json.dumps({
      'cluster': {'chief': ['h:1'], 'worker': ['h:2']},
      'task': {'type': 'chief', 'index': 0}}))
  assert tpu.RunConfig().session_config is None
  assert estimator_rt.RunConfig().session_config is not None


def test_tpu_run_config_replace_keeps_and_replaces_tpu_config():
  config = tpu.RunConfig(tpu_config=tpu.TPUConfig(iterations_per_loop=3),
                         master='grpc://m:1')
  replaced = config.replace(save_summary_steps=5)
  assert replaced.tpu_config.iterations_per_loop == 3
  assert replaced.master == 'grpc://m:1'
  assert config.replace(tpu_config=tpu.TPUConfig(iterations_per_loop=9)
                       ).tpu_config.iterations_per_loop == 9


# ---------------------------------------------------------- TPUEstimator


def test_tpu_estimator_constructor_validates_as_2_15(tmp_path):
  config = tpu.RunConfig(model_dir=str(tmp_path))
  with pytest.raises(ValueError, match='type `tpu_config.RunConfig`'):
    tpu.TPUEstimator(_model_fn, config=estimator_rt.RunConfig(),
                     use_tpu=False)
  with pytest.raises(ValueError, match='are reserved keys'):
    tpu.TPUEstimator(_model_fn, config=config, use_tpu=False,
                     params={'batch_size': 2})
  with pytest.raises(ValueError, match='`train_batch_size` cannot be'):
    tpu.TPUEstimator(_model_fn, config=config)
  with pytest.raises(TypeError, match='train_batch_size must be int'):
    tpu.TPUEstimator(_model_fn, config=config, train_batch_size=1.0)
  with pytest.raises(ValueError, match='eval_batch_size must be positive'):
    tpu.TPUEstimator(_model_fn, config=config, train_batch_size=2,
                     eval_batch_size=0)
  with pytest.raises(ValueError, match='Model parallelism only supports'):
    tpu.TPUEstimator(_model_fn, train_batch_size=2, config=tpu.RunConfig(
        tpu_config=tpu.TPUConfig(per_host_input_for_training=False,
                                 num_cores_per_replica=2)))

  def extra_arg_fn(features, labels, invalid_arg):
    del features, labels, invalid_arg

  with pytest.raises(ValueError, match='has following not expected args'):
    tpu.TPUEstimator(extra_arg_fn, config=config, train_batch_size=2)
  with pytest.raises(ValueError, match='should be 1 or 2; got 3'):
    tpu.TPUEstimator(_model_fn, config=config, train_batch_size=2,
                     export_saved_model_api_version=3)


def test_use_tpu_checks_what_2_15_checked_then_refuses(tmp_path):
  """Nothing runs and nothing is written: train, evaluate and predict
  raise 2.15's errors for their arguments, then the one-line refusal."""
  estimator = tpu.TPUEstimator(_model_fn, train_batch_size=2,
                               config=tpu.RunConfig(model_dir=str(tmp_path)))
  with pytest.raises(ValueError, match='Must specify steps > 0, given: -3'):
    estimator.train(_input_fn, steps=-3)
  with pytest.raises(TypeError, match='Train max_steps must be int'):
    estimator.train(_input_fn, max_steps=2.5)
  with pytest.raises(ValueError, match='one of `steps` or `max_steps`'):
    estimator.train(_input_fn)
  with pytest.raises(ValueError, match=r'TPUEstimator\(use_tpu=True\)\.train'
                     '.*not TPUs; pass use_tpu=False'):
    estimator.train(_input_fn, steps=1)
  with pytest.raises(ValueError, match='eval_batch_size in TPUEstimator '
                     'constructor cannot be `None`'):
    estimator.evaluate(_input_fn, steps=1)
  with pytest.raises(ValueError, match='predict_batch_size in TPUEstimator '
                     'constructor cannot be `None`'):
    list(estimator.predict(_input_fn))
  assert not list(tmp_path.iterdir())

  def no_params_fn(features, labels, mode):
    return _model_fn(features, labels, mode, None)

  no_params = tpu.TPUEstimator(no_params_fn, train_batch_size=2,
                               config=tpu.RunConfig(model_dir=str(tmp_path)))
  with pytest.raises(ValueError, match='does not include params argument, '
                     'required by TPUEstimator'):
    no_params.train(_input_fn, steps=1)


def test_tpu_configuration_checked_against_a_tpu_system_as_in_2_15():
  """2.15's ValueErrors for a TPUConfig or batch size that does not fit the
  TPU system (32 cores on 4 hosts here); on this machine, with no TPU
  cores, there is nothing to check against and the refusal follows."""
  from estimator_rt.estimator.tpu import system as tpu_system  # pylint: disable=g-import-not-at-top
  system = tf.tpu.experimental.TPUSystemMetadata(
      num_cores=32, num_hosts=4, num_of_cores_per_host=8, topology=None,
      devices=[])

  def config(**tpu_settings):
    return tpu.RunConfig(tpu_config=tpu.TPUConfig(**tpu_settings))

  check = tpu_system.check_configuration
  check(config(num_shards=32), 'train', 64, system)
  check(config(num_shards=4, num_cores_per_replica=8), 'train', 64, system)
  for settings, mode, batch, message in [
      (dict(num_shards=2, num_cores_per_replica=16), 'train', 64,
       'Except the PER_HOST_V2 mode, the num of cores required by model '
       'parallelism specified by TPUConfig.num_cores_per_replica should be '
       'less than or equal to the num_cores_per_host. num_cores_per_replica: '
       '16, num_cores_per_host: 8'),
      (dict(num_shards=8), 'train', 64, r'num_shards is not set correctly.*'
       r'num_replicas should be \(32\), got \(8\)'),
      (dict(num_cores_per_replica=64), 'train', 64,
       'larger than the total num of TPU cores in the system'),
      (dict(), 'train', 48, 'train batch size 48 must be divisible by '
       'number of replicas 32'),
      (dict(), 'eval', 64, 'TPUEstimator.evaluate is only supported under '
       'three conditions'),
      (dict(), 'infer', 64, 'TPUEstimator.predict is only supported under '
       'three conditions')]:
    with pytest.raises(ValueError, match=message):
      check(config(**settings), mode, batch, system)
  # BROADCAST feeds every replica the whole batch, from one host.
  check(config(per_host_input_for_training=tpu.InputPipelineConfig.BROADCAST),
        'eval', 48, system)
  assert tpu_system.local_tpu_system('') is None  # No TPU cores here.
  assert tpu_system.local_tpu_system('grpc://10.0.0.1:8470') is None


def test_wrap_input_fn_switch_is_served_and_reaches_the_refusal(tmp_path):
  """2.15's switch of its TPU infeed: programs set it; here it selects
  nothing, and use_tpu=True is refused as without it."""
  served = _served('tpu_estimator')
  assert served._WRAP_INPUT_FN_INTO_WHILE_LOOP is False  # pylint: disable=protected-access
  served._WRAP_INPUT_FN_INTO_WHILE_LOOP = True  # pylint: disable=protected-access
  try:
    estimator = served.TPUEstimator(
        _model_fn, train_batch_size=2,
        config=tpu.RunConfig(model_dir=str(tmp_path)))
    with pytest.raises(ValueError, match='not TPUs; pass use_tpu=False'):
      estimator.train(_input_fn, steps=1)
  finally:
    served._WRAP_INPUT_FN_INTO_WHILE_LOOP = False  # pylint: disable=protected-access


def test_tpu_job_of_the_context_follows_2_15(tmp_path):

  def job(config, mode='train'):
    estimator = tpu.TPUEstimator(_model_fn, train_batch_size=2,
                                 model_dir=str(tmp_path), config=config)
    with estimator._ctx.with_mode(mode) as context:  # pylint: disable=protected-access
      return context.master_job

  assert job(tpu.RunConfig()) is None
  assert job(tpu.RunConfig(master='grpc://m:1')) == 'tpu_worker'
  assert job(tpu.RunConfig(tpu_config=tpu.TPUConfig(
      tpu_job_name='mine'))) == 'mine'
  cluster = tf.train.ClusterSpec({'worker': ['m:1'], 'coordinator': ['c:1']})
  session_config = tf.compat.v1.ConfigProto(
      cluster_def=cluster.as_cluster_def())
  assert job(tpu.RunConfig(master='grpc://m:1',
                           session_config=session_config)) == 'worker'
  two = tf.train.ClusterSpec({'worker': ['m:1'], 'other': ['o:1']})
  with pytest.raises(ValueError, match='Could not infer TPU job name.*'
                     'tpu_job_name'):
    job(tpu.RunConfig(master='grpc://m:1', session_config=(
        tf.compat.v1.ConfigProto(cluster_def=two.as_cluster_def()))))


# -------------------------------------------------- served helper modules


def test_error_rendezvous_raises_the_telling_error():
  error_handling = _served('error_handling')
  rendezvous = error_handling.ErrorRendezvous(3)
  with rendezvous.catch_errors('outfeed'):
    raise tf.errors.CancelledError(None, None, 'cancelled')
  with rendezvous.catch_errors('infeed'):
    raise tf.errors.InternalError(None, None, 'bad file')
  with rendezvous.catch_errors('loop'):
    raise tf.errors.AbortedError(None, None, 'recovered by the session')
  rendezvous.record_done('loop')
  with pytest.raises(tf.errors.InternalError, match='bad file'):
    rendezvous.raise_errors()
  quiet = error_handling.ErrorRendezvous(1)
  with quiet.catch_errors('infeed'):
    raise tf.errors.UnavailableError(None, None, 'retried')
  quiet.raise_errors()


def test_iteration_count_estimator_converges_on_the_time_budget():
  estimator = _served('iteration_count_estimator').IterationCountEstimator(
      capacity=5)
  assert estimator.get(10) == 1
  iterations, secs_per_step = 4, 0.5
  for _ in range(5):
    estimator.update(iterations * secs_per_step, iterations)
    iterations = estimator.get(10)
  assert iterations == 20
  with pytest.raises(ValueError, match='Invalid `total_secs`'):
    estimator.get(0)


def test_stop_at_step_hook_sets_each_loop_and_stops():
  tpu_estimator = _served('tpu_estimator')
  counter = _served('util').IterationsPerLoopCounter(3, 'count')
  with pytest.raises(ValueError, match='One of `num_steps` or `final_step`'):
    tpu_estimator._TPUStopAtStepHook(counter)  # pylint: disable=protected-access
  hook = tpu_estimator._TPUStopAtStepHook(counter, num_steps=5)  # pylint: disable=protected-access
  with tf.Graph().as_default():
    step = tf.compat.v1.train.get_or_create_global_step()
    hook.begin()
    iterations = tpu_estimator._create_or_get_iterations_per_loop()  # pylint: disable=protected-access
    with tf.compat.v1.Session() as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.local_variables_initializer()])
      hook.after_create_session(session, None)
      seen = [session.run(iterations)]

      class Context:
        stopped = False
        def __init__(self):
          self.session = session
        def request_stop(self):
          Context.stopped = True

      for value in (3, 5):
        step.load(value, session)
        hook.after_run(Context(), None)
        seen.append(session.run(iterations))
  assert seen == [3, 2, 2] and Context.stopped


def test_export_output_tensors_round_trip():
  tpu_estimator = _served('tpu_estimator')
  with tf.Graph().as_default():
    scores = tf.compat.v1.placeholder(tf.float32, [1])
    output = estimator_rt.export.ClassificationOutput(scores=scores)
    assert tpu_estimator._export_output_to_tensors(output) == [scores, None]  # pylint: disable=protected-access
    new = tf.identity(scores)
    clone = tpu_estimator._clone_export_output_with_tensors(output, [new, None])  # pylint: disable=protected-access
    assert clone.scores is new
    predict = estimator_rt.export.PredictOutput({'a': scores, 'b': new})
    clone = tpu_estimator._clone_export_output_with_tensors(  # pylint: disable=protected-access
        predict, [new, scores])
    assert clone.outputs == {'a': new, 'b': scores}
    with pytest.raises(ValueError, match='tensors must be of length 1'):
      tpu_estimator._clone_export_output_with_tensors(  # pylint: disable=protected-access
          estimator_rt.export.RegressionOutput(scores), [])


def test_inputs_with_stopping_signals_pad_the_last_batch_and_stop():
  tpu_estimator = _served('tpu_estimator')
  with tf.Graph().as_default():
    dataset = tf.data.Dataset.from_tensor_slices(
        ({'a': np.arange(3.)}, np.arange(3.))).batch(2)
    inputs = tpu_estimator._InputsWithStoppingSignals(  # pylint: disable=protected-access
        dataset, 2, add_padding=True)
    initializer = inputs.dataset_initializer()
    features, labels = inputs.features_and_labels()
    signals = inputs.signals()
    sliced = tpu_estimator._PaddingSignals.slice_tensor_or_dict(  # pylint: disable=protected-access
        features, signals)
    assert features['a'].shape.as_list() == [2]
    with tf.compat.v1.Session() as session:
      session.run(initializer)
      runs = [session.run([sliced, labels, signals]) for _ in range(3)]
      with pytest.raises(tf.errors.OutOfRangeError):
        session.run(sliced)
  (first, _, s1), (last, last_labels, s2), (_, _, s3) = runs
  np.testing.assert_array_equal(first['a'], [0., 1.])
  np.testing.assert_array_equal(last['a'], [2.])  # The padding sliced off.
  np.testing.assert_array_equal(last_labels, [2., 0.])
  np.testing.assert_array_equal(s2['padding_mask'], [0, 1])
  assert not s1['stopping'].any() and not s2['stopping'].any()
  assert s3['stopping'].all()


def test_use_tpu_builds_the_program_once_for_2_15s_checks(tmp_path):
  """Before the refusal, the input_fn and model_fn are built in a scratch
  graph and tf.estimator's checks of them run; a program that needs a TPU
  to be built gets the refusal."""

  def build(model_fn, input_fn, method='train'):
    estimator = tpu.TPUEstimator(
        model_fn, train_batch_size=2, predict_batch_size=2,
        config=tpu.RunConfig(model_dir=str(tmp_path)))
    if method == 'train':
      estimator.train(input_fn, steps=1)
    list(estimator.predict(input_fn))

  def dynamic_input_fn(params):
    x = tf.zeros([params['batch_size'], tf.random.uniform([], 1, 3,
                                                          tf.int32)])
    return tf.data.Dataset.from_tensors(({'x': x}, x[:, :1]))

  with pytest.raises(ValueError, match='features to the model returned by '
                     'input_fn must have static shape'):
    build(_model_fn, dynamic_input_fn)

  def features_only_fn(features, mode, params):
    del features, mode, params

  with pytest.raises(ValueError, match='model_fn does not take labels, but '
                     'input_fn returns labels'):
    build(features_only_fn, _input_fn)

  def chief_hooks_fn(features, labels, mode, params):
    spec = _model_fn(features, labels, mode, params)
    return estimator_rt.EstimatorSpec(
        mode, loss=spec.loss, train_op=spec.train_op,
        training_chief_hooks=[tf.compat.v1.train.StepCounterHook()])

  with pytest.raises(ValueError, match='training_chief_hooks returned by '
                     'EstimatorSpec is not supported in TPUEstimator'):
    build(chief_hooks_fn, _input_fn)

  def dynamic_prediction_fn(features, labels, mode, params):
    del labels, params
    return tpu.TPUEstimatorSpec(mode, predictions={
        'x': features['x'],  # Static: padded to the batch size.
        'y': tf.compat.v1.placeholder(tf.float32, [None, 3])})

  with pytest.raises(ValueError, match=r'key \(y\) in TPUEstimatorSpec.'
                     'predictions has dynamic shape'):
    build(dynamic_prediction_fn, _input_fn, method='predict')

  def tpu_context_input_fn(params):
    return _input_fn(params) if params['context'] else None

  with pytest.raises(ValueError, match='use_tpu=False'):
    build(_model_fn, tpu_context_input_fn)
  assert not list(tmp_path.iterdir())


def test_eval_on_tpu_false_evaluates_on_cpu_as_in_2_15(tmp_path):
  config = tpu.RunConfig(model_dir=str(tmp_path))
  tpu.TPUEstimator(_model_fn, config=config, use_tpu=False,
                   train_batch_size=2).train(_input_fn, max_steps=2)
  on_tpu = tpu.TPUEstimator(_model_fn, config=config, train_batch_size=2,
                            eval_batch_size=4, eval_on_tpu=False)
  assert on_tpu.evaluate(_input_fn, steps=1)['global_step'] == 2
  with pytest.raises(ValueError, match='use_tpu=False'):
    on_tpu.train(_input_fn, max_steps=4)


def test_train_and_evaluate_builds_each_mode_with_its_batch_size(tmp_path):
  # As 2.15 ran it: params['batch_size'] is train_batch_size for the
  # training and eval_batch_size for every evaluation, the one
  # train_and_evaluate builds to check it included (before it was built
  # without a batch size and the input_fn's params['batch_size'] failed).
  seen = []

  def input_fn(params):
    seen.append(('input_fn', params['batch_size']))
    x = np.ones([64, 1], np.float32)
    return tf.data.Dataset.from_tensor_slices(({'x': x}, x)).repeat().batch(
        params['batch_size'], drop_remainder=True)

  def model_fn(features, labels, mode, params):
    seen.append((mode, int(features['x'].shape[0])))
    return _model_fn(features, labels, mode, params)

  estimator = tpu.TPUEstimator(
      model_fn, use_tpu=False, train_batch_size=16, eval_batch_size=4,
      config=tpu.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=5))
  metrics, _ = estimator_rt.train_and_evaluate(
      estimator, estimator_rt.TrainSpec(input_fn, max_steps=10),
      estimator_rt.EvalSpec(input_fn, steps=2, throttle_secs=0))
  assert metrics['global_step'] == 10
  assert seen == [('input_fn', 16), ('train', 16)] + [
      ('input_fn', 4), ('eval', 4)] * 2
