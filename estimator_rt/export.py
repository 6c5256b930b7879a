"""SavedModel export: a serving signature from the model_fn's PREDICT branch.

The signature's inputs are, in order of preference: what a
`serving_input_fn` describes, or the features of an input_fn's dataset with
the batch dimension left open. The exported model holds the model
variables (restored from a checkpoint) and one concrete function; it loads
with `tf.saved_model.load` in a process that has never seen the model_fn.
"""

import dataclasses
import os
import time
from typing import Any, Callable, Dict, Mapping, Optional

import tensorflow as tf

from estimator_rt.errors import surface_user_errors
from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys

SINGLE_FEATURE_NAME = 'features'


@dataclasses.dataclass(frozen=True)
class ServingInputReceiver:
  """What a serving_input_fn returns: the signature inputs and how they
  become the model_fn's features.

  Attributes:
    receiver_specs: signature input name -> `tf.TensorSpec` (leave the
      batch dimension None).
    features_fn: maps the dict of received tensors to the features the
      model_fn expects (a dict or a single tensor). None passes the dict
      through, or its only tensor if `single_feature` is set.
    single_feature: the model_fn takes one tensor, not a dict.
  """

  receiver_specs: Mapping[str, tf.TensorSpec]
  features_fn: Optional[Callable[[Dict[str, tf.Tensor]], Any]] = None
  single_feature: bool = False

  def features(self, received: Dict[str, tf.Tensor]) -> Any:
    if self.features_fn is not None:
      return self.features_fn(received)
    if self.single_feature:
      return next(iter(received.values()))
    return received


def _open_batch(spec: tf.TensorSpec, name: str) -> tf.TensorSpec:
  shape = spec.shape
  if shape.rank:
    shape = tf.TensorShape([None]).concatenate(shape[1:])
  return tf.TensorSpec(shape, spec.dtype, name=name)


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


def _serving_function(graph, receiver: ServingInputReceiver):
  names = list(receiver.receiver_specs)
  signature = [receiver.receiver_specs[n] for n in names]

  def serve(*args):
    received = dict(zip(names, args))
    spec = graph.call(receiver.features(received), None)
    return spec.predictions_dict

  # Traced as written, like the training step (see loops.py).
  return tf.function(serve, input_signature=signature, autograph=False)


def _fresh_export_dir(export_dir_base: str) -> str:
  """`<base>/<unix time>`, later than every export already there.

  Names must grow with export order: exporters keep the largest names, so
  a name freed by their clean-up must never be handed out again (exports
  of tiny models come faster than one per second).
  """
  timestamp = int(time.time())
  if tf.io.gfile.isdir(export_dir_base):
    existing = [int(name.strip('/').split('-')[-1])
                for name in tf.io.gfile.listdir(export_dir_base)
                if name.strip('/').split('-')[-1].isdigit()]
    timestamp = max([timestamp] + [n + 1 for n in existing])
  return os.path.join(export_dir_base, str(timestamp))


def save(graph, receiver: ServingInputReceiver, export_dir_base: str) -> str:
  """Writes a SavedModel of the PREDICT `graph` under `export_dir_base`.

  The model goes to `<export_dir_base>/<unix time>`, written to a temporary
  name first and renamed, so a reader never sees half an export.

  Returns:
    The export directory.
  """
  if graph.mode != ModeKeys.PREDICT:
    raise ValueError(f'export needs a PREDICT graph, got {graph.mode!r}.')
  serve = _serving_function(graph, receiver)
  signature = surface_user_errors(serve.get_concrete_function)()
  module = tf.Module()
  module.model_variables = list(graph.model_variables)
  module.global_step = graph.global_step
  module.serve = serve
  final = _fresh_export_dir(export_dir_base)
  temporary = os.path.join(export_dir_base,
                           'temp-' + os.path.basename(final))
  tf.io.gfile.makedirs(export_dir_base)
  tf.saved_model.save(module, temporary,
                      signatures={'serving_default': signature})
  tf.io.gfile.rename(temporary, final)
  return final
