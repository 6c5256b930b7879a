"""The tf.estimator 2.15 side of the benchmark (see benchmark.py --peers).

    .venv-tf215/bin/python scripts/_bench_tf_estimator.py --workload W1 \
        --steps 60000 --data /tmp/W1.npz

Trains one workload with `tf.estimator.Estimator.train(input_fn,
max_steps=steps)` under TensorFlow 2.15.1 (the last release that ships
tf.estimator), tensorflow-estimator 2.15.0 and Keras 2, and prints one line
`BENCH_RESULT {json}` with the fields `_bench_worker.py` prints (side is
'tf_estimator'; there is no outer_ms_per_loop).

The model_fns are written as tf.estimator users wrote them: `tf.keras.layers`
called in the model_fn, a `tf.compat.v1.losses` loss and a
`tf.compat.v1.train` optimizer minimizing it with the global step. They do
the math of the bare side of `_bench_worker.py`: the same layers, loss,
optimizer kind and hyperparameters, on the same examples in the same order
(initial weights differ: another RNG draws them).

That environment cannot import the project (Keras 3, estimator_rt), so the
data comes from a file: `write_data`, called from the project's own Python,
saves the arrays each workload's input_fn draws from, with the pipeline's
and the model's parameters; `make_dataset` rebuilds the input_fn's pipeline
from them. For the same reason this module imports only the standard
library at the top: TensorFlow and NumPy are imported inside functions, so
that the project's Python can import it (write_data, steady_state) without
importing TensorFlow.

The loop boundaries are those of the other sides: the end of global step 1
and of every 100th step. tf.estimator runs one step per session run, so a
hook sees every step and records the boundaries among them.
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time

# Every worker's result line starts with it (write_result); the parents
# find it with read_result.
RESULT_PREFIX = 'BENCH_RESULT '
SIDE = 'tf_estimator'

# The loop length of the other sides: boundaries are recorded at step 1 and
# at every multiple of it.
STEPS_PER_LOOP = 100

WORKLOADS = ('W1', 'W2', 'W3')

# Whether each workload's input_fn shuffles its examples. Those that do
# (input_fns.digits.train_input_fn, input_fns.synthetic.images_input_fn)
# shuffle the whole block, seeded by params['seed']; write_data checks that
# the pipeline rebuilt from these settings gives the input_fn's batches.
_SHUFFLED = {'W1': False, 'W2': True, 'W3': True}

# The input_fns' default params['seed'].
_DEFAULT_SEED = 0


# -------------------------------------------------------- shared figures
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


def _one_pass_arrays(input_fn, params):
  """Returns (x, y), the block `input_fn` serves, in generation order.

  Read from one unshuffled pass with the final partial batch kept.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  one_pass = input_fn(dict(params, num_epochs=1, shuffle=False,
                           drop_remainder=False))
  batches = list(one_pass.as_numpy_iterator())
  return (np.concatenate([features['x'] for features, _ in batches]),
          np.concatenate([labels for _, labels in batches]))


def _optimizer_params(optimizer) -> dict:
  """The bare side's Keras optimizer as params of a tf.compat.v1 one.

  Raises:
    ValueError: the optimizer is not plain SGD or Adam (momentum, AMSGrad,
      weight decay, clipping, EMA...), which the peer does not mirror.
  """
  config = optimizer.get_config()
  kind = type(optimizer).__name__
  extras = {key: config.get(key) for key in
            ('weight_decay', 'clipnorm', 'global_clipnorm', 'clipvalue')
            if config.get(key) is not None}
  if config.get('use_ema'):
    extras['use_ema'] = True
  learning_rate = config['learning_rate']
  if isinstance(learning_rate, bool) or not isinstance(learning_rate,
                                                       (int, float)):
    extras['learning_rate'] = learning_rate
  if kind == 'SGD':
    if config.get('momentum') or config.get('nesterov'):
      extras['momentum'] = config.get('momentum')
    params = {'optimizer': 'sgd', 'learning_rate': float(learning_rate)}
  elif kind == 'Adam':
    if config.get('amsgrad'):
      extras['amsgrad'] = True
    params = {'optimizer': 'adam', 'learning_rate': float(learning_rate),
              'beta_1': float(config['beta_1']),
              'beta_2': float(config['beta_2']),
              # Keras' default is 1e-7 and tf.compat.v1's 1e-8: carried over
              # explicitly, as every other hyperparameter.
              'epsilon': float(config['epsilon'])}
  else:
    raise ValueError(f'the bare side uses a {kind} optimizer; the '
                     'tf.estimator side mirrors only SGD and Adam.')
  if extras:
    raise ValueError(f'the bare side\'s {kind} has settings the tf.estimator '
                     f'side does not mirror: {extras}')
  return params


def _check_same_batches(project_dataset, dataset, num_batches: int) -> None:
  """Raises ValueError unless both datasets start with the same batches."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  for index, (theirs, ours) in enumerate(zip(
      project_dataset.take(num_batches).as_numpy_iterator(),
      dataset.take(num_batches).as_numpy_iterator())):
    (their_features, their_labels), (our_features, our_labels) = theirs, ours
    if not (np.array_equal(their_features['x'], our_features['x']) and
            np.array_equal(their_labels, our_labels)):
      raise ValueError(
          f'batch {index} of the rebuilt pipeline differs from the project '
          "input_fn's: update _SHUFFLED or make_dataset to match it.")


def write_data(workload: str, path: str) -> None:
  """Saves what the tf.estimator side needs to train `workload` to `path`.

  Runs under the project's Python (it imports `_bench_worker`, the project's
  input_fns and Keras 3). The file (.npz, read without pickle) holds:

    x, y: the arrays the workload's input_fn draws its examples from, in
      the order it draws them before shuffling.
    meta: JSON of the workload, the pipeline's batch_size, shuffle_buffer
      and seed, the model_fn's params (layer sizes from the model_fn's
      DEFAULT_PARAMS; optimizer kind and hyperparameters from the bare
      side's Keras optimizer) and variable_shapes, the shapes of the bare
      model's trainable variables, which the tf.estimator model must have.

  Before saving, it checks that `make_dataset` on these arrays gives the
  same first batches (past the end of the first epoch) as the input_fn.

  Args:
    workload: 'W1', 'W2' or 'W3'.
    path: the .npz file to write.

  Raises:
    ValueError: unknown workload, an optimizer that cannot be mirrored, or
      a rebuilt pipeline that does not match the input_fn's.
  """
  if workload not in WORKLOADS:
    raise ValueError(f'workload {workload!r} is not one of {WORKLOADS}.')
  scripts_dir = os.path.dirname(os.path.abspath(__file__))
  if scripts_dir not in sys.path:
    sys.path.insert(0, scripts_dir)
  # The bare side's definitions are the reference: importing the worker
  # also puts the repository root on sys.path for the project's packages.
  import numpy as np  # pylint: disable=g-import-not-at-top
  import _bench_worker as worker  # pylint: disable=g-import-not-at-top
  from input_fns import digits  # pylint: disable=g-import-not-at-top
  from model_fns import cnn  # pylint: disable=g-import-not-at-top
  from model_fns import mlp  # pylint: disable=g-import-not-at-top

  spec = worker.WORKLOADS[workload]
  input_params = dict(spec['params'])
  if spec['input_fn'] is digits.train_input_fn:
    # Always shuffled, so no unshuffled pass to read: its split is the block.
    x, y, _, _ = digits.load_split()
  else:
    x, y = _one_pass_arrays(spec['input_fn'], input_params)
  pipeline = {
      'batch_size': input_params['batch_size'],
      'shuffle_buffer': len(y) if _SHUFFLED[workload] else 0,
      'seed': input_params.get('seed', _DEFAULT_SEED),
  }
  batches_per_epoch = -(-len(y) // pipeline['batch_size'])
  _check_same_batches(spec['input_fn'](input_params),
                      make_dataset(x, y, **pipeline), batches_per_epoch + 2)

  model = spec['bare_model']()
  model.build((None,) + tuple(x.shape[1:]))
  model_params = {'W1': {},
                  'W2': {key: mlp.DEFAULT_PARAMS[key]
                         for key in ('hidden_units', 'n_classes')},
                  'W3': {'n_classes': cnn.DEFAULT_PARAMS['n_classes']}}
  meta = {
      'workload': workload,
      **pipeline,
      'params': {**model_params[workload],
                 **_optimizer_params(spec['bare_optimizer']())},
      'variable_shapes': [list(v.shape) for v in model.trainable_variables],
  }
  np.savez(path, x=x, y=y, meta=np.array(json.dumps(meta)))


def _load_data(path: str, workload: str):
  """Returns (x, y, meta) from a write_data file for `workload`."""
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

def _optimizer(params):
  """The tf.compat.v1 optimizer of the bare side's kind and settings."""
  # The learning rate is Keras' float32 value: tf.compat.v1 casts it to
  # float32 too, so both sides step with the same number.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if params['optimizer'] == 'sgd':
    return tf.compat.v1.train.GradientDescentOptimizer(
        params['learning_rate'])
  return tf.compat.v1.train.AdamOptimizer(
      params['learning_rate'], beta1=params['beta_1'], beta2=params['beta_2'],
      epsilon=params['epsilon'])


def _train_spec(mode, loss, params, eval_metric_ops=None):
  """The TRAIN EstimatorSpec minimizing `loss`, counting the global step;
  in EVAL, the loss and `eval_metric_ops` (the project's model_fns' metric,
  for train_and_evaluate)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss,
                                      eval_metric_ops=eval_metric_ops)
  train_op = _optimizer(params).minimize(
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
               save_checkpoints_steps: int):
  """The workload's tf.estimator.Estimator, with the runtime side's
  summaries and step-rate/loss log lines every 100 steps."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config = tf.estimator.RunConfig(
      model_dir=model_dir, save_checkpoints_steps=save_checkpoints_steps,
      save_summary_steps=100, log_step_count_steps=100)
  return tf.estimator.Estimator(
      _with_variable_check(MODEL_FNS[workload], meta['variable_shapes']),
      config=config, params=dict(meta['params']))


def train(workload, steps, x, y, meta, record) -> int:
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
                           save_checkpoints_steps=10 * steps)
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
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--workload', choices=WORKLOADS, required=True)
  parser.add_argument('--steps', type=int, required=True,
                      help='total training steps (>= 101)')
  parser.add_argument('--data', required=True,
                      help='the .npz file write_data made for the workload')
  parser.add_argument('--train_and_evaluate', default=None,
                      metavar='CHECKPOINT_EVERY,EVAL_STEPS',
                      help='run train_and_evaluate instead (a checkpoint '
                      'every CHECKPOINT_EVERY steps, EVAL_STEPS batches '
                      'evaluated after each) and report when it ended')
  args = parser.parse_args(argv)
  if args.steps < 101:
    parser.error(f'--steps={args.steps} must be >= 101: the first loop '
                 '(1 step) is discarded and at least one more is needed.')

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
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

  final_step = train(args.workload, args.steps, x, y, meta, record)
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
