"""Which engine runs a model_fn, and the interface both engines offer.

Two engines carry out `Estimator`'s train, evaluate, predict and export:

  - the eager engine (`eager_engine.EagerEngine`) for TF2 model_fns: the
    model_fn is called eagerly once to create its variables, then traced
    into compiled loops; object-based checkpoints (`tf.train.Checkpoint`).
  - the graph engine (`graph.engine.GraphEngine`) for TF1-style model_fns:
    the model_fn builds a `tf.Graph` that a monitored session runs one step
    per `session.run`, as tf.estimator did; name-based checkpoints
    (`tf.compat.v1.train.Saver`), the format tf.estimator wrote.

Both have the same methods, with `Estimator`'s semantics: `train(input_fn,
*, hooks, steps, max_steps, saving_listeners)`, `check_evaluation(input_fn,
*, steps, name)`, `evaluate(input_fn, *, steps, hooks, checkpoint_path,
name)`, `predict(input_fn, *, predict_keys, hooks, checkpoint_path,
yield_single_examples)` and `export_saved_model(export_dir_base, *,
serving_input_receiver_fn, checkpoint_path, input_fn)`.

The rule (`choose_engine`), so that no setting is needed:

  1. `RunConfig(engine='eager' | 'graph')` wins when given.
  2. Work on an existing checkpoint goes to the engine that wrote it: a
     checkpoint with TensorFlow's object graph is the eager engine's, one
     without (tf.estimator's, or the graph engine's) the graph engine's.
     Training on a model_dir that has one continues in its engine.
  3. Otherwise (a fresh model_dir) the model_fn is called once eagerly in
     TRAIN mode on the input's first batch. It is TF1-style, and goes to
     the graph engine, when that call raises TensorFlow's RuntimeError for
     an API that only works in a graph (its message names eager execution:
     `Optimizer.minimize` of a loss tensor, `tf.compat.v1.metrics`,
     `tf.compat.v1.placeholder`, `Saver`, ...) or returns a `Scaffold` or
     `SessionRunHook`s, which only a session can honour. Any other outcome
     (including any other error, which the eager engine then reports) goes
     to the eager engine.

A model_fn whose checkpoint's engine does not match what the model_fn is
gets one error saying so (rule 2 against rule 3).
"""

import dataclasses
import importlib
from typing import Any, Callable, Dict, Optional

from absl import logging
import tensorflow as tf

from estimator_rt import checkpoints
from estimator_rt import cluster
from estimator_rt import inputs
from estimator_rt import user_fns
from estimator_rt.errors import UserInputError
from estimator_rt.graph import compat as graph_compat
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.run_config import RunConfig

# TF1-style model_fns call tf.compat.v1.layers, in the probe already.
graph_compat.route_v1_layers_to_tf_keras()

EAGER = 'eager'
GRAPH = 'graph'

_ENGINE_CLASSES = {
    EAGER: ('estimator_rt.eager_engine', 'EagerEngine'),
    GRAPH: ('estimator_rt.graph.engine', 'GraphEngine'),
}

# What TensorFlow's graph-only APIs say when called eagerly (all raise
# RuntimeError): "... should be a function when eager execution is
# enabled", "tf.metrics.accuracy is not supported when eager execution is
# enabled", "tf.placeholder() is not compatible with eager execution", ...
_GRAPH_ONLY_MARK = 'eager execution'


def make_engine(kind: str, **kwargs):
  """An engine of `kind` (EAGER or GRAPH) for these Estimator arguments."""
  module, name = _ENGINE_CLASSES[kind]
  return getattr(importlib.import_module(module), name)(**kwargs)


def needs_early_eager_engine(config: RunConfig) -> bool:
  """Whether the eager engine must exist before any op runs: a training
  task of multi_worker_mirrored configures its collective ops then."""
  task = config.task_info
  return (config.engine != GRAPH and
          config.train_distribute == cluster.MULTI_WORKER_MIRRORED and
          (task is None or task.task_type in (cluster.CHIEF, cluster.WORKER)))


def is_object_based(checkpoint_path: str) -> bool:
  """Whether a checkpoint was written by tf.train.Checkpoint (the eager
  engine) rather than by a name-based Saver (tf.estimator, the graph
  engine)."""
  names = tf.train.load_checkpoint(checkpoint_path).get_variable_to_shape_map()
  return '_CHECKPOINTABLE_OBJECT_GRAPH' in names


def graph_only_reason(error: BaseException) -> Optional[str]:
  """The message of TensorFlow's graph-only RuntimeError in `error`'s
  chain of causes, or None if there is none."""
  seen = set()
  while error is not None and id(error) not in seen:
    seen.add(id(error))
    if isinstance(error, RuntimeError) and _GRAPH_ONLY_MARK in str(error):
      return str(error).strip().splitlines()[0]
    error = error.__cause__ or error.__context__
  return None


@dataclasses.dataclass
class Probe:
  """Calls a model_fn eagerly once, in TRAIN mode, to see which engine it
  needs (rule 3 above). The answer is kept: a model_fn is one kind."""

  model_fn: Callable
  input_fn: Callable
  params: Dict[str, Any]
  config: RunConfig
  _kind: Optional[str] = None
  _reason: Optional[str] = None

  def kind(self) -> str:
    if self._kind is None:
      self._reason = self._graph_reason()
      self._kind = GRAPH if self._reason else EAGER
      if self._reason:
        logging.info('Running model_fn %s in the graph engine (TF1-style: %s).',
                     user_fns.fn_name(self.model_fn), self._reason)
    return self._kind

  @property
  def reason(self) -> Optional[str]:
    return self._reason

  def _graph_reason(self) -> Optional[str]:
    context = (tf.distribute.InputContext()
               if user_fns.input_fn_takes_context(self.input_fn) else None)
    dataset = user_fns.call_input_fn(self.input_fn, self.params, context,
                                     role='train input_fn')
    try:
      element = next(iter(dataset.take(1)))
    except (StopIteration, tf.errors.OutOfRangeError):
      return None  # Empty input: the eager engine reports it.
    except Exception:  # pylint: disable=broad-except
      return None  # The engine reading the input reports it, in its words.
    features, labels = inputs.split_element(element)
    try:
      spec = user_fns.call_model_fn(self.model_fn, features, labels,
                                    ModeKeys.TRAIN, self.params, self.config)
    except Exception as e:  # pylint: disable=broad-except
      return graph_only_reason(e)
    if getattr(spec, 'scaffold', None) is not None:
      return 'it returns a Scaffold'
    hooks = (list(getattr(spec, 'training_hooks', None) or ()) +
             list(getattr(spec, 'training_chief_hooks', None) or ()))
    if any(isinstance(h, tf.compat.v1.train.SessionRunHook) for h in hooks):
      return 'it returns SessionRunHooks'
    return None


def choose_engine(*, config: RunConfig, model_dir: str,
                  checkpoint_path: Optional[str] = None,
                  probe: Optional[Probe] = None) -> str:
  """EAGER or GRAPH, by the rule in this module's docstring.

  Args:
    config: the Estimator's RunConfig.
    model_dir: its model_dir.
    checkpoint_path: the checkpoint the work is on, if one was named.
    probe: how to ask the model_fn (training); None: work on checkpoints.

  Raises:
    UserInputError: the checkpoint's engine and the model_fn's differ.
  """
  if config.engine != 'auto':
    return config.engine
  if checkpoint_path is not None:
    path = checkpoints.resolve_checkpoint(checkpoint_path,
                                          what='checkpoint_path')
  else:
    path = checkpoints.latest_checkpoint(model_dir)
  if path is None:
    # Nothing written yet: evaluate and friends fail in either engine
    # with "no checkpoint"; training asks the model_fn.
    return probe.kind() if probe is not None else EAGER
  written_by = EAGER if is_object_based(path) else GRAPH
  if probe is not None and written_by == EAGER and probe.kind() == GRAPH:
    raise UserInputError(
        f'model_dir {model_dir!r} holds checkpoints of a TF2 model_fn '
        f'(written by the eager engine: {path}), but this model_fn is '
        f'TF1-style ({probe.reason}) and runs in the graph engine, whose '
        'checkpoints are name-based. Train it in a new model_dir.')
  return written_by


def checkpoint_variables(path: str) -> Dict[str, Callable[[], Any]]:
  """Variable name -> a function reading its value, for checkpoint `path`.

  Name-based checkpoints list their variables by graph name. The eager
  engine's list the model variables by creation index and keep their
  names aside (`model_names`); a name given twice gets `_1`, `_2`, ...
  """
  reader = tf.train.load_checkpoint(path)
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
