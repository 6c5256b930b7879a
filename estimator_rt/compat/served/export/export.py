"""tf.estimator 2.15's `export.export` module, over estimator_rt.export.

The receivers and receiver-fn builders are the runtime's (they check their
tensors with 2.15's ValueError words); the names here are the ones 2.15's
module had beyond its public ones, which module_paths.json serves: the
runtime's checks of receiver tensors and its placeholders shaped like a
tensor, under 2.15's names.
"""

from estimator_rt.export import saved_model as export_lib

from estimator_rt.export.saved_model import build_raw_supervised_input_receiver_fn
from estimator_rt.export.saved_model import build_supervised_input_receiver_fn_from_input_fn
from estimator_rt.export.saved_model import ServingInputReceiver
from estimator_rt.export.saved_model import SupervisedInputReceiver
from estimator_rt.export.saved_model import TensorServingInputReceiver
from estimator_rt.export.saved_model import UnsupervisedInputReceiver

# The names 2.15 gave a lone tensor passed where a dict was expected.
SINGLE_FEATURE_DEFAULT_NAME = 'feature'
SINGLE_RECEIVER_DEFAULT_NAME = 'input'
SINGLE_LABEL_DEFAULT_NAME = 'label'

# The name of a lone tensor given where a dict was expected, by field.
_SINGLE_TENSOR_DEFAULT_NAMES = export_lib.SINGLE_NAMES


def wrap_and_check_input_tensors(tensors, field_name, allow_int_keys=False):
  """`tensors` as a dict (a lone tensor under its field's default name) of
  string (or int, if `allow_int_keys`) keys to Tensors, SparseTensors or
  RaggedTensors.

  Raises:
    ValueError: `tensors` is None, or a key or value is not one of these.
  """
  return export_lib.wrapped_tensors(tensors, field_name,
                                    allow_int_keys=allow_int_keys)


def _check_tensor(tensor, name, error_label='feature'):
  """Raises ValueError unless `tensor` is a Tensor, SparseTensor or
  RaggedTensor."""
  export_lib.check_tensor(tensor, name or None, error_label)


def _check_tensor_key(name, error_label='feature', allow_ints=False):
  """Raises ValueError unless `name` is a string (or an int, if
  `allow_ints`)."""
  export_lib.check_tensor_key(name, error_label, allow_ints=allow_ints)


def _placeholder_from_tensor(t, default_batch_size=None):
  """A placeholder of `t`'s dtype and shape, named as `t`'s op, its first
  (batch) dimension `default_batch_size`."""
  return export_lib.placeholder_like(t, default_batch_size)


def _placeholders_from_receiver_tensors_dict(input_vals,
                                             default_batch_size=None):
  """`_placeholder_from_tensor` of each tensor of `input_vals`, by name."""
  return {name: _placeholder_from_tensor(t, default_batch_size)
          for name, t in input_vals.items()}


__all__ = [
    'ServingInputReceiver', 'SupervisedInputReceiver',
    'TensorServingInputReceiver', 'UnsupervisedInputReceiver',
    'build_raw_supervised_input_receiver_fn',
    'build_supervised_input_receiver_fn_from_input_fn',
    'SINGLE_FEATURE_DEFAULT_NAME', 'SINGLE_RECEIVER_DEFAULT_NAME',
    'SINGLE_LABEL_DEFAULT_NAME',
]
