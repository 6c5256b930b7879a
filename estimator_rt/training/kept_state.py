"""How much a call may keep for the next call of the same Estimator.

Both engines keep what a call built for the next call of its mode (the
graph engine its graph and open session: graph/kept_sessions.py; the eager
engine its models and compiled functions: eager/engine.py), which holds
the model's variables in memory between calls, where tf.estimator 2.15
freed them. `kept_bytes()` bounds it per Estimator: 1 GiB of variables by
default; ESTIMATOR_RT_KEPT_SESSIONS_MB sets it, and 0 keeps nothing (every
call builds and restores afresh, as 2.15 did).
"""

import os

DEFAULT_KEPT_MB = 1024


def kept_bytes() -> int:
  """The bytes of variables one Estimator's kept state may hold (read
  when its engine is made)."""
  value = os.environ.get('ESTIMATOR_RT_KEPT_SESSIONS_MB', '')
  try:
    megabytes = float(value) if value.strip() else DEFAULT_KEPT_MB
  except ValueError:
    megabytes = DEFAULT_KEPT_MB
  return max(0, int(megabytes * 2**20))


def variables_bytes(variables) -> int:
  """The bytes of `variables` (those of unknown shape count 0)."""
  total = 0
  for variable in variables:
    shape = variable.shape
    if shape.is_fully_defined():
      total += shape.num_elements() * variable.dtype.base_dtype.size
  return total
