"""The variables and per-replica computation of one mode of a `model_fn`.

`EagerModel` plays the part of the graph tf.estimator built for each mode:
it calls the model_fn once eagerly under the strategy's scope (the *build
call*) to create the variables, sorts them into model, optimizer and metric
variables, and then lets compiled code call the model_fn again on the same
variables. Checkpoints hold the model variables by creation index, the
optimizer's state and the global step, so TRAIN, EVAL and PREDICT graphs
built in different processes restore each other's checkpoints.
"""

import contextlib
import re
import threading
from typing import Callable, List, Optional

import keras
import tensorflow as tf

from estimator_rt.core import user_fns
from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import raised_as
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core import spec as spec_lib
from estimator_rt.core.spec import EstimatorSpec
from estimator_rt.training.eager.variable_store import VariableStore

_current = threading.local()

# Exceptions that, raised from inside a model_fn, mean TensorFlow's runtime
# or the machine failed (out of memory, a lost peer, an internal error), not
# the model_fn: they propagate unchanged. Anything else a model_fn raises, a
# plain Python exception or an InvalidArgumentError (shapes, dtypes), is a
# bug in the model_fn or its inputs and becomes one ModelFnError.
_RUNTIME_ERRORS = (tf.errors.OpError, MemoryError)
_USER_OP_ERRORS = (tf.errors.InvalidArgumentError,)


graph_only_reason = user_fns.graph_only_reason


def eager_failure_reason(error: BaseException) -> str:
  """Why a model_fn that failed when called eagerly is tried in a graph."""
  return ('it fails when called eagerly: '
          f'{user_fns.describe_exception(error)}')


def graph_reason_of_call(*, model_fn: Callable, features, labels, mode: str,
                         params: dict, config) -> Optional[str]:
  """Calls `model_fn` eagerly as the eager engine's build call does (the
  global step readable, at 0); why it needs a graph (see engine_choice.py),
  or None when it runs eagerly. Nothing it creates is kept."""
  step = tf.Variable(0, dtype=tf.int64, trainable=False, name='global_step')
  try:
    with _global_step_scope(step):
      spec = user_fns.call_model_fn(model_fn, features, labels, mode, params,
                                    config)
  except UserInputError:
    raise
  except _USER_OP_ERRORS:
    return None  # Its input's values are wrong: the eager engine says so.
  except _RUNTIME_ERRORS:
    raise
  except Exception as e:  # pylint: disable=broad-except
    return graph_only_reason(e) or eager_failure_reason(e)
  session_only = session_only_fields(spec)
  return f'it returns {session_only}' if session_only else None


def session_only_fields(spec) -> Optional[str]:
  """'a Scaffold' or 'SessionRunHooks' if `spec` has what only a monitored
  session can honour, else None."""
  if spec_lib.has_session_scaffold(spec):
    return 'a Scaffold'
  for field in ('training_chief_hooks', 'training_hooks', 'evaluation_hooks',
                'prediction_hooks'):
    if getattr(spec, field, None):
      return 'SessionRunHooks'
  return None


def _shapes(structure) -> str:
  if structure is None:
    return 'None'
  shapes = tf.nest.map_structure(
      lambda t: str(tuple(t.shape)) if hasattr(t, 'shape') else repr(t),
      structure)
  text = str(shapes).replace("'", '')
  return text if len(text) <= 200 else text[:200] + '...'


def get_global_step() -> Optional[tf.Variable]:
  """The global step variable while a model_fn runs, else None.

  Use it for step-dependent behaviour inside a model_fn (schedules,
  summaries); it counts training steps across restarts. In the graph
  engine it is the graph's (`tf.compat.v1.train.get_global_step()`).
  """
  step = getattr(_current, 'global_step', None)
  if step is None and not tf.executing_eagerly():
    step = tf.compat.v1.train.get_global_step()
  return step


@contextlib.contextmanager
def _global_step_scope(variable):
  """`variable` is the global step while a model_fn runs: for
  `get_global_step()`, and for `tf.compat.v1.train.get_global_step()`,
  which TF1-style code calls (and which reads the default graph's
  GLOBAL_STEP collection: the process's graph when eager, the function's
  while tracing)."""
  previous = getattr(_current, 'global_step', None)
  _current.global_step = variable
  graph = tf.compat.v1.get_default_graph()
  key = tf.compat.v1.GraphKeys.GLOBAL_STEP
  had_key = key in graph.get_all_collection_keys()
  collection = graph.get_collection_ref(key)
  added = not collection
  if added:
    collection.append(variable)
  try:
    yield
  finally:
    _current.global_step = previous
    if added:
      collection[:] = [v for v in collection if v is not variable]
      if not collection and not had_key:
        # Leaves the graph's collections as they were (2.15 left no
        # 'global_step' key in the process's graph).
        graph.clear_collection(key)


def variable_signature(variable) -> str:
  """A variable's name without what differs between calls of a model_fn.

  Keras numbers repeated names (`dense_3/kernel` on the fourth Dense), and a
  rebuilt model gets new numbers; without them and the `:0` suffix the name
  is the same on every call and in every mode ('dense/kernel').
  """
  name = variable.name.split(':')[0]
  return '/'.join(re.sub(r'_\d+$', '', part) for part in name.split('/'))


def _variable_of(keras_or_tf_variable) -> tf.Variable:
  """The tf.Variable behind a Keras 3 variable (or the variable itself)."""
  if isinstance(keras_or_tf_variable, keras.Variable):
    return keras_or_tf_variable.value
  return keras_or_tf_variable


def _optimizer_state(optimizer) -> List[tf.Variable]:
  # The learning rate is left out of checkpoints on purpose: a resumed run
  # must use the learning rate its params give now (tf.estimator users
  # changed it between runs), not the one saved with the old run.
  return [_variable_of(v) for v in optimizer.variables
          if not v.name.endswith('learning_rate')]


def _snapshot_rule(mode):
  if mode == ModeKeys.TRAIN:
    return lambda variable: True
  if mode == ModeKeys.EVAL:
    # Only non-trainable variables can be evaluation-local state; keeping
    # copies of the (restored) weights would double their memory.
    return lambda variable: not variable.trainable
  return None


class EagerModel:
  """One mode's variables, built once, and calls of the model_fn on them.

  Attributes:
    mode: the ModeKeys value.
    strategy: the strategy whose scope holds the variables.
    build_spec: the EstimatorSpec of the build call (its optimizer and
      metric objects are the ones the runtime uses).
    global_step: int64 step counter.
    model_fn_counts_global_step: the train_op increments the global step
      (the loops do not).
    model_variables: the model's own variables in creation order (no
      optimizer or metric state).
    trainable_variables: the trainable model variables.
    optimizer: the Keras optimizer (TRAIN with `optimizer` only).
    metrics: name -> Keras metric of the build call (EVAL).
    checkpoint: a tf.train.Checkpoint over what this mode saves/restores.
  """

  def __init__(self, *, model_fn, mode: str, params: dict, config,
               strategy: tf.distribute.Strategy, sample):
    self.mode = mode
    self.strategy = strategy
    self._model_fn = model_fn
    self._params = params
    self._config = config
    self._store = VariableStore(
        owner=f'model_fn {user_fns.fn_name(model_fn)}')
    features, labels = sample
    with strategy.scope():
      self.global_step = tf.Variable(
          0, dtype=tf.int64, trainable=False, name='global_step',
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      # Outside TRAIN an optimizer is there only because the model_fn makes
      # it in every mode, and its variables are not the model's (see
      # below); in TRAIN a train_op's optimizer state is saved with them.
      with self._store.recording(
          snapshot=_snapshot_rule(mode),
          note_optimizer_variables=mode != ModeKeys.TRAIN):
        spec = self._invoke(features, labels, eagerly=True)
      self.build_spec = spec
      # Optimizer and metric state is not model state, in any mode: a
      # model_fn may build its optimizer and metrics unconditionally, and
      # EVAL must see the same model variables as TRAIN.
      owned = set()
      if spec.optimizer is not None:
        owned.update(id(_variable_of(v)) for v in spec.optimizer.variables)
      for metric in spec.eval_metric_ops.values():
        if isinstance(metric, keras.metrics.Metric):
          owned.update(id(_variable_of(v)) for v in metric.variables)
      self.optimizer = spec.optimizer if mode == ModeKeys.TRAIN else None
      self.metrics = {}
      if mode == ModeKeys.EVAL:
        spec_lib.check_metric_names(
            spec.eval_metric_ops,
            f'model_fn {user_fns.fn_name(self._model_fn)}')
        self.metrics = {
            name: metric for name, metric in spec.eval_metric_ops.items()
            if isinstance(metric, keras.metrics.Metric)}
      owned.update(id(v) for v in self._store.variables
                   if self._store.made_by_an_optimizer(v))
      self.model_variables = [
          v for v in self._store.variables if id(v) not in owned]
      self.trainable_variables = [
          v for v in self.model_variables if v.trainable]
      if self.optimizer is not None:
        if not self.trainable_variables:
          raise ModelFnError(
              'model_fn returned an optimizer but created no trainable '
              'variables to optimize.')
        self.optimizer.build(self.trainable_variables)
    # Variables of this mode only (a (value, update_op) metric's state);
    # set by `set_local_variables` once a checkpoint says which exist.
    self.local_variables = []
    self.model_fn_counts_global_step = False
    if mode == ModeKeys.TRAIN:
      self._undo_the_build_calls_step()
    self.reset_metrics()
    state = {'global_step': self.global_step, 'model': self.model_variables}
    if mode == ModeKeys.TRAIN:
      # Which model variables are trainable: lets EVAL, which creates no
      # optimizer, line its variables up with TRAIN's even when a train_op's
      # optimizer state sits among them. A plain variable, outside the
      # strategy: it is metadata, never updated.
      state['model_trainable'] = tf.Variable(
          [v.trainable for v in self.model_variables], dtype=tf.bool,
          trainable=False, name='model_trainable')
      state['model_names'] = tf.Variable(
          [variable_signature(v) for v in self.model_variables],
          dtype=tf.string, trainable=False, name='model_names')
    if self.optimizer is not None:
      state['optimizer'] = _optimizer_state(self.optimizer)
    self.checkpoint = tf.train.Checkpoint(**state)

  def _undo_the_build_calls_step(self) -> None:
    """The TRAIN build call ran one forward pass (and a train_op's update):
    undone, so training starts from the initial values. A train_op that
    counts the global step itself (tf.estimator's contract: `minimize(loss,
    global_step=...)`, or an `assign_add` the train_op depends on) did so
    in that call; the training loops then leave the counting to it."""
    self.model_fn_counts_global_step = int(self.global_step.numpy()) != 0
    self._store.reset(self._store.variables)
    self._store.forget_snapshots()
    self.global_step.assign(0)

  @property
  def uses_optimizer(self) -> bool:
    return self.optimizer is not None

  def _invoke(self, features, labels, *, eagerly: bool) -> EstimatorSpec:
    """Calls the model_fn; `eagerly` for the build call, which also tells
    whether the model_fn runs eagerly at all (see engine_choice.py)."""
    try:
      with _global_step_scope(self.global_step):
        spec = user_fns.call_model_fn(self._model_fn, features, labels,
                                      self.mode, self._params, self._config)
    except UserInputError:
      raise
    except _USER_OP_ERRORS as e:
      raise self._failed(e, features, labels) from e
    except _RUNTIME_ERRORS:
      raise
    except Exception as e:  # pylint: disable=broad-except
      reason = graph_only_reason(e)
      if reason is not None:
        raise GraphModelFnError(
            f'model_fn {user_fns.fn_name(self._model_fn)} is TF1-style and '
            f'needs a graph: {reason}', reason=reason) from e
      failed = self._failed(e, features, labels)
      if eagerly:
        # tf.estimator always built a graph: a model_fn that fails when
        # called eagerly, whatever it raises (a library's own "doesn't work
        # when executing eagerly" check, `tensor.op` on an eager tensor),
        # gets a graph before anything is reported.
        raise GraphModelFnError(
            str(failed), reason=eager_failure_reason(e), eager_error=failed,
            first_batch=(f'features {_shapes(features)} and labels '
                         f'{_shapes(labels)}')) from e
      raise failed from e
    session_only = session_only_fields(spec)
    if session_only is not None:
      raise GraphModelFnError(
          f'model_fn {user_fns.fn_name(self._model_fn)} returns '
          f'{session_only}, which only a session runs.',
          reason=f'it returns {session_only}')
    if not isinstance(spec, EstimatorSpec):
      raise ModelFnError(
          'model_fn should return an EstimatorSpec: model_fn '
          f'{user_fns.fn_name(self._model_fn)} returned '
          f'{type(spec).__name__} in mode {self.mode!r}.')
    spec = spec_lib.for_mode(spec, self.mode)
    if spec.mode != self.mode:
      raise ModelFnError(
          f'model_fn returned EstimatorSpec(mode={spec.mode!r}) when called '
          f'with mode={self.mode!r}; pass the mode it received.')
    return spec

  def _failed(self, error, features, labels) -> ModelFnError:
    # A bare trace does not say which call of which function failed on what
    # input; say it, and where in the model_fn (the original stays the
    # cause, for the API user who wants the whole trace).
    if isinstance(error, tf.errors.OperatorNotAllowedInGraphError):
      # TensorFlow's own text suggests AutoGraph, which the runtime leaves
      # off for model_fns (see loops._replica_train_step).
      return raised_as(ModelFnError, (
          f'model_fn {user_fns.fn_name(self._model_fn)} failed in mode '
          f'{self.mode!r} on features {_shapes(features)} and labels '
          f'{_shapes(labels)}: a tensor is used as a Python bool (an `if`, '
          '`while`, `and` or `not` on a tensor), which compiled steps '
          'cannot do: use tf.cond, tf.where or tf.while_loop, or move the '
          'branch into a helper decorated with @tf.function'
          f'{user_fns.where_in(self._model_fn, error)}'), error)
    return raised_as(ModelFnError, user_fns.failed_with(
        self._model_fn, error,
        f'model_fn {user_fns.fn_name(self._model_fn)} failed in mode '
        f'{self.mode!r} on features {_shapes(features)} and labels '
        f'{_shapes(labels)}'), error)

  def call(self, features, labels) -> EstimatorSpec:
    """Calls the model_fn on the built variables (inside compiled code)."""
    with self._store.reusing():
      spec = self._invoke(features, labels, eagerly=False)
    if self.mode == ModeKeys.TRAIN and (
        (spec.optimizer is None) != (self.build_spec.optimizer is None)):
      raise ModelFnError(
          'model_fn returned an optimizer on one call and a train_op on '
          'another; return the same kind every time.')
    return spec

  def set_local_variables(self, variables) -> None:
    """Marks variables the checkpoint does not hold as evaluation-local.

    EVAL may create state TRAIN never saved (a `(value, update_op)` metric's
    variables); it is not restored but reset before each evaluation.
    """
    self.local_variables = list(variables)

  def reset_metrics(self):
    """Resets Keras metrics and evaluation-local variables."""
    for metric in self.metrics.values():
      metric.reset_state()
    self._store.reset(self.local_variables)
