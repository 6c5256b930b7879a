"""What tf.estimator's TPUEstimator(use_tpu=True) checked on the host while
it built a TPU program, before the TPU ran anything.

estimator_rt refuses to run a TPU program (there is no TPU here), but a
program written for one should first meet the errors tf.estimator gave it
for its own input_fn and model_fn: `check_program` builds them once in a
scratch graph, as tf.estimator's host did (the input_fn with the mode's
batch size, the model_fn on one batch; nothing is run, nothing written),
and raises tf.estimator's errors:

  - a feature or label without a static shape (TPU programs are compiled
    for fixed shapes; in prediction the batch dimension is the one
    tf.estimator padded to the batch size);
  - a model_fn without `labels` given labels, or without `params`;
  - an EstimatorSpec with training_chief_hooks;
  - a TPUEstimatorSpec's prediction without a static batch dimension.

What tf.estimator built only for a TPU (the TPU context, sharding, TPU
ops) is not built, so a model_fn that needs it may fail here for want of
a TPU: any error other than these checks is left to the refusal that
follows.
"""

from typing import Any, Callable

from absl import logging
import tensorflow as tf

from estimator_rt.inputs import pipeline as inputs
from estimator_rt.core import user_fns
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.core.spec import EstimatorSpec


class _NotChecked(Exception):
  """The program cannot be built further without a TPU."""


def _static_shapes(value: Any, name: str, batch_size, mode: str) -> Any:
  """`value`'s tensors, with the batch dimension tf.estimator padded to in
  prediction.

  Raises:
    UserInputError: a tensor whose shape is not fully defined.
  """

  def check(tensor):
    if not isinstance(tensor, tf.Tensor):
      return tensor
    if mode == ModeKeys.PREDICT and tensor.shape.rank:
      # tf.estimator padded each prediction batch to the batch size.
      tensor = tf.identity(tensor)
      tensor.set_shape([batch_size] + tensor.shape.as_list()[1:])
    if not tensor.shape.is_fully_defined():
      raise UserInputError(
          f'The {name} to the model returned by input_fn must have static '
          f'shape. Tensor: {tensor}')
    return tensor

  return tf.nest.map_structure(check, value)


def _first_batch(input_fn: Callable, mode: str, params: dict, config):
  role = {ModeKeys.TRAIN: 'train', ModeKeys.EVAL: 'eval'}.get(mode,
                                                              'predict')
  try:
    result = user_fns.call_input_fn(input_fn, params, role=role,
                                    config=config, allow_tensors=True)
  except UserInputError as e:
    if e.__cause__ is not None and not isinstance(e.__cause__,
                                                  UserInputError):
      # The input_fn raised: it may want what only a TPU gave it.
      raise _NotChecked(e.__cause__) from e.__cause__
    raise
  if isinstance(result, tf.data.Dataset):
    result = tf.compat.v1.data.make_initializable_iterator(result).get_next()
  return inputs.split_element(result)


def _call_model_fn(model_fn: Callable, features, labels, mode: str,
                   params: dict, config):
  args = user_fns.declared_args(model_fn)

  def takes(name):
    return '*' in args or name in args

  if labels is not None and not takes('labels'):
    raise UserInputError(
        'model_fn does not take labels, but input_fn returns labels '
        f'(model_fn {user_fns.fn_name(model_fn)}).')
  if not takes('params'):
    raise UserInputError(
        f'model_fn ({user_fns.fn_name(model_fn)}) does not include params '
        'argument, required by TPUEstimator to pass batch size as '
        "params['batch_size'].")
  kwargs = {name: value for name, value in (
      ('labels', labels), ('mode', mode), ('params', params),
      ('config', config)) if takes(name)}
  try:
    return model_fn(features=features, **kwargs)
  except UserInputError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    raise _NotChecked(e) from e


def _check_spec(spec) -> None:
  if isinstance(spec, EstimatorSpec):
    if spec.training_chief_hooks:
      raise UserInputError(
          'training_chief_hooks returned by EstimatorSpec is not supported '
          'in TPUEstimator. If you want to pass training hooks, please pass '
          'via training_hooks.')
    return
  predictions = getattr(spec, 'predictions', None)
  if getattr(spec, 'mode', None) != ModeKeys.PREDICT or predictions is None:
    return
  if not isinstance(predictions, dict):
    raise UserInputError(
        'TPUEstimatorSpec.predictions must be dict of Tensors (got '
        f'{type(predictions).__name__}).')
  for key, tensor in predictions.items():
    if not tensor.shape.rank or tensor.shape.as_list()[0] is None:
      raise UserInputError(
          f'The tensor with key ({key}) in TPUEstimatorSpec.predictions has '
          f'dynamic shape (should be static). Tensor: {tensor}')


def check_program(model_fn: Callable, input_fn: Callable, mode: str,
                  params: dict, config, batch_size: int) -> None:
  """Builds `input_fn` and `model_fn` for `mode` in a scratch graph and
  raises tf.estimator's errors for them (see the module docstring).

  Raises:
    UserInputError: what tf.estimator raised while building the program.
  """
  params = dict(params, batch_size=batch_size, use_tpu=True)
  with tf.Graph().as_default():
    tf.compat.v1.train.create_global_step()
    try:
      features, labels = _first_batch(input_fn, mode, params, config)
      features = _static_shapes(features, 'features', batch_size, mode)
      if labels is not None:
        labels = _static_shapes(labels, 'labels', batch_size, mode)
      _check_spec(_call_model_fn(model_fn, features, labels, mode, params,
                                 config))
    except _NotChecked as e:
      logging.info('TPUEstimator: the %s program was checked up to where '
                   'it needs a TPU (%s).', mode, user_fns.describe_exception(
                       e.__cause__))
