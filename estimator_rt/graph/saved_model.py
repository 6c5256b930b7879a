"""SavedModel export of a TF1-style model_fn's PREDICT graph.

As tf.estimator exported: the serving_input_receiver_fn is called inside a
fresh graph (its placeholders are the signature's inputs), the model_fn is
built on the features it makes, the variables are restored from the
checkpoint, and `tf.compat.v1.saved_model.Builder` writes one MetaGraph
tagged 'serve' whose signatures come from the spec's `export_outputs`
(default: one `serving_default` returning the predictions). Lookup tables
are initialized when the SavedModel loads (its main op). The export loads
with `tf.saved_model.load` in a process that has never seen the model_fn.
"""

from typing import Callable, Dict

from absl import logging
import tensorflow as tf

from estimator_rt import export as export_lib
from estimator_rt import export_dirs
from estimator_rt.errors import UserInputError
from estimator_rt.graph import compat
from estimator_rt.graph import model as model_lib
from estimator_rt.graph import placement as placement_lib
from estimator_rt.mode_keys import ModeKeys

DEFAULT_SIGNATURE = 'serving_default'


def _receiver_in_graph(receiver_fn: Callable) -> export_lib.ServingInputReceiver:
  """Calls the receiver fn in the current graph; a TF2-form receiver gets
  placeholders for its specs, so both forms end up as graph tensors."""
  receiver = receiver_fn()
  if not isinstance(receiver, export_lib.ServingInputReceiver):
    raise UserInputError(
        'serving_input_receiver_fn must return an estimator_rt.export.'
        f'ServingInputReceiver, got {type(receiver).__name__}.')
  if receiver.is_graph_form:
    return receiver
  received = {name: tf.compat.v1.placeholder(spec.dtype, spec.shape, name=name)
              for name, spec in receiver.receiver_specs.items()}
  return receiver.in_graph(received)


def _signature_outputs(spec, predictions) -> Dict[str, export_lib.ExportOutput]:
  outputs = spec.export_outputs
  if not outputs:
    return {DEFAULT_SIGNATURE: export_lib.PredictOutput(predictions)}
  for name, output in outputs.items():
    if not isinstance(output, export_lib.ExportOutput):
      raise UserInputError(
          f'EstimatorSpec.export_outputs[{name!r}] is a '
          f'{type(output).__name__}; give estimator_rt.export.PredictOutput, '
          'ClassificationOutput or RegressionOutput.')
  outputs = dict(outputs)
  if DEFAULT_SIGNATURE not in outputs:
    if len(outputs) != 1:
      raise UserInputError(
          f'EstimatorSpec.export_outputs has {sorted(outputs)} and none is '
          f'{DEFAULT_SIGNATURE!r}; name the one serving should use by '
          'default so.')
    outputs[DEFAULT_SIGNATURE] = next(iter(outputs.values()))
  return outputs


def export(*, model_fn: Callable, params: dict, config,
           serving_input_receiver_fn: Callable, checkpoint_path: str,
           export_dir_base: str) -> str:
  """Writes `<export_dir_base>/<timestamp>` from `checkpoint_path`.

  Returns:
    The export directory (whole or not at all: export_dirs.write_export).

  Raises:
    UserInputError: a bad receiver, export_outputs or a checkpoint that
      lacks the model's variables.
  """
  with tf.Graph().as_default(), compat.keras_names_per_graph():
    receiver = _receiver_in_graph(serving_input_receiver_fn)
    built = model_lib.build(
        model_fn=model_fn, mode=ModeKeys.PREDICT,
        batches=lambda: (receiver.graph_features, None), params=params,
        config=config, placement=placement_lib.SingleDevicePlacement())
    signatures = {}
    for name, output in _signature_outputs(built.spec,
                                           built.predictions).items():
      signature = output.signature_def(receiver.receiver_tensors)
      if signature is None:
        logging.warning(
            'Export: signature %r (%s) left out: it needs a single string '
            'input of serialized Examples, and the receiver gives %s.', name,
            type(output).__name__, sorted(receiver.receiver_tensors))
        continue
      signatures[name] = signature
    if receiver.receiver_tensors_alternatives:
      logging.warning('Export: receiver_tensors_alternatives %s are not '
                      'exported.',
                      sorted(receiver.receiver_tensors_alternatives))
    scaffold = built.spec.scaffold
    saver = (model_lib.scaffold_saver(scaffold) or
             tf.compat.v1.train.Saver(sharded=True))
    if scaffold is None or not scaffold.saver:
      missing = model_lib.missing_from_checkpoint(
          checkpoint_path, model_lib.default_saver_names())
      if missing:
        raise UserInputError(
            f'export: checkpoint {checkpoint_path!r} has no variable(s) '
            f'{missing[:5]} that the model_fn creates in PREDICT mode.')
    main_op = tf.group(tf.compat.v1.local_variables_initializer(),
                       tf.compat.v1.tables_initializer())

    def write(path: str) -> None:
      with tf.compat.v1.Session(
          config=placement_lib.session_config()) as session:
        saver.restore(session, checkpoint_path)
        builder = tf.compat.v1.saved_model.Builder(path)
        builder.add_meta_graph_and_variables(
            session, [tf.saved_model.SERVING], signature_def_map=signatures,
            main_op=main_op, strip_default_attrs=True)
        builder.save()

    return export_dirs.write_export(export_dir_base, write)
