"""The eager engine: runs TF2 model_fns as compiled tf.functions.

This is how the runtime runs a model_fn that works eagerly (Keras 3 layers,
a Keras optimizer, or a `train_op` built from TF2 ops): the model_fn is
called once eagerly under the strategy's scope to create the variables
(`eager.model.EagerModel`), and the steps run in compiled loops,
`steps_per_loop` steps per call, that the shared training loop
(`engine.Engine.train`, a `controller.TrainController`) drives.
Checkpoints are object-based (`tf.train.Checkpoint`, see `eager.restore`).
How the steps are distributed is the business of the `train_paths` object
it picks.
"""

import contextlib
import dataclasses
from typing import (Any, Callable, Dict, Iterator, Optional, Sequence,
                    Tuple)

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.cluster import tf_config as cluster
from estimator_rt.training import engine as engine_lib
from estimator_rt.export import saved_model as export_lib
from estimator_rt.training import graph_files
from estimator_rt.training import graph_identity
from estimator_rt.training import kept_state
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.inputs import release
from estimator_rt.cluster import strategies
from estimator_rt.core import summaries
from estimator_rt.training.eager import loop_beside
from estimator_rt.training.eager import loops
from estimator_rt.training.eager import random_state
from estimator_rt.training.eager import restore as restore_lib
from estimator_rt.training.eager import session_hooks as session_hooks_lib
from estimator_rt.training.eager import train_paths
from estimator_rt.training.eager.model import EagerModel
from estimator_rt.core.errors import as_count
from estimator_rt.core.errors import check_positive_count
from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import MAX_INT32
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys


@dataclasses.dataclass
class _KeptTraining:
  """The TRAIN model and its compiled loop a training left, for the next
  training of an input of the same element spec: it neither builds nor
  traces again, and restores the newest checkpoint only if the model does
  not hold it (`holds`: its `checkpoints.content_id`). (The model_fn is not
  called again: a TF2 model_fn's calls are the runtime's, as EVAL's cached
  graph already was; tf.estimator 2.15 never ran these model_fns.) A loop
  with seeded stateful random ops is not kept: its sequence would go on
  where a new trace starts it again."""

  element_spec: Any
  model: EagerModel
  loop: Any
  holds: Optional[Tuple] = None


@dataclasses.dataclass
class _KeptPrediction:
  """The PREDICT model and compiled step the last prediction ran, for the
  next prediction of an input of the same element spec (a service
  predicting one example at a time), holding the checkpoint of
  `checkpoints.content_id` `holds`."""

  element_spec: Any
  model: EagerModel
  step: Callable
  holds: Optional[Tuple] = None
  # Whether its step holds a seeded stateful random op (None: not known
  # yet; see random_state.py).
  random_state: Optional[bool] = None


class _EvalState:
  """A cached EVAL graph and its compiled loop (rebuilt per input_fn)."""

  def __init__(self, graph: EagerModel):
    self.graph = graph
    self.loop = loops.make_eval_loop(graph)
    # The `checkpoints.content_id` of the checkpoint its variables hold.
    self.holds = None
    # (the loop's traced graph, whether it holds a seeded stateful random
    # op): see random_state.py.
    self.random_state = (None, False)
    # An empty dataset of the element spec train_and_evaluate's check of
    # the evaluation read (None once used): see `warm_up`.
    self.checked_input: Optional[tf.data.Dataset] = None
    self._compiling: Optional[loop_beside.CompilingAhead] = None

  def warm_up(self) -> None:
    """Traces the loop for the checked input's iterators, here, and starts
    compiling it on a helper thread (loop_beside.CompilingAhead: a run of
    0 steps on an empty dataset; nothing is read, no metric moves), so
    that the first evaluation finds both done (see `await_compiled`). A
    failure is left to the first evaluation, which traces again and
    reports it there, after the training 2.15 would have done first."""
    empty, self.checked_input = self.checked_input, None
    iterator = iter(empty)
    try:
      concrete = self.loop.concrete(iterator, loops.NUM_STEPS_SPEC)
    except Exception as e:  # pylint: disable=broad-except
      logging.debug('Tracing the evaluation ahead failed (%s); the first '
                    'evaluation traces it.', e)
      return
    no_steps = tf.constant(0, tf.int32)
    self._compiling = loop_beside.CompilingAhead(
        lambda: concrete(iterator, no_steps), what='the evaluation')

  def await_compiled(self) -> None:
    """Returns once the compiling `warm_up` started (if any) ended."""
    if self._compiling is not None:
      self._compiling.wait()

  def note_random_state(self, traced: tf.Graph) -> None:
    """After a run of the loop traced as `traced`: marks if it holds a
    seeded stateful random op, whose sequence the next run goes on with."""
    if self.random_state[0] is not traced:
      self.random_state = (traced,
                           random_state.loop_has_random_state(traced))
    if self.random_state[1]:
      random_state.mark_random_state()


class EagerEngine(engine_lib.Engine):
  """Trains, evaluates, predicts with and exports a TF2 model_fn.

  The semantics are `Estimator`'s (see there); this class is how they are
  carried out for a model_fn that runs eagerly. Arguments as for
  `engine.Engine`.
  """

  def __init__(self, **kwargs):
    super().__init__(**kwargs)
    self._train_path = None
    self._eval_strategy = None
    self._eval_states = {}
    # The last training's model and loop (see _KeptTraining), and the last
    # prediction's (see _KeptPrediction).
    self._kept_training: Optional[_KeptTraining] = None
    self._kept_prediction = None
    self._kept_bytes = kept_state.kept_bytes()
    if self._config.role.creates_strategy_first:
      # Collective ops must be configured before TensorFlow runs any op, so
      # a training task creates this strategy now rather than at train().
      _ = self.train_strategy

  # The path (and its strategy) is created once per Estimator: creating a
  # strategy is not free, and compiled functions stay bound to the strategy
  # they were traced under.
  @property
  def _path(self) -> train_paths.StrategyPath:
    if self._train_path is None:
      self._train_path = train_paths.make_train_path(self._config)
    return self._train_path

  @property
  def train_strategy(self) -> tf.distribute.Strategy:
    """The strategy training runs under (a standalone client connects to
    its servers first)."""
    return self._path.strategy

  @property
  def eval_strategy(self) -> tf.distribute.Strategy:
    """The strategy for evaluate, predict (and export: no distribution)."""
    if self._eval_strategy is None:
      task = self._config.task_info
      if self._config.eval_distribute is not None:
        self._eval_strategy = strategies.resolve_strategy(
            self._config.eval_distribute)
      elif (task is not None and task.standalone_client and
            task.has_evaluator):
        # A standalone client evaluates on the evaluator server of its
        # remote_cluster; the training strategy connects to it.
        _ = self.train_strategy
        self._eval_strategy = tf.distribute.OneDeviceStrategy(
            cluster.cpu_device(cluster.EVALUATOR, 0))
      elif (self._config.task_info is not None or
            strategies.is_central_storage(self.train_strategy) or
            strategies.is_multi_worker(self.train_strategy)):
        # In a cluster, evaluation runs in one process (an evaluator must
        # not even create the training strategy: it would join training).
        # CentralStorageStrategy miscounts Keras metric updates (observed
        # on TF 2.21). All of these evaluate without distribution.
        self._eval_strategy = tf.distribute.get_strategy()
      else:
        self._eval_strategy = self.train_strategy
    return self._eval_strategy

  @property
  def _checkpoint_io_device(self) -> Optional[str]:
    """This process's CPU when its variables live on other machines (a
    standalone client, a parameter-server chief, once connected), so that
    model_dir is read and written here; None otherwise."""
    if self._train_path is None:
      return None  # Not connected to a cluster: everything is local.
    return self._train_path.checkpoint_io_device

  @property
  def _keeps(self) -> bool:
    """Whether a call may keep its model for the next (training/
    kept_state.py)."""
    return self._kept_bytes > 0

  def _fits(self, model: EagerModel) -> bool:
    """Whether `model`'s variables fit in what may be kept."""
    return kept_state.variables_bytes(model.model_variables) <= (
        self._kept_bytes)

  def _seed(self):
    if self._config.tf_random_seed is not None:
      # NumPy, which Keras seeds too, takes [0, 2**32); 2.15 took any int.
      random_state.seed(self._config.tf_random_seed % 2**32)

  def _check_input_checkpointing(self) -> None:
    """Refuses checkpoint_input where TensorFlow cannot save the iterator
    or where its state would not reach model_dir."""
    problem = train_paths.checkpoint_input_problem(self._config)
    if problem is not None:
      raise UserInputError(
          f'RunConfig: checkpoint_input=True is not supported with '
          f'{problem}. Turn checkpoint_input off.')

  # -------------------------------------------------------------- train
  @random_state.watched
  def _build_training(self, input_fn, *, latest, session_hooks,
                      summary_writer) -> engine_lib.TrainingSetup:
    """See `engine.Engine._build_training`. The controller writes every
    training scalar; the compiled loop's graph goes to `summary_writer`
    and graph.pbtxt once training starts (`_write_graph_files`)."""
    if self._config.checkpoint_input:
      self._check_input_checkpointing()
    path = self._path
    self._seed()
    # checkpoint_input: one plain iterator over the global batches, the
    # same on every worker (see inputs.make_input), because TensorFlow's
    # distributed iterators are not checkpointable.
    replicate = bool(self._config.checkpoint_input)
    data = path.make_input(input_fn, self._params, replicate=replicate)
    self._remember_features(data.element_spec)
    if replicate:
      path.check_same_input_everywhere(data.sample)
    local = (not replicate and self._config.task_info is None and
             type(path) is train_paths.StrategyPath)  # pylint: disable=unidiomatic-typecheck
    keeps = local and latest is not None and self._keeps
    let_go = local and release.can_let_go(data.dataset)
    kept, self._kept_training = self._kept_training, None
    if keeps and kept is not None and kept.element_spec == data.element_spec:
      model, train_loop = kept.model, kept.loop
      if not checkpoints.still_holds(kept.holds, latest):
        self._restore_for_training(model, latest, None)
      iterator = iter(data.dataset)
      train_loop.trace(iterator)  # Found traced: the same iterator's type.
      return self._training_setup(path, model, train_loop, iterator,
                                  session_hooks, summary_writer,
                                  kept=data.element_spec, let_go=let_go,
                                  beside=self._runs_beside(path, train_loop))
    with path.placement():
      model = EagerModel(model_fn=self._model_fn, mode=ModeKeys.TRAIN,
                         params=self._params, config=self._config,
                         strategy=path.strategy, sample=data.sample)
    input_iterator = None
    if replicate:
      # The iterator exists before the restore so that its position can be
      # restored with the model; probing it now refuses an uncheckpointable
      # pipeline before model_dir is written.
      input_iterator = iter(data.dataset)
      inputs.check_checkpointable(input_iterator, role='train input_fn')
    self._restore_for_training(model, latest, input_iterator)
    train_loop, iterator = path.make_loop(
        model, data, input_fn, self._params, iterator=input_iterator,
        replicate=replicate)
    beside = local and self._runs_beside(path, train_loop)
    if beside:
      train_loop.compile_ahead(iterator)
      train_loop.first_call_work = self._evaluation_warm_up
    if input_iterator is not None:
      # Saved (and restored, above) under this name with the model.
      setattr(model.checkpoint, inputs.ITERATOR_KEY, input_iterator)
    return self._training_setup(
        path, model, train_loop, iterator, session_hooks, summary_writer,
        kept=data.element_spec if keeps else None, let_go=let_go,
        beside=beside)

  @staticmethod
  def _runs_beside(path, train_loop) -> bool:
    """Whether the local `train_loop` may run beside work of the main
    thread (loop_beside.py): one compiled function on one replica."""
    return (isinstance(train_loop, loops.CompiledTrainLoop) and
            path.strategy.num_replicas_in_sync == 1)

  def _training_setup(self, path, model: EagerModel, train_loop, iterator,
                      session_hooks, summary_writer, *, kept, let_go: bool,
                      beside: bool = False) -> engine_lib.TrainingSetup:
    """The TrainingSetup of `train_loop` over `model`; `kept`: the input's
    element spec, to keep both for the next training of such an input
    (None: not kept); `let_go`: see `TrainingSetup.input_let_go`;
    `beside`: the loop may run beside work of the caller's thread
    (`TrainingSetup.loop_beside`)."""
    # What finds the loop's trace without holding the iterator, which
    # `setup` alone then holds (see Engine.train).
    traced_for = loops.CompiledTrainLoop.signature_of(iterator)
    return engine_lib.TrainingSetup(
        train_loop=train_loop, iterator=iterator,
        checkpoint=model.checkpoint,
        global_step=lambda: int(model.global_step.numpy()),
        max_to_keep=as_count(self._config.keep_checkpoint_max),
        agree=path.agreement(), io_device=self._checkpoint_io_device,
        # No SessionRunHook session here (see eager/session_hooks.py): what
        # opens around training writes the graph files.
        session=lambda: self._training_run(
            train_loop, traced_for, summary_writer,
            keep=None if kept is None else _KeptTraining(
                element_spec=kept, model=model, loop=train_loop)),
        hooks=session_hooks_lib.as_runtime_hooks(session_hooks),
        input_let_go=let_go,
        loop_beside=train_loop.call_beside if beside else None)

  @contextlib.contextmanager
  def _training_run(self, train_loop, traced_for, summary_writer, *,
                    keep: Optional['_KeptTraining']):
    """Around training: the graph files written, and afterwards, if it
    ended normally, the model and its compiled loop kept for the next
    training (`keep`), holding the checkpoint saved at its last step.
    `traced_for`: the loop's iterator or its signature (see
    `CompiledTrainLoop.signature_of`)."""
    with self._write_graph_files(train_loop, traced_for, summary_writer):
      yield
    if keep is None or not self._fits(keep.model) or (
        graph_identity.runs_seeded_random_ops(
            train_loop.traced_graph(traced_for))):
      return
    newest = checkpoints.checkpoint_candidates(self.model_dir)[:1]
    step = int(keep.model.global_step.numpy())
    if newest and checkpoints.checkpoint_step(newest[0]) == step:
      keep.holds = checkpoints.content_id(newest[0])
    self._kept_training = keep

  @contextlib.contextmanager
  def _write_graph_files(self, train_loop, traced_for,
                         summary_writer: Optional[summaries.ScalarWriter]):
    """Once training starts, by the writer of model_dir (`summary_writer`
    is None elsewhere): the compiled loop's graph to the training event
    file (TensorBoard's Graphs tab) and, unless
    RunConfig.checkpoint_save_graph_def is False, to graph.pbtxt, as
    tf.estimator 2.15 wrote its training graph (graph_files.py). A loop
    that is not one tf.function (parameter-server training schedules
    several) writes none."""
    if summary_writer is None or not isinstance(train_loop,
                                                loops.CompiledTrainLoop):
      yield
      return
    graph = train_loop.traced_graph(traced_for)
    files = train_loop.graph_files
    if files is None or files.graph is not graph:
      # Made once per trace: a kept loop's next calls write the same graph.
      files = graph_files.GraphFiles(graph=graph, with_meta_graph=False)
      train_loop.graph_files = files
    with graph_files.written_in_background(
        files, directory=self.model_dir, summary_writer=summary_writer,
        graph_file=self._config.checkpoint_save_graph_def,
        begin=train_loop.called):
      yield

  def _restore_for_training(self, model: EagerModel, latest: Optional[str],
                            input_iterator) -> None:
    """Restores `latest` (and the input's position), or warm-starts."""
    if latest is not None:
      restore_lib.restore(model, latest,
                          source=f'model_dir {self.model_dir!r}',
                          io_device=self._checkpoint_io_device)
      logging.info('Restored %s (global step %d).', latest,
                   int(model.global_step.numpy()))
      if input_iterator is not None:
        inputs.restore_iterator(input_iterator, latest)
    else:
      self._maybe_warm_start(model)

  def _maybe_warm_start(self, model: EagerModel) -> None:
    """Initializes `model`'s variables from warm_start_from, if set."""
    settings = self._warm_start_from
    if not settings:
      return
    if not settings.is_default:
      raise UserInputError(
          f'warm_start_from={settings!r}: a TF2 model_fn (eager engine) is '
          'warm-started with all its variables from a checkpoint of the '
          'same model_fn; vars_to_warm_start, vocabularies and renames '
          'need a TF1-style model_fn (graph engine). Pass the checkpoint '
          'path alone.')
    used = restore_lib.warm_start(model, settings.ckpt_to_initialize_from,
                                  io_device=self._checkpoint_io_device)
    logging.info('Warm-started model variables from %s.', used)

  def _restore_or_initialize(self, model: EagerModel,
                             path: Optional[str]) -> None:
    """Restores checkpoint `path` into an EVAL or PREDICT model; with None,
    leaves its fresh variables as initialized and warm-starts them, as
    tf.estimator 2.15 evaluated and predicted without a checkpoint."""
    if path is not None:
      restore_lib.restore(model, path, source=f'checkpoint {path!r}',
                          io_device=self._checkpoint_io_device)
    else:
      self._maybe_warm_start(model)

  # ----------------------------------------------------------- evaluate
  def _evaluation(self, input_fn: Callable, *, steps: Optional[int],
                  name: Optional[str]):
    """The eval input and the (cached) EVAL graph and loop for `input_fn`."""
    check_positive_count('evaluate: steps', steps,
                         phrase='Must specify steps > 0', maximum=MAX_INT32)
    strategy = self.eval_strategy
    data = inputs.make_input(strategy, input_fn, self._params,
                             auto_shard_policy=self._config.auto_shard_policy,
                             role='eval input_fn', config=self._config)
    engine_lib.refuse_endless(data.infinite, what='evaluate', steps=steps)
    self._remember_features(data.element_spec)
    key = (input_fn, name)
    state = self._eval_states.get(key)
    if state is None:
      state = _EvalState(EagerModel(
          model_fn=self._model_fn, mode=ModeKeys.EVAL, params=self._params,
          config=self._config, strategy=strategy, sample=data.sample))
      self._eval_states = {key: state}  # Keep one: graphs hold memory.
    return data, state

  @random_state.watched
  def check_evaluation(self, input_fn: Callable, *,
                       steps: Optional[int] = None,
                       name: Optional[str] = None,
                       hooks: Sequence[Any] = ()) -> None:
    """See `Engine.check_evaluation` (`hooks` change nothing here: a TF2
    model_fn's evaluation of an endless input needs `steps`)."""
    del hooks
    if self._config.task_info is not None:
      # A task that trains connects to its cluster when its training
      # strategy is made, which replaces the devices eager code sees: an
      # EVAL graph built before would hold variables on a device that is
      # gone. Only training tasks call this (an evaluator must not join).
      _ = self.train_strategy
    data, state = self._evaluation(input_fn, steps=steps, name=name)
    if (release.can_let_go(data.dataset) and
        state.graph.strategy.num_replicas_in_sync == 1):
      # take(0) starts no iterator of the input_fn's pipeline: compiling
      # ahead reads nothing of it (no prefetch). A dataset over Python
      # state is not kept: the check's pass of it ends now, as before.
      state.checked_input = data.dataset.take(0)

  def _evaluation_warm_up(self) -> Optional[Callable[[], None]]:
    """The work the first training loop's call runs beside (see
    loop_beside.py): compiling the evaluation train_and_evaluate checked,
    if it has not been compiled. The loop is on a helper thread; the
    model_fn's EVAL trace runs here, on the main thread."""
    for state in self._eval_states.values():
      if state.checked_input is not None:
        return state.warm_up
    return None

  @random_state.watched
  def evaluate(self, input_fn: Callable, *, steps: Optional[int] = None,
               hooks: Sequence[Any] = (),
               checkpoint_path: Optional[str] = None,
               name: Optional[str] = None) -> Dict[str, Any]:
    """See `Estimator.evaluate`."""
    _refuse_session_hooks(hooks)
    path = checkpoints.checkpoint_to_run(self.model_dir, checkpoint_path,
                                         to='evaluate')
    if path is None:
      # Fresh variables (a cached graph's hold a checkpoint's values), made
      # as training makes them.
      self._eval_states = {}
      self._seed()
    data, state = self._evaluation(input_fn, steps=steps, name=name)
    state.checked_input = None  # Its own call compiles the loop.
    graph = state.graph
    if path is None or not checkpoints.still_holds(state.holds, path):
      self._restore_or_initialize(graph, path)
      state.holds = checkpoints.content_id(path)
    graph.reset_metrics()
    iterator = iter(data.dataset)
    num_steps = tf.constant(steps or loops.UNTIL_END_OF_INPUT, tf.int32)
    state.await_compiled()
    loss_sum, count, steps_run, pair_values = state.loop(iterator, num_steps)
    state.note_random_state(state.loop.traced_graph(iterator, num_steps))
    count = float(count)
    # tf.estimator 2.15's types: its loss was a float32 mean metric, the
    # global step an int64 (see summaries.numpy_value).
    results = {'loss': np.float32(float(loss_sum) / count if count else
                                  float('nan'))}
    for metric_name, metric in graph.metrics.items():
      results[metric_name] = summaries.numpy_value(metric.result())
    for metric_name, value in zip(state.loop.pair_names, pair_values):
      results[metric_name] = summaries.numpy_value(value)
    results['global_step'] = np.int64(graph.global_step.numpy())
    # The graph of the compiled evaluation, for a new event file of the
    # evaluation's directory (traced already: this only looks it up).
    evaluation_graph = lambda: graph_files.GraphFiles(
        graph=state.loop.traced_graph(iterator, num_steps),
        with_meta_graph=False).for_events()
    return self._finish_evaluation(results, name=name, checkpoint_path=path,
                                   steps_run=int(steps_run), hooks=hooks,
                                   steps=steps,
                                   graph=evaluation_graph)

  # ------------------------------------------------------------ predict
  def predict(self, input_fn: Callable, *,
              predict_keys: Optional[Sequence[str]] = None,
              hooks: Sequence[Any] = (),
              checkpoint_path: Optional[str] = None,
              yield_single_examples: bool = True,
              refuse_endless_input: bool = False) -> Iterator[Any]:
    """See `Estimator.predict`."""
    # Prediction runs no training loop for runtime hooks to observe.
    _refuse_session_hooks(hooks)
    path = checkpoints.checkpoint_to_run(self.model_dir, checkpoint_path,
                                         to='predict')
    if path is None:
      self._seed()
    strategy = self.eval_strategy
    with random_state.watching():
      data = inputs.make_input(strategy, input_fn, self._params,
                               auto_shard_policy='OFF',
                               role='predict input_fn', config=self._config,
                               one_pass=True)
      if refuse_endless_input:
        engine_lib.refuse_endless(data.infinite, what='predict')
      kept = self._kept_prediction_for(data, path)
    graph, step = kept.model, kept.step
    keys = engine_lib.check_predict_keys(
        predict_keys, graph.build_spec.predictions_dict,
        single=not isinstance(graph.build_spec.predictions, dict))
    keep = path is not None and self._keeps and self._fits(graph)

    def predict_batch(element):
      per_replica = step(element)
      if kept.random_state is None:  # Its trace is the same for each call.
        kept.random_state = random_state.loop_has_random_state(
            step.traced_graph(element))
      if kept.random_state:
        random_state.mark_random_state()
      return loops.concat_replica_predictions(per_replica)

    try:
      yield from engine_lib.yield_predictions(
          (predict_batch(element) for element in data.dataset),
          single=not isinstance(graph.build_spec.predictions, dict),
          keys=keys, yield_single_examples=yield_single_examples)
    except GeneratorExit:  # The program took what it wanted.
      self._kept_prediction = kept if keep else None
      raise
    self._kept_prediction = kept if keep else None

  def _kept_prediction_for(self, data, path: Optional[str]
                           ) -> '_KeptPrediction':
    """The PREDICT model and compiled step for `data`: the last
    prediction's if its input had the same element spec (the checkpoint
    `path` restored into it unless it holds it already), else new ones
    (without a checkpoint, always new: fresh variables each call)."""
    kept, self._kept_prediction = self._kept_prediction, None
    if (path is None or kept is None or
        kept.element_spec != data.element_spec):
      model = EagerModel(model_fn=self._model_fn, mode=ModeKeys.PREDICT,
                         params=self._params, config=self._config,
                         strategy=self.eval_strategy, sample=data.sample)
      kept = _KeptPrediction(element_spec=data.element_spec, model=model,
                             step=loops.make_predict_step(model))
    if path is None or not checkpoints.still_holds(kept.holds, path):
      self._restore_or_initialize(kept.model, path)
      kept.holds = checkpoints.content_id(path)
    return kept

  # ------------------------------------------------------------- export
  @random_state.watched
  def export_saved_model(self, export_dir_base: str, *,
                         serving_input_receiver_fn: Optional[Callable] = None,
                         checkpoint_path: Optional[str] = None,
                         input_fn: Optional[Callable] = None,
                         initialization_is_trained: bool = False) -> str:
    """See `Estimator.export_saved_model`."""
    path = self._checkpoint_to_export(
        checkpoint_path, initialization_is_trained=initialization_is_trained)
    if path is None:
      self._seed()
    strategy = tf.distribute.get_strategy()
    if serving_input_receiver_fn is not None:
      receiver = export_lib.tf2_receiver(serving_input_receiver_fn)
    else:
      receiver = self._inferred_receiver(input_fn)
    sample = _zeros_batch(receiver)
    graph = EagerModel(model_fn=self._model_fn, mode=ModeKeys.PREDICT,
                       params=self._params, config=self._config,
                       strategy=strategy, sample=(sample, None))
    if path is not None:
      restore_lib.restore(graph, path, source=f'checkpoint {path!r}',
                          io_device=self._checkpoint_io_device)
    export_dir = export_lib.save(graph, receiver, export_dir_base)
    logging.info('Exported SavedModel of %s to %s',
                 path or 'the initial values', export_dir)
    return export_dir

  def export_saved_models(self, export_dir_base: str, *,
                          receiver_fn_map: Dict[str, Callable],
                          checkpoint_path: Optional[str] = None,
                          initialization_is_trained: bool = False) -> str:
    """See `Estimator.experimental_export_all_saved_models`: the PREDICT
    mode only. TRAIN and EVAL SavedModels are TF1 MetaGraphs (a train op in
    a collection, supervised signatures, name-based variables) that a TF2
    model_fn's compiled functions and object-based checkpoints have no
    form of: they are refused in one line, before anything is written.

    Raises:
      GraphModelFnError: the checkpoint to export is name-based (nothing
        told the engine yet; the model_fn is TF1-style): the Estimator
        hands the export to the graph engine.
      UserInputError: TRAIN or EVAL asked of a TF2 model_fn.
    """
    supervised = sorted(set(receiver_fn_map) - {ModeKeys.PREDICT})
    if not supervised:
      return self.export_saved_model(
          export_dir_base,
          serving_input_receiver_fn=receiver_fn_map[ModeKeys.PREDICT],
          checkpoint_path=checkpoint_path,
          initialization_is_trained=initialization_is_trained)
    path = self._checkpoint_to_export(
        checkpoint_path, initialization_is_trained=initialization_is_trained)
    from estimator_rt.training import engine_choice  # pylint: disable=g-import-not-at-top
    if path is not None and not engine_choice.is_object_based(path):
      raise GraphModelFnError(
          f'checkpoint {path!r} is name-based (tf.estimator\'s or the graph '
          'engine\'s)', reason='the checkpoint to export is name-based')
    raise UserInputError(
        f'experimental_export_all_saved_models: modes {supervised} are not '
        'exported for a TF2 model_fn (eager engine): TRAIN and EVAL '
        'SavedModels are TF1 MetaGraphs (a train op, supervised signatures, '
        'name-based variables), which the graph engine writes for TF1-style '
        'model_fns; export the PREDICT mode.')


def _refuse_session_hooks(hooks: Sequence[Any]) -> None:
  """Evaluation and prediction here run compiled calls, no session: a
  SessionRunHook that needs one is refused in one line (see
  eager/session_hooks.py; the ones it accepts have nothing to do here)."""
  _, session_hooks = engine_lib.split_hooks(hooks)
  session_hooks_lib.as_runtime_hooks(session_hooks)


def _zeros_batch(receiver) -> Any:
  """A one-example batch of zeros shaped like the features the receiver
  produces (traced, so a parsing receiver needs no valid serialized input).
  """
  names = list(receiver.receiver_specs)
  specs = [receiver.receiver_specs[n] for n in names]
  concrete = tf.function(
      lambda *args: receiver.features_for(dict(zip(names, args)))
  ).get_concrete_function(*specs)

  def zeros(tensor):
    if not isinstance(tensor, tf.Tensor):
      raise UserInputError(
          'serving_input_receiver_fn produced a non-dense feature '
          f'({type(tensor).__name__}); only dense features can be exported.')
    shape = [1 if d is None else d for d in tensor.shape.as_list()]
    if tensor.dtype == tf.string:
      return tf.fill(shape, tf.constant(b'', tf.string))
    return tf.zeros(shape, tensor.dtype)

  return tf.nest.map_structure(zeros, concrete.structured_outputs)
