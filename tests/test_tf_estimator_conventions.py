"""tf.estimator 2.15's conventions, as programs written for it use them.

Each test writes what a tf.estimator program wrote, through the names of
the compatibility layer (`tf.estimator.X` after estimator_rt.compat's
install()), and checks what tf.estimator 2.15 did: positional arguments,
model_fn and input_fn arguments by name, input_fns returning tensors, a
one-element loss, the global step in every model_fn, v1 strategies,
CheckpointSaverListeners, early stopping hooks, numpy input_fns,
add_metrics, warm starting, TPUEstimator without a TPU, exports with
assets and export_outputs. Programs that disable eager execution run in a
fresh process.
"""

import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt
import estimator_rt.compat
from conftest import REPO_ROOT
from conftest import run_python

estimator_rt.compat.install()
tf1 = tf.compat.v1

X = np.random.RandomState(0).uniform(-1, 1, (64, 3)).astype(np.float32)
Y = (X @ np.array([[1.], [-2.], [0.5]], np.float32) + 0.3).astype(np.float32)


def linear_model_fn(features, labels, mode, params, config):
  """A TF1-style regressor, zero-initialized (deterministic)."""
  del config
  x = features['x'] if isinstance(features, dict) else features
  w = tf1.get_variable('w', [3, 1], initializer=tf1.zeros_initializer())
  b = tf1.get_variable('b', [1], initializer=tf1.zeros_initializer())
  y = tf.matmul(x, w) + b
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(
        mode, predictions={'y': y},
        export_outputs={'out': tf.estimator.export.PredictOutput({'y': y})})
  loss = tf1.losses.mean_squared_error(labels, y)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, predictions={'y': y},
        eval_metric_ops={'mae': tf1.metrics.mean_absolute_error(labels, y)})
  train_op = tf1.train.GradientDescentOptimizer(params.get('lr', 0.1)).minimize(
      loss, global_step=tf1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def numpy_fn(num_epochs=None, shuffle=False, batch_size=16):
  return tf1.estimator.inputs.numpy_input_fn(
      {'x': X}, Y, batch_size=batch_size, num_epochs=num_epochs,
      shuffle=shuffle)


def test_positional_estimator_and_run_config_as_in_2_15(tmp_path):
  config = tf.estimator.RunConfig(
      None, 7, 10, 25, None, tf1.ConfigProto(inter_op_parallelism_threads=2),
      keep_checkpoint_max=2)
  assert (config.tf_random_seed, config.save_summary_steps,
          config.save_checkpoints_steps) == (7, 10, 25)
  assert config.num_worker_replicas == 1 and config.task_id == 0
  assert config.cluster_spec.as_dict() == {} and config.master == ''
  estimator = tf.estimator.Estimator(linear_model_fn, str(tmp_path), config,
                                     {'lr': 0.1})
  estimator.train(numpy_fn(), None, 50)  # hooks=None, steps=50
  assert estimator.latest_checkpoint().endswith('model.ckpt-50')
  assert sorted(os.path.basename(p) for p in glob.glob(
      str(tmp_path / 'model.ckpt-*.index'))) == ['model.ckpt-25.index',
                                                 'model.ckpt-50.index']
  assert estimator.eval_dir('x') == str(tmp_path / 'eval_x')


def test_both_checkpoint_settings_none_save_only_at_the_end(tmp_path):
  config = tf.estimator.RunConfig(save_checkpoints_steps=None,
                                  save_checkpoints_secs=None)
  estimator = tf.estimator.Estimator(linear_model_fn, str(tmp_path), config)
  estimator.train(numpy_fn(), max_steps=30)
  assert [os.path.basename(p) for p in glob.glob(
      str(tmp_path / 'model.ckpt-*.index'))] == ['model.ckpt-30.index']


def test_input_fn_arguments_by_name_and_tensors_returned(tmp_path):
  seen = []

  def input_fn(mode, params, config):
    seen.append((mode, params['lr'], config.model_dir))
    dataset = tf.data.Dataset.from_tensor_slices(({'x': X}, Y)).repeat()
    # TF1's way: the input_fn returns the iterator's tensors.
    return tf1.data.make_one_shot_iterator(dataset.batch(16)).get_next()

  def eval_input_fn(mode):
    assert mode == tf.estimator.ModeKeys.EVAL
    return tf.data.Dataset.from_tensor_slices(({'x': X}, Y)).batch(64)

  estimator = tf.estimator.Estimator(linear_model_fn, str(tmp_path),
                                     params={'lr': 0.1})
  estimator.train(input_fn, steps=200)
  assert ('train', 0.1, str(tmp_path)) in seen
  metrics = estimator.evaluate(eval_input_fn)
  assert metrics['global_step'] == 200
  assert metrics['loss'] < 1e-3


def test_a_one_element_loss_and_the_global_step_in_a_tf2_model_fn(tmp_path):
  steps_seen = []

  def model_fn(features, labels, mode):
    layer = tf.keras.layers.Dense(1)
    y = layer(features['x'])
    step = tf1.train.get_global_step()
    steps_seen.append(step)
    # Shape (None,): a mean per batch, not reduced to a scalar.
    loss = tf.reduce_mean(tf.square(y - labels), axis=[0, 1], keepdims=False)
    loss = tf.reshape(loss, [-1])
    return estimator_rt.EstimatorSpec(
        mode, loss=loss, optimizer=__import__('keras').optimizers.SGD(0.1))

  estimator = estimator_rt.Estimator(model_fn, str(tmp_path))
  estimator.train(lambda: tf.data.Dataset.from_tensor_slices(
      ({'x': X}, Y)).repeat().batch(16), max_steps=20)
  assert estimator.chosen_engine == 'eager'
  assert steps_seen and all(s is not None for s in steps_seen)
  assert estimator.latest_checkpoint().endswith('model.ckpt-20')


def test_v1_mirrored_strategy_and_a_stop_at_step_hook(tmp_path):
  config = tf.estimator.RunConfig(
      train_distribute=tf1.distribute.MirroredStrategy())
  estimator = tf.estimator.Estimator(linear_model_fn, str(tmp_path), config,
                                     {'lr': 0.1})
  estimator.train(numpy_fn(batch_size=8),
                  hooks=[tf.estimator.StopAtStepHook(num_steps=12)])
  assert estimator.latest_checkpoint().endswith('model.ckpt-12')


def test_a_stop_at_step_hook_in_the_eager_engine(tmp_path):
  import keras  # pylint: disable=g-import-not-at-top

  def model_fn(features, labels, mode):
    y = keras.layers.Dense(1)(features['x'])
    return estimator_rt.EstimatorSpec(
        mode, loss=tf.reduce_mean(tf.square(y - labels)),
        optimizer=keras.optimizers.SGD(0.1))

  estimator = tf.estimator.Estimator(model_fn, str(tmp_path))
  estimator.train(numpy_fn(), hooks=[tf.estimator.StopAtStepHook(last_step=9),
                                     tf.estimator.NanTensorHook(tf.constant(0.))])
  assert estimator.chosen_engine == 'eager'
  assert estimator.latest_checkpoint().endswith('model.ckpt-9')
  with pytest.raises(estimator_rt.UserInputError, match='SessionRunHook'):
    estimator.train(numpy_fn(), max_steps=20,
                    hooks=[tf.estimator.LoggingTensorHook({'x': 'x'}, 1)])


class _Listener(tf.estimator.CheckpointSaverListener):

  def __init__(self):
    self.calls = []

  def begin(self):
    self.calls.append('begin')

  def before_save(self, session, global_step_value):
    self.calls.append(('before', global_step_value))

  def after_save(self, session, global_step_value):
    self.calls.append(('after', global_step_value))

  def end(self, session, global_step_value):
    self.calls.append(('end', global_step_value))


def test_checkpoint_saver_listeners_in_train_spec(tmp_path):
  listener = _Listener()
  estimator = tf.estimator.Estimator(
      linear_model_fn, str(tmp_path),
      tf.estimator.RunConfig(save_checkpoints_steps=10))
  tf.estimator.train_and_evaluate(
      estimator,
      tf.estimator.TrainSpec(numpy_fn(), max_steps=20,
                             saving_listeners=[listener]),
      tf.estimator.EvalSpec(numpy_fn(num_epochs=1), steps=None,
                            throttle_secs=0))
  # tf.estimator 2.15's calls, step 0's save included (its
  # CheckpointSaverHook saved when the session was made).
  assert listener.calls == ['begin', ('before', 0), ('after', 0),
                            ('before', 10), ('after', 10),
                            ('before', 20), ('after', 20), ('end', 20)]


def test_a_variable_a_hook_creates_in_begin_is_checkpointed(tmp_path):
  """A SessionRunHook may create variables in `begin` (AdaNet's do): they
  are initialized, and saved with the model's, as 2.15's Saver, built when
  the session's Scaffold was finalized, saved them."""

  class Counting(tf.compat.v1.train.SessionRunHook):

    def begin(self):
      self.variable = tf1.get_variable('hook_made', initializer=3.0)

    def before_run(self, run_context):
      return tf.compat.v1.train.SessionRunArgs(self.variable)

    def after_run(self, run_context, run_values):
      self.seen = run_values.results

  hook = Counting()
  estimator = tf.estimator.Estimator(linear_model_fn, str(tmp_path))
  estimator.train(numpy_fn(), steps=2, hooks=[hook])
  assert hook.seen == 3.0
  assert 'hook_made' in estimator.get_variable_names()


def test_chief_hooks_begin_first_and_their_variables_are_saved(tmp_path):
  """2.15's MonitoredTrainingSession called the model_fn's chief hooks'
  `begin` before the other hooks': a Saver a training hook builds in its
  `begin` (AdaNet's _OverwriteCheckpointHook) sees the variables a chief
  hook created in its own (an AdaNet builder's chief hooks)."""
  order = []

  class Named(tf.compat.v1.train.SessionRunHook):

    def __init__(self, name, *, creates=None, saves=False):
      self.name, self.creates, self.saves = name, creates, saves

    def begin(self):
      order.append(self.name)
      if self.creates:
        tf1.get_variable(self.creates, initializer=0.0)
      if self.saves:
        saver = tf1.train.Saver(sharded=True)
        self.saved = sorted(v.op.name for v in saver._var_list)  # pylint: disable=protected-access

  saving = Named('training_hook', saves=True)

  def model_fn(features, labels, mode, params):
    spec = linear_model_fn(features, labels, mode, params, None)
    return spec._replace(
        training_hooks=[saving],
        training_chief_hooks=[Named('chief_hook', creates='chief_made')])

  estimator = tf.estimator.Estimator(model_fn, str(tmp_path))
  estimator.train(numpy_fn(), max_steps=2, hooks=[Named('caller_hook')])
  assert order == ['chief_hook', 'caller_hook', 'training_hook']
  assert 'chief_made' in saving.saved, saving.saved


def _step_setting_model_fn(hook):
  """A model_fn whose train_op leaves the global step alone, and whose
  training hook `hook` sets it (AdaNet's _GlobalStepSetterHook)."""

  def model_fn(features, labels, mode, params):
    spec = linear_model_fn(features, labels, mode, params, None)
    loss = spec.loss
    train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
    return spec._replace(train_op=train_op, training_hooks=[hook])

  return model_fn


class _StepSetter(tf.compat.v1.train.SessionRunHook):
  """Sets the global step to runs // `divisor` after each run; asks to
  stop after `stop_after` runs (None: never)."""

  def __init__(self, divisor, stop_after=None):
    self.divisor, self.stop_after = divisor, stop_after

  def begin(self):
    self.runs = 0
    self.value = tf1.placeholder(tf.int64, [])
    self.assign = tf1.train.get_global_step().assign(self.value)

  def after_run(self, run_context, run_values):
    self.runs += 1
    run_context.session.run(self.assign,
                            {self.value: self.runs // self.divisor})
    if self.stop_after and self.runs >= self.stop_after:
      run_context.request_stop()


def test_a_hook_that_sets_the_global_step_names_the_checkpoints(tmp_path):
  """The global step a hook sets after a run is the one training ends at,
  and names and fills the last checkpoint, as 2.15's StopAtStepHook and
  CheckpointSaverHook read it after the run; at an equal step, the
  checkpoint the state file names newest is the latest (AdaNet's
  increment.ckpt-N). 2.15's own figures: model.ckpt-3 holding 3, then
  other.ckpt-1; model.ckpt-5 holding 5."""
  estimator = tf.estimator.Estimator(
      _step_setting_model_fn(_StepSetter(3, stop_after=10)),
      str(tmp_path / 'stopped'))
  estimator.train(numpy_fn(), max_steps=100)
  last = estimator.latest_checkpoint()
  assert os.path.basename(last) == 'model.ckpt-3'
  assert tf.train.load_checkpoint(last).get_tensor('global_step') == 3
  with tf.Graph().as_default():
    step = tf1.train.get_or_create_global_step()
    tf1.get_variable('w', [3, 1])
    tf1.get_variable('b', [1])
    with tf1.Session() as session:
      session.run(tf1.global_variables_initializer())
      session.run(step.assign(3))
      saver = tf1.train.Saver()
      saver.recover_last_checkpoints([last])
      saver.save(session, str(tmp_path / 'stopped' / 'other.ckpt'),
                 global_step=1)
  assert os.path.basename(estimator.latest_checkpoint()) == 'other.ckpt-1'

  # max_steps reached by the step the hook set (2.15 took one run more:
  # its StopAtStepHook read the step before the model_fn's hook set it).
  setter = _StepSetter(2)
  estimator = tf.estimator.Estimator(_step_setting_model_fn(setter),
                                     str(tmp_path / 'max_steps'))
  estimator.train(numpy_fn(), max_steps=5)
  last = estimator.latest_checkpoint()
  assert os.path.basename(last) == 'model.ckpt-5'
  assert tf.train.load_checkpoint(last).get_tensor('global_step') == 5
  assert setter.runs == 10


def test_training_input_that_ends_at_once_evaluates_step_0(tmp_path):
  """A local train_and_evaluate whose training input ends before the first
  step (TF-Ranking's tests read a file that is not there) evaluates the
  step-0 checkpoint as its final one, as 2.15 did: ({'loss': 1.0,
  'global_step': 0}, []) on both sides (2.15 measured by hand)."""
  ones = np.ones([4, 3], np.float32), np.ones([4, 1], np.float32)
  empty = lambda: tf.data.Dataset.from_tensor_slices(ones).take(0).batch(2)
  full = lambda: tf.data.Dataset.from_tensor_slices(
      ({'x': ones[0]}, ones[1])).batch(2)
  estimator = tf.estimator.Estimator(linear_model_fn, str(tmp_path))
  metrics, exports = tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(
          lambda: empty().map(lambda x, y: ({'x': x}, y)), max_steps=5),
      tf.estimator.EvalSpec(full, steps=None, throttle_secs=0))
  assert (metrics['global_step'], exports) == (0, [])
  assert metrics['loss'] == pytest.approx(1.0)


def test_early_stopping_hook_stops_on_its_predicate(tmp_path):
  estimator = tf.estimator.Estimator(
      linear_model_fn, str(tmp_path),
      tf.estimator.RunConfig(save_checkpoints_steps=10))
  hook = tf.estimator.experimental.stop_if_lower_hook(
      estimator, 'loss', 0.5, run_every_secs=None, run_every_steps=10)
  tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(numpy_fn(), max_steps=1000,
                                        hooks=[hook]),
      tf.estimator.EvalSpec(numpy_fn(num_epochs=1), steps=None,
                            throttle_secs=0))
  stopped = int(estimator.latest_checkpoint().rsplit('-', 1)[1])
  assert stopped < 1000
  evals = tf.estimator.experimental.make_early_stopping_hook  # Resolves.
  assert callable(evals)


def test_add_metrics_and_warm_start_settings(tmp_path):
  base = tf.estimator.Estimator(linear_model_fn, str(tmp_path / 'a'),
                                params={'lr': 0.1})
  base.train(numpy_fn(), max_steps=100)

  def rmse(labels, predictions):
    return {'rmse': tf1.metrics.root_mean_squared_error(labels,
                                                        predictions['y'])}

  with_rmse = tf.estimator.add_metrics(base, rmse)
  metrics = with_rmse.evaluate(numpy_fn(num_epochs=1))
  assert metrics['rmse'] == pytest.approx(np.sqrt(metrics['loss']), rel=1e-4)
  warm = tf.estimator.Estimator(
      linear_model_fn, str(tmp_path / 'b'), params={'lr': 0.0},
      warm_start_from=tf.estimator.WarmStartSettings(
          str(tmp_path / 'a'), vars_to_warm_start=['w']))
  warm.train(numpy_fn(), max_steps=1)
  np.testing.assert_allclose(warm.get_variable_value('w'),
                             base.get_variable_value('w'))
  assert warm.get_variable_value('b') == pytest.approx([0.0])


def test_tpu_estimator_without_a_tpu(tmp_path):
  seen = []

  def input_fn(params):
    seen.append(params['batch_size'])
    return tf.data.Dataset.from_tensor_slices(({'x': X}, Y)).repeat().batch(
        params['batch_size'], drop_remainder=True)

  def model_fn(features, labels, mode, params):
    spec = linear_model_fn(features, labels, mode, {'lr': 0.1}, None)
    if mode == tf.estimator.ModeKeys.EVAL:
      return tf1.estimator.tpu.TPUEstimatorSpec(
          mode, loss=spec.loss, eval_metrics=(
              lambda labels, x: {'count': tf1.metrics.mean(x)},
              [labels, features['x'][:, 0]]))
    assert params['use_tpu'] is False
    return tf1.estimator.tpu.TPUEstimatorSpec(mode, loss=spec.loss,
                                              train_op=spec.train_op)

  estimator = tf1.estimator.tpu.TPUEstimator(
      model_fn=model_fn, model_dir=str(tmp_path), use_tpu=False,
      config=tf1.estimator.tpu.RunConfig(
          tpu_config=tf1.estimator.tpu.TPUConfig(iterations_per_loop=10)),
      train_batch_size=16, eval_batch_size=8)
  estimator.train(input_fn, max_steps=20)
  metrics = estimator.evaluate(input_fn, steps=2)
  assert seen[0] == 16 and seen[-1] == 8
  assert metrics['global_step'] == 20 and 'count' in metrics
  # use_tpu=True is built (validated as tf.estimator validated it) and
  # refused when a TPU program would run, before anything is written.
  on_tpu = tf1.estimator.tpu.TPUEstimator(
      model_fn=model_fn, model_dir=str(tmp_path / 'tpu'), use_tpu=True,
      config=tf1.estimator.tpu.RunConfig(), train_batch_size=16)
  with pytest.raises(estimator_rt.UserInputError, match='use_tpu=False'):
    on_tpu.train(input_fn, max_steps=20)
  assert not (tmp_path / 'tpu').exists() or not os.listdir(tmp_path / 'tpu')


def test_export_with_export_outputs_assets_and_text(tmp_path):
  estimator = tf.estimator.Estimator(linear_model_fn, str(tmp_path / 'm'))
  estimator.train(numpy_fn(), max_steps=10)
  asset = tmp_path / 'vocab.txt'
  asset.write_text('a\nb\n')
  receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
      {'x': tf.zeros([1, 3])})
  export_dir = estimator.export_saved_model(
      str(tmp_path / 'export'), receiver,
      assets_extra={'vocab/vocab.txt': str(asset)}, as_text=True).decode()
  assert open(os.path.join(export_dir, 'assets.extra', 'vocab',
                           'vocab.txt')).read() == 'a\nb\n'
  assert os.path.exists(os.path.join(export_dir, 'saved_model.pbtxt'))
  served = subprocess.run(
      [sys.executable, '-c',
       'import json, sys, tensorflow as tf\n'
       'f = tf.saved_model.load(sys.argv[1]).signatures["out"]\n'
       'x = tf.constant([[1., 1., 1.]])\n'
       'print(json.dumps(f(x=x)["y"].numpy().tolist()))', export_dir],
      capture_output=True, text=True, timeout=120,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert served.returncode == 0, served.stderr[-2000:]
  want = estimator.predict(lambda: tf.data.Dataset.from_tensor_slices(
      {'x': np.ones((1, 3), np.float32)}).batch(1))
  assert json.loads(served.stdout.splitlines()[-1])[0][0] == pytest.approx(
      float(next(want)['y'][0]), abs=1e-5)


_GRAPH_MODE_PROGRAM = '''
import sys
import numpy as np
import tensorflow as tf
tf.compat.v1.disable_eager_execution()

def model_fn(features, labels, mode):
  y = tf.compat.v1.layers.dense(features['x'], 1,
                                kernel_initializer=tf.compat.v1.zeros_initializer())
  loss = tf.compat.v1.losses.mean_squared_error(labels, y)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

x = np.random.RandomState(0).rand(32, 2).astype(np.float32)
input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
    {'x': x}, x.sum(1, keepdims=True), batch_size=8, num_epochs=None,
    shuffle=False)
estimator = tf.estimator.Estimator(model_fn, sys.argv[1])
estimator.train(input_fn, steps=30)
print('global_step', estimator.get_variable_value('global_step'))
sys.exit(7)
'''


def test_a_program_that_disables_eager_execution_runs_unchanged(tmp_path):
  program = tmp_path / 'program.py'
  program.write_text(_GRAPH_MODE_PROGRAM)
  result = subprocess.run(
      [sys.executable, '-m', 'estimator_rt.compat', str(program),
       str(tmp_path / 'm')],
      capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
      env=dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 7, result.stderr[-3000:]  # The program's code.
  assert 'global_step 30' in result.stdout


@pytest.mark.parametrize('shuffle', [False, True])
def test_numpy_input_fn_over_large_arrays_keeps_them_out_of_the_graph(
    monkeypatch, shuffle):
  """In a graph (the graph engine), arrays past
  numpy_io.LARGEST_GRAPH_CONSTANT_BYTES are gathered by NumPy a batch at a
  time, not embedded as constants (an MNIST-sized train_and_evaluate of
  TensorFlow's migration guide took 44 s that way, 6 s this way): the same
  batches as the constants give, unshuffled; shuffled, the same examples."""
  from estimator_rt.inputs import numpy_io  # pylint: disable=g-import-not-at-top
  rng = np.random.RandomState(0)
  x = {'a': rng.rand(100, 3), 'b': np.arange(100, dtype=np.int32)}
  y = rng.randint(0, 5, 100).astype(np.int64)

  def batches(largest_constant):
    monkeypatch.setattr(numpy_io, 'LARGEST_GRAPH_CONSTANT_BYTES',
                        largest_constant)
    input_fn = tf1.estimator.inputs.numpy_input_fn(
        x, y, batch_size=16, num_epochs=2, shuffle=shuffle)
    with tf.Graph().as_default() as graph:
      tf1.set_random_seed(1)
      # Called in a graph, it returns the next batch's tensors, as 2.15's.
      features, labels = input_fn()
      assert features['a'].shape.as_list() == [None, 3]
      largest = max(op.outputs[0].shape.num_elements() or 0
                    for op in graph.get_operations() if op.type == 'Const')
      read = []
      with tf1.Session() as session:
        while True:
          try:
            read.append(session.run((features, labels)))
          except tf.errors.OutOfRangeError:
            return largest, read

  largest_constant, as_constants = batches(1 << 30)
  largest_gathered, gathered = batches(1000)
  assert largest_constant >= 300 and largest_gathered < 100
  assert [len(labels) for _, labels in gathered] == (
      [len(labels) for _, labels in as_constants])
  assert len(gathered) == 13  # 200 examples by 16, the last batch of 8.

  def examples(read):
    return sorted((tuple(f['a'][i]), int(f['b'][i]), int(labels[i]))
                  for f, labels in read for i in range(len(labels)))

  assert examples(gathered) == examples(as_constants)
  if not shuffle:
    for (f1, l1), (f2, l2) in zip(gathered, as_constants):
      np.testing.assert_array_equal(f1['a'], f2['a'])
      np.testing.assert_array_equal(f1['b'], f2['b'])
      np.testing.assert_array_equal(l1, l2)


_LAYERS_BEFORE_ANY_ESTIMATOR_NAME = '''
import sys
if sys.argv[1] == 'tensorflow_first':
  import tensorflow as tf
  import estimator_rt  # Nothing of it used yet.
else:
  import estimator_rt  # Nothing of it used yet; TensorFlow not imported.
  import tensorflow as tf
tf1 = tf.compat.v1

with tf.Graph().as_default():
  x = tf1.placeholder(tf.float32, [None, 3])
  print('dense', tf1.layers.dense(x, 2).shape.as_list())
print('tf.keras', tf.keras.layers.Dense.__module__.split('.')[0])
'''


@pytest.mark.parametrize('first', ['tensorflow_first', 'estimator_rt_first'])
def test_tf1_layers_right_after_import_estimator_rt(tmp_path, first):
  """A module that imports TensorFlow and estimator_rt, in either order,
  gets tf_keras' legacy `tf.compat.v1.layers` at once, before any
  estimator_rt name is used (they were Keras 3's, which refuses them, until
  then), and `tf.keras` stays Keras 3. In a fresh process, as users run
  it."""
  program = tmp_path / 'program.py'
  program.write_text(_LAYERS_BEFORE_ANY_ESTIMATOR_NAME)
  result = run_python([str(program), first], timeout=120, cwd=str(tmp_path),
                      env={'TF_CPP_MIN_LOG_LEVEL': '2',
                           'TF_USE_LEGACY_KERAS': None})
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'dense [None, 2]' in result.stdout
  assert 'tf.keras keras' in result.stdout


_REPEATED_LAYER_SWAPS_PROGRAM = '''
import json
import tensorflow as tf
tf1 = tf.compat.v1

def graph_layer():
  with tf.Graph().as_default():
    x = tf1.placeholder(tf.float32, [None, 3])
    layer = tf1.layers.Dense(2)
    layer(x)
    return type(layer)

from tf_keras.src.engine import base_layer_v1
first = graph_layer()
bases = [(c, c.__bases__) for c in first.__mro__]
again = graph_layer()
kept = all(c.__bases__ is b for c, b in bases)
eager = tf1.layers.Dense(2)  # Eager: tf_keras swaps to its v2 bases.
eager_v1 = issubclass(type(eager), base_layer_v1.Layer)
back = graph_layer()
print(json.dumps({
    'same_class': first is again is back,
    'graph_v1': [issubclass(c, base_layer_v1.Layer) for c in (first, back)],
    'eager_v1': eager_v1, 'bases_kept': kept,
    'skips': getattr(__import__('tf_keras.src.utils.version_utils',
                                fromlist=['x']).swap_class,
                     'estimator_rt_skips_repeats', False)}))
'''


def test_tf1_layers_are_not_swapped_again_when_already_swapped(tmp_path):
  """tf_keras swaps a layer's class to its v1 or v2 bases at each
  construction; a repeat of the last swap on the hierarchy it left is
  skipped (the bases tuples are the same objects, not assigned again),
  while a change of mode still swaps: v1 bases in a graph, v2 eagerly, v1
  again. In a fresh process, with the installed hook."""
  program = tmp_path / 'program.py'
  program.write_text(_REPEATED_LAYER_SWAPS_PROGRAM)
  result = run_python([str(program)], timeout=120, cwd=str(tmp_path),
                      env={'TF_CPP_MIN_LOG_LEVEL': '2',
                           'TF_USE_LEGACY_KERAS': None})
  assert result.returncode == 0, result.stderr[-3000:]
  assert json.loads(result.stdout.splitlines()[-1]) == {
      'same_class': True, 'graph_v1': [True, True], 'eager_v1': False,
      'bases_kept': True, 'skips': True}


_SESSION_THREADS_PROGRAM = '''
import sys
import tensorflow as tf
tf1 = tf.compat.v1
if sys.argv[2] == 'eager_op_first':
  print('eager', (tf.constant(1.0) + 1).numpy())

def model_fn(features, labels, mode):
  w = tf1.get_variable('w', [3, 1])
  loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
  train_op = tf1.train.AdamOptimizer(0.1).minimize(
      loss, global_step=tf1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

def input_fn():
  return tf.data.Dataset.from_tensors(
      (tf.ones([4, 3]), tf.ones([4, 1]))).repeat()

config = tf.estimator.RunConfig(session_config=tf1.ConfigProto(
    intra_op_parallelism_threads=1, inter_op_parallelism_threads=2))
estimator = tf.estimator.Estimator(model_fn, model_dir=sys.argv[1],
                                   config=config)
estimator.train(input_fn, max_steps=3)
print('step', estimator.get_variable_value('global_step'),
      'intra', tf.config.threading.get_intra_op_parallelism_threads(),
      'inter', tf.config.threading.get_inter_op_parallelism_threads())
'''


@pytest.mark.parametrize('start', ['estimator_first', 'eager_op_first'])
def test_session_config_thread_counts_size_the_process_pools(tmp_path, start):
  """A RunConfig's session_config sizes TensorFlow's thread pools, as the
  session tf.estimator 2.15 made with it did (the runtime starts the eager
  context first, whose pools sessions then share, so the session's own
  setting would be ignored). A program that ran an op before making the
  Estimator gets one warning naming the fields, and trains on. In a fresh
  process, as users run it."""
  program = tmp_path / 'program.py'
  program.write_text(_SESSION_THREADS_PROGRAM)
  result = run_python(
      ['-m', 'estimator_rt.compat', str(program), str(tmp_path / 'm'), start],
      env={'TF_CPP_MIN_LOG_LEVEL': '2'})
  assert result.returncode == 0, result.stderr[-3000:]
  warnings = [line for line in result.stderr.splitlines()
              if 'asks for intra_op_parallelism_threads=1, '
                 'inter_op_parallelism_threads=2' in line]
  if start == 'estimator_first':
    assert 'step 3 intra 1 inter 2' in result.stdout
    assert not warnings
  else:
    assert 'step 3 intra 0 inter 0' in result.stdout
    assert len(warnings) == 1, result.stderr[-3000:]
