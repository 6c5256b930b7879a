"""What every canned estimator shares: its engine, its features, its head,
its summaries.

A canned estimator is an `Estimator` whose model_fn is built from its
constructor's arguments (DESIGN.md: canned estimators are model_fns that
run through the same engines and loop). It always runs in the graph engine:
there its variables get the names tf.estimator 2.15 gave them (a Keras 2
model under a name scope, `tf.compat.v1` variables), so a model_dir
tf.estimator 2.15 trained resumes, evaluates and exports here, and one
trained here resumes under 2.15.
"""

import functools
from typing import Any, Mapping, Optional, Sequence

import tensorflow as tf

from estimator_rt.estimator import estimator as estimator_lib
from estimator_rt.training.graph import model as graph_model
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.cluster.run_config import RunConfig

def _api_gauge():
  from tensorflow.python.eager import monitoring  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return monitoring.StringGauge(
      '/tensorflow/api/estimator',
      'Gauge to track the type of canned estimators used.', 'ClassType')


# TensorFlow's usage gauge of canned estimator types, tf.estimator 2.15's
# (`estimator._canned_estimator_api_gauge`): libraries' own canned
# estimators set a cell of it (`get_cell('Classifier').set('DNN')`).
API_GAUGE = _api_gauge()

# The loss reductions canned estimators take (tf.losses.Reduction's values
# in TF2; the v1 classes default to tf.compat.v1.losses.Reduction.SUM).
SUM_OVER_BATCH_SIZE = 'sum_over_batch_size'
SUM = 'sum'
V1_SUM = 'weighted_sum'


def graph_engine_config(config: Optional[RunConfig], *,
                        estimator_name: str) -> RunConfig:
  """`config` (or the default RunConfig) set to run in the graph engine.

  Raises:
    UserInputError: the config asks for the eager engine.
  """
  config = config if config is not None else RunConfig()
  if config.engine == 'eager':
    raise UserInputError(
        f'{estimator_name}: RunConfig(engine="eager") cannot run a canned '
        'estimator: it runs in the graph engine, where its variables have '
        'tf.estimator\'s names (leave engine unset).')
  return config.replace(engine='graph')


class CannedEstimator(estimator_lib.Estimator):
  """An Estimator whose model_fn a canned estimator class built; always in
  the graph engine (see this module's docstring).
  """

  def __init__(self, model_fn, model_dir=None, config=None,
               warm_start_from=None):
    # Our own code, written for graphs: AutoGraph (which a strategy's
    # call_for_each_replica applies) has nothing to convert in it and warned
    # that it could not.
    model_fn = tf.autograph.experimental.do_not_convert(model_fn)
    if holds_library_objects_only(model_fn):
      setattr(model_fn, graph_model.SAME_GRAPH_MODES,
              frozenset((ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)))
    super().__init__(
        model_fn=model_fn, model_dir=model_dir,
        config=graph_engine_config(config, estimator_name=type(self).__name__),
        warm_start_from=warm_start_from)


# Where the objects a canned model_fn may hold for it to build the same
# graph each call come from (the program's own functions and classes, such
# as an activation function or a Head subclass, may do more).
_LIBRARIES = ('tensorflow', 'keras', 'tf_keras', 'estimator_rt', 'numpy',
              'builtins', 'functools')


def _from_libraries(value: Any, depth: int = 0) -> bool:
  """Whether `value` is a plain value, or an object or function of
  _LIBRARIES, and so are its parts (tuples, lists, dicts, a namedtuple's
  fields, a partial's arguments), a few levels deep."""
  if value is None or isinstance(value, (str, bytes, int, float, bool)):
    return True
  if depth > 4:
    return False
  if isinstance(value, (tuple, list, frozenset, set)):
    return all(_from_libraries(v, depth + 1) for v in value)
  if isinstance(value, dict):
    return all(_from_libraries(k, depth + 1) and _from_libraries(v, depth + 1)
               for k, v in value.items())
  if isinstance(value, functools.partial):
    return _from_libraries((value.func, value.args, value.keywords),
                           depth + 1)
  module = getattr(value, '__module__', None) or type(value).__module__ or ''
  if callable(value) and not isinstance(value, type):
    module = getattr(value, '__module__', None) or module
  return module.split('.')[0] in _LIBRARIES


def holds_library_objects_only(model_fn) -> bool:
  """Whether a canned model_fn (a closure over its constructor's
  arguments) holds only plain values and objects of TensorFlow, Keras and
  estimator_rt: then it builds the same graph from the same input in every
  mode, and does nothing else a program sees (graph/model.py's
  SAME_GRAPH_MODES), which a program's own head, optimizer factory,
  activation or normalizer function might not (2.15 called them once per
  graph, and programs count such calls)."""
  function = getattr(model_fn, '__wrapped__', model_fn)
  cells = getattr(function, '__closure__', None) or ()
  try:
    values = [cell.cell_contents for cell in cells]
  except ValueError:  # An empty cell.
    return False
  return all(_from_libraries(v) for v in values)


def check_features(features: Any, *, estimator_name: str) -> None:
  """Canned models read features by column key: they must come as a dict."""
  if not isinstance(features, Mapping):
    raise UserInputError(
        'features should be a dictionary of `Tensor`s. Given type: '
        f'{type(features)}. ({estimator_name} reads the input_fn\'s '
        'features by feature column key: return a dict of tensors, got '
        f'{features!r}.)')


def check_v2_columns(columns, *, argument: str, estimator_name: str) -> None:
  """The TF2 canned estimators take `tf.feature_column` columns only, as in
  tf.estimator 2.15 (the v1 ones, tf.compat.v1.estimator.*, take both)."""
  from tensorflow.python.feature_column import feature_column_lib  # pylint: disable=g-import-not-at-top
  if columns and not feature_column_lib.is_feature_column_v2(columns):
    raise UserInputError(
        'Received a feature column from TensorFlow v1, but this is a '
        f'TensorFlow v2 Estimator: {estimator_name}\'s {argument} holds a '
        'tf.compat.v1.feature_column.* column; use tf.feature_column.* '
        'columns, or the v1 estimator (tf.compat.v1.estimator.*).')


def add_layer_summary(value: tf.Tensor, tag: str) -> None:
  """The per-layer summaries tf.estimator wrote: the fraction of zeros and
  the activations' histogram."""
  tf.compat.v1.summary.scalar(f'{tag}/fraction_of_zero_values',
                              zero_fraction(value))
  tf.compat.v1.summary.histogram(f'{tag}/activation', value)


def zero_fraction(value: tf.Tensor) -> tf.Tensor:
  """The fraction of `value`'s elements that are zero, `zero_fraction/
  fraction` as 2.15 named it. (Not tf.math.zero_fraction: its graph-mode
  cond logs a type-inference error on every graph here.)"""
  with tf.name_scope('zero_fraction'):
    return tf.reduce_mean(tf.cast(tf.equal(value, 0), tf.float32),
                          name='fraction')


def per_replica_loss(loss: tf.Tensor, loss_reduction: str) -> tf.Tensor:
  """A mean loss scaled for a sum over replicas, as 2.15 did before
  `get_updates`: each replica's gradients are summed when applied."""
  if loss_reduction == SUM_OVER_BATCH_SIZE:
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if replicas > 1:
      loss *= 1. / replicas
  return loss


def estimator_spec(*, head, features, mode, labels, logits,
                   parts: Sequence['optimizers.Part'], update_ops=(),
                   loss_reduction: Optional[str] = None):
  """The head's EstimatorSpec for `logits` (the TF2 classes'); in TRAIN its
  train_op trains `parts` (optimizers.train_op) on the head's loss, scaled
  for the replicas by `loss_reduction` (None: the head's)."""
  from estimator_rt.estimator.canned import optimizers  # pylint: disable=g-import-not-at-top
  if loss_reduction is None:
    loss_reduction = head.loss_reduction

  def train_op_fn(loss):
    return optimizers.train_op(
        parts, per_replica_loss(loss, loss_reduction), update_ops=update_ops)

  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, logits=logits,
      train_op_fn=train_op_fn if mode == ModeKeys.TRAIN else None)


def regression_head(label_dimension: int, *, weight_column=None,
                    loss_reduction=SUM_OVER_BATCH_SIZE):
  from estimator_rt.estimator.head import regression_head as regression  # pylint: disable=g-import-not-at-top
  return regression.RegressionHead(
      label_dimension=label_dimension, weight_column=weight_column,
      loss_reduction=loss_reduction)


def call_logit_fn(logit_fn, features, mode, params, config):
  """tf.estimator.experimental.call_logit_fn: calls `logit_fn` with
  `features` and whichever of `mode`, `params`, `config` it declares, and
  checks it returned a tensor or a dict of tensors (logits)."""
  import inspect  # pylint: disable=g-import-not-at-top
  declared = inspect.signature(logit_fn).parameters
  kwargs = {name: value for name, value in
            (('mode', mode), ('params', params), ('config', config))
            if name in declared}
  logits = logit_fn(features=features, **kwargs)
  values = logits.values() if isinstance(logits, Mapping) else [logits]
  if not all(isinstance(value, tf.Tensor) for value in values):
    raise UserInputError(
        'logit_fn should return a Tensor or a dictionary mapping strings to '
        f'Tensors: logit_fn {getattr(logit_fn, "__name__", logit_fn)!r} '
        f'returned {logits!r}.')
  return logits
