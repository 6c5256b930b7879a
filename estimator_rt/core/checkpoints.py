"""Checkpoints in model_dir, the policy both engines share: when to save,
which checkpoint to resume from, and checking that a checkpoint is whole
and free of NaN before anything uses it.

Checkpoints are named `model.ckpt-<global step>` (the prefix tf.estimator
used), whatever wrote them: the eager engine's are TF2 object checkpoints
(restored by `eager.restore`), the graph engine's name-based ones as
tf.estimator wrote (restored by its session). The `checkpoint` state file is written for
other tools (TensorBoard, tf.train.latest_checkpoint), but never trusted:
the files on disk say which checkpoints exist, and a checkpoint counts only
if every tensor in it reads back as a restore reads it (TensorFlow checks
each stored tensor's or slice's CRC) and no floating-point value is NaN
(infinities are values a variable may hold; see `_holds_nan`). A missing,
stale or garbage state file, a truncated or deleted data file, or a damaged
index makes the runtime fall back to the newest checkpoint that passes,
never to step 0.

A checkpoint's files are its `.index` and `.data-*` files and, beside a
graph-engine checkpoint, its `.meta` (the MetaGraphDef tf.estimator wrote
with each checkpoint, graph/graph_files.py): rotation, setting aside,
replacing and clearing up take them together; the `.meta` is not needed to
restore, so its absence does not make a checkpoint unusable.

Every file operation goes through TensorFlow's filesystems (`tf.io.gfile`,
TensorFlow's checkpoint reader), so a model_dir on gs://, s3://, hdfs://
or ram:// behaves as a local one. A checkpoint is read by its prefix
(`reader`), never through `tf.train.load_checkpoint`, which first asks the
filesystem whether the prefix is a directory: object stores and ram://
say yes for any prefix that other names start with.
"""

import dataclasses
import os
import re
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.core import checkpoint_slices
from estimator_rt.core import tf_errors
from estimator_rt.core.errors import CheckpointSaveError
from estimator_rt.core.errors import one_line
from estimator_rt.core.errors import UnusableCheckpointsError
from estimator_rt.core.errors import UserInputError

CHECKPOINT_NAME = 'model.ckpt'
STATE_FILE = 'checkpoint'
# Where a writer moves checkpoints it found unusable, so that every
# checkpoint left in model_dir restores, and nothing is destroyed.
UNUSABLE_DIR = 'unusable_checkpoints'
# The MetaGraphDef written beside a graph-engine checkpoint (and by
# tf.estimator's Saver beside each of its own).
META_SUFFIX = '.meta'
_META_RE = re.compile(re.escape(CHECKPOINT_NAME) + r'-(\d+)' + re.escape(META_SUFFIX) + '$')
_STEP_RE = re.compile(r'-(\d+)$')
_INDEX_RE = re.compile(re.escape(CHECKPOINT_NAME) + r'-(\d+)\.index$')
_DATA_RE = re.compile(re.escape(CHECKPOINT_NAME) + r'-(\d+)\.data-\d+-of-\d+$')
# What an interrupted save leaves: TensorFlow's shard directory
# (`<prefix>_temp/`), its index and data temp files (`.tempstate<n>`), the
# temp file of an atomic write of a .meta (`.meta.tmp<hex>`), of the state
# file (`checkpoint.tmp<hex>`) and of graph.pbtxt.
_LEFTOVER_RE = re.compile(
    re.escape(CHECKPOINT_NAME) + r'-\d+(_temp|\..*tempstate.*|' +
    re.escape(META_SUFFIX) + r'\.tmp.*)$|^(' + re.escape(STATE_FILE) +
    r'|graph\.pbtxt)\.tmp')


def reader(prefix: str):
  """TensorFlow's reader of the checkpoint at `prefix` (a
  `CheckpointReader`: `get_tensor`, `has_tensor`, the shape and dtype maps).

  Raises:
    tf.errors.OpError: it cannot be read (missing or damaged index).
  """
  # Not tf.train.load_checkpoint: it asks the filesystem whether `prefix`
  # is a directory first, and object stores and ram:// answer yes for a
  # prefix that other names start with (then it looks for a state file in
  # there and fails).
  return tf.compat.v1.train.NewCheckpointReader(prefix)


# The global step's key in name-based (graph engine, tf.estimator) and
# object-based (eager engine) checkpoints.
_GLOBAL_STEP_KEYS = ('global_step', 'global_step/.ATTRIBUTES/VARIABLE_VALUE')


def checkpoint_step(path: str) -> int:
  """The global step a checkpoint was saved at: from its name for
  tf.estimator's (`model.ckpt-<step>`); for a checkpoint of another name (a
  TF1 `Saver().save(session, 'model.ckpt')`, AdaNet's
  `increment.ckpt-<iteration>`, which tf.estimator took from the state
  file), the global step it holds, else the number its name ends in (0 if
  none)."""
  match = _STEP_RE.search(path)
  if match and os.path.basename(path) == f'{CHECKPOINT_NAME}-{match.group(1)}':
    return int(match.group(1))
  try:
    opened = reader(path)
  except (tf.errors.OpError, ValueError) as e:
    if match:
      return int(match.group(1))
    raise ValueError(f'checkpoint {path!r} has no step in its name and '
                     f'cannot be read ({one_line(e, limit=120)}).') from e
  for key in _GLOBAL_STEP_KEYS:
    if opened.has_tensor(key):
      return int(opened.get_tensor(key))
  return int(match.group(1)) if match else 0


# Unusable files already reported (checkpoints, the state file), so that
# looking again (the evaluator polls) does not repeat the warning.
_reported: Dict[str, Tuple] = {}


def _state_file_names(directory: str) -> List[str]:
  """Checkpoint prefixes the state file lists (a hint, never trusted), its
  newest (`model_checkpoint_path`) last."""
  if not tf.io.gfile.exists(os.path.join(directory, STATE_FILE)):
    return []
  try:
    state = tf.train.get_checkpoint_state(directory)
  except Exception as e:  # pylint: disable=broad-except
    # Empty, truncated or garbage: the files on disk still say everything.
    path = os.path.join(directory, STATE_FILE)
    try:
      stat = tf.io.gfile.stat(path)
      version = (stat.length, stat.mtime_nsec)
    except tf.errors.OpError:
      version = None  # Replaced or removed since.
    if _reported.get(path) != version:
      _reported[path] = version
      logging.warning('Ignoring the unreadable checkpoint state file %s '
                      '(%s); looking at the checkpoint files instead.', path,
                      one_line(e, limit=120))
    return []
  if state is None:
    return []
  names = list(state.all_model_checkpoint_paths)
  if state.model_checkpoint_path:
    names.append(state.model_checkpoint_path)
  return [n if os.path.isabs(n) or '://' in n else os.path.join(directory, n)
          for n in names]


def checkpoint_candidates(directory: Optional[str]) -> List[str]:
  """Prefixes of the checkpoints in `directory`, newest (highest step) first.

  The `model.ckpt-<step>.index` files on disk, plus any checkpoint the
  state file names whose index exists. Cheap: one listing, nothing opened.
  """
  if not directory or not tf.io.gfile.isdir(directory):
    return []
  found = {}
  for name in tf.io.gfile.listdir(directory):
    match = _INDEX_RE.match(name)
    if match:
      found[os.path.join(directory, name[:-len('.index')])] = int(
          match.group(1))
  named = _state_file_names(directory)
  for path in named:
    # Any prefix the state file names counts, whatever its name, as it did
    # for tf.estimator (programs and tests saved with their own Saver).
    if path not in found and tf.io.gfile.exists(path + '.index'):
      try:
        found[path] = checkpoint_step(path)
      except ValueError:
        continue  # An unreadable index: not a candidate, as a missing one.
  # At the same step, the one the state file names newest first: what
  # tf.estimator's latest_checkpoint() took.
  newest_named = named[-1] if named else None
  return sorted(found, key=lambda p: (found[p], p == newest_named, p),
                reverse=True)


def data_files(prefix: str) -> List[str]:
  """The data files (`<prefix>.data-*`) of the checkpoint at `prefix`, sorted.

  A local directory is listed by Python, a remote one (`scheme://`) by
  `tf.io.gfile.glob`: TensorFlow's glob starts a thread pool per call,
  0.3-0.8 ms against 0.02 for a listing, and a call that finds the newest
  checkpoint and tells whether its session holds it globs several times
  (a repeated `predict` paid 3-4 ms for it). The prefix is matched as it
  is, never as a pattern.
  """
  if '://' in prefix:
    return sorted(tf.io.gfile.glob(prefix + '.data-*'))
  directory, base = os.path.split(prefix)
  try:
    names = os.listdir(directory or '.')
  except OSError:
    return []
  start = base + '.data-'
  return sorted(os.path.join(directory, name) for name in names
                if name.startswith(start))


def _files_of(prefix: str) -> List[str]:
  """The files of the checkpoint at `prefix` that exist: its index first
  (without it the rest is no longer a checkpoint), its data, its .meta."""
  return ([prefix + '.index'] if tf.io.gfile.exists(prefix + '.index') else []
          ) + data_files(prefix) + (
              [prefix + META_SUFFIX]
              if tf.io.gfile.exists(prefix + META_SUFFIX) else [])


def files_fingerprint(prefix: str) -> Tuple:
  """(path, size, modification time) of each file of the checkpoint at
  `prefix`: what tells one content of it from another."""
  stats = []
  for path in sorted(_files_of(prefix)):
    stat = tf.io.gfile.stat(path)
    stats.append((path, stat.length, stat.mtime_nsec))
  return tuple(stats)


def content_id(path: Optional[str]) -> Optional[Tuple]:
  """What tells one content of the checkpoint at `path` from another (its
  files' `files_fingerprint`), or None: no checkpoint, its files vanished,
  or a filesystem that keeps no modification times (a rewrite at the same
  size would not show)."""
  if path is None:
    return None
  try:
    fingerprint = files_fingerprint(path)
  except tf.errors.OpError:
    return None
  if not fingerprint or not all(mtime for _, _, mtime in fingerprint):
    return None
  return (path, fingerprint)


def still_holds(held: Optional[Tuple], path: Optional[str]) -> bool:
  """Whether state that holds the checkpoint content `held` (a
  `content_id`) holds the checkpoint at `path` as its files are now: never
  when either cannot be told (no checkpoint, a filesystem without
  modification times), so that such state is restored again."""
  return held is not None and content_id(path) == held


# prefix -> (fingerprint of its files, problem or None): a checkpoint is
# read in full once per content, however often it is looked for (the
# evaluator polls; train_and_evaluate looks again after training).
_checked: Dict[str, Tuple[Tuple, Optional[str]]] = {}


def problem_with(path: str) -> Optional[str]:
  """Why checkpoint `path` cannot be used, or None if it can.

  Reads every tensor back as a restore reads it, a partitioned one by its
  stored slices (checkpoint_slices): TensorFlow verifies each one's CRC,
  so a truncated, overwritten or missing data file and a damaged index are
  all found; and no floating-point value may be NaN. Costs one read of the
  checkpoint, once per content of its files.
  """
  try:
    fingerprint = files_fingerprint(path)
  except tf.errors.OpError as e:  # Deleted while we looked.
    return f'its files vanished ({one_line(e, limit=120)})'
  known = _checked.get(path)
  if known is not None and known[0] == fingerprint:
    return known[1]
  problem = _find_problem(path)
  if all(mtime for _, _, mtime in fingerprint):
    # A filesystem that keeps no modification times (ram://) cannot tell a
    # file rewritten at the same size: read it again at every look.
    _checked[path] = (fingerprint, problem)
  return problem


class _Problem(str):
  """Why a checkpoint cannot be used (the str logged), with what reading
  it raised: `tf_class`, the OpError class tf.estimator 2.15's restore of
  it raised (DataLossError where nothing was read), and `reason`, its one
  line (or None)."""

  tf_class = tf.errors.DataLossError
  reason = None


# What TensorFlow's Python checkpoint reader raises in place of the OpError
# a restore op raises for the same status (pybind11's mapping of status
# codes to Python's classes).
_READER_ERRORS = {IndexError: tf.errors.OutOfRangeError,
                  ValueError: tf.errors.InvalidArgumentError,
                  NotImplementedError: tf.errors.UnimplementedError}


def _read_problem(what: str, error: BaseException) -> _Problem:
  problem = _Problem(f'{what} cannot be read ({one_line(error, limit=160)})')
  problem.reason = one_line(error, limit=160)
  if isinstance(error, tf.errors.OpError):
    # The reader raises the base class for a checksum that does not match
    # (its own wording's table lacks it), where the restore op raised
    # DataLossError.
    if type(error) is not tf.errors.OpError:
      problem.tf_class = type(error)
  else:
    problem.tf_class = _READER_ERRORS.get(type(error), problem.tf_class)
  return problem


def _unusable_error(message: str, problem: str) -> Exception:
  """An UnusableCheckpointsError of `message` about a checkpoint that has
  `problem` (`problem_with`'s), where tf.estimator 2.15's restore raised
  the OpError reading it raised: of that class, its reason first."""
  reason = getattr(problem, 'reason', None)
  return tf_errors.with_tf_class(
      UnusableCheckpointsError,
      getattr(problem, 'tf_class', tf.errors.DataLossError))(
          f'{reason}: {message}' if reason else message)


def _find_problem(path: str) -> Optional[str]:
  if not tf.io.gfile.exists(path + '.index'):
    return 'its .index file is missing'
  if not data_files(path):
    return 'its .data file is missing'
  try:
    opened = reader(path)
    keys = sorted(opened.get_variable_to_shape_map())
    dtypes = opened.get_variable_to_dtype_map()
    sliced = checkpoint_slices.stored_slices(opened)
  except Exception as e:  # pylint: disable=broad-except
    return _read_problem('its .index file', e)
  # Each stored slice as a restore reads it (a partitioned variable's slot
  # need not cover the whole tensor); an input iterator's state
  # (checkpoint_input) has no NumPy form. All in one run of the op.
  by_op = {key: (sliced.get(key, ['']), dtypes[key]) for key in keys
           if key in sliced or dtypes[key] == tf.variant}
  raw = checkpoint_slices.SliceReader(prefix=path)
  try:
    try:
      values = raw.read_all(by_op)
    except Exception:  # pylint: disable=broad-except
      values = {}  # One of them cannot be read: each alone says which.
    for key in keys:
      try:
        if key not in by_op:
          found = [opened.get_tensor(key)]
        else:
          found = values.get(key) or raw.read(key, *by_op[key])
      except Exception as e:  # pylint: disable=broad-except
        return _read_problem(f'tensor {key}', e)
      if any(_holds_nan(value) for value in found):
        return f'tensor {key} holds NaN values'
  finally:
    raw.close()
  return None


def _holds_nan(value) -> bool:
  """Whether a checkpoint's value has a NaN. Infinities are allowed: a
  variable may hold one from the start (a best loss initialised to inf, a
  -inf mask), and tf.estimator 2.15 restored them; training that diverges
  reaches NaN (inf - inf, 0 * inf) in its state or its loss."""
  array = np.asarray(value) if value is not None else None
  return (array is not None and array.dtype.kind in 'fc' and
          bool(np.isnan(array).any()))


@dataclasses.dataclass(frozen=True)
class Choice:
  """The newest usable checkpoint of a directory, and what was skipped.

  Attributes:
    path: the checkpoint prefix to restore, or None if the directory holds
      no checkpoint at all.
    skipped: (prefix, problem) of each newer checkpoint that cannot be used.
  """

  path: Optional[str]
  skipped: Tuple[Tuple[str, str], ...] = ()


def choose_checkpoint(directory: Optional[str], *, what: str = 'model_dir'
                      ) -> Choice:
  """The newest checkpoint in `directory` that is whole and free of NaN.

  Tries the candidates newest first and logs one warning for each one it
  skips, naming the file, why, and what is used instead.

  Raises:
    UnusableCheckpointsError: `directory` holds checkpoints, but none can
      be used (nothing is touched: they are the user's to recover); of the
      OpError class 2.15's restore of the newest raised, its reason first.
  """
  skipped, chosen = [], None
  for path in checkpoint_candidates(directory):
    problem = problem_with(path)
    if problem is None:
      chosen = path
      break
    if not tf.io.gfile.exists(path + '.index'):
      continue  # Removed since the listing (keep_checkpoint_max): not damage.
    skipped.append((path, problem))
  instead = (f'using {os.path.basename(chosen)}, the newest usable one'
             if chosen else 'no checkpoint there is usable')
  for path, problem in skipped:
    fingerprint = _checked.get(path, (None,))[0]
    if _reported.get(path) != fingerprint:
      _reported[path] = fingerprint
      logging.warning('Skipping checkpoint %s: %s; %s.', path, problem,
                      instead)
  if skipped and chosen is None:
    listed = '; '.join(f'{os.path.basename(p)}: {why}' for p, why in skipped)
    raise _unusable_error(
        f'{what} {directory!r} holds {len(skipped)} checkpoint(s) and none '
        f'can be used ({listed}). Nothing was written. Restore them from a '
        'backup, or move them away to start training from step 0.',
        skipped[0][1])
  return Choice(path=chosen, skipped=tuple(skipped))


def latest_checkpoint(model_dir: Optional[str]) -> Optional[str]:
  """Path prefix of the newest usable checkpoint in `model_dir`, or None.

  Raises:
    UnusableCheckpointsError: there are checkpoints but none is usable.
  """
  return choose_checkpoint(model_dir).path


def checkpoint_to_run(model_dir: str, checkpoint_path: Optional[str], *,
                      to: str) -> Optional[str]:
  """The checkpoint evaluate and predict restore: `checkpoint_path` (a
  prefix or a directory) if given, else model_dir's newest usable one, else
  None. With None, they run from the variables' initialization (and
  warm_start_from), as tf.estimator 2.15 did: a model evaluated before
  training gives a baseline, and a model_fn whose variables start trained
  (a Keras model's weights) predicts without training.

  Args:
    model_dir: the Estimator's model_dir.
    checkpoint_path: the checkpoint the caller named, or None.
    to: 'evaluate' or 'predict', for the log line.

  Raises:
    UserInputError: the named checkpoint cannot be used.
  """
  if checkpoint_path:
    return resolve_checkpoint(checkpoint_path, what='checkpoint_path')
  latest = latest_checkpoint(model_dir)
  if latest is None:
    # 2.15's words, which logs and tests look for.
    logging.info('Could not find trained model in model_dir: %s, running '
                 'initialization to %s.', model_dir, to)
  return latest


def checkpoint_to_read(model_dir: str, checkpoint_path: Optional[str]) -> str:
  """The checkpoint export uses: `checkpoint_path` (a prefix or a
  directory) if given, else model_dir's newest usable one.

  Raises:
    UserInputError: there is none (a ValueError starting with 2.15's
      words), or the named one cannot be used.
  """
  if checkpoint_path:
    return resolve_checkpoint(checkpoint_path, what='checkpoint_path')
  latest = latest_checkpoint(model_dir)
  if latest is None:
    # 2.15's words (export's own, not get_variable_value's) first.
    raise UserInputError(
        f"Couldn't find trained model at {model_dir}. No checkpoint there "
        'to export; train first or pass checkpoint_path.')
  return latest


def resolve_checkpoint(path_or_dir: str, *, what: str) -> str:
  """A usable checkpoint prefix from a checkpoint prefix or a directory.

  Raises:
    UserInputError: nothing there is a checkpoint, or it cannot be used.
  """
  # A prefix with an index is a checkpoint, whatever isdir says of it (ram://
  # and object stores call any prefix of a file's name a directory).
  if (not tf.io.gfile.exists(path_or_dir + '.index') and
      tf.io.gfile.isdir(path_or_dir)):
    found = choose_checkpoint(path_or_dir, what=what).path
    if found is None:
      raise UserInputError(
          f'{what}={path_or_dir!r} is a directory with no checkpoint in it.')
    return found
  if not tf.io.gfile.exists(path_or_dir + '.index'):
    # 2.15's words (its Saver's, restoring the path) first.
    raise UserInputError(
        f'The passed save_path is not a valid checkpoint: {path_or_dir} '
        f'({what}={path_or_dir!r} is neither a checkpoint, with no '
        f'{path_or_dir}.index, nor a directory holding one).')
  problem = problem_with(path_or_dir)
  if problem is not None:
    raise _unusable_error(
        f'{what}={path_or_dir!r} cannot be used: {problem}. Name another '
        'checkpoint, or leave it out to use the newest usable one.', problem)
  return path_or_dir


def _remove(paths: Sequence[str]) -> None:
  for path in paths:
    if tf.io.gfile.isdir(path):
      tf.io.gfile.rmtree(path)
    else:
      tf.io.gfile.remove(path)


def set_aside(skipped: Sequence[Tuple[str, str]], model_dir: str) -> None:
  """Moves unusable checkpoints into model_dir/unusable_checkpoints/.

  Called by the writer of model_dir once it resumed from an older one: the
  checkpoints left in model_dir then all restore, and the damaged files
  stay available to whoever wants to look at them.
  """
  if not skipped:
    return
  target = os.path.join(model_dir, UNUSABLE_DIR)
  tf.io.gfile.makedirs(target)
  for prefix, problem in skipped:
    for path in _files_of(prefix):
      tf.io.gfile.rename(path, os.path.join(target, os.path.basename(path)),
                         overwrite=True)
    _checked.pop(prefix, None)
    logging.warning('Moved unusable checkpoint %s (%s) to %s.',
                    os.path.basename(prefix), problem, target)


def remove_leftovers(model_dir: str) -> List[str]:
  """Removes what interrupted saves left in `model_dir`.

  That is TensorFlow's `<prefix>_temp/` shard directories and temp files,
  the state file's temp files, and data and .meta files whose index was
  never written or was removed first (a save or a rotation killed
  half-way). Only the writer of model_dir
  calls this, before it saves anything.

  Returns:
    The removed paths.
  """
  if not tf.io.gfile.isdir(model_dir):
    return []
  names = tf.io.gfile.listdir(model_dir)
  present = set(n.rstrip('/') for n in names)
  removed = []
  for name in names:
    name = name.rstrip('/')
    accessory = _DATA_RE.match(name) or _META_RE.match(name)
    orphan = accessory and (
        f'{CHECKPOINT_NAME}-{accessory.group(1)}.index' not in present)
    if orphan or _LEFTOVER_RE.search(name):
      path = os.path.join(model_dir, name)
      _remove([path])
      removed.append(path)
  if removed:
    logging.warning('Removed what an interrupted save left in %s: %s.',
                    model_dir, ', '.join(os.path.basename(p) for p in removed))
  return removed


def checkpoint_options(io_device: Optional[str]
                       ) -> Optional[tf.train.CheckpointOptions]:
  """Options that read and write checkpoint files from `io_device`."""
  # Without an I/O device TensorFlow reads and writes a checkpoint on the
  # devices that hold the variables: in parameter-server and standalone-
  # client training, on the ps (or worker) machines, which may not even
  # have model_dir.
  if io_device is None:
    return None
  return tf.train.CheckpointOptions(experimental_io_device=io_device)


class CheckpointSaver:
  """Saves `checkpoint` to `directory` by steps or seconds, keeping the last N.

  A save writes TensorFlow's checkpoint files (a save cut short leaves no
  index, or one that does not read back: either way `choose_checkpoint`
  never takes it), then the state file (atomically, by rename), then
  removes checkpoints beyond the newest `max_to_keep`. Which checkpoints exist comes from the files on disk, not
  from the state file, so a missing or stale state file neither loses
  track of old checkpoints nor keeps them forever.

  Args:
    checkpoint: the tf.train.Checkpoint to save.
    directory: where to save (model_dir).
    max_to_keep: how many recent checkpoints to keep; 0 keeps all.
    every_steps: save when the global step reaches a multiple of this.
    every_secs: save when this many seconds passed since the last save
      (with neither, `save` is only called at the end).
    last_saved_step: the step of the checkpoint training resumed from
      (None if it started fresh): no second save at that step.
    io_device: the device that writes the files (see `restore`).
  """

  def __init__(self, *, checkpoint: tf.train.Checkpoint, directory: str,
               max_to_keep: int, every_steps: Optional[int],
               every_secs: Optional[float],
               last_saved_step: Optional[int] = None,
               io_device: Optional[str] = None):
    self._checkpoint = checkpoint
    self._directory = directory
    self._max_to_keep = max_to_keep
    self._options = checkpoint_options(io_device)
    self._every_steps = every_steps
    self._every_secs = every_secs
    self._last_save_time = time.time()
    self._last_saved_step = last_saved_step

  def saves_at_start(self) -> bool:
    """Whether training saves a checkpoint of the state it starts from:
    with a save schedule (every_steps or every_secs), when it did not
    resume from a checkpoint, as tf.estimator 2.15's CheckpointSaverHook
    saved when a session started (`model.ckpt-0` on a new model_dir). 2.15
    also saved the checkpoint it had restored again; that is not done here:
    the run's only good checkpoint would be rewritten for nothing, and a
    kill during that save would lose it."""
    return self._last_saved_step is None and bool(
        self._every_steps or self._every_secs is not None)

  def next_save_step(self, step: int) -> Optional[int]:
    """The next step at which a step-based save is due (None: not by steps)."""
    if not self._every_steps:
      return None
    return (step // self._every_steps + 1) * self._every_steps

  def is_due(self, step: int) -> bool:
    """Whether a save is due at `step`: a multiple of every_steps was
    reached or passed since the last save (passed: parameter-server steps
    can overshoot when a lost worker's steps run again), or every_secs
    went by (neither: only the final save)."""
    if step == self._last_saved_step:
      return False
    if self._every_steps:
      return (step // self._every_steps >
              (self._last_saved_step or 0) // self._every_steps)
    if self._every_secs is None:
      return False
    return time.time() - self._last_save_time >= self._every_secs

  def save(self, step: int) -> Optional[str]:
    """Saves at `step` unless already saved there; returns the path or None.

    Raises:
      CheckpointSaveError: the files could not be written (disk full,
        permission denied, ...). What the failed save wrote is removed; the
        checkpoints saved before are untouched.
    """
    if step == self._last_saved_step:
      return None
    prefix = os.path.join(self._directory, f'{CHECKPOINT_NAME}-{step}')
    stale = _files_of(prefix)
    if stale:
      # Only an unusable checkpoint can sit at a step training has not
      # saved yet (a usable one would have been resumed from).
      logging.warning('Replacing checkpoint files at step %d: %s.', step,
                      ', '.join(os.path.basename(p) for p in stale))
    try:
      _remove(stale)
      path = self._checkpoint.write(prefix, options=self._options)
      kept = self._rotate(step)
      self._write_state_file(path, kept)
    except (tf.errors.OpError, OSError) as e:
      self._remove_partial(prefix)
      raise self._save_error(prefix, e) from e
    _checked.pop(path, None)
    self._last_save_time = time.time()
    self._last_saved_step = step
    return path

  def _save_error(self, prefix: str, error: BaseException) -> Exception:
    """The one error of a failed save: TensorFlow's reason first (what
    tf.estimator 2.15 raised, of its class), then what is intact and what
    to do."""
    if self._last_saved_step is None:
      intact = ('no checkpoint of this training had been saved yet; the '
                'same command starts it again')
    else:
      intact = (f'the checkpoints saved before are intact (newest: step '
                f'{self._last_saved_step}); the same command resumes from '
                'it')
    return tf_errors.from_cause(CheckpointSaveError, (
        f'{one_line(error)}: could not save checkpoint '
        f'{os.path.basename(prefix)} in {self._directory!r}. Nothing of '
        f'that save was kept and {intact} once there is room and '
        'permission to write there.'), error)

  def _rotate(self, step: int) -> List[str]:
    """Removes checkpoints beyond the newest `max_to_keep` up to `step`;
    returns the ones kept, oldest first.

    Checkpoints of higher steps can only be unusable ones that training
    will replace when it gets there: they are neither counted nor listed.
    """
    lineage = [p for p in checkpoint_candidates(self._directory)
               if checkpoint_step(p) <= step]
    keep = lineage[:self._max_to_keep] if self._max_to_keep else lineage
    for prefix in lineage[len(keep):]:
      # The index first: without it the rest is no longer a checkpoint.
      _remove(_files_of(prefix))
      _checked.pop(prefix, None)
    return list(reversed(keep))

  def _write_state_file(self, latest: str, kept: Sequence[str]) -> None:
    # The format TensorFlow's CheckpointManager writes, with paths relative
    # to the directory so that model_dir can be moved.
    lines = [f'model_checkpoint_path: "{os.path.basename(latest)}"']
    lines += [f'all_model_checkpoint_paths: "{os.path.basename(p)}"'
              for p in kept]
    path = os.path.join(self._directory, STATE_FILE)
    temp = f'{path}.tmp{os.getpid()}'
    with tf.io.gfile.GFile(temp, 'w') as f:
      f.write('\n'.join(lines) + '\n')
    tf.io.gfile.rename(temp, path, overwrite=True)

  def _remove_partial(self, prefix: str) -> None:
    leftovers = [p for p in _files_of(prefix) + [prefix + '_temp']
                 if tf.io.gfile.exists(p)]
    leftovers += tf.io.gfile.glob(
        os.path.join(self._directory, STATE_FILE + '.tmp*'))
    try:
      _remove(leftovers)
    except (tf.errors.OpError, OSError) as e:
      logging.warning('Could not remove what the failed save left (%s); the '
                      'next run removes it.', one_line(e, limit=160))

  @property
  def last_saved_step(self) -> Optional[int]:
    return self._last_saved_step


def ensure_writable_dir(model_dir: str) -> None:
  """Checks that `model_dir` exists or can be created, and can be written,
  by making an unnamed temporary file in it or in its nearest existing
  parent (nothing is left, not even a changed modification time). A
  refusal is what tf.estimator 2.15's first write there raised: of the
  OpError class TensorFlow's filesystem gives the OS's reason
  (PermissionDeniedError for EACCES), starting with its words (`<path>;
  Permission denied`). Local paths only are probed (remote filesystems
  answer at first write).

  Raises:
    UserInputError: the directory cannot be written (nothing was).
  """
  if '://' in model_dir:
    return
  probe = os.path.abspath(model_dir)
  while not os.path.exists(probe) and os.path.dirname(probe) != probe:
    probe = os.path.dirname(probe)
  # os.access says yes to root on read-only mounts: only a real file tells.
  try:
    with tempfile.TemporaryFile(dir=probe):
      pass
  except OSError as e:
    raise tf_errors.from_os_error(UserInputError, (
        f'{probe}; {e.strerror}: model_dir={model_dir!r} is not writable, '
        'so training cannot save; nothing was written. Fix its permissions '
        'or choose another model_dir.'), e) from e
