"""One side of one benchmark run, in its own process (see scripts.bench).

    python -m scripts.bench.worker --side {bare,runtime} --workload W1 \
        --steps 60000 [--profile out.prof]

Trains one workload for `--steps` steps, either with `estimator_rt` or with
a bare TF2 loop doing the same math on the same input pipeline, and prints
one line `BENCH_RESULT {json}` on stdout with:

  side, workload, steps: what ran.
  boundaries: [[global_step, perf_counter, process_time], ...] at the end
    of every loop.
  steps_per_sec: steady state, from the end of the first loop (1 step, which
    includes tracing) to the end of the last one.
  cpu_ms_per_100_steps: process CPU time (all threads) per 100 steps over the
    same span: less sensitive than steps/s to other processes competing for
    the cores, so it helps to tell a slower runtime from a busy machine.
  outer_ms_per_loop (runtime only): median wall time per loop spent outside
    the compiled call (hooks, summaries, logging, the controller itself):
    the loop interval minus `LoopResult.elapsed_secs`.
  first_step_wall: `time.time()` when the first training step finished; the
    parent subtracts the wall time it took just before starting us.
  imports_done_wall: `time.time()` after TensorFlow, Keras and the project's
    modules were imported (splits the first-step time into import and
    build + trace + step).
  peak_rss_kib: `ru_maxrss` of this process at the end.

Both sides run the same loop boundaries, 1, 99, then 100 steps per loop,
so that they trace at the same point and amortize per-call costs alike: the
runtime gets them from its own `steps_per_loop=100` plus a hook asking for
step 1; the bare loop calls its `tf.function` with n=1, n=99, then n=100.

The workloads and their bare equivalents are `scripts.bench.workloads`;
the loop sizes and the record of their ends, `scripts.bench.loops`.
"""

import argparse
import functools
import tempfile
import time

# Imported here, before anything is timed against imports_done_wall, and on
# both sides alike: the input_fns import estimator_rt (for its errors), so
# the bare side pays for importing the runtime's modules too. The parent
# reports how long the imports took on each side.
from absl import logging as absl_logging
import keras
import tensorflow as tf

import estimator_rt as ert
from scripts.bench.loops import BoundaryHook
from scripts.bench.loops import loop_sizes
from scripts.bench.loops import LoopRecord
from scripts.bench.loops import runtime_config
from scripts.bench.protocol import add_run_flags
from scripts.bench.protocol import add_v1_behavior_flag
from scripts.bench.protocol import apply_intra_op_threads
from scripts.bench.protocol import apply_v1_behavior
from scripts.bench.protocol import check_steps
from scripts.bench.protocol import exit_at_once
from scripts.bench.protocol import STEPS_PER_LOOP
from scripts.bench.protocol import write_result
from scripts.bench.workloads import bare_train_loop
from scripts.bench.workloads import build_bare
from scripts.bench import tf1_model_fns
from scripts.bench.workloads import tf1_model_fn
from scripts.bench.workloads import WORKLOADS

# estimator_rt loads its estimator modules on first use, as tf.estimator
# 2.15 loaded on first use: load them now on every side, as
# tf_estimator_worker.py loads tf.estimator's, so that imports_done_wall
# covers the framework's imports alike (else the runtime's train_and_evaluate
# after imports would count its own modules' import and 2.15's would not).
_ = ert.Estimator, ert.train_and_evaluate
_IMPORTS_DONE_WALL = time.time()


def run_bare(workload: str, total_steps: int, record) -> None:
  """Trains with a plain TF2 loop: `tf.function` over `tf.range(n)` steps."""
  dataset, model, optimizer, loss_fn = build_bare(workload)
  iterator = iter(dataset)
  train = bare_train_loop(model, optimizer, loss_fn)
  step = 0
  for size in loop_sizes(total_steps):
    # A tensor, not a Python int: every size reuses the one trace.
    loss = train(iterator, tf.constant(size, tf.int32))
    loss.numpy()  # Sync: the steps have run when the timestamp is taken.
    step += size
    record(step, None)


class _FitBoundaries(keras.callbacks.Callback):
  """Records the end of every `fit` execution (STEPS_PER_LOOP steps)."""

  def __init__(self, record):
    super().__init__()
    self._record = record
    self._steps = 0

  def on_train_batch_end(self, batch, logs=None):
    # With steps_per_execution, Keras calls this once per execution, with
    # the index of its last step. Reading the loss waits for the steps to
    # have run, as the other sides' timestamps do.
    float(logs['loss'])
    self._record(batch + 1, None)


def run_keras_fit(workload: str, total_steps: int, record) -> None:
  """Trains with Keras 3 `fit`, steps_per_execution=STEPS_PER_LOOP: the
  bare side's model, optimizer, loss and dataset (features unwrapped from
  their dict, as fit takes (x, y)). fit cannot be asked for a 1-step first
  call, so its first boundary, and so its first-step time, is the end of
  its first 100 steps."""
  dataset, model, optimizer, loss_fn = build_bare(workload)
  model.compile(optimizer=optimizer, loss=loss_fn,
                steps_per_execution=STEPS_PER_LOOP, jit_compile=False)
  model.fit(dataset.map(lambda features, labels: (features['x'], labels)),
            epochs=1, steps_per_epoch=total_steps, verbose=0,
            callbacks=[_FitBoundaries(record)])


def run_graph_engine(workload: str, total_steps: int, record, *,
                     intra_op_threads: int = 0) -> None:
  """The workload's TF1-style model_fn (`tf1_model_fns`) in the graph
  engine, with run_runtime's settings and loops (the in-graph loop: one
  session run per loop)."""
  spec = WORKLOADS[workload]
  with tempfile.TemporaryDirectory(prefix='bench_ert_graph_') as model_dir:
    estimator = ert.Estimator(
        tf1_model_fn(workload), model_dir=model_dir,
        config=runtime_config(total_steps,
                              intra_op_threads=intra_op_threads),
        params=dict(spec['params']))
    estimator.train(spec['input_fn'], max_steps=total_steps,
                    hooks=[BoundaryHook(record)])


def run_runtime(workload: str, total_steps: int, record, *,
                jit_compile: bool = False, intra_op_threads: int = 0) -> None:
  """Trains with `ert.Estimator.train` and `runtime_config`."""
  spec = WORKLOADS[workload]
  with tempfile.TemporaryDirectory(prefix='bench_ert_') as model_dir:
    estimator = ert.Estimator(
        spec['model_fn'], model_dir=model_dir,
        config=runtime_config(total_steps, jit_compile=jit_compile,
                              intra_op_threads=intra_op_threads),
        params=dict(spec['params']))
    estimator.train(spec['input_fn'], max_steps=total_steps,
                    hooks=[BoundaryHook(record)])


def run_train_and_evaluate(workload: str, total_steps: int, *,
                           checkpoint_every: int, eval_steps: int) -> dict:
  """`ert.train_and_evaluate` locally: trains to `total_steps`, saving a
  checkpoint every `checkpoint_every` steps and evaluating `eval_steps`
  batches after each (throttle_secs=0), then the final one. Returns the
  final metrics."""
  spec = WORKLOADS[workload]
  with tempfile.TemporaryDirectory(prefix='bench_ert_tae_') as model_dir:
    estimator = ert.Estimator(
        spec['model_fn'], model_dir=model_dir,
        config=ert.RunConfig(steps_per_loop=STEPS_PER_LOOP,
                             save_checkpoints_steps=checkpoint_every,
                             log_step_count_steps=100,
                             save_summary_steps=100),
        params=dict(spec['params']))
    metrics, _ = ert.train_and_evaluate(
        estimator, ert.TrainSpec(spec['input_fn'], max_steps=total_steps),
        ert.EvalSpec(spec['input_fn'], steps=eval_steps, throttle_secs=0,
                     exporters=()))
    return {k: float(v) for k, v in metrics.items()}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(
      prog='python -m scripts.bench.worker',
      description=__doc__.split('\n')[0])
  parser.add_argument('--side',
                      choices=('bare', 'runtime', 'graph', 'keras_fit'),
                      required=True,
                      help='graph: the runtime running the TF1-style '
                      'model_fn of W1 or W2 (graph engine); keras_fit: '
                      'Keras 3 fit with steps_per_execution=100')
  add_run_flags(parser, sorted(WORKLOADS))
  parser.add_argument('--train_and_evaluate', default=None,
                      metavar='CHECKPOINT_EVERY,EVAL_STEPS',
                      help='runtime side: run train_and_evaluate instead (a '
                      'checkpoint every CHECKPOINT_EVERY steps, EVAL_STEPS '
                      'batches evaluated after each) and report when it '
                      'ended')
  parser.add_argument('--jit_compile', action='store_true',
                      help='runtime side: RunConfig(jit_compile=True)')
  parser.add_argument('--profile', default=None,
                      help='write cProfile stats of the whole training run '
                      'to this file (distorts the timings; for diagnosis)')
  add_v1_behavior_flag(parser)
  args = parser.parse_args(argv)
  check_steps(parser, args)
  if args.v1_behavior and args.side != 'graph':
    parser.error('--v1_behavior: only with --side=graph.')
  apply_v1_behavior(args.v1_behavior)
  apply_intra_op_threads(args.intra_op_threads)

  if args.train_and_evaluate:
    if args.side != 'runtime':
      parser.error('--train_and_evaluate: only with --side=runtime.')
    absl_logging.set_verbosity(absl_logging.INFO)
    every, eval_steps = (int(n) for n in args.train_and_evaluate.split(','))
    metrics = run_train_and_evaluate(args.workload, args.steps,
                                     checkpoint_every=every,
                                     eval_steps=eval_steps)
    write_result({
        'side': args.side, 'workload': args.workload,
        'mode': 'train_and_evaluate', 'steps': int(metrics['global_step']),
        'metrics': metrics, 'done_wall': time.time(),
        'imports_done_wall': _IMPORTS_DONE_WALL})
    return 0

  loops = LoopRecord()

  # As under an absl binary (estimator_rt.main): the runtime's INFO lines
  # (steps/s every 100 steps, checkpoints) are really written, to stderr.
  absl_logging.set_verbosity(absl_logging.INFO)
  if args.side == 'graph' and args.workload not in tf1_model_fns.WORKLOADS:
    parser.error(f'--side=graph: no TF1-style model_fn for {args.workload}; '
                 f'there are {tf1_model_fns.WORKLOADS}.')
  run = {'bare': run_bare,
         'graph': functools.partial(run_graph_engine,
                                    intra_op_threads=args.intra_op_threads),
         'keras_fit': run_keras_fit,
         'runtime': functools.partial(run_runtime,
                                      jit_compile=args.jit_compile,
                                      intra_op_threads=args.intra_op_threads),
         }[args.side]
  if args.profile:
    import cProfile  # pylint: disable=g-import-not-at-top
    profiler = cProfile.Profile()
    profiler.runcall(run, args.workload, args.steps, loops.record)
    profiler.dump_stats(args.profile)
  else:
    run(args.workload, args.steps, loops.record)

  write_result({'side': args.side, 'workload': args.workload,
                **loops.result_fields(imports_done_wall=_IMPORTS_DONE_WALL)})
  return 0


if __name__ == '__main__':
  exit_at_once(main())
