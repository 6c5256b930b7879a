r"""The event files tf.estimator programs leave, by tag: value kind and steps.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.event_kinds > 215.txt
    .venv/bin/python -m scripts.tf_estimator_215.event_kinds > here.txt
    diff 215.txt here.txt

(from the repository root). Runs each program below in a fresh process in
both behaviours (v1: `tf.compat.v1.disable_v2_behavior()` first) through
`train_and_evaluate` (12 steps, summaries and step counts every 5, an
evaluation after each checkpoint, a LatestExporter), and prints, for every
event file of its model_dir, one line per (directory, tag, value kind,
plugin, tensor dtype) with the steps it was written at, in the order of the
file; then the INFO lines a script greps, their times masked. Under 2.15 it
shows what tf.estimator wrote; here what the runtime writes for the same
programs (the import hook serves `tf.estimator`). About 2 minutes.

Programs: a TF1-style model_fn writing `tf.compat.v1.summary` scalar,
histogram and image summaries and a `tf.summary.scalar` (no default writer:
2.15 wrote nothing for it); the linear, DNN and wide & deep classifiers of
both namespaces, binary and of 3 classes (their own summaries: the linear
model's bias, scalar or histogram, and fraction of zero weights, the layers'
activations). The side-by-side check (observe/, tests/test_observables_215.py)
compares value kinds for its scenarios on every test run; this script is
the wider look it was built from.
"""

import collections
import functools
import os
import re
import subprocess
import sys
import tempfile

PROGRAMS = ('model_fn', 'linear', 'linear_v1', 'linear_3', 'dnn', 'dnn_v1',
            'wide_deep', 'wide_deep_3', 'wide_deep_v1_3')
_LOGGED = re.compile(r'loss = |Loss for final step|Saving dict|'
                     r'global_step/sec: |examples/sec: ')


def _input_fn(classes: int = 2):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = np.arange(64, dtype=np.float32).reshape(32, 2) / 64
  y = (x.sum(1, keepdims=True) > 0.5).astype(np.int64)
  if classes == 3:
    y += x[:, :1] > 0.4
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(8)


def _model_fn(features, labels, mode):
  """TF1-style, with every kind of v1 summary op and a TF2 summary."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  w = tf.compat.v1.get_variable('w', [2, 1])
  logits = tf.matmul(features['x'], w)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={'y': logits})
  loss = tf.reduce_mean(tf.square(logits - tf.cast(labels, tf.float32)))
  tf.compat.v1.summary.scalar('v1_scalar', loss)
  tf.compat.v1.summary.histogram('v1_histogram', logits)
  tf.compat.v1.summary.image('v1_image',
                             tf.reshape(features['x'], [-1, 1, 2, 1]))
  tf.summary.scalar('v2_scalar', loss)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(
      mode, loss=loss, train_op=train_op, eval_metric_ops={
          'mae': tf.compat.v1.metrics.mean_absolute_error(
              tf.cast(labels, tf.float32), logits)})


def _estimator(program: str, model_dir: str):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config = tf.estimator.RunConfig(
      save_summary_steps=5, log_step_count_steps=5, tf_random_seed=1,
      save_checkpoints_steps=6)
  if program == 'model_fn':
    return tf.estimator.Estimator(_model_fn, model_dir, config=config)
  columns = [tf.feature_column.numeric_column('x', shape=[2])]
  name = program.replace('_v1', '').replace('_3', '')
  namespace = (tf.compat.v1.estimator if '_v1' in program else
               tf.estimator)
  common = dict(model_dir=model_dir, config=config,
                n_classes=3 if program.endswith('_3') else 2)
  if name == 'linear':
    return namespace.LinearClassifier(columns, **common)
  if name == 'dnn':
    return namespace.DNNClassifier([4], columns, **common)
  return namespace.DNNLinearCombinedClassifier(
      linear_feature_columns=columns, dnn_feature_columns=columns,
      dnn_hidden_units=[3], **common)


def _listing(model_dir: str) -> list:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  lines = []
  for root, _, names in sorted(os.walk(model_dir)):
    for name in sorted(n for n in names if 'tfevents' in n):
      seen = collections.OrderedDict()
      for event in tf.compat.v1.train.summary_iterator(
          os.path.join(root, name)):
        for value in event.summary.value:
          dtype = (tf.dtypes.as_dtype(value.tensor.dtype).name
                   if value.HasField('tensor') else '-')
          key = (os.path.relpath(root, model_dir), value.tag,
                 value.WhichOneof('value'),
                 value.metadata.plugin_data.plugin_name or '-', dtype)
          seen.setdefault(key, []).append(event.step)
      lines += [' '.join(key) + f' {steps}' for key, steps in seen.items()]
  return lines


def run_one(program: str, behavior: str) -> None:
  """Runs `program` in this process and prints its event files' listing."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if behavior == 'v1':
    tf.compat.v1.disable_v2_behavior()
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  model_dir = tempfile.mkdtemp()
  estimator = _estimator(program, model_dir)
  feature_spec = {'x': tf.io.FixedLenFeature([2], tf.float32)}
  exporter = tf.estimator.LatestExporter(
      'latest', tf.estimator.export.build_parsing_serving_input_receiver_fn(
          feature_spec))
  input_fn = functools.partial(_input_fn,
                               3 if program.endswith('_3') else 2)
  tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(input_fn, max_steps=12),
      tf.estimator.EvalSpec(input_fn, steps=2, exporters=[exporter],
                            throttle_secs=0))
  print('\n'.join(_listing(model_dir)))


def main(argv) -> int:
  if len(argv) == 3:
    run_one(argv[1], argv[2])
    return 0
  for program in PROGRAMS:
    for behavior in ('v2', 'v1'):
      done = subprocess.run(
          [sys.executable, '-m', 'scripts.tf_estimator_215.event_kinds',
           program, behavior], capture_output=True, text=True, timeout=600,
          check=False, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
      print(f'## {program} {behavior} (exit {done.returncode})')
      print(done.stdout.rstrip())
      for line in done.stderr.splitlines():
        if _LOGGED.search(line):
          line = re.sub(r'\(\d+\.\d+ sec\)', '(<t> sec)', line)
          print(re.sub(r'(sec: )\S+', r'\1<t>', line))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
