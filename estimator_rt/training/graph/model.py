"""One mode of a TF1-style model_fn, built into the current `tf.Graph`.

What tf.estimator's `_call_model_fn` and `_train_with_estimator_spec` did
between them: read the input through an initializable iterator, create the
global step, call the model_fn (once per replica when the placement
replicates) and check what it returned, then derive what the session runs:
the train op (which also counts the global step when the model_fn's does
not), the loss, the metric pairs with a mean loss, the predictions.
"""

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from absl import logging
import keras
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.inputs import overlap as input_overlap
from estimator_rt.inputs import quick_start
from estimator_rt.inputs import slice_batches
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.core import user_fns
from estimator_rt.core.errors import EagerModelFnError
from estimator_rt.core.errors import InputFnError
from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import raised_as
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import check_metric_names
from estimator_rt.core.spec import EstimatorSpec
from estimator_rt.core.spec import for_mode as spec_for_mode
from estimator_rt.core.spec import is_keras2_metric
from estimator_rt.core.spec import is_keras3
from estimator_rt.core.spec import keras3_metric_updates
from estimator_rt.core.spec import metric_object_as_pair

# Ops that write a resource variable or a ref variable: how the global step
# is seen to be counted by the model_fn's train_op.
_WRITES = frozenset({
    'AssignAddVariableOp', 'AssignVariableOp', 'AssignSubVariableOp',
    'AssignAdd', 'Assign', 'AssignSub',
})


@dataclasses.dataclass
class GraphInput:
  """An input_fn's data read in the graph.

  Attributes:
    elements: returns the next (features, labels) tensors (labels may be
      None); each replica calls it for its own element.
    initializer: run when the session starts (an initializable iterator's,
      as tf.estimator used: a one-shot one cannot capture lookup tables or
      variables the dataset uses).
    features_spec: the TensorSpec(s) of an element's features.
    from_dataset: whether the input_fn returned a dataset (False: tensors,
      which every `session.run` evaluates once, whatever it runs).
    cardinality: the dataset's cardinality, in the graph (None for
      tensors); see `repeats_forever`.
    dataset: the dataset the iterator reads (None for tensors).
  """

  elements: Callable[[], Tuple[Any, Any]]
  initializer: tf.Operation
  features_spec: Any
  from_dataset: bool = True
  cardinality: Optional[tf.Tensor] = None
  dataset: Optional[tf.data.Dataset] = None

  def next_batch(self) -> Tuple[Any, Any]:
    """(features, labels) tensors of the next element (labels may be None)."""
    return self.elements()


def _spec_of(value):
  """The TensorSpec (or TypeSpec) of an input_fn's features or labels; a
  NumPy array, list or number is specified as the constant TensorFlow
  would make of it (a dict's values one by one: a list is one value, not
  a structure)."""
  if value is None:
    return None
  if isinstance(value, dict):
    return {key: _spec_of(item) for key, item in value.items()}
  if isinstance(value, (tuple, list)) and any(
      tf.is_tensor(part) for part in tf.nest.flatten(value)):
    return tf.nest.map_structure(_spec_of, value)  # A structure of tensors.
  if isinstance(value, tf.Tensor):
    return tf.TensorSpec(value.shape, value.dtype, name=None)
  if tf.is_tensor(value) or isinstance(value,
                                       tf.compat.v1.SparseTensorValue):
    return tf.type_spec_from_value(value)
  with tf.init_scope():  # Eagerly: nothing is added to the graph.
    return tf.TensorSpec.from_tensor(tf.convert_to_tensor(value))


# The name scope of the ops the runtime adds to a model_fn's training graph
# (its input's rewrites, the in-graph loop, the session loop's checks): the
# graph's top level, in graph.pbtxt and TensorBoard's Graphs tab, holds the
# model's names, as tf.estimator 2.15's did, and this one scope.
RUNTIME_SCOPE = 'estimator_rt'


def runtime_scope():
  """The name scope RUNTIME_SCOPE at the graph's top level, one for every
  use (entered again, not numbered `estimator_rt_1`)."""
  return tf.compat.v1.get_default_graph().name_scope(RUNTIME_SCOPE + '/')


def read_input(input_fn: Callable, params: dict, *, role: str, config,
               placement=None,
               overlap: Union[bool, Callable[[], bool]] = False,
               stop_after_call: Callable[[], bool] = lambda: False
               ) -> Optional[GraphInput]:
  """Calls `input_fn` in the current graph, ready to read it element by
  element. An input_fn that returns tensors instead of a dataset (an
  iterator's `get_next()`, as tf.estimator allowed) is read as it is: the
  graph evaluates them again at every step.

  Under a distribution strategy (`placement`), an input_fn that declares
  `input_context` gets the placement's InputContext and shards its input
  itself, as tf.estimator 2.15's strategies gave it one; otherwise this
  worker reads its shard of the dataset (`placement.shard`).
  `overlap`: the iterator's `get_next` runs ahead of the step
  (`input_overlap.overlapped`), and in-memory slices are read a batch at a
  time (`slice_batches.gathered`); training passes True, or a function
  asked once the input_fn has returned (after `stop_after_call`).
  `stop_after_call`: called once the input_fn has returned (the graph
  holds its ops alone); True stops there, and None is returned (a kept
  graph reads the same input already: graph/kept_sessions.py).
  A dataset of at most a few elements is read without tf.data's default
  static optimizations (inputs/quick_start.py).

  Raises:
    InputFnError: the input_fn failed or returned no dataset.
  """
  context = None
  if placement is not None and user_fns.input_fn_takes_context(input_fn):
    context = placement.input_context()
  result = user_fns.call_input_fn(input_fn, params, context, role=role,
                                  config=config, allow_tensors=True)
  if stop_after_call():
    return None
  if not isinstance(result, tf.data.Dataset):
    features, labels = inputs.split_element(
        tuple(result) if isinstance(result, list) else result)
    # Given to the model_fn as they are, as tf.estimator gave them: NumPy
    # arrays, lists and numbers too (its ops make them constants).
    return GraphInput(elements=lambda: (features, labels),
                      initializer=tf.no_op(),
                      features_spec=_spec_of(features),
                      from_dataset=False)
  dataset = result
  with runtime_scope():
    # A request's few examples: its iterator starts without the default
    # tf.data rewrite (the same elements, in the same order).
    dataset = quick_start.graph_started_quickly(dataset)
    if placement is not None and context is None:
      dataset = placement.shard(dataset)
    if overlap if isinstance(overlap, bool) else overlap():
      # Replicas of this graph read consecutive elements of one iterator,
      # so the same elements in the same order are all the rewrite must
      # keep.
      dataset = input_overlap.overlapped(slice_batches.gathered(dataset))
    cardinality = dataset.cardinality()
  # The iterator keeps 2.15's names (IteratorV2, IteratorGetNext).
  iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
  features_spec, _ = inputs.split_element(dataset.element_spec)
  return GraphInput(
      elements=lambda: inputs.split_element(iterator.get_next()),
      initializer=iterator.initializer, features_spec=features_spec,
      cardinality=cardinality, dataset=dataset)


def repeats_forever(data: GraphInput) -> Optional[bool]:
  """Whether `data`'s dataset repeats forever, from its cardinality,
  computed in a throwaway session on the current graph (nothing is read:
  the input_fn is called once, in the graph, as tf.estimator called it);
  None when that cannot tell (tensors, or a dataset whose cardinality
  needs what only the real session initializes)."""
  if data.cardinality is None:
    return None
  try:
    with tf.compat.v1.Session(graph=data.cardinality.graph) as session:
      value = session.run(data.cardinality)
  except (tf.errors.OpError, ValueError, TypeError):
    return None
  return int(value) == int(tf.data.INFINITE_CARDINALITY)


def has_dataset_or_queue_runner(features: Any) -> bool:
  """Whether tensors the input_fn returned come from a dataset's iterator
  (`get_next()`) or a queue: only then does predicting on them end.
  tf.estimator 2.15 looked at the top-level tensors only; here the ops they
  are computed from count too (an input_fn that reshapes what an iterator,
  or numpy_input_fn's input_fn, gave it)."""
  if bool(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)):
    return True
  pending = [t.op for t in tf.nest.flatten(features)
             if isinstance(t, tf.Tensor) and hasattr(t, 'op')]
  seen = set()
  while pending:
    op = pending.pop()
    if op.type == 'IteratorGetNext':
      return True
    if op.name in seen:
      continue
    seen.add(op.name)
    pending.extend(t.op for t in op.inputs)
  return False


@dataclasses.dataclass
class GraphModel:
  """What a session runs for one mode of the model_fn.

  Attributes:
    mode: the ModeKeys value.
    spec: the model_fn's EstimatorSpec (the first replica's, which carries
      the hooks, scaffold and export_outputs).
    global_step: the global step variable.
    loss: the loss (mean over replicas), or None in PREDICT.
    train_op: TRAIN: the op one training step runs.
    metrics: EVAL: name -> (value, update_op), 'loss' included.
    predictions: PREDICT: a dict of tensors.
  """

  mode: str
  spec: EstimatorSpec
  global_step: tf.Variable
  loss: Optional[tf.Tensor] = None
  train_op: Optional[tf.Operation] = None
  metrics: Dict[str, Tuple[Any, Any]] = dataclasses.field(default_factory=dict)
  predictions: Optional[Dict[str, tf.Tensor]] = None


# A model_fn with this attribute set to True makes the graph's global step
# itself (it imports a MetaGraph that holds one: SavedModelEstimator's), so
# `build` creates none before calling it, and takes the one it made; the
# graph it is called in must have none (tf.estimator 2.15's
# SavedModelEstimator overrode `_create_and_assert_global_step` to the same
# end). Its MetaGraph cannot be imported in the in-graph loop's body: such
# an Estimator trains one step per session run (steps_per_loop=1).
MAKES_GLOBAL_STEP = 'makes_global_step'


# A model_fn with this attribute (a frozenset of ModeKeys values) builds, in
# those modes, the same graph from the same input, and does nothing else a
# program can see: a call of such a mode may run in a kept graph of the
# same input without calling it again (kept_sessions.py). The canned
# estimators' model_fns are such, in EVAL and PREDICT, when all they hold
# is TensorFlow's, Keras' and estimator_rt's (canned/base.py).
SAME_GRAPH_MODES = 'same_graph_modes'


def builds_same_graph(model_fn: Callable, mode: str) -> bool:
  """Whether `model_fn` builds the same graph in `mode` (SAME_GRAPH_MODES)."""
  return mode in getattr(model_fn, SAME_GRAPH_MODES, ())


def makes_global_step(model_fn: Callable) -> bool:
  """Whether `model_fn` makes the graph's global step (MAKES_GLOBAL_STEP)."""
  return getattr(model_fn, MAKES_GLOBAL_STEP, False) is True


def _call(model_fn: Callable, features, labels, mode: str, params: dict,
          config) -> EstimatorSpec:
  """Calls the model_fn once and checks it returned a spec for `mode`."""
  try:
    spec = user_fns.call_model_fn(model_fn, features, labels, mode, params,
                                  config)
  except UserInputError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    raise raised_as(ModelFnError, user_fns.failed_with(
        model_fn, e, f'model_fn {user_fns.fn_name(model_fn)} failed in mode '
        f'{mode!r} (graph engine)'), e) from e
  if not isinstance(spec, EstimatorSpec):
    raise ModelFnError(
        'model_fn should return an EstimatorSpec: model_fn '
        f'{user_fns.fn_name(model_fn)} returned {type(spec).__name__} in mode '
        f'{mode!r}.')
  spec = spec_for_mode(spec, mode)
  if spec.mode != mode:
    raise ModelFnError(
        f'model_fn {user_fns.fn_name(model_fn)} was called in mode {mode!r} '
        f'and returned an EstimatorSpec for mode {spec.mode!r}; pass the '
        '`mode` argument through.')
  if mode == ModeKeys.EVAL:
    # Here, in the replica's context, so the values are read where the
    # metric's updates run.
    _metric_objects_as_pairs(spec, model_fn)
  return spec


def _metric_objects_as_pairs(spec: EstimatorSpec, model_fn: Callable) -> None:
  """Replaces the Keras 2 (tf_keras) and Keras 3 metric objects among the spec's
  eval_metric_ops by `(result(), update_op)` pairs, as tf.estimator 2.15
  did: the update op runs every update_state the model_fn called (2.15 ran
  the first only), and the metric's variables join the LOCAL_VARIABLES
  collection (initialized before each evaluation, never saved) and
  METRIC_VARIABLES."""
  for name, metric in list(spec.eval_metric_ops.items()):
    if is_keras3(metric) and isinstance(metric, keras.metrics.Metric):
      updates = keras3_metric_updates(metric, tf.compat.v1.get_default_graph())
      if updates is None:
        continue  # _check_graph_spec sends it to the eager engine.
      if not updates:
        raise ModelFnError(_never_updated(model_fn, name, metric))
      spec.eval_metric_ops[name] = metric_object_as_pair(metric, updates)
      continue
    if not is_keras2_metric(metric):
      continue
    if not metric.updates:
      raise ModelFnError(_never_updated(model_fn, name, metric))
    spec.eval_metric_ops[name] = metric_object_as_pair(metric,
                                                       metric.updates)


def _never_updated(model_fn: Callable, name: str, metric: Any) -> str:
  return (f'model_fn {user_fns.fn_name(model_fn)}: eval_metric_ops[{name!r}] '
          f'is the metric {metric.name!r}, whose update_state(...) was never '
          'called in this graph; call it with the batch\'s labels and '
          'predictions.')


def _check_graph_spec(spec: EstimatorSpec, model_fn: Callable) -> None:
  """Raises EagerModelFnError for what only the eager engine runs: a TF2
  model_fn's spec (estimator_rt's own API, never tf.estimator's)."""
  name = user_fns.fn_name(model_fn)
  if spec.mode == ModeKeys.TRAIN and spec.optimizer is not None:
    raise EagerModelFnError(
        f'model_fn {name} returned a Keras optimizer in TRAIN mode, and runs '
        'in the graph engine (a TF1-style model_fn or model_dir): there, '
        'return train_op=optimizer.minimize(loss, global_step=...) with a '
        'tf.compat.v1.train optimizer, or run a TF2 model_fn in a new '
        'model_dir (RunConfig(engine="eager")).',
        reason='it returns a Keras optimizer for the runtime to apply')
  if spec.mode == ModeKeys.TRAIN and is_keras3(spec.train_op):
    raise EagerModelFnError(
        f'model_fn {name} returned train_op={shorten(spec.train_op)}, what '
        'a Keras 3 optimizer\'s apply_gradients returns, and runs in the '
        'graph engine (a TF1-style model_dir or engine="graph"): run it in '
        'a new model_dir (RunConfig(engine="eager")).',
        reason='its train_op is a Keras 3 optimizer\'s apply_gradients')
  if spec.mode == ModeKeys.EVAL:
    for metric_name, metric in spec.eval_metric_ops.items():
      if isinstance(metric, (tuple, list)):
        continue
      message = (
          f'model_fn {name}: eval_metric_ops[{metric_name!r}] is a '
          f'{type(metric).__name__}; in the graph engine give a Keras 2 '
          '(tf_keras) metric or a (value, update_op) pair, e.g. '
          'tf.compat.v1.metrics.mean(...).')
      if is_keras3(metric):
        raise EagerModelFnError(
            message, reason=f'its eval_metric_ops[{metric_name!r}] is a '
            'Keras 3 metric object')
      raise ModelFnError(message)


def _counts_global_step(train_op, global_step) -> bool:
  """Whether running `train_op` writes `global_step` (minimize was given
  global_step=...), found by walking the ops it depends on. A mirrored
  global step is written through any of its per-device variables."""
  components = getattr(global_step, 'values', None) or (global_step,)
  targets = {id(v.handle) if hasattr(v, 'handle') else id(v._ref())  # pylint: disable=protected-access
             for v in components}
  # Built inside a function (the in-graph loop's body), the step's ops read
  # the variable through the function's capture of its handle.
  graph = getattr(train_op, 'graph', None)
  for external, internal in getattr(graph, 'captures', ()):
    if id(external) in targets:
      targets.add(id(internal))
  seen = set()
  pending = [train_op.op if isinstance(train_op, tf.Tensor) else train_op]
  while pending:
    op = pending.pop()
    if op is None or op in seen:
      continue
    seen.add(op)
    if op.type in _WRITES and any(id(t) in targets for t in op.inputs):
      return True
    pending.extend(t.op for t in op.inputs)
    pending.extend(op.control_inputs)
  return False


def _train_op(spec: EstimatorSpec, global_step, model_fn) -> tf.Operation:
  train_op = spec.train_op
  if not isinstance(train_op, tf.Operation):
    # A tensor, or a variable's update (an assign_add's result under a
    # multi-worker strategy): its op.
    train_op = getattr(train_op, 'op', train_op)
  if not isinstance(train_op, tf.Operation):
    raise ModelFnError(
        f'model_fn {user_fns.fn_name(model_fn)}: train_op must be a tensor '
        f'or an op of the graph, got {type(train_op).__name__}.')
  return train_op


def build(*, model_fn: Callable, mode: str, batches, params: dict,
          config, placement, loss_metric: bool = True) -> GraphModel:
  """Builds `mode` of the model_fn into the current graph.

  Args:
    model_fn: the user's model_fn.
    mode: a ModeKeys value.
    batches: a function returning the next (features, labels) of the
      input (`GraphInput.next_batch`); each replica calls it once.
    params: passed to the model_fn.
    config: passed to the model_fn.
    placement: where ops and variables go, and whether the model_fn is
      called once per replica (see placement.py).
    loss_metric: EVAL: add the loss's mean to `metrics` (else the caller
      adds it with `add_loss_metric`, when the graph is to be run: its ops
      follow from the model part's).

  Raises:
    ModelFnError: the model_fn failed or returned something unusable.
  """
  if not makes_global_step(model_fn):
    with placement.variable_scope():
      global_step = tf.compat.v1.train.get_or_create_global_step()
  specs = placement.call_for_each_replica(
      lambda f, l: _call(model_fn, f, l, mode, params, config), batches)
  spec = specs[0]
  if makes_global_step(model_fn):
    global_step = tf.compat.v1.train.get_global_step()
    if global_step is None:
      raise ModelFnError(
          f'model_fn {user_fns.fn_name(model_fn)} is marked as making the '
          f'global step of its graph, and made none in mode {mode!r}.')
  for each in specs:
    _check_graph_spec(each, model_fn)
  model = GraphModel(mode=mode, spec=spec, global_step=global_step)
  if mode == ModeKeys.PREDICT:
    model.predictions = placement.concat_predictions(
        [each.predictions_dict for each in specs])
    return model
  model.loss = placement.mean_loss([each.loss for each in specs])
  if mode == ModeKeys.TRAIN:
    train_op = placement.group(
        [_train_op(each, global_step, model_fn) for each in specs])
    if not _counts_global_step(train_op, global_step):
      # tf.estimator left the step at 0 here (minimize(loss) without
      # global_step=), so it never saved the trained weights: count it.
      logging.warning(
          'model_fn %s: its train_op does not increment the global step '
          '(minimize was not given global_step=); the runtime counts the '
          'steps itself, so max_steps, checkpoints and evaluation see them.',
          user_fns.fn_name(model_fn))
      with tf.control_dependencies([train_op]), placement.variable_scope():
        train_op = tf.group(global_step.assign_add(1))
    model.train_op = train_op
    return model
  # EVAL: the loss as tf.estimator reported it, the mean over batches.
  model.metrics = placement.merge_metrics(
      [dict(each.eval_metric_ops) for each in specs])
  check_metric_names(model.metrics, f'model_fn {user_fns.fn_name(model_fn)}')
  if loss_metric:
    add_loss_metric(model)
  return model


def add_loss_metric(model: GraphModel) -> None:
  """Adds EVAL's 'loss' metric to `model`, the loss as tf.estimator
  reported it: the mean over batches, in the current graph."""
  model.metrics['loss'] = tf.compat.v1.metrics.mean(model.loss)


def scaffold_saver(scaffold) -> Optional[tf.compat.v1.train.Saver]:
  """The Saver of a model_fn's Scaffold, or None. A `tf.train.Checkpoint`
  given as the saver (tf.estimator took one, to save "in an object-based
  format") becomes a Saver of its object graph's saveables, as tf.estimator
  made it: its checkpoints restore with tf.train.Checkpoint."""
  saver = None if scaffold is None else scaffold.saver
  if isinstance(saver, tf.train.Checkpoint):
    from tensorflow.python.checkpoint import graph_view  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
    saver = tf.compat.v1.train.Saver(
        var_list=graph_view.ObjectGraphView(saver).frozen_saveable_objects(),
        sharded=True, max_to_keep=None, save_relative_paths=True)
  return saver


def missing_from_checkpoint(checkpoint_path: str, saver_names: List[str]
                            ) -> List[str]:
  """The names in `saver_names` that checkpoint `checkpoint_path` lacks."""
  present = set(checkpoints.reader(
      checkpoint_path).get_variable_to_shape_map())
  return [name for name in saver_names if name not in present]


def mismatched_shapes(checkpoint_path: str) -> List[str]:
  """'name: [10] in the checkpoint, [20] here' for each global variable of
  the current graph whose fully defined shape (a partitioned variable's
  whole shape) differs from the one checkpoint `checkpoint_path` holds
  under its name."""
  saved = checkpoints.reader(checkpoint_path).get_variable_to_shape_map()
  found = []
  for variable in tf.compat.v1.global_variables():
    slice_info = getattr(variable, '_save_slice_info', None)
    if slice_info is not None:
      name, shape = slice_info.full_name, list(slice_info.full_shape)
    else:
      name = variable.op.name if hasattr(variable, 'op') else variable.name
      shape = tf.TensorShape(variable.shape)
      shape = shape.as_list() if shape.is_fully_defined() else None
    entry = f'{name}: {saved.get(name)} in the checkpoint, {shape} here'
    if (shape is not None and name in saved and
        list(saved[name]) != shape and entry not in found):
      found.append(entry)
  return found


def default_saver_names() -> List[str]:
  """What a default Saver of the current graph reads and writes: every
  global variable (and saveable object) by its op name, a part of a
  partitioned variable by the whole's name (each name once)."""
  names = []
  for variable in tf.compat.v1.global_variables():
    slice_info = getattr(variable, '_save_slice_info', None)
    if slice_info is not None:
      name = slice_info.full_name
    else:
      name = variable.op.name if hasattr(variable, 'op') else variable.name
    if name not in names:
      names.append(name)
  return names


def input_error(role: str, error: BaseException) -> InputFnError:
  """An input that failed while the session read it, as one line."""
  return InputFnError(
      f'{role} failed while training read it: '
      f'{user_fns.describe_exception(error)}')
