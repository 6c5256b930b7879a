"""model_to_estimator's reading of a tf_keras model built in a `tf.Graph`
(under `with tf.Graph().as_default():` or TF1 graph mode, where tf_keras
makes its v1 `training_v1.Model`), and running the estimator eagerly when
it is called from such a graph.

The model's weights live in that graph and are read through tf_keras's
session. As tf.estimator 2.15's model_to_estimator did, a model whose
weights were never initialized gets a new tf_keras session made with the
RunConfig's session_config (code reads it back from
`tf.compat.v1.keras.backend.get_session()`); its weights are then its
initializers' values. The estimator itself runs in the eager engine, which
the Estimator enters from a graph context by `eager()`.
"""

import contextlib
import weakref
from typing import Any, Dict, List

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import


# The ids of the models seen built in a graph (with a weak reference, so
# that a new object at a freed id is not taken for one).
_GRAPH_BUILT: Dict[int, Any] = {}


def is_graph_built(model) -> bool:
  """Whether `model` is a tf_keras model built in a graph (a v1 model).

  Remembered once seen: cloning such a model eagerly (model_to_estimator
  does) makes tf_keras swap the bases of the model's classes to the eager
  Model's, after which it no longer looks like one (a second
  model_to_estimator of the same model then found it uncompiled)."""
  seen = _GRAPH_BUILT.get(id(model))
  if seen is not None and seen() is model:
    return True
  try:
    from tf_keras.src.engine import training_v1  # pylint: disable=g-import-not-at-top
  except ImportError:
    return False
  if not isinstance(model, training_v1.Model):
    return False
  _GRAPH_BUILT[id(model)] = weakref.ref(model)
  return True


def is_compiled(model) -> bool:
  return bool(getattr(model, 'optimizer', None)) and (
      getattr(model, 'loss', None) is not None)


def compile_arguments(model) -> Dict[str, Any]:
  """What compile() was given (tf_keras objects and names): loss,
  loss_weights, metrics, weighted_metrics."""
  return {
      'loss': model.loss,
      'loss_weights': model.loss_weights,
      'metrics': getattr(model, '_compile_metrics', None),
      'weighted_metrics': getattr(model, '_compile_weighted_metrics', None),
  }


def _any_weight_initialized(model) -> bool:
  return any(hasattr(weight, '_keras_initialized') for weight in model.weights)


def weights(model, session_config) -> List[np.ndarray]:
  """The model's weights, in `model.weights` order, read in its graph; a
  model with none initialized first gets 2.15's new tf_keras session made
  with `session_config` (see the module docstring)."""
  with model.weights[0].graph.as_default() if model.weights else (
      contextlib.nullcontext()):
    if model.weights and not _any_weight_initialized(model):
      # tf_keras's own (tf.compat.v1.keras is Keras 3's unless
      # TF_USE_LEGACY_KERAS is set).
      from tf_keras.src import backend  # pylint: disable=g-import-not-at-top
      backend.set_session(tf.compat.v1.Session(config=session_config))
    return [np.array(value) for value in model.get_weights()]


def optimizer_config(model, optimizer) -> Dict[str, Any]:
  """`optimizer.get_config()` of a graph-built model's optimizer, its
  hyperparameters (variables of the model's graph) read through tf_keras's
  session in that graph, also when called from eager execution."""
  graph = (model.weights[0].graph if model.weights else
           tf.compat.v1.get_default_graph())
  with context.graph_mode(), graph.as_default():
    return optimizer.get_config()


@contextlib.contextmanager
def eager():
  """Eager execution inside, when called from a graph context (a program
  or test running its tf.estimator code under `tf.Graph().as_default()` or
  TF1 graph mode, as 2.15's estimator ran in graphs of its own)."""
  if tf.executing_eagerly():
    yield
    return
  with context.eager_mode():
    yield
