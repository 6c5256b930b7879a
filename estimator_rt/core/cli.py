"""What the binaries (main, run_server) share: absl flag parsing where bad
input exits 2 with one line, and JSON flags given inline or as @file."""

import json
import sys
from typing import Any, Callable

from absl import app
from absl import flags
from absl import logging

from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError

# An error line longer than this is cut: a message quoting a runaway value
# must stay readable (every message is meant to be far shorter).
MAX_ERROR_CHARS = 2000
# JSON flags (--params, --remote_cluster) are small configuration; a bigger
# text is a mistake (a data file named by accident), refused unread.
MAX_JSON_FLAG_CHARS = 1 << 20


def fail(message: str) -> None:
  """Reports bad input as one line on stderr and exits with code 2."""
  line = ' '.join(str(message).splitlines())
  if len(line) > MAX_ERROR_CHARS:
    line = f'{line[:MAX_ERROR_CHARS]}... ({len(line)} characters)'
  print(f'error: {line}', file=sys.stderr)
  sys.exit(2)


def _read_flag_file(spec: str, *, flag: str) -> str:
  path = spec[1:]
  try:
    with open(path) as f:
      text = f.read(MAX_JSON_FLAG_CHARS + 1)
  except (OSError, UnicodeDecodeError) as e:
    reason = getattr(e, 'strerror', None) or str(e)
    raise UserInputError(f'--{flag}={shorten(spec)}: cannot read {path}: '
                         f'{reason}') from e
  if len(text) > MAX_JSON_FLAG_CHARS:
    raise UserInputError(
        f'--{flag}={shorten(spec)}: {path} is longer than '
        f'{MAX_JSON_FLAG_CHARS} characters; give a small JSON file.')
  return text


def load_json_flag(spec: str, *, flag: str) -> Any:
  """The JSON value of `--flag`, given inline or as @path/to/file.json.

  Raises:
    UserInputError: the file cannot be read, the text is longer than
      MAX_JSON_FLAG_CHARS, or it is not JSON (or nested too deeply, or holds
      a number of thousands of digits).
  """
  text = _read_flag_file(spec, flag=flag) if spec.startswith('@') else spec
  if len(text) > MAX_JSON_FLAG_CHARS:
    raise UserInputError(
        f'--{flag} is {len(text)} characters; at most {MAX_JSON_FLAG_CHARS} '
        'are accepted.')
  try:
    return json.loads(text)
  except json.JSONDecodeError as e:
    raise UserInputError(
        f'--{flag} is not valid JSON ({e.msg} at line {e.lineno} column '
        f'{e.colno}): {shorten(text)}') from e
  except RecursionError as e:
    raise UserInputError(
        f'--{flag} is JSON nested too deeply to read: {shorten(text)}') from e
  except ValueError as e:  # A number of more than 4300 digits.
    raise UserInputError(
        f'--{flag} is not usable JSON ({str(e).split(";")[0][:100]}): '
        f'{shorten(text)}') from e


def run(main: Callable) -> None:
  """absl's app.run at INFO verbosity, but a bad flag exits 2 with one line
  (absl exits 1 with a usage dump)."""

  def parse(argv):
    try:
      return flags.FLAGS(argv)
    except flags.Error as e:
      fail(f'{e}. Run with --helpfull for the flags.')

  logging.set_verbosity(logging.INFO)
  app.run(main, flags_parser=parse)
