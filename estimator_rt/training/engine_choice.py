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
  3. Otherwise (a fresh model_dir) the model_fn's first call decides, and
     that call is a real one: tf.estimator called a model_fn once per graph
     it built, and code counts on it (a model_fn that sets
     `optimizer.iterations` on an optimizer made outside it, logs, counts
     or registers what it builds), so choosing must not cost a call of its
     own. The first call is the graph engine's build (`Estimator.
     _run_first`), in the mode of the work asked for, as tf.estimator's
     always was; the graph engine keeps it and runs it. What it returns
     sends it to the eager engine (`errors.EagerModelFnError`) only where
     it is estimator_rt's TF2 API, which no tf.estimator model_fn returns:
     a Keras optimizer for the runtime to apply, a Keras 3 optimizer's
     `apply_gradients` as train_op, Keras 3 metric objects whose variables
     a graph cannot update (a strategy's; plain ones are updated there, as
     tf.estimator updated tf.keras metrics). A TRAIN-mode
     build settles the engine; EVAL and PREDICT ones without these run in
     the graph engine and settle nothing. A model_fn that fails in the
     graph is tried in the eager engine (a TF2 model_fn that reads a
     tensor's value, or whose input_fn wants the eager engine's
     InputContext); where that call shows it TF1-style
     (`errors.GraphModelFnError`), the graph's error is reported.

     The eager engine's build call decides instead, as before tf.estimator
     programs ran here unchanged (a model_fn that does not run eagerly,
     `errors.GraphModelFnError`, then goes to the graph engine), where the
     graph engine cannot run the RunConfig (an estimator_rt setting
     tf.estimator never had: a standalone client, `checkpoint_input`,
     `jit_compile`, a strategy the graph engine does not run), and where
     the model_fn holds Keras 3 layers, optimizers, metrics or variables
     made outside it (`keras3_state_reason`: a graph would build their
     weights out of the eager engine's reach; tf.estimator's model_fns use
     Keras 2; model_to_estimator's for a Keras 3 model says so itself), and
     where it warm-starts from the eager engine's checkpoint
     (`eager_warm_start_reason`). A TF2 model_fn (estimator_rt's own API) is called more than
     once anyway: once eagerly to create its variables, then once per
     compiled function; on a fresh model_dir, its first call is the graph
     build that tells (RunConfig(engine='eager') skips it).

A TF1-style model_fn on a model_dir the eager engine wrote gets one error
saying so (rule 2 against rule 3); a model_fn that merely fails there gets
its own error.
"""

import functools
import importlib
import sys
from typing import Any, Callable, Dict, List, Optional

import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.core import legacy_layers
from estimator_rt.inputs import pipeline as inputs
from estimator_rt.cluster import roles
from estimator_rt.training.eager import model as eager_model
from estimator_rt.core import user_fns
from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.cluster.run_config import RunConfig

# TF1-style model_fns call tf.compat.v1.layers, in the eager build call
# already (which is how they are told apart).
legacy_layers.route_v1_layers_to_tf_keras()

EAGER = 'eager'
GRAPH = roles.GRAPH_ENGINE

_ENGINE_CLASSES = {
    EAGER: ('estimator_rt.training.eager.engine', 'EagerEngine'),
    GRAPH: ('estimator_rt.training.graph.engine', 'GraphEngine'),
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


def _keras3_state_classes() -> tuple:
  """Keras 3's classes of objects that own variables; none if the program
  never imported Keras 3 (then it holds none of them). `tf.keras` under
  TF_USE_LEGACY_KERAS is tf_keras, Keras 2: tf.estimator's own Keras."""
  keras = sys.modules.get('keras')
  if keras is None or not hasattr(keras, 'Variable'):
    return ()
  return (keras.layers.Layer, keras.optimizers.Optimizer, keras.Variable,
          keras.metrics.Metric)


def _held_objects(model_fn: Callable) -> List[Any]:
  """What `model_fn` holds from outside itself, one level deep: its
  closure, its defaults, the globals its code names, a partial's
  arguments and a bound method's object's attributes."""
  held = []
  while isinstance(model_fn, functools.partial):
    held += list(model_fn.args) + list(model_fn.keywords.values())
    model_fn = model_fn.func
  owner = getattr(model_fn, '__self__', None)
  if owner is not None:
    held += list(getattr(owner, '__dict__', {}).values())
  function = getattr(model_fn, '__func__', model_fn)
  code = getattr(function, '__code__', None)
  for cell in getattr(function, '__closure__', None) or ():
    try:
      held.append(cell.cell_contents)
    except ValueError:  # An empty cell.
      pass
  held += list(getattr(function, '__defaults__', None) or ())
  names = getattr(function, '__globals__', {})
  held += [names[name] for name in getattr(code, 'co_names', ())
           if name in names]
  return held


def keras3_state_reason(model_fn: Callable) -> Optional[str]:
  """Why `model_fn` is a TF2 model_fn before it is called, or None: it
  holds Keras 3 layers, models, optimizers, metrics or variables made
  outside it (closed over, a default, a global it names, a bound method's
  attribute), whose weights a call in a graph would build there, out of
  the eager engine's reach. tf.estimator's model_fns use Keras 2. A
  model_fn may say so itself (`model_fn.eager_engine_reason`, as
  model_to_estimator's does for a Keras 3 model and the bundled model_fns
  do)."""
  declared = getattr(model_fn, 'eager_engine_reason', None)
  if declared:
    return declared
  classes = _keras3_state_classes()
  if not classes:
    return None
  for value in _held_objects(model_fn):
    values = (list(value.values()) if isinstance(value, dict) else
              list(value) if isinstance(value, (list, tuple)) else [value])
    for item in values:
      if isinstance(item, classes):
        return (f'it holds the Keras 3 {type(item).__name__} '
                f'{getattr(item, "name", "")!r}, made outside it')
  return None


def eager_warm_start_reason(warm_start_settings) -> Optional[str]:
  """Why a model_fn on a model_dir with nothing written is first called by
  the eager engine, or None: it warm-starts from a checkpoint the eager
  engine wrote (object-based, its variables lined up by creation), which
  only that engine maps onto the model's variables. A path that is no
  checkpoint is the warm start's to report."""
  path = getattr(warm_start_settings, 'ckpt_to_initialize_from', None)
  if not path:
    return None
  try:
    path = checkpoints.resolve_checkpoint(path, what='warm_start_from')
  except UserInputError:
    return None
  if engine_of_checkpoint(path) == EAGER:
    return f'it warm-starts from {path!r}, a checkpoint of the eager engine'
  return None


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
  return engine_of_checkpoint(path)


def engine_of_checkpoint(path: str) -> Optional[str]:
  """GRAPH for a name-based checkpoint (tf.estimator's, the graph
  engine's), EAGER for one the eager engine wrote, None for another
  object-based one (a Scaffold's tf.train.Checkpoint: rule 3 decides)."""
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
