"""tensorflow_estimator.python.estimator.canned.baseline, over estimator_rt.

The names of 2.15's module that code and 2.15's own tests use besides the
public ones (BaselineClassifier, BaselineClassifierV2, ..., which come from
module_paths.json).
"""

from estimator_rt.canned import baseline as _baseline

_LEARNING_RATE = _baseline.LEARNING_RATE


def _baseline_model_fn_builder_v2(features, num_outputs, weight_column=None):
  """The baseline's variables and logits on `features`: ([bias], logits),
  the bias `baseline/bias` of shape [num_outputs] repeated per example."""
  bias, logits = _baseline.build_baseline(
      features=features, logits_dimension=num_outputs,
      weight_column=weight_column)
  return [bias], logits
