"""What the binaries (main, run_server) share: absl flag parsing where bad
input exits 2 with one line, and JSON flags given inline or as @file."""

import json
import sys
from typing import Any, Callable

from absl import app
from absl import flags
from absl import logging

from estimator_rt.errors import UserInputError


def fail(message: str) -> None:
  """Reports bad input as one line on stderr and exits with code 2."""
  print(f'error: {message}', file=sys.stderr)
  sys.exit(2)


def load_json_flag(spec: str, *, flag: str) -> Any:
  """The JSON value of `--flag`, given inline or as @path/to/file.json.

  Raises:
    UserInputError: the file cannot be read or the text is not JSON.
  """
  text = spec
  if spec.startswith('@'):
    try:
      with open(spec[1:]) as f:
        text = f.read()
    except OSError as e:
      raise UserInputError(f'--{flag}={spec!r}: cannot read {spec[1:]}: '
                           f'{e.strerror}') from e
  try:
    return json.loads(text)
  except json.JSONDecodeError as e:
    raise UserInputError(
        f'--{flag} is not valid JSON ({e.msg} at line {e.lineno} column '
        f'{e.colno}): {text[:80]!r}') from e


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
