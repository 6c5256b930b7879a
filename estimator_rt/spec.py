"""`EstimatorSpec`: what a `model_fn` returns, validated on construction."""

import sys
from typing import Any, Mapping, Optional, Sequence

import keras
import tensorflow as tf

from estimator_rt.errors import GraphModelFnError
from estimator_rt.errors import ModelFnError
from estimator_rt.mode_keys import ModeKeys


def _is_tensor_like(value: Any) -> bool:
  # A distributed value is what an eager build call under a strategy's
  # scope gets back from updating a mirrored variable.
  return (isinstance(value, (tf.Tensor, tf.Variable,
                             tf.distribute.DistributedValues)) or
          tf.is_tensor(value))


def _hook_list(field: str, hooks: Optional[Sequence[Any]],
               mode: str) -> list:
  if hooks is None:
    return []
  if not isinstance(hooks, (list, tuple)):
    raise ModelFnError(
        f'EstimatorSpec(mode={mode!r}): `{field}` must be a list of '
        f'tf.compat.v1.train.SessionRunHook, got {type(hooks).__name__}: '
        f'{hooks!r}')
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise ModelFnError(
          f'EstimatorSpec(mode={mode!r}): `{field}` must hold '
          f'tf.compat.v1.train.SessionRunHook objects, got '
          f'{type(hook).__name__}: {hook!r}')
  return list(hooks)


def is_keras2_metric(value: Any) -> bool:
  """Whether `value` is a Keras 2 (`tf_keras`) metric object, which a
  TF1-style model_fn updates in a graph (as tf.estimator 2.15's users and
  heads did with tf.keras.metrics). tf_keras is not imported here: a metric
  of it can only exist once its user imported it."""
  tf_keras = sys.modules.get('tf_keras')
  return tf_keras is not None and isinstance(value, tf_keras.metrics.Metric)


def _is_metric_pair(value: Any) -> bool:
  return (isinstance(value, (tuple, list)) and len(value) == 2 and
          all(_is_tensor_like(v) or isinstance(v, tf.Operation)
              for v in value))


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


class EstimatorSpec:
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
  field unconditionally.

  The fields below are tf.estimator's, for TF1-style model_fns, which the
  graph engine runs in a monitored session (see engine_choice.py):

  * `scaffold`: a `tf.compat.v1.train.Scaffold` (init_fn, init ops, a Saver
    whose `max_to_keep` then decides how many checkpoints are kept).
  * `training_chief_hooks`, `training_hooks`, `evaluation_hooks`,
    `prediction_hooks`: `tf.compat.v1.train.SessionRunHook`s run around
    every session run of that mode (chief hooks on the chief only).
  * `export_outputs`: signature name -> `estimator_rt.export.PredictOutput`
    (or `ClassificationOutput`, `RegressionOutput`); by default the export
    has one `serving_default` signature returning `predictions`.

  The eager engine runs none of these: a model_fn returning a Scaffold or
  SessionRunHooks is given to the graph engine.

  Raises:
    ModelFnError: a required field is missing or has the wrong type. The
      message names the field and the value received.
  """

  # tf.estimator 2.15's positional order; `optimizer`, this project's own,
  # is keyword-only.
  def __init__(self,
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
    if mode not in ModeKeys.ALL:
      raise ModelFnError(
          f'EstimatorSpec: mode={mode!r} is not one of {ModeKeys.ALL}; pass '
          'the `mode` argument the model_fn received.')
    self.mode = mode
    self.predictions = predictions
    self.loss = loss
    self.loss_is_sum = False  # Set by heads only (see above).
    self.optimizer = optimizer
    self.train_op = train_op
    self.eval_metric_ops = dict(eval_metric_ops or {})
    self.export_outputs = (None if export_outputs is None
                           else dict(export_outputs))
    self.training_chief_hooks = _hook_list('training_chief_hooks',
                                           training_chief_hooks, mode)
    self.training_hooks = _hook_list('training_hooks', training_hooks, mode)
    self.evaluation_hooks = _hook_list('evaluation_hooks', evaluation_hooks,
                                       mode)
    self.prediction_hooks = _hook_list('prediction_hooks', prediction_hooks,
                                       mode)
    if scaffold is not None and not isinstance(
        scaffold, tf.compat.v1.train.Scaffold):
      raise ModelFnError(
          f'EstimatorSpec(mode={mode!r}): `scaffold` must be a '
          f'tf.compat.v1.train.Scaffold, got {type(scaffold).__name__}: '
          f'{scaffold!r}')
    # tf.estimator's default: an empty Scaffold, which code written for it
    # finalizes (`spec.scaffold.finalize()`); it asks nothing of a session
    # (`has_session_scaffold`).
    self.scaffold = (scaffold if scaffold is not None else
                     tf.compat.v1.train.Scaffold())
    self._validate()

  def _validate(self):
    if self.mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
      self._validate_loss()
    {ModeKeys.TRAIN: self._validate_train, ModeKeys.EVAL: self._validate_eval,
     ModeKeys.PREDICT: self._validate_predict}[self.mode]()

  def _validate_loss(self):
    mode = self.mode
    if self.loss is None:
      raise ModelFnError(
          f'EstimatorSpec(mode={mode!r}): `loss` is required in {mode} mode '
          'but was None; return the mean loss over the batch.')
    if not _is_tensor_like(self.loss):
      try:
        self.loss = tf.convert_to_tensor(self.loss)
      except (TypeError, ValueError) as e:
        raise ModelFnError(
            f'EstimatorSpec(mode={mode!r}): `loss` must be a scalar tensor, '
            f'got {type(self.loss).__name__}: {self.loss!r}') from e
    if self.loss.shape.rank not in (None, 0):
      if self.loss.shape.num_elements() in (None, 1):
        # tf.estimator's rule: a loss that may hold one element (shape
        # (1,), or (None,) as a mean over a batch of unknown size) is
        # taken as that scalar; more elements are an error.
        self.loss = tf.reshape(self.loss, [])
    if self.loss.shape.rank not in (None, 0):
      raise ModelFnError(
          f'EstimatorSpec(mode={mode!r}): `loss` must be a scalar (the mean '
          f'over this replica\'s batch), got shape {self.loss.shape}. Reduce '
          'it, e.g. with tf.reduce_mean.')
    if not (self.loss.dtype.is_floating or self.loss.dtype.is_complex):
      raise ModelFnError(
          f'EstimatorSpec(mode={mode!r}): `loss` must be a floating point '
          f'tensor, got dtype {self.loss.dtype.name}.')

  def _validate_train(self):
    if (self.optimizer is None and self.train_op is None and
        tf.executing_eagerly() and self.loss is not None):
      # tf.group(...) of updates returns None when run eagerly: the
      # model_fn builds a graph (tf.estimator's), which the graph engine
      # runs.
      raise GraphModelFnError(
          "EstimatorSpec(mode='train'): give `optimizer` (a Keras "
          'optimizer) or `train_op`; train_op is None in an eager call '
          '(tf.group returns None outside a graph).',
          reason='its train_op is None when called eagerly')
    if self.optimizer is None and self.train_op is None:
      raise ModelFnError(
          "EstimatorSpec(mode='train'): give `optimizer` (a Keras optimizer) "
          'or `train_op`; both were None.')
    if self.optimizer is not None and self.train_op is not None:
      raise ModelFnError(
          "EstimatorSpec(mode='train'): give `optimizer` or `train_op`, not "
          'both.')
    if (self.optimizer is not None and
        not isinstance(self.optimizer, keras.optimizers.Optimizer)):
      raise ModelFnError(
          "EstimatorSpec(mode='train'): `optimizer` must be a Keras "
          f'optimizer (keras.optimizers.*), got '
          f'{type(self.optimizer).__name__}: {self.optimizer!r}')

  def _validate_eval(self):
    for name, metric in self.eval_metric_ops.items():
      if not isinstance(name, str):
        raise ModelFnError(
            "EstimatorSpec(mode='eval'): `eval_metric_ops` keys must be "
            f'strings, got {name!r}.')
      if name == 'loss':
        raise ModelFnError(
            "EstimatorSpec(mode='eval'): `eval_metric_ops` may not define "
            "'loss'; the runtime reports the mean loss under that name.")
      if (is_keras2_metric(metric) and
          tf.compat.v1.executing_eagerly_outside_functions()):
        # Only the graph engine (a model_fn built in a tf.Graph) turns a
        # Keras 2 metric into ops; the eager engine resets and reduces
        # Keras 3 metric objects.
        raise ModelFnError(
            "EstimatorSpec(mode='eval'): eval_metric_ops[" + repr(name) +
            f'] is a Keras 2 (tf_keras) metric, {type(metric).__name__}, in '
            'a TF2 model_fn (eager engine); use a keras.metrics object.')
      if not (isinstance(metric, keras.metrics.Metric) or
              is_keras2_metric(metric) or _is_metric_pair(metric)):
        raise ModelFnError(
            "EstimatorSpec(mode='eval'): eval_metric_ops[" + repr(name) +
            '] must be a Keras metric object or a (value, update_op) pair, '
            f'got {type(metric).__name__}: {metric!r}')

  def _validate_predict(self):
    if self.predictions is None:
      raise ModelFnError(
          "EstimatorSpec(mode='infer'): `predictions` is required in "
          'PREDICT mode but was None.')
    preds = (self.predictions if isinstance(self.predictions, Mapping) else
             {'predictions': self.predictions})
    for name, value in preds.items():
      # A tuple of strings too: tf.estimator's MultiHead keyed its
      # predictions by (head name, prediction key).
      if not (isinstance(name, str) or (
          isinstance(name, tuple) and name and
          all(isinstance(part, str) for part in name))):
        raise ModelFnError(
            "EstimatorSpec(mode='infer'): `predictions` keys must be "
            f'strings (or tuples of strings), got {name!r}.')
      if not _is_tensor_like(value):
        raise ModelFnError(
            "EstimatorSpec(mode='infer'): predictions[" + repr(name) +
            f'] must be a tensor, got {type(value).__name__}: {value!r}')

  _FIELDS = ('mode', 'predictions', 'loss', 'train_op', 'eval_metric_ops',
             'export_outputs', 'training_chief_hooks', 'training_hooks',
             'scaffold', 'evaluation_hooks', 'prediction_hooks', 'optimizer')

  def _replace(self, **changes) -> 'EstimatorSpec':
    """A copy with `changes` (tf.estimator's EstimatorSpec was a namedtuple,
    and code called its `_replace`)."""
    unknown = set(changes) - set(self._FIELDS)
    if unknown:
      raise ModelFnError(
          f'EstimatorSpec._replace: unknown field(s) {sorted(unknown)}.')
    values = {name: getattr(self, name) for name in self._FIELDS}
    values.update(changes)
    mode = values.pop('mode')
    return EstimatorSpec(mode, **values)

  @property
  def predictions_dict(self) -> Mapping[str, Any]:
    """`predictions` as a dict (a single tensor is named 'predictions')."""
    if isinstance(self.predictions, Mapping):
      return dict(self.predictions)
    return {'predictions': self.predictions}

  def __repr__(self):
    fields = ', '.join(
        f'{k}={getattr(self, k)!r}'
        for k in ('loss', 'optimizer', 'train_op', 'predictions')
        if getattr(self, k) is not None)
    return f'EstimatorSpec({self.mode!r}, {fields})'
