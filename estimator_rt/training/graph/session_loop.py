"""The graph engine's inner loop: training steps in an open monitored session.

`SessionLoop` is to the graph engine what a compiled loop is to the eager
one (see `controller.TrainLoop`): `loop(iterator, num_steps)` runs up to
`num_steps` training steps, one `session.run` each, and returns the same
five values the compiled loops return, so that one `TrainController`
drives both engines. The monitored session stays open across calls, so
the model_fn's `Scaffold` and `SessionRunHook`s (`training_hooks`,
`training_chief_hooks`, `hooks=`) keep tf.estimator's meaning: created
once, `before_run`/`after_run` around every training step, `end` when
training ends normally. What the loop runs outside the steps (the weights
check, checkpoint saves, the workers' agreement) goes to the raw session,
unseen by the hooks.

A session whose peer task vanished must not be closed normally (closing
waits for the peer forever): a step that fails because a task is gone
raises `TaskLostError` and abandons the session, and any other close is
bounded in time.
"""

import contextlib
import copy
import sys
import threading
from typing import Any, Callable, Iterator, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf
from tensorflow.python.training import monitored_session  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.cluster import server as server_lib
from estimator_rt.training import controller
from estimator_rt.training import divergence
from estimator_rt.core import summaries
from estimator_rt.core import tf_errors
from estimator_rt.core.errors import one_line
from estimator_rt.core.errors import TaskLostError

SessionRunHook = tf.compat.v1.train.SessionRunHook

# How long closing a session (the hooks' end included) may take before the
# session is abandoned.
CLOSE_BOUND_SECS = {True: 600, False: 30}  # By is_chief.

# The errors of a step whose peer (a ps task, another worker) is gone.
_PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError,
                tf.errors.CancelledError)


class RunOnceHook(SessionRunHook):
  """Runs `op` once the session exists (after the Scaffold's init_fn and
  the restore): the input iterator's initializer, or making mirrored
  copies equal."""

  def __init__(self, op: tf.Operation):
    self._op = op

  def after_create_session(self, session, coord):
    del coord
    session.run(self._op)


def _acts_around_runs(hook: SessionRunHook) -> bool:
  """Whether `hook` does anything around a run: its `before_run` or
  `after_run` is not SessionRunHook's, which does nothing."""
  return any(getattr(getattr(hook, name), '__func__', None) is not
             getattr(SessionRunHook, name)
             for name in ('before_run', 'after_run'))


def plain_run(session, fetches, hooks: List[SessionRunHook], feed_list=None
              ) -> Optional[Callable[..., Any]]:
  """A callable of the raw session inside the monitored `session` (whose
  hooks are `hooks`) running `fetches` (a tensor, an op or a structure of
  them, as `Session.run` takes) with the values of `feed_list`'s tensors
  as its arguments, when the monitored session would add nothing to such
  a run: no hook acts around a run and no queue runner's thread can ask
  the session to stop. Otherwise None.

  It runs the same ops and raises the same errors (an input's end among
  them), and saves the monitored session's and `Session.run`'s per-call
  work: about 0.14 ms of a small model's 0.33 ms step here.
  """
  if any(map(_acts_around_runs, hooks)) or tf.compat.v1.get_collection(
      tf.compat.v1.GraphKeys.QUEUE_RUNNERS):
    return None
  return raw_session_of(session).make_callable(fetches, feed_list=feed_list)


def raw_session_of(session) -> tf.compat.v1.Session:
  """The tf.compat.v1.Session inside a monitored session: runs on it are
  seen by no hook."""

  def raw(step_context):
    return step_context.session

  return session.run_step_fn(raw)


class SaverWriter:
  """Gives a name-based `Saver` the `write(prefix, options)` method
  `checkpoints.CheckpointSaver` calls, on the training session.

  Attributes:
    graph_files: a `graph_files.TrainingGraph` whose MetaGraphDef each
      checkpoint gets beside it (`<prefix>.meta`, as tf.estimator's Saver
      wrote), or None for none. Set once the session exists.
  """

  def __init__(self, saver: tf.compat.v1.train.Saver, loop: 'SessionLoop'):
    self._saver = saver
    self._loop = loop
    self.graph_files = None

  def write(self, prefix: str, options=None) -> str:
    del options  # Written by this process's session, where it runs.
    # The Saver's own MetaGraphDef would be the graph as it runs, without
    # the in-graph loop's step at top level (graph_files.py); and it would
    # serialize the graph again at every save.
    path = self._saver.save(self._loop.raw_session, prefix,
                            write_meta_graph=False, write_state=False)
    if self.graph_files is not None:
      self.graph_files.write_meta(path)
    return path


class SessionLoop:
  """Runs training steps of a built graph in one monitored session.

  Built in the training graph (it adds a few ops); `open()` creates the
  session, and each call runs a loop of steps (see the module docstring).

  Args:
    creator: the SessionCreator (restores or initializes the variables).
    hooks: SessionRunHooks, in the order they run.
    train_op: one training step.
    loss: the step's loss.
    global_step: the global step variable.
    summary_op: the model_fn's merged `tf.compat.v1.summary` ops, or None.
    save_summary_steps: run `summary_op` with the steps the controller's
      `Schedule` of this many steps from the session's first step says
      (0: never); every synchronous worker runs it alike.
    summary_writer: where the summaries go (None: this task does not
      write).
    is_chief: bounds the close (a chief's end includes its hooks' work).
  """

  def __init__(self, *, creator, hooks: List[SessionRunHook], train_op,
               loss: tf.Tensor, global_step, summary_op: Optional[tf.Tensor],
               save_summary_steps: int,
               summary_writer: Optional[summaries.ScalarWriter],
               is_chief: bool):
    self._creator = creator
    self._hooks = list(hooks)
    self._global_step = global_step
    # Read after the step: a plain fetch of the variable in the same run
    # may be taken before or after the step's increment.
    with tf.control_dependencies([train_op]):
      step_after = tf.identity(global_step.read_value())
    self._fetches = {'step': step_after, 'loss': loss}
    self._summary_op = summary_op
    self._summary_every = save_summary_steps
    self._writer = summary_writer
    self._is_chief = is_chief
    self._sound_each = divergence.sound_each(
        [v for v in tf.compat.v1.global_variables()
         if v.dtype.base_dtype.is_floating])
    # Which variables were sound when the session opened (divergence.py).
    self._sound_at_open = None
    self._session = None
    self.raw_session = None
    # One step on the raw session, fetching (step, loss), where nothing
    # sees a step: set at open() (see there).
    self._plain_step = None
    self._step = None
    self._steps_run = 0
    self._summaries = controller.Schedule(0, 0)  # Set at open().

  @property
  def hooks(self) -> List[SessionRunHook]:
    """The SessionRunHooks the session runs, in their order."""
    return list(self._hooks)

  @property
  def last_step(self) -> Optional[int]:
    """The global step this task's session last saw (None before it
    opened)."""
    return self._step

  def for_next_call(self, *, creator, hooks: List[SessionRunHook],
                    summary_writer: Optional[summaries.ScalarWriter]
                    ) -> 'SessionLoop':
    """This loop, for another training call in the same graph (a kept one,
    graph/kept_sessions.py): what it built in the graph, with the call's
    session creator, hooks and writer, and nothing of this call's run."""
    loop = copy.copy(self)
    loop._creator = creator  # pylint: disable=protected-access
    loop._hooks = list(hooks)  # pylint: disable=protected-access
    loop._writer = summary_writer  # pylint: disable=protected-access
    loop._session = loop.raw_session = loop._step = None  # pylint: disable=protected-access
    loop._plain_step = None  # pylint: disable=protected-access
    loop._sound_at_open = None  # pylint: disable=protected-access
    loop._steps_run = 0  # pylint: disable=protected-access
    return loop

  def global_step(self) -> int:
    """The global step now (other tasks may move it, between-graph).

    The loop's own count moves up to it: `__call__` runs until the global
    step reaches this count plus its `num_steps`, and the controller asks
    for `num_steps` from the step it read here. From an older count (the
    step when the session opened, other workers' steps since), a loop
    would end short of the controller's target, which reads as the input
    having ended (a TF1 parameter-server chief once stopped so at step 49).
    """
    step = int(self.run(self._global_step))
    self._step = step if self._step is None else max(self._step, step)
    return step

  def state_finite(self) -> bool:
    """Whether every float variable sound when the session opened still
    is: the model did not diverge (divergence.py)."""
    return divergence.stayed_sound(self.run(self._sound_each),
                                   self._sound_at_open)

  def run(self, fetches, feed_dict=None) -> Any:
    """Runs `fetches` on the raw session: no hook sees it."""
    return self.raw_session.run(fetches, feed_dict=feed_dict)

  @contextlib.contextmanager
  def open(self) -> Iterator['SessionLoop']:
    """Creates the session for the duration of training, and closes it:
    normally (hooks' `end`) within CLOSE_BOUND_SECS; abandoned when a peer
    task vanished.

    Raises:
      TaskLostError: a step failed because a task it reads or writes is
        gone.
    """
    self._session = monitored_session._MonitoredSession(  # pylint: disable=protected-access
        session_creator=self._creator, hooks=self._hooks,
        should_recover=False)
    self.raw_session = raw_session_of(self._session)
    self._plain_step = self._plain_step_or_none()
    self._step = int(self.run(self._global_step))
    self._sound_at_open = self.run(self._sound_each)
    # The controller's schedule starts where training starts, here.
    self._summaries = controller.Schedule(self._step, self._summary_every)
    try:
      yield self
    except _PEER_ERRORS as e:
      server_lib.abandon(self._session)
      raise tf_errors.from_cause(TaskLostError, (
          f'A step failed because a task of the cluster is gone ('
          f'{type(e).__name__}: {one_line(e)}); the last '
          'checkpoint in model_dir is kept: restart the cluster to resume '
          'from it.'), e) from e
    except BaseException:
      self._close_within(sys.exc_info())
      raise
    logging.info('This task ran %d steps of its own.', self._steps_run)
    self._close_within((None, None, None))

  def _plain_step_or_none(self):
    """One step, (global step, loss), as `plain_run` runs it, or None."""
    return plain_run(self._session,
                     [self._fetches['step'], self._fetches['loss']],
                     self._hooks)

  def __call__(self, iterator, num_steps: int):
    """Runs steps until the global step reaches its value now plus
    `num_steps` (other tasks' steps count too, between-graph), the input
    ends, a hook stops the session, or a loss is not finite.

    Returns:
      (loss, steps run here, loss finite, every float variable finite,
      global step), as the compiled loops do.
    """
    del iterator  # The input is read by the graph itself.
    target = self._step + num_steps
    loss, ran, loss_finite = float('nan'), 0, True
    summary_at_end = (self._summary_op is not None and
                      self._summaries.due(target))
    plain_step = self._plain_step
    # Only a hook or a queue runner's thread can ask a session to stop.
    while self._step < target and (plain_step is not None or
                                   not self._session.should_stop()):
      # The summary op runs with the step expected to end the loop.
      with_summary = summary_at_end and self._step + 1 >= target
      monitored = plain_step is None or with_summary
      try:
        if not monitored:
          step, loss = plain_step()
        else:
          step, loss = self._monitored_step(with_summary)
      except tf.errors.OutOfRangeError:
        break  # The input ended.
      # The loss as the run gave it, a NumPy scalar of its dtype: the step
      # log prints it as 2.15 did (tf_log.number).
      self._step = int(step)
      if monitored and (self._step >= target or
                        self._session.should_stop()):
        # A hook's after_run may have set the global step after the run
        # fetched it (AdaNet's _GlobalStepSetterHook): the loop ends, and
        # the checkpoint is named, at the value the variable holds, as
        # 2.15's StopAtStepHook and CheckpointSaverHook.end read it.
        self._step = int(self.run(self._global_step))
      ran += 1
      if not divergence.loss_value_is_sound(loss):
        loss_finite = False
        break
    self._steps_run += ran
    return (loss, ran, loss_finite, self.state_finite(),
            self._step)

  def _monitored_step(self, with_summary: bool):
    """One step in the monitored session (its hooks see it), the summary
    op's result written if `with_summary`: (global step, loss)."""
    fetches = self._fetches
    if with_summary:
      fetches = dict(fetches, summary=self._summary_op)
    results = self._session.run(fetches)
    if with_summary and self._writer is not None:
      self._writer.write_summary(results['summary'], int(results['step']))
    return results['step'], results['loss']

  def _close_within(self, exc_info) -> None:
    """Closes the session (the hooks' `end` only without an exception) in
    a thread, waiting CLOSE_BOUND_SECS at most; re-raises what that raised.
    """
    raised = []
    session = self._session
    # The default graph is per thread: the hooks' end builds nothing, but
    # running a Saver needs to see its graph (a thread starts in eager mode).
    graph = tf.compat.v1.get_default_graph()

    def close():
      try:
        with graph.as_default():
          session.__exit__(*exc_info)
      except BaseException as e:  # pylint: disable=broad-except
        raised.append(e)

    bound = CLOSE_BOUND_SECS[self._is_chief]
    thread = threading.Thread(target=close, name='close-session', daemon=True)
    thread.start()
    thread.join(bound)
    if thread.is_alive():
      logging.warning('Closing the training session took more than %d s (a '
                      'task of the cluster is gone?); leaving it open.', bound)
      server_lib.linger(thread)
      server_lib.abandon(session)
      return
    if raised and exc_info[0] is None:
      raise raised[0]


class InGraphSessionLoop(SessionLoop):
  """A `SessionLoop` whose steps run in the graph (see in_graph_loop.py):
  one `session.run` per call, of up to `num_steps` steps.

  Args:
    loop: the `in_graph_loop.LoopModel` built into the training graph.
    Others: as for `SessionLoop` (`hooks` are only the runtime's own
      run-once hooks: SessionRunHooks that need every step rule the
      loop out, see `in_graph_loop.refusal`).
  """

  def __init__(self, *, loop, creator, hooks: List[SessionRunHook],
               save_summary_steps: int,
               summary_writer: Optional[summaries.ScalarWriter],
               is_chief: bool):
    super().__init__(
        creator=creator, hooks=hooks, train_op=loop.steps_run,
        loss=loop.last_loss, global_step=loop.global_step,
        summary_op=loop.summary, save_summary_steps=save_summary_steps,
        summary_writer=summary_writer, is_chief=is_chief)
    self._loop = loop
    self._fetches = dict(self._fetches, ran=loop.steps_run,
                         finite=loop.loss_finite)

  def _plain_step_or_none(self):
    """None: a call is one run already."""
    return None

  def __call__(self, iterator, num_steps: int):
    """See `SessionLoop.__call__`: the same five values, from one run."""
    del iterator  # The input is read by the graph itself.
    target = self._step + num_steps
    fetches = self._fetches
    feed = {self._loop.num_steps: num_steps}
    if self._summaries.due(target):
      fetches = dict(fetches, summary=self._summary_op)
      feed[self._loop.record_summaries] = True
    start = self._step
    try:
      results = self._session.run(fetches, feed)
    except tf.errors.OutOfRangeError:
      # The input ended inside the loop: the steps before its end ran, and
      # the global step and the last loss variable tell how far it got.
      self._step = self.global_step()
      ran = self._step - start
      self._steps_run += ran
      loss = self.run(self._loop.last_loss_variable)
      return (loss, ran, divergence.loss_value_is_sound(loss) or ran == 0,
              self.state_finite(), self._step)
    self._step, ran = int(results['step']), int(results['ran'])
    self._steps_run += ran
    if results.get('summary') and self._writer is not None:
      self._writer.write_summary(results['summary'], self._step)
    return (results['loss'], ran, bool(results['finite']),
            self.state_finite(), self._step)
