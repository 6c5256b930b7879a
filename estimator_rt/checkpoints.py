"""Checkpoints in model_dir: when to save, what to restore, and checking a
checkpoint belongs to this model before touching it.

Checkpoints are TF2 object checkpoints named `model.ckpt-<global step>`
(the prefix tf.estimator used), listed in model_dir's `checkpoint` state
file by `tf.train.CheckpointManager`.
"""

import dataclasses
import os
import re
import tempfile
import time
from typing import Any, Dict, List, Optional

from absl import logging
import tensorflow as tf

from estimator_rt.errors import IncompatibleCheckpointError
from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.model_graph import variable_signature

CHECKPOINT_NAME = 'model.ckpt'
_VALUE_SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'
_MASK_KEY = 'model_trainable' + _VALUE_SUFFIX
_NAMES_KEY = 'model_names' + _VALUE_SUFFIX
_STEP_RE = re.compile(r'-(\d+)$')


def latest_checkpoint(model_dir: Optional[str]) -> Optional[str]:
  """Path prefix of the newest checkpoint in `model_dir`, or None."""
  if not model_dir or not tf.io.gfile.isdir(model_dir):
    return None
  return tf.train.latest_checkpoint(model_dir)


def checkpoint_step(path: str) -> int:
  """The global step a checkpoint path was saved at (from its name)."""
  match = _STEP_RE.search(path)
  if not match:
    raise ValueError(f'checkpoint path {path!r} does not end in -<step>.')
  return int(match.group(1))


def resolve_checkpoint(path_or_dir: str, *, what: str) -> str:
  """A checkpoint prefix from a checkpoint prefix or a directory.

  Raises:
    UserInputError: nothing there is a checkpoint.
  """
  if tf.io.gfile.isdir(path_or_dir):
    found = tf.train.latest_checkpoint(path_or_dir)
    if found is None:
      raise UserInputError(
          f'{what}={path_or_dir!r} is a directory with no checkpoint in it.')
    return found
  if not tf.io.gfile.exists(path_or_dir + '.index'):
    raise UserInputError(
        f'{what}={path_or_dir!r} is neither a checkpoint (no '
        f'{path_or_dir}.index) nor a directory holding one.')
  return path_or_dir


@dataclasses.dataclass(frozen=True)
class _Contents:
  """A checkpoint opened once: its reader and key -> (shape, dtype)."""

  reader: Any
  shapes: Dict[str, tuple]


def _read(path: str) -> _Contents:
  reader = tf.train.load_checkpoint(path)
  shapes = reader.get_variable_to_shape_map()
  dtypes = reader.get_variable_to_dtype_map()
  return _Contents(reader=reader, shapes={
      k: (tuple(v), dtypes[k]) for k, v in shapes.items()})


def _entry(prefix: str, index: int) -> str:
  return f'{prefix}/{index}{_VALUE_SUFFIX}'


def _saved_model_entries(contents: _Contents) -> List[tuple]:
  """[(shape, dtype, trainable, name)] of the checkpoint's model variables.

  `name` is the variable's signature (see model_graph.variable_signature).
  """
  saved = contents.shapes
  count = sum(1 for k in saved
              if k.startswith('model/') and k.endswith(_VALUE_SUFFIX))
  mask = [bool(t) for t in contents.reader.get_tensor(_MASK_KEY)]
  names = [n.decode() for n in contents.reader.get_tensor(_NAMES_KEY)]
  return [saved[_entry('model', j)] + (mask[j], names[j])
          for j in range(count)]


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
  saved = contents.shapes
  hint = ('Use a fresh model_dir for a different model, or warm-start from '
          'the old one.')
  if any(key not in saved for key in ('global_step' + _VALUE_SUFFIX,
                                      _MASK_KEY, _NAMES_KEY)):
    raise IncompatibleCheckpointError(
        f'{source} holds checkpoint {path} that was not written by '
        f'estimator_rt\'s training (no global_step or model signature). '
        f'{hint}')
  entries = _saved_model_entries(contents)
  ours = graph.model_variables

  def describe(i):
    v = ours[i]
    return f'#{i} ({v.name})'

  def ours_as_text(i):
    return f'{tuple(ours[i].shape)} {ours[i].dtype.base_dtype.name}'

  def matches(variable, entry):
    shape, dtype, trainable, name = entry
    return (shape == tuple(variable.shape) and
            dtype == variable.dtype.base_dtype and
            trainable == variable.trainable and
            name == variable_signature(variable))

  if graph.mode == ModeKeys.TRAIN:
    for i, variable in enumerate(ours):
      if i >= len(entries) or not matches(variable, entries[i]):
        found = (f'{entries[i][0]} {entries[i][1].name}' if i < len(entries)
                 else 'missing')
        raise IncompatibleCheckpointError(
            f'{source} holds checkpoint {path} of a different model: model '
            f'variable {describe(i)} is {found} there but {ours_as_text(i)} '
            f'in the model_fn. {hint}')
    if len(entries) != len(ours):
      raise IncompatibleCheckpointError(
          f'{source} holds checkpoint {path} of a different model: it has '
          f'{len(entries)} model variables, the model_fn creates {len(ours)}. '
          f'{hint}')
    return {i: i for i in range(len(ours))}
  mapping = {}
  j = 0
  for i, variable in enumerate(ours):
    k = j
    while k < len(entries) and not matches(variable, entries[k]):
      if entries[k][2]:
        k = len(entries)  # Never skip a trainable entry.
        break
      k += 1
    if k < len(entries):
      mapping[i] = k
      j = k + 1
    elif not (graph.mode == ModeKeys.EVAL and not variable.trainable):
      raise IncompatibleCheckpointError(
          f'{source} holds checkpoint {path} of a different model: model '
          f'variable {describe(i)}, {ours_as_text(i)} in the model_fn, has no '
          f'match there. {hint}')
  unmatched = [k for k, entry in enumerate(entries)
               if entry[2] and k not in mapping.values()]
  if unmatched:
    raise IncompatibleCheckpointError(
        f'{source} holds checkpoint {path} of a different model: its '
        f'trainable variable model/{unmatched[0]} {entries[unmatched[0]][0]} '
        f'is not created by the model_fn in {graph.mode!r} mode. {hint}')
  return mapping


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


def _options(io_device: Optional[str]) -> Optional[tf.train.CheckpointOptions]:
  # Without an I/O device TensorFlow reads and writes a checkpoint on the
  # devices that hold the variables: in parameter-server and standalone-
  # client training, on the ps (or worker) machines, which may not even
  # have model_dir.
  if io_device is None:
    return None
  return tf.train.CheckpointOptions(experimental_io_device=io_device)


def restore(graph, path: str, *, source: str,
            io_device: Optional[str] = None) -> None:
  """Restores `graph`'s state from checkpoint `path`, after checking it.

  Optimizer state is restored when it matches (same optimizer); otherwise
  the optimizer starts fresh, with a warning.

  Args:
    graph: the ModelGraph to restore.
    path: the checkpoint prefix.
    source: where the checkpoint came from, for errors.
    io_device: the device that reads the files (this process's CPU when
      the variables live on other machines); None: the variables' devices.
  """
  options = _options(io_device)
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
    graph: the TRAIN ModelGraph, before any training.
    source: a checkpoint prefix or a model_dir.
    io_device: as for `restore`.

  Returns:
    The checkpoint path used.
  """
  path = resolve_checkpoint(source, what='warm_start_from')
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
      path, options=_options(io_device)).expect_partial()
  return path


class CheckpointSaver:
  """Saves `checkpoint` to `directory` by steps or seconds, keeping the last N.

  Args:
    checkpoint: the tf.train.Checkpoint to save.
    directory: where to save (model_dir).
    max_to_keep: how many recent checkpoints to keep; 0 keeps all.
    every_steps: save when the global step reaches a multiple of this.
    every_secs: save when this many seconds passed since the last save.
    io_device: the device that writes the files (see `restore`).
  """

  def __init__(self, *, checkpoint: tf.train.Checkpoint, directory: str,
               max_to_keep: int, every_steps: Optional[int],
               every_secs: Optional[float], io_device: Optional[str] = None):
    self._options = _options(io_device)
    self._manager = tf.train.CheckpointManager(
        checkpoint, directory=directory, max_to_keep=max_to_keep or None,
        checkpoint_name=CHECKPOINT_NAME)
    self._every_steps = every_steps
    self._every_secs = every_secs
    self._last_save_time = time.time()
    latest = self._manager.latest_checkpoint
    self._last_saved_step = checkpoint_step(latest) if latest else None

  def next_save_step(self, step: int) -> Optional[int]:
    """The next step at which a step-based save is due (None: not by steps)."""
    if not self._every_steps:
      return None
    return (step // self._every_steps + 1) * self._every_steps

  def is_due(self, step: int) -> bool:
    if step == self._last_saved_step:
      return False
    if self._every_steps:
      return step % self._every_steps == 0
    return time.time() - self._last_save_time >= self._every_secs

  def save(self, step: int) -> Optional[str]:
    """Saves at `step` unless already saved there; returns the path or None."""
    if step == self._last_saved_step:
      return None
    path = self._manager.save(checkpoint_number=step, options=self._options)
    self._last_save_time = time.time()
    self._last_saved_step = step
    return path

  @property
  def last_saved_step(self) -> Optional[int]:
    return self._last_saved_step


def ensure_writable_dir(model_dir: str) -> None:
  """Checks that `model_dir` exists or can be created, and can be written.

  Local paths only are probed (remote filesystems answer at first write).
  Nothing is left behind.

  Raises:
    UserInputError: the directory cannot be written.
  """
  if '://' in model_dir:
    return
  path = os.path.abspath(model_dir)
  probe = path
  while not os.path.exists(probe):
    parent = os.path.dirname(probe)
    if parent == probe:
      break
    probe = parent
  if not os.path.isdir(probe):
    raise UserInputError(
        f'model_dir={model_dir!r} cannot be created: {probe} is a file, not '
        'a directory.')
  # os.access says yes to root on read-only mounts; a real (immediately
  # deleted) temporary file is the only reliable answer.
  try:
    with tempfile.TemporaryFile(dir=probe):
      pass
  except OSError as e:
    raise UserInputError(
        f'model_dir={model_dir!r} is not writable ({probe}: {e.strerror}); '
        'choose another model_dir or fix its permissions.') from e
