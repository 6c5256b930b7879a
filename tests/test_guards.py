"""What tf.estimator 2.15 accepted, run through the guards the runtime adds.

docs/guards.md lists every guard, refusal, check and heuristic the runtime
has and tf.estimator 2.15 did not; each test here names its rows (`G<n>`).
The inputs are what 2.15 accepted and ran: argument values and TF_CONFIGs
taken from 2.15's own test suite (tensorflow/estimator v2.15.0, written
here as data), values public programs pass (`sys.maxsize` for "no limit"),
and borderline ones whose 2.15 outcome was checked in `.venv-tf215` (the
outcome is written next to them). Each runs through the guard and must
give what 2.15 gave; a refusal the table keeps with a reason is shown
refused, with the reason's evidence.

Training is a few steps of a 4-weight linear model on a constant batch.
"""

import json
import os
import sys
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert

tf1 = tf.compat.v1


def _model_fn(features, labels, mode, params):
  """A TF1-style linear model with two predictions ('y', 'twice'); the
  `params['kind']` variants return what a borderline 2.15 program did."""
  w = tf1.get_variable('w', [4, 1], initializer=tf1.zeros_initializer())
  y = tf.matmul(features['x'], w)
  kind = params.get('kind')
  predictions = {'y': y, 'twice': 2 * y}
  if kind == 'int_prediction_key':
    predictions = {'y': y, 3: 2 * y}
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions=predictions)
  loss = tf.reduce_mean(tf.square(y - labels))
  metrics = {'mae': tf1.metrics.mean_absolute_error(labels, y)}
  if kind == 'int_metric_key':
    metrics = {7: metrics['mae']}
  train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf1.train.get_global_step())
  return ert.EstimatorSpec(mode, loss=loss, train_op=train_op,
                           predictions=predictions, eval_metric_ops=metrics)


def _input_fn(repeat=False, n=8):
  def input_fn():
    x = np.ones((n, 4), np.float32)
    data = tf.data.Dataset.from_tensor_slices(({'x': x}, x[:, :1]))
    return (data.repeat() if repeat else data).batch(2)
  return input_fn


def _estimator(tmp_path, kind=None, **config):
  return ert.Estimator(_model_fn, params={'kind': kind},
                       config=ert.RunConfig(model_dir=str(tmp_path), **config))


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  estimator = _estimator(tmp_path_factory.mktemp('trained'))
  estimator.train(_input_fn(), steps=2)
  return estimator


def _step(estimator):
  return int(estimator.get_variable_value('global_step'))


# --- G12: predict_keys ---------------------------------------------------------


def test_predict_keys_not_predicted_are_dropped_as_2_15_did(trained):
  # 2.15 kept the keys it predicted: {'y': array([0.96], dtype=float32)}.
  first = next(trained.predict(_input_fn(), predict_keys=['y', 'nope']))
  assert set(first) == {'y'}
  with pytest.raises(ValueError, match=r'Expected to run at least one output '
                     r"from dict_keys\(\['y', 'twice'\]\), provided "
                     r"\['nope'\]"):
    next(trained.predict(_input_fn(), predict_keys=['nope']))


# --- G1: step counts ----------------------------------------------------------

_NO_LIMIT = sys.maxsize  # A program's "no limit"; 2.15 ran it.


@pytest.mark.parametrize('config,train', [
    ({}, {'max_steps': _NO_LIMIT}),
    ({}, {'steps': _NO_LIMIT}),
    ({'save_checkpoints_steps': _NO_LIMIT}, {}),
    ({'save_summary_steps': _NO_LIMIT}, {}),
    ({'log_step_count_steps': _NO_LIMIT}, {}),
], ids=['max_steps', 'steps', 'save_checkpoints_steps', 'save_summary_steps',
        'log_step_count_steps'])
def test_counts_no_run_reaches_train_as_2_15_did(tmp_path, config, train):
  estimator = _estimator(tmp_path, **config)
  estimator.train(_input_fn(), **train)
  # 2.15: the 4 batches of the input, checkpoints at steps 0 and 4.
  assert _step(estimator) == 4
  assert sorted(f for f in os.listdir(tmp_path) if f.endswith('.index')) == [
      'model.ckpt-0.index', 'model.ckpt-4.index']


def test_counts_no_run_reaches_in_specs_and_evaluate(tmp_path, trained):
  assert ert.TrainSpec(_input_fn(), max_steps=_NO_LIMIT).max_steps == (
      _NO_LIMIT)
  assert ert.EvalSpec(_input_fn(), steps=_NO_LIMIT).steps == _NO_LIMIT
  # 2.15: every batch of the input, {'loss': 0.0016, 'mae': 0.04, ...}.
  result = trained.evaluate(_input_fn(), steps=_NO_LIMIT)
  np.testing.assert_allclose(result['mae'], 0.04, rtol=1e-5)
  metrics, _ = ert.train_and_evaluate(
      _estimator(tmp_path),
      ert.TrainSpec(_input_fn(), max_steps=_NO_LIMIT),
      ert.EvalSpec(_input_fn(), steps=_NO_LIMIT))
  assert metrics['global_step'] == 4


# --- G4 (and G3): tf_random_seed -------------------------------------------------------


def test_any_int_seed_seeds_a_run_as_in_2_15(tmp_path):
  # 2.15 trained with each (TensorFlow reduces a graph seed modulo
  # 2**31 - 1); a bool or a float is refused here as there.
  def dense_model_fn(features, labels, mode):
    y = tf1.layers.dense(features['x'], 1)
    loss = tf.reduce_mean(tf.square(y - labels))
    return ert.EstimatorSpec(mode, loss=loss, train_op=tf1.assign_add(
        tf1.train.get_global_step(), 1))
  kernels = []
  for index, seed in enumerate((2**70, 2**70, -2**63 - 1)):
    estimator = ert.Estimator(dense_model_fn, config=ert.RunConfig(
        model_dir=str(tmp_path / str(index)), tf_random_seed=seed))
    estimator.train(_input_fn(), steps=1)
    kernels.append(estimator.get_variable_value('dense/kernel'))
  np.testing.assert_array_equal(kernels[0], kernels[1])
  assert not np.array_equal(kernels[0], kernels[2])
  with pytest.raises(ValueError, match='tf_random_seed must be integer'):
    ert.RunConfig(tf_random_seed=1.0)


# --- G8, G9: EstimatorSpec keys ---------------------------------------------------


@pytest.mark.parametrize('kind', ['int_prediction_key', 'int_metric_key'])
def test_names_unused_in_a_mode_are_not_checked_there(tmp_path, kind):
  # 2.15 trained with either; it refused a non-string prediction key in
  # PREDICT ("Prediction output key must be a string; got 3.") and failed
  # evaluating a non-string metric name (TypeError sorting the names).
  estimator = _estimator(tmp_path, kind=kind)
  estimator.train(_input_fn(), steps=2)
  assert _step(estimator) == 2
  if kind == 'int_prediction_key':
    with pytest.raises(ValueError, match='Prediction output key must be a '
                       'string; got 3'):
      next(estimator.predict(_input_fn()))
  else:
    with pytest.raises(ValueError, match='`eval_metric_ops` keys must be'):
      estimator.evaluate(_input_fn())


# --- G13: evaluation that would never end --------------------------------------


class _StopAfter(tf1.train.SessionRunHook):
  """Requests a stop after `count` evaluation steps."""

  def __init__(self, count):
    self.count = count

  def after_run(self, run_context, run_values):
    del run_values
    self.count -= 1
    if self.count <= 0:
      run_context.request_stop()


def test_endless_evaluation_a_hook_stops_runs_as_in_2_15(trained):
  # 2.15: {'loss': 0.0015999969, 'mae': 0.03999996, 'global_step': 2}.
  result = trained.evaluate(_input_fn(repeat=True), hooks=[_StopAfter(3)])
  np.testing.assert_allclose([result['loss'], result['mae']],
                             [0.0015999969, 0.03999996], rtol=1e-6)
  # Without such a hook, 2.15 evaluated forever; refused here.
  with pytest.raises(ValueError, match='repeats forever'):
    trained.evaluate(_input_fn(repeat=True))


# --- G26, G27: divergence check -----------------------------------------------------


def _best_so_far_model_fn(features, labels, mode):
  """A model that keeps a best-so-far loss starting at inf, untouched."""
  w = tf1.get_variable('w', [4, 1], initializer=tf1.zeros_initializer())
  tf1.get_variable('best_loss', [], trainable=False,
                   initializer=tf1.constant_initializer(float('inf')))
  loss = tf.reduce_mean(tf.square(tf.matmul(features['x'], w) - labels))
  return ert.EstimatorSpec(mode, loss=loss, train_op=tf1.train.
                           GradientDescentOptimizer(0.1).minimize(
                               loss, global_step=tf1.train.get_global_step()))


def test_a_variable_not_finite_from_the_start_is_not_divergence(tmp_path):
  # 2.15 trained it: global step 3, best_loss inf.
  estimator = ert.Estimator(_best_so_far_model_fn, model_dir=str(tmp_path))
  estimator.train(_input_fn(repeat=True), steps=3)
  path = tf.train.latest_checkpoint(str(tmp_path))
  assert path.endswith('model.ckpt-3')
  assert tf.train.load_variable(path, 'best_loss') == np.inf
  weights = tf.train.load_variable(path, 'w')
  assert np.all(np.isfinite(weights)) and np.all(weights > 0)
  # The checkpoint check accepts the infinity (only NaN is refused), so a
  # second call resumes from it.
  estimator.train(_input_fn(repeat=True), steps=2)
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-5')


def test_a_variable_that_becomes_infinite_still_stops_training(tmp_path):
  # The check the table keeps: 2.15 trained on and saved the infinity. A
  # trainable variable (an infinity in other state is a value).
  def exploding_model_fn(features, labels, mode):
    spec = _best_so_far_model_fn(features, labels, mode)
    scale = tf1.get_variable('scale', [], trainable=True,
                             initializer=tf1.constant_initializer(1e30))
    return spec._replace(train_op=tf.group(
        spec.train_op, tf1.assign(scale, scale * 1e30)))
  estimator = ert.Estimator(exploding_model_fn, model_dir=str(tmp_path))
  with pytest.raises(RuntimeError, match='model variables became NaN or '
                     'infinite'):
    estimator.train(_input_fn(repeat=True), steps=3)
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-0')


# --- G18: exporters ------------------------------------------------------------


@pytest.mark.parametrize('pattern,reads', [
    ('eval/*.tfevents.*', True), ('eval/events.out.tfevents.*', True),
    ('eval_foo/*', True), (None, False), ('logs/*', False)])
def test_best_exporter_takes_any_event_file_pattern(pattern, reads):
  # 2.15 constructed each (a pattern was only globbed, None read nothing).
  exporter = ert.BestExporter(event_file_pattern=pattern)
  assert exporter.name == 'best_exporter'
  assert exporter._reads_history is reads  # pylint: disable=protected-access


# --- G29, G31-G33: TF_CONFIG -------------------------------------------------

# TF_CONFIGs of 2.15's run_config_test.py and training_test.py (v2.15.0),
# which 2.15 made RunConfigs of; its tests never started their servers.
_215_TF_CONFIGS = [
    {'cluster': {'chief': ['host0:0'], 'ps': ['host1:1', 'host2:2'],
                 'worker': ['host3:3', 'host4:4', 'host5:5']},
     'task': {'type': 'worker', 'index': 1}},
    {'cluster': {'master': ['host0:0'], 'ps': ['host1:1', 'host2:2'],
                 'worker': ['host3:3', 'host4:4']},
     'task': {'type': 'master', 'index': 0}},
    {'cluster': {'chief': ['host0:0'], 'worker': ['host3:3'],
                 'other_type': ['host3:1', 'host4:2'], 'ps': ['host6:3']},
     'task': {'type': 'ps', 'index': 0}},
    {'cluster': {'chief': ['host0:0']}, 'task': {'type': 'evaluator',
                                                 'index': 1}},
]


@pytest.mark.parametrize('tf_config', _215_TF_CONFIGS,
                         ids=['worker', 'master', 'other_job', 'evaluator_1'])
def test_2_15s_tf_configs_make_its_run_configs(tf_config):
  """RunConfig gives 2.15's properties; the runtime's cluster checks (port
  0, an unknown job, a second evaluator) refuse only when a run needs the
  cluster, where 2.15's servers could not have served (G29, G31) or 2.15
  refused too (G32)."""
  with mock.patch.dict(os.environ, {'TF_CONFIG': json.dumps(tf_config)}):
    config = ert.RunConfig()
  assert (config.task_type, config.task_id) == (
      tf_config['task']['type'], tf_config['task']['index'])
  with pytest.raises(ValueError):
    _ = config.task_info


def test_a_bool_count_is_refused_with_its_name():
  # G3, kept with reason: 2.15 saved every step with it.
  with pytest.raises(ValueError, match='save_checkpoints_steps=True'):
    ert.RunConfig(save_checkpoints_steps=True)


# --- G17: exporter names -------------------------------------------------------


def _serving_input_fn():
  return ert.export.build_raw_serving_input_receiver_fn(
      {'x': tf1.placeholder(tf.float32, [None, 4])})()


def test_exporter_names_with_a_slash_export_under_nested_directories(
    tmp_path):
  # 2.15 returned b'<model_dir>/export/a/b/<time>', .../c/d/e/<time> and
  # .../f/<time> for these names.
  exporters = [
      ert.LatestExporter('a/b', _serving_input_fn, exports_to_keep=1),
      ert.BestExporter('c/d/e', _serving_input_fn, exports_to_keep=1),
      ert.FinalExporter('f/', _serving_input_fn)]
  _, exports = ert.train_and_evaluate(
      _estimator(tmp_path, save_checkpoints_steps=2),
      ert.TrainSpec(_input_fn(repeat=True), max_steps=4),
      ert.EvalSpec(_input_fn(), steps=None, throttle_secs=0,
                   exporters=exporters))
  exported = {os.path.relpath(os.path.dirname(tf.compat.as_str(path)),
                              str(tmp_path)) for path in exports}
  assert exported == {'export/a/b', 'export/c/d/e', 'export/f'}
  # exports_to_keep=1: the LatestExporter kept its newest export only.
  assert len(os.listdir(tmp_path / 'export' / 'a' / 'b')) == 1
  with pytest.raises(ValueError, match='must be a non-empty string'):
    ert.LatestExporter('', _serving_input_fn)


# --- G30: a cluster of one chief or master task ---------------------------------


@pytest.mark.parametrize('job', ['chief', 'master'])
def test_a_one_task_cluster_runs_in_this_process_as_in_2_15(tmp_path, job):
  # 2.15's own test TF_CONFIG ('fake_chief'): no server for one node, the
  # session master ''. Its run_chief trained only (no eval directory);
  # run_master also evaluated. train_and_evaluate returned None for both.
  import estimator_rt.compat  # pylint: disable=g-import-not-at-top
  estimator_rt.compat.install()
  tf_config = {'cluster': {job: [f'fake_{job}']},
               'task': {'type': job, 'index': 0}}
  with mock.patch.dict(os.environ, {'TF_CONFIG': json.dumps(tf_config)}):
    config = tf.estimator.RunConfig(model_dir=str(tmp_path))
  assert (config.task_type, config.master, config.is_chief,
          config.num_worker_replicas, config.cluster_spec.as_dict()) == (
              job, '', True, 1, tf_config['cluster'])
  estimator = tf.estimator.Estimator(_model_fn, params={}, config=config)
  assert tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(_input_fn(repeat=True), max_steps=3),
      tf.estimator.EvalSpec(_input_fn(), steps=1, throttle_secs=0)) is None
  assert _step(estimator) == 3
  assert os.path.isdir(tmp_path / 'eval') == (job == 'master')


def test_the_binary_trains_a_one_chief_cluster_without_a_server(tmp_path):
  """As the chief of that cluster: it trains (multi_worker_mirrored of one
  worker here), starts no server at 'fake_chief' (no bind guard either)
  and leaves the evaluation to an evaluator task."""
  from conftest import run_python  # pylint: disable=g-import-not-at-top
  legacy = os.path.join(os.path.dirname(__file__), '_legacy_fns.py')
  result = run_python(
      ['-m', 'estimator_rt.main', f'--model_fn={legacy}:model_fn',
       f'--input_fn={legacy}:input_fn', f'--model_dir={tmp_path}',
       '--max_steps=3', '--distribution_strategy=multi_worker_mirrored'],
      env={'TF_CONFIG': json.dumps({
          'cluster': {'chief': ['fake_chief']},
          'task': {'type': 'chief', 'index': 0}})}, timeout=240)
  assert result.returncode == 0, result.stderr[-3000:]
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-3')
  assert not os.path.exists(tmp_path / 'eval')


# --- G38: stop signals during train() ------------------------------------------

# Run in a fresh process: signal handlers belong to the process. Each case
# sends a signal from a hook after the first loop and reports what the
# program saw. 2.15 (.venv-tf215, the same program
# with tf.estimator): SIGINT raised KeyboardInterrupt, which `except
# Exception` did not catch; a program's own SIGTERM or SIGINT handler ran
# and training went on to its end; SIGTERM with no handler ended the
# process.
_SIGNALS_PROGRAM = '''
import json, os, signal, sys
import numpy as np
import tensorflow as tf
import estimator_rt as ert
tf1 = tf.compat.v1

def model_fn(features, labels, mode):
  w = tf1.get_variable('w', [4, 1], initializer=tf1.zeros_initializer())
  loss = tf.reduce_mean(tf.square(tf.matmul(features['x'], w) - labels))
  return ert.EstimatorSpec(mode, loss=loss, train_op=tf1.train.
                           GradientDescentOptimizer(0.1).minimize(
                               loss, global_step=tf1.train.get_global_step()))

def input_fn():
  x = np.ones((8, 4), np.float32)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, x[:, :1])).repeat(
      ).batch(2)

def train(model_dir, signum):
  sent = []

  def send(result):
    if not sent:
      sent.append(result.global_step)
      os.kill(os.getpid(), signum)
  estimator = ert.Estimator(model_fn, model_dir=model_dir, config=
                            ert.RunConfig(steps_per_loop=10,
                                          save_checkpoints_steps=1000))
  estimator.train(input_fn, hooks=[send], max_steps=30)
  return int(estimator.get_variable_value('global_step'))

def case(name, signum, own_handler):
  seen = []
  # Python's defaults of an interactive run (a process started in the
  # background inherits SIGINT ignored), or the program's own handler.
  signal.signal(signum, (lambda s, frame: seen.append(s)) if own_handler
                else signal.SIG_DFL if signum == signal.SIGTERM
                else signal.default_int_handler)
  before = signal.getsignal(signum)
  report = {}
  try:
    try:
      report['step'] = train(os.path.join(sys.argv[1], name), signum)
    except Exception as e:  # What 2.15's KeyboardInterrupt passed by.
      report['caught_by'] = 'Exception'
  except KeyboardInterrupt as e:
    report.update(caught_by='KeyboardInterrupt',
                  preempted=isinstance(e, ert.PreemptedError),
                  step=e.global_step)
  except ert.PreemptedError as e:
    report.update(caught_by='PreemptedError', step=e.global_step)
  report['handler_seen'] = seen
  report['handler_restored'] = signal.getsignal(signum) is before
  return report

print(json.dumps({
    'sigint': case('sigint', signal.SIGINT, False),
    'own_sigint': case('own_sigint', signal.SIGINT, True),
    'own_sigterm': case('own_sigterm', signal.SIGTERM, True),
    'sigterm': case('sigterm', signal.SIGTERM, False),
}))
'''


def test_stop_signals_reach_a_programs_handlers_and_except_clauses(tmp_path):
  from conftest import run_python  # pylint: disable=g-import-not-at-top
  result = run_python(['-c', _SIGNALS_PROGRAM, str(tmp_path)], timeout=240)
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads(result.stdout.strip().splitlines()[-1])
  # SIGINT: caught by `except KeyboardInterrupt` (2.15), not by `except
  # Exception`; it is the runtime's PreemptedError too, saved at the end
  # of the loop in flight (2.15 saved nothing).
  step = report['sigint'].pop('step')
  assert report['sigint'] == {
      'caught_by': 'KeyboardInterrupt', 'preempted': True,
      'handler_seen': [], 'handler_restored': True}
  # A program's own handler runs and training goes on, as in 2.15.
  assert report['own_sigint'] == {
      'step': 30, 'handler_seen': [2], 'handler_restored': True}
  assert report['own_sigterm'] == {
      'step': 30, 'handler_seen': [15], 'handler_restored': True}
  # SIGTERM with no handler: the runtime's preemption (save at the loop
  # end; the binary then exits 143), not caught by `except Exception`.
  assert report['sigterm'] == {
      'caught_by': 'PreemptedError', 'step': step, 'handler_seen': [],
      'handler_restored': True}
  assert 0 < step < 30
  for name in ('sigint', 'sigterm'):
    assert tf.train.latest_checkpoint(str(tmp_path / name)).endswith(
        f'model.ckpt-{step}')


# --- G36, G45: 2.15's figures -----------------------------------------------------

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'scripts', 'tf_estimator_215'))
import guards_reference as reference  # pylint: disable=g-import-not-at-top,wrong-import-position

# Printed by
#   .venv-tf215/bin/python scripts/tf_estimator_215/guards_reference.py
TF215 = {
    'central_storage': {
        'w': [0.3465808928012848, 0.3598293662071228, 0.3730778396129608,
              0.38632631301879883],
        'evaluate': {'loss': 0.6629045009613037, 'mae': 0.6881831884384155,
                     'global_step': 3.0}},
    'keras_kernels': {
        'decay': [1.0911526679992676, -0.017389807850122452,
                  0.1838500052690506, 0.14022891223430634],
        'schedule': [1.071894884109497, -0.015592830255627632,
                     0.18337160348892212, 0.14042240381240845],
        'schedule_and_decay': [0.38807031512260437, -0.17337821424007416,
                               0.37508800625801086, 0.3061324656009674]},
}


@pytest.mark.parametrize('strategy', ['central_storage', 'v1_object'])
def test_central_storage_trains_a_tf1_model_fn_as_2_15_did(tmp_path,
                                                           strategy):
  # Two replicas (conftest's two logical CPUs), one copy of the variables.
  import estimator_rt.compat  # pylint: disable=g-import-not-at-top
  estimator_rt.compat.install()
  if strategy == 'v1_object':
    strategy = tf1.distribute.experimental.CentralStorageStrategy(
        compute_devices=['/cpu:0', '/cpu:1'], parameter_device='/cpu:0')
  estimator = tf.estimator.Estimator(
      reference.central_storage_model_fn, config=tf.estimator.RunConfig(
          model_dir=str(tmp_path), train_distribute=strategy))
  estimator.train(reference.central_storage_input_fn,
                  steps=reference.CENTRAL_STORAGE_STEPS)
  expected = TF215['central_storage']
  np.testing.assert_allclose(estimator.get_variable_value('w').ravel(),
                             expected['w'], rtol=1e-6)
  metrics = estimator.evaluate(reference.central_storage_input_fn)
  for name, value in expected['evaluate'].items():
    np.testing.assert_allclose(metrics[name], value, rtol=1e-6)


@pytest.mark.parametrize('kind', reference.KERAS_KINDS)
def test_model_to_estimator_trains_tf_keras_decay_and_schedules(tmp_path,
                                                                 kind):
  # 2.15 trained each as tf_keras's own train_on_batch did; the Keras 3
  # optimizer here gets one schedule of the same rates.
  tf_keras = pytest.importorskip('tf_keras')
  x, y = reference.keras_data()
  estimator = ert.model_to_estimator(
      keras_model=reference.keras_model(kind, tf_keras),
      model_dir=str(tmp_path))
  estimator.train(lambda: tf.data.Dataset.from_tensors(({'x': x}, y)).repeat(),
                  steps=reference.KERAS_STEPS)
  np.testing.assert_allclose(
      estimator.get_variable_value('y/kernel').ravel(),
      TF215['keras_kernels'][kind], rtol=1e-5)


def test_a_programs_subclass_of_a_strategy_trains_as_its_base(tmp_path):
  # 2.15 took any tf.distribute strategy; the graph engine placed these by
  # class name, so a subclass was refused (G36).
  class MyMirrored(tf.distribute.MirroredStrategy):
    pass

  estimator = _estimator(tmp_path, train_distribute=MyMirrored(
      ['/cpu:0', '/cpu:1']))
  estimator.train(_input_fn(), steps=2)
  assert _step(estimator) == 2
