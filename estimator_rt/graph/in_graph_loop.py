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

Not every TF1-style model_fn is safe in a loop: a variable whose initial
value is a tensor the model_fn computed, a `Scaffold`, or SessionRunHooks
(they would see one `run` per loop, not per step) are not. So a model_fn
opts in (`mark_loop_safe`; the canned estimators do), and the engine uses
the loop only where the rest allows it (see `can_loop`).
"""

import dataclasses
from typing import Callable

import tensorflow as tf

from estimator_rt import user_fns
from estimator_rt.errors import ModelFnError
from estimator_rt.graph import model as model_lib
from estimator_rt.mode_keys import ModeKeys

_LOOP_SAFE_ATTRIBUTE = '_estimator_rt_loop_safe'


def mark_loop_safe(model_fn: Callable) -> Callable:
  """Declares that `model_fn` may be built inside a `tf.while_loop` (see
  the module docstring); returns it."""
  setattr(model_fn, _LOOP_SAFE_ATTRIBUTE, True)
  return model_fn


def can_loop(*, model_fn: Callable, placement, session_hooks) -> bool:
  """Whether training runs in the in-graph loop: the model_fn opted in, the
  placement is one device (replicated and between-graph training keep one
  step per run), and no SessionRunHook was given (its before_run/after_run
  mean one step)."""
  return bool(getattr(model_fn, _LOOP_SAFE_ATTRIBUTE, False) and
              placement.num_replicas == 1 and not placement.multi_worker and
              not placement.between_graph and not session_hooks)


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


def build(*, model_fn: Callable, batches: Callable, params: dict, config,
          placement, with_summaries: bool) -> LoopModel:
  """Builds the training loop of `model_fn` into the current graph.

  Args:
    model_fn: a model_fn marked with `mark_loop_safe`.
    batches: `GraphInput.next_batch`.
    params, config: passed to the model_fn.
    placement: a one-device placement (see `can_loop`).
    with_summaries: merge the body's summaries into `LoopModel.summary`.

  Raises:
    ModelFnError: the model_fn failed or returned something unusable.
  """
  outer = tf.compat.v1.get_default_graph()
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

  steps_run, last_loss, loss_finite, summary = tf.while_loop(
      cond, body, [tf.constant(0), tf.constant(float('nan')),
                   tf.constant(True), tf.constant('')],
      name='training_loop')
  _remove_from_collections(outer)
  model = built['model']
  spec = model.spec
  if spec.training_hooks or spec.training_chief_hooks or (
      spec.scaffold is not None and spec.scaffold.init_fn is not None):
    raise ModelFnError(
        f'model_fn {user_fns.fn_name(model_fn)} is marked loop-safe '
        '(in_graph_loop.mark_loop_safe) but returned training hooks or a '
        'Scaffold init_fn, which need one step per session run.')
  return LoopModel(spec=model.spec, global_step=global_step,
                   num_steps=num_steps, record_summaries=record_summaries,
                   steps_run=steps_run,
                   last_loss=last_loss, loss_finite=loss_finite,
                   summary=summary, last_loss_variable=last_loss_variable)
