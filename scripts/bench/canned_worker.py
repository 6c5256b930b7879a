"""One side of the canned-estimator benchmark (`python -m
scripts.bench.canned`): trains a canned workload and prints one line
`CANNED_RESULT {json}`.

    .venv/bin/python -m scripts.bench.canned_worker --side runtime --workload C1
    .venv-tf215/bin/python -m scripts.bench.canned_worker --side tf_estimator \
        --workload C1

The same program runs on both sides: `--side runtime` takes the canned
classes from estimator_rt, `--side tf_estimator` from tf.estimator 2.15
(run it under .venv-tf215). Only TensorFlow and NumPy are imported, so the
data, feature columns and input pipeline are the same code on both.

Workloads:
  C1  DNNClassifier(hidden_units=[64, 32], 10 classes) on 20 numeric
      columns, batch 128.
  C2  DNNLinearCombinedClassifier (wide & deep) on tabular data: wide =
      vocabulary, hash-bucket, identity, bucketized and crossed columns;
      deep = numeric, indicator and two embedding columns; hidden [32, 16];
      batch 64.

Measured: `train` to step `--warmup` (graph building, first steps) and
`--warmup` steps more (the runtime keeps a session only from a call that
restored a checkpoint); then two more `train` calls, of `--steps / 4` and
`--steps` steps. `call steps/s` is the second one's steps over its wall
time, graph building and session start included, as a user's call pays
them; `steady steps/s` is
the difference of the two calls' steps over the difference of their times,
which cancels what every call pays once (the steps/s tf.estimator logged as
global_step/sec). `call CPU ms/step`: the process's CPU time (all threads)
over the long call's steps. `input batches/s`: the train input_fn's
dataset alone, as tf.data reads it, to its `--steps`-th batch with nothing
else running (tf.estimator's ceiling; the runtime reads C1's
slice-repeat-batch chain by slices, estimator_rt/inputs/slice_batches.py,
and may exceed it). Then the wall time of `train_and_evaluate` in a fresh
model_dir to `--tae_steps` with a checkpoint every `--tae_steps / 2` steps
and evaluation after each. `--user_prefetch no`: the train input_fn does
not end in `.prefetch(2)`.
"""

import argparse
import json
import tempfile
import time

from scripts.bench.protocol import add_intra_op_threads_flag
from scripts.bench.protocol import apply_intra_op_threads
from scripts.bench.protocol import intra_op_session_config

EDUCATION = ('none', 'primary', 'secondary', 'bachelors', 'masters',
             'doctorate', 'vocational', 'other')


def _c1_data(num_examples=4096):
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.RandomState(0)
  centers = rng.uniform(-3, 3, (10, 20))
  labels = rng.randint(0, 10, num_examples)
  x = centers[labels] + rng.normal(size=(num_examples, 20))
  features = {f'f{i}': x[:, i].astype(np.float32) for i in range(20)}
  return features, labels.astype(np.int64)


def _c2_data(num_examples=4096):
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.RandomState(0)
  education = rng.randint(0, len(EDUCATION), num_examples)
  occupation = rng.randint(0, 40, num_examples)
  features = {
      'age': rng.uniform(18, 80, num_examples).astype(np.float32),
      'hours': rng.uniform(10, 70, num_examples).astype(np.float32),
      'education': np.array(EDUCATION)[education].astype(bytes),
      'occupation': np.array([f'job_{i}'.encode() for i in occupation]),
      'region': rng.randint(0, 100, num_examples).astype(np.int64),
  }
  logit = 0.04 * (features['age'] - 45) + np.sin(education + occupation)
  labels = (rng.uniform(size=num_examples) < 1 / (1 + np.exp(-logit)))
  return features, labels.astype(np.int64)


def _c2_columns(tf):
  fc = tf.feature_column
  age = fc.numeric_column('age')
  education = fc.categorical_column_with_vocabulary_list('education',
                                                         EDUCATION)
  occupation = fc.categorical_column_with_hash_bucket('occupation', 50)
  region = fc.categorical_column_with_identity('region', 100)
  wide = [education, occupation, region,
          fc.bucketized_column(age, [25, 35, 45, 55, 65]),
          fc.crossed_column(['education', 'occupation'], 200)]
  deep = [age, fc.numeric_column('hours'), fc.indicator_column(education),
          fc.embedding_column(occupation, 8), fc.embedding_column(region, 8)]
  return wide, deep


def build(est, tf, workload: str, config, *, user_prefetch: bool = True):
  """(estimator, train input_fn, eval input_fn) of `workload`, with the
  canned classes of `est` (tf.estimator or estimator_rt); `user_prefetch`:
  the train input_fn ends in `.prefetch(2)` (else it does not, and the
  runtime adds its own, see estimator_rt/inputs/overlap.py; tf.estimator
  2.15 added none)."""
  if workload == 'C1':
    features, labels = _c1_data()
    batch = 128
    estimator = est.DNNClassifier(
        hidden_units=[64, 32], n_classes=10, config=config,
        feature_columns=[tf.feature_column.numeric_column(f'f{i}')
                         for i in range(20)])
  else:
    features, labels = _c2_data()
    batch = 64
    wide, deep = _c2_columns(tf)
    estimator = est.DNNLinearCombinedClassifier(
        linear_feature_columns=wide, dnn_feature_columns=deep,
        dnn_hidden_units=[32, 16], config=config)

  def train_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    dataset = dataset.repeat().batch(batch, drop_remainder=True)
    return dataset.prefetch(2) if user_prefetch else dataset

  def eval_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return dataset.take(1024).batch(batch)

  return estimator, train_input_fn, eval_input_fn


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--side', choices=('runtime', 'tf_estimator'),
                      required=True)
  parser.add_argument('--workload', choices=('C1', 'C2'), required=True)
  parser.add_argument('--warmup', type=int, default=100)
  parser.add_argument('--steps', type=int, default=4000)
  parser.add_argument('--tae_steps', type=int, default=1000)
  parser.add_argument('--user_prefetch', choices=('yes', 'no'),
                      default='yes',
                      help='whether the train input_fn ends in .prefetch(2)')
  add_intra_op_threads_flag(parser)
  args = parser.parse_args()
  user_prefetch = args.user_prefetch == 'yes'
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # Before any op, on both sides alike (scripts.bench.protocol); the
  # session_config below asks for it too, as users do.
  apply_intra_op_threads(args.intra_op_threads)
  session_config = intra_op_session_config(args.intra_op_threads)
  if args.side == 'tf_estimator':
    est = tf.estimator
  else:
    import estimator_rt as est  # pylint: disable=g-import-not-at-top
  quiet = dict(tf_random_seed=1, save_summary_steps=1_000_000,
               log_step_count_steps=1_000_000, session_config=session_config)
  config = est.RunConfig(save_checkpoints_steps=10 * args.steps, **quiet)
  with tempfile.TemporaryDirectory() as model_dir:
    estimator, train_input_fn, eval_input_fn = build(
        est, tf, args.workload, config.replace(model_dir=model_dir),
        user_prefetch=user_prefetch)
    estimator.train(train_input_fn, max_steps=args.warmup)
    # A second warm-up call: the runtime keeps no session after a call that
    # started from a fresh model_dir (no checkpoint to restore), so its next
    # call builds again. Without this, the short call below paid that
    # build and the long one did not, and the difference of their times
    # (the steady figure) came out near zero or negative.
    estimator.train(train_input_fn, steps=args.warmup)
    short_steps = args.steps // 4
    start = time.perf_counter()
    estimator.train(train_input_fn, steps=short_steps)
    short_seconds = time.perf_counter() - start
    start, cpu_start = time.perf_counter(), time.process_time()
    estimator.train(train_input_fn, steps=args.steps)
    train_seconds = time.perf_counter() - start
    train_cpu_seconds = time.process_time() - cpu_start
  # The input_fn alone: how many batches/s its dataset gives with nothing
  # else running (the same pipeline on both sides), tf.estimator's ceiling
  # for steps/s; always the prefetched one, so that both variants have one.
  _, train_input_fn, _ = build(est, tf, args.workload, config)
  batches = train_input_fn().take(args.steps)
  batches.reduce(0, lambda count, _: count + 1)  # Warm-up.
  start = time.perf_counter()
  batches.reduce(0, lambda count, _: count + 1)
  input_batches_per_sec = args.steps / (time.perf_counter() - start)
  with tempfile.TemporaryDirectory() as model_dir:
    config = est.RunConfig(model_dir=model_dir,
                           save_checkpoints_steps=args.tae_steps // 2,
                           **quiet)
    estimator, train_input_fn, eval_input_fn = build(
        est, tf, args.workload, config, user_prefetch=user_prefetch)
    start = time.perf_counter()
    est.train_and_evaluate(
        estimator, est.TrainSpec(train_input_fn, max_steps=args.tae_steps),
        est.EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
    tae_seconds = time.perf_counter() - start
  print('CANNED_RESULT ' + json.dumps({
      'side': args.side, 'workload': args.workload,
      'user_prefetch': user_prefetch,
      'steps_per_sec': args.steps / train_seconds,
      'steady_steps_per_sec': ((args.steps - short_steps) /
                               max(train_seconds - short_seconds, 1e-9)),
      # The process's CPU time (all threads) per step of the long call:
      # what a side costs, less sensitive than wall time to other
      # processes on the machine.
      'call_cpu_ms_per_step': 1000 * train_cpu_seconds / args.steps,
      'train_and_evaluate_secs': tae_seconds,
      'input_batches_per_sec': input_batches_per_sec}), flush=True)


if __name__ == '__main__':
  main()
