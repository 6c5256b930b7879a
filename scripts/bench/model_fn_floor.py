"""The floor of a call that calls its model_fn: the calls benchmark's
TF1-style model_fn (`calls_worker._tf1_model_fn`) alone, building its graph
once per mode in a new graph, as tf.estimator 2.15 called it once per
`train`, `evaluate` and `predict`. No estimator runs: what a call costs
beyond this is the estimator's own.

    .venv/bin/python -m scripts.bench.model_fn_floor
    .venv-tf215/bin/python -m scripts.bench.model_fn_floor

Prints one line per mode: the median milliseconds of `--repeats` builds
(the first two left out: TensorFlow's first graphs of a process cost
more).
"""

import argparse
import statistics
import time

from scripts.bench import calls_worker

MODES = ('infer', 'eval', 'train')  # tf.estimator.ModeKeys' values.


def build_times(mode: str, repeats: int) -> list:
  """Seconds of each of `repeats` model_fn calls in `mode`, each in a new
  graph holding the input's iterator (a one-example input for infer, the
  evaluation's batches otherwise) and a global step."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  features, labels = calls_worker._data()  # pylint: disable=protected-access
  _, _, one_example = calls_worker._input_fns(tf, features, labels)  # pylint: disable=protected-access
  times = []
  for index in range(repeats):
    with tf.Graph().as_default():
      tf.compat.v1.train.create_global_step()
      if mode == 'infer':
        dataset, labels_of = one_example(index)(), None
      else:
        dataset = tf.data.Dataset.from_tensor_slices(
            (features, labels)).batch(calls_worker.BATCH_SIZE)
      element = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
      batch_features, labels_of = ((element, None) if mode == 'infer'
                                   else element)
      start = time.perf_counter()
      calls_worker._tf1_model_fn(batch_features, labels_of, mode, {})  # pylint: disable=protected-access
      times.append(time.perf_counter() - start)
  return times


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--repeats', type=int, default=12,
                      help='builds per mode (>= 3; default 12)')
  args = parser.parse_args()
  if args.repeats < 3:
    parser.error(f'--repeats={args.repeats} must be >= 3.')
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for mode in MODES:
    times = build_times(mode, args.repeats)[2:]
    print(f'TensorFlow {tf.__version__}: model_fn alone, mode {mode}: '
          f'{statistics.median(times) * 1e3:.1f} ms (median of {len(times)})')


if __name__ == '__main__':
  main()
