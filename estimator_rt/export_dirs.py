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
"""

import errno
import os
import time
import uuid
from typing import Callable, Optional

import tensorflow as tf

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


def _rename_unless_taken(source: str, target: str) -> bool:
  """Renames directory `source` to `target`; False if `target` exists.

  On a local filesystem this is one rename(2), which refuses to replace a
  non-empty directory, so two writers cannot both win a name. Elsewhere
  (gs://, ...) TensorFlow's rename with overwrite=False is what there is.
  """
  if _is_local(source):
    try:
      os.rename(source, target)
      return True
    except OSError as e:
      if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
        return False
      raise
  try:
    tf.io.gfile.rename(source, target, overwrite=False)
    return True
  except tf.errors.AlreadyExistsError:
    return False


def write_export(export_dir_base: str, write: Callable[[str], None]) -> str:
  """Writes a new export under `export_dir_base`.

  Args:
    export_dir_base: the directory holding the exports (made if missing).
    write: fills the directory it is given (which does not exist yet) with
      the SavedModel.

  Returns:
    The export's directory, `<export_dir_base>/<n>`.

  Raises:
    RuntimeError: other writers took _MAX_ATTEMPTS names in a row.
    Whatever `write` raises; the temporary directory is removed first.
  """
  tf.io.gfile.makedirs(export_dir_base)
  temporary = os.path.join(export_dir_base,
                           f'{TEMPORARY_PREFIX}{uuid.uuid4().hex}')
  try:
    write(temporary)
    for _ in range(_MAX_ATTEMPTS):
      final = next_export_dir(export_dir_base)
      if _rename_unless_taken(temporary, final):
        return final
    raise RuntimeError(
        f'export: could not name the export in {export_dir_base!r}: other '
        f'writers took {_MAX_ATTEMPTS} names in a row.')
  finally:
    if tf.io.gfile.exists(temporary):
      tf.io.gfile.rmtree(temporary)
