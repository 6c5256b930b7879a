"""tf.estimator 2.15's `export.function` module: `_EstimatorWrappedGraph`.

2.15 wrapped a model_fn, and an input receiver fn, into concrete functions
of one graph whose variables live outside it (TensorFlow's
`wrap_function.WrappedGraph`), for TF2-style exports of Estimators. Here
is that class, over TensorFlow's WrappedGraph and the runtime's
EstimatorSpec and receivers: the model_fn's spec is kept, and the
function returns its predictions (and, in TRAIN, its train_op); the
receiver fn becomes one function per group of receiver tensors, from the
received tensors to the features (and labels).
"""

import tensorflow as tf
from tensorflow.python.eager import wrap_function
from tensorflow.python.framework import func_graph

from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.spec import EstimatorSpec

# The input name of a receiver group that is one tensor, as 2.15's
# export_utils named it.
_SINGLE_RECEIVER_NAME = 'input'
_RECEIVER_FN_NAME = '_input_receiver'


def _spec_outputs(spec: EstimatorSpec) -> dict:
  """What the wrapped model_fn returns of its spec: the predictions, and
  in TRAIN the train_op (running the function runs a training step)."""
  if spec.mode == ModeKeys.TRAIN:
    return {'predictions': spec.predictions, 'train_op': spec.train_op}
  return {'predictions': spec.predictions}


def _receiver_inputs(receiver_tensors) -> dict:
  """A group of receiver tensors as the dict of a function's inputs (one
  tensor is named 'input').

  Raises:
    ValueError: a receiver tensor is not a dense tensor (2.15's wrapped
      functions took none).
  """
  for tensor in tf.nest.flatten(receiver_tensors):
    if not isinstance(tensor, tf.Tensor):
      raise UserInputError(
          'All receiver tensors must be tensors (composite tensors are not '
          f'yet supported): got {type(tensor).__name__}.')
  if isinstance(receiver_tensors, dict):
    return receiver_tensors
  return {_SINGLE_RECEIVER_NAME: receiver_tensors}


class _EstimatorWrappedGraph(wrap_function.WrappedGraph):
  """A WrappedGraph holding the global step, which wraps a model_fn (once)
  and input receiver fns into concrete functions of its graph.

  Args:
    As `WrappedGraph`'s (a `VariableHolder`, to share variables).
  """

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    # The global step exists first, as the model_fn and the input fns may
    # read it.
    self._global_step_read_fn = self.wrap_function(
        tf.compat.v1.train.get_or_create_global_step, signature=[])
    self._concrete_model_fn = None
    self._estimator_spec = None

  @property
  def global_step(self):
    """The global step's value now."""
    return self._global_step_read_fn()

  @property
  def model_fn(self):
    """The wrapped model_fn (a concrete function), or None."""
    return self._concrete_model_fn

  @property
  def estimator_spec(self) -> EstimatorSpec:
    """The spec the wrapped model_fn returned, with its graph's tensors.

    Raises:
      ValueError: no model_fn was wrapped yet.
    """
    if self._concrete_model_fn is None:
      raise UserInputError(
          'Please wrap a model function first: call wrap_model_fn before '
          'reading estimator_spec.')
    return self._estimator_spec

  def wrap_model_fn(self, model_fn, mode, args=None, kwargs=None,
                    signature=None):
    """Wraps `model_fn(*args, **kwargs)` into a concrete function of this
    graph named 'model_fn_<mode>', keeping the EstimatorSpec it returns.

    Raises:
      ValueError: a model_fn was wrapped in this graph already.
    """
    if self._concrete_model_fn is not None:
      raise UserInputError(
          '`wrap_model_fn` should be only called once per graph: this graph '
          'wraps a model_fn already; make another _EstimatorWrappedGraph '
          '(with the same VariableHolder to share variables).')

    def call(*call_args, **call_kwargs):
      result = model_fn(*call_args, **call_kwargs)
      if isinstance(result, EstimatorSpec):
        self._estimator_spec = result
        return _spec_outputs(result)
      return result

    self._concrete_model_fn = self._wrap_function(
        call, args, kwargs, signature, f'model_fn_{mode}')
    return self._concrete_model_fn

  def wrap_input_receiver_fn(self, input_receiver_fn):
    """Wraps a no-argument receiver fn into concrete functions of this
    graph: [(function, None)] from its receiver tensors to its features
    (or features and labels), then one (function, name) for each group of
    its receiver_tensors_alternatives."""
    made = []

    def build():
      receiver = input_receiver_fn()
      made.append(receiver)
      labels = getattr(receiver, 'labels', None)
      return receiver.features if labels is None else (receiver.features,
                                                       labels)

    func_graph.func_graph_from_py_func(
        None, self._variable_holder.call_with_variable_creator_scope(build),
        args=None, kwargs=None, signature=[],
        add_control_dependencies=False, func_graph=self.graph)
    receiver = made[0]
    groups = [(None, receiver.receiver_tensors)]
    groups += sorted(
        (getattr(receiver, 'receiver_tensors_alternatives', None) or {}
        ).items())
    functions = []
    for name, tensors in groups:
      inputs = _receiver_inputs(tensors)
      functions.append((self._wrapped_function.prune(
          inputs, self.graph.structured_outputs,
          name=(_RECEIVER_FN_NAME if name is None else
                f'{_RECEIVER_FN_NAME}_{name}'),
          input_signature=(
              None, func_graph.convert_structure_to_signature(inputs))),
                        name))
    return functions
