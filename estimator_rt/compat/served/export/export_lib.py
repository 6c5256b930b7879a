"""tf.estimator 2.15's `export.export_lib` module: the names 2.15 gathered
there from TensorFlow's model_utils and its `export.export`, beyond the
public ones (module_paths.json serves those), over estimator_rt.export:
the supervised receivers and outputs of TRAIN and EVAL exports, and the
tags and signature keys of each mode's MetaGraph (which
SavedModelEstimator's subclasses read)."""

from estimator_rt.compat.served.export.export import wrap_and_check_input_tensors
from estimator_rt.export import _SupervisedOutput
from estimator_rt.export import build_supervised_input_receiver_fn_from_input_fn
from estimator_rt.export import EXPORT_TAG_MAP
from estimator_rt.export import SIGNATURE_KEY_MAP
from estimator_rt.export import SupervisedInputReceiver
from estimator_rt.export import TrainOutput
from estimator_rt.export import UnsupervisedInputReceiver

__all__ = [
    'EXPORT_TAG_MAP', 'SIGNATURE_KEY_MAP', 'SupervisedInputReceiver',
    'TrainOutput', 'UnsupervisedInputReceiver',
    'build_supervised_input_receiver_fn_from_input_fn',
    'wrap_and_check_input_tensors',
]
