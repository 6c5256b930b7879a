"""Where an export lands: `<export_dir_base>/<n>`, whole or not at all.

Both engines write a SavedModel into a temporary directory beside its final
place and rename it there (`write_export`), so a reader (a serving system
polling the base, an exporter's clean-up) never sees half an export, and a
failed write leaves nothing behind.

The name `n` is the unix time of the export, as tf.estimator's, or one more
than the largest name already there: names grow in the order exports
complete. Exporters keep the largest names, so a name freed by their
clean-up is never handed out again (tiny models export faster than once a
second). Two processes may export into one base at the same moment (an
evaluator and another task, two evaluators of a misconfigured job): the
rename never replaces an export already there, so the one that comes
second takes the next name instead of failing.

On other filesystems (gs://, s3://, hdfs://, ram://, reached through
`tf.io.gfile`) a directory cannot be renamed in one step: the export's
files are moved one by one into the final directory, `saved_model.pb`
last, so that a reader that waits for it (TensorFlow Serving polls for a
version directory holding one) never loads half an export. The name is
taken only if nothing is there yet, but two writers checking at the same
moment can both take it: there, the rename without replace does not hold.
"""

import errno
import os
import time
import uuid
from typing import Callable, Optional

import tensorflow as tf

from estimator_rt.core import tf_errors
from estimator_rt.core.errors import ExportWriteError
from estimator_rt.core.errors import one_line
from estimator_rt.core.errors import raised_as

# Names taken by other writers in a row before giving up: each retry means
# another export completed under the name just tried.
_MAX_ATTEMPTS = 100

TEMPORARY_PREFIX = 'temp-'


def _largest_export(export_dir_base: str) -> Optional[int]:
  if not tf.io.gfile.isdir(export_dir_base):
    return None
  names = [name.strip('/') for name in tf.io.gfile.listdir(export_dir_base)]
  numbers = [int(name) for name in names if name.isdigit()]
  return max(numbers) if numbers else None


def next_export_dir(export_dir_base: str) -> str:
  """`<base>/<unix time>`, later than every export already there."""
  largest = _largest_export(export_dir_base)
  number = int(time.time())
  if largest is not None:
    number = max(number, largest + 1)
  return os.path.join(export_dir_base, str(number))


def _is_local(path: str) -> bool:
  return '://' not in path


# The file a SavedModel reader waits for: moved last (see the docstring).
_SAVED_MODEL_FILES = ('saved_model.pb', 'saved_model.pbtxt')


def _move_tree(source: str, target: str) -> None:
  """Moves the files under directory `source` into `target` (made here),
  the SavedModel's graph last; removes what is left of `source`."""
  moves = []
  for directory, _, files in tf.io.gfile.walk(source):
    relative = directory[len(source):].lstrip('/')
    destination = os.path.join(target, relative) if relative else target
    tf.io.gfile.makedirs(destination)
    for name in files:
      moves.append((os.path.join(directory, name),
                    os.path.join(destination, name)))
  moves.sort(key=lambda move: os.path.basename(move[0]) in _SAVED_MODEL_FILES)
  for old, new in moves:
    tf.io.gfile.rename(old, new, overwrite=False)
  _remove_tree(source)


def _remove_tree(path: str) -> None:
  """Removes directory `path` and what is under it, if it exists."""
  if not tf.io.gfile.exists(path):
    return
  try:
    tf.io.gfile.rmtree(path)
  except tf.errors.NotFoundError:
    # ram:// says a directory exists while files under it do, but cannot
    # remove it recursively when it was never made as a directory.
    for directory, _, files in tf.io.gfile.walk(path):
      for name in files:
        tf.io.gfile.remove(os.path.join(directory, name))


def _rename_unless_taken(source: str, target: str) -> bool:
  """Renames directory `source` to `target`; False if `target` exists.

  On a local filesystem this is one rename(2), which refuses to replace a
  non-empty directory, so two writers cannot both win a name. Elsewhere
  (gs://, ram://, ...) the files are moved one by one (`_move_tree`) into
  a `target` that did not exist when looked at.
  """
  if _is_local(source):
    try:
      os.rename(source, target)
      return True
    except OSError as e:
      if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
        return False
      raise
  if tf.io.gfile.exists(target):
    return False
  _move_tree(source, target)
  return True


def write_export(export_dir_base: str, write: Callable[[str], None]) -> str:
  """Writes a new export under `export_dir_base`.

  Args:
    export_dir_base: the directory holding the exports (made if missing);
      str or bytes, as 2.15 took it.
    write: fills the directory it is given (which does not exist yet) with
      the SavedModel.

  Returns:
    The export's directory, `<export_dir_base>/<n>`, a str.

  Raises:
    RuntimeError: other writers took _MAX_ATTEMPTS names in a row.
    ExportWriteError: the files could not be written (see `_write_error`).
    Whatever else `write` raises; the temporary directory is removed first.
  """
  export_dir_base = tf.compat.as_str_any(export_dir_base)
  temporary = os.path.join(export_dir_base,
                           f'{TEMPORARY_PREFIX}{uuid.uuid4().hex}')
  try:
    tf.io.gfile.makedirs(export_dir_base)
    write(temporary)
    for _ in range(_MAX_ATTEMPTS):
      final = next_export_dir(export_dir_base)
      if _rename_unless_taken(temporary, final):
        return final
    raise RuntimeError(
        f'export: could not name the export in {export_dir_base!r}: other '
        f'writers took {_MAX_ATTEMPTS} names in a row.')
  except _WRITE_ERRORS as e:
    raise _write_error(export_dir_base, e) from e
  finally:
    _remove_tree(temporary)


# What the filesystem raises when the files cannot be written: TensorFlow's
# classes for EACCES/EROFS, ENOSPC and EFBIG, and os.rename's OSError.
_WRITE_ERRORS = (tf.errors.PermissionDeniedError,
                 tf.errors.ResourceExhaustedError, tf.errors.OutOfRangeError,
                 OSError)


def _write_error(export_dir_base: str, error: BaseException) -> Exception:
  """The one error of an export that could not be written: TensorFlow's
  reason first (what tf.estimator 2.15 raised, of its class; an OSError's
  class for os.rename's), then what is intact and what to do."""
  message = (
      f'{one_line(error)}: could not write the export under '
      f'{export_dir_base!r}; nothing of it is left there and the checkpoints '
      'are untouched. Fix the permissions or the disk space, or choose '
      'another export_dir_base, and export again.')
  if isinstance(error, OSError):
    return raised_as(ExportWriteError, message, error)
  return tf_errors.from_cause(ExportWriteError, message, error)
