"""Every task's output lines, prefixed with its role: `[worker:1] ...`."""

import contextlib
import sys
import threading
from typing import IO, Optional


def copy_prefixed(stream: IO[str], prefix: str, *,
                  lock: Optional[threading.Lock] = None) -> None:
  """Copies `stream` to stdout line by line, each as `[prefix] line`, until
  it ends, then closes it.

  Args:
    lock: held while a line is written, when several tasks (or the
      launcher itself) share this stdout, so lines never interleave.
  """
  for line in iter(stream.readline, ''):
    with lock if lock is not None else contextlib.nullcontext():
      try:
        sys.stdout.write(f'[{prefix}] {line}')
        sys.stdout.flush()
      except (BrokenPipeError, ValueError):  # Nobody reads the output.
        pass
  stream.close()
