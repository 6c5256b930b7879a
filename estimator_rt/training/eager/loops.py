"""The eager engine's compiled inner loops: many training steps, a whole
evaluation, a batch of predictions, each inside one `tf.function`.

The outer loop (controller.py) decides how many steps to run; these
functions only run them. Training runs `num_steps` steps per call in a
`tf.range` loop over the distributed iterator, so the Python overhead of a
call is paid once per loop, not once per step.
"""

import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import surface_user_errors
from estimator_rt.inputs.pipeline import batch_size_of
from estimator_rt.inputs.pipeline import split_across_replicas
from estimator_rt.inputs.pipeline import split_element
from estimator_rt.training import divergence
from estimator_rt.training.eager import direct_call
from estimator_rt.training.eager import executor_choice
from estimator_rt.training.eager import loop_beside
from estimator_rt.training.eager.model import EagerModel

# Loop bound for "until the input ends": large, but an int32 for tf.range.
UNTIL_END_OF_INPUT = 2**31 - 1


def _replica_weight(features, num_replicas: int, *, loss_is_sum: bool):
  """This replica's share of the global batch, for weighting its loss.

  A summed loss (a head's loss_reduction=SUM, `EstimatorSpec.loss_is_sum`)
  needs none: the sum over replicas of each one's summed loss is the global
  batch's, as tf.estimator 2.15 summed it. One replica needs none either.
  With equal batches (a static batch dimension) the share is
  1 / num_replicas. Otherwise the last global batch
  may be split unevenly, or leave a replica nothing: weighting by batch
  size keeps the update the mean over the examples of the global batch,
  exactly as on one replica. That costs an all-reduce of batch sizes per
  step, so only unknown batch sizes pay for it.

  Returns:
    (weight, has_examples): a float or float32 scalar, and a bool scalar or
    None when every replica surely has examples.
  """
  if num_replicas == 1 or loss_is_sum:
    return 1.0, None
  if tf.nest.flatten(features)[0].shape[:1].is_fully_defined():
    return 1.0 / num_replicas, None
  count = batch_size_of(features)
  total = tf.distribute.get_replica_context().all_reduce(
      tf.distribute.ReduceOp.SUM, count)
  return count / tf.maximum(total, 1.0), count > 0


def _weighted(loss, weight, has_examples):
  # An empty batch's mean loss is NaN; it must contribute 0, not NaN.
  if has_examples is not None:
    loss = tf.where(has_examples, loss, tf.zeros_like(loss))
  if isinstance(weight, float) and weight == 1.0:
    return loss
  return loss * tf.cast(weight, loss.dtype)


def _replica_train_step(graph: EagerModel) -> Callable:
  """The per-replica step: forward, backward, apply.

  It returns this replica's weighted loss; the sum over replicas is the
  mean loss over the global batch. The step is not converted by AutoGraph:
  a model_fn is traced as written, as tf.estimator ran it (converting it
  cost over a second per trace); tensor-dependent Python control flow in a
  model_fn needs tf.cond / tf.while_loop, or a helper under @tf.function.
  """
  strategy = graph.strategy
  num_replicas = strategy.num_replicas_in_sync

  @tf.autograph.experimental.do_not_convert
  def step(element):
    features, labels = split_element(element)
    if not graph.uses_optimizer:
      spec = graph.call(features, labels)
      weight, has_examples = _replica_weight(
          features, num_replicas, loss_is_sum=spec.loss_is_sum)
      # The train_op updated the variables; make sure it ran before the
      # loss is returned.
      with tf.control_dependencies(
          [t for t in tf.nest.flatten(spec.train_op) if t is not None]):
        loss = tf.identity(tf.cast(spec.loss, tf.float32))
      return _weighted(loss, weight, has_examples)
    with tf.GradientTape() as tape:
      spec = graph.call(features, labels)
      # The loss is a mean over this replica's batch; the optimizer sums
      # gradients across replicas, so weighting by this replica's share of
      # the global batch makes the update the mean over the global batch.
      weight, has_examples = _replica_weight(
          features, num_replicas, loss_is_sum=spec.loss_is_sum)
      scaled_loss = _weighted(spec.loss, weight, has_examples)
    variables = graph.trainable_variables
    grads = tape.gradient(scaled_loss, variables)
    pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
    if not pairs:
      raise ModelFnError(
          'model_fn: the loss does not depend on any trainable variable '
          f'({len(variables)} exist); no gradient to apply.')
    graph.optimizer.apply_gradients(pairs)
    return tf.cast(scaled_loss, tf.float32)

  return step


def saved_float_variables(graph: EagerModel) -> List[tf.Variable]:
  """The floating-point variables a TRAIN checkpoint of `graph` holds:
  the model's and the optimizer's state."""
  optimizer = list(graph.checkpoint.optimizer) if graph.uses_optimizer else []
  return [v for v in list(graph.model_variables) + optimizer
          if v.dtype.base_dtype.is_floating]


def _one_step(loss, steps):
  """The loop variables after a step that returned `loss`."""
  return steps + 1, loss


def _step_of_finite_input(run_step, iterator, steps, loss, more):
  """A step of a loop over input that may end: the step if there is a next
  element (`more` stays True), else the loop variables as they were with
  `more` False."""
  del more
  optional = iterator.get_next_as_optional()
  ran = optional.has_value()
  steps, loss = tf.cond(
      ran, lambda: _one_step(run_step(optional.get_value()), steps),
      lambda: (steps, loss))
  return steps, loss, ran


# The number of steps a compiled loop takes: an int32 tensor, so that every
# length runs the same trace.
NUM_STEPS_SPEC = tf.TensorSpec([], tf.int32)


class CompiledTrainLoop:
  """A compiled training loop as the controller calls it (see
  `controller.TrainLoop`): `loop(iterator, num_steps)` with a Python int,
  which becomes an int32 tensor so that every length runs the same trace.

  Args:
    function: the `tf.function` `(iterator, num_steps) -> (loss, steps,
      loss_finite, state_finite, global_step)`.
    executor: the executor it is traced and run for (executor_choice.py;
      None: TensorFlow's default). Where that executor refuses the
      function, it runs on the default one from then on.
  """

  def __init__(self, function, *, executor: Optional[str] = None):
    self.function = function
    self.executor = executor
    # Whether `trace` checked the trace against what the executor runs.
    self._executor_checked = False
    self._call = surface_user_errors(self._on_executor(function))
    # The graph_files.GraphFiles of its trace, once the engine made them
    # (a kept loop writes the same graph at its next calls).
    self.graph_files = None
    # Returns what the main thread does while the next call runs, or None
    # (loop_beside.py); asked once, at the first call.
    self.first_call_work: Callable[[], Optional[Callable[[], None]]] = (
        lambda: None)
    # Set once a call ended: what waits for the first call's work to be
    # done (graph_files.written_in_background) starts then.
    self.called = threading.Event()
    self._compiling: Optional[loop_beside.CompilingAhead] = None
    # (a weak reference to the iterator, the call of its trace): see
    # `_trace_call`.
    self._traced_call: Optional[Tuple[weakref.ref, Callable]] = None

  def _trace_call(self, iterator) -> Callable:
    """The call of the loop's trace for `iterator`, without tf.function's
    dispatch (direct_call.py), kept for the next calls with the same
    iterator (by a weak reference: the loop must not keep an iterator, and
    its input pipeline, alive). Where functions run eagerly
    (`tf.config.run_functions_eagerly`), or the iterator cannot be
    referenced weakly, the tf.function's call."""
    if tf.config.functions_run_eagerly():
      return self._call
    kept = self._traced_call
    if kept is not None and kept[0]() is iterator:
      return kept[1]
    try:
      reference = weakref.ref(iterator)
    except TypeError:
      return self._call
    concrete = self._concrete(iterator)
    call = surface_user_errors(self._on_executor(direct_call.without_dispatch(
        concrete, (iterator, tf.constant(0, tf.int32)))))
    self._traced_call = (reference, call)
    return call

  def _concrete(self, iterator):
    """The loop's trace for `iterator`, traced for its executor."""
    with executor_choice.executor_scope(self.executor):
      return self.function.get_concrete_function(iterator, NUM_STEPS_SPEC)

  def _on_executor(self, call: Callable) -> Callable:
    """`call` run on the loop's executor, on whichever thread calls it
    (the choice is thread-local); on the default one once the chosen one
    refused the function (before any of its ops ran)."""

    def on_executor(*args):
      executor = self.executor
      try:
        with executor_choice.executor_scope(executor):
          return call(*args)
      except executor_choice.REFUSAL_ERRORS as e:
        if executor is None or not executor_choice.refused(e):
          raise
        logging.info('The training loop runs on TensorFlow\'s default '
                     'executor: the %s refused it (%s).', executor,
                     str(e).splitlines()[-1][:200])
        self.executor = None
        return call(*args)

    return on_executor

  def __call__(self, iterator, num_steps: int):
    return self.call_beside(iterator, num_steps, work=None)

  def call_beside(self, iterator, num_steps: int,
                  work: Optional[Callable[[], None]]):
    """The loop's call, run beside `work` on this thread when there is work
    (`work`, or the first call's: see `first_call_work`): the call then
    runs the trace `trace` made on a helper thread (loop_beside.py)."""
    num_steps = tf.constant(num_steps, tf.int32)
    compiling, self._compiling = self._compiling, None
    first_work, self.first_call_work = self.first_call_work(), lambda: None
    works = [w for w in (first_work, work) if w is not None]
    if not works:
      if compiling is not None:
        compiling.wait()
      output = self._trace_call(iterator)(iterator, num_steps)
    else:
      # The trace `trace` made: the helper thread must not trace (it would
      # call the model_fn off the main thread).
      traced = self._trace_call(iterator)
      if traced is self._call:
        traced = surface_user_errors(self._on_executor(
            self._concrete(iterator)))

      def call():
        if compiling is not None:
          compiling.wait()  # The work goes on meanwhile.
        return traced(iterator, num_steps)

      output = loop_beside.run_alongside(call, lambda: [w() for w in works])
    if not self.called.is_set():
      self.called.set()
    return output

  def trace(self, iterator) -> None:
    """Traces the loop for `iterator` now, so that what only tracing finds
    in a model_fn (a loss that depends on no variable, new variables on
    each call, a Python `if` on a tensor) is refused before model_dir is
    written; the first call then reuses this trace."""
    concrete = surface_user_errors(self._concrete)(iterator)
    if self.executor is not None and not self._executor_checked:
      self._executor_checked = True
      if not executor_choice.runs_safely(concrete.graph):
        # Traced unlowered, as for the chosen executor: on small steps
        # (the only ones it is chosen for) as fast as the lowered loop.
        self.executor = None

  def compile_ahead(self, iterator) -> None:
    """Starts compiling the trace `trace` made for `iterator` on a helper
    thread (loop_beside.CompilingAhead), beside what the main thread does
    before the first call (the first checkpoint, train_and_evaluate's
    check of the evaluation); the first call waits for it. For a local
    loop on one replica only: on several, a call is a collective of every
    replica and worker."""
    concrete = self._on_executor(self._concrete(iterator))
    no_steps = tf.constant(0, tf.int32)
    self._compiling = loop_beside.CompilingAhead(
        lambda: concrete(iterator, no_steps), what='the training loop')

  def traced_graph(self, iterator) -> tf.Graph:
    """The graph of the loop's trace for `iterator` (`trace` made it), or
    for an iterator of signature `iterator` (see `signature_of`)."""
    return self._concrete(iterator).graph

  @staticmethod
  def signature_of(iterator) -> Any:
    """What `traced_graph` takes for `iterator` without holding it: its
    TypeSpec, or the iterator itself if it has none."""
    try:
      return tf.type_spec_from_value(iterator)
    except (TypeError, ValueError):
      return iterator


def make_train_loop(graph: EagerModel, *, infinite_input: bool,
                    split_global_batch: bool = False,
                    jit_compile: bool = False,
                    executor: Optional[str] = None) -> CompiledTrainLoop:
  """A compiled `(iterator, num_steps) -> (loss, steps, loss_finite,
  state_finite, global_step)`.

  It runs up to `num_steps` training steps and counts them in the global step:
  once per step where the step reads the global step (a model_fn's schedule, a
  summary's step), so that each step sees its own; else once after the loop,
  by the steps that ran (two ops fewer per step). It stops early when the
  input ends, or right after the first step whose loss is NaN or infinite: the
  global step then names the step that diverged. `loss` is the last step's
  loss (mean over the global batch), `steps` how many ran, `loss_finite`
  whether every loss was finite and `state_finite` whether every model and
  optimizer variable is finite after the loop (a NaN can reach the weights
  through a gradient while the loss stays finite, e.g. NaN inputs behind a
  ReLU), and `global_step` the global step's value after the loop. The
  controller never saves a checkpoint after a loop that reports either flag
  False. (Reading the global step here, not as an eager op after the call,
  saves about 0.2 ms per loop: 1% of a 100-step loop of the W2 benchmark.)

  Args:
    graph: the TRAIN EagerModel.
    infinite_input: the dataset repeats forever, so no step needs to check
      for the end of input.
    split_global_batch: the iterator yields whole global batches on every
      worker (checkpoint_input with a strategy); each replica takes its
      rows of them (`inputs.split_across_replicas`).
    jit_compile: compile each replica's step with XLA.
    executor: the executor the loop runs on (executor_choice.choose; None:
      TensorFlow's default).
  """
  strategy = graph.strategy
  replica_step = _replica_train_step(graph)
  if jit_compile:
    # The step alone: the loop around it reads the input (iterator ops XLA
    # cannot compile) and checks the finite flags.
    replica_step = tf.function(replica_step, jit_compile=True,
                               autograph=False)
  global_step = graph.global_step
  # Whether the step of the latest trace left the global step's count to
  # the loop's end (count_after_the_loop): set when the step is traced, in
  # the loop's trace, before the loop's end is.
  counted_after = [False]

  def run_step(element):
    if split_global_batch:
      element = split_across_replicas(strategy, element)
    step_graph = tf.compat.v1.get_default_graph()
    first_op = len(step_graph.get_operations())
    per_replica_loss = strategy.run(replica_step, args=(element,))
    counted_after[0] = False
    if not graph.model_fn_counts_global_step:
      if _reads_variable(step_graph.get_operations()[first_op:], global_step,
                         strategy):
        global_step.assign_add(1)
      else:
        counted_after[0] = True
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss,
                           axis=None)

  def count_after_the_loop(steps):
    if counted_after[0]:
      global_step.assign_add(tf.cast(steps, global_step.dtype))

  return compile_train_loop(run_step, graph=graph,
                            infinite_input=infinite_input,
                            after_loop=count_after_the_loop,
                            executor=executor)


def _reads_variable(ops: List[tf.Operation], variable: tf.Variable,
                    strategy: tf.distribute.Strategy) -> bool:
  """Whether one of `ops` (of the function graph being traced) takes
  `variable` (or one of its replicas' copies) as an input: its handle,
  captured from the graphs around (a read, a write, a nested function's
  or control flow's input)."""
  handles = {id(v.handle) for v in
             strategy.experimental_local_results(variable)}
  handles.add(id(variable.handle))
  graph = tf.compat.v1.get_default_graph()
  chain = []
  while isinstance(graph, FuncGraph):
    chain.append(graph)
    graph = graph.outer_graph
  # A graph captures the handle itself (an eager tensor) or what a graph
  # around it captured it as: the outermost function's graph first.
  for inner in reversed(chain):
    for outer, internal in inner.captures:
      if id(outer) in handles:
        handles.add(id(internal))
  return any(id(t) in handles for op in ops for t in op.inputs)


def compile_train_loop(run_step: Callable, *, graph: EagerModel,
                       infinite_input: bool, take: Callable = next,
                       after_loop: Callable[[tf.Tensor], None] = (
                           lambda steps: None),
                       executor: Optional[str] = None) -> CompiledTrainLoop:
  """The compiled loop of `make_train_loop` around `run_step(take(iterator))`,
  one training step that returns the loss reduced over every replica (and
  worker).

  Args:
    take: what a step takes from the iterator (the next element; the
      in-graph client's steps take from each worker's iterator themselves).
    after_loop: called in the trace after the loop with the number of
      steps that ran (an int32 tensor): what the steps left to the loop's
      end (the global step's count, see `make_train_loop`).
    executor: as for `make_train_loop`.
  """
  global_step = graph.global_step
  # Read now, after the restore: what is unsound already is not divergence.
  state = divergence.watched(saved_float_variables(graph))

  # Written with tf.while_loop and tf.cond, not converted by AutoGraph:
  # converting the loop and what it calls (the step, the divergence checks)
  # took about 0.5 s of every train() call that traced it (W2), more than
  # the bare TF2 loop's conversion of its own. The loss's soundness is part
  # of the loop's condition, computed there from the loss (no conditional
  # op, and no loop variable of its own, per step: each loop variable costs
  # the executor a few nodes per step): a diverged step ends the loop at
  # once. The loss is already reduced over replicas and workers, so every
  # synchronous worker stops at the same step. It starts at 0 (sound) and
  # is NaN after a loop of no step, as a step's loss was never read.
  def going(steps, loss, num_steps):
    return tf.logical_and(steps < num_steps, divergence.loss_is_sound(loss))

  @tf.function(autograph=False)
  def train_loop(iterator, num_steps):
    start = (tf.constant(0, tf.int32), tf.constant(0.0))
    if infinite_input:
      steps, loss = tf.while_loop(
          lambda steps, loss: going(steps, loss, num_steps),
          lambda steps, _: _one_step(run_step(take(iterator)), steps),
          start)
    else:
      steps, loss, _ = tf.while_loop(
          lambda steps, loss, more: tf.logical_and(
              going(steps, loss, num_steps), more),
          lambda *values: _step_of_finite_input(run_step, iterator, *values),
          start + (tf.constant(True),))
    after_loop(steps)
    loss_sound = divergence.loss_is_sound(loss)
    return (tf.where(steps > 0, loss, float('nan')), tf.cast(steps, tf.int64),
            loss_sound, divergence.state_is_sound(state),
            global_step.read_value())

  return CompiledTrainLoop(train_loop, executor=executor)


def make_coordinated_train_loop(train_loop: CompiledTrainLoop, coordinator,
                                num_workers: int, global_step) -> Callable:
  """Runs `train_loop` on parameter-server workers through a coordinator.

  The returned function has `train_loop`'s signature and results: asked for
  N steps, it schedules about N / num_workers steps on each worker (they run
  asynchronously, each on its own per-worker iterator, updating the
  variables on the ps tasks), waits for all of them, and reports the last
  scheduled call's loss, the total steps, the finite flags of all calls
  (a worker whose loss diverges stops its share early) and `global_step`
  read once all of them ended (a call that failed with its worker and ran
  again elsewhere counted its steps twice). Between calls every scheduled
  step has finished, so checkpoints and hooks see a consistent state.
  """

  # The coordinator schedules tf.functions only, not the Python wrapper
  # that surfaces user errors.
  compiled = train_loop.function

  @surface_user_errors
  def coordinated_loop(iterator, num_steps):
    total = int(num_steps)
    parts = min(num_workers, total)
    sizes = [total // parts + (1 if i < total % parts else 0)
             for i in range(parts)]
    scheduled = [coordinator.schedule(
        compiled, args=(iterator, tf.constant(size, tf.int32)))
                 for size in sizes]
    coordinator.join()
    results = [r.fetch() for r in scheduled]
    loss = results[-1][0]
    steps = sum(int(r[1]) for r in results)
    loss_finite = all(bool(r[2]) for r in results)
    state_finite = all(bool(r[3]) for r in results)
    return loss, steps, loss_finite, state_finite, global_step.numpy()

  return coordinated_loop


def _pair_metrics(graph: EagerModel) -> Dict[str, Any]:
  return {name: pair for name, pair in graph.build_spec.eval_metric_ops.items()
          if name not in graph.metrics}


def _pair_result(pair):
  """The result of a (value, update_op) metric: the update's output (the
  updated value), or `value` read after the update if update_op is an op."""
  value, update_op = pair
  if isinstance(update_op, tf.Operation):
    with tf.control_dependencies([update_op]):
      return tf.identity(value)
  return update_op


def make_eval_loop(graph: EagerModel) -> Callable:
  """A compiled function `(iterator, num_steps) -> results`.

  Runs up to `num_steps` evaluation steps (fewer if the input ends).
  Keras metrics accumulate in their own variables; the function returns
  `(loss_sum, example_count, steps, pair_values)` where the loss is
  weighted by each replica's batch size (a replica may get an empty last
  batch) and `pair_values` holds, for each `(value, update_op)` metric,
  what the last step's update returned.
  """
  strategy = graph.strategy
  pair_names = sorted(_pair_metrics(graph))

  @tf.autograph.experimental.do_not_convert
  def replica_step(element):
    features, labels = split_element(element)
    spec = graph.call(features, labels)
    count = batch_size_of(features)
    loss = tf.cast(spec.loss, tf.float32)
    weighted = tf.where(count > 0, loss * count, 0.0)
    values = [tf.cast(_pair_result(spec.eval_metric_ops[n]), tf.float32)
              for n in pair_names]
    return weighted, count, values

  def build_call_result(name):
    value, update_op = graph.build_spec.eval_metric_ops[name]
    result = value if isinstance(update_op, tf.Operation) else update_op
    # The build call ran under the strategy's scope, so results of updating
    # mirrored variables are distributed; any replica's copy has the shape.
    return strategy.experimental_local_results(result)[0]

  initial_values = [
      tf.zeros_like(tf.cast(build_call_result(n), tf.float32)).numpy()
      for n in pair_names]

  def run_step(element, loss_sum, count, steps):
    weighted, n, replica_values = strategy.run(replica_step, args=(element,))
    return (loss_sum + strategy.reduce(tf.distribute.ReduceOp.SUM, weighted,
                                       axis=None),
            count + strategy.reduce(tf.distribute.ReduceOp.SUM, n, axis=None),
            steps + 1,
            [strategy.reduce(tf.distribute.ReduceOp.MEAN, v, axis=None)
             for v in replica_values])

  # Not converted by AutoGraph, as the training loop (see
  # compile_train_loop): converting it took about 0.26 s of the first
  # evaluation of each input_fn (W2).
  @tf.function(autograph=False)
  def eval_loop(iterator, num_steps):

    def body(loss_sum, count, steps, values, more):
      del more
      optional = iterator.get_next_as_optional()
      ran = optional.has_value()
      return tuple(tf.cond(
          ran, lambda: run_step(optional.get_value(), loss_sum, count, steps),
          lambda: (loss_sum, count, steps, values))) + (ran,)

    limit = tf.cast(num_steps, tf.int64)
    loss_sum, count, steps, values, _ = tf.while_loop(
        lambda loss_sum, count, steps, values, more: tf.logical_and(
            steps < limit, more),
        body, (tf.constant(0.0), tf.constant(0.0), tf.constant(0, tf.int64),
               [tf.constant(v) for v in initial_values], tf.constant(True)))
    return loss_sum, count, steps, values

  wrapped = surface_user_errors(eval_loop)
  wrapped.pair_names = pair_names
  wrapped.concrete = lambda iterator, num_steps: surface_user_errors(
      eval_loop.get_concrete_function(iterator, num_steps))
  wrapped.traced_graph = lambda iterator, num_steps: (
      eval_loop.get_concrete_function(iterator, num_steps).graph)
  return wrapped


def make_predict_step(graph: EagerModel) -> Callable:
  """A compiled function `element -> predictions` for one distributed batch.

  `predictions` is a tuple with one dict per local replica, in replica
  order (the order in which a global batch was split across replicas).
  """
  strategy = graph.strategy
  names = sorted(graph.build_spec.predictions_dict)

  @tf.autograph.experimental.do_not_convert
  def replica_step(element):
    features, _ = split_element(element)
    predictions = graph.call(features, None).predictions_dict
    if set(names) != set(predictions):
      raise ModelFnError(
          f'model_fn returned prediction keys {sorted(predictions)} on one '
          f'call and {names} on another.')
    return {n: predictions[n] for n in names}

  @tf.function(autograph=False)  # No control flow to convert.
  def predict_step(element):
    per_replica = strategy.run(replica_step, args=(element,))
    return strategy.experimental_local_results(per_replica)

  wrapped = surface_user_errors(predict_step)
  wrapped.traced_graph = lambda element: (
      predict_step.get_concrete_function(element).graph)
  return wrapped


def concat_replica_predictions(per_replica: Tuple[Dict[str, Any], ...]
                               ) -> Dict[str, Any]:
  """Joins per-replica prediction dicts into one batch, as numpy arrays."""
  names = per_replica[0].keys()
  return {n: tf.concat([r[n] for r in per_replica], axis=0).numpy()
          for n in names}
