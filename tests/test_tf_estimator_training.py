"""tf.estimator 2.15's configuration and training API, as programs (and
2.15's own tests) use it: RunConfig's TF_CONFIG reading, properties,
`replace` and messages; TrainSpec, EvalSpec and `train_and_evaluate`
through `_TrainingExecutor`; the module paths `run_config`, `training`,
`hooks.hooks` and TensorFlow's removed `distribute.estimator_training`;
`save_summary_steps=None`; `InMemoryEvaluatorHook` and
`_StopAtCheckpointStepHook`. Where estimator_rt differs from 2.15 on
purpose (docs/differences.md) the test says so.
"""

import json
import os
import socket
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt
import estimator_rt.compat
from estimator_rt.cluster import tf_config as cluster
from estimator_rt.estimator import stand_in_tasks
from estimator_rt.core import summaries
import _models as M

estimator_rt.compat.install()
tf1 = tf.compat.v1

# pylint: disable=g-import-not-at-top,wrong-import-position
from tensorflow_estimator.python.estimator import run_config as run_config_lib
from tensorflow_estimator.python.estimator import training
from tensorflow_estimator.python.estimator.hooks import hooks as hooks_lib
# pylint: enable=g-import-not-at-top,wrong-import-position

A, B, C, D = (f'127.0.0.1:{port}' for port in range(24001, 24005))


def _config(tf_config, **kwargs):
  with mock.patch.dict(os.environ, {'TF_CONFIG': json.dumps(tf_config)}):
    return run_config_lib.RunConfig(**kwargs)


# --- RunConfig ---------------------------------------------------------------


def test_module_paths_are_estimator_rt_objects():
  assert run_config_lib.RunConfig is estimator_rt.RunConfig
  assert training is estimator_rt.estimator.train_and_evaluate
  assert training.train_and_evaluate is tf.estimator.train_and_evaluate
  assert (hooks_lib.InMemoryEvaluatorHook is
          tf.estimator.experimental.InMemoryEvaluatorHook)
  assert run_config_lib.TaskType.MASTER == 'master'


def test_local_defaults_are_215s():
  config = run_config_lib.RunConfig()
  assert (config.task_type, config.task_id, config.master,
          config.evaluation_master, config.is_chief,
          config.num_worker_replicas, config.num_ps_replicas,
          config.global_id_in_cluster, config.service) == (
              'worker', 0, '', '', True, 1, 0, 0, None)
  assert config.cluster_spec.as_dict() == {}
  assert config.session_config is None
  assert not hasattr(config, '_distribute_coordinator_mode')


def test_tf_config_keys_215_read():
  config = _config({'task': {'type': 'worker', 'index': 0},
                    'session_master': 'grpc://s', 'eval_session_master': 'e',
                    'service': {'k': [1]}, 'model_dir': '/tmp/from_tf_config'})
  assert config.task_info is None  # Local: worker 0 without a cluster.
  assert (config.master, config.evaluation_master, config.service,
          config.model_dir) == ('grpc://s', 'e', {'k': [1]},
                                '/tmp/from_tf_config')


def test_cluster_properties_and_default_session_config():
  spec = {'chief': [A], 'worker': [B, C], 'ps': [D]}
  config = _config({'cluster': spec, 'task': {'type': 'worker', 'index': 1}})
  assert config.cluster_spec.as_dict() == spec
  assert (config.task_type, config.task_id, config.master, config.is_chief,
          config.num_worker_replicas, config.num_ps_replicas,
          config.global_id_in_cluster) == (
              'worker', 1, f'grpc://{C}', False, 3, 1, 2)
  # 2.15's between-graph default: the ps tasks and this worker only.
  assert list(config.session_config.device_filters) == [
      '/job:ps', '/job:worker/task:1']
  assert config.task_info.task_type == 'worker'
  # As 2.15 trained (its train_distribute stayed None).
  assert config.train_distribute is None
  assert config.training_strategy == 'parameter_server'
  evaluator = _config({'cluster': spec, 'task': {'type': 'evaluator',
                                                 'index': 0}})
  assert (evaluator.cluster_spec.as_dict(), evaluator.num_worker_replicas,
          evaluator.global_id_in_cluster, evaluator.is_chief) == (
              {}, 0, None, False)


@pytest.mark.parametrize('tf_config,message', [
    ({'cluster': {'worker': [A]}}, 'must have one "chief" node'),
    ({'cluster': {'chief': [A, B]}}, 'must have only one "chief" node'),
    ({'cluster': {'chief': [A]}}, 'task type must be set'),
    ({'cluster': {'chief': [A]}, 'task': {'type': 'chief'}},
     'task index must be set'),
    ({'cluster': {'chief': [A]}, 'task': {'type': 'chief', 'index': -1}},
     'Task index must be non-negative'),
    ({'cluster': {'chief': [A]}, 'task': {'type': 'ps', 'index': 0}},
     'is not a valid task_type'),
    ({'cluster': {'chief': [A]}, 'task': {'type': 'chief', 'index': 1}},
     'is not a valid task_id'),
    ({'task': {'type': 'chief', 'index': 0}}, 'task type must be WORKER'),
    ({'model_dir': ''}, 'model_dir in TF_CONFIG should be non-empty'),
])
def test_tf_config_mistakes_215_messages_one_line(tf_config, message):
  with pytest.raises(estimator_rt.UserInputError) as raised:
    _config(tf_config)
  assert message in str(raised.value) and '\n' not in str(raised.value)


def test_what_215_accepted_and_the_runtime_cannot_run_is_refused_when_used():
  """Port 0, another job, an evaluator index above 0: RunConfig keeps 2.15's
  properties, and the runtime refuses the cluster in one line when it is
  used (the role read, an Estimator run)."""
  config = _config({'cluster': {'chief': ['host0:0'], 'other': [A]},
                    'task': {'type': 'other', 'index': 0}})
  assert (config.task_type, config.global_id_in_cluster) == ('other', 1)
  with pytest.raises(cluster.ClusterConfigError, match="unknown job 'other'"):
    config.task_info  # pylint: disable=pointless-statement
  port_0 = _config({'cluster': {'chief': ['host0:0'], 'worker': [A]},
                    'task': {'type': 'worker', 'index': 0}})
  assert port_0.master == f'grpc://{A}'
  # 2.15 made an Estimator of it (code reads its config); the runtime
  # refuses it when the Estimator first runs, before writing anything.
  estimator = tf.estimator.Estimator(M.make_model_fn(), config=port_0)
  assert estimator.config.num_worker_replicas == 2
  x, y = M.make_data(8)
  for call in (lambda: estimator.train(M.global_input_fn(x, y, batch_size=4),
                                       steps=1),
               lambda: estimator.evaluate(
                   M.global_input_fn(x, y, batch_size=4), steps=1)):
    with pytest.raises(cluster.ClusterConfigError, match="port '0'"):
      call()
  # Nothing written: the temporary model_dir is as its construction made it
  # (by tempfile.mkdtemp, as 2.15's), empty.
  assert os.listdir(estimator.model_dir) == []
  # A master with a worker and no ps: the role is the chief's, but no
  # strategy trains two tasks without ps (2.15's would each have trained
  # a model of their own); refused with the strategy.
  master = _config({'cluster': {'master': [A], 'worker': [B]},
                    'task': {'type': 'master', 'index': 0}})
  assert (master.is_chief, master.num_worker_replicas) == (True, 2)
  assert master.role.task.is_legacy_master
  with pytest.raises(cluster.ClusterConfigError, match='2 training tasks'):
    cluster.check_strategy(master.role.task, master.role.strategy_name)


def test_a_one_task_master_cluster_trains_and_evaluates_as_215s_did(
    tmp_path):
  """The TF_CONFIG of hosted single-node training: 2.15 ran it in one
  process (session master '', no server) whose run_master trained and
  evaluated after each checkpoint; the runtime runs it locally."""
  config = _config({'cluster': {'master': [A]},
                    'task': {'type': 'master', 'index': 0}},
                   save_checkpoints_steps=2, save_summary_steps=0,
                   log_step_count_steps=0)
  assert (config.task_type, config.master, config.is_chief,
          config.num_worker_replicas) == ('master', '', True, 1)
  assert config.task_info is None
  x, y = M.make_data(48)
  est = tf.estimator.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                               config=config)
  # In a cluster (a master job is one) 2.15's train_and_evaluate returned
  # None; it trained, evaluated and exported all the same.
  assert tf.estimator.train_and_evaluate(
      est, training.TrainSpec(M.global_input_fn(x, y, batch_size=16),
                              max_steps=4),
      training.EvalSpec(M.global_input_fn(x, y, batch_size=16), steps=1,
                        throttle_secs=0,
                        exporters=[tf.estimator.FinalExporter('final',
                                                              None)])) is None
  assert M.eval_steps(str(tmp_path / 'eval')) == [2, 4]
  exports = tmp_path / 'export' / 'final'
  assert [M.saved_model_global_step(str(exports / p))
          for p in os.listdir(exports)] == [4]


@pytest.mark.parametrize('changes,message', [
    ({'save_summary_steps': -1}, 'save_summary_steps should be >= 0'),
    ({'save_checkpoints_steps': -1}, 'save_checkpoints_steps should be >= 0'),
    ({'save_checkpoints_secs': -1}, 'save_checkpoints_secs should be >= 0'),
    ({'session_config': {}}, 'session_config must be instance of ConfigProto'),
    ({'keep_checkpoint_max': -1}, 'keep_checkpoint_max should be >= 0'),
    ({'keep_checkpoint_every_n_hours': 0},
     'keep_checkpoint_every_n_hours should be > 0'),
    ({'session_creation_timeout_secs': 0},
     'session_creation_timeout_secs should be > 0'),
    ({'tf_random_seed': 1.0}, 'tf_random_seed must be integer'),
    ({'device_fn': lambda x: 0}, 'device_fn must be callable with exactly'),
    ({'experimental_max_worker_delay_secs': '5'},
     'experimental_max_worker_delay_secs must be an integer'),
    ({'protocol': 'http'}, 'protocol should be grpc or grpc+verbs'),
    ({'master': 'x'}, 'Replacing master is not supported'),
])
def test_replace_validates_with_215_messages(changes, message):
  with pytest.raises(ValueError) as raised:
    run_config_lib.RunConfig(task_info=None).replace(**changes)
  assert message in str(raised.value) and '\n' not in str(raised.value)


def test_none_values_and_checkpoint_rules_of_replace():
  config = run_config_lib.RunConfig(task_info=None).replace(
      save_summary_steps=None, keep_checkpoint_max=None,
      keep_checkpoint_every_n_hours=None, log_step_count_steps=None,
      save_checkpoints_secs=None)
  assert (config.save_summary_steps, config.keep_checkpoint_max,
          config.save_checkpoints_steps, config.save_checkpoints_secs) == (
              None, None, None, None)
  steps = config.replace(save_checkpoints_steps=10)
  assert (steps.save_checkpoints_steps, steps.save_checkpoints_secs) == (
      10, None)
  secs = steps.replace(save_checkpoints_secs=30)
  assert (secs.save_checkpoints_steps, secs.save_checkpoints_secs) == (
      None, 30)
  # 2.15: setting one to None leaves the other as it was.
  assert run_config_lib.RunConfig(task_info=None).replace(
      save_checkpoints_steps=None).save_checkpoints_secs == 600
  with pytest.raises(ValueError, match='cannot be both set'):
    config.replace(save_checkpoints_steps=1, save_checkpoints_secs=1)


def test_replace_keeps_a_subclass_and_its_overrides():

  class WorkerConfig(run_config_lib.RunConfig):

    @property
    def is_chief(self):
      return False

  config = WorkerConfig(task_info=None).replace(model_dir='/tmp/w')
  assert type(config) is WorkerConfig and not config.is_chief
  assert config.model_dir == '/tmp/w'


def test_strategies_as_215_took_them():
  from tensorflow.python.distribute import distribute_coordinator as dc  # pylint: disable=g-import-not-at-top
  from tensorflow.python.distribute.distribute_config import DistributeConfig  # pylint: disable=g-import-not-at-top
  with pytest.raises(ValueError, match='Please use `tf.compat.v1.distribute'):
    run_config_lib.RunConfig(
        train_distribute=tf.distribute.experimental.ParameterServerStrategy
        .__new__(tf.distribute.experimental.ParameterServerStrategy))
  mirrored = tf.distribute.MirroredStrategy()
  config = run_config_lib.RunConfig(
      task_info=None,
      experimental_distribute=DistributeConfig(train_distribute=mirrored))
  assert config.train_distribute is mirrored
  with pytest.raises(ValueError, match='Either `train_distribute`'):
    run_config_lib.RunConfig(
        train_distribute=mirrored,
        experimental_distribute=DistributeConfig(train_distribute=mirrored))
  worker = _config({'cluster': {'worker': [A, B]},
                    'task': {'type': 'worker', 'index': 1}},
                   train_distribute='multi_worker_mirrored')
  assert worker._distribute_coordinator_mode == (  # pylint: disable=protected-access
      dc.CoordinatorMode.INDEPENDENT_WORKER)
  assert not worker.is_chief and worker.task_info.num_workers == 2
  from tensorflow.python.distribute import estimator_training  # pylint: disable=g-import-not-at-top
  assert estimator_training.should_run_distribute_coordinator(worker)
  assert not estimator_training.should_run_distribute_coordinator(
      run_config_lib.RunConfig(task_info=None))


def test_save_summary_steps_none_writes_no_training_summaries(tmp_path):
  est = tf.estimator.Estimator(
      M.make_model_fn(), config=M.quiet_config(save_summary_steps=None,
                                               log_step_count_steps=None,
                                               task_info=None),
      model_dir=str(tmp_path))
  est.train(M.global_input_fn(*M.make_data(32), batch_size=8), max_steps=20)
  assert summaries.read_scalars(str(tmp_path)) == {}
  assert M.checkpoint_steps(str(tmp_path)) == [0, 10, 20]


# --- TrainSpec, EvalSpec, train_and_evaluate -----------------------------------


class _Hook(tf1.train.SessionRunHook):
  pass


@pytest.mark.parametrize('make,error,message', [
    (lambda: training.TrainSpec(input_fn='x'), TypeError,
     '`input_fn` must be callable'),
    (lambda: training.TrainSpec(lambda: 1, max_steps=0), ValueError,
     'Must specify max_steps > 0'),
    (lambda: training.TrainSpec(lambda: 1, hooks=[object()]), TypeError,
     'All hooks must be `SessionRunHook` instances'),
    (lambda: training.TrainSpec(lambda: 1, saving_listeners=[object()]),
     TypeError, 'All saving_listeners must be `CheckpointSaverListener`'),
    (lambda: training.EvalSpec(lambda: 1, steps=0), ValueError,
     'Must specify steps > 0'),
    (lambda: training.EvalSpec(lambda: 1, name=1), TypeError,
     '`name` must be string'),
    (lambda: training.EvalSpec(lambda: 1, throttle_secs=-1), ValueError,
     'Must specify throttle_secs >= 0'),
    (lambda: training.EvalSpec(lambda: 1, exporters=[_Hook()]), TypeError,
     '`exporters` must be an Exporter'),
    (lambda: training.EvalSpec(lambda: 1, exporters=[
        tf.estimator.LatestExporter('a', None),
        tf.estimator.FinalExporter('a', None)]), ValueError,
     '`exporters` must have unique names'),
])
def test_spec_validation_215_messages(make, error, message):
  with pytest.raises(error) as raised:
    make()
  assert message in str(raised.value)
  assert isinstance(raised.value, estimator_rt.UserInputError)  # Exit 2.


def test_specs_take_estimator_rt_hooks_too():
  spec = training.TrainSpec(lambda: 1, hooks=[_Hook(), lambda result: None,
                                              estimator_rt.LoggingHook(
                                                  every_steps=5)],
                            saving_listeners=[lambda path, step: None])
  assert len(spec.hooks) == 3 and len(spec.saving_listeners) == 1
  # 2.15's default is 120 s: estimator_rt starts at once (docs/differences.md).
  assert training.EvalSpec(lambda: 1).start_delay_secs == 0


def test_train_and_evaluate_goes_through_the_executor(monkeypatch):
  est = tf.estimator.Estimator(M.make_model_fn(),
                               config=run_config_lib.RunConfig(task_info=None))
  train_spec = training.TrainSpec(lambda: 1, max_steps=1)
  eval_spec = training.EvalSpec(lambda: 1)
  made = []

  class Recording(training._TrainingExecutor):  # pylint: disable=protected-access
    """Records how it was made; runs nothing."""

    def __init__(self, **kwargs):  # pylint: disable=super-init-not-called
      made.append(kwargs)

    def run(self):
      return 'ran'

  # 2.15's tests patch the module's _TrainingExecutor: that must reach
  # tf.estimator.train_and_evaluate.
  monkeypatch.setattr(training, '_TrainingExecutor', Recording)
  assert tf.estimator.train_and_evaluate(est, train_spec, eval_spec) == 'ran'
  assert made == [dict(estimator=est, train_spec=train_spec,
                       eval_spec=eval_spec)]
  monkeypatch.undo()
  with pytest.raises(TypeError, match='`eval_spec` must have type'):
    tf.estimator.train_and_evaluate(est, train_spec, None)


def test_run_local_asks_a_mock_estimator_only_what_2_15_asked():
  """2.15's own tests run `run_local` on a Mock(spec=Estimator), which has
  every attribute of estimator_rt's Estimator: the runtime's own protocol
  (building the evaluation within the training) is not asked of it."""
  est = mock.Mock(spec=tf.estimator.Estimator, model_dir='path/')
  est.latest_checkpoint.return_value = 'checkpoint_path/'
  train_spec = training.TrainSpec(lambda: 1, max_steps=300)
  eval_spec = training.EvalSpec(lambda: 1, steps=2)
  est.evaluate.return_value = {'global_step': 300}
  training._TrainingExecutor(est, train_spec, eval_spec).run_local()  # pylint: disable=protected-access
  assert est.train.call_args[1]['max_steps'] == 300
  assert est.evaluate.call_args[1]['steps'] == 2
  assert not est.evaluation_checked_in_training.called


def test_local_input_ending_early_still_exports_the_final_checkpoint(
    tmp_path):
  """2.15 gave a FinalExporter nothing when the input ended before
  max_steps (its last evaluation was not at max_steps); here the last
  checkpoint is the final one."""
  x, y = M.make_data(48)
  est = tf.estimator.Estimator(
      M.make_model_fn(), model_dir=str(tmp_path),
      config=M.quiet_config(save_checkpoints_steps=2, task_info=None))
  metrics, exports = tf.estimator.train_and_evaluate(
      est, training.TrainSpec(M.global_input_fn(x, y, batch_size=16,
                                                repeat=False), max_steps=100),
      training.EvalSpec(M.global_input_fn(x, y, batch_size=16, repeat=False),
                        steps=None, throttle_secs=0,
                        exporters=[tf.estimator.FinalExporter('final',
                                                              None)]))
  assert metrics['global_step'] == 3
  assert M.eval_steps(str(tmp_path / 'eval')) == [2, 3]
  assert [M.saved_model_global_step(p) for p in exports] == [3]


def test_continuous_eval_listener_stops_local_training(tmp_path):

  class StopAfterFirst(training._ContinuousEvalListener):  # pylint: disable=protected-access

    def after_eval(self, eval_result):
      self.result = eval_result
      return False

  listener = StopAfterFirst()
  x, y = M.make_data(48)
  est = tf.estimator.Estimator(
      M.make_model_fn(), model_dir=str(tmp_path),
      config=M.quiet_config(save_checkpoints_steps=5, task_info=None))
  executor = training._TrainingExecutor(  # pylint: disable=protected-access
      est, training.TrainSpec(M.global_input_fn(x, y, batch_size=8),
                              max_steps=100),
      training.EvalSpec(M.global_input_fn(x, y, batch_size=8, repeat=False),
                        steps=None, throttle_secs=0),
      continuous_eval_listener=listener)
  metrics, _ = executor.run_local()
  assert metrics['global_step'] == 5
  assert listener.result.status == training._EvalStatus.EVALUATED  # pylint: disable=protected-access
  assert M.checkpoint_steps(str(tmp_path)) == [0, 5]


def test_executor_dispatch_and_its_refusals():
  est = tf.estimator.Estimator(M.make_model_fn(),
                               config=run_config_lib.RunConfig(task_info=None))
  executor = training._TrainingExecutor(  # pylint: disable=protected-access
      est, training.TrainSpec(lambda: 1), training.EvalSpec(lambda: 1))
  executor.run_local = lambda: 'local'
  assert executor.run() == 'local'
  with pytest.raises(TypeError, match='`estimator` must have type'):
    training._TrainingExecutor(object(), training.TrainSpec(lambda: 1), None)  # pylint: disable=protected-access
  evaluator = _config({'cluster': {'chief': [A]},
                       'task': {'type': 'evaluator', 'index': 1}})
  # An Estimator refuses that config itself (the runtime has one evaluator):
  # one made with a usable config shows it to train_and_evaluate.

  class ShowsEvaluatorConfig(estimator_rt.Estimator):

    # Overriding `config` is refused, as in tf.estimator 2.15, unless the
    # subclass skips that check as libraries did.
    def _assert_members_are_not_overridden(self):
      pass

    @property
    def config(self):
      return evaluator

  stand_in = ShowsEvaluatorConfig(
      M.make_model_fn(), config=run_config_lib.RunConfig(task_info=None))
  with pytest.raises(ValueError, match='only be one `evaluator` task'):
    tf.estimator.train_and_evaluate(
        stand_in, training.TrainSpec(lambda: 1), training.EvalSpec(lambda: 1))


class _StandInEstimator:
  """Stands in for an Estimator as `Mock(spec=Estimator)` does in 2.15's
  tests (isinstance through `__class__`): it runs nothing itself; `train`
  records its arguments and, like an Estimator saving at steps 5 and 10,
  calls the saving listeners."""

  def __init__(self, config, model_dir):
    self.config, self.model_dir = config, model_dir
    self.trained, self.evaluated = [], []
    self._step = 0

  @property
  def __class__(self):
    return estimator_rt.Estimator

  def train(self, **kwargs):
    self.trained.append(kwargs)
    listeners = kwargs['saving_listeners'] or ()
    for listener in listeners:
      listener.begin()
    for self._step in (5, 10):
      for listener in listeners:
        listener.after_save(None, self._step)
    for listener in listeners:
      listener.end(None, self._step)

  def latest_checkpoint(self):
    return os.path.join(self.model_dir, f'model.ckpt-{self._step}')

  def evaluate(self, **kwargs):
    self.evaluated.append(kwargs['checkpoint_path'])
    return {'global_step': self._step}


def test_a_stand_in_estimator_gets_215s_cluster_task_procedure(tmp_path):
  """No runtime role for an object standing in for an Estimator: a worker
  starts its task's server then trains (delayed by 2.15's rule), a master
  trains and evaluates each new checkpoint, exporting the one at max_steps
  as the final one."""
  addresses = []
  for _ in range(2):
    with socket.socket() as probe:
      probe.bind(('127.0.0.1', 0))
      addresses.append('127.0.0.1:%d' % probe.getsockname()[1])
  worker_config = _config(
      {'cluster': {'chief': [addresses[0]], 'worker': [addresses[1]]},
       'task': {'type': 'worker', 'index': 0}},
      experimental_max_worker_delay_secs=0)
  worker = _StandInEstimator(worker_config, str(tmp_path))
  hook, extra = _Hook(), _Hook()
  train_spec = training.TrainSpec(lambda: 1, max_steps=10, hooks=[hook])
  assert training._TrainingExecutor(  # pylint: disable=protected-access
      worker, train_spec, None, train_hooks=[extra]).run_worker() == (None, [])
  assert [t['hooks'] for t in worker.trained] == [[hook, extra]]
  with socket.create_connection(('127.0.0.1', int(addresses[1].split(':')[1])),
                                timeout=5):
    pass  # The worker's own server listens.
  delay = stand_in_tasks.worker_delay_secs
  assert delay(worker_config) == 0
  assert delay(worker_config.replace(
      experimental_max_worker_delay_secs=None)) == 5
  assert delay(_config({'cluster': {'chief': [A], 'worker': [B, C, D]},
                        'task': {'type': 'worker', 'index': 2}},
                       experimental_max_worker_delay_secs=12)) == 12
  assert delay(_config({'cluster': {'chief': [A], 'worker': [B]},
                        'task': {'type': 'chief', 'index': 0}})) == 0

  # One master and no other task: no server (2.15 started none).
  master = _StandInEstimator(
      _config({'cluster': {'master': [A]}, 'task': {'type': 'master',
                                                   'index': 0}}),
      str(tmp_path))

  class Exporter(tf.estimator.Exporter):
    name = 'e'
    finals = []

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
      self.finals.append(is_the_final_export)
      return checkpoint_path

  metrics, exports = training._TrainingExecutor(  # pylint: disable=protected-access
      master, train_spec,
      training.EvalSpec(lambda: 1, throttle_secs=0,
                        exporters=[Exporter()])).run_master()
  assert master.evaluated == [os.path.join(str(tmp_path), f'model.ckpt-{s}')
                              for s in (5, 10)]
  assert metrics == {'global_step': 10} and exports == master.evaluated
  assert Exporter.finals == [False, True]


# --- hooks ---------------------------------------------------------------------


def _step_model_fn(features, labels, mode):
  """w = step + 2 after each step (0 before training); EVAL: mean of w."""
  del labels
  step = tf1.train.get_global_step()
  w = tf1.get_variable('w', shape=[], initializer=tf1.zeros_initializer(),
                       dtype=tf.int64)
  if mode == tf.estimator.ModeKeys.TRAIN:
    with tf.control_dependencies([features]):
      step_inc = tf1.assign_add(step, 1)
    with tf.control_dependencies([step_inc]):
      train_op = w.assign(step + 2)
    return tf.estimator.EstimatorSpec(mode, loss=tf.constant(3.),
                                      train_op=train_op)
  with tf.control_dependencies([features]):
    loss = tf.constant(5.)
  return tf.estimator.EstimatorSpec(
      mode, loss=loss, eval_metric_ops={'w': tf1.metrics.mean(w)})


def test_in_memory_evaluator_hook_evaluates_the_live_variables(tmp_path):
  # The graph engine: a SessionRunHook needs a session (this model_fn also
  # runs eagerly, and the eager engine would refuse the hook).
  est = tf.estimator.Estimator(
      _step_model_fn, model_dir=str(tmp_path),
      config=run_config_lib.RunConfig(task_info=None, engine='graph'))
  input_fn = lambda: tf.data.Dataset.range(10)
  hook = tf.estimator.experimental.InMemoryEvaluatorHook(
      est, input_fn, every_n_iter=4, name='live')
  est.train(input_fn, hooks=[hook])
  # Before training, every 4 steps, and at the end.
  assert summaries.read_scalars(est.eval_dir('live'))['w'] == [
      (0, 0.0), (4, 6.0), (8, 10.0), (10, 12.0)]
  # No checkpoint beyond training's own (saved at the end).
  assert M.checkpoint_steps(str(tmp_path)) == [0, 10]


def test_in_memory_evaluator_hook_refusals(tmp_path):
  with pytest.raises(ValueError, match='invalid every_n_iter'):
    tf.estimator.experimental.InMemoryEvaluatorHook(
        tf.estimator.Estimator(_step_model_fn), lambda: None, every_n_iter=0)
  config = _config({'cluster': {'chief': [A], 'ps': [B], 'worker': [C]},
                    'task': {'type': 'chief', 'index': 0}})
  with pytest.raises(ValueError, match='supports only single machine'):
    tf.estimator.experimental.InMemoryEvaluatorHook(
        tf.estimator.Estimator(_step_model_fn, config=config), lambda: None)

  def saver_model_fn(features, labels, mode):
    spec = _step_model_fn(features, labels, mode)
    return spec._replace(scaffold=tf1.train.Scaffold(saver=tf1.train.Saver()))  # pylint: disable=protected-access

  hook = tf.estimator.experimental.InMemoryEvaluatorHook(
      tf.estimator.Estimator(saver_model_fn, model_dir=str(tmp_path)),
      lambda: tf.data.Dataset.range(3))
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match='does not support custom saver'):
      hook.begin()


def test_stop_at_checkpoint_step_hook_reads_the_newest_checkpoint(tmp_path):
  model_dir = str(tmp_path)
  with tf.Graph().as_default():
    step = tf1.train.create_global_step()
    assign_9, assign_10, no_op = step.assign(9), step.assign(10), tf.no_op()
    hook = hooks_lib._StopAtCheckpointStepHook(  # pylint: disable=protected-access
        model_dir=model_dir, last_step=10, wait_after_file_check_secs=0)
    with tf1.train.SingularMonitoredSession(hooks=[hook]) as session:
      session.raw_session().run(assign_9)
      session.run(no_op)  # At step 10, but no checkpoint there yet.
      assert not session.should_stop()
    with tf1.Session() as session:
      session.run(assign_10)
      tf1.train.Saver().save(session, os.path.join(model_dir, 'model.ckpt'),
                             global_step=10)
    with tf1.train.SingularMonitoredSession(hooks=[hook]) as session:
      session.raw_session().run(assign_9)
      session.run(no_op)
      assert session.should_stop()
