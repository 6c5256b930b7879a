"""tf.estimator 2.15's `canned/saved_model_estimator.py`: `SavedModelEstimator`
(estimator_rt.canned.saved_model_estimator) and the helpers that read an
estimator's SavedModel signature back as model_fn outputs, over
estimator_rt.canned.saved_model_outputs."""

from estimator_rt.canned import saved_model_outputs as _outputs
from estimator_rt.canned.saved_model_estimator import SavedModelEstimator

_get_saved_model_ckpt = _outputs.saved_model_checkpoint
_clear_saved_model_collections = _outputs.clear_saved_model_collections
_check_same_dtype_and_shape = _outputs.check_same_dtype_and_shape
_extract_eval_metrics = _outputs.eval_metrics


def _generate_input_map(signature_def, features, labels):
  """{signature input's graph name (and `^name`): the features' or labels'
  tensor of its key} (see saved_model_outputs.input_map)."""
  return _outputs.input_map(signature_def, features, labels)


def _validate_and_extract_outputs(mode, output_dict, method_name):
  """(loss, predictions, metrics) of a signature's outputs (see
  saved_model_outputs.mode_outputs)."""
  return _outputs.mode_outputs(mode, output_dict, method_name)


__all__ = ['SavedModelEstimator']
