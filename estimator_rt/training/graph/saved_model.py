"""SavedModel export of a TF1-style model_fn: one MetaGraph per mode.

As tf.estimator 2.15 exported (`experimental_export_all_saved_models`): for
each mode asked for, in the order TRAIN, EVAL, PREDICT, a fresh graph where
the mode's receiver fn is called (its placeholders are the signature's
inputs), the model_fn is built on the features (and labels) it makes, and
the variables are restored from the checkpoint; `tf.compat.v1.saved_model.
Builder` writes the mode's MetaGraph, tagged as 2.15 tagged it
(`export.EXPORT_TAG_MAP`: 'train', 'eval', 'serve'), into one SavedModel
whose variables are saved once, from the first mode's graph.

- PREDICT: the signatures come from the spec's `export_outputs` (default:
  one `serving_default` returning the predictions); TRAIN and EVAL outputs
  are left out of it, as 2.15 kept serving signatures only.
- TRAIN and EVAL: one signature, 'train' or 'eval' (`export.TrainOutput` /
  `EvalOutput`: the loss, the predictions and each eval metric's value and
  update op), whose inputs are the receiver's features and labels; the
  spec's train op goes into the MetaGraph's `saved_model_train_op`
  collection, where tf.estimator's SavedModelEstimator (and
  canned/saved_model_estimator.py) finds it.

Each MetaGraph keeps the mode's Saver (a Scaffold's own, else a sharded
default one) and its main op (the Scaffold's local_init_op, else the
default one: local variables and lookup tables), run when the SavedModel
loads. A PREDICT export loads with `tf.saved_model.load` in a process that
has never seen the model_fn.
"""

from typing import Callable, Dict

from absl import logging
import tensorflow as tf
from tensorflow.python.saved_model import constants  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.core import export_outputs as outputs_lib

from estimator_rt.export import saved_model as export_lib
from estimator_rt.export import export_dirs
from estimator_rt.core.errors import UserInputError
from estimator_rt.training.graph import compat
from estimator_rt.training.graph import model as model_lib
from estimator_rt.training.graph import placement as placement_lib
from estimator_rt.core.mode_keys import ModeKeys

# The order 2.15 added the MetaGraphs in: the first saves the variables,
# and TRAIN's graph is the one checkpoints were written from.
MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
DEFAULT_SIGNATURE = 'serving_default'


def _receiver_in_graph(receiver_fn: Callable, mode: str):
  """Calls the receiver fn in the current graph. PREDICT takes a
  ServingInputReceiver (a TF2-form one gets placeholders for its specs, so
  both forms end up as graph tensors), TRAIN and EVAL a
  SupervisedInputReceiver too (tf.estimator 2.15 passed a receiver's
  `labels`, where it had them, in every mode)."""
  receiver = receiver_fn()
  kinds = (export_lib.ServingInputReceiver,
           export_lib.SupervisedInputReceiver)
  if not isinstance(receiver, kinds):
    raise UserInputError(
        f'The input receiver fn of mode {mode!r} must return an estimator_rt.'
        'export.ServingInputReceiver (or, for TRAIN and EVAL, a '
        f'SupervisedInputReceiver), got {type(receiver).__name__}.')
  if (isinstance(receiver, export_lib.SupervisedInputReceiver) or
      receiver.is_graph_form):
    return receiver
  received = {name: tf.compat.v1.placeholder(spec.dtype, spec.shape, name=name)
              for name, spec in receiver.receiver_specs.items()}
  return receiver.in_graph(received)


def _features_and_labels(receiver):
  if isinstance(receiver, export_lib.SupervisedInputReceiver):
    return receiver.features, receiver.labels
  return receiver.graph_features, None


def _signature_outputs(spec, predictions) -> Dict[str, outputs_lib.ExportOutput]:
  outputs = spec.export_outputs
  if not outputs:
    return {DEFAULT_SIGNATURE: outputs_lib.PredictOutput(predictions)}
  for name, output in outputs.items():
    if not isinstance(output, outputs_lib.ExportOutput):
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


def _serving_signatures(built, receiver) -> Dict[str, object]:
  """PREDICT's signatures: one per export output that can be served from
  the receiver's tensors (the others are left out, with a warning)."""
  signatures = {}
  for name, output in _signature_outputs(built.spec,
                                         built.predictions).items():
    signature = (None if isinstance(output, (outputs_lib.TrainOutput,
                                             outputs_lib.EvalOutput))
                 else output.signature_def(receiver.receiver_tensors))
    if signature is None:
      logging.warning(
          'Export: signature %r (%s) left out: a serving signature of %s '
          'cannot be made from the receiver\'s tensors %s (classify and '
          'regress take a single string input of serialized Examples; '
          'TrainOutput and EvalOutput are TRAIN and EVAL signatures).', name,
          type(output).__name__, type(output).__name__,
          sorted(receiver.receiver_tensors))
      continue
    signatures[name] = signature
  return signatures


def _supervised_signatures(mode: str, spec, receiver) -> Dict[str, object]:
  """TRAIN's or EVAL's one signature, as 2.15 made it."""
  output_class = (outputs_lib.TrainOutput if mode == ModeKeys.TRAIN else
                  outputs_lib.EvalOutput)
  output = output_class(loss=spec.loss, predictions=spec.predictions,
                        metrics=spec.eval_metric_ops or None)
  return {export_lib.SIGNATURE_KEY_MAP[mode]:
              output.signature_def(receiver.receiver_tensors)}


def _log_signature_report(signatures: Dict[str, object]) -> None:
  """2.15's 'Signatures INCLUDED in export for Predict: [...]' lines, which
  TensorFlow's export_utils logged for each MetaGraph it exported (its
  report, called directly where it exists)."""
  from tensorflow.python.saved_model.model_utils import export_utils  # pylint: disable=g-import-not-at-top
  report = getattr(export_utils, '_log_signature_report', None)
  if report is not None:
    report(signatures, {})


def _train_op_of(spec):
  """The spec's train op as the SavedModel keeps it (a tensor or an op), or
  None."""
  train_op = spec.train_op
  if train_op is None or isinstance(train_op, (tf.Tensor, tf.Operation)):
    return train_op
  return getattr(train_op, 'op', None)  # A variable's assign.


def _add_meta_graph(builder, *, mode: str, receiver_fn: Callable,
                    save_variables: bool, model_fn: Callable, params: dict,
                    config, checkpoint_path: str) -> None:
  """Adds `mode`'s MetaGraph to `builder` (and the variables, restored from
  `checkpoint_path`, if `save_variables`)."""
  with tf.Graph().as_default(), compat.keras_names_per_graph():
    if config.tf_random_seed is not None:
      tf.compat.v1.set_random_seed(config.tf_random_seed)
    receiver = _receiver_in_graph(receiver_fn, mode)
    features, labels = _features_and_labels(receiver)
    built = model_lib.build(
        model_fn=model_fn, mode=mode, batches=lambda: (features, labels),
        params=params, config=config,
        placement=placement_lib.SingleDevicePlacement())
    spec = built.spec
    if mode == ModeKeys.PREDICT:
      signatures = _serving_signatures(built, receiver)
    else:
      signatures = _supervised_signatures(mode, spec, receiver)
    _log_signature_report(signatures)
    if receiver.receiver_tensors_alternatives:
      logging.warning('Export: receiver_tensors_alternatives %s are not '
                      'exported.',
                      sorted(receiver.receiver_tensors_alternatives))
    scaffold = spec.scaffold
    saver = (model_lib.scaffold_saver(scaffold) or
             tf.compat.v1.train.Saver(sharded=True))
    if scaffold is None or not scaffold.saver:
      missing = model_lib.missing_from_checkpoint(
          checkpoint_path, model_lib.default_saver_names())
      if missing:
        raise UserInputError(
            f'export: checkpoint {checkpoint_path!r} has no variable(s) '
            f'{missing[:5]} that the model_fn creates in {mode.upper()} mode.')
    main_op = (scaffold.local_init_op
               if scaffold is not None and scaffold.local_init_op is not None
               else tf.compat.v1.train.Scaffold.default_local_init_op())
    train_op = _train_op_of(spec)
    if train_op is not None:
      tf.compat.v1.add_to_collection(constants.TRAIN_OP_KEY, train_op)
    meta_graph = dict(
        tags=export_lib.EXPORT_TAG_MAP[mode], signature_def_map=signatures,
        assets_collection=tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
        main_op=main_op, saver=saver, strip_default_attrs=True)
    if not save_variables:
      builder.add_meta_graph(**meta_graph)
      return
    with tf.compat.v1.Session(
        config=placement_lib.session_config()) as session:
      saver.restore(session, checkpoint_path)
      builder.add_meta_graph_and_variables(session, **meta_graph)


def export_modes(*, model_fn: Callable, params: dict, config,
                 receiver_fn_map: Dict[str, Callable], checkpoint_path: str,
                 export_dir_base: str) -> str:
  """Writes `<export_dir_base>/<timestamp>`: a SavedModel of the modes of
  `receiver_fn_map` ({ModeKeys value: its input receiver fn}), with the
  variables of `checkpoint_path`.

  Returns:
    The export directory (whole or not at all: export_dirs.write_export).

  Raises:
    UserInputError: a bad receiver, export_outputs or a checkpoint that
      lacks the model's variables.
  """
  modes = [mode for mode in MODES if receiver_fn_map.get(mode) is not None]

  def write(path: str) -> None:
    builder = tf.compat.v1.saved_model.Builder(path)
    for i, mode in enumerate(modes):
      _add_meta_graph(builder, mode=mode, receiver_fn=receiver_fn_map[mode],
                      save_variables=i == 0, model_fn=model_fn,
                      params=params, config=config,
                      checkpoint_path=checkpoint_path)
    builder.save()

  return export_dirs.write_export(export_dir_base, write)


def export(*, model_fn: Callable, params: dict, config,
           serving_input_receiver_fn: Callable, checkpoint_path: str,
           export_dir_base: str) -> str:
  """`export_modes` of the PREDICT mode alone (`export_saved_model`)."""
  return export_modes(
      model_fn=model_fn, params=params, config=config,
      receiver_fn_map={ModeKeys.PREDICT: serving_input_receiver_fn},
      checkpoint_path=checkpoint_path, export_dir_base=export_dir_base)
