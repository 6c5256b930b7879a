"""SavedModel export: receivers, and the eager engine's save.

The serving signature's inputs are, in order of preference: what a
`serving_input_fn` describes, or the features of an input_fn's dataset with
the batch dimension left open. The eager engine's export holds the model
variables (restored from a checkpoint) and one concrete function; it loads
with `tf.saved_model.load` in a process that has never seen the model_fn.

tf.estimator's receivers are here too: the serving ones, and for TRAIN and
EVAL exports (graph/saved_model.py, TF1-style model_fns) the receivers of
features and labels, with the tags and signature keys of each mode's
MetaGraph. The outputs a signature returns are core/export_outputs.py's.
"""

import collections
import contextlib
import os
from typing import Any, Callable, Dict, Mapping, Optional

from absl import logging
import tensorflow as tf
from tensorflow.python.saved_model import signature_constants  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.saved_model import tag_constants  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import surface_user_errors
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.export_outputs import ClassificationOutput
from estimator_rt.core.export_outputs import ExportOutput
from estimator_rt.core.export_outputs import PredictOutput
from estimator_rt.core.export_outputs import RegressionOutput
from estimator_rt.core.export_outputs import single_string_input
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.export import export_dirs

SINGLE_FEATURE_NAME = 'features'


# What tf.estimator named a lone tensor given where a dict was expected.
SINGLE_NAMES = {
    'feature': 'feature',
    'label': 'label',
    'receiver_tensor': 'input',
    'receiver_tensors_alternative': 'input',
}


def _is_labeled_tensor(value: Any) -> bool:
  # tf.estimator's carve-out for LabeledTensor: an object with a `.tensor`
  # that converts to a tensor is accepted as one.
  if not hasattr(value, 'tensor'):
    return False
  try:
    tf.convert_to_tensor(value)
  except (TypeError, ValueError):
    return False
  return True


def check_tensor(tensor: Any, name: Any, what: str) -> None:
  """Raises UserInputError (tf.estimator's ValueError, with its words)
  unless `tensor`, `name` of `what`, is a Tensor, SparseTensor or
  RaggedTensor (or a LabeledTensor)."""
  if not isinstance(tensor, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor)
                    ) and not _is_labeled_tensor(tensor):
    where = f' {name}' if name is not None else ''
    raise UserInputError(
        f'{what}{where} must be a Tensor, SparseTensor, or RaggedTensor; got '
        f'{type(tensor).__name__}: {shorten(tensor)}.')


def check_tensor_key(name: Any, what: str, *, allow_ints: bool = False) -> None:
  """Raises UserInputError (tf.estimator's ValueError, with its words)
  unless `name`, a key of `what` ('feature', 'receiver_tensor', ...), is a
  string, or an int if `allow_ints`."""
  if not isinstance(name, str) and not (allow_ints and isinstance(name, int)):
    raise UserInputError(
        f'{what} keys must be strings{" or ints" if allow_ints else ""}: '
        f'{name!r}.')


def wrapped_tensors(tensors: Any, what: str, *,
                     allow_int_keys: bool = False) -> Dict[Any, Any]:
  """`tensors` as a dict (a lone tensor named as tf.estimator named it,
  `SINGLE_NAMES`), each key a string (or an int if `allow_int_keys`) and
  each value a Tensor, SparseTensor or RaggedTensor.

  Raises:
    UserInputError: `tensors` is None, or a key or value is not one of
      these (tf.estimator's ValueError, with its words).
  """
  if tensors is None:
    raise UserInputError(f'{what}s must be defined.')
  if not isinstance(tensors, Mapping):
    tensors = {SINGLE_NAMES[what]: tensors}
  for name, tensor in tensors.items():
    check_tensor_key(name, what, allow_ints=allow_int_keys)
    check_tensor(tensor, name, what)
  return dict(tensors)


class ServingInputReceiver(collections.namedtuple(
    'ServingInputReceiver',
    ['features', 'receiver_tensors', 'receiver_tensors_alternatives'])):
  """What a serving input function returns: the signature's inputs and how
  they become the model_fn's features. Two forms:

  * tf.estimator's: `ServingInputReceiver(features, receiver_tensors,
    receiver_tensors_alternatives=None)`, made of graph tensors (usually
    `tf.compat.v1.placeholder`s) inside a graph the runtime opens around
    the serving_input_receiver_fn call. Either engine exports it. As in
    tf.estimator, `features` and `receiver_tensors` become dicts (a lone
    feature is named 'feature', a lone receiver tensor 'input').
  * TF2 (the eager engine's own): `ServingInputReceiver(receiver_specs=...,
    features_fn=..., single_feature=...)`, built eagerly from specs;
    `features_for(received)` gives the model_fn's features.

  As tf.estimator's, it is a namedtuple of its three fields (programs
  unpack it, read `_fields`, `_replace` it); the TF2 form's settings are
  attributes beside them (its fields are None).

  Args:
    features: (tf.estimator form) the model_fn's features: a tensor or a
      dict of tensors (string or int keys), each a Tensor, SparseTensor or
      RaggedTensor (see TensorServingInputReceiver for a lone tensor passed
      as it is).
    receiver_tensors: (tf.estimator form) the signature's inputs: a tensor
      or a dict of tensors (string keys).
    receiver_tensors_alternatives: (tf.estimator form) a dict of further
      groups of receiver tensors; accepted and not exported (the export
      logs one warning naming them).
    receiver_specs: (TF2 form) signature input name -> `tf.TensorSpec`
      (leave the batch dimension None).
    features_fn: (TF2 form) maps the dict of received tensors to the
      features the model_fn expects. None passes the dict through, or its
      only tensor if `single_feature` is set.
    single_feature: (TF2 form) the model_fn takes one tensor, not a dict.

  Raises:
    UserInputError: (a ValueError) a missing field, a key or a value of
      the wrong kind, with tf.estimator's words; both forms at once.
  """

  # The TF2 form's settings (class defaults too: namedtuple's `_replace`
  # and `_make` do not call __new__).
  receiver_specs = None
  features_fn = None
  single_feature = False

  def __new__(cls, features=None, receiver_tensors=None,
              receiver_tensors_alternatives=None, *,
              receiver_specs: Optional[Mapping[str, tf.TensorSpec]] = None,
              features_fn: Optional[Callable[[Dict[str, tf.Tensor]],
                                             Any]] = None,
              single_feature: bool = False):
    if receiver_specs is not None:
      if features is not None or receiver_tensors is not None:
        raise UserInputError(
            'ServingInputReceiver: give features and receiver_tensors '
            '(tf.estimator form) or receiver_specs (TF2 form), not both; got '
            f'features={shorten(features)}, '
            f'receiver_tensors={shorten(receiver_tensors)}.')
    else:
      features = cls._checked_features(features)
      receiver_tensors = wrapped_tensors(receiver_tensors, 'receiver_tensor')
      if receiver_tensors_alternatives is not None:
        if not isinstance(receiver_tensors_alternatives, Mapping):
          raise UserInputError(
              'receiver_tensors_alternatives must be a dict: '
              f'{shorten(receiver_tensors_alternatives)}.')
        receiver_tensors_alternatives = {
            name: wrapped_tensors(group, 'receiver_tensors_alternative')
            for name, group in receiver_tensors_alternatives.items()}
    receiver = super().__new__(cls, features, receiver_tensors,
                               receiver_tensors_alternatives)
    receiver.receiver_specs = receiver_specs
    receiver.features_fn = features_fn
    receiver.single_feature = single_feature
    return receiver

  @staticmethod
  def _checked_features(features):
    return wrapped_tensors(features, 'feature', allow_int_keys=True)

  @property
  def is_graph_form(self) -> bool:
    """Made of graph tensors (tf.estimator's form)."""
    return self.receiver_tensors is not None

  @property
  def graph_features(self) -> Any:
    """(tf.estimator form) The model_fn's features."""
    return self.features

  def features_for(self, received: Dict[str, tf.Tensor]) -> Any:
    """(TF2 form) The model_fn's features for the received tensors."""
    if self.features_fn is not None:
      return self.features_fn(received)
    if self.single_feature:
      return next(iter(received.values()))
    return received

  def in_graph(self, received: Dict[str, tf.Tensor]
               ) -> 'ServingInputReceiver':
    """(TF2 form) The tf.estimator-form receiver of the features computed
    in the current graph from `received` (placeholders for the specs)."""
    features = self.features_for(received)
    if isinstance(features, Mapping):
      return ServingInputReceiver(features, received)
    return TensorServingInputReceiver(features, received)


class TensorServingInputReceiver(ServingInputReceiver):
  """tf.estimator's receiver for a model_fn whose features are one tensor:
  `TensorServingInputReceiver(features, receiver_tensors)` passes
  `features` (a Tensor, SparseTensor or RaggedTensor) to the model_fn as it
  is, not wrapped in a dict."""

  def __new__(cls, features, receiver_tensors,
              receiver_tensors_alternatives=None):
    return super().__new__(cls, features, receiver_tensors,
                           receiver_tensors_alternatives)

  @staticmethod
  def _checked_features(features):
    if features is None:
      raise UserInputError('features must be defined.')
    check_tensor(features, None, 'feature')
    return features


def build_raw_serving_input_receiver_fn(
    features: Mapping[str, Any],
    default_batch_size: Optional[int] = None
) -> Callable[[], ServingInputReceiver]:
  """tf.estimator's: a serving_input_receiver_fn whose signature takes
  tensors shaped like `features` (tensors or placeholders; the batch
  dimension becomes `default_batch_size`, None by default).

  The function makes new placeholders each time it is called, in the graph
  the runtime opens for the export (`placeholder_like`: the first dimension
  is the batch, a scalar feature becomes a batch of scalars).
  """
  features = dict(features)

  def serving_input_receiver_fn():
    received = {name: placeholder_like(t, default_batch_size)
                for name, t in features.items()}
    return ServingInputReceiver(dict(received), received)

  return serving_input_receiver_fn


def build_parsing_serving_input_receiver_fn(
    feature_spec: Mapping[str, Any],
    default_batch_size: Optional[int] = None
) -> Callable[[], ServingInputReceiver]:
  """tf.estimator's: a serving_input_receiver_fn taking serialized
  `tf.train.Example`s (signature input 'examples') and parsing them with
  `feature_spec` (name -> FixedLenFeature / VarLenFeature ...)."""
  feature_spec = dict(feature_spec)

  def serving_input_receiver_fn():
    serialized = tf.compat.v1.placeholder(
        tf.string, [default_batch_size], name='input_example_tensor')
    features = tf.io.parse_example(serialized, feature_spec)
    return ServingInputReceiver(features, {'examples': serialized})

  return serving_input_receiver_fn


# tf.estimator 2.15's SavedModel tags and signature keys of each mode's
# MetaGraph (TensorFlow's `EXPORT_TAG_MAP` and `SIGNATURE_KEY_MAP`).
EXPORT_TAG_MAP = {
    ModeKeys.TRAIN: [tag_constants.TRAINING],
    ModeKeys.EVAL: [tag_constants.EVAL],
    ModeKeys.PREDICT: [tag_constants.SERVING],
}
SIGNATURE_KEY_MAP = {
    ModeKeys.TRAIN: signature_constants.DEFAULT_TRAIN_SIGNATURE_DEF_KEY,
    ModeKeys.EVAL: signature_constants.DEFAULT_EVAL_SIGNATURE_DEF_KEY,
    ModeKeys.PREDICT: signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY,
}


class UnsupervisedInputReceiver(ServingInputReceiver):
  """tf.estimator's receiver of features without labels, for TRAIN and
  EVAL exports (of a model_fn that takes no labels)."""

  def __new__(cls, features, receiver_tensors):
    return super().__new__(cls, features, receiver_tensors)


class SupervisedInputReceiver(collections.namedtuple(
    'SupervisedInputReceiver', ['features', 'labels', 'receiver_tensors'])):
  """tf.estimator's receiver of features and labels, for TRAIN and EVAL
  exports (see graph/saved_model.py): a namedtuple of these three fields,
  as tf.estimator's. `features` and `labels` are kept as given (a tensor or
  a dict of tensors, checked as ServingInputReceiver checks them);
  `receiver_tensors` becomes a dict.

  Raises:
    UserInputError: (a ValueError) as ServingInputReceiver.
  """

  # No alternatives (the export code reads them of any receiver).
  receiver_tensors_alternatives = None

  def __new__(cls, features, labels, receiver_tensors):
    wrapped_tensors(features, 'feature', allow_int_keys=True)
    wrapped_tensors(labels, 'label', allow_int_keys=True)
    return super().__new__(cls, features, labels, wrapped_tensors(
        receiver_tensors, 'receiver_tensor'))


def placeholder_like(tensor, default_batch_size: Optional[int]):
  """A placeholder of `tensor`'s dtype and shape, its first dimension (the
  batch, tf.estimator's rule) `default_batch_size` (None: any), named as
  tf.estimator 2.15 named it: as `tensor`'s op (a graph tensor `Const`
  gives a placeholder `Const_1` beside it), or by default ('Placeholder')
  for an eager tensor, which has no op."""
  shape = tf.TensorShape([default_batch_size]).concatenate(
      tensor.shape[1:])
  return tf.compat.v1.placeholder(
      tensor.dtype, shape,
      name=getattr(getattr(tensor, 'op', None), 'name', None))


def build_raw_supervised_input_receiver_fn(
    features, labels, default_batch_size: Optional[int] = None
) -> Callable[[], SupervisedInputReceiver]:
  """tf.estimator's: a receiver fn of placeholders shaped like `features`
  and `labels` (tensors, or dicts of them), passed to the model_fn as they
  are given; the receiver tensors are both, a lone feature named 'input'
  and a lone label 'label'.

  Raises:
    UserInputError: (a ValueError) features and labels share a key.
  """
  feature_keys = (set(features) if isinstance(features, Mapping)
                  else {SINGLE_NAMES['receiver_tensor']})
  label_keys = (set(labels) if isinstance(labels, Mapping)
                else {SINGLE_NAMES['label']})
  if feature_keys & label_keys:
    raise UserInputError(
        'Features and labels must have distinct keys. Found overlapping '
        f'keys: {sorted(feature_keys & label_keys)}')

  def placeholders(value, single_name):
    if isinstance(value, Mapping):
      made = {name: placeholder_like(t, default_batch_size)
              for name, t in value.items()}
      return made, made
    made = placeholder_like(value, default_batch_size)
    return made, {single_name: made}

  def receiver_fn():
    made_features, received = placeholders(
        features, SINGLE_NAMES['receiver_tensor'])
    made_labels, received_labels = placeholders(labels,
                                                SINGLE_NAMES['label'])
    receivers = dict(received)
    receivers.update(received_labels)
    return SupervisedInputReceiver(made_features, made_labels, receivers)

  return receiver_fn


def build_supervised_input_receiver_fn_from_input_fn(input_fn,
                                                     **input_fn_args):
  """tf.estimator's: `build_raw_supervised_input_receiver_fn` of the
  features and labels `input_fn(**input_fn_args)` returns (a dataset, or
  tensors), read in a graph of its own."""
  with tf.Graph().as_default():
    result = input_fn(**input_fn_args)
    if isinstance(result, (tf.data.Dataset, tf.compat.v1.data.Dataset)):
      result = tf.compat.v1.data.make_one_shot_iterator(result).get_next()
    if isinstance(result, (list, tuple)):
      if len(result) != 2:
        raise UserInputError(
            'input_fn should return (features, labels) as a len 2 tuple; '
            f'got {len(result)} items.')
      features, labels = result
    else:
      features, labels = result, None
  return build_raw_supervised_input_receiver_fn(features, labels)


def _open_batch(spec: tf.TensorSpec, name: str) -> tf.TensorSpec:
  shape = spec.shape
  if shape.rank:
    shape = tf.TensorShape([None]).concatenate(shape[1:])
  return tf.TensorSpec(shape, spec.dtype, name=name)


def tf2_receiver(serving_input_receiver_fn: Callable) -> ServingInputReceiver:
  """The receiver `serving_input_receiver_fn` makes, in the TF2 form the
  eager engine exports.

  The function is called inside a graph (`tf.compat.v1.wrap_function`), so
  tf.estimator's receivers of placeholders work; a graph-form receiver
  becomes specs of its receiver tensors, and the graph between them and
  its features (a parse_example, say) is pruned out into a function that
  computes the features from what the signature receives.

  Raises:
    UserInputError: the function returned no ServingInputReceiver.
  """
  made = []

  def build():
    made.append(serving_input_receiver_fn())

  wrapped = tf.compat.v1.wrap_function(build, [])
  receiver = made[0]
  if not isinstance(receiver, ServingInputReceiver):
    raise UserInputError(
        'serving_input_receiver_fn must return a ServingInputReceiver, '
        f'got {type(receiver).__name__}.')
  if not receiver.is_graph_form:
    return receiver
  names = sorted(receiver.receiver_tensors)
  feeds = [receiver.receiver_tensors[n] for n in names]
  compute = wrapped.prune(feeds=feeds, fetches=receiver.graph_features)
  return ServingInputReceiver(
      receiver_specs={n: tf.TensorSpec(t.shape, t.dtype, name=n)
                      for n, t in zip(names, feeds)},
      features_fn=lambda received: compute(*[received[n] for n in names]))


def receiver_from_element_spec(features_spec: Any) -> ServingInputReceiver:
  """Serving inputs matching a dataset's features, batch dimension open."""
  if isinstance(features_spec, tf.TensorSpec):
    return ServingInputReceiver(
        receiver_specs={SINGLE_FEATURE_NAME: _open_batch(
            features_spec, SINGLE_FEATURE_NAME)},
        single_feature=True)
  if isinstance(features_spec, Mapping) and all(
      isinstance(s, tf.TensorSpec) for s in features_spec.values()):
    return ServingInputReceiver(receiver_specs={
        name: _open_batch(spec, name) for name, spec in features_spec.items()})
  raise UserInputError(
      f'Cannot infer serving inputs from features {features_spec}: only a '
      'tensor or a flat dict of dense tensors can be inferred. Pass a '
      'serving_input_fn.')


def build_raw_serving_input_fn(
    features: Mapping[str, tf.TensorSpec]) -> Callable[[], ServingInputReceiver]:
  """A serving_input_fn whose signature takes `features` as they are."""
  specs = {name: _open_batch(spec, name) for name, spec in features.items()}
  return lambda: ServingInputReceiver(receiver_specs=specs)


def build_parsing_serving_input_fn(
    feature_spec: Mapping[str, Any], *,
    receiver_name: str = 'examples') -> Callable[[], ServingInputReceiver]:
  """A serving_input_fn taking serialized `tf.train.Example`s.

  Args:
    feature_spec: name -> `tf.io.FixedLenFeature` / `VarLenFeature`, as for
      `tf.io.parse_example`.
    receiver_name: the signature's single string input.
  """
  def parse(received):
    return tf.io.parse_example(received[receiver_name], dict(feature_spec))

  return lambda: ServingInputReceiver(
      receiver_specs={receiver_name: tf.TensorSpec([None], tf.string,
                                                   name=receiver_name)},
      features_fn=parse)


def _signature_outputs(output: ExportOutput) -> Optional[Dict[str, Any]]:
  """What a signature of the eager engine's export returns for one of the
  model_fn's `export_outputs` (TF2 SavedModels have predict-style
  signatures only: a classification's classes and scores, a regression's
  outputs), or None for an output it cannot serve (a TrainOutput or
  EvalOutput, which only a TRAIN or EVAL export of the graph engine
  writes)."""
  if isinstance(output, PredictOutput):
    return output.outputs
  if isinstance(output, ClassificationOutput):
    return {name: value for name, value in (('classes', output.classes),
                                            ('scores', output.scores))
            if value is not None}
  if isinstance(output, RegressionOutput):
    return {'outputs': output.value}
  return None


def _serving_functions(graph, receiver: ServingInputReceiver
                       ) -> Dict[str, Any]:
  """Signature name -> a tf.function from the received tensors to its
  outputs: one per `export_outputs` entry of the model_fn (as tf.estimator
  exported them), else `serving_default` returning the predictions."""
  names = list(receiver.receiver_specs)
  signature = [receiver.receiver_specs[n] for n in names]
  spec = graph.build_spec
  # The spec's default (a PredictOutput of the predictions) is not the
  # model_fn's: the predictions are then exported under their own names.
  exported = ({} if getattr(spec, 'export_outputs_defaulted', False) else
              spec.export_outputs or {})

  def make(key):
    def serve(*args):
      spec = graph.call(receiver.features_for(dict(zip(names, args))), None)
      if key is None:
        return spec.predictions_dict
      return _signature_outputs(spec.export_outputs[key])

    input_signature = signature
    if (isinstance(exported.get(key), (ClassificationOutput,
                                       RegressionOutput)) and
        single_string_input(receiver.receiver_specs) is not None):
      # tf.estimator's classify and regress signatures named their one
      # input 'inputs' (tf.saved_model.CLASSIFY_INPUTS), whatever the
      # receiver called it; serving clients send it under that name.
      input_signature = [tf.TensorSpec(signature[0].shape, signature[0].dtype,
                                       name=tf.saved_model.CLASSIFY_INPUTS)]
    # Traced as written, like the training step (see loops.py).
    return tf.function(serve, input_signature=input_signature,
                       autograph=False)

  functions = {key: make(key) for key, output in exported.items()
               if _signature_outputs(output) is not None}
  left_out = sorted(set(exported) - set(functions))
  if left_out:
    logging.warning('export: export_outputs %s cannot be served by a TF2 '
                    'SavedModel and are left out.', left_out)
  return functions or {'serving_default': make(None)}


def save(graph, receiver: ServingInputReceiver, export_dir_base: str) -> str:
  """Writes a SavedModel of the PREDICT `graph` under `export_dir_base`.

  The model goes to `<export_dir_base>/<unix time>`, whole or not at all
  (export_dirs.write_export).

  Returns:
    The export directory.
  """
  if graph.mode != ModeKeys.PREDICT:
    raise ValueError(f'export needs a PREDICT graph, got {graph.mode!r}.')
  functions = _serving_functions(graph, receiver)
  options = tf.saved_model.SaveOptions()
  # Traced here, so that a model_fn's error is raised in its own words
  # before anything is written, and as `tf.saved_model.save` will look them
  # up (in its save context: outside one, it traces them all again).
  with _save_context(options):
    signatures = {key: surface_user_errors(function.get_concrete_function)()
                  for key, function in functions.items()}
  module = tf.Module()
  module.model_variables = list(graph.model_variables)
  module.global_step = graph.global_step
  module.serve = list(functions.values())
  return export_dirs.write_export(
      export_dir_base,
      lambda path: tf.saved_model.save(module, path, signatures=signatures,
                                       options=options))


def _save_context(options: tf.saved_model.SaveOptions):
  """The context `tf.saved_model.save(..., options=options)` traces
  functions in (a tf.function's traces are cached per context), or no
  context where TensorFlow has no such module."""
  try:
    from tensorflow.python.saved_model import save_context  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
    return save_context.save_context(options)
  except (ImportError, AttributeError):
    return contextlib.nullcontext()


def add_extras(export_dir: str, *, assets_extra: Optional[Mapping[str, str]],
               as_text: bool) -> None:
  """What tf.estimator's exports could add: `assets_extra` files copied to
  `<export_dir>/assets.extra/<destination>` (destination -> source path),
  and with `as_text` the SavedModel proto as text, `saved_model.pbtxt`, in
  place of `saved_model.pb` (as 2.15's builder wrote one or the other;
  TensorFlow's loaders read either)."""
  for destination, source in (assets_extra or {}).items():
    target = os.path.join(export_dir, 'assets.extra', destination)
    tf.io.gfile.makedirs(os.path.dirname(target))
    tf.io.gfile.copy(source, target, overwrite=True)
  if as_text:
    from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
    from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
    proto = saved_model_pb2.SavedModel()
    binary = os.path.join(export_dir, 'saved_model.pb')
    with tf.io.gfile.GFile(binary, 'rb') as f:
      proto.ParseFromString(f.read())
    with tf.io.gfile.GFile(os.path.join(export_dir, 'saved_model.pbtxt'),
                           'w') as f:
      f.write(text_format.MessageToString(proto))
    tf.io.gfile.remove(binary)
