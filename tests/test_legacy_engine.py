"""TF1-style model_fns (tf.compat.v1) run unchanged in the graph engine.

The five programs in tests/legacy_programs/ are tf.estimator programs with
`tf.estimator` replaced by `estimator_rt` and nothing else changed. Each
trains, evaluates, predicts and exports; the export is loaded and served in
a fresh process (run_program.py). Where tf.estimator 2.15's own numbers are
known (tests/legacy_programs/README.md, tests/data/tf_estimator_215/) the
runtime must give the same ones; metrics are also checked against a hand
computation from the trained weights or the predictions.
"""

import glob
import re
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt
from estimator_rt.training import engine_choice
from estimator_rt.cluster import server as server_lib
from estimator_rt.core import summaries

from _models import checkpoint_steps
from _models import SessionRunCounter

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS_DIR = os.path.join(HERE, 'legacy_programs')
FIXTURES = os.path.join(HERE, 'data', 'tf_estimator_215')
RUNNER = os.path.join(PROGRAMS_DIR, 'run_program.py')
REPO = os.path.dirname(HERE)

if PROGRAMS_DIR not in sys.path:
  sys.path.insert(0, PROGRAMS_DIR)


def program(name):
  return importlib.import_module(name)


def run_program(name, tmp_path, *extra):
  """Runs a program through run_program.py in a fresh process."""
  model_dir = str(tmp_path / name)
  result = subprocess.run(
      [sys.executable, RUNNER, name, '--model_dir', model_dir, *extra],
      capture_output=True, text=True, timeout=600, cwd=REPO,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  lines = [l for l in result.stdout.splitlines()
           if l.startswith(('RESULT ', 'FAILED '))]
  assert result.returncode == 0 and lines and lines[-1].startswith('RESULT'), (
      result.stdout[-2000:] + result.stderr[-4000:])
  return json.loads(lines[-1][len('RESULT '):])


def fixture_json():
  with open(os.path.join(FIXTURES, 'fixture.json')) as f:
    return json.load(f)['model_dirs']


# ------------------------------------------------------ whole programs
def test_seed_readme_example_trains_counts_its_steps_and_serves(tmp_path):
  result = run_program('seed_readme', tmp_path)
  # minimize(loss) has no global_step: the runtime counts the 100 steps
  # (tf.estimator left the step at 0 and evaluated untrained weights).
  assert result['eval']['global_step'] == 100
  assert result['eval']['loss'] < 1e-6  # Every example is x=1, y=1.
  assert [p['logits'] for p in result['predictions']] == [[1.0]] * 3
  served = result['served']['serving_default']['logits']
  assert served[0] == pytest.approx([1.0], abs=1e-5)
  assert result['served']['signatures'] == ['serving_default']


def test_tf1_classifier_gives_tf_estimator_215_numbers(tmp_path):
  result = run_program('tf1_classifier', tmp_path)
  # tf.estimator 2.15 on the same program (tests/legacy_programs/README.md).
  assert result['eval']['global_step'] == 200
  assert result['eval']['accuracy'] == pytest.approx(0.953333, abs=1e-6)
  assert result['eval']['loss'] == pytest.approx(0.131565, abs=1e-5)
  first = result['predictions'][0]
  assert first['class_ids'] == 1
  assert first['probabilities'] == pytest.approx(
      [0.111466, 0.811731, 0.076802], abs=1e-5)
  served = result['served']['serving_default']
  assert served['class_ids'] == [p['class_ids']
                                 for p in result['predictions'][:2]]
  assert served['probabilities'][0] == pytest.approx(
      first['probabilities'], abs=1e-5)


def test_keras_layers_with_a_v1_optimizer(tmp_path):
  result = run_program('keras_layers_v1_optimizer', tmp_path)
  assert result['eval']['global_step'] == 300
  assert result['eval']['loss'] < 0.05
  served = result['served']['serving_default']
  assert served['class'] == [p['class'] for p in result['predictions'][:2]]
  assert served['logits'][0] == pytest.approx(
      result['predictions'][0]['logits'], abs=1e-5)


def test_feature_columns_model_serves_parsed_examples(tmp_path):
  result = run_program('feature_columns_iris', tmp_path)
  assert result['eval']['global_step'] == 300
  assert result['eval']['accuracy'] > 0.9
  served = result['served']['serving_default']
  assert served['class_ids'] == [p['class_ids']
                                 for p in result['predictions'][:2]]
  assert served['probabilities'][1] == pytest.approx(
      result['predictions'][1]['probabilities'], abs=1e-5)


def test_hooks_scaffold_summaries_and_export_outputs(tmp_path):
  result = run_program('hooks_and_scaffold', tmp_path)
  train_hook = result['train_hook']
  # The SessionRunHook saw every step, the Scaffold's init_fn set zero
  # weights (first loss = the hand computation), and the loss fell.
  assert train_hook['runs'] == 200
  # The hook reads the global step in the session run that increments it,
  # with no order between the two (as under tf.estimator): each read is the
  # step before or after that run's increment.
  assert train_hook['first_step'] in (0, 1)
  assert train_hook['last_step'] in (199, 200)
  assert train_hook['first_loss'] == pytest.approx(
      result['first_loss_by_hand'], rel=1e-5)
  assert train_hook['last_loss'] < 0.01
  assert result['eval_hook']['runs'] == 4  # 64 examples, batch 16.
  assert result['eval_hook']['first_step'] == 200
  # The Scaffold's Saver(max_to_keep=2) beats keep_checkpoint_max=1.
  assert result['checkpoints_kept'] == ['model.ckpt-150', 'model.ckpt-200']
  assert {'bias_value', 'mean_absolute_error', 'loss',
          'global_step/sec'} <= set(result['summary_tags'])
  assert result['served']['signatures'] == ['serving_default', 'with_input']
  # Same numbers as tf.estimator 2.15 (tests/legacy_programs/README.md).
  assert result['eval']['mae'] == pytest.approx(0.039971, abs=1e-5)
  assert result['weights'] == pytest.approx([2.999215, -2.001963, 0.492551],
                                            abs=1e-5)


# ------------------------------------------- metrics by hand, in-process
def test_eval_metrics_match_a_hand_computation(tmp_path):
  hooks = program('hooks_and_scaffold')
  classifier_program = program('tf1_classifier')

  # Mean absolute error and mean-of-batches loss from the trained weights.
  hooks.main(str(tmp_path / 'e'), train_steps=60)
  estimator = estimator_rt.Estimator(hooks.model_fn,
                                     model_dir=str(tmp_path / 'e'))
  metrics = estimator.evaluate(hooks.eval_input_fn)
  weights = estimator.get_variable_value('weights')
  bias = estimator.get_variable_value('bias')
  x, y = hooks.EVAL_DATA
  predicted = x @ weights + bias
  assert metrics['mae'] == pytest.approx(
      float(np.mean(np.abs(predicted - y))), rel=1e-5)
  batch_losses = [np.mean((predicted[i:i + 16] - y[i:i + 16]) ** 2)
                  for i in range(0, len(y), 16)]
  assert metrics['loss'] == pytest.approx(float(np.mean(batch_losses)),
                                          rel=1e-5)

  # Accuracy from every prediction of the eval set.
  classifier = classifier_program.make_estimator(str(tmp_path / 'b'))
  classifier.train(classifier_program.train_input_fn, max_steps=50)
  metrics = classifier.evaluate(classifier_program.eval_input_fn)
  features, labels = classifier_program.EVAL_DATA

  def all_eval_features(params):
    return tf.data.Dataset.from_tensor_slices({'x': features}).batch(
        params['batch_size'])

  predicted = [p['class_ids'] for p in classifier.predict(all_eval_features)]
  assert len(predicted) == len(labels)
  assert metrics['accuracy'] == pytest.approx(
      float(np.mean(np.array(predicted) == labels)), abs=1e-6)


# ---------------------------------------------- tf.estimator 2.15 model_dirs
def test_tf_estimator_215_model_dir_resumes_and_evaluates(tmp_path):
  expected = fixture_json()['tf1_classifier']
  model_dir = str(tmp_path / 'from_215')
  shutil.copytree(os.path.join(FIXTURES, 'tf1_classifier'), model_dir)
  classifier_program = program('tf1_classifier')
  classifier = classifier_program.make_estimator(model_dir)
  assert classifier.latest_checkpoint().endswith('model.ckpt-20')
  metrics = classifier.evaluate(classifier_program.eval_input_fn)
  for key, value in expected['eval_metrics'].items():
    assert metrics[key] == pytest.approx(value, abs=1e-5), key
  classifier.train(classifier_program.train_input_fn, max_steps=40)
  assert classifier.latest_checkpoint().endswith('model.ckpt-40')
  metrics = classifier.evaluate(classifier_program.eval_input_fn)
  # tf.estimator 2.15 continued the same copy to step 40 and got these.
  for key, value in expected['continued_eval_metrics'].items():
    assert metrics[key] == pytest.approx(value, abs=1e-5), key


def test_tf_estimator_215_seed_readme_checkpoint_evaluates(tmp_path):
  expected = fixture_json()['seed_readme']
  model_dir = str(tmp_path / 'seed')
  shutil.copytree(os.path.join(FIXTURES, 'seed_readme'), model_dir)
  seed = program('seed_readme')
  estimator = seed.make_estimator(model_dir)
  metrics = estimator.evaluate(seed.input_fn)
  assert metrics['global_step'] == 0
  assert metrics['loss'] == pytest.approx(expected['loss_by_hand'], abs=1e-5)


# --------------------------------------------------- the engine rule
def _keras_model_fn(features, labels, mode):
  layer = tf.keras.layers.Dense(1)
  predictions = layer(features)
  if mode == estimator_rt.ModeKeys.PREDICT:
    return estimator_rt.EstimatorSpec(mode, predictions=predictions)
  loss = tf.reduce_mean(tf.square(predictions - labels))
  return estimator_rt.EstimatorSpec(
      mode, loss=loss, optimizer=tf.keras.optimizers.SGD(0.1))


def _tf1_model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable('w', [1, 1])
  predictions = tf.matmul(features, w)
  if mode == estimator_rt.ModeKeys.PREDICT:
    return estimator_rt.EstimatorSpec(mode, predictions=predictions)
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return estimator_rt.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
  x = np.arange(8, dtype=np.float32).reshape(8, 1) / 8
  return tf.data.Dataset.from_tensor_slices((x, 2 * x)).repeat().batch(4)


class _SessionConfigSeen(tf.compat.v1.train.SessionRunHook):

  def __init__(self):
    self.rewrite_options = None

  def after_create_session(self, session, coord):
    del coord
    self.rewrite_options = session._config.graph_options.rewrite_options  # pylint: disable=protected-access


def test_the_graph_engine_leaves_out_grappler_passes_and_users_options_win(
    tmp_path):
  """The training session runs one Grappler round without the memory and
  layout optimizers (engine._lean_grappler); the rewrite options of
  RunConfig.session_config win over that, field by field."""
  rewriter = tf.compat.v1.ConfigProto().graph_options.rewrite_options
  seen = _SessionConfigSeen()
  estimator_rt.Estimator(_tf1_model_fn, model_dir=str(tmp_path / 'a')).train(
      _input_fn, max_steps=2, hooks=[seen])
  assert seen.rewrite_options.meta_optimizer_iterations == rewriter.ONE
  assert seen.rewrite_options.layout_optimizer == rewriter.OFF
  assert seen.rewrite_options.memory_optimization == rewriter.NO_MEM_OPT
  user = tf.compat.v1.ConfigProto()
  user.graph_options.rewrite_options.meta_optimizer_iterations = rewriter.TWO
  user.graph_options.rewrite_options.constant_folding = rewriter.OFF
  seen = _SessionConfigSeen()
  estimator_rt.Estimator(
      _tf1_model_fn, model_dir=str(tmp_path / 'b'),
      config=estimator_rt.RunConfig(session_config=user)).train(
          _input_fn, max_steps=2, hooks=[seen])
  assert seen.rewrite_options.meta_optimizer_iterations == rewriter.TWO
  assert seen.rewrite_options.constant_folding == rewriter.OFF
  assert seen.rewrite_options.layout_optimizer == rewriter.OFF


def test_the_graph_engine_saves_summarizes_and_notifies_on_the_exact_step(
    tmp_path):
  """The shared training loop gives the graph engine what the eager one
  had: loops cut so that saves and summaries land on their exact step
  (2.15's: see test_observables.py)
  whatever steps_per_loop is, a listener called after every save (the last
  one included), the controller's log line and scalars."""
  model_dir = str(tmp_path / 'm')
  heard = []
  estimator = estimator_rt.Estimator(
      _tf1_model_fn, model_dir=model_dir, config=estimator_rt.RunConfig(
          save_checkpoints_steps=30, save_summary_steps=20, steps_per_loop=7,
          keep_checkpoint_max=0, log_step_count_steps=50))
  estimator.train(_input_fn, max_steps=100,
                  saving_listeners=[lambda path, step: heard.append(step)])
  assert estimator.chosen_engine == engine_choice.GRAPH
  assert checkpoint_steps(model_dir) == [0, 30, 60, 90, 100]
  assert heard == [0, 30, 60, 90, 100]
  scalars = summaries.read_scalars(model_dir)
  # 2.15's steps: the summaries at the first step, then every
  # save_summary_steps; global_step/sec every log_step_count_steps.
  assert [step for step, _ in scalars['loss']] == [1, 21, 41, 61, 81]
  assert [step for step, _ in scalars['global_step/sec']] == [51]
  losses = [value for _, value in scalars['loss']]
  assert losses[-1] < losses[0]
  # One training event file: the scalars and any tf.compat.v1.summary ops.
  assert len(glob.glob(os.path.join(model_dir, 'events.out.tfevents.*'))) == 1


def test_steps_no_hook_sees_run_as_steps_in_the_monitored_session(
    tmp_path):
  """A training, evaluation or prediction step no hook acts around runs as
  a callable of the raw session (session_loop.plain_run); one a hook sees,
  in the monitored session. Both give the same variables, summaries,
  metrics and predictions (of the graph's own input, and of a new input
  fed to a kept graph)."""
  seen = {'train': SessionRunCounter(), 'evaluate': SessionRunCounter(),
          'predict': SessionRunCounter()}

  def predict_input(start):
    return lambda: tf.data.Dataset.from_tensor_slices(
        np.arange(start, start + 6, dtype=np.float32).reshape(6, 1)).batch(4)

  results = []
  for name, hooks in (('plain', {}), ('seen', seen)):
    model_dir = str(tmp_path / name)
    estimator = estimator_rt.Estimator(
        _tf1_model_fn, model_dir=model_dir, config=estimator_rt.RunConfig(
            steps_per_loop=1, save_summary_steps=5, tf_random_seed=1))
    hooks_of = lambda call: [hooks[call]] if call in hooks else []  # pylint: disable=cell-var-from-loop
    estimator.train(_input_fn, max_steps=12, hooks=hooks_of('train'))
    assert estimator.chosen_engine == engine_choice.GRAPH
    results.append((
        estimator.get_variable_value('w'),
        summaries.read_scalars(model_dir)['loss'],
        estimator.evaluate(_input_fn, steps=3, hooks=hooks_of('evaluate')),
        [list(estimator.predict(predict_input(start),
                                hooks=hooks_of('predict')))
         for start in (0, 10)]))
  assert [hook.runs for hook in seen.values()] == [12, 3, 4]
  (plain_w, plain_losses, plain_metrics, plain_predictions), (
      seen_w, seen_losses, seen_metrics, seen_predictions) = results
  np.testing.assert_array_equal(plain_w, seen_w)
  assert [step for step, _ in plain_losses] == [1, 6, 11]
  assert plain_losses == seen_losses
  assert plain_metrics == seen_metrics
  np.testing.assert_array_equal(plain_predictions, seen_predictions)
  np.testing.assert_allclose(
      np.concatenate(plain_predictions[1]),
      np.arange(10, 16, dtype=np.float32) * plain_w[0, 0], rtol=1e-6)


def _is_name_based(model_dir):
  return not engine_choice.is_object_based(tf.train.latest_checkpoint(model_dir))


def test_each_kind_of_model_fn_gets_its_engine_without_a_setting(tmp_path):
  tf1 = estimator_rt.Estimator(_tf1_model_fn, model_dir=str(tmp_path / 'v1'))
  tf1.train(_input_fn, max_steps=5)
  assert _is_name_based(tf1.model_dir)
  tf2 = estimator_rt.Estimator(_keras_model_fn, model_dir=str(tmp_path / 'v2'))
  tf2.train(_input_fn, max_steps=5)
  assert not _is_name_based(tf2.model_dir)
  # A fresh Estimator on each model_dir evaluates in the engine that wrote it.
  assert estimator_rt.Estimator(_tf1_model_fn, model_dir=tf1.model_dir
                                ).evaluate(_input_fn, steps=2)[
                                    'global_step'] == 5
  assert estimator_rt.Estimator(_keras_model_fn, model_dir=tf2.model_dir
                                ).evaluate(_input_fn, steps=2)[
                                    'global_step'] == 5


def test_the_graph_engine_evaluates_and_predicts_without_a_checkpoint(
    tmp_path):
  # As tf.estimator 2.15: from the initialization, warm-started if asked.
  trained = estimator_rt.Estimator(_tf1_model_fn,
                                   model_dir=str(tmp_path / 'trained'))
  trained.train(_input_fn, max_steps=5)
  w = trained.get_variable_value('w')
  fresh = estimator_rt.Estimator(
      _tf1_model_fn, model_dir=str(tmp_path / 'fresh'),
      warm_start_from=trained.model_dir)
  x = np.arange(4, dtype=np.float32).reshape(4, 1) / 8
  results = fresh.evaluate(_input_fn, steps=1)
  assert results['global_step'] == 0
  assert results['loss'] == pytest.approx(
      float(np.mean((x @ w - 2 * x)**2)), rel=1e-5)
  predicted = list(fresh.predict(
      lambda: tf.data.Dataset.from_tensor_slices(x).batch(4)))
  np.testing.assert_allclose(np.stack(predicted), x @ w, rtol=1e-5)
  assert tf.train.latest_checkpoint(fresh.model_dir) is None
  # Predicting first, with a model_fn that refuses eager execution: the
  # eager engine's try at its first prediction hands over to a graph.
  graph_only = estimator_rt.Estimator(_library_checked_model_fn,
                                      model_dir=str(tmp_path / 'graph_only'))
  assert len(list(graph_only.predict(
      lambda: tf.data.Dataset.from_tensor_slices(x).batch(4)))) == 4
  assert graph_only._last_kind == engine_choice.GRAPH  # pylint: disable=protected-access


def test_the_graph_engine_builds_a_graph_per_evaluation_as_2_15_did(
    tmp_path):
  """Each evaluation calls the eval input_fn and the EVAL-mode model_fn once
  in a graph of its own, as tf.estimator 2.15 did: train_and_evaluate's
  check before training builds the first evaluation's, so on a fresh
  model_dir (no engine named: the graph engine's build decides) the three
  evaluations cost three calls, and each gives what an evaluation of its
  checkpoint by another Estimator gives."""
  calls = {'eval input_fn': 0, 'EVAL model_fn': 0}

  def model_fn(features, labels, mode):
    if mode == estimator_rt.ModeKeys.EVAL:
      calls['EVAL model_fn'] += 1
    return _tf1_model_fn(features, labels, mode)

  def eval_input_fn():
    calls['eval input_fn'] += 1
    x = np.arange(12, dtype=np.float32).reshape(12, 1) / 12
    return tf.data.Dataset.from_tensor_slices((x, 3 * x)).batch(4)

  model_dir = str(tmp_path / 'm')
  estimator = estimator_rt.Estimator(
      model_fn, model_dir=model_dir,
      config=estimator_rt.RunConfig(save_checkpoints_steps=4))
  metrics, _ = estimator_rt.train_and_evaluate(
      estimator, estimator_rt.TrainSpec(_input_fn, max_steps=12),
      estimator_rt.EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
  assert estimator.chosen_engine == engine_choice.GRAPH
  evaluated = [step for step, _ in summaries.read_scalars(
      os.path.join(model_dir, 'eval'))['loss']]
  assert evaluated == [4, 8, 12]
  assert calls == {'eval input_fn': 3, 'EVAL model_fn': 3}
  assert metrics['global_step'] == 12

  losses = dict(summaries.read_scalars(os.path.join(model_dir, 'eval'))
                ['loss'])
  for step in (4, 12):
    fresh = estimator_rt.Estimator(model_fn, model_dir=model_dir).evaluate(
        eval_input_fn, checkpoint_path=os.path.join(model_dir,
                                                    f'model.ckpt-{step}'))
    assert fresh['loss'] == pytest.approx(losses[step], rel=1e-6)
  assert calls == {'eval input_fn': 5, 'EVAL model_fn': 5}
  assert estimator.evaluate(eval_input_fn) == pytest.approx(metrics)
  assert calls == {'eval input_fn': 6, 'EVAL model_fn': 6}


def test_an_object_checkpoint_of_another_layout_names_no_engine(tmp_path):
  """A program's own tf.train.Checkpoint in model_dir (a TF1-style
  model_fn saves one through Scaffold(saver=tf.train.Checkpoint(...))):
  the model_fn decides the engine, as in a fresh model_dir."""
  model_dir = str(tmp_path / 'm')
  tf.train.Checkpoint(step=tf.Variable(3, dtype=tf.int64)).save(
      os.path.join(model_dir, 'ckpt'))
  assert engine_choice.choose_engine(
      config=estimator_rt.RunConfig(), model_dir=model_dir) is None


def _library_checked_model_fn(features, labels, mode):
  """A model_fn behind a library's own check (TF-GAN's gan_model raises
  `ValueError: tfgan.gan_model doesn't work when executing eagerly`)."""
  if tf.executing_eagerly():
    raise ValueError("mylib.build doesn't work when executing eagerly.")
  return _tf1_model_fn(features, labels, mode)


def _broken_model_fn(features, labels, mode):
  del labels, mode
  raise ValueError(f'the model_fn is broken (features {features.shape})')


def test_a_model_fn_that_refuses_eager_execution_in_any_way_gets_a_graph(
    tmp_path):
  """tf.estimator always built a graph: a model_fn that fails eagerly with
  any exception, not only TensorFlow's graph-only RuntimeError, trains in
  the graph engine."""
  estimator = estimator_rt.Estimator(_library_checked_model_fn,
                                     model_dir=str(tmp_path / 'm'))
  estimator.train(_input_fn, max_steps=5)
  assert estimator.chosen_engine == engine_choice.GRAPH
  assert _is_name_based(estimator.model_dir)
  assert checkpoint_steps(estimator.model_dir) == [0, 5]


def test_a_model_fn_failing_in_both_engines_is_reported_once(tmp_path):
  """A model_fn that fails in a graph too gets the graph engine's error
  (tf.estimator's), one ModelFnError; nothing is written. On a model_dir
  the eager engine wrote, it gets the eager engine's own error, not a
  claim that it is TF1-style."""
  model_dir = str(tmp_path / 'm')
  # The model_fn's own words first, as 2.15 let its exception through.
  with pytest.raises(estimator_rt.ModelFnError,
                     match=r'broken \(features.*_broken_model_fn failed'
                     ) as raised:
    estimator_rt.Estimator(_broken_model_fn, model_dir=model_dir).train(
        _input_fn, max_steps=3)
  assert not isinstance(raised.value, estimator_rt.core.errors.GraphModelFnError)
  assert not os.path.exists(model_dir)
  estimator_rt.Estimator(_keras_model_fn, model_dir=model_dir).train(
      _input_fn, max_steps=3)
  with pytest.raises(estimator_rt.ModelFnError,
                     match='_broken_model_fn failed in mode') as raised:
    estimator_rt.Estimator(_broken_model_fn, model_dir=model_dir).train(
        _input_fn, max_steps=6)
  assert 'TF1-style' not in str(raised.value)


def test_a_checkpoint_saved_without_a_step_is_found_by_the_state_file(
    tmp_path):
  """tf.estimator took the newest checkpoint from the state file, whatever
  its name: a program's own `Saver().save(session, 'model.ckpt')` (2.15's
  tests write their fixtures so) is evaluated at the step it holds."""
  model_dir = str(tmp_path / 'm')
  with tf.Graph().as_default():
    tf.compat.v1.get_variable('w', initializer=[[2.0]])
    step = tf.compat.v1.train.create_global_step()
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      session.run(step.assign(7))
      tf.compat.v1.train.Saver().save(session,
                                      os.path.join(model_dir, 'model.ckpt'))
  metrics = estimator_rt.Estimator(_tf1_model_fn, model_dir=model_dir
                                   ).evaluate(_input_fn, steps=1)
  assert metrics['global_step'] == 7
  assert metrics['loss'] == pytest.approx(0.0)  # w = 2: the labels, 2x.


def test_a_tf1_model_fn_on_a_tf2_model_dir_is_refused_in_one_line(tmp_path):
  model_dir = str(tmp_path / 'm')
  estimator_rt.Estimator(_keras_model_fn, model_dir=model_dir).train(
      _input_fn, max_steps=3)
  before = sorted(os.listdir(model_dir))
  with pytest.raises(estimator_rt.UserInputError,
                     match='TF2 model_fn.*TF1-style.*new model_dir'):
    estimator_rt.Estimator(_tf1_model_fn, model_dir=model_dir).train(
        _input_fn, max_steps=6)
  assert sorted(os.listdir(model_dir)) == before


def test_a_keras_optimizer_in_the_graph_engine_says_what_to_change(tmp_path):
  estimator = estimator_rt.Estimator(
      _keras_model_fn, model_dir=str(tmp_path / 'm'),
      config=estimator_rt.RunConfig(engine='graph'))
  with pytest.raises(estimator_rt.ModelFnError,
                     match='tf.compat.v1.train optimizer'):
    estimator.train(_input_fn, max_steps=3)
  assert not glob.glob(str(tmp_path / 'm' / 'model.ckpt-*'))


def test_another_models_checkpoint_is_refused_before_writing(tmp_path):
  model_dir = str(tmp_path / 'm')
  classifier_program = program('tf1_classifier')
  classifier_program.make_estimator(model_dir).train(
      classifier_program.train_input_fn, max_steps=5)
  before = sorted(os.listdir(model_dir))
  with pytest.raises(estimator_rt.IncompatibleCheckpointError,
                     match=r"no variable\(s\) \['w'\]") as info:
    estimator_rt.Estimator(_tf1_model_fn, model_dir=model_dir).train(
        _input_fn, max_steps=10)
  # What 2.15's restore raised (TF-GAN's tests expect it), its words first;
  # still a UserInputError (the binary's one line, exit 2).
  assert isinstance(info.value, tf.errors.NotFoundError)
  assert str(info.value).startswith('Restoring from checkpoint failed.')
  assert isinstance(info.value, estimator_rt.UserInputError)
  assert sorted(os.listdir(model_dir)) == before


# ------------------------------------------------------------ mirrored
# Three of the five programs: the per-replica batch (seed_readme), feature
# columns and hooks with a Scaffold; TF1 layers and a v1 optimizer under
# mirrored are test_two_mirrored_replicas_on_b_train_as_one_device_on_2b's.
@pytest.mark.parametrize('name', ['seed_readme', 'feature_columns_iris',
                                  'hooks_and_scaffold'])
def test_programs_run_mirrored_over_two_devices(tmp_path, name):
  result = run_program(name, tmp_path, '--train_distribute', 'mirrored')
  evaluation = result['eval']
  # Each replica takes its own element of the input (tf.estimator's
  # per-replica batch), so the finite seed input ends after 50 steps.
  assert evaluation['global_step'] == (50 if name == 'seed_readme' else
                                       {'tf1_classifier': 200,
                                        'hooks_and_scaffold': 200}.get(
                                            name, 300))
  quality = {'seed_readme': ('loss', 1e-6), 'tf1_classifier': ('loss', 0.2),
             'keras_layers_v1_optimizer': ('loss', 0.05),
             'feature_columns_iris': ('loss', 0.2),
             'hooks_and_scaffold': ('mae', 0.05)}[name]
  assert evaluation[quality[0]] < quality[1], evaluation
  assert 'serving_default' in result['served'], result['served']


def _linear_tf1_model_fn(features, labels, mode):
  hidden = tf.compat.v1.layers.dense(features, 4, activation=tf.nn.tanh,
                                     name='hidden')
  predictions = tf.compat.v1.layers.dense(hidden, 1, name='out')
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.2).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return estimator_rt.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _batched_input(batch_size):
  def input_fn():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (64, 3)).astype(np.float32)
    y = (x @ np.array([[1.], [-2.], [0.5]], np.float32)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
        batch_size)
  return input_fn


def test_two_mirrored_replicas_on_b_train_as_one_device_on_2b(tmp_path):
  def train(name, strategy, batch_size):
    model_dir = str(tmp_path / name)
    init = str(tmp_path / 'init')
    estimator = estimator_rt.Estimator(
        _linear_tf1_model_fn, model_dir=model_dir, warm_start_from=init,
        config=estimator_rt.RunConfig(train_distribute=strategy))
    estimator.train(_batched_input(batch_size), max_steps=20)
    return {n: estimator.get_variable_value(n)
            for n in ('hidden/kernel', 'hidden/bias', 'out/kernel')}

  # Same starting weights for both: one step's checkpoint to warm-start from.
  estimator_rt.Estimator(_linear_tf1_model_fn,
                         model_dir=str(tmp_path / 'init')).train(
                             _batched_input(8), max_steps=1)
  one = train('one', None, 16)
  two = train('two', 'mirrored', 8)
  for name in one:
    np.testing.assert_allclose(two[name], one[name], atol=1e-5)


# ---------------------------------------------------------- the binary

FNS = os.path.join(HERE, '_legacy_fns.py')


def _binary_args(model_dir, max_steps, *extra):
  return ['--mode=train', f'--model_dir={model_dir}',
          f'--model_fn={FNS}:model_fn', f'--input_fn={FNS}:input_fn',
          f'--max_steps={max_steps}', '--log_step_count_steps=200', *extra]


# SIGTERM, SIGKILL mid-save and NaN in this engine: the fault tests of
# test_preemption.py and test_model_dir_faults.py run in both engines.


def test_binary_train_and_evaluate_exports_a_servable_model(tmp_path):
  model_dir = str(tmp_path / 'm')
  result = subprocess.run(
      [sys.executable, '-m', 'estimator_rt.main', *_binary_args(
          model_dir, 300, '--save_checkpoints_steps=100'),
       '--mode=train_and_evaluate', f'--eval_input_fn={FNS}:input_fn',
       '--eval_steps=4'],
      capture_output=True, text=True, timeout=300, cwd=REPO)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
  exports = glob.glob(os.path.join(model_dir, 'export', '*', '*',
                                   'saved_model.pb'))
  assert exports, os.listdir(model_dir)
  served = subprocess.run(
      [sys.executable, '-c',
       'import sys, tensorflow as tf; f = tf.saved_model.load(sys.argv[1])'
       '.signatures["serving_default"]; print(sorted(f.structured_outputs))',
       os.path.dirname(exports[0])],
      capture_output=True, text=True, timeout=120)
  assert served.returncode == 0, served.stderr[-2000:]
  assert "['y']" in served.stdout


def test_a_setting_the_graph_engine_cannot_run_is_refused_in_one_line(
    tmp_path):
  # The runtime's own field (central_storage, once refused here, runs:
  # test_guards.py).
  estimator = estimator_rt.Estimator(
      _tf1_model_fn, model_dir=str(tmp_path / 'm'),
      config=estimator_rt.RunConfig(jit_compile=True))
  with pytest.raises(estimator_rt.UserInputError,
                     match='jit_compile=True is not supported for TF1-style '
                     'model_fns') as raised:
    estimator.train(_input_fn, max_steps=3)
  assert '\n' not in str(raised.value)
  assert not os.path.exists(str(tmp_path / 'm' / 'checkpoint'))


def _classifier_with_outputs(features, labels, mode):
  logits = tf.compat.v1.layers.dense(features['x'], 3, name='logits')
  probabilities = tf.nn.softmax(logits)
  classes = tf.as_string(tf.argmax(logits, axis=1))
  if mode == estimator_rt.ModeKeys.PREDICT:
    return estimator_rt.EstimatorSpec(
        mode, predictions={'probabilities': probabilities},
        export_outputs={
            'serving_default': estimator_rt.export.PredictOutput(
                {'probabilities': probabilities}),
            'classification': estimator_rt.export.ClassificationOutput(
                scores=probabilities, classes=classes),
            'regression': estimator_rt.export.RegressionOutput(
                value=tf.reduce_max(probabilities, axis=1)),
        })
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return estimator_rt.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _three_classes():
  x = np.eye(3, dtype=np.float32).repeat(4, axis=0)
  y = np.arange(3).repeat(4)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(6)


def test_classification_and_regression_outputs_export_for_examples(
    tmp_path):
  estimator = estimator_rt.Estimator(_classifier_with_outputs,
                                     model_dir=str(tmp_path / 'm'))
  estimator.train(_three_classes, max_steps=5)
  spec = {'x': tf.io.FixedLenFeature([3], tf.float32)}
  parsing = estimator.export_saved_model(
      str(tmp_path / 'parsing'),
      estimator_rt.export.build_parsing_serving_input_receiver_fn(spec))
  raw = estimator.export_saved_model(
      str(tmp_path / 'raw'),
      estimator_rt.export.build_raw_serving_input_receiver_fn(
          {'x': tf.TensorSpec([None, 3], tf.float32)}))
  example = tf.train.Example(features=tf.train.Features(feature={
      'x': tf.train.Feature(float_list=tf.train.FloatList(
          value=[1., 0., 0.]))})).SerializeToString()
  script = r'''
import sys, tensorflow as tf
parsing = tf.saved_model.load(sys.argv[1])
raw = tf.saved_model.load(sys.argv[2])
print(sorted(parsing.signatures), sorted(raw.signatures))
out = parsing.signatures['classification'](inputs=tf.constant([bytes.fromhex(sys.argv[3])]))
print(sorted(out), out['scores'].shape)
'''
  result = subprocess.run(
      [sys.executable, '-c', script, parsing, raw, example.hex()],
      capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.strip().splitlines()
  # The classify and regress signatures need serialized Examples: the raw
  # receiver's export leaves them out (with a warning), the parsing one
  # has them.
  assert lines[-2] == ("['classification', 'regression', 'serving_default'] "
                       "['serving_default']"), lines
  assert lines[-1] == "['classes', 'scores'] (1, 3)", lines


# ---------------------------------------------------- TF_CONFIG clusters
import _cluster  # pylint: disable=g-import-not-at-top,wrong-import-position


def _cluster_flags(model_dir, *extra):
  return [f'--model_fn={FNS}:model_fn', f'--input_fn={FNS}:input_fn',
          f'--eval_input_fn={FNS}:input_fn', '--eval_steps=4',
          f'--model_dir={model_dir}', '--max_steps=300',
          '--save_checkpoints_steps=100', '--throttle_secs=0',
          '--exporters=final', *extra]


def test_mirrored_chief_and_evaluator_cluster_trains_evaluates_exports(
    tmp_path):
  model_dir = str(tmp_path / 'model')
  run = _cluster.run_launcher(
      tmp_path, workers=0, chief=True, evaluator=True, grace_secs=60,
      args=_cluster_flags(model_dir, '--distribution_strategy=mirrored',
                          '--num_cpu_devices=2'))
  assert run.codes == {'chief:0': 0, 'evaluator:0': 0}, run.tail()
  assert 'graph engine' in run.log('chief:0')
  assert checkpoint_steps(model_dir) == [0, 100, 200, 300]
  assert not engine_choice.is_object_based(os.path.join(model_dir,
                                                  'model.ckpt-300'))
  maes = summaries.read_scalars(os.path.join(model_dir, 'eval'))['mae']
  assert maes[-1][0] == 300 and maes[-1][1] < 0.5, maes
  exports = glob.glob(os.path.join(model_dir, 'export', 'final', '*',
                                   'saved_model.pb'))
  assert len(exports) == 1, run.log('evaluator:0')[-3000:]


def test_multi_worker_mirrored_two_workers_and_evaluator(tmp_path):
  """The TF1 classifier program's model_fn and input_fns, unchanged, as a
  multi_worker_mirrored cluster of 2 workers and an evaluator."""
  model_dir = str(tmp_path / 'model')
  classifier = os.path.join(PROGRAMS_DIR, 'counted_tf1_classifier.py')
  calls_file = str(tmp_path / 'calls.txt')
  run = _cluster.run_launcher(
      tmp_path, workers=2, evaluator=True, grace_secs=60,
      env={'CALLS_FILE': calls_file},
      args=[f'--model_fn={classifier}:model_fn',
            f'--input_fn={classifier}:train_input_fn',
            f'--eval_input_fn={classifier}:eval_input_fn',
            '--params=' + json.dumps(program('tf1_classifier').PARAMS),
            f'--model_dir={model_dir}', '--max_steps=300',
            '--save_checkpoints_steps=100', '--save_summary_steps=50',
            '--throttle_secs=0', '--exporters=final',
            '--distribution_strategy=multi_worker_mirrored'])
  assert run.codes == {'evaluator:0': 0, 'worker:0': 0, 'worker:1': 0}, (
      run.tail())
  assert 'graph engine' in run.log('worker:1')
  assert checkpoint_steps(model_dir) == [0, 100, 200, 300]
  # The non-chief saves where the eager engine's does: into a scratch
  # directory, never into model_dir (every synchronous worker cuts its
  # loops at the same steps).
  saved = re.findall(r'Saved checkpoint (\S+)', run.log('worker:1'))
  assert saved and all('estimator_rt_worker_' in p for p in saved), saved
  accuracy = summaries.read_scalars(os.path.join(model_dir, 'eval'))[
      'accuracy']
  assert accuracy[-1][0] == 300 and accuracy[-1][1] > 0.9, accuracy
  assert glob.glob(os.path.join(model_dir, 'export', 'final', '*',
                                'saved_model.pb'))
  _assert_calls_as_2_15(calls_file, trainers=['worker:0', 'worker:1'],
                        evaluations=len(accuracy))


def _assert_calls_as_2_15(calls_file, *, trainers, evaluations):
  """The model_fn and input_fn calls of each task of a cluster whose
  evaluator exports once at the end: what tf.estimator 2.15 made, one per
  graph it built (each training task's TRAIN graph, the evaluator's graph
  per evaluation and its export's)."""
  counted = program('counted_tf1_classifier').read_calls(calls_file)
  expected = {task: {'model_fn:train': 1, 'input_fn:train': 1}
              for task in trainers}
  expected['evaluator:0'] = {'model_fn:eval': evaluations,
                             'input_fn:eval': evaluations,
                             'model_fn:infer': 1}
  assert counted == expected


def _classifier_cluster_flags(model_dir, *extra, classifier='tf1_classifier'):
  classifier = os.path.join(PROGRAMS_DIR, f'{classifier}.py')
  return [f'--model_fn={classifier}:model_fn',
          f'--input_fn={classifier}:train_input_fn',
          f'--eval_input_fn={classifier}:eval_input_fn',
          '--params=' + json.dumps(program('tf1_classifier').PARAMS),
          f'--model_dir={model_dir}', '--save_summary_steps=50',
          '--throttle_secs=0', *extra]


# How far past max_steps asynchronous parameter_server training may end:
# each of its 3 training tasks stops on its own (possibly stale) reading of
# the shared global step, with a step in flight.
OVERSHOOT = 10


def test_parameter_server_chief_two_workers_ps_and_evaluator(tmp_path):
  """The TF1 classifier program's model_fn and input_fns, unchanged, as a
  parameter_server cluster (chief, 2 workers, 1 ps, evaluator): every
  task trains asynchronously with the variables on the ps, the chief
  writes model_dir, the evaluator evaluates and exports, all exit 0."""
  model_dir = str(tmp_path / 'model')
  calls_file = str(tmp_path / 'calls.txt')
  run = _cluster.run_launcher(
      tmp_path, workers=2, ps=1, chief=True, evaluator=True, grace_secs=60,
      env={'CALLS_FILE': calls_file},
      args=_classifier_cluster_flags(
          model_dir, '--max_steps=1500', '--save_checkpoints_steps=500',
          '--exporters=final', '--distribution_strategy=parameter_server',
          classifier='counted_tf1_classifier'))
  names = ['chief:0', 'worker:0', 'worker:1', 'ps:0', 'evaluator:0']
  assert run.codes == {name: 0 for name in names}, run.tail()
  for name in ('chief:0', 'worker:0', 'worker:1'):
    assert 'graph engine' in run.log(name), run.log(name)[-3000:]
  # Asynchronous: the chief saves at the first step it sees past each
  # 500 (the others step meanwhile), and at its end; each task stops on
  # its own reading of the shared step, so the run ends a few steps past
  # max_steps.
  steps = checkpoint_steps(model_dir)
  # The first is the save the chief makes when its session starts, at the
  # step it sees then (the workers may have stepped already: 2.15's
  # CheckpointSaverHook saved so too).
  assert steps[0] < 500, steps
  assert sorted({s // 500 for s in steps[1:]}) == [1, 2, 3], steps
  assert 1500 <= steps[-1] <= 1500 + OVERSHOOT, steps
  assert not engine_choice.is_object_based(
      os.path.join(model_dir, f'model.ckpt-{steps[-1]}'))
  # Every task trained, each step counting once in the global step (which
  # the chief read last); a worker whose process came up only after the
  # others had reached max_steps (a busy machine) trains none, as 2.15's
  # StopAtStepHook stopped it at once, and says so.
  ran = {}
  for name in ('chief:0', 'worker:0', 'worker:1'):
    match = re.search(r'ran (\d+) steps of its own', run.log(name))
    if match:
      ran[name] = int(match.group(1))
    else:
      assert name != 'chief:0' and re.search(
          r'Skipping training: checkpoint .* is already at step \d+ >= '
          r'max_steps=1500', run.log(name)), run.log(name)[-3000:]
  assert 'chief:0' in ran and min(ran.values()) > 0, ran
  assert steps[-1] <= sum(ran.values()) <= 1500 + OVERSHOOT, (ran, steps)
  assert 'Saved checkpoint' not in run.log('worker:0')
  accuracy = summaries.read_scalars(os.path.join(model_dir, 'eval'))[
      'accuracy']
  assert accuracy[-1][0] == steps[-1] and accuracy[-1][1] > 0.9, accuracy
  exports = glob.glob(os.path.join(model_dir, 'export', 'final', '*',
                                   'saved_model.pb'))
  assert len(exports) == 1, run.log('evaluator:0')[-3000:]
  _assert_calls_as_2_15(calls_file,
                        trainers=['chief:0', 'worker:0', 'worker:1'],
                        evaluations=len(accuracy))

  # Predict with the binary in a fresh process: the evaluator's accuracy
  # is the share of right predictions over the whole eval set; one call of
  # the model_fn and of the input_fn, as 2.15's predict made.
  os.remove(calls_file)
  classifier = os.path.join(PROGRAMS_DIR, 'counted_tf1_classifier.py')
  predicted = subprocess.run(
      [sys.executable, '-m', 'estimator_rt.main',
       f'--model_fn={classifier}:model_fn',
       f'--input_fn={classifier}:eval_input_fn',
       '--params=' + json.dumps(program('tf1_classifier').PARAMS),
       f'--model_dir={model_dir}', '--mode=predict'],
      capture_output=True, text=True, timeout=300, cwd=REPO,
      env={**{k: v for k, v in os.environ.items() if k != 'TF_CONFIG'},
           'CALLS_FILE': calls_file})
  assert predicted.returncode == 0, predicted.stderr[-3000:]
  assert program('counted_tf1_classifier').read_calls(calls_file) == {
      'local': {'model_fn:infer': 1, 'input_fn:eval': 1}}
  class_ids = [json.loads(line)['class_ids']
               for line in predicted.stdout.splitlines()
               if line.startswith('{')]
  features, labels = program('tf1_classifier').EVAL_DATA
  assert len(class_ids) == len(labels)
  assert np.mean(np.array(class_ids) == labels) == pytest.approx(
      accuracy[-1][1], abs=1e-6)
  # The export, served in a fresh process, predicts the same classes.
  served = subprocess.run(
      [sys.executable, '-c',
       'import json, sys, numpy as np, tensorflow as tf\n'
       'f = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]\n'
       'x = np.array(json.loads(sys.argv[2]), np.float32)\n'
       'print(json.dumps(f(x=tf.constant(x))["class_ids"].numpy().tolist()))',
       os.path.dirname(exports[0]), json.dumps(features[:8].tolist())],
      capture_output=True, text=True, timeout=120)
  assert served.returncode == 0, served.stderr[-3000:]
  assert json.loads(served.stdout.splitlines()[-1]) == class_ids[:8]


def _start_ps_cluster(tmp_path, run, cluster, *, max_steps, names):
  os.makedirs(tmp_path / run)
  command = _cluster.BINARY + _classifier_cluster_flags(
      str(tmp_path / 'model'), f'--max_steps={max_steps}',
      '--save_checkpoints_steps=500', '--exporters=',
      '--distribution_strategy=parameter_server')
  return _cluster.start_tasks(
      tmp_path / run, cluster=cluster, command=command,
      tasks=[(name.split(':')[0], int(name.split(':')[1])) for name in names])


def _when_trained_past(tasks, step):
  """Waits until the chief logs a global step >= `step`."""
  def past():
    found = re.findall(r'step (\d+)/\d+, loss', tasks['chief:0'].log())
    return bool(found) and int(found[-1]) >= step
  try:
    _cluster.wait_for(past, timeout=180, what=f'the chief past step {step}')
  except AssertionError as e:
    # What every task printed: a stall here has been seen once in the
    # full suite and not reproduced alone.
    raise AssertionError(f'{e}\n{_cluster.tails(tasks, sorted(tasks))}'
                         ) from None


PS_TASKS = ['ps:0', 'worker:0', 'worker:1', 'chief:0']


def test_parameter_server_sigterm_to_the_chief_saves_and_resumes(tmp_path):
  """SIGTERM to the chief of a TF1-style parameter_server cluster: it saves
  at the step it stopped at and exits 143, and so do the workers and the
  ps it tells; the same command resumes from that checkpoint."""
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=2, ps=1, chief=True,
                                             evaluator=False)
  tasks = _start_ps_cluster(tmp_path, 'run1', cluster, max_steps=10**6,
                            names=PS_TASKS)
  try:
    _when_trained_past(tasks, 300)
    tasks['chief:0'].process.send_signal(signal.SIGTERM)
    codes = _cluster.wait_tasks(tasks, PS_TASKS, timeout=60)
  finally:
    _cluster.stop_tasks(tasks)
  assert codes == {n: 143 for n in PS_TASKS}, (
      codes, _cluster.tails(tasks, PS_TASKS))
  match = re.search(r'Preempted \(SIGTERM\) at global step (\d+)',
                    tasks['chief:0'].log())
  assert match, tasks['chief:0'].log()[-3000:]
  step = int(match.group(1))
  assert checkpoint_steps(model_dir)[-1] == step > 300

  again = _start_ps_cluster(tmp_path, 'run2', cluster, max_steps=step + 300,
                            names=PS_TASKS)
  codes = _cluster.wait_then_stop(again, PS_TASKS, timeout=180)
  assert codes == {n: 0 for n in PS_TASKS}, (
      codes, _cluster.tails(again, PS_TASKS))
  assert f'Restored {model_dir}/model.ckpt-{step} (global step {step})' in (
      again['chief:0'].log()), again['chief:0'].log()[-3000:]
  assert step + 300 <= checkpoint_steps(model_dir)[-1] <= (
      step + 300 + OVERSHOOT)


def test_parameter_server_lost_worker_and_lost_ps(tmp_path):
  """A TF1-style parameter_server cluster loses worker:1 (SIGKILL): the
  others train on to max_steps and exit 0. Run again with more steps, it
  loses its ps: the chief exits 1 at once with one line, keeps its last
  checkpoint, and every task ends."""
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=2, ps=1, chief=True,
                                             evaluator=False)
  tasks = _start_ps_cluster(tmp_path, 'run1', cluster, max_steps=1500,
                            names=PS_TASKS)
  survivors = ['ps:0', 'worker:0', 'chief:0']
  try:
    _when_trained_past(tasks, 300)
    _cluster.kill_task(tasks['worker:1'])
    codes = _cluster.wait_tasks(tasks, survivors, timeout=180)
  finally:
    _cluster.stop_tasks(tasks)
  assert codes == {n: 0 for n in survivors}, (
      codes, _cluster.tails(tasks, PS_TASKS))
  assert 1500 <= checkpoint_steps(model_dir)[-1] <= 1500 + OVERSHOOT

  again = _start_ps_cluster(tmp_path, 'run2', cluster, max_steps=10**6,
                            names=PS_TASKS)
  try:
    _when_trained_past(again, 2000)
    _cluster.wait_for(lambda: checkpoint_steps(model_dir)[-1] > 2000,
                      timeout=60, what='a checkpoint past 2000')
    _cluster.kill_task(again['ps:0'])
    codes = _cluster.wait_tasks(again, PS_TASKS[1:], timeout=90)
  finally:
    _cluster.stop_tasks(again)
  assert codes['chief:0'] == 1, (
      codes, _cluster.tails(again, PS_TASKS))
  assert all(code is not None for code in codes.values()), codes
  chief_log = again['chief:0'].log()
  assert 'error: A step failed because a task of the cluster is gone' in (
      chief_log), chief_log[-3000:]
  assert 'Traceback' not in chief_log, chief_log[-3000:]
  last = checkpoint_steps(model_dir)[-1]
  assert last > 2000
  reader = tf.train.load_checkpoint(os.path.join(model_dir,
                                                 f'model.ckpt-{last}'))
  assert int(reader.get_tensor('global_step')) >= last


def test_a_worker_still_waiting_for_its_ps_ends_when_told(tmp_path):
  """A between-graph worker still starting (its ps never came up: the
  TF1-style lost-ps run's slow worker) is told by the chief that training
  is over: it exits 0 within a bound instead of waiting out its 300 s wait
  for the ps tasks."""
  cluster = _cluster.launcher().make_cluster(workers=1, ps=1, chief=True,
                                             evaluator=False)
  tasks = _start_ps_cluster(tmp_path, 'run', cluster, max_steps=100,
                            names=['worker:0'])
  worker = tasks['worker:0']
  try:
    _cluster.wait_for(lambda: _cluster.reachable(cluster['worker'][0]),
                      timeout=120, what="the worker's server")
    server_lib.signal_training_done([('worker', 0, cluster['worker'][0])],
                                    timeout_secs=30)
    codes = _cluster.wait_tasks(tasks, ['worker:0'], timeout=60)
  finally:
    _cluster.stop_tasks(tasks)
  assert codes == {'worker:0': 0}, (codes, worker.log()[-3000:])
  assert 'had not started training when the chief signalled' in worker.log()


def test_multi_worker_mirrored_two_workers_on_b_train_as_one_on_2b(
    tmp_path):
  model_dir = str(tmp_path / 'model')
  run = _cluster.run_launcher(
      tmp_path, workers=2, grace_secs=60,
      args=[f'--model_fn={FNS}:linear_model_fn', f'--input_fn={FNS}:input_fn',
            f'--eval_input_fn={FNS}:input_fn', '--eval_steps=1',
            '--exporters=', f'--model_dir={model_dir}', '--max_steps=40',
            '--distribution_strategy=multi_worker_mirrored'])
  assert run.codes == {'worker:0': 0, 'worker:1': 0}, run.tail()
  legacy_fns = importlib.import_module('_legacy_fns')
  local = estimator_rt.Estimator(legacy_fns.linear_model_fn,
                                 model_dir=str(tmp_path / 'local'))
  local.train(legacy_fns.double_batch_input_fn, max_steps=40)
  distributed = estimator_rt.Estimator(legacy_fns.linear_model_fn,
                                       model_dir=model_dir)
  assert distributed.latest_checkpoint().endswith('model.ckpt-40')
  for name in ('w', 'b'):
    np.testing.assert_allclose(distributed.get_variable_value(name),
                               local.get_variable_value(name), atol=1e-5)


def test_multi_worker_mirrored_sigterm_to_one_worker_saves_and_resumes(
    tmp_path):
  from test_lost_tasks import _preempted_step  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path / 'model')
  cluster = _cluster.launcher().make_cluster(workers=2, ps=0, chief=False,
                                             evaluator=False)

  def command(max_steps):
    return _cluster.BINARY + [
        f'--model_fn={FNS}:model_fn', f'--input_fn={FNS}:input_fn',
        f'--eval_input_fn={FNS}:input_fn', '--eval_steps=1', '--exporters=',
        '--distribution_strategy=multi_worker_mirrored',
        f'--model_dir={model_dir}', f'--max_steps={max_steps}',
        '--save_checkpoints_steps=100000', '--log_step_count_steps=100']

  names = ['worker:0', 'worker:1']
  os.makedirs(tmp_path / 'run1')
  tasks = _cluster.start_tasks(tmp_path / 'run1', cluster=cluster,
                               command=command(10**7),
                               tasks=[('worker', 1), ('worker', 0)])
  try:
    _cluster.wait_for(lambda: re.search(r'step \d+/\d+, loss',
                                        tasks['worker:0'].log()),
                      timeout=180, what='training to run')
    signalled = time.time()
    tasks['worker:1'].process.send_signal(signal.SIGTERM)
    codes = _cluster.wait_tasks(tasks, names, timeout=60)
    took = time.time() - signalled
  finally:
    _cluster.stop_tasks(tasks)
  assert codes == {n: 143 for n in names}, (
      codes, _cluster.tails(tasks, names))
  assert took < 30, took
  steps = {n: _preempted_step(tasks[n].log()) for n in names}
  assert steps['worker:0'] is not None and len(set(steps.values())) == 1, (
      steps)
  step = steps['worker:0']
  assert checkpoint_steps(model_dir) == [0, step]

  os.makedirs(tmp_path / 'run2')
  again = _cluster.start_tasks(tmp_path / 'run2', cluster=cluster,
                               command=command(step + 100),
                               tasks=[('worker', 1), ('worker', 0)])
  codes = _cluster.wait_then_stop(again, names, timeout=180)
  assert codes == {n: 0 for n in names}, (
      codes, _cluster.tails(again, names))
  assert f'(global step {step})' in again['worker:0'].log()
  assert checkpoint_steps(model_dir) == [0, step, step + 100]
