"""One side of the calls benchmark (`python -m scripts.bench.calls`): times
the calls a program makes on one Estimator and prints one line
`BENCH_RESULT {json}`.

    .venv/bin/python -m scripts.bench.calls_worker --side runtime \
        --workload canned
    .venv-tf215/bin/python -m scripts.bench.calls_worker \
        --side tf_estimator --workload canned [--v1_behavior]

The same program runs on both sides: it uses `tf.estimator`, which is
tf.estimator 2.15 under .venv-tf215 and estimator_rt (served by its import
hook) under the project's environment. Only the standard library and
`scripts.bench.protocol` are imported at the top; TensorFlow and NumPy
inside the functions, under either version.

Workloads, all a 2-class classifier with hidden layers [32, 16] on 8
numeric features `f0`..`f7` (each of shape [1]), batches of 32:
  canned  `tf.estimator.DNNClassifier` on `numeric_column`s.
  tf1     a TF1-style model_fn: `tf.compat.v1.layers`, losses, metrics and
          an Adagrad `train_op` (DNNClassifier's optimizer and rate).
  tf2     a TF2 model_fn (Keras 3 layers, metric and optimizer), run by
          estimator_rt's eager engine (`--side runtime` only: tf.estimator
          2.15 cannot run it; nor can TF1 behaviour, which has no eager
          execution).

Calls, on one Estimator after a first `train(steps=10)` (not timed) that
writes the first checkpoint; `--repeats` times, in this order:
  train          `train(input_fn, steps=10)`.
  evaluate       `evaluate(input_fn, steps=1)`.
  predict_first  the first `predict` after that new checkpoint: a new
                 generator on a new one-example input_fn, timed to its
                 first answer.
  predict_next   `--predictions` more of the same (another example each),
                 as a service calls it, each timed to its first answer.
  export         `export_saved_model` with a parsing receiver.
Each generator is read to its end after its answer (untimed), so that the
next call starts as a service's would. Then, in a new model_dir:
  tae_cycle      a local `train_and_evaluate` with a checkpoint every 100
                 steps, `throttle_secs=0` and `EvalSpec(steps=1)`, so an
                 evaluation every 100 steps; an exporter records when each
                 evaluation ends; a cycle (100 steps, the checkpoint, the
                 evaluation) is the time between two of them per 100 steps,
                 the first one (building the graphs) left out.

Every call's wall and CPU (process, all threads) seconds are reported, in
the order they ran.
"""

import argparse
import os
import tempfile
import time

from scripts.bench.protocol import add_intra_op_threads_flag
from scripts.bench.protocol import add_v1_behavior_flag
from scripts.bench.protocol import apply_intra_op_threads
from scripts.bench.protocol import apply_v1_behavior
from scripts.bench.protocol import exit_at_once
from scripts.bench.protocol import intra_op_session_config
from scripts.bench.protocol import write_result

SIDES = ('runtime', 'tf_estimator')
WORKLOADS = ('canned', 'tf1', 'tf2')
# The calls, in the order each repetition makes them, then the
# train_and_evaluate cycle.
CALLS = ('train', 'evaluate', 'predict_first', 'predict_next', 'export',
         'tae_cycle')

NUM_FEATURES = 8
FEATURE_KEYS = tuple(f'f{i}' for i in range(NUM_FEATURES))
BATCH_SIZE = 32
HIDDEN_UNITS = (32, 16)
N_CLASSES = 2
# DNNClassifier's default optimizer and rate, for every workload.
LEARNING_RATE = 0.05
TRAIN_STEPS = 10
EVAL_STEPS = 1
TAE_EVERY = 100


# ------------------------------------------------------------------ data

def _data(num_examples: int = 1024):
  """(features {f0..f7: float32 [n, 1]}, labels int64 [n, 1]): a fixed
  draw, the same under both TensorFlow versions."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.RandomState(0)
  x = rng.normal(size=(num_examples, NUM_FEATURES)).astype(np.float32)
  weights = rng.normal(size=NUM_FEATURES)
  labels = (x @ weights + 0.5 * rng.normal(size=num_examples) > 0)
  features = {key: x[:, i:i + 1] for i, key in enumerate(FEATURE_KEYS)}
  return features, labels.astype(np.int64).reshape(-1, 1)


def _input_fns(tf, features, labels):
  """(train input_fn, eval input_fn, one_example(i): a new input_fn of
  example i alone)."""
  def train_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return dataset.repeat().batch(BATCH_SIZE, drop_remainder=True)

  def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(
        BATCH_SIZE)

  def one_example(index):
    example = {key: value[index:index + 1] for key, value in
               features.items()}

    def predict_input_fn():
      return tf.data.Dataset.from_tensor_slices(example).batch(1)
    return predict_input_fn

  return train_input_fn, eval_input_fn, one_example


# ------------------------------------------------------------ model_fns

def _tf1_model_fn(features, labels, mode, params):
  """The TF1-style model_fn: tf.compat.v1 layers, loss, metric, optimizer."""
  del params
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  net = tf.concat([features[key] for key in FEATURE_KEYS], axis=1)
  for units in HIDDEN_UNITS:
    net = tf.compat.v1.layers.dense(net, units, activation=tf.nn.relu)
  logits = tf.compat.v1.layers.dense(net, N_CLASSES)
  class_ids = tf.argmax(logits, axis=1)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={
        'class_ids': class_ids, 'probabilities': tf.nn.softmax(logits)})
  labels = tf.reshape(labels, [-1])
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
        'accuracy': tf.compat.v1.metrics.accuracy(labels, class_ids)})
  train_op = tf.compat.v1.train.AdagradOptimizer(LEARNING_RATE).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _tf2_model_fn(features, labels, mode, params):
  """The TF2 model_fn: a Keras 3 model rebuilt per call, a Keras metric
  and optimizer (estimator_rt's contract)."""
  del params
  import estimator_rt as ert  # pylint: disable=g-import-not-at-top
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  model = keras.Sequential(
      [keras.layers.Dense(units, activation='relu') for units in
       HIDDEN_UNITS] + [keras.layers.Dense(N_CLASSES)])
  logits = model(tf.concat([features[key] for key in FEATURE_KEYS], axis=1))
  class_ids = tf.argmax(logits, axis=1)
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions={
        'class_ids': class_ids, 'probabilities': tf.nn.softmax(logits)})
  labels = tf.reshape(labels, [-1])
  loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
      labels, logits, from_logits=True))
  if mode == ert.ModeKeys.EVAL:
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    accuracy.update_state(labels, logits)
    return ert.EstimatorSpec(mode, loss=loss,
                             eval_metric_ops={'accuracy': accuracy})
  return ert.EstimatorSpec(mode, loss=loss, optimizer=keras.optimizers.Adagrad(
      LEARNING_RATE))


# ------------------------------------------------------------ estimators

def _api(workload: str):
  """(the estimator API the workload's program uses, TensorFlow):
  `tf.estimator` for canned and tf1, estimator_rt for tf2."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if workload == 'tf2':
    import estimator_rt as ert  # pylint: disable=g-import-not-at-top
    return ert, tf
  return tf.estimator, tf


def _check_side(side: str) -> None:
  """Refuses to measure a side other than the one asked for: under the
  project's environment `tf.estimator` must be estimator_rt's (its import
  hook), under .venv-tf215 tf.estimator 2.15's."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  estimator_class = getattr(getattr(tf, 'estimator', None), 'Estimator',
                            None)
  served_by = getattr(estimator_class, '__module__', None)
  is_runtime = str(served_by).startswith('estimator_rt')
  if is_runtime != (side == 'runtime'):
    raise SystemExit(f'--side={side}: tf.estimator.Estimator here is from '
                     f'{served_by!r} '
                     f'(TensorFlow {tf.__version__}); run the runtime side '
                     'under the project\'s .venv and tf_estimator under '
                     '.venv-tf215.')


def _estimator(workload: str, config):
  """The workload's Estimator with `config` (a RunConfig with its
  model_dir)."""
  est, tf = _api(workload)
  if workload == 'canned':
    return est.DNNClassifier(
        hidden_units=list(HIDDEN_UNITS), n_classes=N_CLASSES, config=config,
        feature_columns=[tf.feature_column.numeric_column(key)
                         for key in FEATURE_KEYS])
  model_fn = _tf2_model_fn if workload == 'tf2' else _tf1_model_fn
  return est.Estimator(model_fn, config=config)


def _serving_input_fn(workload: str):
  """A parsing receiver of the 8 features (tf.Example protos)."""
  est, tf = _api(workload)
  spec = {key: tf.io.FixedLenFeature([1], tf.float32)
          for key in FEATURE_KEYS}
  if workload == 'tf2':
    return est.build_parsing_serving_input_fn(spec)
  return est.export.build_parsing_serving_input_receiver_fn(spec)


def _run_config(workload: str, model_dir: str, intra_op_threads: int,
                **kwargs):
  est, _ = _api(workload)
  return est.RunConfig(model_dir=model_dir, tf_random_seed=1,
                       session_config=intra_op_session_config(
                           intra_op_threads), **kwargs)


# --------------------------------------------------------------- timing

class _Timings:
  """Per call, the wall and CPU seconds of every timed call, in order."""

  def __init__(self, *, calls):
    self.wall = {call: [] for call in calls}
    self.cpu = {call: [] for call in calls}

  def time(self, call: str, function, *args, **kwargs):
    """Calls `function(*args, **kwargs)`, records its seconds under
    `call`, returns its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    self.wall[call].append(time.perf_counter() - wall)
    self.cpu[call].append(time.process_time() - cpu)
    return result


def _first_answer(estimator, input_fn):
  """The first prediction of a new `predict` generator (the call timed);
  the generator is then read to its end outside the timing."""
  predictions = estimator.predict(input_fn)
  first = next(predictions)
  return first, predictions


def _predict(timings: _Timings, call: str, estimator, input_fn) -> None:
  _, rest = timings.time(call, _first_answer, estimator, input_fn)
  for _ in rest:
    pass


def time_calls(workload: str, *, calls, repeats: int, predictions: int,
               intra_op_threads: int = 0) -> _Timings:
  """Times `calls` (of CALLS but tae_cycle) on one Estimator of
  `workload`, `repeats` times each, after a first train that writes the
  first checkpoint (see the module docstring)."""
  _, tf = _api(workload)
  features, labels = _data()
  train_input_fn, eval_input_fn, one_example = _input_fns(tf, features,
                                                          labels)
  timings = _Timings(calls=calls)
  example = 0
  with tempfile.TemporaryDirectory() as model_dir:
    estimator = _estimator(workload, _run_config(
        workload, os.path.join(model_dir, 'model'), intra_op_threads))
    estimator.train(train_input_fn, steps=TRAIN_STEPS)
    for repeat in range(repeats):
      if 'train' in calls:
        timings.time('train', estimator.train, train_input_fn,
                     steps=TRAIN_STEPS)
      if 'evaluate' in calls:
        timings.time('evaluate', estimator.evaluate, eval_input_fn,
                     steps=EVAL_STEPS)
      for call, count in (('predict_first', 1),
                          ('predict_next', predictions)):
        for _ in range(count if call in calls else 0):
          example += 1
          _predict(timings, call, estimator, one_example(example))
      if 'export' in calls:
        timings.time('export', estimator.export_saved_model,
                     os.path.join(model_dir, 'export', str(repeat)),
                     _serving_input_fn(workload))
  return timings


def _evaluation_timer(est):
  """An exporter (of `est`'s Exporter class) that records (global step,
  perf_counter) when train_and_evaluate hands it an evaluation's result."""

  class EvaluationTimer(est.Exporter):
    """Exports nothing; records when each evaluation ended."""

    def __init__(self):
      self.ends = []

    @property
    def name(self):
      return 'evaluation_timer'

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
      del estimator, export_path, checkpoint_path, is_the_final_export
      self.ends.append((int(eval_result['global_step']), time.perf_counter()))
      return None

  return EvaluationTimer()


def time_train_and_evaluate(workload: str, *, evaluations: int,
                            intra_op_threads: int = 0) -> dict:
  """A local train_and_evaluate to `evaluations` * TAE_EVERY steps with an
  evaluation every TAE_EVERY steps: the seconds per TAE_EVERY steps between
  evaluations (the first one left out), the steps evaluated, the whole
  call's seconds."""
  est, tf = _api(workload)
  features, labels = _data()
  train_input_fn, eval_input_fn, _ = _input_fns(tf, features, labels)
  timer = _evaluation_timer(est)
  with tempfile.TemporaryDirectory() as model_dir:
    estimator = _estimator(workload, _run_config(
        workload, model_dir, intra_op_threads,
        save_checkpoints_steps=TAE_EVERY))
    start = time.perf_counter()
    est.train_and_evaluate(
        estimator,
        est.TrainSpec(train_input_fn, max_steps=evaluations * TAE_EVERY),
        est.EvalSpec(eval_input_fn, steps=EVAL_STEPS, throttle_secs=0,
                     start_delay_secs=0, exporters=[timer]))
    total = time.perf_counter() - start
  cycles = [(later_time - earlier_time) * TAE_EVERY / (later - earlier)
            for (earlier, earlier_time), (later, later_time)
            in zip(timer.ends, timer.ends[1:]) if later > earlier]
  return {'cycles': cycles, 'evaluated_steps': [s for s, _ in timer.ends],
          'total_s': total}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--side', choices=SIDES, required=True)
  parser.add_argument('--workload', choices=WORKLOADS, required=True)
  parser.add_argument('--calls', default=','.join(CALLS),
                      help='comma-separated subset of ' + ','.join(CALLS))
  parser.add_argument('--repeats', type=int, default=5,
                      help='times each call is made (default 5)')
  parser.add_argument('--predictions', type=int, default=5,
                      help='predict_next calls per repeat (default 5)')
  parser.add_argument('--tae_evaluations', type=int, default=6,
                      help='evaluations of the train_and_evaluate, one every '
                      f'{TAE_EVERY} steps (default 6; >= 2)')
  add_v1_behavior_flag(parser)
  add_intra_op_threads_flag(parser)
  args = parser.parse_args()
  calls = [c.strip() for c in args.calls.split(',') if c.strip()]
  if not calls or set(calls) - set(CALLS):
    parser.error(f'--calls={args.calls!r}: expected a comma-separated '
                 f'subset of {",".join(CALLS)}.')
  if args.repeats < 1 or args.predictions < 0 or args.tae_evaluations < 2:
    parser.error(f'--repeats={args.repeats} must be >= 1, --predictions='
                 f'{args.predictions} >= 0, --tae_evaluations='
                 f'{args.tae_evaluations} >= 2.')
  if args.workload == 'tf2' and (args.side != 'runtime' or
                                 args.v1_behavior):
    parser.error('--workload=tf2: the runtime side under TF2 behaviour only '
                 '(tf.estimator 2.15 and TF1 behaviour cannot run a TF2 '
                 'model_fn).')
  apply_v1_behavior(args.v1_behavior)
  apply_intra_op_threads(args.intra_op_threads)
  _check_side(args.side)
  estimator_calls = [c for c in calls if c != 'tae_cycle']
  timings = time_calls(
      args.workload, calls=estimator_calls, repeats=args.repeats,
      predictions=args.predictions, intra_op_threads=args.intra_op_threads
  ) if estimator_calls else _Timings(calls=())
  result = {'side': args.side, 'workload': args.workload,
            'v1_behavior': args.v1_behavior, 'wall_s': timings.wall,
            'cpu_s': timings.cpu}
  if 'tae_cycle' in calls:
    tae = time_train_and_evaluate(args.workload,
                                  evaluations=args.tae_evaluations,
                                  intra_op_threads=args.intra_op_threads)
    result['wall_s']['tae_cycle'] = tae.pop('cycles')
    result['train_and_evaluate'] = tae
  write_result(result)
  exit_at_once(0)


if __name__ == '__main__':
  main()
