"""Which engine runs a model_fn, decided without a setting.

Two engines (`engine.Engine`) carry out `Estimator`'s train, evaluate,
predict and export:

  - the eager engine (`eager.engine.EagerEngine`) for TF2 model_fns: the
    model_fn is called eagerly once to create its variables, then traced
    into compiled loops; object-based checkpoints (`tf.train.Checkpoint`).
  - the graph engine (`graph.engine.GraphEngine`) for TF1-style model_fns:
    the model_fn builds a `tf.Graph` that a monitored session runs one step
    per `session.run`, as tf.estimator did; name-based checkpoints
    (`tf.compat.v1.train.Saver`), the format tf.estimator wrote.

The rule (`choose_engine`), so that no setting is needed:

  1. `RunConfig(engine='eager' | 'graph')` wins when given.
  2. Work on an existing checkpoint goes to the engine that wrote it: a
     checkpoint with the eager engine's layout (TensorFlow's object graph
     and its model signature) is the eager engine's, one without an object
     graph (tf.estimator's, or the graph engine's) the graph engine's.
     Training on a model_dir that has one continues in its engine. An
     object-based checkpoint of another layout (a program's own
     tf.train.Checkpoint, or the one a TF1-style model_fn saves through
     `Scaffold(saver=tf.train.Checkpoint(...))`, as tf.estimator 2.15's
     object_checkpointing_test does) names no engine: rule 3 decides.
  3. Otherwise (a fresh model_dir) the eager engine starts, and its first
     call of the model_fn (the build call, before anything is written)
     tells: the model_fn goes to the graph engine, as tf.estimator always
     built a graph, when that call does not run eagerly
     (`errors.GraphModelFnError`): it raises TensorFlow's RuntimeError for
     an API that only works in a graph (its message names eager
     execution: `Optimizer.minimize` of a loss tensor,
     `tf.compat.v1.metrics`, `tf.compat.v1.placeholder`, `Saver`, ...), or
     anything else (a library's own check, `tensor.op` on an eager
     tensor, ...), or it returns a `Scaffold` or `SessionRunHook`s, which
     only a session can honour. Only model_fns that run eagerly stay in
     the eager engine. What the graph engine then raises is what is
     reported. Not sent to a graph: estimator_rt's own `UserInputError`s
     (the same in both engines) and TensorFlow op errors raised on the
     input's values (an InvalidArgumentError: a graph would meet them at
     its first step).

A TF1-style model_fn on a model_dir the eager engine wrote gets one error
saying so (rule 2 against rule 3); a model_fn that merely fails there gets
its own error.
"""

import importlib
from typing import Any, Callable, Dict, Optional

import tensorflow as tf

from estimator_rt import checkpoints
from estimator_rt import inputs
from estimator_rt import roles
from estimator_rt.eager import model as eager_model
from estimator_rt import user_fns
from estimator_rt.errors import GraphModelFnError
from estimator_rt.graph import compat as graph_compat
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.run_config import RunConfig

# TF1-style model_fns call tf.compat.v1.layers, in the eager build call
# already (which is how they are told apart).
graph_compat.route_v1_layers_to_tf_keras()

EAGER = 'eager'
GRAPH = roles.GRAPH_ENGINE

_ENGINE_CLASSES = {
    EAGER: ('estimator_rt.eager.engine', 'EagerEngine'),
    GRAPH: ('estimator_rt.graph.engine', 'GraphEngine'),
}


def make_engine(kind: str, **kwargs):
  """An engine of `kind` (EAGER or GRAPH) for these Estimator arguments."""
  module, name = _ENGINE_CLASSES[kind]
  return getattr(importlib.import_module(module), name)(**kwargs)


def graph_reason(*, model_fn: Callable, input_fn: Callable, params: dict,
                 config: RunConfig) -> Optional[str]:
  """Rule 3 outside any strategy: calls the model_fn eagerly in TRAIN mode
  on the input's first element; why it is TF1-style, or None."""
  context = (tf.distribute.InputContext()
             if user_fns.input_fn_takes_context(input_fn) else None)
  try:
    dataset = user_fns.call_input_fn(input_fn, params, context,
                                     role='train input_fn', config=config)
  except GraphModelFnError as e:
    return e.reason  # It returns tensors: only a graph reads them.
  features, labels = inputs.split_element(next(iter(dataset.take(1))))
  with tf.distribute.get_strategy().scope():
    return eager_model.graph_reason_of_call(
        model_fn=model_fn, features=features, labels=labels,
        mode=ModeKeys.TRAIN, params=params, config=config)


def is_object_based(checkpoint_path: str) -> bool:
  """Whether a checkpoint was written by tf.train.Checkpoint (the eager
  engine) rather than by a name-based Saver (tf.estimator, the graph
  engine)."""
  names = checkpoints.reader(checkpoint_path).get_variable_to_shape_map()
  return '_CHECKPOINTABLE_OBJECT_GRAPH' in names


def choose_engine(*, config: RunConfig, model_dir: str,
                  checkpoint_path: Optional[str] = None) -> Optional[str]:
  """EAGER or GRAPH by rules 1 and 2 of this module's docstring, or None
  when nothing is written yet (rule 3: start eager, see what happens).

  Args:
    config: the Estimator's RunConfig.
    model_dir: its model_dir.
    checkpoint_path: the checkpoint the work is on, if one was named.
  """
  if config.engine != 'auto':
    return config.engine
  if checkpoint_path is not None:
    path = checkpoints.resolve_checkpoint(checkpoint_path,
                                          what='checkpoint_path')
  else:
    path = checkpoints.latest_checkpoint(model_dir)
  if path is None:
    return None
  if not is_object_based(path):
    return GRAPH
  return EAGER if _has_eager_engine_layout(path) else None


# What every checkpoint the eager engine writes holds beside the object
# graph (see eager/restore.py).
_EAGER_LAYOUT_KEY = 'model_names/.ATTRIBUTES/VARIABLE_VALUE'


def _has_eager_engine_layout(checkpoint_path: str) -> bool:
  names = checkpoints.reader(checkpoint_path).get_variable_to_shape_map()
  return _EAGER_LAYOUT_KEY in names


def checkpoint_variables(path: str) -> Dict[str, Callable[[], Any]]:
  """Variable name -> a function reading its value, for checkpoint `path`.

  Name-based checkpoints list their variables by graph name. The eager
  engine's list the model variables by creation index and keep their
  names aside (`model_names`); a name given twice gets `_1`, `_2`, ...
  """
  reader = checkpoints.reader(path)
  keys = reader.get_variable_to_shape_map()
  if not is_object_based(path):
    return {key: (lambda key=key: reader.get_tensor(key)) for key in keys}
  suffix = '/.ATTRIBUTES/VARIABLE_VALUE'
  names = [n.decode() for n in reader.get_tensor('model_names' + suffix)]
  found = {'global_step': lambda: reader.get_tensor('global_step' + suffix)}
  for index, name in enumerate(names):
    unique, count = name, 0
    while unique in found:
      count += 1
      unique = f'{name}_{count}'
    key = f'model/{index}{suffix}'
    found[unique] = lambda key=key: reader.get_tensor(key)
  return found
