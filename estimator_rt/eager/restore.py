"""Restoring the eager engine's object-based checkpoints.

The eager engine's checkpoints (`tf.train.Checkpoint`) hold the model
variables by creation index under `model/<i>`, beside what lets another
mode or process line its own variables up with them: each one's
trainability (`model_trainable`) and name signature (`model_names`), the
optimizer's state and the global step. This module checks that a
checkpoint belongs to the model_fn before anything is read into its
variables (`align`), restores it (`restore`) or warm-starts from it
(`warm_start`). Which checkpoint to use, and saving, are the engines'
shared policy (`estimator_rt.checkpoints`).
"""

import dataclasses
from typing import Any, Dict, List, Optional

from absl import logging
import tensorflow as tf

from estimator_rt import checkpoints
from estimator_rt.eager.model import variable_signature
from estimator_rt import tf_errors
from estimator_rt.errors import IncompatibleCheckpointError
from estimator_rt.mode_keys import ModeKeys

_VALUE_SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'
_MASK_KEY = 'model_trainable' + _VALUE_SUFFIX
_NAMES_KEY = 'model_names' + _VALUE_SUFFIX


@dataclasses.dataclass(frozen=True)
class _Contents:
  """A checkpoint opened once: its reader and key -> (shape, dtype)."""

  reader: Any
  shapes: Dict[str, tuple]


def _read(path: str) -> _Contents:
  reader = checkpoints.reader(path)
  shapes = reader.get_variable_to_shape_map()
  dtypes = reader.get_variable_to_dtype_map()
  return _Contents(reader=reader, shapes={
      k: (tuple(v), dtypes[k]) for k, v in shapes.items()})


def _entry(prefix: str, index: int) -> str:
  return f'{prefix}/{index}{_VALUE_SUFFIX}'


def _saved_model_entries(contents: _Contents) -> List[tuple]:
  """[(shape, dtype, trainable, name)] of the checkpoint's model variables.

  `name` is the variable's signature (see eager.model.variable_signature).
  """
  saved = contents.shapes
  count = sum(1 for k in saved
              if k.startswith('model/') and k.endswith(_VALUE_SUFFIX))
  mask = [bool(t) for t in contents.reader.get_tensor(_MASK_KEY)]
  names = [n.decode() for n in contents.reader.get_tensor(_NAMES_KEY)]
  return [saved[_entry('model', j)] + (mask[j], names[j])
          for j in range(count)]


class _Alignment:
  """Compares one mode's model variables with a checkpoint's entries, and
  words the refusal when they do not belong together."""

  _HINT = ('Use a fresh model_dir for a different model, or warm-start from '
           'the old one.')

  def __init__(self, *, path: str, source: str, ours, entries):
    self.path = path
    self.source = source
    self.ours = ours
    self.entries = entries

  def matches(self, variable, entry) -> bool:
    shape, dtype, trainable, name = entry
    return (shape == tuple(variable.shape) and
            dtype == variable.dtype.base_dtype and
            trainable == variable.trainable and
            name == variable_signature(variable))

  def refuse(self, what: str, *, missing: bool = False
             ) -> IncompatibleCheckpointError:
    """The refusal; `missing`: the checkpoint lacks a variable the
    model_fn creates (2.15's restore raised NotFoundError then)."""
    if missing:
      return tf_errors.CheckpointMissingVariableError(
          f'{tf_errors.MISSING_FROM_CHECKPOINT}: {self.source} holds '
          f'checkpoint {self.path} of a different model: {what}. '
          f'{self._HINT}')
    return IncompatibleCheckpointError(
        f'{self.source} holds checkpoint {self.path} of a different model: '
        f'{what}. {self._HINT}')

  def describe(self, i: int) -> str:
    return f'#{i} ({self.ours[i].name})'

  def ours_as_text(self, i: int) -> str:
    variable = self.ours[i]
    return f'{tuple(variable.shape)} {variable.dtype.base_dtype.name}'


def _align_one_to_one(alignment: _Alignment) -> Dict[int, int]:
  """TRAIN: the checkpoint's model variables are exactly the model_fn's."""
  ours, entries = alignment.ours, alignment.entries
  for i, variable in enumerate(ours):
    if i >= len(entries) or not alignment.matches(variable, entries[i]):
      found = (f'{entries[i][0]} {entries[i][1].name}' if i < len(entries)
               else 'missing')
      raise alignment.refuse(
          f'model variable {alignment.describe(i)} is {found} there but '
          f'{alignment.ours_as_text(i)} in the model_fn',
          missing=i >= len(entries))
  if len(entries) != len(ours):
    raise alignment.refuse(f'it has {len(entries)} model variables, the '
                           f'model_fn creates {len(ours)}',
                           missing=len(entries) < len(ours))
  return {i: i for i in range(len(ours))}


def _align_in_order(alignment: _Alignment, mode: str) -> Dict[int, int]:
  """EVAL and PREDICT: the model_fn's variables in the checkpoint's order,
  skipping non-trainable entries they do not create."""
  ours, entries = alignment.ours, alignment.entries
  mapping = {}
  j = 0
  for i, variable in enumerate(ours):
    k = j
    while k < len(entries) and not alignment.matches(variable, entries[k]):
      if entries[k][2]:
        k = len(entries)  # Never skip a trainable entry.
        break
      k += 1
    if k < len(entries):
      mapping[i] = k
      j = k + 1
    elif not (mode == ModeKeys.EVAL and not variable.trainable):
      raise alignment.refuse(
          f'model variable {alignment.describe(i)}, '
          f'{alignment.ours_as_text(i)} in the model_fn, has no match there',
          missing=True)
  unmatched = [k for k, entry in enumerate(entries)
               if entry[2] and k not in mapping.values()]
  if unmatched:
    raise alignment.refuse(
        f'its trainable variable model/{unmatched[0]} '
        f'{entries[unmatched[0]][0]} is not created by the model_fn in '
        f'{mode!r} mode')
  return mapping


def align(path: str, graph, *, source: str,
          contents: Optional[_Contents] = None) -> Dict[int, int]:
  """Maps each of `graph`'s model variables to its entry in checkpoint `path`.

  TRAIN must match the checkpoint one to one. EVAL and PREDICT match the
  checkpoint's model variables in order (by shape, dtype, trainability and
  name signature), skipping entries they do not create, which must be
  non-trainable (a train_op's optimizer state); an EVAL variable with no
  entry must be non-trainable too (evaluation-local state, such as a
  (value, update_op) metric's) and is left out. Every trainable entry must
  be matched. `contents` is the checkpoint if the caller already read it.

  Returns:
    {index in graph.model_variables: index in the checkpoint}.

  Raises:
    IncompatibleCheckpointError: the checkpoint belongs to another model.
  """
  contents = contents or _read(path)
  if any(key not in contents.shapes for key in (
      'global_step' + _VALUE_SUFFIX, _MASK_KEY, _NAMES_KEY)):
    raise tf_errors.CheckpointMissingVariableError(
        f'{tf_errors.MISSING_FROM_CHECKPOINT}: {source} holds checkpoint '
        f'{path} that was not written by estimator_rt\'s training (no '
        f'global_step or model signature). {_Alignment._HINT}')  # pylint: disable=protected-access
  alignment = _Alignment(path=path, source=source, ours=graph.model_variables,
                         entries=_saved_model_entries(contents))
  if graph.mode == ModeKeys.TRAIN:
    return _align_one_to_one(alignment)
  return _align_in_order(alignment, graph.mode)


def _optimizer_matches(contents: _Contents, graph) -> bool:
  if graph.optimizer is None:
    return True
  saved = contents.shapes
  optimizer_state = graph.checkpoint.optimizer
  for i, variable in enumerate(optimizer_state):
    entry = saved.get(_entry('optimizer', i))
    if entry is None or entry[0] != tuple(variable.shape):
      return False
  return sum(1 for k in saved if k.startswith('optimizer/')) == len(
      optimizer_state)


def restore(graph, path: str, *, source: str,
            io_device: Optional[str] = None) -> None:
  """Restores `graph`'s state from checkpoint `path`, after checking it.

  Optimizer state is restored when it matches (same optimizer); otherwise
  the optimizer starts fresh, with a warning.

  Args:
    graph: the EagerModel to restore.
    path: the checkpoint prefix.
    source: where the checkpoint came from, for errors.
    io_device: the device that reads the files (this process's CPU when
      the variables live on other machines); None: the variables' devices.
  """
  options = checkpoints.checkpoint_options(io_device)
  contents = _read(path)
  mapping = align(path, graph, source=source, contents=contents)
  graph.set_local_variables(
      [v for i, v in enumerate(graph.model_variables) if i not in mapping])
  if graph.mode == ModeKeys.TRAIN:
    if _optimizer_matches(contents, graph):
      graph.checkpoint.read(path, options=options).expect_partial()
      return
    logging.warning(
        'Checkpoint %s has optimizer state for a different optimizer; '
        'restoring the model and global step, starting the optimizer fresh.',
        path)
  model = {str(j): graph.model_variables[i] for i, j in mapping.items()}
  tf.train.Checkpoint(global_step=graph.global_step, model=model).read(
      path, options=options).expect_partial()


def warm_start(graph, source: str, *, io_device: Optional[str] = None
               ) -> str:
  """Initializes the model variables (only) from another checkpoint.

  Args:
    graph: the EagerModel, before any training (TRAIN), or evaluating or
      predicting without a checkpoint (EVAL, PREDICT: its variables are
      matched with the checkpoint's as `restore` matches them).
    source: a checkpoint prefix or a model_dir.
    io_device: as for `restore`.

  Returns:
    The checkpoint path used.
  """
  path = checkpoints.resolve_checkpoint(source, what='warm_start_from')
  if graph.mode != ModeKeys.TRAIN:
    mapping = align(path, graph, source=f'warm_start_from={source!r}')
    model = {str(j): graph.model_variables[i] for i, j in mapping.items()}
    tf.train.Checkpoint(model=model).read(
        path, options=checkpoints.checkpoint_options(io_device)
    ).expect_partial()
    return path
  saved = _read(path).shapes
  for i, variable in enumerate(graph.model_variables):
    entry = saved.get(_entry('model', i))
    if entry is None or entry[0] != tuple(variable.shape):
      raise IncompatibleCheckpointError(
          f'warm_start_from={source!r}: checkpoint {path} does not hold '
          f'model variable #{i} ({variable.name}, shape '
          f'{tuple(variable.shape)}); warm start needs the same model '
          'variables.')
  tf.train.Checkpoint(model=graph.model_variables).read(
      path, options=checkpoints.checkpoint_options(io_device)).expect_partial()
  return path
