"""tf.estimator 2.15's `keras_lib`, over estimator_rt.estimator.keras.model_to_estimator.

`model_to_estimator` (what tf_keras's `tf.keras.estimator.
model_to_estimator` calls here) is the runtime's, and so is the model_fn
it makes (`_create_keras_model_fn`). The module's other names are the
steps 2.15's model_fn was made of, each the runtime's own where it has one
(checking a model, features and labels as the model takes them, sample
weights per output, the compiled metrics by the names model.evaluate
gives them) or a small helper computing what 2.15's did.
"""

import os

import tensorflow as tf

from estimator_rt.estimator.keras import model_to_estimator as runtime
from estimator_rt.core.errors import FormattedKeyError  # pylint: disable=unused-import
from estimator_rt.core.errors import UserInputError
from estimator_rt.estimator.keras.model_to_estimator import _assert_valid_model  # pylint: disable=unused-import
from estimator_rt.estimator.keras.model_to_estimator import _extract_sample_weight_tensors  # pylint: disable=unused-import
from estimator_rt.estimator.keras.model_to_estimator import model_to_estimator_for_compat as model_to_estimator  # pylint: disable=unused-import
from estimator_rt.estimator.keras.model_to_estimator import standardize_sample_weights  # pylint: disable=unused-import
from estimator_rt.core.mode_keys import ModeKeys

_DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


def _floatx():
  import keras  # pylint: disable=g-import-not-at-top
  return keras.config.floatx()


def _cast_tensor_to_floatx(x):
  """`x` cast to Keras's float type (float32 by default), if it is not."""
  return x if x.dtype == _floatx() else tf.cast(x, _floatx())


def _convert_tensor(x):
  """`x` as a tensor (a SparseTensorValue as a SparseTensor)."""
  if not tf.is_tensor(x):
    x = tf.compat.v1.convert_to_tensor_or_sparse_tensor(x)
  return x


def _any_weight_initialized(keras_model):
  """Whether the model's weights hold values: always, outside a graph (as
  in 2.15); in a graph, whether Keras initialized any of them."""
  if keras_model is None:
    return False
  if tf.compat.v1.executing_eagerly_outside_functions():
    return True
  return any(hasattr(weight, '_keras_initialized')
             for layer in keras_model.layers for weight in layer.weights)


def _ordered(what, given, names):
  """`given` (features or labels: None, a list, a dict or one tensor) as a
  list of tensors in `names`' order (a dict's)."""
  if given is None:
    return None
  if isinstance(given, (list, tuple)):
    return [_convert_tensor(x) for x in given]
  if isinstance(given, dict):
    selected = runtime._select(what, given, names, as_dict=True)  # pylint: disable=protected-access
    return [_convert_tensor(selected[name]) for name in names]
  return [_convert_tensor(given)]


def _convert_estimator_io_to_keras(keras_model, features, labels):
  """(input tensors, target tensors, sample weights) of an input_fn's
  features and labels, as the Keras model takes them: lists in the order
  of its inputs and outputs (dicts are looked up by their names; a model
  that does not name them takes 'input_1', ... and 'output_1', ...), a
  dict for a model whose inputs are a dict.

  Raises:
    FormattedKeyError (a KeyError): a dict misses one of the names.
  """
  features, sample_weights = _extract_sample_weight_tensors(features)
  input_names = runtime._input_names(keras_model)  # pylint: disable=protected-access
  inputs = getattr(keras_model, 'inputs', None)
  if isinstance(features, dict) and isinstance(
      getattr(keras_model, '_inputs_struct', None), dict):
    input_tensors = {k: _convert_tensor(v) for k, v in runtime._select(  # pylint: disable=protected-access
        'features', features, input_names, as_dict=True).items()}
  elif not inputs and isinstance(features, dict):
    input_tensors = {k: _convert_tensor(v) for k, v in features.items()}
  else:
    if isinstance(features, dict) and not input_names:
      input_names = [f'input_{i}' for i in range(1, len(features) + 1)]
    input_tensors = _ordered('features', features, input_names)
  output_names = None
  if isinstance(labels, dict):
    outputs = getattr(keras_model, 'outputs', None)
    output_names = (runtime._output_names(keras_model, outputs) if outputs  # pylint: disable=protected-access
                    else [f'output_{i}' for i in range(1, len(labels) + 1)])
  return (input_tensors, _ordered('labels', labels, output_names),
          sample_weights)


def _clone_and_build_model(mode, keras_model, custom_objects, features=None,
                           labels=None, optimizer_config=None):
  """A clone of the Keras model, called on `features` if given (so built
  for them) and, outside PREDICT, compiled as the model was (its optimizer
  of `optimizer_config`, if given, else of the model's own config).

  Raises:
    ValueError: the model cannot be rebuilt from its config.
  """
  del labels  # Compiling takes no labels here (2.15 bound them to it).
  clone = runtime._cloner(keras_model, custom_objects)()  # pylint: disable=protected-access
  if features is not None:
    inputs, _, _ = _convert_estimator_io_to_keras(keras_model, features, None)
    if isinstance(inputs, list) and len(inputs) == 1:
      inputs = inputs[0]
    clone(inputs, training=mode == ModeKeys.TRAIN)
  if mode != ModeKeys.PREDICT and getattr(keras_model, 'optimizer', None):
    optimizer = keras_model.optimizer
    config = optimizer_config or optimizer.get_config()
    settings = runtime._compile_settings(keras_model)  # pylint: disable=protected-access
    clone.compile(optimizer=type(optimizer).from_config(config),
                  loss=settings['loss'], loss_weights=settings['loss_weights'],
                  metrics=settings['metrics'],
                  weighted_metrics=settings['weighted_metrics'])
  return clone


def _convert_keras_metrics_to_estimator(model, metric_names_map=None):
  """The compiled model's metric objects by the names model.evaluate
  gives them (renamed by `metric_names_map`), or None if it was compiled
  without metrics. A model that does not know its outputs (subclassed,
  never called) has them built on its first evaluation instead: None.

  Raises:
    ValueError: `metric_names_map` names a metric the model does not have.
  """
  settings = runtime._compile_settings(model)  # pylint: disable=protected-access
  outputs = getattr(model, 'outputs', None)
  if not (settings['metrics'] or settings['weighted_metrics']) or not outputs:
    return None
  names = runtime._output_names(model, outputs)  # pylint: disable=protected-access
  compiled = runtime._compile_metrics(settings, names, outputs, outputs)  # pylint: disable=protected-access
  return runtime._metrics_by_name(compiled, metric_names_map)  # pylint: disable=protected-access


def _create_keras_model_fn(keras_model, custom_objects=None,
                           save_object_ckpt=False, metric_names_map=None,
                           export_outputs=None):
  """The model_fn model_to_estimator runs the Keras model with (see
  estimator_rt/estimator/keras/model_to_estimator.py), starting from its current weights.
  `save_object_ckpt` makes no difference: the eager engine writes
  object-based checkpoints."""
  del save_object_ckpt
  if export_outputs:
    export_outputs = {key: runtime._export_output_class(key, value)  # pylint: disable=protected-access
                      for key, value in export_outputs.items()}
  return runtime._model_fn_for(  # pylint: disable=protected-access
      keras_model, custom_objects=custom_objects,
      metric_names_map=metric_names_map, export_outputs=export_outputs)


_KERAS_DIR = 'keras'
_KERAS_CHECKPOINT = 'keras_model.ckpt'


def _save_first_checkpoint(keras_model, custom_objects, config,
                           save_object_ckpt):
  """The checkpoint of the Keras model's weights in model_dir/keras that
  model_to_estimator starts from: the one there, or one written now of
  the model's current weights (object-based, whatever
  `save_object_ckpt`). Only tf_keras functional and Sequential models are
  started from such a checkpoint; a Keras 3 model starts from its own
  weights and writes none.

  Raises:
    ValueError: a Keras 3 model.
  """
  del custom_objects, save_object_ckpt
  keras_dir = os.path.join(config.model_dir, _KERAS_DIR)
  latest = tf.train.latest_checkpoint(keras_dir)
  if latest:
    return latest
  if not runtime._is_tf_keras(keras_model) or runtime._is_subclassed_tf_keras(  # pylint: disable=protected-access
      keras_model):
    raise UserInputError(
        f'_save_first_checkpoint: keras_model={keras_model.name!r} is not a '
        'tf_keras functional or Sequential model; model_to_estimator starts '
        'other models from their own weights and saves no first '
        'checkpoint.')
  tf.io.gfile.makedirs(keras_dir)
  path = os.path.join(keras_dir, _KERAS_CHECKPOINT)
  keras_model.save_weights(path)
  return path


def _get_file_from_google_storage(keras_model_path, model_dir):
  """A copy of the saved Keras model at `keras_model_path` (gs:// or
  storage.googleapis.com/<bucket>/<object>) as model_dir/keras/
  keras_model.h5, read through TensorFlow's filesystems.

  Raises:
    ValueError: it cannot be read.
  """
  path = keras_model_path
  for prefix in ('https://storage.googleapis.com/', 'storage.googleapis.com/'):
    if path.startswith(prefix):
      path = 'gs://' + path[len(prefix):]
  keras_dir = os.path.join(model_dir, _KERAS_DIR)
  tf.io.gfile.makedirs(keras_dir)
  file_name = os.path.join(keras_dir, 'keras_model.h5')
  try:
    tf.io.gfile.copy(path, file_name, overwrite=True)
  except tf.errors.OpError as e:
    raise UserInputError(
        'Failed to download keras model, please check environment variable '
        'GOOGLE_APPLICATION_CREDENTIALS and model path storage.googleapis.com/'
        f'{{bucket}}/{{object}}: reading {path!r} failed with '
        f'{type(e).__name__}: {e}') from e
  tf.compat.v1.logging.info(f'Saving model to {file_name}')
  return file_name
