"""tf.estimator 2.15's `util`: reading an input_fn's result in a graph.

Libraries built on tf.estimator (TPU and distribution helpers, custom
Estimator subclasses) call `parse_input_fn_result` to turn what an input_fn
returned into `(features, labels, input_hooks)` in the current graph, as
the graph engine reads an input (graph/model.py's read_input): a dataset
through an initializable iterator, whose initializer a hook runs when the
session starts.
"""

import time

import tensorflow as tf
from tensorflow.python.util import function_utils

from estimator_rt.core.errors import InputFnError

fn_args = function_utils.fn_args

MAX_DIRECTORY_CREATION_ATTEMPTS = 10


def parse_input_fn_result(result):
  """`(features, labels, input_hooks)` of an input_fn's `result`: a dataset
  (of `(features, labels)` or of features; read with an initializable
  iterator that the one hook returned initializes), a `(features, labels)`
  pair or features alone. labels is None when absent.

  Raises:
    ValueError: `result`, or the dataset's element, is a list or tuple
      whose length is not 2.
  """
  hooks = []
  if isinstance(result, (tf.data.Dataset, tf.compat.v1.data.Dataset)):
    iterator = tf.compat.v1.data.make_initializable_iterator(result)
    hooks.append(_DatasetInitializerHook(iterator))
    result = iterator.get_next()
  return parse_iterator_result(result) + (hooks,)


def parse_iterator_result(result):
  """`(features, labels)` of an input element: a list or tuple must be a
  pair; anything else is the features, without labels.

  Raises:
    ValueError: a list or tuple of another length than 2.
  """
  if isinstance(result, (list, tuple)):
    if len(result) != 2:
      raise InputFnError(
          'input_fn should return (features, labels) as a len 2 tuple; got '
          f'a {type(result).__name__} of {len(result)} items.')
    return result[0], result[1]
  return result, None


class _InitializerHook(tf.compat.v1.train.SessionRunHook):
  """Runs an initializer, made when the graph is finalized, in each new
  session."""

  def _initializer(self):
    raise NotImplementedError

  def begin(self):
    self._op = self._initializer()

  def after_create_session(self, session, coord):
    del coord
    session.run(self._op)


class _DatasetInitializerHook(_InitializerHook):
  """Initializes a `make_initializable_iterator` iterator when the session
  starts."""

  def __init__(self, iterator):
    self._iterator = iterator

  def _initializer(self):
    return self._iterator.initializer


class DistributedIteratorInitializerHook(_InitializerHook):
  """Initializes a distribution strategy's iterator (its `initialize()`)
  when the session starts."""

  def __init__(self, iterator):
    self._iterator = iterator

  def _initializer(self):
    return self._iterator.initialize()


class MultiHostDatasetInitializerHook(tf.compat.v1.train.SessionRunHook):
  """Runs the initializers of several hosts' iterators when the session
  starts, and logs how long they took."""

  def __init__(self, dataset_initializers):
    self._initializers = dataset_initializers

  def after_create_session(self, session, coord):
    del coord
    start = time.time()
    session.run(self._initializers)
    tf.compat.v1.logging.info('Initialized dataset iterators in %d seconds',
                              time.time() - start)
