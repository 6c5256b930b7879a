"""tf.estimator 2.15's protected Estimator methods that subclasses call.

Subclasses of 2.15's Estimator (Habana's, Horovod examples, 2.15's own
tests) build parts of a graph with the Estimator's helpers: call the
input_fn as the Estimator would and read it through an initializable
iterator, call the model_fn and get its checked EstimatorSpec, create the
global step. `Estimator` inherits them from `ProtectedMethods` here. They
work in the graph the caller builds (as in 2.15, where every mode was a
graph); the engines do not call them, so overriding them changes nothing
the runtime does (which is why `overrides.py` refuses such overrides, as
2.15 did).
"""

from typing import Any, Callable, List, Optional, Tuple

from absl import logging
import tensorflow as tf

from estimator_rt.inputs import pipeline as inputs
from estimator_rt.core import user_fns
from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.spec import EstimatorSpec


class IteratorInitializerHook(tf.compat.v1.train.SessionRunHook):
  """Initializes an input iterator once the session exists: a dataset's
  initializable iterator (`initializer`) or a strategy's distributed one
  (`initialize()`), as 2.15's `_DatasetInitializerHook` and
  `DistributedIteratorInitializerHook` did. The iterator is only read in
  `begin`, when the graph holds it."""

  def __init__(self, iterator: Any):
    self._iterator = iterator
    self._initializer = None

  def begin(self):
    initializer = getattr(self._iterator, 'initializer', None)
    self._initializer = (initializer if initializer is not None else
                         self._iterator.initialize())

  def after_create_session(self, session, coord):
    del coord
    session.run(self._initializer)


class ProtectedMethods:
  """2.15's protected helpers, over the Estimator's model_fn, params and
  config (`self._model_fn`, `self.params`, `self.config`)."""

  def _call_input_fn(self, input_fn: Callable, mode: Optional[str],
                     input_context: Any = None) -> Any:
    """Calls `input_fn` with the arguments it declares (`mode`, `params`,
    `config`, and `input_context` when one is given), on the CPU, as 2.15
    did; returns what it returns (a dataset, or features and labels)."""
    args = user_fns.declared_args(input_fn)
    takes = lambda name: name in args or '*' in args
    kwargs = {}
    if takes('mode'):
      kwargs['mode'] = mode
    if takes('params'):
      kwargs['params'] = self.params
    if takes('config'):
      kwargs['config'] = self.config
    if input_context is not None and takes('input_context'):
      logging.info('The `input_fn` accepts an `input_context` which will be '
                   'given by DistributionStrategy')
      kwargs['input_context'] = input_context
    with tf.compat.v1.device('/cpu:0'):
      return input_fn(**kwargs)

  def _get_iterator_from_input_fn(
      self, input_fn: Callable, mode: Optional[str],
      distribution: Any = None) -> Tuple[Any, List[Any]]:
    """(iterator, input hooks) of `input_fn`'s dataset in the current graph.

    With `distribution`, its `make_input_fn_iterator` (a tf.compat.v1
    strategy's) calls the input_fn with each input context; otherwise the
    dataset is read through an initializable iterator. The hooks
    initialize the iterator when the session starts.
    """
    if distribution is not None:
      iterator = distribution.make_input_fn_iterator(
          lambda input_context: self._call_input_fn(input_fn, mode,
                                                    input_context))
    else:
      dataset = self._call_input_fn(input_fn, mode)
      if not isinstance(dataset, tf.data.Dataset):
        raise UserInputError(
            f'input_fn {user_fns.fn_name(input_fn)} must return a '
            f'tf.data.Dataset to be read through an iterator; it returned '
            f'{type(dataset).__name__}.')
      iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
    return iterator, [IteratorInitializerHook(iterator)]

  def _get_features_and_labels_from_input_fn(
      self, input_fn: Callable, mode: Optional[str]
  ) -> Tuple[Any, Any, List[Any]]:
    """(features, labels, input hooks) of `input_fn` in the current graph:
    a dataset's next element through an initializable iterator (and the
    hook that initializes it), or the features and labels it returned."""
    result = self._call_input_fn(input_fn, mode)
    hooks = []
    if isinstance(result, tf.data.Dataset):
      iterator = tf.compat.v1.data.make_initializable_iterator(result)
      hooks.append(IteratorInitializerHook(iterator))
      result = iterator.get_next()
    features, labels = inputs.split_element(
        tuple(result) if isinstance(result, list) else result)
    return features, labels, hooks

  def _call_model_fn(self, features: Any, labels: Any, mode: str,
                     config: Any) -> EstimatorSpec:
    """Calls the model_fn with the arguments it declares (this Estimator's
    params, `config`) and returns its EstimatorSpec.

    Raises:
      ValueError: it returned something else.
    """
    spec = user_fns.call_model_fn(self._model_fn, features, labels, mode,
                                  self.params, config)
    if not isinstance(spec, EstimatorSpec):
      raise ModelFnError(
          'model_fn should return an EstimatorSpec: model_fn '
          f'{user_fns.fn_name(self._model_fn)} returned '
          f'{type(spec).__name__} in mode {mode!r}.')
    return spec

  def _create_global_step(self, graph: tf.Graph) -> tf.Variable:
    """Creates the global step in `graph` (it must have none yet)."""
    return tf.compat.v1.train.create_global_step(graph)

  def _create_and_assert_global_step(self, graph: tf.Graph) -> tf.Variable:
    """Creates the global step in `graph` and checks it is an integer
    scalar.

    Raises:
      ValueError: it is not.
    """
    step = self._create_global_step(graph)
    if step is not tf.compat.v1.train.get_global_step(graph):
      raise UserInputError(
          f'_create_global_step created {step!r}, which is not the global '
          'step of the graph (tf.compat.v1.train.get_global_step).')
    if not step.dtype.base_dtype.is_integer:
      raise UserInputError(
          f'The global step must be an integer variable; it is {step.dtype}.')
    return step
