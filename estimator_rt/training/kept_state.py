"""How much a call may keep for the next call of the same Estimator.

Both engines keep what a call built for the next call of its mode (the
graph engine its graph and open session: graph/kept_sessions.py; the eager
engine its models and compiled functions: eager/engine.py), which holds
the model's variables in memory between calls, where tf.estimator 2.15
freed them. `kept_bytes()` bounds it per Estimator: 1 GiB of variables by
default; ESTIMATOR_RT_KEPT_SESSIONS_MB sets it, and 0 keeps nothing (every
call builds and restores afresh, as 2.15 did).
"""

import functools
import math
import os

from absl import logging

DEFAULT_KEPT_MB = 1024
ENV_VAR = 'ESTIMATOR_RT_KEPT_SESSIONS_MB'


def kept_bytes() -> int:
  """The bytes of variables one Estimator's kept state may hold (read
  when its engine is made).

  A value that is not a number of megabytes (0 or more) keeps the default
  and logs one warning per value: the variable only tunes memory, and a
  program 2.15 ran is not stopped for it.
  """
  return _bytes_of(os.environ.get(ENV_VAR, ''))


@functools.lru_cache(maxsize=None)
def _bytes_of(value: str) -> int:
  if not value.strip():
    return DEFAULT_KEPT_MB * 2**20
  try:
    megabytes = float(value)
  except ValueError:
    megabytes = math.nan
  if not megabytes >= 0 or math.isinf(megabytes):
    logging.warning(
        '%s=%r is not a number of megabytes (0 or more); keeping up to the '
        'default %d MB of variables per Estimator. Set it to a number, such '
        'as 512, or to 0 to keep nothing between calls.', ENV_VAR, value,
        DEFAULT_KEPT_MB)
    return DEFAULT_KEPT_MB * 2**20
  return int(megabytes * 2**20)


def variables_bytes(variables) -> int:
  """The bytes of `variables` (those of unknown shape count 0)."""
  total = 0
  for variable in variables:
    shape = variable.shape
    if shape.is_fully_defined():
      total += shape.num_elements() * variable.dtype.base_dtype.size
  return total
