"""The loops every TensorFlow 2.21 side runs and records: 1 step, 99, then
`STEPS_PER_LOOP` per loop, so that every side traces at the same point and
amortizes per-call costs alike; the runtime side's settings.
"""

import time

import estimator_rt as ert
from scripts.bench.protocol import intra_op_session_config
from scripts.bench.protocol import STEPS_PER_LOOP
from scripts.bench.protocol import steady_state


def loop_sizes(total_steps: int):
  """1, 99, then 100 per loop up to `total_steps` (the runtime's cut)."""
  sizes = [1]
  step = 1
  while step < total_steps:
    size = min(STEPS_PER_LOOP - step % STEPS_PER_LOOP, total_steps - step)
    sizes.append(size)
    step += size
  return sizes


class BoundaryHook(ert.Hook):
  """Asks for a 1-step first loop and records the end of every loop."""

  def __init__(self, record):
    self._record = record

  def next_step_limit(self, global_step):
    # The first loop ends at step 1, so its end is "first step finished";
    # afterwards the runtime's own loop lengths apply.
    return 1 if global_step == 0 else None

  def after_loop(self, result):
    self._record(result.global_step, result.elapsed_secs)
    return None


def runtime_config(total_steps: int, *, intra_op_threads: int = 0,
                   **settings) -> ert.RunConfig:
  """The runtime side's RunConfig: the runtime's defaults but checkpoints
  only at the end (save_checkpoints_steps past the run), since the bare
  loop saves nothing; summaries and the log line every 100 steps stay, as
  every user gets them. `intra_op_threads` (if not 0) goes into its
  session_config, as a user asks for it; `settings`: further RunConfig
  arguments."""
  return ert.RunConfig(steps_per_loop=STEPS_PER_LOOP,
                       session_config=intra_op_session_config(
                           intra_op_threads),
                       save_checkpoints_steps=10 * total_steps,
                       log_step_count_steps=100, save_summary_steps=100,
                       **settings)


class LoopRecord:
  """The end of every training loop, as the sides report them."""

  def __init__(self):
    self._boundaries = []  # (global_step, perf_counter, process_time)
    self._loop_secs = []  # The runtime's time inside its compiled call.
    self._first_step_wall = None

  def record(self, global_step: int, elapsed_secs) -> None:
    """Called at the end of each loop (`elapsed_secs`: None if unknown)."""
    self._boundaries.append(
        (global_step, time.perf_counter(), time.process_time()))
    self._loop_secs.append(elapsed_secs)
    if self._first_step_wall is None:
      self._first_step_wall = time.time()

  def result_fields(self, *, imports_done_wall: float) -> dict:
    """The result line's fields about the loops (see
    `scripts.bench.worker`)."""
    return {
        'steps': self._boundaries[-1][0] if self._boundaries else 0,
        **steady_state(self._boundaries, self._loop_secs),
        'first_step_wall': self._first_step_wall,
        'imports_done_wall': imports_done_wall,
        'boundaries': self._boundaries,
    }
