"""The outer loop at its seam: `TrainController` driving small fake inner
loops (no TensorFlow model), as Orbit's controller tests do.

Every policy between loops is checked here once, for both engines, in
milliseconds: saves on the exact step, summaries, listeners, the end of
input, divergence, preemption, the agreement of synchronous workers and
the loop-time cap. Checkpoints are real files written by the real
`CheckpointSaver` (rotation, state file) from a fake checkpoint object.
"""

import collections
import os

import numpy as np
import pytest
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.training import controller as controller_lib
from estimator_rt.core import errors
from estimator_rt.training import hooks as hooks_lib
from estimator_rt.core import summaries
from estimator_rt.core import tf_log


class FakeLoop:
  """An inner loop: each step adds 1 to the global step and takes
  `secs_per_step` on `clock`; the loss is 1/step, or NaN at `nan_at`.

  Attributes:
    calls: the num_steps of every call.
  """

  def __init__(self, *, clock=None, secs_per_step=0.0, start=0,
               input_steps=None, nan_at=None, weights_nan_at=None):
    self.step = start
    self.calls = []
    self._clock = clock
    self._secs = secs_per_step
    self._input_steps = input_steps
    self._nan_at = nan_at
    self._weights_nan_at = weights_nan_at

  def __call__(self, iterator, num_steps):
    assert iterator == 'the iterator'
    assert isinstance(num_steps, int) and num_steps > 0
    self.calls.append(num_steps)
    loss, ran, finite = float('nan'), 0, True
    while ran < num_steps:
      if self._input_steps is not None and self.step >= self._input_steps:
        break
      self.step += 1
      ran += 1
      if self._clock is not None:
        self._clock.now += self._secs
      loss = float('nan') if self.step == self._nan_at else 1.0 / self.step
      if loss != loss:
        finite = False
        break
    weights_finite = not (self._weights_nan_at is not None and
                          self.step >= self._weights_nan_at)
    return loss, ran, finite, weights_finite, self.step


class FakeCheckpoint:
  """What a save writes: the two files of a checkpoint, holding its step."""

  def __init__(self, loop):
    self._loop = loop

  def write(self, prefix, options=None):
    del options
    for suffix in ('.index', '.data-00000-of-00001'):
      with open(prefix + suffix, 'w') as f:
        f.write(str(self._loop.step))
    return prefix


class Clock:
  now = 1000.0

  def time(self):
    return self.now


def make_controller(tmp_path, loop, *, every_steps=10, steps_per_loop=7,
                    summary_steps=0, count_steps=0, hooks=(), listeners=(),
                    agree=None, stop_signal=None, max_loop_secs=None,
                    writer=True, logs_updated_step=False):
  saver = checkpoints.CheckpointSaver(
      checkpoint=FakeCheckpoint(loop), directory=str(tmp_path),
      max_to_keep=0, every_steps=every_steps, every_secs=None)
  return controller_lib.TrainController(
      train_loop=loop, iterator='the iterator',
      global_step=lambda: loop.step, steps_per_loop=steps_per_loop,
      hooks=[hooks_lib.as_hook(h) for h in hooks], saver=saver,
      summary_writer=(summaries.ScalarWriter(str(tmp_path)) if writer
                      else None),
      save_summary_steps=summary_steps, log_step_count_steps=count_steps,
      saving_listeners=listeners,
      agree=agree, stop_signal=stop_signal, max_loop_secs=max_loop_secs,
      logs_updated_step=logs_updated_step)


def saved_steps(directory):
  return sorted(int(n.split('-')[1].split('.')[0])
                for n in os.listdir(directory) if n.endswith('.index'))


def test_loops_are_cut_so_saves_summaries_and_hooks_land_on_their_step(
    tmp_path):
  loop = FakeLoop()
  seen = []
  stop_at = hooks_lib.StopAtStepHook(last_step=33)
  controller = make_controller(
      tmp_path, loop, every_steps=10, steps_per_loop=3, summary_steps=4,
      count_steps=12,
      hooks=[stop_at, lambda result: seen.append(result.global_step)])
  assert controller.run(max_steps=50) == 33
  # Every loop ends at the first of: 3 steps, the next save (10, 20, ...),
  # the next summary (the run's first step, then every 4: 1, 5, 9, ..., as
  # tf.estimator 2.15's SummarySaverHook), the next step count (1, 13, 25),
  # the hook's step (33).
  assert seen == [1, 4, 5, 8, 9, 10, 13, 16, 17, 20, 21, 24, 25, 28, 29, 30,
                  33]
  assert loop.calls == [b - a for a, b in zip([0] + seen, seen)]
  # Saves at the start (step 0), on the exact multiples, plus the final one
  # where the hook stopped.
  assert saved_steps(tmp_path) == [0, 10, 20, 30, 33]
  scalars = summaries.read_scalars(str(tmp_path))
  # No summary at the end (2.15 wrote none there either).
  assert [s for s, _ in scalars['loss']] == [1, 5, 9, 13, 17, 21, 25, 29, 33]
  assert scalars['loss'][1][1] == pytest.approx(1 / 5)
  # Counted from the first step counted: at 13 and 25, not at 1.
  assert [s for s, _ in scalars['global_step/sec']] == [13, 25]
  assert all(v > 0 for _, v in scalars['global_step/sec'])


def test_a_resumed_run_summarizes_at_its_first_step_then_every_n(tmp_path):
  """2.15's timers started with each train() call: from step 150, every
  100 steps, at 151 and 251."""
  loop = FakeLoop()
  loop.step = 150
  controller = make_controller(tmp_path, loop, every_steps=None,
                               steps_per_loop=1000, summary_steps=100,
                               count_steps=100)
  assert controller.run(max_steps=320) == 320
  scalars = summaries.read_scalars(str(tmp_path))
  assert [s for s, _ in scalars['loss']] == [151, 251]
  assert [s for s, _ in scalars['global_step/sec']] == [251]


@pytest.mark.parametrize('updated, logged', [(False, [0, 2, 4]),
                                             (True, [1, 3, 5])])
def test_step_lines_follow_the_save_of_their_step(tmp_path, caplog, updated,
                                                  logged):
  """2.15's hooks at a step: the CheckpointSaverHook's save, then
  StepCounterHook's `global_step/sec`, then LoggingTensorHook's `loss =`,
  whose step is the one the step started from, or (a reference variable
  global step, TF1 behaviour) the one it ended at."""
  loop = FakeLoop()
  controller = make_controller(tmp_path, loop, every_steps=5,
                               steps_per_loop=10, count_steps=2,
                               logs_updated_step=updated)
  with caplog.at_level('INFO', logger='tensorflow'):
    controller.run(max_steps=5)
  lines = [r.getMessage().split(' into ')[0].split(' (')[0]
           for r in caplog.records if r.name == 'tensorflow']
  lines = [l.split(': ')[0] if l.startswith('global') else l for l in lines]
  loss = [l for l in lines if l.startswith('loss')]
  assert [int(l.rsplit(' ', 1)[1]) for l in loss] == logged
  assert lines == ['Saving checkpoints for 0', loss[0], 'global_step/sec',
                   loss[1], 'Saving checkpoints for 5', 'global_step/sec',
                   loss[2]]


def test_the_training_scalars_are_simple_values_as_2_15_wrote_them(tmp_path):
  """2.15's `loss` (a `tf.compat.v1.summary.scalar`) and `global_step/sec`
  (StepCounterHook's) were `simple_value`s without metadata: programs read
  `value.simple_value` from `summary_iterator` (a tensor there read 0.0)."""
  loop = FakeLoop()
  controller = make_controller(tmp_path, loop, every_steps=None,
                               steps_per_loop=10, summary_steps=2,
                               count_steps=2)
  controller.run(max_steps=5)
  found = collections.defaultdict(list)
  for name in os.listdir(tmp_path):
    if 'tfevents' in name:
      for event in tf.compat.v1.train.summary_iterator(
          str(tmp_path / name)):
        for value in event.summary.value:
          assert value.WhichOneof('value') == 'simple_value', value
          assert not value.HasField('metadata'), value
          found[value.tag].append((event.step, value.simple_value))
  assert found['loss'] == [(1, 1.0), (3, pytest.approx(1 / 3)),
                           (5, pytest.approx(1 / 5))]
  assert [s for s, v in found['global_step/sec'] if v > 0] == [3, 5]


def test_the_loss_lines_print_it_as_2_15_printed_a_float32(tmp_path, caplog):
  """`loss = 0.33333334, step = 2`, as 2.15's LoggingTensorHook printed the
  float32 a session run gave (NumPy's shortest repr), not the Python
  float's 0.3333333333333333; `Loss for final step` alike."""
  loop = FakeLoop()
  controller = make_controller(tmp_path, loop, every_steps=None,
                               steps_per_loop=10, count_steps=2)
  with caplog.at_level('INFO', logger='tensorflow'):
    controller.run(max_steps=3)
  lines = [r.getMessage() for r in caplog.records if r.name == 'tensorflow'
           and r.getMessage().startswith('loss')]
  assert [l.split(' (')[0] for l in lines] == [
      'loss = 1.0, step = 0', 'loss = 0.33333334, step = 2']
  assert str(controller.last_loss) == '0.33333334'
  assert controller.last_loss.dtype == np.float32


def test_a_logged_number_keeps_the_dtype_a_session_run_gave():
  """tf_log.number: a float64 loss prints all its digits and a float16 its
  few, as 2.15 printed what its session run returned; a tensor's value is
  its NumPy scalar; a Python float is a float32 (the engines' losses)."""
  assert str(tf_log.number(np.float64(0.1) + np.float64(0.2))) == (
      '0.30000000000000004')
  assert str(tf_log.number(np.float16(1.1927))) == '1.192'
  assert str(tf_log.number(tf.constant(1.1927422285079956))) == '1.1927422'
  assert str(tf_log.number(1.1927422285079956)) == '1.1927422'
  assert str(tf_log.number(np.array(2.5, np.float64))) == '2.5'
  assert tf_log.number(None) is None


def test_listeners_see_every_save_the_last_one_included(tmp_path):
  loop = FakeLoop()
  heard = []
  make_controller(tmp_path, loop, every_steps=10, steps_per_loop=100,
                  listeners=[lambda path, step: heard.append(step)]).run(
                      max_steps=25)
  assert heard == [0, 10, 20, 25]


def test_training_saves_the_state_it_starts_from_unless_resumed(tmp_path):
  # tf.estimator 2.15's CheckpointSaverHook saved when its session started
  # (model.ckpt-0 on a new model_dir), and its listeners heard it; a stop
  # a listener asked for there was ignored.
  loop = FakeLoop()
  heard = []
  make_controller(tmp_path, loop, every_steps=10, steps_per_loop=100,
                  listeners=[lambda path, step: heard.append(step) or True]
                  ).run(max_steps=10)
  assert saved_steps(tmp_path) == [0, 10]
  assert heard == [0, 10]
  # Resumed from the checkpoint at step 10: that one is not written again.
  loop = FakeLoop(start=10)
  saver = checkpoints.CheckpointSaver(
      checkpoint=FakeCheckpoint(loop), directory=str(tmp_path),
      max_to_keep=0, every_steps=10, every_secs=None, last_saved_step=10)
  assert not saver.saves_at_start()
  # Without a save schedule (both RunConfig settings None) there was no
  # CheckpointSaverHook: only the final checkpoint.
  assert not checkpoints.CheckpointSaver(
      checkpoint=FakeCheckpoint(loop), directory=str(tmp_path),
      max_to_keep=0, every_steps=None, every_secs=None).saves_at_start()
  assert checkpoints.CheckpointSaver(
      checkpoint=FakeCheckpoint(loop), directory=str(tmp_path),
      max_to_keep=0, every_steps=None, every_secs=600.0).saves_at_start()


def test_a_listener_asking_to_stop_ends_training_after_its_save(tmp_path):
  loop = FakeLoop()
  controller = make_controller(
      tmp_path, loop, every_steps=10, steps_per_loop=100,
      listeners=[lambda path, step: step == 20])
  assert controller.run(max_steps=100) == 20
  assert saved_steps(tmp_path) == [0, 10, 20]


def test_the_end_of_input_stops_training_and_saves_there(tmp_path):
  loop = FakeLoop(input_steps=13)
  assert make_controller(tmp_path, loop).run(max_steps=None) == 13
  assert saved_steps(tmp_path) == [0, 10, 13]


@pytest.mark.parametrize('nan_at, weights_nan_at, reported', [
    (15, None, 'the loss was nan at global step 15'),
    (20, None, 'the loss was nan at global step 20'),  # A save step.
    (None, 17, 'NaN or infinite in global steps 16-20'),
])
def test_a_diverged_loop_raises_before_any_hook_or_save(
    tmp_path, nan_at, weights_nan_at, reported):
  loop = FakeLoop(nan_at=nan_at, weights_nan_at=weights_nan_at)
  seen = []
  controller = make_controller(
      tmp_path, loop, every_steps=10, steps_per_loop=5,
      hooks=[lambda result: seen.append(result.global_step)])
  with pytest.raises(errors.NanLossError) as raised:
    controller.run(max_steps=50)
  assert reported in str(raised.value)
  assert 'the newest checkpoint, at step 10, is the last finite one' in str(
      raised.value)
  assert saved_steps(tmp_path) == [0, 10]
  assert max(seen) < (nan_at or weights_nan_at)


def test_a_stop_signal_saves_at_the_loop_end_without_listeners(tmp_path):
  loop = FakeLoop()
  heard = []
  controller = make_controller(
      tmp_path, loop, every_steps=1000, steps_per_loop=6,
      listeners=[lambda path, step: heard.append(step)],
      stop_signal=lambda: 'SIGTERM' if loop.step >= 14 else None)
  with pytest.raises(errors.PreemptedError) as raised:
    controller.run(max_steps=100)
  assert raised.value.global_step == 18
  assert 'Preempted (SIGTERM) at global step 18' in str(raised.value)
  assert saved_steps(tmp_path) == [0, 18]
  # The save at the start only: an evaluation would eat the grace period.
  assert heard == [0]


class TwoWorkers:
  """The agreement of two synchronous workers, this one and a peer whose
  decisions after each loop are given: flags are or-ed, caps averaged."""

  def __init__(self, peer):
    self._peer = list(peer)
    self.agreed = []

  def sum_over_replicas(self, values):
    peer = self._peer.pop(0)
    total = [a + b for a, b in zip(values, peer)]
    self.agreed.append(total)
    return total


def test_synchronous_workers_act_on_what_any_of_them_decided(tmp_path):
  # The peer asks for a save after loop 2 and is preempted after loop 3.
  workers = TwoWorkers([[0, 0, 0, 5], [0, 1, 0, 5], [0, 0, 1, 5]])
  loop = FakeLoop()
  controller = make_controller(
      tmp_path, loop, every_steps=1000, steps_per_loop=5,
      agree=controller_lib.agreement(workers.sum_over_replicas, replicas=2))
  with pytest.raises(errors.PreemptedError, match='another worker'):
    controller.run(max_steps=100)
  assert loop.calls == [5, 5, 5]
  # The start, the peer's save, the stop.
  assert saved_steps(tmp_path) == [0, 10, 15]
  assert len(workers.agreed) == 3


def test_the_agreed_loop_cap_is_the_mean_of_the_workers_caps(tmp_path,
                                                            monkeypatch):
  # This worker's steps take 1 s (cap 2 with a 2 s budget once it has timed
  # a loop); the peer always says 6: every worker then runs loops of
  # (2 + 6) / 2 = 4 steps.
  clock = Clock()
  monkeypatch.setattr(controller_lib.time, 'time', clock.time)
  workers = TwoWorkers([[0, 0, 0, 6]] * 10)
  loop = FakeLoop(clock=clock, secs_per_step=1.0)
  controller = make_controller(
      tmp_path, loop, every_steps=1000, steps_per_loop=20,
      agree=controller_lib.agreement(workers.sum_over_replicas, replicas=2),
      max_loop_secs=2.0)
  controller.run(max_steps=48)
  # Loop 1: this worker's first cap is steps_per_loop, 20, so they agree
  # on (20 + 6) / 2 = 13 for loop 2.
  assert loop.calls == [20, 13, 4, 4, 4, 3], loop.calls


def test_slow_loops_are_cut_to_bound_the_time_to_a_save(tmp_path,
                                                       monkeypatch):
  clock = Clock()
  monkeypatch.setattr(controller_lib.time, 'time', clock.time)
  loop = FakeLoop(clock=clock, secs_per_step=0.5)
  controller = make_controller(tmp_path, loop, every_steps=1000,
                               steps_per_loop=100, max_loop_secs=5.0)
  controller.run(max_steps=260)
  # The first two loops run steps_per_loop (the first may be tracing);
  # then 5 s / 0.5 s = 10 steps per loop.
  assert loop.calls[:4] == [100, 100, 10, 10], loop.calls
  assert loop.step == 260


def test_fast_loops_keep_their_length(tmp_path, monkeypatch):
  clock = Clock()
  monkeypatch.setattr(controller_lib.time, 'time', clock.time)
  loop = FakeLoop(clock=clock, secs_per_step=0.001)
  make_controller(tmp_path, loop, every_steps=1000, steps_per_loop=100,
                  max_loop_secs=5.0).run(max_steps=300)
  assert loop.calls == [100, 100, 100]


class SharedStepLoop(FakeLoop):
  """A between-graph task's inner loop (graph/session_loop.SessionLoop's
  contract): the global step is shared with other tasks; `read` is this
  task's newest view of it, moved up by every read of the global step and
  every step it runs, and a call runs until the global step reaches that
  view plus `num_steps`."""

  def __init__(self):
    super().__init__()
    self.view = 0

  def read(self) -> int:
    self.view = max(self.view, self.step)
    return self.step

  def __call__(self, iterator, num_steps):
    target = self.view + num_steps
    loss, ran, finite, weights_finite, _ = super().__call__(
        iterator, max(target - self.step, 0) or 1)
    self.view = self.step
    return loss, ran, finite, weights_finite, self.step


def test_between_graph_training_counts_from_the_step_its_saves_read(
    tmp_path):
  """Another worker's steps land between a loop's end and the save after
  it (here: 20 of them, at step 10). The save names the checkpoint by the
  global step it reads (30); the next loop is asked for from that step too,
  so this task stops at max_steps instead of training 10 steps past it
  alone (a checkpoint at 40 of max_steps=30 was once seen so)."""
  loop = SharedStepLoop()

  def other_worker(result):
    if result.global_step == 10:
      loop.step += 20

  saver = checkpoints.CheckpointSaver(
      checkpoint=FakeCheckpoint(loop), directory=str(tmp_path),
      max_to_keep=0, every_steps=10, every_secs=None)
  controller = controller_lib.TrainController(
      train_loop=loop, iterator='the iterator', global_step=loop.read,
      steps_per_loop=100, hooks=[hooks_lib.as_hook(other_worker)],
      saver=saver, summary_writer=None, save_summary_steps=0,
      asynchronous=True)
  assert controller.run(max_steps=30) == 30
  assert saved_steps(str(tmp_path)) == [0, 30]
  assert loop.calls == [10]
