"""TensorFlow's single-threaded function executor against its default one,
on the bare TF2 loop of an MLP: what the eager engine's choice of executor
for small steps rests on (estimator_rt/training/eager/executor_choice.py;
issue 47's twenty-first round in docs/benchmarks.md).

    python -m scripts.bench.executor_probe [--shapes 64x128,128x128] \
        [--workload W3] [--loops 20] [--rounds 2]
    python -m scripts.bench.executor_probe --nested_cond

Each shape UNITSxBATCH is an MLP of two hidden layers of UNITS (ReLU) and
10 logits on 64 random features, Adam, batch BATCH; `--workload` adds a
benchmark workload's bare loop (`scripts.bench.workloads`). Each side runs
in a fresh process, alternating, traced and called inside
`tf.experimental.function_executor_type('SINGLE_THREADED_EXECUTOR')` or
not (the executor is chosen when a function is instantiated, and a
`tf.while_loop` traced outside it is lowered to the Switch/Merge control
flow that executor refuses); prints steps/s and CPU ms per 100 steps of
`--loops` calls of 100 steps after a 1-step call, and the ratio.

`--nested_cond` instead checks whether that executor runs a `tf.cond` nested in
a `tf.cond` inside a `tf.while_loop` (what
`tf.compat.v1.train.piecewise_constant` builds), and one `tf.cond` alone,
each in a fresh process bounded by NESTED_COND_TIMEOUT_S: TensorFlow 2.21
deadlocks on the first, which is why the runtime keeps a loop that holds
one off that executor (estimator_rt/training/eager/executor_choice.py).
"""

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time

from scripts.bench.processes import child_env
from scripts.bench.processes import REPO_ROOT

EXECUTOR = 'SINGLE_THREADED_EXECUTOR'
NESTED_COND_TIMEOUT_S = 60


def _mlp(units: int, batch: int):
  """(dataset, model, optimizer, loss) of the probe's MLP."""
  import keras  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.RandomState(0)
  features = rng.rand(4096, 64).astype('float32')
  labels = rng.randint(0, 10, 4096)
  dataset = tf.data.Dataset.from_tensor_slices(
      ({'x': features}, labels)).repeat().batch(batch)
  model = keras.Sequential([keras.layers.Dense(units, activation='relu'),
                            keras.layers.Dense(units, activation='relu'),
                            keras.layers.Dense(10)])
  model.build((None, 64))
  loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
  return dataset, model, keras.optimizers.Adam(0.001), loss


def run_side(what: str, single_threaded: bool, loops: int) -> dict:
  """Trains `what` (UNITSxBATCH or a workload) in this process."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from scripts.bench import workloads  # pylint: disable=g-import-not-at-top
  if 'x' in what:
    dataset, model, optimizer, loss_fn = _mlp(
        *(int(n) for n in what.split('x')))
  else:
    dataset, model, optimizer, loss_fn = workloads.build_bare(what)
  iterator = iter(dataset)
  train = workloads.bare_train_loop(model, optimizer, loss_fn)
  chosen = (tf.experimental.function_executor_type(EXECUTOR)
            if single_threaded else contextlib.nullcontext())
  with chosen:  # Traced at its first call, in here.
    train(iterator, tf.constant(1)).numpy()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(loops):
      train(iterator, tf.constant(100)).numpy()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  return {'steps_per_sec': loops * 100 / wall,
          'cpu_ms_per_100_steps': cpu * 1e3 / loops}


def run_conds(nested: bool) -> float:
  """Ten steps of a loop holding one `tf.cond`, or one nested in another,
  on the single-threaded executor; returns the sum they add up."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  total = tf.Variable(0.0)
  step = tf.Variable(0, dtype=tf.int64)

  def rate(s):
    if not nested:
      return tf.cond(s < 5, lambda: tf.constant(1.0),
                     lambda: tf.constant(0.5))
    return tf.cond(s < 5, lambda: tf.constant(1.0), lambda: tf.cond(
        s < 8, lambda: tf.constant(0.5), lambda: tf.constant(0.1)))

  with tf.experimental.function_executor_type(EXECUTOR):

    @tf.function(autograph=False)
    def loop(n):

      def body(i):
        total.assign_add(rate(step.assign_add(1)))
        return i + 1

      return tf.while_loop(lambda i: i < n, body, [tf.constant(0)])

    loop(tf.constant(10))
  return float(total.numpy())


def _run_child(what: str, *flags: str, timeout: float,
               check: bool) -> subprocess.CompletedProcess:
  """This probe's `--child what` in a fresh process, killed past
  `timeout` seconds (subprocess.TimeoutExpired)."""
  return subprocess.run(
      [sys.executable, '-m', 'scripts.bench.executor_probe', '--child',
       what, *flags], cwd=REPO_ROOT, env=child_env(), stdout=subprocess.PIPE,
      stderr=subprocess.DEVNULL, text=True, timeout=timeout, check=check)


def _nested_cond_report() -> None:
  for nested in (False, True):
    what = 'nested_cond' if nested else 'one_cond'
    try:
      result = _run_child(what, timeout=NESTED_COND_TIMEOUT_S, check=False)
      outcome = (f'ran: {result.stdout.strip().splitlines()[-1]}'
                 if result.returncode == 0 else
                 f'failed with exit code {result.returncode}')
    except subprocess.TimeoutExpired:
      # subprocess.run killed it (SIGKILL): a deadlock ignores SIGTERM.
      outcome = f'hung: killed after {NESTED_COND_TIMEOUT_S} s'
    print(f'{what} on the single-threaded executor: {outcome}', flush=True)


def _child(what: str, single_threaded: bool, loops: int) -> dict:
  flags = ['--loops', str(loops)] + (
      ['--single_threaded'] if single_threaded else [])
  result = _run_child(what, *flags, timeout=900, check=True)
  return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--shapes', default='32x32,64x128,128x64,128x128,'
                      '256x32,256x128', help='UNITSxBATCH,... (MLPs)')
  parser.add_argument('--workload', default='',
                      help='also these workloads\' bare loops (W1,W2,W3)')
  parser.add_argument('--loops', type=int, default=20,
                      help='100-step calls timed per side (default 20)')
  parser.add_argument('--rounds', type=int, default=2)
  parser.add_argument('--nested_cond', action='store_true',
                      help='instead: whether a tf.cond nested in a tf.cond '
                      'in a loop runs on the single-threaded executor')
  parser.add_argument('--child', default=None, help=argparse.SUPPRESS)
  parser.add_argument('--single_threaded', action='store_true',
                      help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.child in ('one_cond', 'nested_cond'):
    print(json.dumps(run_conds(args.child == 'nested_cond')))
    return 0
  if args.child:
    print(json.dumps(run_side(args.child, args.single_threaded,
                              args.loops)))
    return 0
  if args.nested_cond:
    _nested_cond_report()
    return 0
  whats = [s for s in args.shapes.split(',') if s] + [
      w for w in args.workload.split(',') if w]
  print('| model | default steps/s | single-threaded steps/s | ratio '
        '(rounds) | CPU ms/100 steps, default / single-threaded |')
  print('|---|---|---|---|---|')
  for what in whats:
    runs = [(_child(what, False, args.loops), _child(what, True, args.loops))
            for _ in range(args.rounds)]
    ratios = [s['steps_per_sec'] / d['steps_per_sec'] for d, s in runs]
    default = statistics.median(d['steps_per_sec'] for d, _ in runs)
    single = statistics.median(s['steps_per_sec'] for _, s in runs)
    cpu = (statistics.median(d['cpu_ms_per_100_steps'] for d, _ in runs),
           statistics.median(s['cpu_ms_per_100_steps'] for _, s in runs))
    print(f'| {what} | {default:,.0f} | {single:,.0f} | '
          f'{statistics.median(ratios):.2f} ('
          f'{", ".join(f"{r:.2f}" for r in ratios)}) | '
          f'{cpu[0]:.1f} / {cpu[1]:.1f} |', flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
