"""`GraphEngine`: runs a TF1-style model_fn as tf.estimator did.

Each mode builds the model_fn's graph afresh (`model.build`), but for
evaluation: its graph is built once per eval input_fn and steps, and each
evaluation of a checkpoint runs it in a new session (`_EvalGraph`). Training
opens one monitored session over it, with the model_fn's Scaffold and
SessionRunHooks, and the shared training loop (`engine.Engine.train`, a
`controller.TrainController`) drives it through `session_loop.SessionLoop`,
several `session.run` steps per loop. Checkpoints are name-based (`Saver`),
which is what tf.estimator wrote: a model_dir of tf.estimator 2.15 resumes
here.

Everything else is the eager engine's too, written once in `engine.py`,
`controller.py` and `checkpoints.py`: which checkpoint to resume from,
nothing written before the model and input are built and the checkpoint is
known to fit, when checkpoints are saved and rotated, divergence,
preemption, step logging and training summaries, eval results written as
summaries under model_dir/eval.
"""

import contextlib
import dataclasses
from typing import (Any, Callable, ContextManager, Dict, Iterator, NamedTuple,
                    Optional, Sequence, Tuple, Union)

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.training import controller
from estimator_rt.training import engine as engine_lib
from estimator_rt.training import graph_files
from estimator_rt.training import graph_identity
from estimator_rt.inputs import constant_elements
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.training import per_loop_hooks
from estimator_rt.core import summaries
from estimator_rt.core import user_fns
from estimator_rt.core.errors import as_count
from estimator_rt.core.errors import check_positive_count
from estimator_rt.core import tf_errors
from estimator_rt.core.errors import IncompatibleCheckpointError
from estimator_rt.core.errors import MAX_INT32
from estimator_rt.core.errors import UserInputError
from estimator_rt.training.graph import between_graph
from estimator_rt.training.graph import compat
from estimator_rt.training.graph import in_graph_loop
from estimator_rt.training.graph import kept_sessions
from estimator_rt.training.graph import model as model_lib
from estimator_rt.training.graph import placement as placement_lib
from estimator_rt.training.graph import saved_model
from estimator_rt.training.graph import session_loop
from estimator_rt.core.mode_keys import ModeKeys


def _lean_grappler(options) -> None:
  """Leaves out the Grappler work that costs a graph-engine session time
  and buys little on CPU.

  A session optimizes each distinct `session.run` signature once, and a
  `train()` call opens a session with about nine of them (restore, ready
  checks, initializers, the loop, the save): with TensorFlow's defaults that
  was 0.45-0.6 s per call for a wide & deep model, 160 ms for its training
  loop alone. Dropped: the second round of every pass (on that loop it
  merged 8 of 618 nodes; on an MLP's loop, none), the memory optimizer
  (swapping and recomputation for accelerators) and the layout optimizer
  (GPU layouts). Kept: everything else, pruning, remapper's fusions,
  arithmetic, constant folding, and the MLIR (tfg) passes, whose removal
  made an MLP's step 3-7% slower. Measured on the wide & deep model: the
  session runs of a 10-step `train()`, 605-645 ms -> 380-520 ms; CPU per
  step of 4000-step calls, median of 9, 1.28 -> 1.07 ms; on the TF1-style
  MLP (W2), CPU per step 53.1/55.4/51.5 -> 52.5/54.1/49.9 ms per 100 steps
  in three alternated pairs. RunConfig.session_config's rewrite options win
  over these.
  """
  rewriter = type(options)
  options.meta_optimizer_iterations = rewriter.ONE
  options.memory_optimization = rewriter.NO_MEM_OPT
  options.layout_optimizer = rewriter.OFF


def _is_reference_variable(variable) -> bool:
  """Whether `variable` is a TF1 reference variable (TF1 behaviour, or
  `use_resource=False`), whose value a fetch reads when the run ends."""
  return getattr(getattr(variable, 'op', None), 'type', None) in (
      'VariableV2', 'Variable')


@dataclasses.dataclass
class _EvalModelPart:
  """The model_fn's part of an evaluation graph (`_eval_model_part`)."""

  graph: tf.Graph
  data: Any  # model.GraphInput
  input_ops: int  # The graph's ops once the input_fn returned.
  built: Any  # model.GraphModel, without the loss's mean.
  model_ops: int  # The graph's ops once the model_fn returned.
  single_device: bool


@dataclasses.dataclass
class _EvalGraph:
  """An evaluation graph, built for `input_fn` and `steps`, which one
  evaluation of a checkpoint runs in a new session (which restores the
  checkpoint and initializes the input and the metrics).

  tf.estimator 2.15 built one per evaluation, calling the input_fn and the
  model_fn each time, and code counts on those calls (a model_fn that logs,
  registers or counts what it builds), so every evaluation has a graph of
  its own. `train_and_evaluate` builds the first one once its training is
  built, before anything is written (its check that the evaluation builds:
  `Estimator.evaluation_checked_in_training`), and the first evaluation
  runs that one.
  """

  input_fn: Callable
  steps: Optional[int]
  graph: tf.Graph
  data: Any  # model.GraphInput
  built: Any  # model.GraphModel
  saver: Any
  update: tf.Operation  # Every metric's update op.
  final: Dict[str, Any]  # Metric name -> value tensor, and 'global_step'.
  # The model_fn's Scaffold's local_init_op grouped with the default one
  # (which initializes the metrics' variables made after the model_fn
  # returned: the mean loss), as 2.15 grouped them; None without one.
  local_init_op: Optional[tf.Operation] = None
  # How many of the graph's ops the input_fn's part made (the first ones).
  input_ops: int = 0
  # How many the input_fn's and the model_fn's parts made: the ops after
  # them (the loss's mean, the metrics' group) follow from them.
  model_ops: Optional[int] = None
  # Where the evaluation runs: one device (else no session is kept).
  single_device: bool = True

  def is_for(self, input_fn: Callable, steps: Optional[int]) -> bool:
    """Whether an evaluation of `input_fn` and `steps` can run this graph:
    the same input_fn object and steps."""
    return self.input_fn is input_fn and self.steps == steps


class _Built(NamedTuple):
  """What `GraphEngine._training_graph` built (or found kept)."""

  graph: tf.Graph
  data: Any  # model.GraphInput
  built: Any  # in_graph_loop.LoopModel or model.GraphModel
  kept: Optional[kept_sessions.Kept]  # Then the rest is its.
  keys: Optional[Tuple[str, str]]  # For keeping (None: not kept).
  hooks_refuse: bool  # A SessionRunHook of the call's ruled the loop out.


@dataclasses.dataclass
class _TrainingParts:
  """What a training call built in its graph and the next one, in the
  same graph (kept_sessions.py), runs again."""

  data: Any  # model.GraphInput
  built: Any  # model.GraphModel or in_graph_loop.LoopModel
  saver: Any
  keep: int  # How many checkpoints to keep.
  loop: Any  # session_loop.SessionLoop
  hooks_refuse: bool  # A SessionRunHook of the call's ruled the loop out.
  model_writes_loss: bool
  files: Any = None  # graph_files.GraphFiles of the graph, once made.


@dataclasses.dataclass
class _KeptParts:
  """What a call runs again in a kept graph (`kept_sessions.Kept.parts`):
  the finalized Scaffold, and the mode's graph parts."""

  scaffold: Any
  evaluation: Optional[_EvalGraph] = None
  prediction: Any = None  # _Prediction of PREDICT.
  training: Any = None  # _TrainingParts of TRAIN.
  op_count: int = 0  # The graph's ops when kept: a call adding ops (a hook's
  # `begin`) would add them again each call, so its graph is not kept.
  # Whether the input's iterator was started again at the end of the last
  # call (`GraphEngine._restart_input`) and not read since.
  input_fresh: bool = False


@dataclasses.dataclass
class _Prediction:
  """A prediction graph: its input, the model_fn's PREDICT build, the
  Saver, the features tensors the model_fn was given, and its keys for
  keeping (`GraphEngine._kept_keys`, None: not kept)."""

  graph: tf.Graph
  data: Any  # model.GraphInput
  built: Any  # model.GraphModel
  saver: Any
  features: Any
  keys: Optional[Tuple[str, str]]


def _predicted_batches(prediction: _Prediction, fed: Optional[_Prediction],
                       engine, hooks) -> Callable[[Any], Iterator[Any]]:
  """The prediction batches of a MonitoredSession over `prediction`'s
  graph with `hooks`: each from the graph's own input, or with `fed`'s
  input's batches fed to its features (read in a session of `fed`'s graph,
  which runs only its input part). A batch runs as `session_loop.plain_run`
  runs it where no hook acts around it."""
  predictions = prediction.built.predictions
  ours = tf.nest.flatten(prediction.features)

  def runner(session, fed_to_features: bool):
    """Runs a batch: `run(*values)`, `values` those of `ours` if fed."""
    plain = session_loop.plain_run(
        session, predictions, hooks,
        feed_list=ours if fed_to_features else None)
    return plain or (lambda *values: session.run(
        predictions, feed_dict=dict(zip(ours, values)) or None))

  def own(session):
    run = runner(session, False)
    # Ends with the OutOfRangeError of the input's end, which the monitored
    # session's exit takes as a normal end.
    while not session.should_stop():
      yield run()

  def fed_by_new_input(session):
    run = runner(session, True)
    known = constant_elements.elements(fed.data.dataset)
    if known is not None:
      # A request's constants: its elements without a session of its own.
      for element in known:
        if session.should_stop():
          return
        yield run(*tf.nest.flatten(inputs.split_element(element)[0]))
      return
    theirs = tf.nest.flatten(fed.features)
    with tf.compat.v1.Session(graph=fed.graph,
                              config=engine.input_session_config()) as reader:
      reader.run(fed.data.initializer)
      while not session.should_stop():
        try:
          values = reader.run(theirs)
        except tf.errors.OutOfRangeError:
          return
        yield run(*values)

  return own if fed is None else fed_by_new_input


def _same_structure(ours, theirs) -> bool:
  """Whether two structures of feature tensors have the same structure,
  dtypes and static shapes (one's values can be fed for the other's)."""
  describe = lambda t: (t.dtype, tuple(t.shape.as_list()))
  try:
    return (tf.nest.map_structure(describe, ours) ==
            tf.nest.map_structure(describe, theirs))
  except (TypeError, ValueError, AttributeError):
    return False


def _refuse_endless(evaluation: _EvalGraph, steps: Optional[int],
                    session_hooks: Sequence[Any]) -> None:
  """Refuses an evaluation that would never end: steps=None on an input
  that repeats forever, and no SessionRunHook (the caller's or the
  model_fn's `evaluation_hooks`) that could request a stop, as one did
  in 2.15's evaluation loop (`while not session.should_stop()`)."""
  if steps is None and not session_hooks and not (
      evaluation.built.spec.evaluation_hooks):
    engine_lib.refuse_endless(
        bool(model_lib.repeats_forever(evaluation.data)), what='evaluate')


class GraphEngine(engine_lib.Engine):
  """Trains, evaluates, predicts with and exports a TF1-style model_fn.

  The semantics are `Estimator`'s; where tf.estimator differed, this
  engine keeps tf.estimator's: one step per session run, `loss` in
  evaluate is the mean of the batches' losses, a Scaffold's Saver decides
  how many checkpoints are kept. One deliberate difference: a train_op
  that does not count the global step (`minimize(loss)` without
  `global_step=`) has it counted by the runtime, where tf.estimator left
  it at 0 and so never saved the trained weights. Arguments as for
  `engine.Engine` (warm_start_from: the trainable variables, by name).
  """

  def __init__(self, **kwargs):
    super().__init__(**kwargs)
    # The evaluation graph `check_evaluation` built, for the evaluation
    # that follows (`_eval_graph`).
    self._checked_eval_graph: Optional[_EvalGraph] = None
    # (input_fn, placement, (graph, data, built)) of `prepare_training`.
    self._prepared = None
    # Graphs and sessions kept for the next call of their mode.
    self._keeper = kept_sessions.Keeper()
    # Whether a training graph whose input a kept graph reads is built on
    # that input as the input_fn made it (`_training_graph`): until one
    # such graph is not the kept one after all.
    self._lean_training_input = True

  def unsupported(self) -> Optional[str]:
    """Why this engine cannot run the RunConfig it was given (an
    estimator_rt setting tf.estimator never had, or a strategy it does not
    run), or None. Nothing is built."""
    config = self._config
    refusals = (
        (config.checkpoint_input,
         'checkpoint_input=True (the graph engine restarts the input from '
         'its beginning on resume, as tf.estimator did)'),
        (config.jit_compile, 'jit_compile=True'),
        (config.remote_cluster is not None,
         'remote_cluster (standalone client)'),
    )
    for refused, what in refusals:
      if refused:
        return (f'RunConfig: {what} is not supported for TF1-style model_fns '
                '(graph engine). Turn it off.')
    return placement_lib.training_refusal(config.training_strategy,
                                          task=config.task_info)

  # -------------------------------------------------- kept sessions
  def _kept_keys(self, graph: tf.Graph, input_ops: int, *,
                 path: Optional[str], eligible: bool, model_part: bool = True,
                 model_ops_from: Optional[int] = None,
                 model_ops_to: Optional[int] = None,
                 input_key: Optional[str] = None
                 ) -> Optional[Tuple[str, ...]]:
    """(input part's, model part's fingerprint) of `graph`, whose first
    `input_ops` ops the input_fn made, if its session may be kept
    (kept_sessions.py: `eligible` for the mode, a checkpoint to restore, no
    queue runners), else None; the input part's alone without
    `model_part` (the model is not built yet). The model part is the ops
    from `model_ops_from` (default: `input_ops`) up to `model_ops_to`
    (default: all); `input_key`: the input part's, if computed already."""
    if (not eligible or path is None or not self._keeper.keeps or
        graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)):
      return None
    graph_def = graph.as_graph_def()
    if model_part and graph_identity.runs_seeded_random_ops(graph,
                                                            graph_def):
      return None
    if input_key is None:
      input_key = graph_identity.fingerprint(graph_def, end_node=input_ops)
    if not model_part:
      return (input_key,)
    return (input_key, graph_identity.fingerprint(
        graph_def,
        first_node=input_ops if model_ops_from is None else model_ops_from,
        end_node=model_ops_to, input_rewritten=model_ops_from is not None))

  def _take_kept(self, mode: str, keys: Optional[Tuple[str, str]]
                 ) -> Optional[kept_sessions.Kept]:
    """The kept graph and session of `mode` if it is the graph of `keys`."""
    if keys is None:
      return None
    return self._keeper.take(
        mode, lambda kept: (kept.input_key, kept.model_key) == keys)

  @staticmethod
  @contextlib.contextmanager
  def _kept_graph_open(kept: Optional[kept_sessions.Kept]) -> Iterator[None]:
    """A kept graph open to the call's SessionRunHooks (their `begin` may
    add ops; the new session finalizes it again)."""
    if kept is not None:
      kept.graph._unsafe_unfinalize()  # pylint: disable=protected-access
    yield

  def _session_creator(self, kept: Optional[kept_sessions.Kept], *,
                       scaffold, path: Optional[str], keeping: bool):
    """The session of a call: `kept`'s, with `path` restored if it does
    not hold it; else a new one (left open for keeping if `keeping`)."""
    if kept is not None:
      return kept_sessions.ReusingCreator(
          kept, saver=scaffold.saver, checkpoint_path=path,
          local_init_op=scaffold.local_init_op)
    creator = tf.compat.v1.train.ChiefSessionCreator(
        scaffold=scaffold, config=self._session_config(),
        checkpoint_filename_with_path=path)
    return kept_sessions.KeepingCreator(creator) if keeping else creator

  def _keep(self, mode: str, keys: Optional[Tuple[str, str]], *,
            kept: Optional[kept_sessions.Kept], creator, graph: tf.Graph,
            parts: _KeptParts, holds: Optional[Tuple]) -> None:
    """Keeps the graph and session a call of `mode` ran in, for the next
    (see kept_sessions.py); `holds`: the checkpoint the variables hold."""
    session = getattr(creator, 'session', None)
    if kept is not None:
      keys = (kept.input_key, kept.model_key)
    if keys is None or session is None:
      return
    op_count = len(graph.get_operations())
    if kept is not None and op_count != kept.parts.op_count:
      kept.close()
      return
    parts.op_count = op_count
    if kept is not None:  # Unless this call read its input (_input_start).
      parts.input_fresh = kept.parts.input_fresh
    self._keeper.keep(kept_sessions.Kept(
        mode=mode, input_key=keys[0], model_key=keys[1], graph=graph,
        session=session, parts=parts, holds=holds,
        nbytes=kept_sessions.variable_bytes(graph),
        restart=self._restart_input(session, parts)))

  @staticmethod
  def _restart_input(session, parts: _KeptParts
                     ) -> Optional[kept_sessions.InputRestart]:
    """Starts the kept graph's input again right after the call that used
    it (the next call would start it anyway), on a thread of its own that
    the next call waits for (`Keeper.take`); None if there is nothing to
    start. A used tf.data iterator under autotuning takes longer to
    replace the longer it sits idle (about 0.1 s after 0.5 s idle, up to
    0.5 s measured): replaced now, the next call finds a new one."""
    data = (parts.evaluation.data if parts.evaluation is not None else
            parts.prediction.data if parts.prediction is not None else
            parts.training.data if parts.training is not None else None)
    initializer = getattr(data, 'initializer', None)
    if initializer is None or parts.input_fresh:  # Not read since.
      return None
    parts.input_fresh = True
    return kept_sessions.InputRestart(session, initializer)

  @staticmethod
  def _input_start(kept: Optional[kept_sessions.Kept], data) -> list:
    """The SessionRunHook that starts `data`'s input in a call's session,
    none when `kept`'s input was started again at the end of its last call
    (`_restart_input`): it is then fresh, and this call reads it."""
    if kept is not None and kept.parts.input_fresh:
      kept.parts.input_fresh = False
      return []
    return [session_loop.RunOnceHook(data.initializer)]

  def _refuse_unsupported(self) -> None:
    refusal = self.unsupported()
    if refusal is not None:
      raise UserInputError(refusal)

  def input_session_config(self) -> tf.compat.v1.ConfigProto:
    """The session config of a session that only reads an input (the
    user's thread counts; none of Grappler's rounds: its few ops run once
    or a few times)."""
    config = self._session_config()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config

  def _session_config(self, placement=None) -> tf.compat.v1.ConfigProto:
    """The placement's session config and the engine's Grappler settings
    (`_lean_grappler`), with RunConfig.session_config's fields over them
    (the user's thread counts, GPU options, rewrite options ...)."""
    config = tf.compat.v1.ConfigProto()
    config.CopyFrom((placement or placement_lib.SingleDevicePlacement())
                    .session_config())
    _lean_grappler(config.graph_options.rewrite_options)
    if self._config.session_config is not None:
      config.MergeFrom(self._config.session_config)
    return config

  @contextlib.contextmanager
  def _building(self) -> Iterator[None]:
    """Around the build of one graph (made the default already): the
    RunConfig's tf_random_seed as the graph's seed, and as the seed of what
    tf_keras draws for its initializers; Keras layer names numbered from
    scratch; Keras 3 variables' assigns returning what tf.Variable's do."""
    seed = self._config.tf_random_seed
    if seed is not None:
      tf.compat.v1.set_random_seed(seed)
    with compat.keras_names_per_graph(), compat.keras2_seeds_per_graph(
        seed), compat.keras3_assigns_return_the_write():
      yield

  # -------------------------------------------------------------- train
  def _training_graph(self, input_fn, placement, session_hooks, *,
                      latest: Optional[str] = None):
    """Builds training into a new graph: the model_fn's one TRAIN-mode call
    builds tf.estimator's one-step graph, and where the in-graph loop can
    run it is derived from that step (in_graph_loop.py), else the step runs
    once per session run, logging why in one line. The input_fn and the
    model_fn are called once, as tf.estimator called them once per graph.
    When the kept graph of the previous training (kept_sessions.py) is the
    same graph, that one is returned instead, its loop derived already.

    Returns:
      a `_Built`.
    """
    _, per_step_hooks = per_loop_hooks.split(session_hooks)
    name = user_fns.fn_name(self._model_fn)
    reason = in_graph_loop.refusal(
        steps_per_loop=self._config.steps_per_loop, placement=placement,
        per_step_hooks=per_step_hooks)
    graph = tf.Graph()
    hooks_refuse = reason is not None
    with graph.as_default(), self._building():
      data, input_ops, input_key, kept, lean = self._training_input(
          graph, input_fn, placement, latest=latest,
          hooks_refuse=hooks_refuse)
      if data is None:
        parts = kept.parts.training
        return _Built(kept.graph, parts.data, parts.built, kept,
                      (kept.input_key, kept.model_key), hooks_refuse)
      self._features_spec = data.features_spec
      reason = reason or in_graph_loop.input_refusal(data)
      queue_runners = len(graph.get_collection(
          tf.compat.v1.GraphKeys.QUEUE_RUNNERS))
      ops_before = len(graph.get_operations())
      step = model_lib.build(
          model_fn=self._model_fn, mode=ModeKeys.TRAIN,
          batches=data.next_batch, params=self._params, config=self._config,
          placement=placement)
      reason = reason or in_graph_loop.refusal_of_step(
          step, queue_runners_before=queue_runners, ops_before=ops_before)
      # The model part starts after the iterator: what lies between (the
      # rewrite, the iterator) follows from the input part.
      keys = self._kept_keys(graph, input_ops, path=latest,
                             model_ops_from=ops_before, input_key=input_key,
                             eligible=self._may_keep_training(placement,
                                                              step.spec))
      kept = self._kept_training(keys, hooks_refuse=hooks_refuse)
      if kept:
        parts = kept.parts.training
        return _Built(kept.graph, parts.data, parts.built, kept, keys,
                      hooks_refuse)
      if lean:
        # Read as it came after all: the next calls rewrite again.
        self._lean_training_input = False
      if reason is None:
        try:
          with model_lib.runtime_scope():
            loop = in_graph_loop.derive(
                step=step, placement=placement,
                with_summaries=bool(self._config.save_summary_steps))
        except in_graph_loop.CannotLoop as e:
          reason = str(e)
    if reason is not None:
      logging.info('model_fn %s (graph engine) runs one training step per '
                   'session run: %s.', name, reason)
      return _Built(graph, data, step, None, keys, hooks_refuse)
    logging.info('model_fn %s (graph engine) runs its steps in an in-graph '
                 'loop: one session run per loop of up to %d steps.', name,
                 self._config.steps_per_loop)
    return _Built(graph, data, loop, None, keys, hooks_refuse)

  def _training_input(self, graph: tf.Graph, input_fn, placement, *,
                      latest: Optional[str], hooks_refuse: bool):
    """Calls the train input_fn in `graph` (`model.read_input`).

    Returns:
      (the GraphInput, or None when the kept graph of the previous training
      reads this input and its model_fn builds the same graph (it is then
      not called), how many ops the input_fn made (the input part of the
      graph's keys), that part's key (None if the graph may not be kept),
      that kept graph or None, whether the input was left
      as the input_fn made it, not rewritten, because a kept graph reads it
      rewritten already: this graph is likely to be compared and dropped,
      and the rewrite to cost more than a short call's steps; if this graph
      is kept after all, it trains on the input as it came, the same
      elements in the same order).
    """
    input_ops, input_keys, kept = [], [], []
    eligible = self._may_keep_training(placement, None)

    def kept_graph_reads_this_input() -> bool:
      input_ops.append(len(graph.get_operations()))
      input_keys.extend(self._kept_keys(
          graph, input_ops[0], path=latest, model_part=False,
          eligible=eligible) or ())
      if not model_lib.builds_same_graph(self._model_fn, ModeKeys.TRAIN):
        return False
      kept.append(self._kept_training(input_keys, hooks_refuse=hooks_refuse))
      return kept[0] is not None

    left_as_made = []

    def rewrite() -> bool:
      left_as_made.append(bool(
          input_keys and self._lean_training_input and
          self._keeper.input_key(ModeKeys.TRAIN) == input_keys[0]))
      return not left_as_made[0]

    data = model_lib.read_input(
        input_fn, self._params, role='train input_fn', config=self._config,
        placement=placement, overlap=rewrite,
        stop_after_call=kept_graph_reads_this_input)
    return (data, input_ops[0], input_keys[0] if input_keys else None,
            kept[0] if kept else None, bool(left_as_made and left_as_made[0]))

  def _may_keep_training(self, placement, spec) -> bool:
    """Whether a training's graph and session may be kept (kept_sessions.py):
    a chief on one device, with no hooks or Scaffold ops of the model_fn's
    `spec` (they hold the new graph's tensors; None: not built yet)."""
    return (isinstance(placement, placement_lib.SingleDevicePlacement) and
            self._config.is_chief and (spec is None or (
                not spec.training_hooks and not spec.training_chief_hooks and
                kept_sessions.plain_scaffold(spec.scaffold))))

  def _kept_training(self, keys, *, hooks_refuse: bool
                     ) -> Optional[kept_sessions.Kept]:
    """The kept training graph and session of `keys` (both parts', or the
    input part's alone), if it runs the step as this call would: the
    in-graph loop, unless a SessionRunHook of the call's needs every step
    (`hooks_refuse`), as for the call that built it."""
    if not keys:
      return None
    return self._keeper.take(
        ModeKeys.TRAIN, lambda k: (k.input_key, k.model_key)[:len(keys)] ==
        tuple(keys) and k.parts.training.hooks_refuse == hooks_refuse)

  @staticmethod
  def _session_and_runtime_hooks(built, session_hooks):
    """(the SessionRunHooks the session runs, the runtime hooks standing in
    for the rest): in the loop, `per_loop_hooks`' equivalents of the
    per-loop-safe hooks."""
    if isinstance(built, in_graph_loop.LoopModel):
      loop_hooks, _ = per_loop_hooks.split(session_hooks)
      return [], loop_hooks
    return list(session_hooks), []

  def _training_placement(self):
    self._refuse_unsupported()
    return placement_lib.make_placement(
        self._config.training_strategy, for_training=True,
        task=self._config.task_info)

  def prepare_training(self, input_fn: Callable) -> None:
    """Builds the training of `input_fn` now, as `train` would (the
    model_fn's one TRAIN-mode call), and keeps it for the next `train` of
    the same input_fn: a parameter-server worker learns from it which
    engine it runs in (EagerModelFnError: the eager engine's), and then
    trains in the graph it built, as tf.estimator's workers built one."""
    placement = self._training_placement()
    self._prepared = (input_fn, placement,
                      self._training_graph(input_fn, placement, ())[:3])

  def _prepared_training(self, input_fn, session_hooks):
    """What `prepare_training` built for `input_fn`, if `train` can run it
    with `session_hooks` (a loop cannot take hooks that see every step),
    else None; dropped either way."""
    prepared, self._prepared = self._prepared, None
    if prepared is None or prepared[0] is not input_fn:
      return None
    _, placement, (graph, data, built) = prepared
    _, per_step_hooks = per_loop_hooks.split(session_hooks)
    if per_step_hooks and isinstance(built, in_graph_loop.LoopModel):
      return None
    return placement, graph, data, built

  def _build_training(self, input_fn, *, latest, session_hooks,
                      summary_writer) -> engine_lib.TrainingSetup:
    """See `engine.Engine._build_training`."""
    prepared = self._prepared_training(input_fn, session_hooks)
    kept = keys = None
    hooks_refuse = False
    if prepared is not None:
      placement, graph, data, built = prepared
    else:
      placement = self._training_placement()
      graph, data, built, kept, keys, hooks_refuse = self._training_graph(
          input_fn, placement, session_hooks, latest=latest)
    if placement.multi_worker:
      inputs.require_repeating(
          model_lib.repeats_forever(data) is not False,
          what='multi_worker_mirrored training of a TF1-style model_fn')
    session_hooks, runtime_hooks = self._session_and_runtime_hooks(
        built, session_hooks)
    if kept is not None:
      parts = kept.parts.training
      creator = kept_sessions.ReusingCreator(
          kept, saver=parts.saver, checkpoint_path=latest,
          local_init_op=kept.parts.scaffold.local_init_op)
      loop = parts.loop.for_next_call(
          creator=creator, summary_writer=summary_writer,
          hooks=self._training_session_hooks(built, data, placement,
                                             session_hooks, kept=kept))
      return self._training_setup(
          placement, graph, loop, parts, latest=latest,
          runtime_hooks=runtime_hooks, summary_writer=summary_writer,
          keeping=(keys, kept, creator, kept.parts.scaffold))
    with graph.as_default():
      saver, keep = self._saver(built.spec.scaffold)
      if latest is not None:
        self._check_fits(latest, built.spec.scaffold)
      elif self._warm_start_from:
        self._warm_start()
      with model_lib.runtime_scope():
        loop, scaffold, creator = self._session_loop(
            built, data, placement, saver=saver, latest=latest,
            session_hooks=session_hooks, summary_writer=summary_writer,
            keeping=keys is not None)
        agreement = placement.agreement_sum()
      # 2.15's test: a summary op named 'loss' (a canned head's) is the
      # loss summary; without one the controller writes it.
      model_writes_loss = bool(self._config.save_summary_steps) and any(
          getattr(t, 'op', None) is not None and t.op.name == 'loss'
          for t in graph.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))
    agree = None
    if agreement is not None:
      values, agreed = agreement
      agree = controller.agreement(
          lambda vector: loop.run(agreed, {values: vector}),
          replicas=placement.replicas_in_sync)
    parts = _TrainingParts(
        data=data, built=built, saver=saver, keep=keep, loop=loop,
        hooks_refuse=hooks_refuse, model_writes_loss=model_writes_loss)
    return self._training_setup(
        placement, graph, loop, parts, latest=latest, agree=agree,
        runtime_hooks=runtime_hooks, summary_writer=summary_writer,
        keeping=(keys, None, creator, scaffold))

  def _training_setup(self, placement, graph: tf.Graph,
                      loop: session_loop.SessionLoop, parts: '_TrainingParts',
                      *, latest: Optional[str], runtime_hooks,
                      summary_writer, keeping, agree=None
                      ) -> engine_lib.TrainingSetup:
    """The TrainingSetup of `loop` over `graph`; `keeping`: (keys, kept,
    creator, scaffold) for keeping the graph and session after training."""
    checkpoint_writer = session_loop.SaverWriter(parts.saver, loop)
    if parts.files is None:
      parts.files = graph_files.GraphFiles(graph=graph, saver=parts.saver)
    files = parts.files
    saver_hook = next((h for h in loop.hooks if isinstance(
        h, tf.compat.v1.train.CheckpointSaverHook)), None)
    return engine_lib.TrainingSetup(
        train_loop=loop, iterator=None, checkpoint=checkpoint_writer,
        global_step=loop.global_step, max_to_keep=parts.keep, agree=agree,
        asynchronous=placement.between_graph, hooks=runtime_hooks,
        model_writes_loss=parts.model_writes_loss,
        logs_updated_step=_is_reference_variable(
            tf.compat.v1.train.get_global_step(graph)),
        saver_hook=saver_hook, raw_session=lambda: loop.raw_session,
        session=lambda: self._training_session(
            graph, loop, placement, latest,
            graph_files_written=lambda: self._graph_files_written(
                files, checkpoint_writer, summary_writer,
                by_saver=saver_hook is None),
            reused=keeping[1],
            kept=lambda: self._keep_training(graph, loop, parts, keeping)))

  def _keep_training(self, graph: tf.Graph, loop: session_loop.SessionLoop,
                     parts: '_TrainingParts', keeping) -> None:
    """Keeps the graph and session a training ran in, holding the newest
    checkpoint if it was saved at the step training ended at."""
    keys, kept, creator, scaffold = keeping
    newest = checkpoints.checkpoint_candidates(self.model_dir)[:1]
    holds = None
    if newest and checkpoints.checkpoint_step(newest[0]) == loop.last_step:
      holds = checkpoints.content_id(newest[0])
    self._keep(ModeKeys.TRAIN, keys, kept=kept, creator=creator, graph=graph,
               parts=_KeptParts(scaffold=scaffold, training=parts),
               holds=holds)

  def _graph_files_written(self, files: graph_files.GraphFiles,
                           checkpoint_writer: session_loop.SaverWriter,
                           summary_writer, *, by_saver: bool
                           ) -> ContextManager:
    """What tf.estimator 2.15's CheckpointSaverHook wrote when the training
    session started, by the writer of model_dir only (`summary_writer` is
    None elsewhere): graph.pbtxt and a .meta beside every checkpoint
    (unless RunConfig.checkpoint_save_graph_def is False), and the graph in
    the training event file (always); around training (see
    graph_files.written_in_background; `by_saver` False: a program's
    CheckpointSaverHook saves instead)."""
    if summary_writer is None:
      return contextlib.nullcontext()
    if self._config.checkpoint_save_graph_def:
      checkpoint_writer.graph_files = files
    return graph_files.written_in_background(
        files, directory=self.model_dir, summary_writer=summary_writer,
        graph_file=self._config.checkpoint_save_graph_def, by_saver=by_saver)

  def _training_session_hooks(self, built, data, placement,
                              session_hooks, kept=None) -> list:
    """The training session's SessionRunHooks, in their order: the
    replicas' initializer, the model_fn's chief hooks (on the chief), the
    input's (unless `kept`'s input is fresh), the caller's, the model_fn's
    training_hooks, the in-graph loop's initializer. 2.15's
    MonitoredTrainingSession ran chief_only_hooks before the other hooks:
    a training hook's `begin` sees what a chief hook's `begin` created
    (AdaNet's _OverwriteCheckpointHook builds its Saver there)."""
    spec = built.spec
    hooks = (list(spec.training_chief_hooks) if self._config.is_chief
             else [])
    hooks += self._input_start(kept, data)
    sync = placement.sync_replicas_op()
    if sync is not None:
      hooks.insert(0, session_loop.RunOnceHook(sync))
    hooks += list(session_hooks) + list(spec.training_hooks)
    if isinstance(built, in_graph_loop.LoopModel):
      hooks.append(session_loop.RunOnceHook(built.initializer))
    return hooks

  def _session_loop(self, built, data, placement, *, saver,
                    latest: Optional[str], session_hooks, summary_writer,
                    keeping: bool = False):
    """(the training session's loop, its Scaffold, its session creator,
    which leaves the session open if `keeping`); `built` is a
    `model.GraphModel` (one step per run) or an `in_graph_loop.LoopModel`
    (several)."""
    spec = built.spec
    is_chief = self._config.is_chief
    hooks = self._training_session_hooks(built, data, placement,
                                         session_hooks)
    in_graph = isinstance(built, in_graph_loop.LoopModel)
    summary_op = None
    if self._config.save_summary_steps and not in_graph:
      summary_op = (spec.scaffold.summary_op if spec.scaffold is not None and
                    spec.scaffold.summary_op is not None else
                    tf.compat.v1.summary.merge_all())
    scaffold = tf.compat.v1.train.Scaffold(
        saver=saver, summary_op=summary_op, copy_from_scaffold=spec.scaffold)
    if placement.between_graph and not is_chief:
      creator = between_graph.WorkerSessionCreator(
          scaffold=scaffold, master=placement.master,
          config=self._session_config(placement))
    else:
      creator = tf.compat.v1.train.ChiefSessionCreator(
          scaffold=scaffold, master=placement.master,
          config=self._session_config(placement),
          checkpoint_filename_with_path=latest)
      if keeping:
        creator = kept_sessions.KeepingCreator(creator)
    common = dict(creator=creator, hooks=hooks,
                  save_summary_steps=as_count(self._config.save_summary_steps),
                  summary_writer=summary_writer, is_chief=is_chief)
    if in_graph:
      return (session_loop.InGraphSessionLoop(loop=built, **common), scaffold,
              creator)
    return session_loop.SessionLoop(
        train_op=built.train_op, loss=built.loss,
        global_step=built.global_step, summary_op=summary_op,
        **common), scaffold, creator

  @contextlib.contextmanager
  def _training_session(self, graph: tf.Graph, loop: session_loop.SessionLoop,
                        placement, latest: Optional[str], *,
                        graph_files_written: Callable[[], ContextManager],
                        reused: Optional[kept_sessions.Kept],
                        kept: Callable[[], None]):
    """The graph as default and the training session open, around the
    controller's whole run (a Saver and the hooks need both).
    `graph_files_written` writes the graph files once the session exists
    (the graph is final then, as tf.estimator wrote them); `kept` keeps
    the graph and session when training ended normally."""
    with graph.as_default(), self._kept_graph_open(reused):
      if placement.between_graph:
        between_graph.prepare(placement, self._config.task_info)
      # The FileWriters the session's hooks put in FileWriterCache stay
      # there after training, as in tf.estimator 2.15 (programs get and
      # close them, or write to them); the hooks' `end` flushed them.
      with loop.open():
        if latest is not None and not (placement.between_graph and
                                       not self._config.is_chief):
          # The checkpoint's step: between-graph workers may have moved
          # the shared global step on already.
          logging.info('Restored %s (global step %d).', latest,
                       checkpoints.checkpoint_step(latest))
        with graph_files_written():
          yield
    kept()

  def _saver(self, scaffold) -> tuple:
    """The Saver checkpoints are written with, and how many to keep: a
    Scaffold's own Saver and its max_to_keep win, as in tf.estimator (a
    tf.train.Checkpoint there keeps keep_checkpoint_max)."""
    saver = model_lib.scaffold_saver(scaffold)
    if saver is not None and saver is scaffold.saver:
      return saver, saver.saver_def.max_to_keep
    if saver is not None:
      return saver, as_count(self._config.keep_checkpoint_max)
    # Rotation is CheckpointSaver's (its saves leave the Saver's own
    # bookkeeping alone, write_state=False). Built when the session's
    # Scaffold is finalized, after the hooks' `begin`, as 2.15's was:
    # variables a hook creates there are saved and restored with the
    # model's. In the SAVERS collection, with 2.15's settings, as 2.15 put
    # it there: a program's CheckpointSaverHook made without a Scaffold
    # saves with it.
    saver = tf.compat.v1.train.Saver(
        sharded=True, max_to_keep=as_count(self._config.keep_checkpoint_max),
        keep_checkpoint_every_n_hours=(
            self._config.keep_checkpoint_every_n_hours),
        save_relative_paths=True, defer_build=True)
    if not tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVERS):
      tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.SAVERS, saver)
    return saver, as_count(self._config.keep_checkpoint_max)

  def _check_fits(self, checkpoint_path: str, scaffold) -> None:
    """Refuses, before anything is written, a checkpoint lacking variables
    the model_fn creates, or holding them in other shapes (another model's
    model_dir), with the error 2.15's restore raised (NotFoundError,
    InvalidArgumentError: its phrase first)."""
    if scaffold is not None and scaffold.saver is not None:
      return  # A user's Saver may map names; its restore will tell.
    missing = model_lib.missing_from_checkpoint(
        checkpoint_path, model_lib.default_saver_names())
    if missing:
      present = sorted(checkpoints.reader(
          checkpoint_path).get_variable_to_shape_map())
      raise tf_errors.CheckpointMissingVariableError(
          f'{tf_errors.MISSING_FROM_CHECKPOINT}: model_dir {self.model_dir!r}: '
          f'checkpoint {checkpoint_path} has no variable(s) {missing[:5]}{" ..." if len(missing) > 5 else ""} that '
          f'model_fn {user_fns.fn_name(self._model_fn)} creates (it has '
          f'{present[:8]}{" ..." if len(present) > 8 else ""}). It belongs to '
          'another model: use a new model_dir. Nothing was written.')
    # Reference variables' restore checked shapes; resource variables'
    # took any (2.15 under TF2 behaviour failed at the first update, or
    # computed with the wrong value): refused alike in both behaviours.
    mismatched = model_lib.mismatched_shapes(checkpoint_path)
    if mismatched:
      raise tf_errors.CheckpointShapeMismatchError(
          f'{tf_errors.MISMATCH_WITH_CHECKPOINT}: model_dir '
          f'{self.model_dir!r}: checkpoint {checkpoint_path} holds variables '
          f'in other shapes than model_fn {user_fns.fn_name(self._model_fn)} '
          f'creates ({"; ".join(mismatched[:3])}'
          f'{" ..." if len(mismatched) > 3 else ""}). It belongs to another '
          'model: use a new model_dir. Nothing was written.')

  def _check_fits_or_warm_start(self, checkpoint_path: Optional[str],
                                scaffold) -> None:
    """Before an evaluation or prediction session: checks that checkpoint
    `checkpoint_path` fits the graph, or, with None, warm-starts the
    variables the session initializes (tf.estimator 2.15's
    `_maybe_warm_start`)."""
    if checkpoint_path is not None:
      self._check_fits(checkpoint_path, scaffold)
    elif self._warm_start_from:
      self._warm_start()

  def _warm_start(self) -> None:
    """Initializes variables from `warm_start_from` (WarmStartSettings):
    by default the trainable variables the checkpoint has by name; with a
    selection, vocabularies or renames, as tf.estimator did
    (`tf.compat.v1.train.warm_start`)."""
    settings = self._warm_start_from
    source = checkpoints.resolve_checkpoint(
        settings.ckpt_to_initialize_from, what='warm_start_from')
    if not settings.is_default:
      # The directory as given when it names the same checkpoint: 2.15
      # passed it so, and TensorFlow's messages name it.
      given = settings.ckpt_to_initialize_from
      tf.compat.v1.train.warm_start(
          given if tf.train.latest_checkpoint(given) == source else source,
          vars_to_warm_start=settings.vars_to_warm_start,
          var_name_to_vocab_info=settings.var_name_to_vocab_info,
          var_name_to_prev_var_name=settings.var_name_to_prev_var_name)
      return
    present = checkpoints.reader(source).get_variable_to_shape_map()
    # Each mapped to the variable itself: a name is looked up among
    # tf.compat.v1.get_variable's variables only, and Keras 2 layers' are
    # not there (init_from_checkpoint then took it for a scope and failed).
    # A partitioned variable's parts go together under the whole's name.
    names = {}
    for variable in tf.compat.v1.trainable_variables():
      slice_info = getattr(variable, '_save_slice_info', None)
      if slice_info is None:
        if variable.op.name in present:
          names[variable.op.name] = variable
      elif slice_info.full_name in present:
        names.setdefault(slice_info.full_name, []).append(variable)
    if not names:
      raise UserInputError(
          f'warm_start_from={source!r} has none of the '
          'model\'s trainable variables by name.')
    tf.compat.v1.train.init_from_checkpoint(source, names)
    logging.info('Warm-starting %d variables from %s.', len(names), source)

  # ----------------------------------------------------------- evaluate
  def _eval_input(self, input_fn: Callable) -> Tuple[tf.Graph, Any, int]:
    """(a new graph, the eval input_fn's data read in it, how many ops that
    made): the input_fn called once, as tf.estimator called it."""
    graph = tf.Graph()
    with graph.as_default(), self._building():
      data = model_lib.read_input(input_fn, self._params,
                                  role='eval input_fn', config=self._config)
    self._features_spec = data.features_spec
    return graph, data, len(graph.get_operations())

  def _eval_model_part(self, graph: tf.Graph, data, input_ops: int
                       ) -> _EvalModelPart:
    """The model_fn's part of an evaluation graph (`_eval_input`'s): the
    EVAL-mode model_fn called once into `graph`, without the ops
    `_eval_finished` adds (a graph a kept one replaces needs none of
    them)."""
    with graph.as_default(), self._building():
      placement = placement_lib.make_placement(self._config.eval_distribute,
                                               for_training=False)
      built = model_lib.build(
          model_fn=self._model_fn, mode=ModeKeys.EVAL,
          batches=data.next_batch, params=self._params, config=self._config,
          placement=placement, loss_metric=False)
    return _EvalModelPart(
        graph=graph, data=data, input_ops=input_ops,
        built=built, model_ops=len(graph.get_operations()),
        single_device=isinstance(placement,
                                 placement_lib.SingleDevicePlacement))

  def _eval_finished(self, part: _EvalModelPart, *, input_fn: Callable,
                     steps: Optional[int]) -> _EvalGraph:
    """The evaluation graph of `part`: the loss's mean, the Saver, the
    metrics' values and updates added to its graph."""
    built = part.built
    with part.graph.as_default(), self._building():
      model_lib.add_loss_metric(built)
      saver, _ = self._saver(built.spec.scaffold)
      final = {name: pair[0] for name, pair in built.metrics.items()}
      final['global_step'] = built.global_step
      scaffold = built.spec.scaffold
      local_init_op = None
      if scaffold is not None and scaffold.local_init_op is not None:
        local_init_op = tf.group(
            scaffold.local_init_op,
            tf.compat.v1.train.Scaffold.default_local_init_op())
      return _EvalGraph(
          input_fn=input_fn, steps=steps, graph=part.graph, data=part.data,
          built=built, saver=saver,
          update=tf.group(*[pair[1] for pair in built.metrics.values()]),
          final=final, local_init_op=local_init_op,
          input_ops=part.input_ops, model_ops=part.model_ops,
          single_device=part.single_device)

  def _eval_graph(self, input_fn: Callable, steps: Optional[int]
                  ) -> _EvalGraph:
    """A new evaluation graph for `input_fn` and `steps`: the EVAL-mode
    model_fn called once, the metrics' updates and values (an input that
    repeats forever is refused by `_refuse_endless`)."""
    return self._eval_finished(
        self._eval_model_part(*self._eval_input(input_fn)),
        input_fn=input_fn, steps=steps)

  def _eval_keys(self, part: Union[_EvalModelPart, _EvalGraph], *,
                 path: Optional[str]) -> Optional[Tuple[str, str]]:
    """The kept-session keys of an evaluation graph (`_kept_keys`), the
    model_fn's part alone or finished: its model part ends where the
    model_fn's ops end."""
    spec = part.built.spec
    return self._kept_keys(
        part.graph, part.input_ops, path=path, model_ops_to=part.model_ops,
        eligible=(part.single_device and not spec.evaluation_hooks and
                  kept_sessions.plain_scaffold(spec.scaffold)))

  def _evaluation(self, input_fn: Callable, steps: Optional[int],
                  path: Optional[str]):
    """(the evaluation graph an evaluation of checkpoint `path` runs, the
    kept graph and session it is, or None, and its keys for keeping, or
    None): the one `check_evaluation` built for `input_fn` and `steps` if
    it is still there, else a new one; a kept graph of the same model
    replaces it. A model_fn that builds the same graph in EVAL
    (graph/model.py's SAME_GRAPH_MODES) is not called when a kept graph of
    the same input is there. A new graph that a kept one replaces is left
    at its model_fn's part: what follows from it is the kept graph's."""
    checked, self._checked_eval_graph = self._checked_eval_graph, None
    if path is not None and checked is not None and checked.is_for(
        input_fn, steps):
      keys = self._eval_keys(checked, path=path)
      kept = self._take_kept(ModeKeys.EVAL, keys)
      return (checked if kept is None else kept.parts.evaluation), kept, keys
    graph, data, input_ops = self._eval_input(input_fn)
    if (path is not None and
        model_lib.builds_same_graph(self._model_fn, ModeKeys.EVAL)):
      input_key = self._kept_keys(graph, input_ops, path=path,
                                  eligible=True, model_part=False)
      kept = input_key and self._keeper.take(
          ModeKeys.EVAL, lambda k: k.input_key == input_key[0])
      if kept:
        return kept.parts.evaluation, kept, (kept.input_key, kept.model_key)
    part = self._eval_model_part(graph, data, input_ops)
    keys = self._eval_keys(part, path=path)
    kept = self._take_kept(ModeKeys.EVAL, keys)
    if kept is not None:
      return kept.parts.evaluation, kept, keys
    return self._eval_finished(part, input_fn=input_fn,
                               steps=steps), None, keys

  def check_evaluation(self, input_fn: Callable, *,
                       steps: Optional[int] = None,
                       name: Optional[str] = None,
                       hooks: Sequence[Any] = ()) -> None:
    """See `Engine.check_evaluation`. The graph built is the one the
    next evaluation of a checkpoint with the same input_fn and steps runs
    (tf.estimator built one graph per evaluation)."""
    del name
    check_positive_count('evaluate: steps', steps,
                         phrase='Must specify steps > 0', maximum=MAX_INT32)
    evaluation = self._eval_graph(input_fn, steps)
    _refuse_endless(evaluation, steps, engine_lib.split_hooks(hooks)[1])
    self._checked_eval_graph = evaluation

  def evaluate(self, input_fn: Callable, *, steps: Optional[int] = None,
               hooks: Sequence[Any] = (),
               checkpoint_path: Optional[str] = None,
               name: Optional[str] = None) -> Dict[str, Any]:
    """See `Estimator.evaluate`."""
    check_positive_count('evaluate: steps', steps,
                         phrase='Must specify steps > 0', maximum=MAX_INT32)
    path = checkpoints.checkpoint_to_run(self.model_dir, checkpoint_path,
                                         to='evaluate')
    _, session_hooks = engine_lib.split_hooks(hooks)
    evaluation, kept, keys = self._evaluation(input_fn, steps, path)
    _refuse_endless(evaluation, steps, session_hooks)
    built = evaluation.built
    with evaluation.graph.as_default(), self._kept_graph_open(kept):
      self._check_fits_or_warm_start(path, built.spec.scaffold)
      final_hook = tf.compat.v1.train.FinalOpsHook(evaluation.final)
      all_hooks = (self._input_start(kept, evaluation.data) +
                   session_hooks + list(built.spec.evaluation_hooks) +
                   [final_hook])
      if kept is None:
        scaffold = tf.compat.v1.train.Scaffold(
            saver=evaluation.saver, local_init_op=evaluation.local_init_op,
            copy_from_scaffold=built.spec.scaffold)
      else:
        scaffold = kept.parts.scaffold
      creator = self._session_creator(kept, scaffold=scaffold, path=path,
                                      keeping=keys is not None)
      ran = 0
      with tf.compat.v1.train.MonitoredSession(
          session_creator=creator, hooks=all_hooks) as session:
        run = (session_loop.plain_run(session, evaluation.update, all_hooks)
               or (lambda: session.run(evaluation.update)))
        while not session.should_stop() and (steps is None or ran < steps):
          run()
          ran += 1
    self._keep(ModeKeys.EVAL, keys, kept=kept, creator=creator,
               graph=evaluation.graph,
               parts=_KeptParts(evaluation=evaluation, scaffold=scaffold),
               holds=checkpoints.content_id(path))
    # A metric's value may be a structure of tensors (2.15 returned it as
    # the session gave it: nested tuples of values).
    results = {key: tf.nest.map_structure(summaries.numpy_value, value)
               for key, value in final_hook.final_ops_values.items()}
    results['global_step'] = np.int64(results['global_step'])
    return self._finish_evaluation(
        results, name=name, checkpoint_path=path, steps_run=ran, hooks=hooks,
        steps=steps,
        graph=graph_files.GraphFiles(graph=evaluation.graph,
                                     saver=evaluation.saver).for_events)

  # ------------------------------------------------------------ predict
  def _prediction_input(self, input_fn: Callable, *,
                        refuse_endless_input: bool) -> Tuple[tf.Graph, Any]:
    """(a new graph, the predict input_fn's data read in it): the input_fn
    called once, as tf.estimator called it."""
    graph = tf.Graph()
    with graph.as_default(), self._building():
      data = model_lib.read_input(input_fn, self._params,
                                  role='predict input_fn', config=self._config)
      if refuse_endless_input:
        engine_lib.refuse_endless(bool(model_lib.repeats_forever(data)),
                                  what='predict')
      if not data.from_dataset and not model_lib.has_dataset_or_queue_runner(
          data.next_batch()[0]):
        # 2.15's warning, through its logger (code and its tests watch it).
        tf.compat.v1.logging.warning(
            'Input graph does not use tf.data.Dataset or contain a '
            'QueueRunner. That means predict yields forever. This is '
            'probably a mistake.')
    return graph, data

  def _prediction_model(self, graph: tf.Graph, data, features, *,
                        path: Optional[str]) -> _Prediction:
    """Builds the PREDICT-mode model_fn (called once, as tf.estimator
    called it) on `data` into `graph`, on `features` (the next element's,
    or None: the model_fn's batches' own)."""
    input_ops = len(graph.get_operations())
    with graph.as_default(), self._building():
      taken = []

      def batches():
        taken.append(features if features is not None else
                     data.next_batch()[0])
        return taken[-1], None

      built = model_lib.build(
          model_fn=self._model_fn, mode=ModeKeys.PREDICT, batches=batches,
          params=self._params, config=self._config,
          placement=placement_lib.SingleDevicePlacement())
      saver, _ = self._saver(built.spec.scaffold)
    keys = self._kept_keys(
        graph, input_ops, path=path,
        eligible=(data.from_dataset and not built.spec.prediction_hooks and
                  kept_sessions.plain_scaffold(built.spec.scaffold)))
    return _Prediction(graph=graph, data=data, built=built, saver=saver,
                       features=taken[0], keys=keys)

  def _prediction(self, input_fn: Callable, *, path: Optional[str],
                  refuse_endless_input: bool):
    """(the prediction graph a prediction runs, the kept graph and session
    it is, or None; the new input to feed it, or None; the keys of the
    graph built, for keeping). A kept graph of the same model whose input
    differs (each call predicting new examples) runs with the new input's
    batches fed to its features, read in a session of the new graph's
    input part alone. A model_fn that builds the same graph in PREDICT
    (graph/model.py's SAME_GRAPH_MODES) is not called when a kept graph
    takes the same features."""
    graph, data = self._prediction_input(
        input_fn, refuse_endless_input=refuse_endless_input)
    with graph.as_default():
      features = data.next_batch()[0] if data.from_dataset else None
    if (path is not None and features is not None and
        model_lib.builds_same_graph(self._model_fn, ModeKeys.PREDICT)):
      kept = self._keeper.take(
          ModeKeys.PREDICT, lambda k: _same_structure(
              k.parts.prediction.features, features))
      if kept is not None:
        return kept.parts.prediction, kept, _Prediction(
            graph=graph, data=data, built=None, saver=None,
            features=features, keys=None), None
    fresh = self._prediction_model(graph, data, features, path=path)
    kept = self._take_kept(ModeKeys.PREDICT, fresh.keys)
    if kept is not None or fresh.keys is None:
      return (fresh if kept is None else kept.parts.prediction), kept, None, \
          fresh.keys
    kept = self._keeper.take(
        ModeKeys.PREDICT, lambda k: k.model_key == fresh.keys[1] and
        _same_structure(k.parts.prediction.features, fresh.features))
    if kept is None:
      return fresh, None, None, fresh.keys
    return kept.parts.prediction, kept, fresh, fresh.keys

  def predict(self, input_fn: Callable, *,
              predict_keys: Optional[Sequence[str]] = None,
              hooks: Sequence[Any] = (),
              checkpoint_path: Optional[str] = None,
              yield_single_examples: bool = True,
              refuse_endless_input: bool = False) -> Iterator[Any]:
    """See `Estimator.predict`."""
    path = checkpoints.checkpoint_to_run(self.model_dir, checkpoint_path,
                                         to='predict')
    prediction, kept, fed, keys = self._prediction(
        input_fn, path=path, refuse_endless_input=refuse_endless_input)
    built = prediction.built
    single = not isinstance(built.spec.predictions, dict)
    predict_keys = engine_lib.check_predict_keys(
        predict_keys, built.predictions, single=single)
    # Prediction has no training loop for runtime hooks to observe.
    _, session_hooks = engine_lib.split_hooks(hooks)
    with prediction.graph.as_default(), self._kept_graph_open(kept):
      self._check_fits_or_warm_start(path, built.spec.scaffold)
      scaffold = (kept.parts.scaffold if kept is not None else
                  tf.compat.v1.train.Scaffold(
                      saver=prediction.saver,
                      copy_from_scaffold=built.spec.scaffold))
      initializer = ([] if fed is not None else
                     self._input_start(kept, prediction.data))
      creator = self._session_creator(kept, scaffold=scaffold, path=path,
                                      keeping=keys is not None)
      all_hooks = (initializer + session_hooks +
                   list(built.spec.prediction_hooks))
      batches = _predicted_batches(prediction, fed, self, all_hooks)
      try:
        with tf.compat.v1.train.MonitoredSession(
            session_creator=creator, hooks=all_hooks) as session:
          yield from engine_lib.yield_predictions(
              batches(session), single=single, keys=predict_keys,
              yield_single_examples=yield_single_examples)
      except GeneratorExit:  # The program took what it wanted.
        self._keep_prediction(keys, kept, creator, prediction, scaffold, path)
        raise
    self._keep_prediction(keys, kept, creator, prediction, scaffold, path)

  def _keep_prediction(self, keys, kept, creator, prediction: _Prediction,
                       scaffold, path: Optional[str]) -> None:
    self._keep(ModeKeys.PREDICT, keys, kept=kept, creator=creator,
               graph=prediction.graph,
               parts=_KeptParts(scaffold=scaffold, prediction=prediction),
               holds=checkpoints.content_id(path))

  # ------------------------------------------------------------- export
  def export_saved_model(self, export_dir_base: str, *,
                         serving_input_receiver_fn: Optional[Callable] = None,
                         checkpoint_path: Optional[str] = None,
                         input_fn: Optional[Callable] = None,
                         initialization_is_trained: bool = False) -> str:
    """See `Estimator.export_saved_model`; initial values are never
    exported here (`initialization_is_trained` is model_to_estimator's,
    which the eager engine runs)."""
    del initialization_is_trained
    path = self._checkpoint_to_export(checkpoint_path,
                                      initialization_is_trained=False)
    if serving_input_receiver_fn is None:
      receiver = self._inferred_receiver(input_fn)
      serving_input_receiver_fn = lambda: receiver
    export_dir = saved_model.export(
        model_fn=self._model_fn, params=self._params, config=self._config,
        serving_input_receiver_fn=serving_input_receiver_fn,
        checkpoint_path=path, export_dir_base=export_dir_base)
    logging.info('Exported SavedModel of %s to %s', path, export_dir)
    return export_dir

  def export_saved_models(self, export_dir_base: str, *,
                          receiver_fn_map: Dict[str, Callable],
                          checkpoint_path: Optional[str] = None,
                          initialization_is_trained: bool = False) -> str:
    """See `Estimator.experimental_export_all_saved_models`: one MetaGraph
    per mode of `receiver_fn_map` (saved_model.export_modes)."""
    del initialization_is_trained
    path = self._checkpoint_to_export(checkpoint_path,
                                      initialization_is_trained=False)
    export_dir = saved_model.export_modes(
        model_fn=self._model_fn, params=self._params, config=self._config,
        receiver_fn_map=receiver_fn_map, checkpoint_path=path,
        export_dir_base=export_dir_base)
    logging.info('Exported SavedModel of %s (modes %s) to %s', path,
                 sorted(receiver_fn_map), export_dir)
    return export_dir
