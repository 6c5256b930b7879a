"""tf.estimator 2.15's `export.function` module: a model_fn as functions.

2.15 wrapped a model_fn, and an input receiver fn, into concrete functions
of one graph whose variables live outside it (TensorFlow's
`wrap_function.WrappedGraph`), for TF2-style exports of Estimators. Here
is `_EstimatorWrappedGraph`, over TensorFlow's WrappedGraph and the
runtime's EstimatorSpec and receivers: the model_fn's spec is kept, and
the function returns its predictions (and, in TRAIN, its train_op); the
receiver fn becomes one function per group of receiver tensors, from the
received tensors to the features (and labels).

`ModelFunction` holds one `EstimatorSpecFunction` per mode, all sharing
one set of variables: `train(features, labels)` runs a training step,
`predict(features)` returns the predictions. In 2.15 (TF 2.15) these no
longer ran: TensorFlow's Function had stopped calling the hook
`EstimatorSpecFunction` overrode, so a call traced the model_fn as a plain
tf.function and failed on its ops; here each call runs the model_fn's
graph of that mode (one per input signature), as 2.15 meant them to.
"""

import tensorflow as tf
from tensorflow.python.eager import wrap_function
from tensorflow.python.framework import func_graph

from tensorflow.python.util import function_utils

from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.spec import EstimatorSpec

# The input name of a receiver group that is one tensor, as 2.15's
# export_utils named it.
_SINGLE_RECEIVER_NAME = 'input'
_RECEIVER_FN_NAME = '_input_receiver'


def _input_receiver_fn_name(name):
  """The name of the function of receiver group `name` (None: the
  default group)."""
  return _RECEIVER_FN_NAME if name is None else f'{_RECEIVER_FN_NAME}_{name}'


def _filter_estimator_spec_outputs(spec: EstimatorSpec) -> dict:
  """What the wrapped model_fn returns of its spec: the predictions, and
  in TRAIN the train_op (running the function runs a training step)."""
  if spec.mode == ModeKeys.TRAIN:
    return {'predictions': spec.predictions, 'train_op': spec.train_op}
  return {'predictions': spec.predictions}


def _canonicalize_receiver_tensors(receiver_tensors) -> dict:
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
        return _filter_estimator_spec_outputs(result)
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
    return [(_prune_receiver_tensors(
        self._wrapped_function, tensors, self.graph.structured_outputs,
        _input_receiver_fn_name(name)), name) for name, tensors in groups]


def _prune_receiver_tensors(wrapped_function, receiver_tensors, outputs,
                            name):
  """`wrapped_function` pruned to a function `name` from `receiver_tensors`
  (a group, as `_canonicalize_receiver_tensors` makes it) to `outputs`."""
  inputs = _canonicalize_receiver_tensors(receiver_tensors)
  return wrapped_function.prune(
      inputs, outputs, name=name,
      input_signature=(None,
                       func_graph.convert_structure_to_signature(inputs)))


def _wrap_and_verify_model_fn(model_fn, mode=None, config=None, params=None,
                              input_signature=None):
  """(a function of the tensors alone, whether it takes labels): `model_fn`
  called with `mode`, `params` and `config` where it declares them, as
  `fn(features, labels=None)` if it takes labels (and `input_signature`,
  if given, has two parts), else `fn(features)`.

  Raises:
    ValueError: model_fn's arguments are not an Estimator's (see
      model_fn.verify_model_fn_args).
  """
  from estimator_rt.compat.served import model_fn as model_fn_lib  # pylint: disable=g-import-not-at-top
  model_fn_lib.verify_model_fn_args(model_fn, params)
  args = function_utils.fn_args(model_fn)
  kwargs = {name: value for name, value in (
      ('mode', mode), ('params', params), ('config', config)) if name in args}
  if 'labels' not in args:
    return (lambda features: model_fn(features=features, **kwargs)), False
  if input_signature is None or len(input_signature) == 2:

    def with_labels(features, labels=None):
      return model_fn(features=features, labels=labels, **kwargs)

    return with_labels, True
  return (lambda features: model_fn(features=features, labels=None,
                                    **kwargs)), True


class _EstimatorSpecFunction(tf.__internal__.function.Function):
  """A function of the tensors a model_fn takes, each call running the
  model_fn's graph for the call's input signature (made once, in an
  `_EstimatorWrappedGraph` whose variables `variable_holder` holds), and
  returning its outputs (`_filter_estimator_spec_outputs`).

  Args:
    python_function: the model_fn as a function of its tensors
      (`_wrap_and_verify_model_fn`).
    name: the mode (the graph's functions are named `model_fn_<name>`).
    variable_holder: a `wrap_function.VariableHolder` sharing variables
      (None: a new one).
    **kwargs: as tf.function's (`input_signature`).
  """

  def __init__(self, python_function, name, variable_holder=None, **kwargs):
    super().__init__(python_function, name, **kwargs)
    self._variable_holder = variable_holder or wrap_function.VariableHolder(
        share_variables=True)
    self._graphs = {}

  def __call__(self, *args):
    signature = func_graph.convert_structure_to_signature(args)
    key = repr(signature)
    if key not in self._graphs:
      graph = _EstimatorWrappedGraph(self._variable_holder)
      self._graphs[key] = (graph, graph.wrap_model_fn(
          self._python_function, self._name, args=list(args), kwargs={}))
    return self._graphs[key][1](*args)

  def estimator_spec(self, *args):
    """The spec the model_fn returned in the graph of `args`' signature,
    or None if it was not called with such arguments yet."""
    found = self._graphs.get(repr(
        func_graph.convert_structure_to_signature(args)))
    return None if found is None else found[0].estimator_spec


class EstimatorSpecFunction(_EstimatorSpecFunction):
  """`_EstimatorSpecFunction` of a model_fn for `mode`: called with
  (features, labels) or (features) alone, as `expects_labels` says.

  Args:
    fn: the model_fn.
    mode: a ModeKeys value.
    config: passed to the model_fn as `config`, if it takes one.
    params: passed to the model_fn as `params`, if it takes them.
    variable_holder: a `wrap_function.VariableHolder` sharing variables.
    **kwargs: as tf.function's (`input_signature`).
  """

  def __init__(self, fn, mode, config=None, params=None,
               variable_holder=None, **kwargs):
    python_function, self.expects_labels = _wrap_and_verify_model_fn(
        fn, mode=mode, config=config, params=params,
        input_signature=kwargs.get('input_signature'))
    super().__init__(python_function, mode, variable_holder=variable_holder,
                     **kwargs)


class ModelFunction(tf.__internal__.tracking.AutoTrackable):
  """A model_fn's function of each mode, sharing one set of variables
  (`variables`, by name), checkpointable with them.

  Args:
    config: passed to the model_fn as `config`.
    params: passed to the model_fn as `params`.
  """

  def __init__(self, config=None, params=None):
    self._config = config
    self._params = params
    self._functions = {}
    self._variable_holder = wrap_function.VariableHolder(share_variables=True)
    # A trackable reference, so that a checkpoint holds the variables.
    self._variables_by_name = self._variable_holder.variables

  @staticmethod
  def from_function(model_fn, all_modes=None, config=None, params=None):
    """A ModelFunction of `model_fn` for `all_modes` (default: TRAIN, EVAL
    and PREDICT)."""
    function = ModelFunction(config=config, params=params)
    for mode in (list(all_modes) if all_modes is not None else
                 [ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT]):
      function.add_mode(model_fn, mode)
    return function

  @property
  def variables(self):
    """The variables the modes' graphs share, by name."""
    return self._variables_by_name

  def add_mode(self, fn, mode, input_signature=None):
    """Adds `fn`'s function for `mode`.

    Raises:
      ValueError: `mode` has one already.
    """
    if mode in self._functions:
      raise UserInputError(
          f'ModelFunction object has multiple functions with name {mode}.')
    self._functions[mode] = EstimatorSpecFunction(
        fn, mode, config=self._config, params=self._params,
        variable_holder=self._variable_holder,
        input_signature=input_signature)

  def train(self, features, labels):
    """Runs a training step; returns the predictions and train_op."""
    return self.call(ModeKeys.TRAIN, features, labels)

  def evaluate(self, features, labels):
    return self.call(ModeKeys.EVAL, features, labels)

  def predict(self, features):
    return self.call(ModeKeys.PREDICT, features)

  def call(self, mode, features, labels=None):
    """The outputs of `mode`'s function on `features` (and `labels`, if
    its model_fn takes them).

    Raises:
      ValueError: no function was added for `mode`.
    """
    if mode not in self._functions:
      raise UserInputError(
          f'Mode {mode} is not defined the ModelFunction. To add modes, use '
          f'the `add_mode()` function. Available modes: '
          f'{list(self._functions)}')
    function = self._functions[mode]
    if function.expects_labels:
      return function(features, labels)
    return function(features)
