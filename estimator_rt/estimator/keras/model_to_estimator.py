"""`model_to_estimator`: an Estimator that trains, evaluates, predicts with
and exports a compiled Keras model, as `tf.keras.estimator.
model_to_estimator` did with tf.estimator 2.15.

The Estimator's model_fn (run by the eager engine) calls a clone of the
model on the features:

  - features: a dict keyed by the model's input names (extra keys are
    ignored; a missing one raises 2.15's FormattedKeyError, a KeyError), a
    list in the model's input order, or one tensor for a one-input model;
    labels likewise by output names, or one tensor. As in 2.15, features
    `{'features': ..., 'sample_weights': ...}` carry per-example weights
    for the loss and the weighted metrics;
  - TRAIN: the compiled loss (each output's loss times its loss weight,
    plus the model's regularization losses: the mean over this replica's
    batch, as the runtime's contract asks, not Keras's 1/replicas-scaled
    value), and a fresh optimizer of the compiled one's config (the
    runtime differentiates, scales across replicas and applies it); a TF1
    optimizer, or a WideDeepModel's two, the model_fn applies itself
    (train_op.py);
  - EVAL: 'loss' and the compiled metrics under the names `model.evaluate`
    gives them ('accuracy'; '<output>_<metric>' for a multi-output model),
    renamed by `metric_names_map`. As 2.15, the per-output losses
    `model.evaluate` also reports are not metrics here;
  - PREDICT: the outputs keyed by the model's output names (the output
    layers' names, a dict output's keys, or 'output_<i>' for a subclassed
    model, as 2.15 named them); the export's serving_default
    signature is a PredictOutput of them, plus one signature per
    `export_outputs` entry, as 2.15.

The estimator starts from the Keras model's current weights, as 2.15's
did (it warm-started from a checkpoint of them): the clone's variables take
them as initial values, in creation order (or from the checkpoint a
program saved in model_dir/keras, which 2.15 warm-started from). An export
before any training exports them. The Keras model itself is not modified,
and later changes to it do not reach the estimator.

A compiled tf_keras (Keras 2) model runs too: it is cloned with tf_keras
(a subclassed one from its config, as 2.15 cloned it; one built in a graph
is read in its graph, see graph_models.py), and its compiled loss,
metrics and optimizer are rebuilt as their Keras 3 namesakes from their
configs (an optimizer or loss without a Keras 3 class of the same name is
refused, naming it; a metric name only tf_keras knows keeps its name; a
learning-rate schedule or a legacy `decay` becomes a Keras 3 schedule of
the same rates, see learning_rates.py).

Differences from 2.15 (each where 2.15 hurt users or cannot apply):
`metric_names_map` may rename some metrics only (2.15 required every
one); `checkpoint_format='saver'` is accepted with a warning (the eager
engine writes object-based checkpoints); a subclassed model starts from
its own weights when built (2.15 started those fresh, with a warning); a
subclassed Keras 3 model must rebuild from its config.
"""

import contextlib
import copy
import dataclasses
import inspect
import os
import tempfile
from typing import Any, Callable, Dict, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.estimator import estimator as estimator_lib
from estimator_rt.core import export_outputs as outputs_lib
from estimator_rt.estimator.keras import graph_models as keras_graph_models
from estimator_rt.estimator.keras import learning_rates
from estimator_rt.estimator.keras import train_op as keras_train_op
from estimator_rt.estimator import warm_starting
from estimator_rt.core.errors import FormattedKeyError
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError
from estimator_rt.core.errors import shorten
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec

# 2.15's key for per-example weights in features (keras_lib's
# _extract_sample_weight_tensors).
_SAMPLE_WEIGHT_KEYS = {'features', 'sample_weights'}


def _keras():
  import keras  # pylint: disable=g-import-not-at-top
  return keras


def _tf_keras():
  try:
    import tf_keras  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  return tf_keras


def _is_tf_keras(model) -> bool:
  tf_keras = _tf_keras()
  return tf_keras is not None and isinstance(model, tf_keras.Model)


def _is_subclassed_tf_keras(model) -> bool:
  return _is_tf_keras(model) and not (
      model._is_graph_network or  # pylint: disable=protected-access
      isinstance(model, _tf_keras().Sequential))


def _assert_valid_model(model, custom_objects=None) -> None:
  """2.15's check of a subclassed tf_keras model, which is cloned from its
  config: it must rebuild from it.

  Raises:
    UserInputError (a ValueError): it does not (2.15's words).
  """
  if not _is_subclassed_tf_keras(model):
    return
  try:
    with _tf_keras().utils.custom_object_scope(custom_objects or {}):
      type(model).from_config(model.get_config())
  except NotImplementedError as e:
    raise UserInputError(
        'Subclassed `Model`s passed to `model_to_estimator` must '
        'implement `Model.get_config` and `Model.from_config`: '
        f'keras_model={model.name!r} ({type(model).__name__}) is cloned '
        'from its config.') from e


def _not_compiled(model) -> None:
  """Raises 2.15's error for a model that is not compiled."""
  raise UserInputError(
      'The given keras model has not been compiled yet. Please compile the '
      'model with `model.compile()` before calling `model_to_estimator()`: '
      f'keras_model={model.name!r} has no optimizer and loss; call '
      'model.compile(optimizer=..., loss=..., metrics=...) first.')


def _check_model(model, custom_objects, checkpoint_format: str) -> None:
  keras = _keras()
  if _is_tf_keras(model):
    if _is_subclassed_tf_keras(model):
      # 2.15's checks of a subclassed model (it was cloned from its config,
      # and 2.15 saved its checkpoints by name only), in 2.15's words.
      _assert_valid_model(model, custom_objects)
      if checkpoint_format == 'checkpoint':
        raise UserInputError(
            'Object-based checkpoints are currently not supported with '
            f'subclassed models: keras_model={model.name!r} is a subclassed '
            "tf_keras model; pass checkpoint_format='saver', as 2.15 "
            'required.')
    if keras_graph_models.is_graph_built(model):
      compiled = keras_graph_models.is_compiled(model)
    else:
      compiled = getattr(model, 'compiled_loss', None) is not None and bool(
          getattr(model, 'optimizer', None))
    if not compiled:
      _not_compiled(model)
    return
  if not isinstance(model, keras.Model):
    raise UserInputError(
        f'keras_model={shorten(model)} is not a Keras model (keras.Model or '
        'tf_keras.Model).')
  if getattr(model, 'optimizer', None) is None or not getattr(
      model, '_compile_config', None):
    _not_compiled(model)
  if model._compile_config.config.get('loss') is None:  # pylint: disable=protected-access
    raise UserInputError(
        f'keras_model={model.name!r} was compiled without a loss; '
        'model_to_estimator needs compile(loss=...).')


def _tf_variable(variable):
  """The tf.Variable behind a Keras 3 variable (or the variable itself)."""
  return variable.value if isinstance(variable, _keras().Variable) else variable


def _values_in_creation_order(model, clone, weights=None
                              ) -> List[Optional[np.ndarray]]:
  """`model`'s weights (or `weights`, values in the order of the model's)
  in the order `clone()` creates its variables (None in the place of a
  variable that is not one of them).

  A clone lists its weights as the model does, but may create them in
  another order (Keras 3's from_config builds a multi-output model's
  layers in its own order), so one clone is built here, eagerly, to learn
  the order.

  Raises:
    UserInputError: the clone's weights do not match the model's.
  """
  values = ([np.array(w.numpy()) for w in _weights(model)]
            if weights is None else weights)
  created = []

  def recorder(next_creator, **kwargs):
    variable = next_creator(**kwargs)
    created.append(variable)
    return variable

  with tf.variable_creator_scope(recorder):
    probe = clone()
    if values and not _weights(probe):
      _build_like(probe, model)
  listed = [_tf_variable(w) for w in _weights(probe)]
  shapes = [tuple(w.shape) for w in listed]
  if shapes != [v.shape for v in values]:
    raise UserInputError(
        f'keras_model={model.name!r}: a clone of it has weights of shapes '
        f'{shorten(shapes)}, the model {shorten([v.shape for v in values])}; '
        'model_to_estimator cannot start from its weights (is it built?).')
  place = {id(w): i for i, w in enumerate(listed)}
  # None for a variable that is not a weight (a Dropout's seed state): it
  # keeps its own initial value.
  plan = [values[place[id(v)]] if id(v) in place else None for v in created]
  if sum(value is not None for value in plan) != len(values):
    raise UserInputError(
        f'keras_model={model.name!r}: a clone of it does not create all its '
        'weights when built; model_to_estimator cannot start from them.')
  while plan and plan[-1] is None:
    plan.pop()
  return plan


def _weights(model) -> list:
  """A model's weights; none for a subclassed tf_keras model not built yet
  (whose `weights` raises, for itself or a part)."""
  if _is_subclassed_tf_keras(model):
    try:
      return model.weights
    except ValueError:
      return []  # Not built: a part of it not called yet.
  return model.weights


def _build_like(clone, model) -> None:
  """Builds a subclassed tf_keras `clone` (which creates its variables on
  its first call) by calling it on zeros shaped as `model`'s inputs were.

  Raises:
    UserInputError: the model's input shapes are not known.
  """
  spec = model.save_spec() if hasattr(model, 'save_spec') else None
  if not spec or not spec[0]:
    raise UserInputError(
        f'keras_model={model.name!r} is a built subclassed model whose input '
        'shapes are not known (it was built, not called), so '
        'model_to_estimator cannot start from its weights; call it on a '
        'batch (or fit it) first.')
  args, kwargs = spec
  zeros = tf.nest.map_structure(
      # as_list(): plain ints, also where TF1 behaviour's shapes hold
      # Dimension objects.
      lambda t: tf.zeros([1 if d is None else d for d in t.shape.as_list()],
                         t.dtype),
      (args, kwargs))
  clone(*zeros[0], **zeros[1])


@contextlib.contextmanager
def _initial_values_from(values: List[Optional[np.ndarray]]):
  """Variables created inside take, in creation order, `values` (None: the
  variable's own initial value); anything created after them (metrics,
  optimizer) is left alone."""
  created = [0]

  def creator(next_creator, **kwargs):
    index = created[0]
    if index < len(values):
      created[0] += 1
      value = values[index]
    else:
      value = None
    if value is not None:
      dtype = kwargs.get('dtype')
      kwargs['initial_value'] = lambda: tf.constant(value, dtype=dtype)
      kwargs.pop('shape', None)
    return next_creator(**kwargs)

  with tf.variable_creator_scope(creator):
    yield


def _input_names(model) -> Optional[List[str]]:
  """Names features are looked up by: a dict input's keys, or the Input
  layers' names; None when the model does not know its inputs."""
  struct = getattr(model, '_inputs_struct', None)
  if isinstance(struct, dict):
    return list(struct)
  inputs = getattr(model, 'inputs', None)
  if not inputs:
    return None
  # tf_keras names input tensors 'x:0'; its input_names are the layers'.
  names = getattr(model, 'input_names', None)
  return list(names) if names else [t.name for t in inputs]


def _subclassed_inputs(model, features):
  """Features as 2.15 gave them to a subclassed tf_keras model: a dict by
  the keys of a dict the model set as its inputs; a dict keyed
  'input_1', 'input_2', ... (2.15's names for its inputs) as a list in
  that order (one tensor for one); anything else as it is."""
  if not isinstance(features, dict):
    return features
  inputs = getattr(model, 'inputs', None)
  if isinstance(inputs, dict):
    return _select('features', features, list(inputs), True)
  names = [f'input_{i}' for i in range(1, len(features) + 1)]
  if set(features) != set(names):
    return features
  return _select('features', features, names, False)


def _output_names(model, outputs) -> List[str]:
  """Names predictions and labels are keyed by: a dict output's keys, the
  output layers' names (2.15's `model.output_names`), or 'output_<i>'."""
  if isinstance(outputs, dict):
    return list(outputs)
  from keras.src.models import functional  # pylint: disable=g-import-not-at-top
  count = len(outputs) if isinstance(outputs, (list, tuple)) else 1
  keras = _keras()
  names = None
  if isinstance(model, keras.Sequential) and count == 1:
    names = [model.layers[-1].name]
  elif (_is_tf_keras(model) or
        isinstance(model, functional.Functional)):
    names = getattr(model, 'output_names', None)
  # Other (subclassed) models number their layers anew in every clone:
  # 2.15's names for their outputs do not change.
  if not names or len(names) != count:
    names = [f'output_{i + 1}' for i in range(count)]
  return list(names)


def _select(what: str, given, names: Optional[List[str]], as_dict: bool):
  """`given` (a dict, a list or one tensor) as the model takes it: a dict
  with exactly `names` if `as_dict`, else a list in `names` order (one
  tensor for one name)."""
  if not isinstance(given, dict) or names is None:
    return given
  missing = [name for name in names if name not in given]
  if missing:
    order = 'inputs' if what == 'features' else 'outputs'
    # 2.15's message, with what to do in its first line: code matched its
    # key lines with patterns like r'Missed keys:(\s|.)*<key>', which
    # backtrack for minutes over any text after them.
    raise FormattedKeyError(
        f'The dictionary passed into {what} does not cover requested '
        f'{order} keys defined in the keras model (model_to_estimator looks '
        f'them up by name: key the input_fn\'s {what} by them, or give a '
        'list in the model\'s order).'
        f'\n\tExpected keys: {set(names)}'
        f'\n\t{what} keys: {set(given)}'
        f'\n\tMissed keys: {set(missing)}')
  if as_dict:
    return {name: given[name] for name in names}
  values = [given[name] for name in names]
  return values[0] if len(values) == 1 else values


def _extract_sample_weight_tensors(features):
  """(features, sample weights) of features `{'features': ...,
  'sample_weights': ...}` (2.15's way of giving per-example weights), or
  (features, None)."""
  if isinstance(features, dict) and set(features) == _SAMPLE_WEIGHT_KEYS:
    return features['features'], features['sample_weights']
  return features, None


def standardize_sample_weights(x_weight, output_names):
  """2.15's: sample weights (a dict by output name, a list, or one
  tensor; None) as a list of one per output in `output_names`.

  Raises:
    UserInputError (a ValueError): a list of the wrong length, or a dict
      with keys that are not outputs.
    UserTypeError (a TypeError): neither a list nor a dict for a model of
      several outputs.
  """
  if x_weight is None or (isinstance(x_weight, (list, tuple)) and
                          not x_weight):
    return [None for _ in output_names]
  if len(output_names) == 1:
    if isinstance(x_weight, (list, tuple)) and len(x_weight) == 1:
      return list(x_weight)
    if isinstance(x_weight, dict) and output_names[0] in x_weight:
      return [x_weight[output_names[0]]]
    return [x_weight]
  if isinstance(x_weight, (list, tuple)):
    if len(x_weight) != len(output_names):
      raise UserInputError(
          f'Provided `sample_weights` was a list of {len(x_weight)} '
          f'elements, but the model has {len(output_names)} outputs. You '
          'should provide one `sample_weights` array per model output '
          f'({output_names}).')
    return list(x_weight)
  if isinstance(x_weight, dict):
    unknown = sorted(set(x_weight) - set(output_names))
    if unknown:
      raise UserInputError(
          f'Unknown entries in sample_weights dictionary: {unknown}. Only '
          f'expected following keys: {output_names}')
    return [x_weight.get(name) for name in output_names]
  raise UserTypeError(
      'The model has multiple outputs, so `sample_weights` should be either '
      'a list or a dict. Provided `sample_weights` type not understood: '
      f'{shorten(x_weight)}')


def _sample_weights(weights, names: List[str]):
  """2.15's sample weights (a dict by output name, a list, or one tensor)
  in the structure the compiled loss takes: one per output
  (`standardize_sample_weights`), the lone one for one output; None for
  none."""
  if weights is None:
    return None
  standardized = standardize_sample_weights(weights, names)
  return standardized[0] if len(names) == 1 else standardized


def _as_keras3(kind: str, value, owner: str, *, weighted: bool = False):
  """A tf_keras loss or metric (a string, a function or an object) as its
  Keras 3 namesake, by class name and config. A metric keeps the name
  tf_keras reported it by (`_reported_metric_name`; `weighted`: one of
  compile()'s weighted_metrics)."""
  keras = _keras()
  if value is None:
    return value
  if isinstance(value, dict):
    return {k: _as_keras3(kind, v, owner, weighted=weighted)
            for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_as_keras3(kind, v, owner, weighted=weighted) for v in value]
  if kind == 'metric' and not hasattr(value, 'get_config'):
    # A name or a function (tf_keras.metrics.mae): Keras 3 has the same
    # names.
    identifier = value if isinstance(value, str) else getattr(
        value, '__name__', value)
    return _metric_named(identifier,
                         reported=_reported_metric_name(value, weighted))
  if isinstance(value, str):
    return value
  if not hasattr(value, 'get_config'):
    return getattr(value, '__name__', value)
  name = type(value).__name__
  config = dict(value.get_config())
  if config.get('reduction') == 'auto':
    # tf_keras's default reduction; Keras 3 calls the same one this.
    config['reduction'] = 'sum_over_batch_size'
  if kind == 'metric':
    config['name'] = _reported_metric_name(value, weighted)
  try:
    known = getattr(keras, {'loss': 'losses', 'metric': 'metrics'}[kind])
    cls = getattr(known, name)
    accepted = inspect.signature(cls.__init__).parameters
    config = {k: v for k, v in config.items() if k in accepted}
    return cls(**config)
  except (AttributeError, TypeError, ValueError) as e:
    raise UserInputError(
        f'keras_model={owner!r}: its tf_keras {kind} {name} has no Keras 3 '
        f'equivalent model_to_estimator can build ({type(e).__name__}: {e}); '
        'give a Keras 3 model.') from e


# compile()'s names of the metrics tf_keras chose by the labels' and the
# outputs' shapes (Keras 3 chooses 'accuracy' and 'acc' so, not the others).
_CHOSEN_BY_SHAPES = {'accuracy': 'accuracy', 'acc': 'accuracy',
                     'crossentropy': 'crossentropy', 'ce': 'crossentropy'}


def _reported_metric_name(metric, weighted: bool) -> str:
  """The key tf_keras's model.evaluate (and so 2.15's Estimator) reported
  a compiled metric by, before any output-name prefix. With TF2 behaviour,
  the name given to compile() or the metric's own; under TF1 behaviour
  (`disable_v2_behavior()`, Keras 2's graph-mode Model) 'acc' and 'ce'
  for 'accuracy'/'acc' and 'crossentropy'/'ce', a function's own name for
  another name ('mae': 'mean_absolute_error'), and 'weighted_' before
  every weighted metric's."""
  if isinstance(metric, str):
    if tf.__internal__.tf2.enabled():
      return metric
    if metric in _CHOSEN_BY_SHAPES:
      suffix = {'accuracy': 'acc', 'crossentropy': 'ce'}[
          _CHOSEN_BY_SHAPES[metric]]
    else:
      resolved = _tf_keras().metrics.get(metric)
      suffix = getattr(resolved, 'name', None) or resolved.__name__
  else:
    suffix = getattr(metric, 'name', None) or metric.__name__
    if tf.__internal__.tf2.enabled():
      return suffix
  return ('weighted_' if weighted else '') + suffix


def _metric_named(name: str, *, reported: str):
  """The Keras 3 metric of a tf_keras metric name (or a function's name),
  reported by `reported`: the name itself where Keras 3 knows it and
  reports it so; else a Keras 3 metric named `reported`, of the function
  tf_keras resolves the name to (tf_keras's aliases, 'cosine_proximity',
  'kullback_leibler_divergence') or, for 'crossentropy' and 'ce' (and
  'accuracy' reported otherwise), chosen by the shapes as tf_keras chose
  it."""
  keras = _keras()
  chosen = _CHOSEN_BY_SHAPES.get(name.lower())
  if chosen == 'accuracy' and reported == name:
    return name  # Keras 3's compile() picks it by the shapes, as tf_keras.
  if chosen is not None:
    return keras.metrics.MeanMetricWrapper(_chosen_by_shapes(chosen),
                                           name=reported)
  try:
    metric = keras.metrics.get(name)
  except ValueError:
    try:
      metric = keras.metrics.get(_tf_keras().metrics.get(name).__name__)
    except (AttributeError, TypeError, ValueError):
      return name  # Unknown to both: Keras 3 refuses it in its words.
  else:
    if reported == name:
      return name
  if not hasattr(metric, 'get_config'):
    return keras.metrics.MeanMetricWrapper(metric, name=reported)
  return type(metric).from_config({**metric.get_config(), 'name': reported})


def _chosen_by_shapes(kind: str) -> Callable:
  """tf_keras's choice for compile()'s 'accuracy' or 'crossentropy' (its
  compile_utils): binary for one output unit, sparse categorical for
  labels of lower rank or of last dimension 1, categorical otherwise."""
  keras = _keras()
  functions = {
      'accuracy': (keras.metrics.binary_accuracy,
                   keras.metrics.sparse_categorical_accuracy,
                   keras.metrics.categorical_accuracy),
      'crossentropy': (keras.metrics.binary_crossentropy,
                       keras.metrics.sparse_categorical_crossentropy,
                       keras.metrics.categorical_crossentropy)}[kind]

  def chosen(y_true, y_pred):
    true_rank, pred_rank = len(y_true.shape), len(y_pred.shape)
    true_last = tf.compat.dimension_value(y_true.shape[-1]) if true_rank else None
    pred_last = tf.compat.dimension_value(y_pred.shape[-1]) if pred_rank else None
    if pred_last == 1:
      return functions[0](y_true, y_pred)
    if true_rank < pred_rank or (true_last == 1 and pred_last != 1):
      return functions[1](y_true, y_pred)
    return functions[2](y_true, y_pred)

  chosen.__name__ = kind
  return chosen


def _optimizer_factory(model, optimizer=None):
  """A function making a fresh Keras 3 optimizer of the model's compiled
  optimizer's (or `optimizer`'s, one of the model's) class and config (read
  now, eagerly: the model_fn is also traced)."""
  keras = _keras()
  optimizer = optimizer or model.optimizer
  if not _is_tf_keras(model):
    config = keras.optimizers.serialize(optimizer)
    return lambda: keras.optimizers.deserialize(config)
  name = type(optimizer).__name__
  cls = getattr(keras.optimizers, name, None)
  if cls is None:
    raise UserInputError(
        f'keras_model={model.name!r}: its tf_keras optimizer {name} has no '
        'Keras 3 class of that name; compile it with a standard optimizer.')
  config = dict(keras_graph_models.optimizer_config(model, optimizer)
                if keras_graph_models.is_graph_built(model) else
                optimizer.get_config())
  # tf_keras reports hyperparameters as numpy scalars, which Keras 3
  # refuses for a learning rate.
  config = {k: v.item() if isinstance(v, np.generic) else v
            for k, v in config.items()}
  # A tf_keras schedule or the legacy optimizers' `decay` (no Keras 3
  # field): a Keras 3 schedule computing the same rates.
  schedule = learning_rates.keras3_learning_rate(optimizer, config)
  if schedule is not None:
    config['learning_rate'] = schedule
  accepted = inspect.signature(cls.__init__).parameters
  config = {k: v for k, v in config.items()
            if k in accepted and k != 'name'}
  return lambda: cls(**config)


def _compile_settings(model) -> Dict[str, Any]:
  """The model's compile() loss, loss_weights, metrics and weighted_metrics,
  as Keras 3 CompileLoss and CompileMetrics take them."""
  if not _is_tf_keras(model):
    config = model._compile_config.config  # pylint: disable=protected-access
    return {key: config.get(key) for key in
            ('loss', 'loss_weights', 'metrics', 'weighted_metrics')}
  if keras_graph_models.is_graph_built(model):
    given = keras_graph_models.compile_arguments(model)
    return {
        'loss': _as_keras3('loss', given['loss'], model.name),
        'loss_weights': given['loss_weights'],
        'metrics': _as_keras3('metric', given['metrics'], model.name),
        'weighted_metrics': _as_keras3('metric', given['weighted_metrics'],
                                       model.name, weighted=True),
    }
  # tf_keras keeps what compile() was given on its containers.
  loss = model.compiled_loss
  metrics = getattr(model, 'compiled_metrics', None)
  return {
      'loss': _as_keras3('loss', loss._user_losses, model.name),  # pylint: disable=protected-access
      'loss_weights': loss._user_loss_weights,  # pylint: disable=protected-access
      'metrics': _as_keras3('metric', getattr(metrics, '_user_metrics', None),
                            model.name),
      'weighted_metrics': _as_keras3(
          'metric', getattr(metrics, '_user_weighted_metrics', None),
          model.name, weighted=True),
  }


def _flat(value, names: List[str]) -> list:
  if isinstance(value, dict):
    return [value.get(name) for name in names]
  if isinstance(value, (list, tuple)):
    return list(value)
  return [value] * len(names) if value is None else [value]


def _compiled_loss(settings, names: List[str], targets, outputs, weights):
  """The compiled loss of this replica's batch, as model.fit computes it:
  each output's loss (its mean over the batch) times its loss weight,
  summed.

  Each output gets a one-output Keras CompileLoss (which resolves names
  like 'mse' as compile() does): a several-output one also creates
  per-output Mean metrics, variables the model_fn must not create. Keras
  scales losses by 1/replicas inside a tf.distribute strategy (its
  trainer sums over replicas); the runtime scales a model_fn's loss
  itself, so the scaling is undone.
  """
  from keras.src.losses import loss as loss_module  # pylint: disable=g-import-not-at-top
  from keras.src.trainers import compile_utils  # pylint: disable=g-import-not-at-top
  predicted = _listed(outputs)
  true = _flat(targets, names)
  sample_weights = (_flat(weights, names) if len(names) > 1 else
                    [weights])
  losses = settings['loss']
  loss_weights = settings['loss_weights']
  total = None
  for i, name in enumerate(names):
    if isinstance(losses, dict):
      loss_fn = losses.get(name)
    elif isinstance(losses, (list, tuple)):
      loss_fn = losses[i]
    else:
      loss_fn = losses
    if loss_fn is None:
      continue  # compile() gave this output no loss.
    if isinstance(loss_weights, dict):
      weight = loss_weights.get(name)
    elif isinstance(loss_weights, (list, tuple)):
      weight = loss_weights[i]
    else:
      weight = None
    value = compile_utils.CompileLoss(loss_fn)(
        true[i], predicted[i], sample_weight=sample_weights[i])
    if weight is not None:
      value = value * weight
    total = value if total is None else total + value
  if total is None:
    raise UserInputError(
        f'The Keras model\'s compiled loss {shorten(losses)} applies to none '
        f'of its outputs {names}.')
  return loss_module.unscale_loss_for_distribution(total)


def _compile_metrics(settings, output_names, labels, outputs):
  """Keras' CompileMetrics of the compiled metrics, built for `labels` and
  `outputs`; None when the model was compiled with none."""
  from keras.src.trainers import compile_utils  # pylint: disable=g-import-not-at-top
  if not settings['metrics'] and not settings['weighted_metrics']:
    return None
  compiled = compile_utils.CompileMetrics(
      settings['metrics'], settings['weighted_metrics'],
      output_names=output_names)
  compiled.build(labels, outputs)
  return compiled


def _metrics_by_name(compiled, metric_names_map) -> Dict[str, Any]:
  """The metric objects of `compiled` (a CompileMetrics, or None), keyed as
  model.evaluate keys them (or by metric_names_map)."""
  metrics = {}
  if compiled is not None:
    # Named as CompileMetrics.result() names them for model.evaluate:
    # '<output>_<metric>' for a metric of one output of several, and a
    # repeated name numbered '_1', '_2', ...
    counts = {}
    for group in compiled._flat_metrics + compiled._flat_weighted_metrics:  # pylint: disable=protected-access
      for metric in (group.metrics if group is not None else []):
        name = metric.name
        if group.output_name:
          name = f'{group.output_name}_{name}'
        if name in counts:
          counts[name] += 1
          name = f'{name}_{counts[name] - 1}'
        else:
          counts[name] = 1
        metrics[name] = metric
  if metric_names_map:
    unknown = sorted(set(metric_names_map) - set(metrics))
    if unknown:
      unmapped = sorted(set(metrics) - set(metric_names_map))
      # 2.15's phrases: it required every metric to be mapped, so a
      # misspelt key also left a metric out ('do not exist').
      also = (f' (the keras model metric names {unmapped} do not exist in '
              'the `metric_names_map` dictionary: misspelt?)'
              if unmapped else '')
      raise UserInputError(
          'Invalid `metric_names_map`. There are unexpected keys in the '
          f'`metric_names_map` dictionary: {unknown}{also}. Expected keys '
          f'(the Keras model\'s metrics): {sorted(metrics)}; '
          'model_to_estimator renames the metrics the map names and keeps '
          'the others.')
    metrics = {metric_names_map.get(k, k): m for k, m in metrics.items()}
  return metrics


@contextlib.contextmanager
def _no_batch_counters():
  """tf_keras models made inside create no step counters.

  A tf_keras model creates three step counters (for fit, evaluate,
  predict) when constructed eagerly but not inside a tf.function: the
  build call would create variables the traced calls do not. They are
  never used here.
  """
  from tf_keras.src.engine import training  # pylint: disable=g-import-not-at-top
  original = training.Model._init_batch_counters  # pylint: disable=protected-access
  training.Model._init_batch_counters = lambda self: None  # pylint: disable=protected-access
  try:
    yield
  finally:
    training.Model._init_batch_counters = original  # pylint: disable=protected-access


def _cloner(model, custom_objects: Optional[Dict[str, Any]] = None):
  """A function building a clone of `model`'s architecture (uncompiled:
  cloning a compiled Keras 3 model serializes its optimizer, which a traced
  call cannot), with `custom_objects` for what its config names (2.15's
  model_to_estimator cloned with them too)."""
  if _is_tf_keras(model):
    if _is_subclassed_tf_keras(model):
      config = model.get_config()
      # Built by its first call, as the model was; from a copy of the
      # config (WideDeepModel.from_config takes its parts out of it).
      make = lambda: type(model).from_config(copy.deepcopy(config))
    else:
      make = lambda: _tf_keras().models.clone_model(model)

    def clone_tf_keras():
      with _no_batch_counters(), _tf_keras().utils.custom_object_scope(
          custom_objects or {}):
        return make()

    return clone_tf_keras
  keras = _keras()
  try:
    with keras.utils.custom_object_scope(custom_objects or {}):
      architecture = type(model).from_config(model.get_config())
  except (NotImplementedError, TypeError, ValueError) as e:
    raise UserInputError(
        f'keras_model={model.name!r} cannot be rebuilt from its config '
        f'({type(e).__name__}: {e}); give a Sequential or functional model, '
        'or a subclassed one with get_config/from_config.') from e
  build_config = model.get_build_config() if model.built else None

  def clone_keras():
    duplicate = keras.models.clone_model(architecture)
    if not duplicate.built and build_config:
      # A subclassed model creates its variables when built: built as the
      # model was, it has them before it is called.
      duplicate.build_from_config(build_config)
    return duplicate

  return clone_keras


def _check_export_outputs(export_outputs, names: List[str]) -> None:
  unknown = set(export_outputs or ()) - set(names)
  if unknown:
    # 2.15's message (see _select on its last lines).
    raise FormattedKeyError(
        'The dictionary passed into export_outputs does not cover requested '
        'export_outputs keys defined in the keras model (export_outputs is '
        'keyed by the Keras model\'s output names).'
        f'\n\tExpected keys: {set(export_outputs)}'
        f'\n\texport_outputs keys: {set(names)}'
        f'\n\tMissed keys: {unknown}')


def _listed(outputs) -> list:
  if isinstance(outputs, dict):
    return list(outputs.values())
  if isinstance(outputs, (list, tuple)):
    return list(outputs)
  return [outputs]


def _compile_view(model, outputs, names: List[str], tf_keras_model: bool):
  """(outputs, output_names) as Keras 3's CompileLoss and CompileMetrics
  take them for `model`, as its compile() would have made them."""
  if tf_keras_model:
    # A list (one tensor for one output) named by the output layers.
    listed = _listed(outputs)
    return (listed if len(listed) > 1 else listed[0],
            names if len(names) > 1 else None)
  return outputs, getattr(model, 'output_names', None)


def _check_export_names(clone, tf_keras_model, *, export_outputs) -> None:
  """Checks export_outputs against the output names a clone of the model
  has, on a batch of zeros (before anything is written); a model whose
  input shapes are not known is checked when the model_fn first runs.
  (metric_names_map is checked when the model_fn first runs in EVAL, as
  2.15 checked it: train_and_evaluate builds the evaluation before
  training.)

  Raises:
    FormattedKeyError: a key that names no output.
  """
  if not export_outputs:
    return
  probe = clone()
  struct = getattr(probe, '_inputs_struct', None)
  if struct is None or tf_keras_model:
    struct = probe.inputs or None
    if struct is not None and len(struct) == 1:
      struct = struct[0]
  if struct is None:
    return
  shapes = [tuple(t.shape) for t in tf.nest.flatten(struct)]
  if any(None in shape[1:] for shape in shapes):
    return
  zeros = tf.nest.map_structure(
      lambda t: tf.zeros((1,) + tuple(t.shape)[1:], t.dtype), struct)
  outputs = probe(zeros, training=False)
  _check_export_outputs(export_outputs, _output_names(probe, outputs))


def _part_optimizers(model):
  """[(optimizer factory, clone -> its variables)] for the optimizers the
  model_fn applies itself (see train_op.py), or None: the runtime
  applies the model's one Keras 3 optimizer."""
  optimizer = getattr(model, 'optimizer', None)
  v1_optimizer = keras_train_op.wrapped_v1_optimizer(optimizer)
  if v1_optimizer is not None:
    return [(keras_train_op.v1_optimizer_factory(v1_optimizer,
                                                   owner=model.name),
             lambda clone: clone.trainable_variables)]
  if not isinstance(optimizer, (list, tuple)):
    return None
  # tf_keras's WideDeepModel compiled with (linear, dnn) optimizers.
  if not (len(optimizer) == 2 and hasattr(model, 'linear_model') and
          hasattr(model, 'dnn_model')):
    raise UserInputError(
        f'keras_model={model.name!r} was compiled with {len(optimizer)} '
        'optimizers; model_to_estimator takes several only for a '
        'WideDeepModel (one for its linear part, one for its DNN part).')
  return [(_optimizer_factory(model, optimizer[0]),
           lambda clone: clone.linear_model.trainable_variables),
          (_optimizer_factory(model, optimizer[1]),
           lambda clone: clone.dnn_model.trainable_variables)]


def _building_graph() -> Optional[tf.Graph]:
  """The graph a model_fn call builds in, seen through the tf.functions it
  is traced in: None for the eager context (the eager engine's calls)."""
  with tf.init_scope():  # Out of every tf.function being traced.
    return (None if tf.executing_eagerly() else
            tf.compat.v1.get_default_graph())


@dataclasses.dataclass
class _Made:
  """What the model_fn made for one mode in one graph (`owner`; None for
  the eager context): the clone, and once made its optimizers and its
  compiled metrics (EVAL)."""

  owner: Optional[tf.Graph]
  model: Any
  optimizers: Optional[List[Any]] = None  # Once the model_fn made them.
  compile_metrics: Any = None  # Keras' CompileMetrics, once made.

  def metrics(self, settings, output_names, labels, outputs, weights,
              metric_names_map) -> Dict[str, Any]:
    """The compiled metrics (see `_metrics_by_name`), made by the first call
    (and by every eager one) and updated with this batch by every call."""
    if self.compile_metrics is None or tf.executing_eagerly():
      self.compile_metrics = _compile_metrics(settings, output_names, labels,
                                              outputs)
    if self.compile_metrics is not None:
      self.compile_metrics.update_state(labels, outputs, sample_weight=weights)
    return _metrics_by_name(self.compile_metrics, metric_names_map)


class _MadePerGraph:
  """What each mode's last build call made (`_Made`).

  The eager engine's build call (eager) makes the clone, the optimizers
  and the compiled metrics; the calls that trace its steps (in the
  tf.functions it runs) use them again, creating no variables; a graph
  engine's build makes its own in its graph. So the model is cloned once
  per operation, as tf.estimator 2.15's model_fn cloned it once per graph
  (a custom layer's constructor, say, runs as often as it did there).
  """

  def __init__(self, *, clone: Callable, make_optimizers: Callable):
    self._clone = clone
    self._make_optimizers = make_optimizers
    self._made = {}

  def made_for(self, mode: str) -> _Made:
    owner = _building_graph()
    last = self._made.get(mode)
    if tf.executing_eagerly() or last is None or last.owner is not owner:
      self._made[mode] = _Made(owner=owner, model=self._clone())
    return self._made[mode]

  def optimizers_for(self, mode: str) -> List[Any]:
    """The optimizers of `mode`'s clone, made on first use: after the
    forward pass, outside the scope that gives the clone the model's
    weights in creation order (an optimizer may create variables when
    constructed, as Keras 3.15's do; a subclassed model creates its own
    when first called)."""
    this = self._made[mode]
    if this.optimizers is None:
      this.optimizers = self._make_optimizers()
    return this.optimizers


@dataclasses.dataclass
class _Forward:
  """What one model_fn call computed: the spec of EVAL and PREDICT; TRAIN's
  loss and the clone it ran (the optimizer is the caller's)."""

  estimator_spec: Optional[EstimatorSpec]
  loss: Any = None
  model: Any = None


def _model_fn_for(keras_model, *, custom_objects, metric_names_map,
                  export_outputs, weights=None, settings=None):
  """The model_fn running `keras_model` (see the module docstring),
  starting from its weights, or from `weights` (in the model's order),
  with its compile settings, or `settings` (`_compile_settings`' result,
  read before)."""
  # Everything read from the Keras model is read now, eagerly: the
  # model_fn is also called while a step is traced. The optimizers first:
  # a model built in a graph reads its optimizer's settings in that graph,
  # and cloning it eagerly swaps its classes (see graph_models).
  # Optimizers the model_fn applies itself (see train_op.py), one
  # factory per part of the model; else the one the runtime applies.
  part_optimizers = _part_optimizers(keras_model)
  if part_optimizers is None:
    new_optimizer = _optimizer_factory(keras_model)
  clone = _cloner(keras_model, custom_objects)
  initial_values = _values_in_creation_order(keras_model, clone,
                                             weights=weights)
  settings = settings or _compile_settings(keras_model)
  tf_keras_model = _is_tf_keras(keras_model)
  subclassed_tf_keras = _is_subclassed_tf_keras(keras_model)
  _check_export_names(clone, tf_keras_model, export_outputs=export_outputs)

  made = _MadePerGraph(
      clone=clone,
      make_optimizers=lambda: ([make() for make, _ in part_optimizers]
                               if part_optimizers is not None else
                               [new_optimizer()]))

  def model_fn(features, labels, mode):
    # Optimizers the model_fn applies itself get gradients taped here.
    with tf.GradientTape(watch_accessed_variables=(
        mode == ModeKeys.TRAIN and part_optimizers is not None)) as tape:
      spec = forward(features, labels, mode)
    optimizers = made.optimizers_for(mode)
    if mode == ModeKeys.TRAIN and part_optimizers is not None:
      parts = [(optimizer, variables_of(spec.model)) for optimizer,
               (_, variables_of) in zip(optimizers, part_optimizers)]
      return EstimatorSpec(mode, loss=spec.loss, train_op=(
          keras_train_op.train_op(tape, spec.loss, parts)))
    if mode == ModeKeys.TRAIN:
      return EstimatorSpec(mode, loss=spec.loss, optimizer=optimizers[0])
    return spec.estimator_spec

  def forward(features, labels, mode) -> _Forward:
    features, weights = _extract_sample_weight_tensors(features)
    with _initial_values_from(initial_values):
      this = made.made_for(mode)
      model = this.model
      outputs = model(_model_inputs(model, features, subclassed_tf_keras),
                      training=mode == ModeKeys.TRAIN)
    names = _output_names(model, outputs)
    predictions = dict(zip(names, _listed(outputs)))
    if mode == ModeKeys.PREDICT:
      return _Forward(_predict_spec(mode, predictions, names, export_outputs))
    outputs, compile_names = _compile_view(model, outputs, names,
                                           tf_keras_model)
    targets = _select('labels', labels, names, isinstance(outputs, dict))
    weights = _sample_weights(weights, names)
    loss = _compiled_loss(settings, names, targets, outputs, weights)
    if model.losses:
      loss = loss + tf.cast(tf.math.add_n(model.losses), loss.dtype)
    if mode == ModeKeys.EVAL:
      return _Forward(EstimatorSpec(
          mode, loss=loss, eval_metric_ops=this.metrics(
              settings, compile_names, targets, outputs, weights,
              metric_names_map)))
    return _Forward(None, loss=loss, model=model)

  if not tf_keras_model:
    # A Keras 3 model is estimator_rt's TF2 API (2.15 took tf_keras models
    # only): its first call is the eager engine's (engine_choice.py), not a
    # graph build that would clone it into a graph for nothing.
    model_fn.eager_engine_reason = (
        f'it is the model_fn of the Keras 3 model {keras_model.name!r}')
  return model_fn


def _model_inputs(model, features, subclassed_tf_keras: bool):
  """What the model_fn calls the cloned `model` on: `features` as its
  inputs take them."""
  if subclassed_tf_keras:
    return _subclassed_inputs(model, features)
  return _select('features', features, _input_names(model),
                 isinstance(getattr(model, '_inputs_struct', None), dict))


def _predict_spec(mode, predictions, names, export_outputs) -> EstimatorSpec:
  """PREDICT's spec: `predictions`, served as 'serving_default' and as each
  of `export_outputs` (output name -> export output class)."""
  _check_export_outputs(export_outputs, names)
  signatures = {'serving_default': outputs_lib.PredictOutput(predictions)}
  for key, output_class in (export_outputs or {}).items():
    signatures[key] = output_class(predictions[key])
  return EstimatorSpec(mode, predictions=predictions,
                       export_outputs=signatures)


def _export_output_class(key: str, cls):
  """An export output class as estimator_rt's: TensorFlow's own
  (`tensorflow.python.saved_model.model_utils.export_output.
  RegressionOutput`, tf.estimator 2.15's tf.estimator.export classes) as
  estimator_rt.export's class of that name."""
  if isinstance(cls, type) and issubclass(cls, outputs_lib.ExportOutput):
    return cls
  own = getattr(outputs_lib, getattr(cls, '__name__', ''), None)
  if (isinstance(cls, type) and isinstance(own, type) and
      issubclass(own, outputs_lib.ExportOutput) and
      any(base.__name__ == 'ExportOutput' for base in cls.__mro__)):
    return own
  raise UserInputError(
      f'export_outputs[{key!r}]={shorten(cls)} must be an export output '
      'class (PredictOutput, RegressionOutput or ClassificationOutput of '
      'tf.estimator.export).')


def _saved_keras_weights(model, model_dir: str, custom_objects):
  """(path, weights in the model's order) of the checkpoint of a tf_keras
  functional or Sequential model's weights in model_dir/keras, or None.

  2.15's model_to_estimator saved the model's weights there (unless a
  checkpoint was there already, which a program may have saved with
  `model.save_weights`) and warm-started from that checkpoint: a model_dir
  keeps starting from the same weights, whatever the model holds now.

  Raises:
    UserInputError: the checkpoint there does not hold this model's
      weights.
  """
  if not _is_tf_keras(model) or _is_subclassed_tf_keras(model):
    return None
  path = tf.train.latest_checkpoint(os.path.join(model_dir, 'keras'))
  if path is None:
    return None
  with _no_batch_counters(), _tf_keras().utils.custom_object_scope(
      custom_objects or {}):
    duplicate = _tf_keras().models.clone_model(model)
  try:
    duplicate.load_weights(path).expect_partial()
  except (tf.errors.OpError, ValueError, AssertionError) as e:
    raise UserInputError(
        f'keras_model={model.name!r}: model_dir/keras holds checkpoint '
        f'{path!r}, which model_to_estimator starts from (as 2.15 did), but '
        f'it does not hold this model\'s weights ({type(e).__name__}: '
        f'{shorten(str(e), limit=200)}); remove it or use another '
        'model_dir.') from e
  logging.info('model_to_estimator: starting from the Keras weights in %s.',
               path)
  return path, [np.array(w.numpy()) for w in duplicate.weights]


def _made_for_keras(estimator) -> None:
  """Sets up model_to_estimator's Estimator, a plain Estimator as 2.15's
  was: its variables start as the Keras model's weights, a trained state,
  so an export before any training exports them (2.15's, warm-started from
  them, did too); its work runs eagerly even when called from a graph
  context (keras_graph_models.eager): the eager engine runs a Keras model.
  """
  estimator._initialization_is_trained = True  # pylint: disable=protected-access
  estimator._work_context = keras_graph_models.eager  # pylint: disable=protected-access


def _keras_model_given(keras_model, keras_model_path, custom_objects):
  """model_to_estimator's Keras model: `keras_model`, or the one saved at
  `keras_model_path`, loaded (exactly one given)."""
  keras = _keras()
  if keras_model is None and keras_model_path is None:
    raise UserInputError(
        'Either `keras_model` or `keras_model_path` needs to be provided: '
        'model_to_estimator takes exactly one of them (got neither).')
  if keras_model is not None and keras_model_path is not None:
    # 2.15's words first, its typo ('specity') included: code matched them.
    raise UserInputError(
        'Please specity either `keras_model` or `keras_model_path`, but not '
        f'both: model_to_estimator got keras_model={shorten(keras_model)} '
        f'and keras_model_path={keras_model_path!r}.')
  if keras_model_path is not None:
    if not tf.io.gfile.exists(keras_model_path):
      raise UserInputError(
          f'keras_model_path={keras_model_path!r} does not exist.')
    keras_model = keras.models.load_model(keras_model_path,
                                          custom_objects=custom_objects)
  return keras_model


def _checked_settings(checkpoint_format, metric_names_map, export_outputs):
  """Checks model_to_estimator's settings; returns `export_outputs` with
  each class as estimator_rt's (`_export_output_class`)."""
  if checkpoint_format not in ('checkpoint', 'saver'):
    raise UserInputError(
        'Checkpoint format must be one of "checkpoint" or "saver". Got '
        f'{checkpoint_format} (model_to_estimator\'s checkpoint_format='
        f'{checkpoint_format!r}).')
  if checkpoint_format == 'saver':
    logging.warning('model_to_estimator: checkpoint_format="saver" has no '
                    'effect: the eager engine writes object-based '
                    'checkpoints.')
  if metric_names_map is not None and not isinstance(metric_names_map, dict):
    raise UserInputError(
        f'metric_names_map={shorten(metric_names_map)} must be a dict from '
        'Keras metric name to Estimator metric name.')
  if export_outputs is not None and not isinstance(export_outputs, dict):
    raise UserInputError(
        f'export_outputs={shorten(export_outputs)} must be a dict from '
        'output name to an export output class.')
  if export_outputs:
    export_outputs = {key: _export_output_class(key, value)
                      for key, value in export_outputs.items()}
  return export_outputs


def _config_and_model_dir(config, model_dir):
  """model_to_estimator's RunConfig and model_dir, as 2.15's made them."""
  from estimator_rt.cluster import run_config as run_config_lib  # pylint: disable=g-import-not-at-top
  config = config if config is not None else run_config_lib.RunConfig()
  if not isinstance(config, run_config_lib.RunConfig):
    raise UserInputError(
        f'config={shorten(config)} must be an estimator_rt.RunConfig.')
  # As 2.15's model_to_estimator: the default session config filled in,
  # and a temporary model_dir made at once (2.15 wrote the model's weights
  # there when called).
  if config.session_config is None:
    config = config.replace(
        session_config=run_config_lib.get_default_session_config())
  if not model_dir and config.model_dir is None:
    model_dir = tempfile.mkdtemp()
    logging.warning('Using temporary folder as model directory: %s',
                    model_dir)
  if config.engine == 'graph':
    raise UserInputError(
        "model_to_estimator: config.engine='graph' cannot run a Keras "
        'model; leave engine unset (the eager engine runs it).')
  return config, model_dir or config.model_dir


def model_to_estimator(keras_model=None, keras_model_path=None,
                       custom_objects=None, model_dir=None, config=None,
                       checkpoint_format='checkpoint', metric_names_map=None,
                       export_outputs=None) -> estimator_lib.Estimator:
  """An Estimator for a compiled Keras model (see the module docstring).

  tf.keras 2.15's signature and defaults.

  Args:
    keras_model: a compiled Keras 3 model (or a compiled tf_keras
      Sequential or functional model). Exclusive with `keras_model_path`.
    keras_model_path: instead, a saved compiled model
      (`keras.models.load_model`: a .keras file, or .h5).
    custom_objects: for loading `keras_model_path`.
    model_dir: the Estimator's model_dir (a temporary one if None, here and
      in `config`).
    config: an estimator_rt RunConfig; its engine must not be 'graph'.
    checkpoint_format: 'checkpoint' (object-based; the only format the
      eager engine writes) or 'saver' (accepted with a warning).
    metric_names_map: {Keras metric name: Estimator metric name}; names it
      does not mention are kept.
    export_outputs: {output name: an export output class of
      estimator_rt.export (PredictOutput, RegressionOutput,
      ClassificationOutput)}: one more signature each, named by the output,
      built from that output; serving_default is always a PredictOutput of
      all outputs.

  Returns:
    An estimator_rt.Estimator whose checkpoints start from the model's
    current weights.

  Raises:
    UserInputError: both or neither of keras_model and keras_model_path; a
      model that is not compiled, has no loss, or cannot be cloned; a bad
      checkpoint_format, config, metric_names_map or export_outputs.
  """
  keras_model = _keras_model_given(keras_model, keras_model_path,
                                   custom_objects)
  _check_model(keras_model, custom_objects, checkpoint_format)
  export_outputs = _checked_settings(checkpoint_format, metric_names_map,
                                     export_outputs)
  config, model_dir = _config_and_model_dir(config, model_dir)
  weights = settings = None
  graph_built = keras_graph_models.is_graph_built(keras_model)
  if graph_built:
    weights = keras_graph_models.weights(keras_model, config.session_config)
  with keras_graph_models.eager():
    if graph_built:
      # Read before anything is cloned (tf_keras swaps the base classes of
      # its model classes when it makes a model in the other mode: the
      # model then no longer looks built in a graph), eagerly (the Keras 3
      # metrics made here must not hold graph variables).
      settings = _compile_settings(keras_model)
    saved = _saved_keras_weights(keras_model, model_dir, custom_objects)
    estimator = estimator_lib.Estimator(
        _model_fn_for(keras_model, custom_objects=custom_objects,
                      metric_names_map=metric_names_map,
                      export_outputs=export_outputs,
                      weights=saved[1] if saved else weights,
                      settings=settings),
        model_dir=model_dir, config=config.replace(engine='eager'))
  _made_for_keras(estimator)
  if saved:
    # Where its starting weights came from, under 2.15's attribute (its
    # engine does not warm-start: the weights are the variables' initial
    # values).
    estimator._warm_start_settings = warm_starting.WarmStartSettings(  # pylint: disable=protected-access
        saved[0])
  return estimator


def model_to_estimator_for_compat(keras_model=None, keras_model_path=None,
                                  custom_objects=None, model_dir=None,
                                  config=None, checkpoint_format=None,
                                  use_v2_estimator=False,
                                  metric_names_map=None,
                                  export_outputs=None):
  """What tf_keras's `tf.keras.estimator.model_to_estimator` calls in
  tensorflow_estimator's keras_lib (through the compatibility layer); its
  `use_v2_estimator` makes no difference here."""
  del use_v2_estimator
  return model_to_estimator(
      keras_model=keras_model, keras_model_path=keras_model_path,
      custom_objects=custom_objects, model_dir=model_dir, config=config,
      checkpoint_format=checkpoint_format or 'checkpoint',
      metric_names_map=metric_names_map, export_outputs=export_outputs)
