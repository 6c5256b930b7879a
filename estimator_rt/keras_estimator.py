"""`model_to_estimator`: an Estimator that trains, evaluates, predicts with
and exports a compiled Keras model, as `tf.keras.estimator.
model_to_estimator` did with tf.estimator 2.15.

The Estimator's model_fn (run by the eager engine) calls a clone of the
model on the features:

  - features: a dict keyed by the model's input names, or one tensor for a
    one-input model; labels likewise by output names, or one tensor;
  - TRAIN: the compiled loss (with the model's regularization losses), the
    compiled optimizer (a fresh one of the same config: the runtime
    differentiates, scales across replicas and applies it);
  - EVAL: the compiled metrics under the names `model.evaluate` gives them
    (renamed by `metric_names_map`), and 'loss';
  - PREDICT: the outputs keyed by the model's output names; the export's
    serving_default signature is a PredictOutput of them (plus one
    signature per `export_outputs` entry, as 2.15).

The estimator starts from the Keras model's current weights, as 2.15's
did: the clone's variables take them as initial values. The Keras model
itself is not modified.

Not supported: a tf_keras (Keras 2) model (refused in one line: give a
Keras 3 model), a subclassed model without input names (features must be
one tensor then), `checkpoint_format='saver'` (the eager engine writes
object-based checkpoints; accepted with a warning).
"""

import contextlib

from absl import logging
import tensorflow as tf

from estimator_rt import estimator as estimator_lib
from estimator_rt import export as export_lib
from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.spec import EstimatorSpec


def _keras():
  import keras  # pylint: disable=g-import-not-at-top
  return keras


def _check_model(model) -> None:
  keras = _keras()
  if not isinstance(model, keras.Model):
    raise UserInputError(
        f'keras_model={model!r} is not a Keras 3 model (keras.Model); '
        'a tf_keras (Keras 2) model is not supported by estimator_rt\'s '
        'model_to_estimator: build it with keras (Keras 3).')
  if getattr(model, 'optimizer', None) is None or not getattr(
      model, '_compile_config', None):
    raise UserInputError(
        f'keras_model {model.name!r} is not compiled; call model.compile('
        'optimizer=..., loss=..., metrics=...) first.')


@contextlib.contextmanager
def _initial_values_from(values):
  """Variables created inside take, in creation order, `values` (the
  Keras model's weights: a clone is built in the same order); anything
  created after them (metrics) is left alone."""
  created = [0]

  def creator(next_creator, **kwargs):
    index = created[0]
    if index < len(values):
      created[0] += 1
      value = values[index]
      kwargs['initial_value'] = lambda: tf.constant(value)
      kwargs.pop('shape', None)
    return next_creator(**kwargs)

  with tf.variable_creator_scope(creator):
    yield


def _names(tensors, prefix):
  return [getattr(t, 'name', None) or f'{prefix}_{i + 1}'
          for i, t in enumerate(tensors)]


def _as_inputs(model, features):
  names = _names(model.inputs or [], 'input')
  if isinstance(features, dict):
    missing = sorted(set(names) - set(features))
    if missing:
      raise UserInputError(
          f'features {sorted(features)} do not cover the Keras model\'s '
          f'inputs {names}: missing {missing}.')
    values = [features[name] for name in names]
    return values[0] if len(values) == 1 else values
  return features


def _as_targets(model, labels):
  if isinstance(labels, dict):
    return [labels[name] for name in model.output_names]
  return labels


def _compiled_metrics(config, output_names, labels, outputs,
                      metric_names_map):
  """Metric objects of the model's compile() metrics (`config`), updated
  with this batch, keyed as model.evaluate keys them (or by
  metric_names_map)."""
  from keras.src.trainers import compile_utils  # pylint: disable=g-import-not-at-top
  compiled = compile_utils.CompileMetrics(
      config.get('metrics'), config.get('weighted_metrics'),
      output_names=output_names)
  compiled.build(labels, outputs)
  compiled.update_state(labels, outputs)
  metrics = {}
  for group in compiled._flat_metrics + compiled._flat_weighted_metrics:  # pylint: disable=protected-access
    for metric in (group.metrics if group is not None else []):
      metrics[metric.name] = metric
  if metric_names_map:
    unknown = sorted(set(metric_names_map) - set(metrics))
    if unknown:
      raise UserInputError(
          f'metric_names_map keys {unknown} are not among the model\'s '
          f'metrics {sorted(metrics)}.')
    metrics = {metric_names_map.get(k, k): m for k, m in metrics.items()}
  return metrics


def _model_fn_for(keras_model, *, metric_names_map, export_outputs):
  keras = _keras()
  optimizer_config = keras.optimizers.serialize(keras_model.optimizer)
  # Read now, eagerly: the model_fn is also traced. The architecture is
  # cloned uncompiled (cloning a compiled model serializes its optimizer,
  # which a traced call cannot).
  initial_values = [w.numpy() for w in keras_model.weights]
  try:
    architecture = type(keras_model).from_config(keras_model.get_config())
  except (NotImplementedError, TypeError, ValueError) as e:
    raise UserInputError(
        f'keras_model {keras_model.name!r} cannot be rebuilt from its '
        f'config ({type(e).__name__}: {e}); give a Sequential or functional '
        'model, or a subclassed one with get_config/from_config.') from e
  compile_config = keras_model._compile_config.config  # pylint: disable=protected-access

  def model_fn(features, labels, mode):
    with _initial_values_from(initial_values):
      model = keras.models.clone_model(architecture)
    inputs = _as_inputs(model, features)
    outputs = model(inputs, training=mode == ModeKeys.TRAIN)
    listed = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    predictions = dict(zip(model.output_names, listed))
    if mode == ModeKeys.PREDICT:
      signatures = {'serving_default': export_lib.PredictOutput(predictions)}
      for key, output_class in (export_outputs or {}).items():
        if key not in predictions:
          raise UserInputError(
              f'export_outputs key {key!r} is not one of the model\'s '
              f'outputs {sorted(predictions)}.')
        signatures[key] = output_class(predictions[key])
      return EstimatorSpec(mode, predictions=predictions,
                           export_outputs=signatures)
    targets = _as_targets(model, labels)
    # The compiled loss, as model.fit computes it (not model.compile on the
    # clone: that serializes the optimizer, which a traced call cannot).
    from keras.src.trainers import compile_utils  # pylint: disable=g-import-not-at-top
    compiled_loss = compile_utils.CompileLoss(
        compile_config['loss'], compile_config.get('loss_weights'),
        output_names=model.output_names)
    compiled_loss.build(targets, outputs)
    loss = compiled_loss(targets, outputs)
    if model.losses:
      loss = loss + tf.math.add_n(model.losses)
    if mode == ModeKeys.EVAL:
      return EstimatorSpec(mode, loss=loss, eval_metric_ops=_compiled_metrics(
          compile_config, model.output_names, targets, outputs,
          metric_names_map))
    return EstimatorSpec(mode, loss=loss, optimizer=keras.optimizers.deserialize(
        optimizer_config))

  return model_fn


def model_to_estimator(keras_model=None, keras_model_path=None,
                       custom_objects=None, model_dir=None, config=None,
                       checkpoint_format='checkpoint', metric_names_map=None,
                       export_outputs=None) -> estimator_lib.Estimator:
  """An Estimator for a compiled Keras model (see the module docstring).

  Args:
    keras_model: a compiled Keras 3 model.
    keras_model_path: instead, a saved model file (keras.models.load_model).
    custom_objects: for loading `keras_model_path`.
    model_dir: the Estimator's model_dir.
    config: a RunConfig.
    checkpoint_format: 'checkpoint' (object-based; the only format here).
    metric_names_map: {Keras metric name: estimator metric name}.
    export_outputs: {output name: an export output class}, extra
      signatures (serving_default is always a PredictOutput).
  """
  keras = _keras()
  if (keras_model is None) == (keras_model_path is None):
    raise UserInputError(
        'model_to_estimator: give exactly one of keras_model and '
        f'keras_model_path (got keras_model={keras_model!r}, '
        f'keras_model_path={keras_model_path!r}).')
  if keras_model_path is not None:
    keras_model = keras.models.load_model(keras_model_path,
                                          custom_objects=custom_objects)
  _check_model(keras_model)
  if checkpoint_format not in ('checkpoint', 'saver'):
    raise UserInputError(
        f'checkpoint_format={checkpoint_format!r} must be "checkpoint" or '
        '"saver".')
  if checkpoint_format == 'saver':
    logging.warning('model_to_estimator: checkpoint_format="saver" has no '
                    'effect: the eager engine writes object-based '
                    'checkpoints.')
  from estimator_rt.run_config import RunConfig  # pylint: disable=g-import-not-at-top
  config = config if config is not None else RunConfig()
  if config.engine == 'graph':
    raise UserInputError(
        'model_to_estimator: RunConfig(engine="graph") cannot run a Keras 3 '
        'model; leave engine unset (the eager engine runs it).')
  return estimator_lib.Estimator(
      _model_fn_for(keras_model, metric_names_map=metric_names_map,
                    export_outputs=export_outputs),
      model_dir=model_dir, config=config.replace(engine='eager'))


def model_to_estimator_for_compat(keras_model=None, keras_model_path=None,
                                  custom_objects=None, model_dir=None,
                                  config=None, checkpoint_format=None,
                                  use_v2_estimator=False,
                                  metric_names_map=None,
                                  export_outputs=None):
  """What tf_keras's `tf.keras.estimator.model_to_estimator` calls in
  tensorflow_estimator's keras_lib (through the compatibility layer)."""
  del use_v2_estimator
  return model_to_estimator(
      keras_model=keras_model, keras_model_path=keras_model_path,
      custom_objects=custom_objects, model_dir=model_dir, config=config,
      checkpoint_format=checkpoint_format or 'checkpoint',
      metric_names_map=metric_names_map, export_outputs=export_outputs)


