"""tf.estimator 2.15's `export.export` module, over estimator_rt.export.

The receivers and receiver-fn builders are the runtime's (they check their
tensors with 2.15's ValueError words); the names here are the ones 2.15's
module had beyond its public ones, which module_paths.json serves.
"""

from estimator_rt.export import build_raw_supervised_input_receiver_fn
from estimator_rt.export import build_supervised_input_receiver_fn_from_input_fn
from estimator_rt.export import ServingInputReceiver
from estimator_rt.export import SupervisedInputReceiver
from estimator_rt.export import TensorServingInputReceiver
from estimator_rt.export import UnsupervisedInputReceiver

# The names 2.15 gave a lone tensor passed where a dict was expected.
SINGLE_FEATURE_DEFAULT_NAME = 'feature'
SINGLE_RECEIVER_DEFAULT_NAME = 'input'
SINGLE_LABEL_DEFAULT_NAME = 'label'

__all__ = [
    'ServingInputReceiver', 'SupervisedInputReceiver',
    'TensorServingInputReceiver', 'UnsupervisedInputReceiver',
    'build_raw_supervised_input_receiver_fn',
    'build_supervised_input_receiver_fn_from_input_fn',
    'SINGLE_FEATURE_DEFAULT_NAME', 'SINGLE_RECEIVER_DEFAULT_NAME',
    'SINGLE_LABEL_DEFAULT_NAME',
]
