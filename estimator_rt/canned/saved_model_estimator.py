"""`SavedModelEstimator`: an Estimator whose model is a SavedModel an
Estimator exported (tf.estimator 2.15's, of the same name and signature).

Its model_fn imports the exported MetaGraph of the mode it is called in
(tagged 'train', 'eval' or 'serve': `experimental_export_all_saved_models`
writes the three, `export_saved_model` the last one), with the signature's
inputs replaced by the features and labels of the input_fn (by key, with
their dtypes and shapes checked), and returns the EstimatorSpec 2.15
returned: the signature's loss, predictions and metrics
(canned/saved_model_outputs.py reads them), the MetaGraph's train op, and
a Scaffold of its Saver and main op. It runs in the graph engine, one
training step per session run (a MetaGraph cannot be imported into the
in-graph loop's body), and the MetaGraph's own global step is the graph's
(graph/model.py's MAKES_GLOBAL_STEP).

A model_dir with no checkpoint yet starts from the SavedModel's variables
(the Scaffold's init_fn restores them; `latest_checkpoint` falls back on
them, so an export before any training exports them); training writes its
checkpoints to model_dir with the MetaGraph's Saver.
"""

from typing import Any, Dict, List, Optional

from absl import logging
import tensorflow as tf
from tensorflow.python.saved_model import constants  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.saved_model import loader_impl  # pylint: disable=g-direct-tensorflow-import

from estimator_rt import export as export_lib
from estimator_rt.canned import saved_model_outputs as outputs_lib
from estimator_rt.errors import SubclassError
from estimator_rt.estimator import Estimator
from estimator_rt.graph import model as graph_model
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.run_config import RunConfig
from estimator_rt.spec import EstimatorSpec

_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)


class SavedModelEstimator(Estimator):
  """An Estimator that trains, evaluates and predicts with a SavedModel
  exported by an Estimator (`experimental_export_all_saved_models` for all
  three modes, `export_saved_model` for prediction only).

      export_dir = estimator.experimental_export_all_saved_models(
          '/tmp/export_all',
          {ModeKeys.TRAIN: supervised_receiver_fn,
           ModeKeys.EVAL: supervised_receiver_fn,
           ModeKeys.PREDICT: serving_input_receiver_fn})
      sme = SavedModelEstimator(export_dir)
      sme.evaluate(input_fn, steps=1)
      sme.train(input_fn, steps=20)
      next(sme.predict(predict_input_fn))

  The input_fn's features and labels must have the keys of the mode's
  signature inputs (a lone features tensor is 'feature', a lone labels
  tensor 'label'), with their dtypes and compatible shapes. There is no
  `config` or `params`: the model is fixed by the SavedModel.

  Args:
    saved_model_dir: the SavedModel's directory.
    model_dir: where training writes checkpoints (a temporary directory if
      None); with none there yet, the SavedModel's variables are the
      starting point.

  Raises:
    NotImplementedError: a distribution strategy in the config (only a
      subclass can give one).
  """

  def __init__(self, saved_model_dir, model_dir=None):

    def model_fn(features, labels, mode):
      return self._model_fn_from_saved_model(features, labels, mode)

    model_fn.__name__ = model_fn.__qualname__ = '_model_fn_from_saved_model'
    setattr(model_fn, graph_model.MAKES_GLOBAL_STEP, True)
    # The graph engine, one step per session run: see the module docstring.
    super().__init__(model_fn=model_fn, model_dir=model_dir,
                     config=RunConfig(engine='graph', steps_per_loop=1))
    if self._train_distribution or self._eval_distribution:
      raise SubclassError(
          'SavedModelEstimator currently does not support '
          'DistributionStrategy: its model_fn imports a whole MetaGraph, '
          'global step included, into one graph.')
    self.saved_model_dir = saved_model_dir
    self.saved_model_loader = loader_impl.SavedModelLoader(saved_model_dir)
    self._available_modes = self._extract_available_modes()

  # ----------------------------------------------- what the SavedModel has
  def _extract_available_modes(self) -> List[str]:
    """The modes whose MetaGraph and signature the SavedModel has."""
    available = []
    logging.info('Checking available modes for SavedModelEstimator.')
    for mode in _MODES:
      try:
        self._get_meta_graph_def_for_mode(mode)
      except RuntimeError:
        logging.warning('%s mode not found in SavedModel.', mode)
        continue
      if self._get_signature_def_for_mode(mode) is not None:
        available.append(mode)
    logging.info('Available modes for Estimator: %s', available)
    return available

  def _validate_mode(self, mode: str) -> None:
    """Raises RuntimeError if the SavedModel has no MetaGraph for `mode`."""
    if mode not in self._available_modes:
      raise outputs_lib.SavedModelContentError(
          f'{mode} mode is not available in the SavedModel. Use '
          'saved_model_cli to check that the Metagraph for this mode has '
          f'been exported (it has {self._available_modes}).')

  def _get_meta_graph_def_for_mode(self, mode: str):
    """The MetaGraphDef of `mode`'s tags (RuntimeError if none)."""
    return self.saved_model_loader.get_meta_graph_def_from_tags(
        export_lib.EXPORT_TAG_MAP[mode])

  def _get_signature_def_for_mode(self, mode: str):
    """The SignatureDef `mode` runs ('train', 'eval', 'serving_default'),
    or None (with a warning) if its MetaGraph has none."""
    meta_graph_def = self._get_meta_graph_def_for_mode(mode)
    key = export_lib.SIGNATURE_KEY_MAP[mode]
    if key not in meta_graph_def.signature_def:
      logging.warning('Metagraph for mode %s was found, but SignatureDef with '
                      'key "%s" is missing.', mode, key)
      return None
    return meta_graph_def.signature_def[key]

  def _get_saver_def_from_mode(self, mode: str):
    return self._get_meta_graph_def_for_mode(mode).saver_def

  def _create_and_assert_global_step(self, graph):
    """None: the global step is the imported MetaGraph's (2.15's override;
    the runtime reads graph/model.py's MAKES_GLOBAL_STEP)."""
    del graph
    return None

  # ------------------------------------------------------------ model_fn
  def _model_fn_from_saved_model(self, features, labels, mode
                                 ) -> EstimatorSpec:
    """Imports `mode`'s MetaGraph into the default graph, on the features
    and labels, and returns its EstimatorSpec.

    Raises:
      RuntimeError: the SavedModel has no MetaGraph for `mode`, or the
        graph has a global step already (the input_fn made one).
      ValueError: a signature input missing from the features and labels,
        or of another dtype or shape.
    """
    self._validate_mode(mode)
    graph = tf.compat.v1.get_default_graph()
    if tf.compat.v1.train.get_global_step(graph) is not None:
      raise outputs_lib.SavedModelContentError(
          'Graph must not contain a global step tensor before the SavedModel '
          'is loaded. Please make sure that the input function does not '
          'create a global step.')
    signature_def = self._get_signature_def_for_mode(mode)
    input_map = outputs_lib.input_map(signature_def, features, labels)
    # Imported names may be made unique: the outputs are found by the
    # import itself, in the signature's order.
    output_names = [info.name for info in signature_def.outputs.values()]
    _, output_tensors = self.saved_model_loader.load_graph(
        graph, export_lib.EXPORT_TAG_MAP[mode], input_map=input_map,
        return_elements=output_names)
    saver = tf.compat.v1.train.Saver(
        saver_def=self._get_saver_def_from_mode(mode))
    init_fn = None
    if not Estimator.latest_checkpoint(self):
      init_fn = self._restore_from_saver
    meta_graph_def = self._get_meta_graph_def_for_mode(mode)
    scaffold = tf.compat.v1.train.Scaffold(
        local_init_op=loader_impl.get_init_op(meta_graph_def),
        local_init_feed_dict=loader_impl.get_asset_tensors(
            self.saved_model_loader.export_dir, meta_graph_def),
        saver=saver, init_fn=init_fn)
    tf.compat.v1.train.assert_global_step(
        tf.compat.v1.train.get_global_step(graph))
    by_name = dict(zip(output_names, output_tensors))
    outputs: Dict[str, Any] = {key: by_name[info.name] for key, info in
                               signature_def.outputs.items()}
    loss, predictions, metrics = outputs_lib.mode_outputs(
        mode, outputs, signature_def.method_name)
    train_ops = tf.compat.v1.get_collection(constants.TRAIN_OP_KEY)
    if len(train_ops) > 1:
      raise outputs_lib.SavedModelContentError(
          'Multiple ops found in the train_op collection.')
    outputs_lib.clear_saved_model_collections()
    return EstimatorSpec(
        mode=mode, loss=loss, train_op=train_ops[0] if train_ops else None,
        predictions=predictions, eval_metric_ops=metrics, scaffold=scaffold)

  def _restore_from_saver(self, scaffold, session) -> None:
    """The Scaffold's init_fn: the SavedModel's variables."""
    scaffold.saver.restore(
        session, outputs_lib.saved_model_checkpoint(self.saved_model_dir))

  def latest_checkpoint(self) -> Optional[str]:
    """model_dir's newest checkpoint, else the SavedModel's variables."""
    return (super().latest_checkpoint() or
            outputs_lib.saved_model_checkpoint(self.saved_model_dir))
