"""What every benchmark child and parent share: the run flags in (a
workload and its steps), the result line out, the loop boundaries and the
steady-state figures computed from them, the exit.

Standard library only: the tf.estimator 2.15 child imports it under
TensorFlow 2.15 (`.venv-tf215`, which cannot import the project), and the
parents import it without importing TensorFlow.
"""

import argparse
import json
import os
import resource
import sys

# Every child's result line starts with it (write_result); the parents
# find it with read_result.
RESULT_PREFIX = 'BENCH_RESULT '

# Steps per loop on every side: boundaries are recorded at the end of
# global step 1 and of every multiple of it (and of the last step).
STEPS_PER_LOOP = 100

# The fewest steps a run may have: the first loop (1 step, which includes
# building and tracing) is discarded, and at least one more is needed.
MIN_STEPS = 101


def add_run_flags(parser: argparse.ArgumentParser, workloads, *,
                  steps_help: str = 'total training steps') -> None:
  """Adds `--workload` (one of `workloads`) and `--steps`, which every
  child takes from its parent."""
  parser.add_argument('--workload', choices=workloads, required=True)
  parser.add_argument('--steps', type=int, required=True,
                      help=f'{steps_help} (>= {MIN_STEPS})')
  add_intra_op_threads_flag(parser)


def add_v1_behavior_flag(parser: argparse.ArgumentParser) -> None:
  """Adds `--v1_behavior` (see apply_v1_behavior)."""
  parser.add_argument('--v1_behavior', action='store_true',
                      help='start as TF1 programs did: '
                      'tf.compat.v1.disable_v2_behavior() before anything')


def apply_v1_behavior(enabled: bool) -> None:
  """`tf.compat.v1.disable_v2_behavior()` when `enabled`, under either
  TensorFlow version, first thing (a TF1 program's first line)."""
  if enabled:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.compat.v1.disable_v2_behavior()


def add_intra_op_threads_flag(parser: argparse.ArgumentParser) -> None:
  """Adds `--intra_op_threads` (see apply_intra_op_threads and
  intra_op_session_config)."""
  parser.add_argument('--intra_op_threads', type=int, default=0,
                      help="TensorFlow's intra-op pool size for every side "
                      "(0: TensorFlow's choice); see apply_intra_op_threads")


def intra_op_session_config(count: int):
  """The `session_config` an estimator side asks for `count` intra-op
  threads with, as a user writes it (None for 0: TensorFlow's choice);
  under either TensorFlow version."""
  if not count:
    return None
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.compat.v1.ConfigProto(intra_op_parallelism_threads=count)


def apply_intra_op_threads(count: int) -> None:
  """Sizes this process's intra-op pool to `count` threads (0: TensorFlow's
  choice), before any TensorFlow op runs, on every side alike: the
  estimator sides also ask for it through their RunConfig's session_config,
  as users do, but the graph side builds a Keras optimizer (whose settings
  the TF1 model_fn mirrors) before its Estimator exists."""
  if count:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.threading.set_intra_op_parallelism_threads(count)


def check_steps(parser: argparse.ArgumentParser,
                args: argparse.Namespace) -> None:
  """A parser error for `--steps` below MIN_STEPS."""
  if args.steps < MIN_STEPS:
    parser.error(f'--steps={args.steps} must be >= {MIN_STEPS}: the first '
                 'loop (1 step) is discarded and at least one more is '
                 'needed.')


def write_result(fields: dict) -> None:
  """Prints the one `BENCH_RESULT {json}` line: `fields`, with this
  process's peak RSS and the boundaries (if any) rounded to microseconds."""
  result = dict(fields)
  # Linux reports kilobytes (KiB).
  result['peak_rss_kib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  if 'boundaries' in result:
    result['boundaries'] = [[s, round(w, 6), round(c, 6)]
                            for s, w, c in result['boundaries']]
  sys.stdout.write(RESULT_PREFIX + json.dumps(result) + '\n')


def read_result(stdout: str):
  """The dict of the last `write_result` line in `stdout`; None if none."""
  lines = [l for l in stdout.splitlines() if l.startswith(RESULT_PREFIX)]
  return json.loads(lines[-1][len(RESULT_PREFIX):]) if lines else None


def exit_at_once(status: int) -> None:
  """Flushes and leaves without the interpreter's teardown: everything is
  measured, and on this kind of machine tf.data's autotuning threads have
  kept processes idle for up to a minute at exit (DESIGN.md), which would
  only slow the benchmark down."""
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access


def steady_state(boundaries, loop_secs=None):
  """Steady-state figures from the end of the first loop to the last one.

  The first loop (global step 1) includes building and tracing, so the
  figures start at its end.

  Args:
    boundaries: (global_step, perf_counter, process_time) at the end of
      every loop, in order.
    loop_secs: per loop, the seconds the runtime measured inside its
      compiled call, or None (or a list ending in None) where nobody
      measured them.

  Returns:
    A dict with steps_per_sec and cpu_ms_per_100_steps (both NaN with fewer
    than two boundaries) and, when `loop_secs` are known,
    outer_ms_per_loop: the median over loops of the wall time spent outside
    the compiled call (for an even number of loops, the upper median).
  """
  if len(boundaries) < 2:
    return {'steps_per_sec': float('nan'),
            'cpu_ms_per_100_steps': float('nan')}
  first_step, first_wall, first_cpu = boundaries[0]
  last_step, last_wall, last_cpu = boundaries[-1]
  steps = last_step - first_step
  figures = {
      'steps_per_sec': steps / max(last_wall - first_wall, 1e-9),
      'cpu_ms_per_100_steps': 1e5 * (last_cpu - first_cpu) / steps,
  }
  if loop_secs and loop_secs[-1] is not None:
    # A loop's interval runs from the previous loop's end to its own; the
    # part the compiled call did not take is the runtime's overhead.
    outside = sorted(
        (later[1] - earlier[1]) - secs
        for earlier, later, secs in zip(boundaries, boundaries[1:],
                                        loop_secs[1:]))
    figures['outer_ms_per_loop'] = 1e3 * outside[len(outside) // 2]
  return figures
