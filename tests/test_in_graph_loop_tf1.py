"""The in-graph loop for users' TF1-style model_fns (estimator_rt/training/graph/
in_graph_loop.py): the benchmark's W1 and W2 model_fns train in it and
compute what one step per session run computes; what cannot be a loop body
falls back to one step per run with one log line naming why.

Equivalence: both runs start from scratch with the same graph seed (the
seeded initializers draw the same initial weights in either graph) and
train 57 steps, over loops of up to 20 steps cut at the checkpoint steps
(25) and summary steps (10), or one step per run. They must end with the
same loss (1e-5), the same checkpoints (steps, names, values) and the same
summaries at the same steps, the model_fn's own included.
"""

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.core import summaries
from estimator_rt.estimator.tpu import tpu_estimator as tpu
from estimator_rt.training.graph import engine as graph_engine
from _models import checkpoint_steps
from _models import ckpt_path
from _models import LoopRecorder
from _models import SessionRunCounter
from scripts.bench.workloads import tf1_model_fn
from scripts.bench.workloads import WORKLOADS

LOOP_LINE = 'runs its steps in an in-graph loop'
FALLBACK_LINE = 'runs one training step per session run: '
STEPS = 57


def _with_summaries(model_fn):
  """`model_fn` that also writes its loss and a weight's histogram as
  tf.compat.v1 summaries (what a model's own summaries look like)."""

  def model_fn_with_summaries(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    tf.compat.v1.summary.scalar('model_loss', spec.loss)
    tf.compat.v1.summary.histogram(
        'first_weights', tf.compat.v1.trainable_variables()[0])
    return spec

  return model_fn_with_summaries


def _estimator(workload, model_dir, *, steps_per_loop):
  spec = WORKLOADS[workload]
  params = dict(spec['params'], batch_size=16)
  config = ert.RunConfig(model_dir=str(model_dir), tf_random_seed=3,
                         steps_per_loop=steps_per_loop, save_summary_steps=10,
                         save_checkpoints_steps=25, keep_checkpoint_max=0,
                         log_step_count_steps=0)
  return ert.Estimator(_with_summaries(tf1_model_fn(workload)),
                       config=config, params=params), spec['input_fn']


def _train(workload, model_dir, caplog, *, steps_per_loop, **kwargs):
  caplog.clear()
  estimator, input_fn = _estimator(workload, model_dir,
                                   steps_per_loop=steps_per_loop)
  recorder = LoopRecorder()
  estimator.train(input_fn, hooks=[recorder], **kwargs)
  return recorder, caplog.text


@pytest.fixture(autouse=True)
def _info_logs(caplog):
  # The lines are absl's: an earlier test that parsed absl flags leaves its
  # verbosity at WARNING, so set the absl logger itself.
  caplog.set_level('INFO', logger='absl')


@pytest.mark.parametrize('workload', ['W1', 'W2'])
def test_the_loop_computes_what_one_step_per_run_computes(tmp_path, caplog,
                                                          workload):
  looped, stepped = tmp_path / 'looped', tmp_path / 'stepped'
  loops, looped_log = _train(workload, looped, caplog, steps_per_loop=20,
                             steps=STEPS)
  steps, stepped_log = _train(workload, stepped, caplog, steps_per_loop=1,
                              steps=STEPS)

  assert LOOP_LINE in looped_log and FALLBACK_LINE not in looped_log
  assert LOOP_LINE not in stepped_log
  assert f'{FALLBACK_LINE}steps_per_loop=1' in stepped_log
  end = STEPS
  # Loops end at the summary steps (the first step, then every 10, as
  # tf.estimator 2.15 wrote them) and checkpoint steps, one session run each.
  assert [r.global_step for r in loops.results] == [
      1, 11, 21, 25, 31, 41, 50, 51, end]
  assert [r.global_step for r in steps.results] == list(range(1, end + 1))
  np.testing.assert_allclose(loops.results[-1].loss, steps.results[-1].loss,
                             rtol=1e-5)
  assert checkpoint_steps(looped) == checkpoint_steps(stepped) == [
      0, 25, 50, end]
  for step in (25, 50, end):
    ours = tf.train.load_checkpoint(ckpt_path(str(looped), step))
    theirs = tf.train.load_checkpoint(ckpt_path(str(stepped), step))
    names = sorted(ours.get_variable_to_shape_map())
    assert names == sorted(theirs.get_variable_to_shape_map())
    for name in names:
      np.testing.assert_allclose(ours.get_tensor(name),
                                 theirs.get_tensor(name), rtol=1e-5,
                                 atol=1e-6, err_msg=f'{name} at {step}')
  looped_scalars = summaries.read_scalars(str(looped))
  stepped_scalars = summaries.read_scalars(str(stepped))
  expected = {'loss': [1, 11, 21, 31, 41, 51],
              'model_loss': [1, 11, 21, 31, 41, 51]}
  for tag, tag_steps in expected.items():
    assert [s for s, _ in looped_scalars[tag]] == tag_steps, tag
    assert [s for s, _ in stepped_scalars[tag]] == tag_steps, tag
    np.testing.assert_allclose([v for _, v in looped_scalars[tag]],
                               [v for _, v in stepped_scalars[tag]],
                               rtol=1e-5, err_msg=tag)


def _linear(features, labels, mode, params):
  """W1's model_fn with a variable whose initial value is a tensor the
  model_fn computed: cannot be lifted out of a loop body."""
  del params
  offset = tf.compat.v1.get_variable(
      'offset', initializer=tf.zeros([1]) + 0.5)
  predictions = tf.squeeze(tf.compat.v1.layers.dense(features['x'], 1),
                           axis=-1) + offset
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)


class _PerStep(SessionRunCounter):
  """Counts the session runs it sees; the refusals name it."""


def _with(**spec_fields):
  """W1's TF1 model_fn returning its spec with `spec_fields` replaced
  (each value a function of nothing, called in the model_fn)."""
  w1 = tf1_model_fn('W1')

  def model_fn(features, labels, mode, params):
    spec = w1(features, labels, mode, params)
    return spec._replace(**{k: make() for k, make in spec_fields.items()})

  return model_fn


def _placeholder():
  # Not on the training path, so one step per run need not feed it.
  return tf.compat.v1.placeholder(tf.float32, [], name='scale')


# Each case: (a function making the model_fn, SessionRunHooks given to
# train(), the reason logged).
_FALLBACKS = {
    'training_hooks': (
        lambda: _with(training_hooks=lambda: [_PerStep()]), [],
        'it returns training hooks [_PerStep]'),
    'Scaffold init_fn': (
        lambda: _with(scaffold=lambda: tf.compat.v1.train.Scaffold(
            init_fn=lambda scaffold, session: None)), [],
        'its Scaffold has an init_fn'),
    'Scaffold ready_op': (
        lambda: _with(scaffold=lambda: tf.compat.v1.train.Scaffold(
            ready_op=tf.constant([], tf.string))), [],
        'its Scaffold has a ready_op'),
    'per-step SessionRunHook': (
        lambda: tf1_model_fn('W1'), [_PerStep()],
        'hooks=[_PerStep] given to train() see every step'),
}

# What the loop takes since it is copied from the one step the model_fn
# built (when the model_fn was built inside the loop's body, each of these
# cost a second graph, and a second call of the input_fn and model_fn).
_LOOPS_NOW = {
    'tensor initial value': lambda: _linear,
    'Scaffold Saver': lambda: _with(scaffold=lambda: tf.compat.v1.train.Scaffold(
        saver=tf.compat.v1.train.Saver(max_to_keep=3))),
    'Scaffold local_init_op': lambda: _with(
        scaffold=lambda: tf.compat.v1.train.Scaffold(
            local_init_op=tf.no_op())),
    'placeholder off the step': lambda: _with(predictions=_placeholder),
}


@pytest.mark.parametrize('case', sorted(_LOOPS_NOW))
def test_what_the_step_built_once_allows_runs_in_the_loop(tmp_path, caplog,
                                                          case):
  estimator = ert.Estimator(
      _LOOPS_NOW[case](), model_dir=str(tmp_path / 'm'),
      params={'batch_size': 16},
      config=ert.RunConfig(steps_per_loop=10, save_summary_steps=0,
                           log_step_count_steps=0))
  recorder = LoopRecorder()
  estimator.train(WORKLOADS['W1']['input_fn'], hooks=[recorder],
                  max_steps=20)
  assert LOOP_LINE in caplog.text and FALLBACK_LINE not in caplog.text
  assert recorder.steps == [10, 20]


def test_a_placeholder_the_step_reads_needs_a_run_per_step():
  """A run must feed it: the loop cannot."""
  from estimator_rt.training.graph import in_graph_loop  # pylint: disable=g-import-not-at-top
  from estimator_rt.training.graph import model as model_lib  # pylint: disable=g-import-not-at-top
  from estimator_rt.training.graph import placement as placement_lib  # pylint: disable=g-import-not-at-top
  w1 = tf1_model_fn('W1')

  def model_fn(features, labels, mode, params):
    spec = w1(features, labels, mode, params)
    scale = tf.compat.v1.placeholder(tf.float32, [], name='loss_scale')
    return spec._replace(loss=spec.loss * scale)

  with tf.Graph().as_default() as graph:
    x = tf.ones([4, 1])
    ops_before = len(graph.get_operations())
    step = model_lib.build(
        model_fn=model_fn, mode=ert.ModeKeys.TRAIN,
        batches=lambda: ({'x': x}, tf.zeros([4])), params={},
        config=ert.RunConfig(), placement=placement_lib.SingleDevicePlacement())
    reason = in_graph_loop.refusal_of_step(step, queue_runners_before=0,
                                           ops_before=ops_before)
  assert reason == "it creates the placeholder 'loss_scale' (fed per run)"


@pytest.mark.parametrize('case', sorted(_FALLBACKS))
def test_what_cannot_loop_runs_one_step_per_run_with_one_line(tmp_path,
                                                              caplog, case):
  make_model_fn, hooks, reason = _FALLBACKS[case]
  model_fn = make_model_fn()
  estimator = ert.Estimator(
      model_fn, model_dir=str(tmp_path / 'm'), params={'batch_size': 16},
      config=ert.RunConfig(steps_per_loop=10, save_summary_steps=0,
                           log_step_count_steps=0))
  recorder = LoopRecorder()
  estimator.train(WORKLOADS['W1']['input_fn'], hooks=[recorder, *hooks],
                  max_steps=20)
  lines = [r.getMessage() for r in caplog.records
           if FALLBACK_LINE in r.getMessage()]
  assert len(lines) == 1, lines
  assert reason in lines[0], lines[0]
  assert LOOP_LINE not in caplog.text
  assert recorder.steps[-1] == 20
  for hook in hooks:
    assert hook.runs == 20  # Every step, one run each.


def test_tf1_control_flow_runs_one_step_per_run(tmp_path, caplog):
  """Under TF1 control flow (`tf.compat.v1.disable_v2_behavior()`, as
  tf.estimator 2.15's own time series tests ran), a tf.while_loop's body is
  built into the graph itself, where the body's ops cannot be told from the
  rest: training takes one step per run, saying so, instead of failing."""
  tf.compat.v1.disable_control_flow_v2()
  try:
    recorder, log = _train('W1', tmp_path / 'm', caplog, steps_per_loop=10,
                           max_steps=12)
  finally:
    tf.compat.v1.enable_control_flow_v2()
  assert FALLBACK_LINE + 'control flow v1' in log
  assert recorder.steps[-1] == 12


def test_per_loop_safe_session_hooks_keep_the_loop(tmp_path, caplog):
  """StopAtStepHook stops at its step inside the loop's cut; StepCounterHook
  and NanTensorHook are the controller's own work."""
  estimator, input_fn = _estimator('W1', tmp_path / 'm', steps_per_loop=20)
  recorder = LoopRecorder()
  estimator.train(input_fn, max_steps=100, hooks=[
      recorder, tf.compat.v1.train.StopAtStepHook(last_step=33),
      tf.compat.v1.train.StepCounterHook(every_n_steps=5),
      tf.compat.v1.train.NanTensorHook(tf.constant(0.0))])
  assert LOOP_LINE in caplog.text and FALLBACK_LINE not in caplog.text
  assert recorder.steps == [1, 11, 21, 25, 31, 33]


def test_the_loop_graph_holds_the_variables_the_step_made(tmp_path, caplog):
  """The model_fn is built once, in the graph's own scope: its variables
  have tf.estimator's names, and the loop reads them."""
  engine = graph_engine.GraphEngine(
      model_fn=_linear, config=ert.RunConfig(model_dir=str(tmp_path)),
      params={'batch_size': 16}, warm_start_from=None,
      temporary_model_dir=False)
  placement = graph_engine.placement_lib.SingleDevicePlacement()
  made = engine._training_graph(  # pylint: disable=protected-access
      WORKLOADS['W1']['input_fn'], placement, [])
  graph, built = made.graph, made.built
  assert LOOP_LINE in caplog.text
  names = sorted(v.op.name for v in graph.get_collection(
      tf.compat.v1.GraphKeys.GLOBAL_VARIABLES))
  assert names == ['dense/bias', 'dense/kernel', 'global_step', 'offset']
  # The loop, the runtime's, is under one name scope beside the model's.
  assert any(op.name.startswith('estimator_rt/training_loop')
             for op in graph.get_operations())
  assert built.steps_run.graph is graph


def test_tpu_estimator_without_a_tpu_loops_iterations_per_loop(tmp_path,
                                                               caplog):
  """TPUEstimator(use_tpu=False) trains in the in-graph loop, in loops of
  TPUConfig.iterations_per_loop steps (tf.estimator's TPU loop length)."""

  w1 = tf1_model_fn('W1')

  def model_fn(features, labels, mode, params):
    spec = w1(features, labels, mode, params)
    return tpu.TPUEstimatorSpec(mode, loss=spec.loss,
                                    train_op=spec.train_op)

  estimator = tpu.TPUEstimator(
      model_fn=model_fn, model_dir=str(tmp_path), use_tpu=False,
      train_batch_size=16,
      config=tpu.RunConfig(
          save_summary_steps=0, log_step_count_steps=0,
          tpu_config=tpu.TPUConfig(iterations_per_loop=7)))
  recorder = LoopRecorder()
  estimator.train(lambda params: WORKLOADS['W1']['input_fn'](params),
                  hooks=[recorder], max_steps=20)
  assert 'one session run per loop of up to 7 steps' in caplog.text
  assert recorder.steps == [7, 14, 20]
  with pytest.raises(ert.UserInputError, match='iterations_per_loop=.7x.'):
    tpu.TPUEstimator(
        model_fn=model_fn, use_tpu=False, train_batch_size=16,
        config=tpu.RunConfig(
            tpu_config=tpu.TPUConfig(iterations_per_loop='7x')))


def test_the_input_fn_and_model_fn_are_called_once_whatever_the_form(
    tmp_path):
  """In the loop, one step per run for a reason known first (a per-step
  hook), or for one the step shows (training hooks): one call each, as
  tf.estimator made one per graph."""
  seen = []

  def counted(model_fn):
    def model_fn_counted(features, labels, mode, params):
      seen.append('model_fn')
      return model_fn(features, labels, mode, params)
    return model_fn_counted

  def input_fn(params):
    seen.append('input_fn')
    return WORKLOADS['W1']['input_fn'](params)

  cases = [(tf1_model_fn('W1'), []), (tf1_model_fn('W1'), [_PerStep()]),
           (_linear, []), (_with(training_hooks=lambda: [_PerStep()]), [])]
  for index, (model_fn, hooks) in enumerate(cases):
    seen.clear()
    ert.Estimator(counted(model_fn), model_dir=str(tmp_path / str(index)),
                  params={'batch_size': 16},
                  config=ert.RunConfig(steps_per_loop=10,
                                       save_summary_steps=0,
                                       log_step_count_steps=0)).train(
                                           input_fn, hooks=hooks, max_steps=2)
    assert seen == ['input_fn', 'model_fn'], index


def test_a_placeholder_with_a_default_keeps_the_loop(tmp_path, caplog):
  """Keras 2's learning phase is a placeholder_with_default: nothing feeds
  it in the loop, so it takes its default at every step, as it would in
  one step per run."""
  w1 = tf1_model_fn('W1')

  def model_fn(features, labels, mode, params):
    spec = w1(features, labels, mode, params)
    scale = tf.compat.v1.placeholder_with_default(1.0, [], name='scale')
    return spec._replace(loss=spec.loss * scale)

  ert.Estimator(model_fn, model_dir=str(tmp_path), params={'batch_size': 16},
                config=ert.RunConfig(steps_per_loop=10, save_summary_steps=0,
                                     log_step_count_steps=0)).train(
                                         WORKLOADS['W1']['input_fn'],
                                         max_steps=20)
  assert LOOP_LINE in caplog.text and FALLBACK_LINE not in caplog.text


def test_a_per_step_loop_counts_other_tasks_steps_from_the_step_read_last():
  """Between-graph, other workers move the global step between the session's
  opening and the controller's first read of it: a per-step loop asked for N
  steps from that read runs N steps of its own when nobody else steps, and
  does not end short of the controller's target (which reads as the input
  having ended)."""
  from estimator_rt.training.graph import session_loop  # pylint: disable=g-import-not-at-top
  with tf.Graph().as_default():
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = global_step.assign_add(1)
    others = global_step.assign_add(10)  # What other workers' steps do.
    loop = session_loop.SessionLoop(
        creator=tf.compat.v1.train.ChiefSessionCreator(), hooks=[],
        train_op=train_op, loss=tf.constant(0.5), global_step=global_step,
        summary_op=None, save_summary_steps=0, summary_writer=None,
        is_chief=True)
    with loop.open():
      loop.run(others)
      step = loop.global_step()  # As the controller reads it.
      _, ran, _, _, new_step = loop(None, 5)
  assert (step, ran, new_step) == (10, 5, 15)
