"""Several training steps per `session.run`: the step the model_fn built,
copied into a `tf.while_loop`.

tf.estimator paid one `session.run` per step; at a few hundred microseconds
of compute per step, that call is most of the time. TPUEstimator's
`iterations_per_loop` ran the model_fn in a loop inside the graph instead;
this module does that for the graph engine, without a second call of the
model_fn: the engine builds tf.estimator's one-step graph (the input's
`get_next`, the model_fn's TRAIN-mode call, its train_op), and `derive`
copies the ops one step runs into the body of a `tf.while_loop`, reading
the variables, lookup tables, iterator and placeholders of that graph
through captures. One `session.run` runs as many steps as the
controller's loop asks for (`steps_per_loop`, cut by time), stopping early
at the first NaN loss, as the compiled loops of the eager engine do.
The variables are the ones the model_fn made, under tf.estimator's names,
so checkpoints are the same name-based ones; the one-step train op stays
in the graph, unused. The step's `tf.compat.v1.summary` ops are merged at
the last step of a run that asks for them (when a summary is due), and are
a loop output.

Whether the step can be a loop body is decided from what the one build
shows, never by building again: before it, `refusal` names what rules the
loop out whatever the model_fn (one step per loop asked for, replicated or
between-graph training, SessionRunHooks given to train() that need every
step, see per_loop_hooks.py) and `input_refusal` an input_fn that returns
tensors instead of a dataset (a session run evaluates them once, however
many steps it holds); after it, `refusal_of_step` what needs a
`session.run` per step (training hooks, a Scaffold with an init_fn, ready
ops or a feed, a placeholder the step reads, queue runners), and `derive`
raises `CannotLoop` for a step it cannot copy (reference variables). In
every such case the step already built runs once per session run.
"""

import dataclasses
from typing import Callable, Optional, Sequence

import tensorflow as tf

from estimator_rt.training import divergence
from estimator_rt.training import per_loop_hooks
from estimator_rt.core import user_fns
from estimator_rt.core.errors import ModelFnError
from estimator_rt.training.graph import model as model_lib
from estimator_rt.core.mode_keys import ModeKeys


class CannotLoop(Exception):
  """The model_fn's training step cannot be the body of the in-graph loop;
  the message says why."""


def refusal(*, steps_per_loop: int, placement, per_step_hooks: Sequence
            ) -> Optional[str]:
  """Why training cannot run in the in-graph loop whatever the model_fn
  and the input, or None.

  Args:
    steps_per_loop: RunConfig.steps_per_loop.
    placement: where training runs (placement.py).
    per_step_hooks: the SessionRunHooks given to train() that need every
      step (`per_loop_hooks.split`).
  """
  if steps_per_loop <= 1:
    return 'steps_per_loop=1'
  if not tf.compat.v1.control_flow_v2_enabled():
    # TF1 control flow builds a loop body into the graph itself, where
    # the body's own ops cannot be told from the rest.
    return ('control flow v1 (tf.compat.v1.disable_v2_behavior() or '
            'disable_control_flow_v2())')
  if placement.between_graph:
    return 'between-graph (parameter-server) training'
  if placement.multi_worker or placement.num_replicas != 1:
    return (f'training is replicated ({placement.num_replicas} replicas); '
            'the loop is built for one device')
  if per_step_hooks:
    return (f'hooks=[{per_loop_hooks.names(per_step_hooks)}] given to train() '
            'see every step (before_run/after_run)')
  return None


def input_refusal(data: model_lib.GraphInput) -> Optional[str]:
  """Why the training input, as read in the graph, cannot feed the loop,
  or None."""
  if not data.from_dataset:
    return ('the input_fn returned tensors, not a tf.data.Dataset (a session '
            'run evaluates them once, however many steps it runs)')
  return None


@dataclasses.dataclass
class LoopModel:
  """The training loop built into the graph.

  Attributes:
    spec: the model_fn's EstimatorSpec (as built in the loop's body).
    global_step: the global step variable.
    num_steps: the int32 placeholder of how many steps a run takes.
    record_summaries: a bool placeholder (default False): feed True for a
      run whose last step's summaries are wanted.
    steps_run: how many steps the run took.
    last_loss: the loss of the run's last step (the loss's float dtype).
    loss_finite: whether every loss of the run was finite.
    summary: the serialized summaries of the run's last step when
      `record_summaries` was fed True ('' otherwise, or when the model_fn
      writes none).
    last_loss_variable: holds the loss of the last step run (also after a
      run the input's end cut short).
    initializer: to run once the session starts (`last_loss_variable`'s).
  """

  spec: object
  global_step: tf.Variable
  num_steps: tf.Tensor
  record_summaries: tf.Tensor
  steps_run: tf.Tensor
  last_loss: tf.Tensor
  loss_finite: tf.Tensor
  summary: tf.Tensor
  last_loss_variable: tf.Variable

  @property
  def initializer(self) -> tf.Operation:
    return self.last_loss_variable.initializer


# The summary ops that `_summaries_again` rebuilds inside the branch that
# runs at a run's last step only, from their inputs (which the step computes
# anyway): histograms and merges are then paid once per run, not per step.
_SUMMARY_OPS = {
    'ScalarSummary': lambda op, again: tf.raw_ops.ScalarSummary(
        tags=op.inputs[0], values=op.inputs[1]),
    'HistogramSummary': lambda op, again: tf.raw_ops.HistogramSummary(
        tag=op.inputs[0], values=op.inputs[1]),
    'MergeSummary': lambda op, again: tf.raw_ops.MergeSummary(
        inputs=[again(t) for t in op.inputs]),
}


def _summaries_again(summaries) -> tf.Tensor:
  """The merge of `summaries` (serialized Summary tensors of the loop's
  body), with the ops of known types made anew where this is called; others
  are used as they are (computed at every step)."""

  def again(tensor):
    rebuild = _SUMMARY_OPS.get(tensor.op.type)
    return tensor if rebuild is None else rebuild(tensor.op, again)

  return tf.raw_ops.MergeSummary(inputs=[again(t) for t in summaries])


def _scaffold_problem(scaffold) -> Optional[str]:
  """What in a model_fn's Scaffold needs one step per run, or None."""
  if scaffold is None:
    return None
  if scaffold.init_fn is not None:
    return 'its Scaffold has an init_fn'
  for field in ('ready_op', 'ready_for_local_init_op'):
    # Scaffold fills these in itself at finalize(); set now, they are the
    # model_fn's.
    if getattr(scaffold, field) is not None:
      return f'its Scaffold has a {field}'
  if scaffold.init_feed_dict:
    return 'its Scaffold has an init_feed_dict'
  return None


# Ops that stay in the outer graph, the loop's body reading them through
# captures: what holds state across steps (variables, tables, iterators)
# and what a run feeds (placeholders).
_STATE_OPS = frozenset({
    'VarHandleOp', 'HashTableV2', 'MutableHashTableV2',
    'MutableHashTableOfTensorsV2', 'MutableDenseHashTableV2', 'IteratorV2',
    'Iterator', 'AnonymousIteratorV2', 'AnonymousIteratorV3',
    'MultiDeviceIterator', 'Placeholder', 'PlaceholderWithDefault',
})
_REF_VARIABLE_OPS = frozenset({'VariableV2', 'Variable', 'TemporaryVariable'})


def _step_ops(targets: Sequence[tf.Operation]):
  """(the ops one training step runs, the state ops they read): everything
  `targets` depend on, by data or control, stopping at state ops."""
  step, state = set(), set()
  pending = list(targets)
  while pending:
    op = pending.pop()
    if op in step or op in state:
      continue
    if op.type in _STATE_OPS:
      state.add(op)
      continue
    if op.type in _REF_VARIABLE_OPS:
      raise CannotLoop(
          f'it uses the reference variable {op.name!r} (a while loop cannot '
          'capture one; tf.compat.v1.disable_resource_variables() or '
          'tf.compat.v1.disable_v2_behavior() make them)')
    step.add(op)
    pending.extend(t.op for t in op.inputs)
    pending.extend(op.control_inputs)
  return step, state


def _without_colocation(graph_def) -> None:
  """Drops colocation constraints (`_class: loc:@...`): they name ops by
  their outer names, which the copy does not have (and the loop runs on
  one device)."""
  for node in graph_def.node:
    if '_class' in node.attr:
      del node.attr['_class']


def refusal_of_step(step: model_lib.GraphModel, *, queue_runners_before: int,
                    ops_before: int) -> Optional[str]:
  """What in the training step the model_fn built, or in its spec, needs a
  `session.run` per step, or None.

  Args:
    step: the TRAIN-mode build (`model.build`), in the current graph.
    queue_runners_before: the graph's QUEUE_RUNNERS count before the build.
    ops_before: how many ops the graph had before the build.
  """
  spec = step.spec
  hooks = list(spec.training_hooks) + list(spec.training_chief_hooks)
  if hooks:
    return (f'it returns training hooks [{per_loop_hooks.names(hooks)}] '
            '(they see every step)')
  problem = _scaffold_problem(spec.scaffold)
  if problem:
    return problem
  outer = tf.compat.v1.get_default_graph()
  if len(outer.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)) > (
      queue_runners_before):
    return 'it adds queue runners'
  try:
    _, state = _step_ops([step.train_op, step.loss.op])
  except CannotLoop as e:  # Reference variables.
    return str(e)
  # A placeholder the build made that the step reads: a run must feed it
  # (a `placeholder_with_default`, such as Keras 2's learning phase, is
  # fine: the loop captures it, and feeding it still works).
  for op in outer.get_operations()[ops_before:]:
    if op.type == 'Placeholder' and op in state:
      return f'it creates the placeholder {op.name!r} (fed per run)'
  return None


def _graph_def_of(outer: tf.Graph, ops) -> tf.compat.v1.GraphDef:
  """The GraphDef of `ops` (a step's, of graph `outer`) with the outer
  graph's versions and function library, without colocation constraints."""
  whole = outer.as_graph_def(add_shapes=True)
  names = {op.name for op in ops}
  graph_def = tf.compat.v1.GraphDef()
  graph_def.versions.CopyFrom(whole.versions)
  graph_def.library.CopyFrom(whole.library)
  graph_def.node.extend(node for node in whole.node if node.name in names)
  _without_colocation(graph_def)
  return graph_def


def _last_loss_variable(dtype: tf.DType) -> tf.Variable:
  """The last step's loss, kept outside the loop: a run that ends because
  the input ended fails with OutOfRangeError, and this still holds the
  loss of the last step it ran. In no collection (neither saved nor
  covered by a Scaffold's own local_init_op or ready ops): the session
  runs its initializer when it starts (LoopModel.initializer)."""
  return tf.compat.v1.Variable(
      tf.constant(float('nan'), dtype), trainable=False,
      name='last_loss_of_loop',
      collections=[], use_resource=True)


def _last_step_summaries(summaries, record) -> tf.Tensor:
  """The copied step's `summaries` merged where `record` (the last step of
  a run that records them), else ''."""
  if not summaries:
    return tf.constant('')
  return tf.cond(record, lambda: _summaries_again(summaries),
                 lambda: tf.constant(''))


def derive(*, step: model_lib.GraphModel, placement,
           with_summaries: bool) -> LoopModel:
  """Builds the training loop from the training step the model_fn built in
  the current graph (`step`, one step per run), without calling the
  model_fn again: the ops one step runs (the input's `get_next`, the
  model's ops, the train_op and what it depends on) are copied into the
  body of a `tf.while_loop`, which reads the variables, tables, iterator
  and placeholders of the outer graph through captures. So the checkpoint
  names are those of tf.estimator's one-step graph, and the one-step train
  op stays in the graph unused.

  Args:
    step: the TRAIN-mode `model.GraphModel`; `refusal_of_step` found
      nothing that needs a run per step.
    placement: a one-device placement (see `refusal`).
    with_summaries: merge the step's summaries into `LoopModel.summary`.

  Raises:
    CannotLoop: the step cannot be copied into a loop (the reason is the
      message); the graph is unchanged but for unused ops, and `step` runs
      one step per session run.
  """
  outer = tf.compat.v1.get_default_graph()
  summaries = [item for item in outer.get_collection(
      tf.compat.v1.GraphKeys.SUMMARIES) if isinstance(item, tf.Tensor)
              ] if with_summaries else []
  targets = [step.train_op, step.loss.op] + [t.op for t in summaries]
  step_ops, state = _step_ops(targets)
  step_def = _graph_def_of(outer, step_ops)
  # Every output of a state op that the step reads, fed from a capture.
  state_outputs = sorted(
      {t for op in step_ops for t in op.inputs if t.op in state},
      key=lambda t: t.name)
  with placement.variable_scope():
    global_step = tf.compat.v1.train.get_or_create_global_step()
  num_steps = tf.compat.v1.placeholder(tf.int32, [], name='steps_per_run')
  record_summaries = tf.compat.v1.placeholder_with_default(
      False, [], name='record_summaries')
  # The loss keeps its dtype (a float64 model's step log prints all its
  # digits, as 2.15's did); a loss of another kind is counted in float32.
  loss_dtype = (step.loss.dtype.base_dtype if step.loss.dtype.is_floating
                else tf.float32)
  last_loss_variable = _last_loss_variable(loss_dtype)

  def body(step_count, loss, finite, summary):
    del loss, finite, summary  # Each step makes its own.
    graph = tf.compat.v1.get_default_graph()
    input_map = {t.name: graph.capture(t) for t in state_outputs}
    copied = tf.graph_util.import_graph_def(
        step_def, input_map=input_map, name='step',
        return_elements=[step.train_op.name, step.loss.name] +
        [t.name for t in summaries])
    train_op, new_loss, new_summaries = copied[0], copied[1], copied[2:]
    with tf.control_dependencies([train_op]):
      new_loss = tf.cast(tf.identity(new_loss), loss_dtype)
    with tf.control_dependencies([last_loss_variable.assign(new_loss)]):
      new_loss = tf.identity(new_loss)
      merged = _last_step_summaries(
          new_summaries,
          tf.logical_and(record_summaries, step_count + 1 >= num_steps))
    return step_count + 1, new_loss, divergence.loss_is_sound(new_loss), merged

  def cond(step_count, loss, finite, summary):
    del loss, summary
    return tf.logical_and(step_count < num_steps, finite)

  try:
    steps_run, last_loss, loss_finite, summary = tf.while_loop(
        cond, body, [tf.constant(0), tf.constant(float('nan'), loss_dtype),
                     tf.constant(True), tf.constant('')],
        name='training_loop')
  except Exception as e:  # pylint: disable=broad-except
    raise CannotLoop('copying its step into a tf.while_loop failed: '
                     f'{user_fns.describe_exception(e)}') from e
  return LoopModel(spec=step.spec, global_step=global_step,
                   num_steps=num_steps, record_summaries=record_summaries,
                   steps_run=steps_run, last_loss=last_loss,
                   loss_finite=loss_finite, summary=summary,
                   last_loss_variable=last_loss_variable)
