"""Export outputs: the serving signatures a model_fn's EstimatorSpec names.

`EstimatorSpec(export_outputs={name: output})` takes these (checked in
spec.py); the export writes each one's SignatureDef (export/saved_model.py,
graph/saved_model.py). Predict, classify and regress outputs serve a
SavedModel; `TrainOutput` and `EvalOutput` are the signatures of a TRAIN or
EVAL export (TF1-style model_fns), named as tf.estimator 2.15 named them.
They are public as `estimator_rt.export.PredictOutput`, ... (tf.estimator's
`export` namespace).
"""

from typing import Any, Callable, Dict, Mapping, Optional

import tensorflow as tf
from tensorflow.python.saved_model import signature_constants  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError

class ExportOutput:
  """One signature of an export, from the model_fn's `export_outputs`.

  Subclasses define `signature_def`; a program's own subclass (2.15's API)
  may define `as_signature_def` instead.
  """

  def signature_def(self, receiver_tensors: Mapping[str, tf.Tensor]):
    """The SignatureDef for `receiver_tensors`, or None if this output
    cannot be served from them (then it is left out, with a warning).

    By default, `as_signature_def`'s, None where it raises a ValueError
    (2.15's export left such a signature out)."""
    if type(self).as_signature_def is ExportOutput.as_signature_def:
      return None
    try:
      return self.as_signature_def(receiver_tensors)
    except ValueError:
      return None

  def as_signature_def(self, receiver_tensors: Mapping[str, tf.Tensor]):
    """tf.estimator's name: the SignatureDef for `receiver_tensors`.

    Raises:
      UserInputError: this output cannot be served from them.
    """
    if type(self).signature_def is ExportOutput.signature_def:
      # 2.15's abstract method, whose body a subclass's super() call ran
      # (ABCMeta was not in effect: 2.15 set Python 2's `__metaclass__`):
      # None.
      return None
    signature = self.signature_def(receiver_tensors)
    if signature is None:
      raise UserInputError(_NOT_SERVABLE.format(
          kind=self._SIGNATURE_KIND or type(self).__name__,
          received=dict(receiver_tensors)))
    return signature

  # What a classify or regress signature's error names it (a subclass's).
  _SIGNATURE_KIND = None


# TensorFlow's words (export_output.py) for a classify or regress signature
# asked of inputs other than one string tensor.
_NOT_SERVABLE = (
    '{kind} signatures can only accept a single tensor input of type '
    'tf.string. Please check to make sure that you have structured the '
    'serving_input_receiver_fn so that it creates a single string '
    'placeholder. If your model function expects multiple inputs, then use '
    '`tf.io.parse_example()` to parse the string into multiple tensors.\n '
    'Received: {received}')


def _named_tensors(outputs) -> Dict[str, Any]:
  """A PredictOutput's `outputs` as 2.15 checked them: a lone tensor named
  'output'; each key a string (a tuple of strings joined with SEPARATOR),
  each value a Tensor.

  Raises:
    UserInputError: (a ValueError) in 2.15's words.
  """
  if not isinstance(outputs, dict):
    outputs = {'output': outputs}
  named = {}
  for key, value in outputs.items():
    key = _output_key(key, 'Prediction')
    if not isinstance(value, tf.Tensor):
      raise UserInputError(
          f'Prediction output value must be a Tensor; got {value}.')
    named[key] = value
  return named


class PredictOutput(ExportOutput):
  """A predict signature returning `outputs` (a tensor, named 'output', or
  a dict of tensors)."""

  def __init__(self, outputs):
    self._outputs = _named_tensors(outputs)

  @property
  def outputs(self) -> Dict[str, Any]:
    return self._outputs

  def signature_def(self, receiver_tensors):
    return tf.compat.v1.saved_model.predict_signature_def(
        dict(receiver_tensors), self.outputs)


def single_string_input(receiver_tensors) -> Optional[tf.Tensor]:
  if len(receiver_tensors) != 1:
    return None
  tensor = next(iter(receiver_tensors.values()))
  return tensor if tensor.dtype == tf.string else None


def _check_dtype(value, what: str, wanted: str,
                 dtype_ok: Callable[[tf.DType], bool]) -> None:
  """Raises 2.15's error unless `value` is a Tensor whose dtype is ok."""
  if not (isinstance(value, tf.Tensor) and dtype_ok(value.dtype)):
    raise UserInputError(f'{what} must be a {wanted} Tensor; got {value}')


class ClassificationOutput(ExportOutput):
  """A classify signature (`scores`, a float Tensor, and/or `classes`, a
  string Tensor); it needs a single string input (serialized Examples), as
  TensorFlow Serving's Classify API does.

  Raises:
    UserInputError: (a ValueError, in 2.15's words) neither is given, or one
      is not a Tensor of its dtype.
  """

  _SIGNATURE_KIND = 'Classification'

  def __init__(self, scores=None, classes=None):
    if scores is not None:
      _check_dtype(scores, 'Classification scores', 'float32',
                   lambda dtype: dtype.is_floating)
    if classes is not None:
      _check_dtype(classes, 'Classification classes', 'string',
                   lambda dtype: dtype == tf.string)
    if scores is None and classes is None:
      raise UserInputError(
          'Cannot create a ClassificationOutput with empty arguments. At '
          'least one of `scores` and `classes` must be defined.')
    self._scores = scores
    self._classes = classes

  @property
  def scores(self):
    return self._scores

  @property
  def classes(self):
    return self._classes

  def signature_def(self, receiver_tensors):
    examples = single_string_input(receiver_tensors)
    if examples is None:
      return None
    return tf.compat.v1.saved_model.classification_signature_def(
        examples, self.classes, self.scores)


class RegressionOutput(ExportOutput):
  """A regress signature returning `value` (a float Tensor); it needs a
  single string input (serialized Examples), as TensorFlow Serving's
  Regress API does.

  Raises:
    UserInputError: (a ValueError, in 2.15's words) `value` is not a float
      Tensor.
  """

  _SIGNATURE_KIND = 'Regression'

  def __init__(self, value):
    _check_dtype(value, 'Regression output value', 'float32',
                 lambda dtype: dtype.is_floating)
    self._value = value

  @property
  def value(self):
    return self._value

  def signature_def(self, receiver_tensors):
    examples = single_string_input(receiver_tensors)
    if examples is None:
      return None
    return tf.compat.v1.saved_model.regression_signature_def(examples,
                                                             self.value)


# What the signature of a TRAIN or EVAL export names its outputs, as
# tf.estimator 2.15 (TensorFlow's `_SupervisedOutput`) named them:
# `loss`, `predictions` (or `predictions/<key>`), and per metric
# `metrics/<name>/value` and `metrics/<name>/update_op`. A reader of such a
# SavedModel (canned/saved_model_outputs.py) splits the names at SEPARATOR.
SEPARATOR = '/'
LOSS_NAME = 'loss'
PREDICTIONS_NAME = 'predictions'
METRICS_NAME = 'metrics'
METRIC_VALUE_SUFFIX = 'value'
METRIC_UPDATE_SUFFIX = 'update_op'


def _output_key(key: Any, what: str) -> str:
  """A key of a supervised output's dict: a string, or a tuple of strings
  (a multi-head model's), joined with SEPARATOR."""
  if isinstance(key, tuple):
    key = SEPARATOR.join(key)
  if not isinstance(key, str):
    raise UserInputError(f'{what} output key must be a string; got {key!r}.')
  return key


def _prefixed(key: str, prefix: str) -> str:
  """`key` under `prefix` (`prefix/key`), unless it starts with it already
  (a lone tensor's key is the prefix itself)."""
  return key if key.startswith(prefix) else f'{prefix}{SEPARATOR}{key}'


def _metric_pair(name: str, metric: Any):
  """(value, update tensor) of one of the spec's eval_metric_ops: a
  `(value, update_op)` pair, or a metric object with `result()` and the
  `updates` its update_state calls made (a Keras 2 metric). An update that
  is an op becomes a tensor that runs it (a signature holds tensors only)."""
  if isinstance(metric, (tuple, list)) and len(metric) == 2:
    value, update = metric
  elif hasattr(metric, 'result') and getattr(metric, 'updates', None):
    value, update = metric.result(), tf.group(*metric.updates)
  else:
    raise UserInputError(
        f'metrics[{name!r}] must be a (value, update_op) pair or a metric '
        f'whose update_state was called; got {shorten(metric)}.')
  if not isinstance(value, tf.Tensor):
    raise UserInputError(
        f'{name} output value must be a Tensor; got {shorten(value)}.')
  if isinstance(update, tf.Operation):
    with tf.control_dependencies([update]):
      update = tf.constant([], name='metric_op_wrapper')
  elif not isinstance(update, tf.Tensor):
    update = getattr(update, 'op', update)  # A variable's assign.
    if not isinstance(update, tf.Operation):
      raise UserInputError(
          f'{name} update_op must be a Tensor or Operation; got '
          f'{shorten(update)}.')
    with tf.control_dependencies([update]):
      update = tf.constant([], name='metric_op_wrapper')
  return value, update


class _SupervisedOutput(ExportOutput):
  """The signature of a TRAIN or EVAL export: its outputs are the loss,
  the predictions and the metrics' values and update ops, named as
  tf.estimator 2.15 named them (see SEPARATOR above); its inputs are the
  receiver's features and labels.

  Args:
    loss: a tensor, or a dict of them.
    predictions: a tensor, or a dict of them.
    metrics: {name: (value, update_op)} (or a Keras 2 metric object), or
      one pair.

  Raises:
    UserInputError: (a ValueError) a key that is not a string, or a value
      that is not a tensor.
  """

  method_name = None  # The SignatureDef's method name (a subclass's).
  LOSS_NAME = LOSS_NAME
  PREDICTIONS_NAME = PREDICTIONS_NAME
  METRICS_NAME = METRICS_NAME
  METRIC_VALUE_SUFFIX = METRIC_VALUE_SUFFIX
  METRIC_UPDATE_SUFFIX = METRIC_UPDATE_SUFFIX

  def __init__(self, loss=None, predictions=None, metrics=None):
    self._loss = (None if loss is None else
                  self._tensors(loss, LOSS_NAME))
    self._predictions = (None if predictions is None else
                         self._tensors(predictions, PREDICTIONS_NAME))
    self._metrics = None if metrics is None else self._metric_tensors(metrics)

  @staticmethod
  def _tensors(value: Any, prefix: str) -> Dict[str, Any]:
    named = value if isinstance(value, Mapping) else {prefix: value}
    found = {}
    for key, tensor in named.items():
      key = _output_key(key, prefix)
      if not isinstance(tensor, (tf.Tensor, tf.SparseTensor)):
        raise UserInputError(
            f'{prefix} output value must be a Tensor; got {shorten(tensor)}.')
      found[_prefixed(key, prefix)] = tensor
    return found

  @staticmethod
  def _metric_tensors(metrics: Any) -> Dict[str, tf.Tensor]:
    if not isinstance(metrics, Mapping):
      metrics = {METRICS_NAME: metrics}
    found = {}
    for key, metric in metrics.items():
      name = _prefixed(_output_key(key, METRICS_NAME), METRICS_NAME)
      value, update = _metric_pair(name, metric)
      found[f'{name}{SEPARATOR}{METRIC_VALUE_SUFFIX}'] = value
      found[f'{name}{SEPARATOR}{METRIC_UPDATE_SUFFIX}'] = update
    return found

  @property
  def loss(self) -> Optional[Dict[str, Any]]:
    return self._loss

  @property
  def predictions(self) -> Optional[Dict[str, Any]]:
    return self._predictions

  @property
  def metrics(self) -> Optional[Dict[str, Any]]:
    return self._metrics

  def signature_def(self, receiver_tensors):
    if not receiver_tensors:
      raise UserInputError(
          f'{self.method_name} `inputs` cannot be None or empty: a '
          f'{type(self).__name__} needs the receiver\'s features and labels.')
    outputs = {}
    for group in (self._loss, self._predictions, self._metrics):
      outputs.update(group or {})
    info = tf.compat.v1.saved_model.build_tensor_info
    return tf.compat.v1.saved_model.build_signature_def(
        {key: info(tensor) for key, tensor in receiver_tensors.items()},
        {key: info(tensor) for key, tensor in outputs.items()},
        self.method_name)


class TrainOutput(_SupervisedOutput):
  """The signature of a TRAIN export (method
  `tensorflow/supervised/training`): loss, predictions, metrics. The train
  op itself is kept in the MetaGraph's `saved_model_train_op` collection."""

  method_name = signature_constants.SUPERVISED_TRAIN_METHOD_NAME


class EvalOutput(_SupervisedOutput):
  """The signature of an EVAL export (method `tensorflow/supervised/eval`):
  loss, predictions, metrics."""

  method_name = signature_constants.SUPERVISED_EVAL_METHOD_NAME
