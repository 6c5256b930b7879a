"""Several training steps per `session.run`: the model_fn built inside a
`tf.while_loop`.

tf.estimator paid one `session.run` per step; at a few hundred microseconds
of compute per step, that call is most of the time. TPUEstimator's
`iterations_per_loop` ran the model_fn in a loop inside the graph instead;
this module does that for the graph engine: the training step (the
input's `get_next`, the model_fn, its train_op) is the body of a
`tf.while_loop`, and one `session.run` runs as many steps as the
controller's loop asks for (`steps_per_loop`, cut by time), stopping early
at the first non-finite loss, as the compiled loops of the eager engine do.

TensorFlow builds the loop body as a function (control flow v2), and what
the model_fn creates there that must outlive a step is lifted out of it by
TensorFlow itself: variables (`tf.compat.v1.get_variable`, Keras 2
layers' and optimizers' weights) and lookup tables are created in the outer
graph, under the names they would have had, so checkpoints are the same
name-based ones, tf.estimator's. What the body adds to the graph's
collections (summaries, update ops, losses) is the body's own: it is taken
back out of the outer graph's collections after the build. The body's
`tf.compat.v1.summary` ops are merged there, at the last step of a run
that asks for them (when a summary is due), and are a loop output.

Whether a model_fn's step can be a loop body is decided by building it
there, not by guessing: `build` builds the loop, and raises `CannotLoop`
(the engine then builds one step per run in a new graph, and logs the
reason once) when the build fails (a variable whose initial value is a
tensor the model_fn computed cannot be lifted out of the body) or shows
something that needs a `session.run` per step: training hooks, a Scaffold
with an init_fn, ready ops or a feed, a Scaffold op, Saver or summary op
built in the body, a placeholder, a queue runner. Before that, `refusal`
names what rules the loop out whatever the model_fn: one step per loop
asked for, replicated or between-graph training, SessionRunHooks given to
train() that need every step (see per_loop_hooks.py); and `input_refusal`
an input_fn that returns tensors instead of a dataset (a session run
evaluates them once, however many steps it holds).
"""

import dataclasses
from typing import Callable, Optional, Sequence

import tensorflow as tf

from estimator_rt import per_loop_hooks
from estimator_rt import user_fns
from estimator_rt.errors import ModelFnError
from estimator_rt.graph import model as model_lib
from estimator_rt.mode_keys import ModeKeys


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
    last_loss: the loss of the run's last step (float32).
    loss_finite: whether every loss of the run was finite.
    summary: the serialized summaries of the run's last step when
      `record_summaries` was fed True ('' otherwise, or when the model_fn
      writes none).
    last_loss_variable: holds the loss of the last step run (also after a
      run the input's end cut short).
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


def _remove_from_collections(outer: tf.Graph) -> None:
  """Takes what the body's build added to `outer`'s collections out again:
  the body's tensors and ops cannot be run outside it (lifted variables and
  table initializers belong to `outer`, and stay)."""
  for key in outer.get_all_collection_keys():
    items = outer.get_collection_ref(key)
    kept = [item for item in items
            if getattr(item, 'graph', outer) is outer]
    if len(kept) != len(items):
      items[:] = kept


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


def _graph_of(item) -> Optional[tf.Graph]:
  """The graph an op or tensor belongs to (None for anything else)."""
  return getattr(item, 'graph', None) if isinstance(
      item, (tf.Operation, tf.Tensor)) else None


def _scaffold_problem(scaffold, outer: tf.Graph) -> Optional[str]:
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
  for field in ('init_op', 'local_init_op', 'summary_op'):
    # Built in the step's body (or a function in it): the outer graph
    # cannot run it.
    graph = _graph_of(getattr(scaffold, field))
    if graph is not None and graph is not outer:
      return f'its Scaffold\'s {field} was built in the step'
  saver = scaffold.saver
  if isinstance(saver, tf.compat.v1.train.Saver):
    try:
      outer.as_graph_element(saver.saver_def.save_tensor_name)
    except (KeyError, ValueError):
      return 'its Scaffold\'s Saver was built in the step'
  return None


def _body_problem(body: tf.Graph) -> Optional[str]:
  """What the loop body's own ops show needs one step per run, or None:
  a placeholder the model_fn made, which a run must feed (the body's inputs
  and captures are placeholders too, and are not the model_fn's). A
  `placeholder_with_default` (Keras 2's learning phase) is fine: only a
  per-step hook or a Scaffold's feed could feed it, and both rule the loop
  out already."""
  inputs = {tensor.op for tensor in body.inputs}
  for op in body.get_operations():
    if op.type == 'Placeholder' and op not in inputs:
      return f'it creates the placeholder {op.name!r} (fed per run)'
  return None


def build(*, model_fn: Callable, batches: Callable, params: dict, config,
          placement, with_summaries: bool) -> LoopModel:
  """Builds the training loop of `model_fn` into the current graph.

  Args:
    model_fn: the user's model_fn.
    batches: `GraphInput.next_batch`.
    params, config: passed to the model_fn.
    placement: a one-device placement (see `refusal`).
    with_summaries: merge the body's summaries into `LoopModel.summary`.

  Raises:
    CannotLoop: the model_fn's step cannot be the loop's body (the reason
      is the message). The current graph is then unusable: build one step
      per run in a new one.
  """
  outer = tf.compat.v1.get_default_graph()
  queue_runners = len(outer.get_collection(
      tf.compat.v1.GraphKeys.QUEUE_RUNNERS))
  with placement.variable_scope():
    global_step = tf.compat.v1.train.get_or_create_global_step()
  num_steps = tf.compat.v1.placeholder(tf.int32, [], name='steps_per_run')
  record_summaries = tf.compat.v1.placeholder_with_default(
      False, [], name='record_summaries')
  # The last step's loss, kept outside the loop: a run that ends because
  # the input ended fails with OutOfRangeError, and this still holds the
  # loss of the last step it ran.
  last_loss_variable = tf.compat.v1.Variable(
      float('nan'), trainable=False, name='last_loss_of_loop',
      collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
      use_resource=True)
  built = {}

  def body(step, loss, finite, summary):
    del loss, finite, summary  # Each step makes its own.
    graph = tf.compat.v1.get_default_graph()
    built['graph'] = graph
    model = model_lib.build(model_fn=model_fn, mode=ModeKeys.TRAIN,
                            batches=batches, params=params, config=config,
                            placement=placement)
    built['model'] = model
    summaries = [item for item in graph.get_collection(
        tf.compat.v1.GraphKeys.SUMMARIES) if item.graph is graph]
    with tf.control_dependencies([model.train_op]):
      loss = tf.cast(tf.identity(model.loss), tf.float32)
    with tf.control_dependencies([last_loss_variable.assign(loss)]):
      loss = tf.identity(loss)
      if with_summaries and summaries:
        merged = tf.cond(
            tf.logical_and(record_summaries, step + 1 >= num_steps),
            lambda: _summaries_again(summaries), lambda: tf.constant(''))
      else:
        merged = tf.constant('')
    return step + 1, loss, tf.math.is_finite(loss), merged

  def cond(step, loss, finite, summary):
    del loss, summary
    return tf.logical_and(step < num_steps, finite)

  try:
    steps_run, last_loss, loss_finite, summary = tf.while_loop(
        cond, body, [tf.constant(0), tf.constant(float('nan')),
                     tf.constant(True), tf.constant('')],
        name='training_loop')
  except Exception as e:  # pylint: disable=broad-except
    # Whatever failed here fails again, in its own words, in the one-step
    # build if it is not the loop's doing.
    cause = e.__cause__ if isinstance(e, ModelFnError) and (
        e.__cause__ is not None) else e
    raise CannotLoop(f'building its step in a tf.while_loop failed: '
                     f'{user_fns.describe_exception(cause)}') from e
  _remove_from_collections(outer)
  spec = built['model'].spec
  hooks = list(spec.training_hooks) + list(spec.training_chief_hooks)
  problem = (
      (hooks and f'it returns training hooks '
                 f'[{per_loop_hooks.names(hooks)}] (they see every step)') or
      _scaffold_problem(spec.scaffold, outer) or
      _body_problem(built['graph']) or
      (len(outer.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)) >
       queue_runners and 'it adds queue runners'))
  if problem:
    raise CannotLoop(problem)
  return LoopModel(spec=spec, global_step=global_step,
                   num_steps=num_steps, record_summaries=record_summaries,
                   steps_run=steps_run,
                   last_loss=last_loss, loss_finite=loss_finite,
                   summary=summary, last_loss_variable=last_loss_variable)
