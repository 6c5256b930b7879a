"""`EstimatorSpec`: what a `model_fn` returns, validated on construction."""

import collections
import sys
from typing import Any, Mapping, Optional, Sequence, Tuple

import keras
import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.core import export_outputs as outputs_lib
from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import ModelFnTypeError
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import shown
from estimator_rt.core.mode_keys import ModeKeys

# The signature an export serves by default.
DEFAULT_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


def _is_tensor_like(value: Any) -> bool:
  # A distributed value is what an eager build call under a strategy's
  # scope gets back from updating a mirrored variable.
  return (isinstance(value, (tf.Tensor, tf.Variable,
                             tf.distribute.DistributedValues)) or
          tf.is_tensor(value))


def _is_dense_tensor(value: Any) -> bool:
  """A tensor, as tf.estimator required of a loss or a prediction: not a
  SparseTensor or RaggedTensor (nor a Python or NumPy value)."""
  return _is_tensor_like(value) and not isinstance(
      value, (tf.SparseTensor, tf.RaggedTensor))


# The mode of a check called outside an EstimatorSpec (2.15's private
# helpers, as its model_fn module serves them): its message names no spec.
_NO_SPEC = object()


def _in_spec(mode: Any, detail: str) -> str:
  """' (EstimatorSpec(mode=...)<detail>)' closing a message about a spec's
  field, or '.' for a check called outside a spec."""
  if mode is _NO_SPEC:
    return '.'
  return f' (EstimatorSpec(mode={mode!r}){detail}).'


def check_tensor(value: Any, name: str, mode: Any = _NO_SPEC) -> Any:
  """`value` if it is a (dense) tensor; ModelFnTypeError otherwise."""
  if not _is_dense_tensor(value):
    raise ModelFnTypeError(
        f'{name} must be Tensor, given: {shown(value)}' +
        _in_spec(mode, ': give a tf.Tensor'))
  return value


def check_tensor_or_operation(value: Any, name: str,
                               mode: Any = _NO_SPEC) -> None:
  """Raises ModelFnTypeError unless `value` is an op or a tensor (a
  variable too)."""
  if not (isinstance(value, tf.Operation) or _is_tensor_like(value)):
    raise ModelFnTypeError(
        f'{name} must be Operation or Tensor, given: {shown(value)}' +
        _in_spec(mode, f' got a {type(value).__name__}'))


# tf.estimator's words for a value of another graph than the one the
# model_fn builds (a tensor kept from an earlier model_fn call, or made
# outside the graph the Estimator opened), word for word: its model_fn
# module's `_default_graph_error_message_template`, which code formats too.
OTHER_GRAPH = (
    '{0} with "{1}" must be from the default graph. '
    'Possible causes of this error include: \n\n'
    '1) {0} was created outside the context of the default graph.'
    '\n\n'
    '2) The object passed through to EstimatorSpec was not created '
    'in the most recent call to "model_fn".')


def _check_graph(value: Any, what: str, name: Optional[str] = None) -> None:
  """Raises ModelFnError if graph value `value` belongs to another graph
  than the default one. Not checked eagerly, nor inside a function being
  traced (whose body reads the outer graph's values through captures)."""
  if tf.executing_eagerly():
    return
  default = tf.compat.v1.get_default_graph()
  if isinstance(default, FuncGraph):
    return
  graph = getattr(value, 'graph', None)
  if isinstance(value, tf.Variable):
    graph = getattr(getattr(value, 'op', None), 'graph', None)
  if graph is not None and graph is not default:
    raise ModelFnError(OTHER_GRAPH.format(
        what, name or getattr(value, 'name', value)))


def validated_scaffold(scaffold: Any, mode: Any = _NO_SPEC) -> Any:
  """`scaffold`, or tf.estimator's default, an empty Scaffold (which code
  written for it finalizes, `spec.scaffold.finalize()`; it asks nothing of
  a session, see `has_session_scaffold`).

  Raises:
    ModelFnTypeError: it is neither None nor a tf.compat.v1.train.Scaffold.
  """
  if scaffold is None:
    return tf.compat.v1.train.Scaffold()
  if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
    raise ModelFnTypeError(
        f'scaffold must be tf.train.Scaffold. Given: {shorten(scaffold)}' +
        _in_spec(mode, f' got a {type(scaffold).__name__}'))
  return scaffold


def hook_list(field: str, hooks: Optional[Sequence[Any]],
              mode: Any = _NO_SPEC) -> tuple:
  """`hooks` (a list or tuple of SessionRunHooks, or None) as a tuple, as
  tf.estimator 2.15's EstimatorSpec held them.

  Raises:
    ModelFnTypeError: they are not, naming `field`.
  """
  if hooks is None:
    return ()
  if not isinstance(hooks, (list, tuple)):
    raise ModelFnTypeError(
        f'All hooks must be SessionRunHook instances, given: '
        f'{shorten(hooks)}' + _in_spec(
            mode, f': `{field}` must be a list of '
            'tf.compat.v1.train.SessionRunHook'))
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise ModelFnTypeError(
          f'All hooks must be SessionRunHook instances, given: '
          f'{shown(hook)}' + _in_spec(
              mode, f': `{field}` holds a {type(hook).__name__}'))
  return tuple(hooks)


def is_keras2_metric(value: Any) -> bool:
  """Whether `value` is a Keras 2 (`tf_keras`) metric object, which a
  TF1-style model_fn updates in a graph (as tf.estimator 2.15's users and
  heads did with tf.keras.metrics). tf_keras is not imported here: a metric
  of it can only exist once its user imported it."""
  tf_keras = sys.modules.get('tf_keras')
  return tf_keras is not None and isinstance(value, tf_keras.metrics.Metric)


def is_keras3(value: Any) -> bool:
  """Whether `value` is an object of Keras 3's classes (an optimizer, a
  metric, a variable...), not tf_keras' (Keras 2): what only estimator_rt's
  TF2 model_fns hand the runtime (engine_choice.py)."""
  return type(value).__module__.split('.')[0] == 'keras'


# The ops by which a Keras 3 metric's update_state writes its variables.
_VARIABLE_WRITES = ('AssignVariableOp', 'AssignAddVariableOp',
                    'AssignSubVariableOp')


def keras3_metric_updates(metric: Any, graph: tf.Graph) -> Optional[list]:
  """The ops of `graph` by which the Keras 3 metric `metric` was updated
  (its update_state returns nothing in a graph: the writes to its variables
  are the update), or None where its variables are not plain resource
  variables of `graph` (a strategy's distributed ones). Its variables leave
  GLOBAL_VARIABLES: a checkpoint never holds them."""
  variables = [getattr(v, '_value', v) for v in metric.variables]
  if not variables or not all(
      isinstance(v, tf.Variable) and hasattr(v, 'handle') and
      getattr(v.handle, 'graph', None) is graph for v in variables):
    return None
  handles = {id(v.handle) for v in variables}
  initializers = {v.initializer for v in variables}
  updates = [op for op in graph.get_operations()
             if op.type in _VARIABLE_WRITES and id(op.inputs[0]) in handles
             and op not in initializers]
  global_variables = graph.get_collection_ref(
      tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
  for variable in variables:
    if variable in global_variables:
      global_variables.remove(variable)
  return updates


def metric_object_as_pair(metric: Any, updates: Sequence[Any], *,
                          update_gives_value: bool = False):
  """`(metric.result(), update_op)` for a metric object updated in this
  graph by `updates`, as tf.estimator 2.15's EstimatorSpec paired them; the
  metric's variables join LOCAL_VARIABLES (initialized before each
  evaluation, never saved) and METRIC_VARIABLES, each once.

  `update_gives_value`: the update op is the metric's value read after
  `updates`, as a `tf.compat.v1.metrics` pair's is (2.15's v1 heads made
  theirs so, and code runs the update ops to read the batch's values)."""
  variables = [getattr(v, '_value', v) if is_keras3(v) else v
               for v in metric.variables]
  for collection in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                     tf.compat.v1.GraphKeys.METRIC_VARIABLES):
    present = {id(v) for v in tf.compat.v1.get_collection(collection)}
    for variable in variables:
      if id(variable) not in present:
        tf.compat.v1.add_to_collection(collection, variable)
  if update_gives_value:
    value = metric.result()
    with tf.control_dependencies(updates):
      return value, tf.identity(metric.result())
  return metric.result(), tf.group(*updates)


def _metric_parts_ok(value: Any) -> bool:
  return all(_is_tensor_like(v) or isinstance(v, tf.Operation)
             for v in tf.nest.flatten(value))


def _is_metric_pair(value: Any) -> bool:
  """A `(value, update_op)` pair: a 2-tuple (or list) of tensors or ops; the
  value may be a structure of tensors (tf.estimator reported it as such)."""
  return (isinstance(value, (tuple, list)) and len(value) == 2 and
          _metric_parts_ok(value))


def add_to_collection(collection: str, variables: Sequence[Any]) -> None:
  present = {id(v) for v in tf.compat.v1.get_collection(collection)}
  for variable in variables:
    if id(variable) not in present:
      tf.compat.v1.add_to_collection(collection, variable)


def keras2_metric_as_pair(name: str, metric: Any) -> Tuple[Any, Any]:
  """A Keras 2 (tf_keras) metric updated in the current graph as the
  `(result(), update_op)` pair a session runs, as tf.estimator 2.15 made
  it: the update op runs every update_state the model_fn called (2.15 ran
  the first only), and the metric's variables join the LOCAL_VARIABLES
  collection (initialized before each evaluation, never saved) and
  METRIC_VARIABLES.

  Raises:
    ModelFnError: update_state was never called on it (a ValueError).
  """
  if not metric.updates:
    raise ModelFnError(
        f'Please call update_state(...) on the "{metric.name}" metric '
        f'(eval_metric_ops[{name!r}]) with the batch\'s labels and '
        'predictions, in the model_fn.')
  for collection in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                     tf.compat.v1.GraphKeys.METRIC_VARIABLES):
    add_to_collection(collection, metric.variables)
  return (metric.result(), tf.group(*metric.updates))


# What a Scaffold can ask of a session; an empty one (EstimatorSpec's
# default) asks none of it.
_SCAFFOLD_FIELDS = ('init_op', 'init_feed_dict', 'init_fn', 'ready_op',
                    'ready_for_local_init_op', 'local_init_op',
                    'local_init_feed_dict', 'summary_op', 'saver')


def has_session_scaffold(spec) -> bool:
  """Whether `spec.scaffold` asks anything of a monitored session (an init
  op or function, a Saver, ...), which only the graph engine honours."""
  scaffold = getattr(spec, 'scaffold', None)
  if scaffold is None:
    return False
  return any(getattr(scaffold, name, None) is not None
             for name in _SCAFFOLD_FIELDS) or (
                 getattr(scaffold, '_copy_from_scaffold', None) is not None)


_FIELDS_215 = ('mode', 'predictions', 'loss', 'train_op', 'eval_metric_ops',
               'export_outputs', 'training_chief_hooks', 'training_hooks',
               'scaffold', 'evaluation_hooks', 'prediction_hooks')


class EstimatorSpec(collections.namedtuple('EstimatorSpec', _FIELDS_215)):
  """What a `model_fn` returns for one mode.

  The fields each mode needs:

  * `ModeKeys.TRAIN`: `loss` and exactly one of `optimizer` (a Keras
    optimizer: the runtime differentiates `loss` with respect to the model's
    trainable variables, scales for the number of replicas and applies the
    gradients with a cross-replica reduction) or `train_op` (the model_fn
    updated its variables itself and returns the resulting tensor or op; the
    runtime only runs it).
  * `ModeKeys.EVAL`: `loss`, and optionally `eval_metric_ops`, a dict from
    name to a Keras metric object whose `update_state` the model_fn already
    called (Keras 3 in the eager engine; Keras 2, `tf_keras`, in the graph
    engine, as tf.estimator took them), or to a `(value, update_op)` pair.
    For a pair, the reported result is what `update_op` returns on the last
    step (the updated value, as `tf.compat.v1.metrics` update ops return
    it); its variables are reset to their initial values before each
    evaluation. Under a
    multi-replica strategy the result is the mean over replicas of each
    replica's update result, which is right for mean-like metrics on equal
    batches only; use Keras metrics there (they reduce exactly).
  * `ModeKeys.PREDICT`: `predictions`, a tensor or a dict of tensors with the
    batch as first dimension. They also define the exported serving
    signature.

  `loss` must be a scalar: the mean over this replica's batch (a tensor
  that can hold one element only, of shape (1,) or (None,), is taken as
  that scalar, as tf.estimator did). The one exception is a head's with
  `loss_reduction=SUM`, which sets `loss_is_sum` on its TRAIN spec: that
  loss is a sum over the batch, and replicas' gradients of it are summed
  unweighted (the global batch's sum, as tf.estimator 2.15 trained it).
  Fields a mode
  does not use are accepted and ignored, so one model_fn can build every
  field unconditionally; as with tf.estimator, a loss, predictions or
  eval_metric_ops given in any mode must still be well-formed, and in a
  graph each tensor must belong to the graph the model_fn builds.

  The fields below are tf.estimator's, for TF1-style model_fns, which the
  graph engine runs in a monitored session (see engine_choice.py):

  * `scaffold`: a `tf.compat.v1.train.Scaffold` (init_fn, init ops, a Saver
    whose `max_to_keep` then decides how many checkpoints are kept).
  * `training_chief_hooks`, `training_hooks`, `evaluation_hooks`,
    `prediction_hooks`: `tf.compat.v1.train.SessionRunHook`s run around
    every session run of that mode (chief hooks on the chief only).
  * `export_outputs`: signature name -> `estimator_rt.export.PredictOutput`
    (or `ClassificationOutput`, `RegressionOutput`). In PREDICT mode they
    are completed as tf.estimator did: none given is `{'serving_default':
    PredictOutput(predictions)}` (`export_outputs_defaulted` is then set),
    and a lone output is also `serving_default`.

  The eager engine runs none of these: a model_fn returning a Scaffold or
  SessionRunHooks is given to the graph engine.

  Raises:
    ModelFnError: a required field is missing or has a wrong value (a
      ValueError); ModelFnTypeError where tf.estimator raised TypeError
      (a field of the wrong type). The message starts with tf.estimator's
      words and names the field and the value received.
  """

  # tf.estimator 2.15's positional order, and a namedtuple of its fields as
  # 2.15's was (`_replace`, `_fields`, `_asdict`); `optimizer`, this
  # project's own, is keyword-only and an attribute beside the fields.
  def __new__(cls,
              mode: str,
              predictions: Any = None,
              loss: Any = None,
              train_op: Any = None,
              eval_metric_ops: Optional[Mapping[str, Any]] = None,
              export_outputs: Optional[Mapping[str, Any]] = None,
              training_chief_hooks: Optional[Sequence[Any]] = None,
              training_hooks: Optional[Sequence[Any]] = None,
              scaffold: Optional[Any] = None,
              evaluation_hooks: Optional[Sequence[Any]] = None,
              prediction_hooks: Optional[Sequence[Any]] = None,
              *,
              optimizer: Optional[keras.optimizers.Optimizer] = None):
    # The mode is not checked here (2.15 did not: tests build an
    # EstimatorSpec(None) as a stand-in); each engine checks that a
    # model_fn's spec is of the mode it was called in.
    loss = validated_loss(loss, mode)
    train_op = validated_train(train_op, optimizer, loss, mode)
    predictions = validated_predictions(predictions, mode)
    export_outputs, defaulted = validated_export_outputs(
        export_outputs, predictions, mode)
    eval_metric_ops = validated_eval_metric_ops(eval_metric_ops, mode)
    scaffold = validated_scaffold(scaffold, mode)
    spec = super().__new__(
        cls, mode=mode, predictions=predictions, loss=loss,
        train_op=train_op, eval_metric_ops=eval_metric_ops,
        export_outputs=export_outputs,
        training_chief_hooks=hook_list('training_chief_hooks',
                                        training_chief_hooks, mode),
        training_hooks=hook_list('training_hooks', training_hooks, mode),
        scaffold=scaffold,
        evaluation_hooks=hook_list('evaluation_hooks', evaluation_hooks,
                                    mode),
        prediction_hooks=hook_list('prediction_hooks', prediction_hooks,
                                    mode))
    spec.optimizer = optimizer
    spec.loss_is_sum = False  # Set by heads only (see above).
    # PREDICT's export_outputs were made here, not by the model_fn (the
    # eager engine then exports the predictions under its own names).
    spec.export_outputs_defaulted = defaulted
    return spec

  def _replace(self, **changes) -> 'EstimatorSpec':
    """A copy with `changes`, validated again (tf.estimator's EstimatorSpec
    was a namedtuple, and code calls its `_replace`).

    Raises:
      ValueError: `changes` change the mode, or name no field.
    """
    if 'mode' in changes and changes['mode'] != self.mode:
      raise ModelFnError(
          'mode of EstimatorSpec cannot be changed (from '
          f'{self.mode!r} to {changes["mode"]!r}); make a new EstimatorSpec.')
    unknown = set(changes) - set(self._fields) - {'optimizer'}
    if unknown:
      raise ModelFnError(
          f'EstimatorSpec._replace: unknown field(s) {sorted(unknown)}.')
    values = self._asdict()
    values['optimizer'] = self.optimizer
    if self.export_outputs_defaulted:
      values['export_outputs'] = None  # Made again from the predictions.
    values.update(changes)
    mode = values.pop('mode')
    return EstimatorSpec(mode, **values)

  @property
  def predictions_dict(self) -> Mapping[str, Any]:
    """`predictions` as a dict (a single tensor is named 'predictions')."""
    if isinstance(self.predictions, Mapping):
      return dict(self.predictions)
    return {'predictions': self.predictions}


def for_mode(spec: EstimatorSpec, mode: str) -> EstimatorSpec:
  """`spec` as the spec of `mode`, the mode its model_fn was called in.

  tf.estimator 2.15 never compared a spec's mode with the mode it called
  the model_fn in, so a model_fn could return `EstimatorSpec(mode=None,
  ...)` (2.15's own tests do): such a spec is validated again as `mode`'s
  (a TRAIN spec without a loss fails then, in EstimatorSpec's words). A
  spec of any other mode is returned as it is, for the engine to refuse a
  mode other than `mode`.
  """
  if spec.mode is not None:
    return spec
  values = spec._asdict()
  values['optimizer'] = spec.optimizer
  values.pop('mode')
  return EstimatorSpec(mode, **values)

def validated_loss(loss: Any, mode: str) -> Any:
  """The loss, reshaped to a scalar if it holds one element (tf.estimator's
  rule: shape (1,), or (None,) as a mean over a batch of unknown size)."""
  if loss is None:
    if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
      raise ModelFnError(
          f'Missing loss. EstimatorSpec(mode={mode!r}): `loss` is required '
          f'in {mode} mode; return the mean loss over the batch.')
    return None
  check_tensor(loss, 'loss', mode)
  if loss.shape.num_elements() not in (None, 1):
    raise ModelFnError(
        f'Loss must be scalar, given: {shown(loss)} '
        f'(EstimatorSpec(mode={mode!r}): got shape {loss.shape}; the loss is '
        'the mean over this replica\'s batch: reduce it, e.g. with '
        'tf.reduce_mean).')
  if loss.shape.rank not in (None, 0):
    loss = tf.reshape(loss, [])
  if loss.dtype.is_integer:
    # tf.estimator 2.15 took an integer loss (its dtype was not checked);
    # the runtime averages losses and checks them for NaN, in floats.
    loss = tf.cast(loss, tf.float32)
  if not (loss.dtype.is_floating or loss.dtype.is_complex):
    raise ModelFnError(
        f'EstimatorSpec(mode={mode!r}): `loss` must be a floating point '
        f'tensor, got dtype {loss.dtype.name}.')
  _check_graph(loss, 'loss')
  return loss


def validated_train(train_op: Any, optimizer: Any, loss: Any,
                     mode: str) -> Any:
  """The train_op (a variable's op for a variable), after the checks of
  TRAIN's `optimizer` / `train_op`."""
  if train_op is not None:
    check_tensor_or_operation(train_op, 'train_op', mode)
    if isinstance(train_op, tf.Variable) and not tf.executing_eagerly():
      train_op = train_op.op
    _check_graph(train_op, 'train_op')
  if mode != ModeKeys.TRAIN:
    return train_op
  if (optimizer is None and train_op is None and tf.executing_eagerly() and
      loss is not None):
    # tf.group(...) of updates returns None when run eagerly: the
    # model_fn builds a graph (tf.estimator's), which the graph engine
    # runs.
    raise GraphModelFnError(
        "EstimatorSpec(mode='train'): give `optimizer` (a Keras "
        'optimizer) or `train_op`; train_op is None in an eager call '
        '(tf.group returns None outside a graph).',
        reason='its train_op is None when called eagerly')
  if optimizer is None and train_op is None:
    raise ModelFnError(
        "Missing train_op. EstimatorSpec(mode='train'): give `optimizer` (a "
        'Keras optimizer) or `train_op`; both were None.')
  if optimizer is not None and train_op is not None:
    raise ModelFnError(
        "EstimatorSpec(mode='train'): give `optimizer` or `train_op`, not "
        'both.')
  if (optimizer is not None and
      not isinstance(optimizer, keras.optimizers.Optimizer)):
    raise ModelFnError(
        "EstimatorSpec(mode='train'): `optimizer` must be a Keras "
        f'optimizer (keras.optimizers.*), got '
        f'{type(optimizer).__name__}: {optimizer!r}')
  return train_op


def validated_predictions(predictions: Any, mode: str) -> Any:
  """The predictions (checked in every mode they are given in, as
  tf.estimator did); {} when None outside PREDICT."""
  if predictions is None:
    if mode == ModeKeys.PREDICT:
      raise ModelFnError(
          "Missing predictions. EstimatorSpec(mode='infer'): `predictions` "
          'is required in PREDICT mode.')
    return {}
  if not isinstance(predictions, Mapping):
    check_tensor(predictions, 'predictions', mode)
    _check_graph(predictions, 'prediction values')
    return predictions
  for name, value in predictions.items():
    # A tuple of strings too: tf.estimator's MultiHead keyed its
    # predictions by (head name, prediction key). Only PREDICT needs names
    # (2.15's PredictOutput refused others there, and TRAIN and EVAL left
    # them unused).
    if mode == ModeKeys.PREDICT and not (isinstance(name, str) or (
        isinstance(name, tuple) and name and
        all(isinstance(part, str) for part in name))):
      raise ModelFnError(
          f'Prediction output key must be a string; got {name!r}. '
          f'(EstimatorSpec(mode={mode!r}): `predictions` keys are strings, '
          'or tuples of strings.)')
    check_tensor(value, f'predictions[{name}]', mode)
    _check_graph(value, 'prediction values',
                 f'{name}: {getattr(value, "name", value)}')
  return dict(predictions)


def validated_export_outputs(export_outputs: Any, predictions: Any,
                              mode: str) -> Tuple[Any, bool]:
  """PREDICT's export_outputs as tf.estimator completed them: a
  `PredictOutput` of the predictions as `serving_default` when none are
  given, a lone output also named `serving_default`. Returns them and
  whether they were made here. Other modes' are kept as they are."""
  if mode != ModeKeys.PREDICT:
    return export_outputs, False
  defaulted = export_outputs is None
  if defaulted:
    export_outputs = {
        DEFAULT_SIGNATURE: outputs_lib.PredictOutput(predictions)}
  if not isinstance(export_outputs, Mapping):
    raise ModelFnTypeError(
        f'`export_outputs` must be dict, given: {shorten(export_outputs)} '
        "(EstimatorSpec(mode='infer'): a dict of signature name to "
        'estimator_rt.export.PredictOutput, ClassificationOutput or '
        'RegressionOutput).')
  export_outputs = dict(export_outputs)
  for name, output in export_outputs.items():
    if not isinstance(output, outputs_lib.ExportOutput):
      raise ModelFnTypeError(
          'Values in `export_outputs` must be ExportOutput objects, '
          f'received: {shown(export_outputs)}. (export_outputs[{name!r}] is '
          f'a {type(output).__name__}.)')
  if len(export_outputs) == 1:
    export_outputs.setdefault(DEFAULT_SIGNATURE,
                              next(iter(export_outputs.values())))
  elif DEFAULT_SIGNATURE not in export_outputs:
    raise ModelFnError(
        'Multiple `export_outputs` were provided, but none of them is '
        f'specified as the default: name one of {sorted(export_outputs)} '
        f'{DEFAULT_SIGNATURE!r} (tf.saved_model.'
        'DEFAULT_SERVING_SIGNATURE_DEF_KEY).')
  return export_outputs, defaulted


def validated_eval_metric_ops(eval_metric_ops: Any, mode: str) -> dict:
  """eval_metric_ops as a dict (checked in every mode, as tf.estimator
  did). In a graph, Keras 2 (tf_keras) metric objects become
  `(value, update_op)` pairs (keras2_metric_as_pair)."""
  if eval_metric_ops is None:
    return {}
  if not isinstance(eval_metric_ops, Mapping):
    raise ModelFnTypeError(
        f'eval_metric_ops must be a dict, given: {shown(eval_metric_ops)} '
        f'(EstimatorSpec(mode={mode!r})).')
  metrics = dict(eval_metric_ops)
  in_graph = not tf.compat.v1.executing_eagerly_outside_functions()
  for name, metric in metrics.items():
    # Only EVAL reports them by name (2.15 failed there, sorting the
    # names; TRAIN and PREDICT left them unused).
    if mode == ModeKeys.EVAL and not isinstance(name, str):
      raise ModelFnError(
          f'EstimatorSpec(mode={mode!r}): `eval_metric_ops` keys must be '
          f'strings, got {name!r}.')
    if is_keras2_metric(metric):
      if not in_graph:
        # Only the graph engine (a model_fn built in a tf.Graph) turns a
        # Keras 2 metric into ops; the eager engine resets and reduces
        # Keras 3 metric objects.
        raise ModelFnError(
            f'EstimatorSpec(mode={mode!r}): eval_metric_ops[{name!r}] is a '
            f'Keras 2 (tf_keras) metric, {type(metric).__name__}, in a TF2 '
            'model_fn (eager engine); use a keras.metrics object.')
      parts = list(metric.updates) + [metric.result()] if (
          metric.updates) else []
      for part in parts:
        _check_graph(part, 'eval_metric_ops', f'{name}: {part.name}')
      metrics[name] = keras2_metric_as_pair(name, metric)
      continue
    if isinstance(metric, keras.metrics.Metric):
      continue
    if not (isinstance(metric, (tuple, list)) and len(metric) == 2):
      raise ModelFnTypeError(
          'Values of eval_metric_ops must be (metric_value, update_op) '
          f'tuples, given: {shown(metric)} for key: {name} '
          f'(eval_metric_ops[{name!r}]; or a Keras '
          'metric object).')
    if not _metric_parts_ok(metric):
      raise ModelFnTypeError(
          f'EstimatorSpec(mode={mode!r}): eval_metric_ops[{name!r}] must be '
          'a (value, update_op) pair of tensors or ops, got '
          f'{shorten(metric)}.')
    for part in tf.nest.flatten(metric):
      _check_graph(part, 'eval_metric_ops',
                   f'{name}: {getattr(part, "name", part)}')
  return metrics


# The names evaluation reports itself, which eval_metric_ops may not use.
RESERVED_METRIC_NAMES = ('loss', 'global_step')


def check_metric_names(eval_metric_ops: Mapping[str, Any], where: str) -> None:
  """Refuses an eval_metric_ops name evaluation reports itself: 'loss'
  (the mean loss) and 'global_step' (the checkpoint's step); the message
  starts with tf.estimator 2.15's phrase.

  Args:
    eval_metric_ops: the EVAL-mode spec's metrics.
    where: names the model_fn in the error.

  Raises:
    ModelFnError: one of them is used.
  """
  for name in RESERVED_METRIC_NAMES:
    if name in eval_metric_ops:
      quoted = f'`{name}`' if name == 'global_step' else f'"{name}"'
      raise ModelFnError(
          f'Metric with name {quoted} is not allowed, because Estimator '
          'already defines a default metric with the same name: '
          f'{where} returns eval_metric_ops[{name!r}]; rename that metric.')
