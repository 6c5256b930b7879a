"""`train_and_evaluate`: train, evaluate each new checkpoint, export; and
the role each task of a TF_CONFIG cluster plays in it.

What each role does (local, standalone client, chief, worker, ps,
evaluator) is decided once, in roles.py; `train_and_evaluate` runs the part
of the role this process has.
"""

import dataclasses
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from absl import logging
import tensorflow as tf

from estimator_rt import checkpoints
from estimator_rt import cluster
from estimator_rt import engine_choice
from estimator_rt import evaluator as evaluator_lib
from estimator_rt import roles
from estimator_rt import server as server_lib
from estimator_rt.preemption import PREEMPTED_EXIT_CODE
from estimator_rt.errors import check_count
from estimator_rt.errors import MAX_INT32
from estimator_rt.errors import PreemptedError
from estimator_rt.errors import TaskLostError
from estimator_rt.errors import UserInputError


class ChiefLostError(RuntimeError):
  """A server task's chief vanished before it signalled the end of training."""


@dataclasses.dataclass(frozen=True)
class TrainSpec:
  """What to train on and for how long.

  Attributes:
    input_fn: the training input_fn.
    max_steps: train up to this global step (None: until input ends).
    hooks: hooks for the training loop.
    saving_listeners: called after each checkpoint save with (path, step)
      (also CheckpointSaverListener objects, as in tf.estimator).
  """

  input_fn: Callable
  max_steps: Optional[int] = None
  hooks: Sequence[Any] = ()
  saving_listeners: Sequence[Any] = ()

  def __post_init__(self):
    object.__setattr__(self, 'hooks', tuple(self.hooks or ()))
    object.__setattr__(self, 'saving_listeners',
                       tuple(self.saving_listeners or ()))
    if not callable(self.input_fn):
      raise UserInputError(
          f'TrainSpec: input_fn={self.input_fn!r} is not callable.')
    check_count('TrainSpec: max_steps', self.max_steps)


@dataclasses.dataclass(frozen=True)
class EvalSpec:
  """What to evaluate on, how often, and what to export.

  Attributes:
    input_fn: the evaluation input_fn.
    steps: batches per evaluation (None: until the input ends).
    name: evaluation name; summaries go to model_dir/eval_<name>.
    hooks: hooks run at the end of each evaluation.
    exporters: Exporter objects run after each evaluation.
    start_delay_secs: a separate evaluator task waits this long before its
      first evaluation (unused in local mode). Default 0: tf.estimator's 120
      only delayed the first result, since the evaluator waits for a
      checkpoint anyway.
    throttle_secs: evaluate a new checkpoint only if this many seconds
      passed since the last evaluation began. The final checkpoint is
      always evaluated.
  """

  input_fn: Callable
  steps: Optional[int] = 100
  name: Optional[str] = None
  hooks: Sequence[Any] = ()
  exporters: Sequence[Any] = ()
  start_delay_secs: float = 0
  throttle_secs: float = 600

  def __post_init__(self):
    object.__setattr__(self, 'hooks', tuple(self.hooks or ()))
    if self.exporters is None:
      object.__setattr__(self, 'exporters', ())
    if not callable(self.input_fn):
      raise UserInputError(
          f'EvalSpec: input_fn={self.input_fn!r} is not callable.')
    check_count('EvalSpec: steps', self.steps, maximum=MAX_INT32)
    if self.throttle_secs < 0:
      raise UserInputError(
          f'EvalSpec: throttle_secs={self.throttle_secs!r} must be >= 0.')
    if not isinstance(self.exporters, (list, tuple)):
      object.__setattr__(self, 'exporters', (self.exporters,))
    names = [e.name for e in self.exporters]
    if len(set(names)) != len(names):
      raise UserInputError(
          f'EvalSpec: exporter names {names} must be unique.')


class CheckpointEvaluator:
  """Evaluates checkpoints once each and runs the exporters after.

  Shared by local train_and_evaluate and the evaluator task: it remembers
  which global steps it evaluated, so no checkpoint is evaluated twice.
  """

  def __init__(self, *, estimator, eval_spec: EvalSpec):
    self._estimator = estimator
    self._spec = eval_spec
    self.evaluated_steps: List[int] = []
    self.last_result: Optional[Dict[str, Any]] = None
    self.export_results: List[str] = []
    # exporter name -> the checkpoint it last exported: no checkpoint is
    # exported twice by one exporter.
    self._exported: Dict[str, str] = {}

  def evaluate(self, checkpoint_path: str, *,
               is_final: bool) -> Optional[Dict[str, Any]]:
    """Evaluates `checkpoint_path` unless its step was evaluated already."""
    step = checkpoints.checkpoint_step(checkpoint_path)
    if step in self.evaluated_steps:
      return None
    result = self._estimator.evaluate(
        self._spec.input_fn, steps=self._spec.steps, hooks=self._spec.hooks,
        checkpoint_path=checkpoint_path, name=self._spec.name)
    self.evaluated_steps.append(step)
    self.last_result = result
    self.export(checkpoint_path, is_final=is_final)
    return result

  def export(self, checkpoint_path: str, *, is_final: bool) -> None:
    """Runs each exporter on the last evaluated checkpoint, unless that
    exporter already exported it."""
    for exporter in self._spec.exporters:
      if self._exported.get(exporter.name) == checkpoint_path:
        continue
      # tf.estimator's call, positional: user Exporters implement it.
      export_path = os.path.join(self._estimator.model_dir, 'export',
                                 exporter.name)
      path = exporter.export(self._estimator, export_path, checkpoint_path,
                             self.last_result, is_final)
      if path:
        logging.info('Exporter %r wrote %s', exporter.name, path)
        self._exported[exporter.name] = checkpoint_path
        self.export_results.append(path)


def train_and_evaluate(estimator, train_spec: TrainSpec,
                       eval_spec: EvalSpec
                       ) -> Tuple[Optional[Dict[str, Any]], List[str]]:
  """Trains, evaluating after new checkpoints, then evaluates and exports.

  Local mode (no cluster), and a standalone client (`remote_cluster`),
  which is the only process of its job: evaluation runs in this process
  after each checkpoint save, never at step 0 and never twice for one
  checkpoint, at most once per `eval_spec.throttle_secs`; after training,
  the final checkpoint is evaluated (if it was not already) and the
  exporters run with `is_the_final_export=True`.

  Returns:
    (metrics of the last evaluation, paths of all exports written).
  """
  if not isinstance(train_spec, TrainSpec):
    raise UserInputError(f'train_spec={train_spec!r} must be a TrainSpec.')
  if not isinstance(eval_spec, EvalSpec):
    raise UserInputError(f'eval_spec={eval_spec!r} must be an EvalSpec.')
  role = estimator.config.role
  if role.evaluates_in_process:
    # A bad eval input_fn or EVAL-mode model_fn fails now, before training
    # writes anything to model_dir.
    estimator.check_evaluation(eval_spec.input_fn, steps=eval_spec.steps,
                               name=eval_spec.name)
  task = role.task
  if task is not None:
    cluster.check_strategy(task, role.strategy_name)
    logging.info('Running as %s. Role: %s', task.describe(), role.describe())
  if role.kind in (roles.LOCAL, roles.STANDALONE_CLIENT):
    return _run_local(estimator, train_spec, eval_spec)
  if role.kind == roles.EVALUATOR:
    return _run_evaluator(estimator, train_spec, eval_spec)
  if role.kind in (roles.PS, roles.WORKER):
    # A parameter-server worker's part depends on the model_fn's engine.
    engine = (estimator.training_engine(train_spec.input_fn)
              if role.kind == roles.WORKER and
              role.strategy_name == cluster.PARAMETER_SERVER else None)
    if role.trains_between_graph(engine):
      return _run_between_graph_worker(estimator, train_spec, task)
    if role.serves(engine):
      return _run_server(task)
  return _run_training_task(estimator, train_spec, eval_spec, role)


def _run_server(task) -> Tuple[None, List[str]]:
  """ps, and workers of parameter-server training: serve until done."""
  server = server_lib.start_server(task)
  return _end_as_told(task, server_lib.wait_until_training_done(
      server, task, chief_address=task.cluster[cluster.CHIEF][0]))


def _end_as_told(task, code: int) -> Tuple[None, List[str]]:
  """Ends a server task by what its wait for the chief returned (see
  wait_until_training_done)."""
  if code == PREEMPTED_EXIT_CODE:
    raise PreemptedError(
        f'{task.task_type}:{task.task_index}: the chief was preempted and '
        'saved; restart the cluster to resume.', global_step=-1)
  if code:
    raise ChiefLostError(
        f'{task.task_type}:{task.task_index}: the chief at '
        f'{task.cluster[cluster.CHIEF][0]} stopped without finishing '
        'training.')
  return None, []


class _StopWhenSet(tf.compat.v1.train.SessionRunHook):
  """Stops training after the step in which `event` is found set."""

  def __init__(self, event: threading.Event):
    self._event = event

  def after_run(self, run_context, run_values):
    del run_values
    if self._event.is_set():
      run_context.request_stop()


class _ChiefWatch:
  """Waits, in a thread, for the chief's end-of-training signal on this
  task's server (as `_run_server` does), and stops training when it comes.

  Attributes:
    hook: a SessionRunHook that stops training once the signal came.
  """

  def __init__(self, task):
    self._task = task
    self._code = None
    self._arrived = threading.Event()
    server = server_lib.own_server(task)
    self._thread = threading.Thread(
        target=self._wait, args=(server,), name='chief-watch', daemon=True)
    self._thread.start()
    self.hook = _StopWhenSet(self._arrived)

  def _wait(self, server) -> None:
    self._code = server_lib.wait_until_training_done(
        server, self._task, chief_address=self._task.cluster[cluster.CHIEF][0])
    self._arrived.set()

  def code(self, timeout: Optional[float] = None) -> Optional[int]:
    """The signal's exit code (see wait_until_training_done), waiting up to
    `timeout` (None: until it comes, which is bounded by the chief's
    disappearance); None if it has not come."""
    self._arrived.wait(timeout)
    return self._code


def _run_between_graph_worker(estimator, train_spec, task):
  """A worker of parameter_server training of a TF1-style model_fn: trains
  on its own (graph engine, between-graph) until max_steps, then serves
  until the chief signals the end, exiting as `_run_server` does."""
  watch = _ChiefWatch(task)
  try:
    estimator.train(train_spec.input_fn,
                    hooks=list(train_spec.hooks) + [watch.hook],
                    max_steps=train_spec.max_steps)
  except TaskLostError:
    # The chief tells the ps tasks that training is over once the workers
    # are gone, or WORKERS_GONE_SECS after telling them: a slow worker can
    # still lose its ps mid-step then, and was told first.
    if watch.code(timeout=_PS_GONE_GRACE_SECS) is None:
      raise
  return _end_as_told(task, watch.code())


# How long a worker whose step failed on a vanished ps waits for the
# chief's end-of-training signal, which explains it.
_PS_GONE_GRACE_SECS = 10


def _run_evaluator(estimator, train_spec, eval_spec):
  evaluator = CheckpointEvaluator(estimator=estimator, eval_spec=eval_spec)
  if eval_spec.start_delay_secs:
    time.sleep(eval_spec.start_delay_secs)
  result = evaluator_lib.run_evaluator(
      evaluator, model_dir=estimator.model_dir,
      max_steps=train_spec.max_steps, throttle_secs=eval_spec.throttle_secs)
  return result, evaluator.export_results


def _run_training_task(estimator, train_spec, eval_spec, role):
  """The chief, or a worker of synchronous (MWMS) training."""
  task = role.task
  preempted = False
  try:
    estimator.train(train_spec.input_fn, hooks=train_spec.hooks,
                    max_steps=train_spec.max_steps,
                    saving_listeners=train_spec.saving_listeners)
  except PreemptedError:
    preempted = True
    raise
  finally:
    if role.signals_servers:
      # Success or not, the servers must not wait for a chief that is done;
      # after a preemption they exit as preempted too, so that a launcher
      # restarts the whole cluster.
      _signal_servers(task, preempted=preempted,
                      between_graph=estimator.chosen_engine == engine_choice.GRAPH)
  del eval_spec  # The evaluator task's (roles.Role.evaluates_in_process).
  return None, []


def evaluate_final_checkpoint(estimator, eval_spec: EvalSpec
                              ) -> Tuple[Optional[Dict[str, Any]], List[str]]:
  """Evaluates the newest checkpoint of `estimator.model_dir` and runs the
  exporters as a final export, in this process.

  For a job that can have no evaluator task (Ray Train's workers-only
  TF_CONFIG): its chief calls this after `train_and_evaluate`, as the one
  process that evaluates. Evaluation is not a chief's part otherwise (see
  `roles.Role.evaluates_in_process`).

  Returns:
    (the metrics, the export paths written).
  """
  evaluator = CheckpointEvaluator(estimator=estimator, eval_spec=eval_spec)
  result = evaluator.evaluate(estimator.latest_checkpoint(), is_final=True)
  return result, evaluator.export_results


def _signal_servers(task, *, preempted: bool, between_graph: bool) -> None:
  """Tells the workers and the ps tasks that training is over.

  Between-graph workers (graph engine) still have a session using the ps
  tasks when the chief is done; a ps that exits before a worker's session
  is closed can lose that worker the signal. Those workers are told
  first, and the ps tasks once the workers are gone (or after
  WORKERS_GONE_SECS).
  """
  def tasks_of(job):
    return [(job, index, address)
            for index, address in enumerate(task.cluster.get(job, ()))]
  if not between_graph:
    server_lib.signal_training_done(
        tasks_of(cluster.WORKER) + tasks_of(cluster.PS), preempted=preempted)
    return
  server_lib.signal_training_done(tasks_of(cluster.WORKER),
                                  preempted=preempted)
  server_lib.wait_until_gone(tasks_of(cluster.WORKER),
                             timeout_secs=WORKERS_GONE_SECS)
  server_lib.signal_training_done(tasks_of(cluster.PS), preempted=preempted)


# How long a between-graph chief waits for told workers to exit before it
# tells the ps tasks (a worker closes its session within 30 s).
WORKERS_GONE_SECS = 60


def _run_local(estimator, train_spec, eval_spec):
  evaluator = CheckpointEvaluator(estimator=estimator, eval_spec=eval_spec)
  last_eval_start = [None]

  def after_save(path: str, step: int) -> None:
    if step == 0 or step == train_spec.max_steps:
      return  # Step 0 is untrained; the final one is evaluated below.
    now = time.time()
    if (last_eval_start[0] is not None and
        now - last_eval_start[0] < eval_spec.throttle_secs):
      return
    last_eval_start[0] = now
    evaluator.evaluate(path, is_final=False)

  estimator.train(train_spec.input_fn, hooks=train_spec.hooks,
                  max_steps=train_spec.max_steps,
                  saving_listeners=list(train_spec.saving_listeners) +
                  [after_save])
  final = estimator.latest_checkpoint()
  if final is None:
    raise UserInputError('train_and_evaluate: training wrote no checkpoint.')
  result = evaluator.evaluate(final, is_final=True)
  if result is None:
    # The final checkpoint was evaluated during training (the input ended
    # or a hook stopped it early); exporters that did not export it then
    # (FinalExporter) still owe their final export.
    result = evaluator.last_result
    evaluator.export(final, is_final=True)
  return result, evaluator.export_results
