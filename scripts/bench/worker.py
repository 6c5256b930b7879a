"""One side of one benchmark run, in its own process (see benchmark.py).

    python scripts/_bench_worker.py --side {bare,runtime} --workload W1 \
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

This file is not a test of correctness; `tests/test_benchmark_script.py`
checks that the bare models have the variables the model_fns create.
"""

import argparse
import functools
import os
import sys
import tempfile
import time

# Run as a script, Python puts scripts/ (not the repo root) on sys.path; the
# project's packages live in the root.
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
  sys.path.insert(0, _REPO_ROOT)

# Imported here, before anything is timed against imports_done_wall, and on
# both sides alike: the input_fns import estimator_rt (for its errors), so
# the bare side pays for importing the runtime's modules too. The parent
# reports how long the imports took on each side.
from absl import logging as absl_logging  # pylint: disable=g-import-not-at-top,wrong-import-position
import keras  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

import estimator_rt as ert  # pylint: disable=g-import-not-at-top,wrong-import-position
from input_fns import digits  # pylint: disable=g-import-not-at-top,wrong-import-position
from input_fns import synthetic  # pylint: disable=g-import-not-at-top,wrong-import-position
from model_fns import cnn  # pylint: disable=g-import-not-at-top,wrong-import-position
from model_fns import linear  # pylint: disable=g-import-not-at-top,wrong-import-position
from model_fns import mlp  # pylint: disable=g-import-not-at-top,wrong-import-position

# The steady-state figures, the result line and the exit are the same for
# every side, the tf.estimator peer's (another environment; that module
# imports only the standard library at the top) included.
_SCRIPTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _SCRIPTS_DIR not in sys.path:
  sys.path.insert(0, _SCRIPTS_DIR)
from _bench_tf_estimator import exit_at_once  # pylint: disable=g-import-not-at-top,wrong-import-position
from _bench_tf_estimator import steady_state  # pylint: disable=g-import-not-at-top,wrong-import-position
from _bench_tf_estimator import write_result  # pylint: disable=g-import-not-at-top,wrong-import-position

_IMPORTS_DONE_WALL = time.time()


# The steps the runtime's own loop length is (RunConfig.steps_per_loop) and
# the bare loop's steps per tf.function call.
STEPS_PER_LOOP = 100


# ------------------------------------------------------------ workloads
# Each workload: the project's model_fn and input_fn, the params both get,
# and the bare side's equivalents: a Keras model built once with the same
# layers, the same loss on (labels, model output) and the same optimizer.

def _linear_model():
  # model_fns.linear: Sequential([Dense(1)]), predictions squeezed to [b].
  return keras.Sequential([keras.layers.Dense(1, name='dense')],
                          name='linear')


def _linear_loss(labels, outputs):
  # model_fns.linear: mean squared error of the squeezed predictions.
  predictions = tf.squeeze(outputs, axis=-1)
  return tf.reduce_mean(tf.square(tf.cast(labels, tf.float32) - predictions))


def _mlp_model():
  # model_fns.mlp with its DEFAULT_PARAMS: hidden [64, 32], no dropout.
  return mlp.build_model(hidden_units=mlp.DEFAULT_PARAMS['hidden_units'],
                         n_classes=mlp.DEFAULT_PARAMS['n_classes'])


def _cnn_model():
  return cnn.build_model(n_classes=cnn.DEFAULT_PARAMS['n_classes'])


def _classifier_loss(labels, logits):
  # model_fns._common.classifier_spec: sparse softmax cross-entropy, mean
  # over the batch, on int64 class ids of shape [batch].
  class_ids = tf.reshape(tf.cast(labels, tf.int64), [-1])
  return keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
      class_ids, logits)


# The same models written as tf.estimator users wrote them (tf.compat.v1
# layers, losses and optimizers), which the graph engine runs: the same
# layers, loss, optimizer and learning rate as the workloads' model_fns.
def _tf1_linear_model_fn(features, labels, mode, params):
  del mode, params
  x = features['x'] if isinstance(features, dict) else features
  predictions = tf.squeeze(tf.compat.v1.layers.dense(x, 1), axis=-1)
  loss = tf.compat.v1.losses.mean_squared_error(
      tf.cast(labels, tf.float32), predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(
      linear.DEFAULT_PARAMS['learning_rate']).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
  return ert.EstimatorSpec(ert.ModeKeys.TRAIN, loss=loss, train_op=train_op)


def _tf1_mlp_model_fn(features, labels, mode, params):
  del mode, params
  net = features['x'] if isinstance(features, dict) else features
  net = tf.reshape(net, [tf.shape(net)[0], -1])
  for units in mlp.DEFAULT_PARAMS['hidden_units']:
    net = tf.compat.v1.layers.dense(net, units, activation=tf.nn.relu)
  logits = tf.compat.v1.layers.dense(net, mlp.DEFAULT_PARAMS['n_classes'])
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
      tf.reshape(tf.cast(labels, tf.int64), [-1]), logits)
  train_op = tf.compat.v1.train.AdamOptimizer(
      mlp.DEFAULT_PARAMS['learning_rate']).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
  return ert.EstimatorSpec(ert.ModeKeys.TRAIN, loss=loss, train_op=train_op)


TF1_MODEL_FNS = {'W1': _tf1_linear_model_fn, 'W2': _tf1_mlp_model_fn}


WORKLOADS = {
    'W1': dict(
        description='linear model, synthetic regression, batch 64, SGD 0.2',
        model_fn=linear.model_fn,
        input_fn=synthetic.linear_input_fn,
        params={'batch_size': 64},
        bare_model=_linear_model,
        bare_loss=_linear_loss,
        bare_optimizer=lambda: keras.optimizers.SGD(
            linear.DEFAULT_PARAMS['learning_rate'])),
    'W2': dict(
        description='MLP [64, 32], sklearn digits, batch 128, Adam 0.01',
        model_fn=mlp.model_fn,
        input_fn=digits.train_input_fn,
        params={'batch_size': 128},
        bare_model=_mlp_model,
        bare_loss=_classifier_loss,
        bare_optimizer=lambda: keras.optimizers.Adam(
            mlp.DEFAULT_PARAMS['learning_rate'])),
    'W3': dict(
        description='CNN, synthetic 32x32x3 images, batch 128, Adam 0.001',
        model_fn=cnn.model_fn,
        input_fn=synthetic.images_input_fn,
        params={'batch_size': 128},
        bare_model=_cnn_model,
        bare_loss=_classifier_loss,
        bare_optimizer=lambda: keras.optimizers.Adam(
            cnn.DEFAULT_PARAMS['learning_rate'])),
}


def build_bare(workload: str):
  """The bare side's (dataset, model, optimizer, loss_fn), built once.

  The dataset is the workload's input_fn called without an input context,
  which is what the runtime's default strategy gets too (one pipeline, one
  replica: no sharding, the full batch). The model and optimizer are built
  eagerly here because variables cannot be created inside the traced
  `tf.range` loop.
  """
  spec = WORKLOADS[workload]
  dataset = spec['input_fn'](dict(spec['params']))
  model = spec['bare_model']()
  features_spec = dataset.element_spec[0]['x']
  model.build(features_spec.shape)
  optimizer = spec['bare_optimizer']()
  optimizer.build(model.trainable_variables)
  return dataset, model, optimizer, spec['bare_loss']


def loop_sizes(total_steps: int):
  """1, 99, then 100 per loop up to `total_steps` (the runtime's cut)."""
  sizes = [1]
  step = 1
  while step < total_steps:
    size = min(STEPS_PER_LOOP - step % STEPS_PER_LOOP, total_steps - step)
    sizes.append(size)
    step += size
  return sizes


def run_bare(workload: str, total_steps: int, record) -> None:
  """Trains with a plain TF2 loop: `tf.function` over `tf.range(n)` steps."""
  dataset, model, optimizer, loss_fn = build_bare(workload)
  variables = model.trainable_variables
  iterator = iter(dataset)

  @tf.function
  def train(it, num_steps):
    loss = tf.constant(0.0)
    for _ in tf.range(num_steps):
      features, labels = next(it)
      with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(features['x'], training=True))
      grads = tape.gradient(loss, variables)
      optimizer.apply_gradients(zip(grads, variables))
    return loss

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


class _EveryLoopOfSteps(ert.Hook):
  """The graph engine runs one step per session run, and so calls hooks
  after every step: record the first step and then every STEPS_PER_LOOP
  steps, as the loop boundaries of the other sides."""

  def __init__(self, record):
    self._record = record

  def after_loop(self, result):
    if result.global_step == 1 or result.global_step % STEPS_PER_LOOP == 0:
      self._record(result.global_step, None)
    return None


def run_graph_engine(workload: str, total_steps: int, record) -> None:
  """The workload's TF1-style model_fn in the graph engine, with the same
  settings as run_runtime."""
  spec = WORKLOADS[workload]
  with tempfile.TemporaryDirectory(prefix='bench_ert_graph_') as model_dir:
    estimator = ert.Estimator(
        TF1_MODEL_FNS[workload], model_dir=model_dir,
        config=ert.RunConfig(save_checkpoints_steps=10 * total_steps,
                             log_step_count_steps=100,
                             save_summary_steps=100),
        params=dict(spec['params']))
    estimator.train(spec['input_fn'], max_steps=total_steps,
                    hooks=[_EveryLoopOfSteps(record)])


def runtime_config(total_steps: int, **settings) -> ert.RunConfig:
  """The runtime side's RunConfig: the runtime's defaults but checkpoints
  only at the end (save_checkpoints_steps past the run), since the bare
  loop saves nothing; summaries and the log line every 100 steps stay, as
  every user gets them. `settings`: further RunConfig arguments."""
  return ert.RunConfig(steps_per_loop=STEPS_PER_LOOP,
                       save_checkpoints_steps=10 * total_steps,
                       log_step_count_steps=100, save_summary_steps=100,
                       **settings)


def run_runtime(workload: str, total_steps: int, record, *,
                jit_compile: bool = False) -> None:
  """Trains with `ert.Estimator.train` and `runtime_config`."""
  spec = WORKLOADS[workload]
  with tempfile.TemporaryDirectory(prefix='bench_ert_') as model_dir:
    estimator = ert.Estimator(
        spec['model_fn'], model_dir=model_dir,
        config=runtime_config(total_steps, jit_compile=jit_compile),
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
    """The result line's fields about the loops (see the module doc)."""
    return {
        'steps': self._boundaries[-1][0] if self._boundaries else 0,
        **steady_state(self._boundaries, self._loop_secs),
        'first_step_wall': self._first_step_wall,
        'imports_done_wall': imports_done_wall,
        'boundaries': self._boundaries,
    }


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--side',
                      choices=('bare', 'runtime', 'graph', 'keras_fit'),
                      required=True,
                      help='graph: the runtime running the TF1-style '
                      'model_fn of W1 or W2 (graph engine); keras_fit: '
                      'Keras 3 fit with steps_per_execution=100')
  parser.add_argument('--workload', choices=sorted(WORKLOADS), required=True)
  parser.add_argument('--steps', type=int, required=True,
                      help='total training steps (>= 101)')
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
  args = parser.parse_args(argv)
  if args.steps < 101:
    parser.error(f'--steps={args.steps} must be >= 101: the first loop '
                 '(1 step) is discarded and at least one more is needed.')

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
  if args.side == 'graph' and args.workload not in TF1_MODEL_FNS:
    parser.error(f'--side=graph: no TF1-style model_fn for {args.workload}; '
                 f'there are {sorted(TF1_MODEL_FNS)}.')
  run = {'bare': run_bare, 'graph': run_graph_engine,
         'keras_fit': run_keras_fit,
         'runtime': functools.partial(run_runtime,
                                      jit_compile=args.jit_compile)}[args.side]
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
