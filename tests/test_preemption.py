"""Preemption: SIGTERM (or SIGINT) saves at the end of the loop in flight and
exits with code 143; the same command then resumes from that checkpoint.

Real signals to real processes: the binary trains, a test sends SIGTERM at
a random moment once training runs, and checks the exit code, the time to
exit, the log line and the checkpoint at the announced step; then runs the
same command again and checks it resumed there.
"""

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt import checkpoints
from estimator_rt import controller as controller_lib
from estimator_rt import preemption

from _models import checkpoint_steps
from _models import ckpt_path
from _models import full_batch_input_fn
from _models import LoopRecorder
from _models import make_data
from _models import make_model_fn
from _models import quiet_config
from _models import read_global_step
import _cluster
from conftest import REPO_ROOT

X, Y = make_data(32, seed=4)
GRACE_SECS = 30  # Kubernetes' default terminationGracePeriodSeconds.


# ------------------------------------------------------------ in-process
def test_sigterm_in_process_saves_at_the_loop_end_and_resumes(tmp_path):
  """The Python API: a signal during train() (here sent by a hook at step
  20) stops after that loop with a checkpoint at 20 and PreemptedError."""
  model_dir = str(tmp_path / 'm')
  input_fn = full_batch_input_fn(X, Y)

  def send_sigterm(result):
    if result.global_step == 20:
      os.kill(os.getpid(), signal.SIGTERM)

  estimator = ert.Estimator(make_model_fn(), model_dir=model_dir,
                            config=quiet_config(save_checkpoints_steps=1000))
  previous = signal.getsignal(signal.SIGTERM)
  with pytest.raises(ert.PreemptedError) as raised:
    estimator.train(input_fn, hooks=[send_sigterm], max_steps=100)
  assert raised.value.global_step == 20
  assert 'Preempted (SIGTERM) at global step 20' in str(raised.value)
  assert checkpoint_steps(model_dir) == [0, 20]
  assert checkpoints.problem_with(ckpt_path(model_dir, 20)) is None
  # The handler was only there for train().
  assert signal.getsignal(signal.SIGTERM) == previous
  recorder = LoopRecorder()
  estimator.train(input_fn, hooks=[recorder], max_steps=50)
  assert recorder.results[0].global_step - recorder.results[0].steps == 20
  assert checkpoint_steps(model_dir) == [0, 20, 50]


@pytest.mark.parametrize('engine', ['eager', 'graph'])
def test_a_signal_while_training_is_built_stops_at_the_first_loop_end(
    tmp_path, engine, caplog):
  """A signal that comes while train() builds its model and loop (here sent
  from the input_fn) is a request, not an exit at once: synchronous workers
  are signalled one after another, and one still building must reach the
  loop end where they all agree to save and stop."""
  model_dir = str(tmp_path / 'm')
  caplog.set_level('INFO', logger='absl')
  sent = []

  def input_fn():
    if not sent:
      sent.append(True)
      os.kill(os.getpid(), signal.SIGTERM)
    return full_batch_input_fn(X, Y)()

  model_fn = make_model_fn() if engine == 'eager' else _slow_graph_model_fn()
  estimator = ert.Estimator(model_fn, model_dir=model_dir,
                            config=quiet_config(save_checkpoints_steps=1000))
  with pytest.raises(ert.PreemptedError) as raised:
    estimator.train(input_fn, max_steps=100)
  assert sent
  assert raised.value.global_step == 10  # The first loop's end.
  assert checkpoint_steps(model_dir) == [0, 10]
  if engine == 'graph':
    assert 'in-graph loop' in caplog.text


def _slow(loss):
  """`loss`, after a 20 ms sleep in the step."""
  slow = tf.py_function(lambda: time.sleep(0.02) or 0.0, [], tf.float32)
  slow.set_shape([])
  return loss + 0.0 * slow


def _slow_eager_model_fn():
  base = make_model_fn()

  def model_fn(features, labels, mode):
    spec = base(features, labels, mode)
    if mode != ert.ModeKeys.TRAIN:
      return spec
    return ert.EstimatorSpec(mode, loss=_slow(spec.loss),
                             optimizer=spec.optimizer)

  return model_fn


def _slow_graph_model_fn():
  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable('w', [X.shape[1], 1],
                                  initializer=tf.compat.v1.zeros_initializer())
    out = tf.matmul(features['x'], w)
    loss = tf.reduce_mean(tf.square(out - labels))
    if mode != ert.ModeKeys.TRAIN:
      return ert.EstimatorSpec(mode, loss=loss)
    loss = _slow(loss)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)

  return model_fn


@pytest.mark.parametrize('engine', ['eager', 'graph'])
def test_loops_are_cut_to_bound_the_time_to_a_save(tmp_path, monkeypatch,
                                                   engine):
  """Loops are cut so that one takes about max_loop_secs, in either engine:
  here steps take ~20 ms and max_loop_secs is 0.1 s, so loops after the
  second run a few steps, not steps_per_loop=100 (the first loop's time may
  be mostly tracing, so it does not decide the second's length)."""
  model_dir = str(tmp_path / 'm')
  model_fn = (_slow_eager_model_fn() if engine == 'eager' else
              _slow_graph_model_fn())
  monkeypatch.setattr(controller_lib, 'DEFAULT_MAX_LOOP_SECS', 0.1)
  recorder = LoopRecorder()
  estimator = ert.Estimator(model_fn, model_dir=model_dir,
                            config=quiet_config(steps_per_loop=100,
                                                save_checkpoints_steps=1000))
  estimator.train(full_batch_input_fn(X, Y), hooks=[recorder], max_steps=260)
  assert estimator.chosen_engine == engine
  steps = [r.steps for r in recorder.results]
  assert steps[:2] == [100, 100], steps
  assert max(steps[2:]) <= 10, steps
  assert sum(steps) == 260


# ---------------------------------------------------------- the binary
class Running:
  """A binary run whose stderr is collected line by line as it comes."""

  def __init__(self, args, env=None):
    full_env = _cluster.task_env(env)
    self.process = subprocess.Popen(
        [sys.executable, '-m', 'estimator_rt.main'] + list(args),
        env=full_env, cwd=REPO_ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    self.lines = []
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()

  def _read(self):
    for line in self.process.stdout:
      self.lines.append(line.rstrip('\n'))

  @property
  def output(self):
    return '\n'.join(self.lines)

  def wait_for_line(self, pattern, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
      if any(re.search(pattern, line) for line in list(self.lines)):
        return
      if self.process.poll() is not None:
        break
      time.sleep(0.05)
    raise AssertionError(f'no line matching {pattern!r}:\n'
                         + self.output[-4000:])

  def signal_and_wait(self, timeout):
    """Sends SIGTERM; returns (exit code, seconds from signal to exit)."""
    signalled = time.time()
    self.process.send_signal(signal.SIGTERM)
    code = self.wait(timeout=timeout)
    return code, time.time() - signalled

  def wait(self, timeout):
    try:
      self.process.wait(timeout=timeout)
    finally:
      if self.process.poll() is None:
        self.process.kill()
        self.process.wait()
    self._reader.join(timeout=10)
    return self.process.returncode


# The model each engine trains in the binary tests: the ready-made MLP on
# the digits (eager), a TF1-style regressor (graph, tests/_legacy_fns.py),
# and a canned wide & deep model (graph engine, from an estimator factory,
# embedding and crossed columns).
LEGACY_FNS = os.path.join(REPO_ROOT, 'tests', '_legacy_fns.py')
ENGINE_ARGS = {
    'eager': [],
    'graph': [f'--model_fn={LEGACY_FNS}:model_fn',
              f'--input_fn={LEGACY_FNS}:input_fn'],
    'canned': ['--model_fn=model_fns.canned:wide_and_deep',
               '--input_fn=input_fns.tabular:train_input_fn'],
}


def _binary_args(engine, model_dir, max_steps, *extra):
  return ['--mode=train', f'--model_dir={model_dir}',
          f'--max_steps={max_steps}', '--save_checkpoints_steps=100000',
          '--log_step_count_steps=100', '--tf_random_seed=1',
          *ENGINE_ARGS[engine], *extra]


_MIRRORED = ['--distribution_strategy=mirrored', '--num_cpu_devices=2']


# The canned model runs in the graph engine, whose mirrored run is tested
# with the TF1-style model_fn: locally is enough for it.
@pytest.mark.parametrize('engine, strategy_flags', [
    ('eager', []), ('eager', _MIRRORED), ('graph', []), ('graph', _MIRRORED),
    ('canned', [])], ids=['eager-local', 'eager-mirrored', 'graph-local',
                          'graph-mirrored', 'canned-local'])
def test_sigterm_saves_at_the_signal_step_exits_143_and_resumes(
    tmp_path, strategy_flags, engine):
  model_dir = str(tmp_path / 'm')
  run = Running(_binary_args(engine, model_dir, 10**6, *strategy_flags))
  try:
    run.wait_for_line(r'step \d+/1000000', timeout=120)
    time.sleep(random.uniform(0.0, 2.0))
    code, took = run.signal_and_wait(timeout=GRACE_SECS + 30)
  finally:
    if run.process.poll() is None:
      run.process.kill()
  assert code == preemption.PREEMPTED_EXIT_CODE, run.output[-4000:]
  assert took < GRACE_SECS, took
  match = re.search(r'Preempted \(SIGTERM\) at global step (\d+)', run.output)
  assert match, run.output[-4000:]
  step = int(match.group(1))
  assert checkpoint_steps(model_dir) == [0, step]
  assert read_global_step(ckpt_path(model_dir, step)) == step
  assert 'Traceback' not in run.output
  # The same command, asked to go a little further, resumes there.
  if engine == 'graph':
    assert 'running it in the graph engine' in run.output
  if engine in ('graph', 'canned'):
    # One device: the signal came during a session run of many steps.
    assert ('in-graph loop' in run.output) == (not strategy_flags)
  again = Running(_binary_args(engine, model_dir, step + 150,
                               *strategy_flags))
  assert again.wait(timeout=180) == 0, again.output[-4000:]
  assert f'(global step {step})' in again.output
  assert checkpoint_steps(model_dir) == [0, step, step + 150]


_SLOW_MODEL = '''
import time
import tensorflow as tf
import estimator_rt as ert

def model_fn(features, labels, mode):
  w = tf.Variable(tf.zeros([4, 1]), name='w')
  out = tf.matmul(features['x'], w)
  loss = tf.reduce_mean(tf.square(out - labels))
  if mode == ert.ModeKeys.TRAIN:
    # 50 ms a step: the first compiled loop (1000 steps) takes ~50 s.
    slow = tf.py_function(lambda: time.sleep(0.05) or 0.0, [], tf.float32)
    slow.set_shape([])
    loss = loss + 0.0 * slow
  if mode == ert.ModeKeys.EVAL:
    return ert.EstimatorSpec(mode, loss=loss)
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=tf.keras.optimizers.SGD(0.01))

def input_fn():
  x = tf.ones([8, 4])
  return tf.data.Dataset.from_tensors(({'x': x}, tf.ones([8, 1]))).repeat()
'''


def test_a_second_signal_exits_at_once(tmp_path):
  """The first SIGTERM waits for the loop in flight (here ~50 s); a second
  one exits at once with 143, saving nothing, the checkpoints intact."""
  module = tmp_path / 'slow_model.py'
  module.write_text(_SLOW_MODEL)
  model_dir = str(tmp_path / 'm')
  args = [f'--model_fn={module}:model_fn', f'--input_fn={module}:input_fn',
          '--mode=train', f'--model_dir={model_dir}', '--max_steps=100000',
          '--steps_per_loop=1000', '--save_checkpoints_steps=100000']
  run = Running(args)
  try:
    run.wait_for_line('Training from global step 0', timeout=120)
    time.sleep(3)  # Into the first compiled loop (~50 s long).
    run.process.send_signal(signal.SIGTERM)
    run.wait_for_line('SIGTERM received: training stops', timeout=20)
    time.sleep(1)
    code, took = run.signal_and_wait(timeout=30)
  finally:
    if run.process.poll() is None:
      run.process.kill()
  assert code == preemption.PREEMPTED_EXIT_CODE, run.output[-4000:]
  assert took < 5, took
  assert 'SIGTERM received again: exiting now with code 143' in run.output
  # Nothing saved but the state training started from (model.ckpt-0).
  assert checkpoint_steps(model_dir) == [0]


def test_sigterm_outside_training_exits_143_at_once(tmp_path):
  """During the final evaluation (no training in flight) a stop signal
  exits at once: the training it finished is saved."""
  module = tmp_path / 'slow_eval.py'
  module.write_text(_SLOW_MODEL.replace(
      'if mode == ert.ModeKeys.TRAIN:', 'if mode == ert.ModeKeys.EVAL:'))
  model_dir = str(tmp_path / 'm')
  run = Running([f'--model_fn={module}:model_fn',
                 f'--input_fn={module}:input_fn',
                 f'--eval_input_fn={module}:input_fn', '--eval_steps=1000',
                 f'--model_dir={model_dir}', '--max_steps=20',
                 '--save_checkpoints_steps=100000'])
  try:
    run.wait_for_line(r'Saved checkpoint .*model.ckpt-20', timeout=120)
    time.sleep(3)
    code, took = run.signal_and_wait(timeout=30)
  finally:
    if run.process.poll() is None:
      run.process.kill()
  assert code == preemption.PREEMPTED_EXIT_CODE, run.output[-4000:]
  assert took < 5, took
  assert 'SIGTERM received outside training' in run.output
  assert checkpoint_steps(model_dir) == [0, 20]
