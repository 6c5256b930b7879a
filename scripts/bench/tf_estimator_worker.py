"""The tf.estimator 2.15 side of the benchmark (`python -m scripts.bench
--peers`).

    .venv-tf215/bin/python -m scripts.bench.tf_estimator_worker \
        --workload W1 --steps 60000 --data /tmp/W1.npz

Trains one workload with `tf.estimator.Estimator.train(input_fn,
max_steps=steps)` under TensorFlow 2.15.1 (the last release that ships
tf.estimator), tensorflow-estimator 2.15.0 and Keras 2, and prints one line
`BENCH_RESULT {json}` with the fields `scripts.bench.worker` prints (side is
'tf_estimator'; there is no outer_ms_per_loop).

The model_fns are written as tf.estimator users wrote them: `tf.keras.layers`
called in the model_fn, a `tf.compat.v1.losses` loss and a
`tf.compat.v1.train` optimizer minimizing it with the global step. They do
the math of the bare side of `scripts.bench.workloads`: the same layers,
loss, optimizer kind and hyperparameters, on the same examples in the same
order (initial weights differ: another RNG draws them).

That environment cannot import the project (Keras 3, estimator_rt), so the
data comes from a file that `scripts.bench.peer_data` writes under the
project's Python: the arrays each workload's input_fn draws from, with the
pipeline's and the model's parameters; `make_dataset` rebuilds the
input_fn's pipeline from them. For the same reason this module imports only
the standard library and `scripts.bench.protocol` at the top: TensorFlow
and NumPy are imported inside functions, so that `peer_data` can import
`make_dataset` under TensorFlow 2.21.

The loop boundaries are those of the other sides: the end of global step 1
and of every 100th step. tf.estimator runs one step per session run, so a
hook sees every step and records the boundaries among them.
"""

import argparse
import json
import tempfile
import time

from scripts.bench import tf1_model_fns
from scripts.bench.protocol import add_run_flags
from scripts.bench.protocol import add_v1_behavior_flag
from scripts.bench.protocol import apply_intra_op_threads
from scripts.bench.protocol import apply_v1_behavior
from scripts.bench.protocol import check_steps
from scripts.bench.protocol import exit_at_once
from scripts.bench.protocol import intra_op_session_config
from scripts.bench.protocol import STEPS_PER_LOOP
from scripts.bench.protocol import steady_state
from scripts.bench.protocol import write_result

SIDE = 'tf_estimator'

WORKLOADS = ('W1', 'W2', 'W3')


# ------------------------------------------------------------------ data

def make_dataset(x, y, *, batch_size: int, shuffle_buffer: int, seed: int):
  """The workloads' input pipeline, rebuilt from its arrays.

  The order of `input_fns._common.shard_and_batch` without an input
  context: shuffle (if `shuffle_buffer` > 1, reshuffled every epoch), repeat
  forever, batch dropping the remainder, prefetch. Runs under both
  TensorFlow versions.

  Args:
    x: features [num_examples, ...], served as {'x': batch}.
    y: labels [num_examples].
    batch_size: examples per batch.
    shuffle_buffer: size of the shuffle buffer; 0 or 1: no shuffling.
    seed: shuffle seed.

  Returns:
    A `tf.data.Dataset` of ({'x': features}, labels) batches.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  dataset = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
  if shuffle_buffer > 1:
    dataset = dataset.shuffle(shuffle_buffer, seed=seed,
                              reshuffle_each_iteration=True)
  dataset = dataset.repeat().batch(batch_size, drop_remainder=True)
  return dataset.prefetch(tf.data.AUTOTUNE)


def _load_data(path: str, workload: str):
  """Returns (x, y, meta) from a `peer_data` file for `workload`."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  with np.load(path) as data:
    x, y, meta = data['x'], data['y'], json.loads(str(data['meta']))
  if meta['workload'] != workload:
    raise SystemExit(f'error: {path} holds the data of {meta["workload"]}, '
                     f'not {workload}.')
  return x, y, meta


# ------------------------------------------------------------ model_fns
# Each returns the TRAIN EstimatorSpec (the benchmark only trains), its
# sizes and hyperparameters from `params`.

def _train_spec(mode, loss, params, eval_metric_ops=None):
  """The TRAIN EstimatorSpec minimizing `loss`, counting the global step;
  in EVAL, the loss and `eval_metric_ops` (the project's model_fns' metric,
  for train_and_evaluate)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss,
                                      eval_metric_ops=eval_metric_ops)
  train_op = tf1_model_fns.v1_optimizer(params).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _accuracy(labels, logits):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return {'accuracy': tf.compat.v1.metrics.accuracy(
      labels, tf.argmax(logits, axis=-1))}


def linear_model_fn(features, labels, mode, params):
  """model_fns.linear: Dense(1), squeezed to [batch], mean squared error."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  predictions = tf.squeeze(
      tf.keras.layers.Dense(1, name='dense')(features['x']), axis=-1)
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  return _train_spec(mode, loss, params, {
      'mse': tf.compat.v1.metrics.mean_squared_error(labels, predictions)})


def mlp_model_fn(features, labels, mode, params):
  """model_fns.mlp: Flatten, ReLU Dense layers, logits, cross-entropy."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  net = tf.keras.layers.Flatten()(features['x'])
  for units in params['hidden_units']:
    net = tf.keras.layers.Dense(units, activation='relu')(net)
  logits = tf.keras.layers.Dense(params['n_classes'])(net)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  return _train_spec(mode, loss, params, _accuracy(labels, logits))


def cnn_model_fn(features, labels, mode, params):
  """model_fns.cnn: two ReLU conv + max-pool blocks, Dense(64), logits."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  layers = tf.keras.layers
  net = features['x']
  for filters in (16, 32):
    net = layers.Conv2D(filters, 3, padding='same', activation='relu')(net)
    net = layers.MaxPooling2D(2, padding='same')(net)
  net = layers.Dense(64, activation='relu')(layers.Flatten()(net))
  logits = layers.Dense(params['n_classes'])(net)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  return _train_spec(mode, loss, params, _accuracy(labels, logits))


MODEL_FNS = {'W1': linear_model_fn, 'W2': mlp_model_fn, 'W3': cnn_model_fn}


def _with_variable_check(model_fn, variable_shapes):
  """Wraps `model_fn` to check its variables against the bare model's.

  A layer changed in the project's model (and so on the bare side) then
  stops the run instead of benchmarking another model.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def checked_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    # Optimizer slots are not trainable: these are the model's variables.
    shapes = [v.shape.as_list()
              for v in tf.compat.v1.trainable_variables()]
    if shapes != variable_shapes:
      raise ValueError(
          f'the tf.estimator model has variables of shapes {shapes}, the '
          f'bare model {variable_shapes}: update {model_fn.__name__}.')
    return spec

  return checked_model_fn


# -------------------------------------------------------------- training

def _input_fn(x, y, meta):
  """The workload's input_fn, rebuilt from its arrays and settings."""
  def input_fn():
    return make_dataset(x, y, batch_size=meta['batch_size'],
                        shuffle_buffer=meta['shuffle_buffer'],
                        seed=meta['seed'])
  return input_fn


def _estimator(workload, meta, model_dir: str, *,
               save_checkpoints_steps: int, tf1_model_fn: bool = False,
               intra_op_threads: int = 0):
  """The workload's tf.estimator.Estimator, with the runtime side's
  summaries and step-rate/loss log lines every 100 steps; `tf1_model_fn`:
  the model_fn the graph engine runs (`tf1_model_fns`), not MODEL_FNS';
  `intra_op_threads` (if not 0) in its session_config, as the runtime
  side's."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config = tf.estimator.RunConfig(
      model_dir=model_dir, save_checkpoints_steps=save_checkpoints_steps,
      save_summary_steps=100, log_step_count_steps=100,
      session_config=intra_op_session_config(intra_op_threads))
  model_fn = (tf1_model_fns.make_model_fn(workload, tf.estimator.EstimatorSpec,
                                          meta['params'])
              if tf1_model_fn else MODEL_FNS[workload])
  return tf.estimator.Estimator(
      _with_variable_check(model_fn, meta['variable_shapes']),
      config=config, params=dict(meta['params']))


def train(workload, steps, x, y, meta, record, *,
          tf1_model_fn: bool = False, intra_op_threads: int = 0) -> int:
  """Trains with tf.estimator; calls `record(global_step)` at boundaries.

  Returns:
    The final global step, read back from the last checkpoint.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  class BoundaryHook(tf.estimator.SessionRunHook):
    """Records the ends of step 1, of every STEPS_PER_LOOP-th step and of
    the last step.

    It counts the steps rather than fetching the global step: a fetch of
    the global step variable is not ordered with the train op's increment
    (it may read either value), and every fetch would add to each step's
    cost. Each run of the training loop is one step; `train` checks the
    count against the final checkpoint.
    """

    def __init__(self):
      self._global_step = None
      self._step = None

    def begin(self):
      self._global_step = tf.compat.v1.train.get_global_step()

    def after_create_session(self, session, coord):
      del coord  # Unused.
      self._step = int(session.run(self._global_step))

    def after_run(self, run_context, run_values):
      del run_context, run_values  # Unused.
      self._step += 1
      # The other sides' last loop may be a partial one: it ends at
      # `steps` too.
      if (self._step == 1 or self._step % STEPS_PER_LOOP == 0 or
          self._step == steps):
        record(self._step)

  with tempfile.TemporaryDirectory(prefix='bench_tf_estimator_') as model_dir:
    # The runtime side's settings: a checkpoint only at the end (the
    # interval is past the run).
    estimator = _estimator(workload, meta, model_dir,
                           save_checkpoints_steps=10 * steps,
                           tf1_model_fn=tf1_model_fn,
                           intra_op_threads=intra_op_threads)
    estimator.train(_input_fn(x, y, meta), hooks=[BoundaryHook()],
                    max_steps=steps)
    return int(estimator.get_variable_value('global_step'))


def train_and_evaluate(workload, x, y, meta, *, steps: int,
                       checkpoint_every: int, eval_steps: int) -> dict:
  """tf.estimator's local train_and_evaluate: trains to `steps`, saving a
  checkpoint every `checkpoint_every` steps and evaluating `eval_steps`
  batches after each (throttle_secs=0). Returns the final metrics."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  input_fn = _input_fn(x, y, meta)
  with tempfile.TemporaryDirectory(prefix='bench_tf_estimator_') as model_dir:
    estimator = _estimator(workload, meta, model_dir,
                           save_checkpoints_steps=checkpoint_every)
    metrics, _ = tf.estimator.train_and_evaluate(
        estimator, tf.estimator.TrainSpec(input_fn, max_steps=steps),
        tf.estimator.EvalSpec(input_fn, steps=eval_steps, throttle_secs=0,
                              start_delay_secs=0))
    return {k: float(v) for k, v in metrics.items()}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(
      prog='python -m scripts.bench.tf_estimator_worker',
      description=__doc__.split('\n\n')[0])
  add_run_flags(parser, WORKLOADS)
  parser.add_argument('--data', required=True,
                      help='the .npz file scripts.bench.peer_data made for the '
                      'workload')
  parser.add_argument('--train_and_evaluate', default=None,
                      metavar='CHECKPOINT_EVERY,EVAL_STEPS',
                      help='run train_and_evaluate instead (a checkpoint '
                      'every CHECKPOINT_EVERY steps, EVAL_STEPS batches '
                      'evaluated after each) and report when it ended')
  parser.add_argument('--tf1_model_fn', action='store_true',
                      help='train the TF1-style model_fn the graph engine '
                      'runs (scripts.bench.tf1_model_fns; W1 and W2) instead '
                      'of the Keras 2 layers one')
  add_v1_behavior_flag(parser)
  args = parser.parse_args(argv)
  check_steps(parser, args)
  if args.v1_behavior and not args.tf1_model_fn:
    parser.error('--v1_behavior: only with --tf1_model_fn.')
  if args.tf1_model_fn and args.workload not in tf1_model_fns.WORKLOADS:
    parser.error(f'--tf1_model_fn: {args.workload} has none; '
                 f'{tf1_model_fns.WORKLOADS} have.')

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  apply_v1_behavior(args.v1_behavior)
  apply_intra_op_threads(args.intra_op_threads)
  # tf.estimator and tf.keras load on first use: load them now, so that
  # imports_done_wall covers the framework's imports as on the other sides
  # (TensorFlow, Keras and estimator_rt).
  _ = tf.estimator.Estimator, tf.keras.layers.Dense
  imports_done_wall = time.time()
  # As the other sides: the INFO lines (loss and global_step/sec every 100
  # steps, checkpoints) are really written, to stderr.
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)

  x, y, meta = _load_data(args.data, args.workload)
  if args.train_and_evaluate:
    every, eval_steps = (int(n) for n in args.train_and_evaluate.split(','))
    metrics = train_and_evaluate(args.workload, x, y, meta, steps=args.steps,
                                 checkpoint_every=every,
                                 eval_steps=eval_steps)
    write_result({
        'side': SIDE, 'workload': args.workload,
        'mode': 'train_and_evaluate', 'steps': int(metrics['global_step']),
        'metrics': metrics, 'done_wall': time.time(),
        'imports_done_wall': imports_done_wall})
    return 0
  boundaries = []
  first_step_wall = []

  def record(global_step):
    boundaries.append((global_step, time.perf_counter(), time.process_time()))
    if not first_step_wall:
      first_step_wall.append(time.time())

  final_step = train(args.workload, args.steps, x, y, meta, record,
                     tf1_model_fn=args.tf1_model_fn,
                     intra_op_threads=args.intra_op_threads)
  if not boundaries or args.steps != final_step or (
      args.steps != boundaries[-1][0]):
    raise RuntimeError(
        f'trained to global step {final_step}, the hook counted up to '
        f'{boundaries[-1][0] if boundaries else 0}, for --steps='
        f'{args.steps}: the boundaries are not those of the steps.')

  write_result({
      'side': SIDE,
      'workload': args.workload,
      'steps': boundaries[-1][0],
      **steady_state(boundaries),
      'first_step_wall': first_step_wall[0],
      'imports_done_wall': imports_done_wall,
      'boundaries': boundaries,
  })
  return 0


if __name__ == '__main__':
  exit_at_once(main())
