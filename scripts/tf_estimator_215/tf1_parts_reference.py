r"""Each part of TF1 behaviour alone, and what tf.estimator 2.15 computed
under it.

    # The reference, once, in the 2.15 environment (one process per part):
    .venv-tf215/bin/python -m scripts.tf_estimator_215.tf1_parts_reference \
        --record tests/data/tf_estimator_215/tf1_parts.json
    # One part here (tests/test_tf1_behavior.py runs each):
    .venv/bin/python -m estimator_rt.compat \
        scripts/tf_estimator_215/tf1_parts_reference.py \
        disable_resource_variables

`tf.compat.v1.disable_v2_behavior()` is the sum of five switches, and
programs flip some alone: eager execution, resource variables, v2 tensor
shapes, v2 control flow. Under PART, a TF1-style model_fn (v1 layers, an
Adam train_op, a v1 metric), a v1 DNN with batch normalization, a v1
linear model and a TF2 DNN, each with a graph seed, train 20 steps and
evaluate; the program prints one line `RESULT <json>`: each model's
evaluation loss and global step. (The canned models' losses are compared
with 2.15's; the model_fn's initial values come from op seeds that count
the ops made before it, which differ, so only its training is.)
"""

import json
import os
import subprocess
import sys
import tempfile

PARTS = ('disable_eager_execution', 'disable_resource_variables',
         'disable_v2_tensorshape', 'disable_control_flow_v2')
_STEPS = 20


def _run(part: str) -> dict:
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  getattr(tf.compat.v1, part)()
  v1 = tf.compat.v1
  x = np.random.RandomState(0).rand(64, 3).astype(np.float32)
  y = (x.sum(1) > 1.5).astype(np.int64)

  def train():
    return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(16)

  def evaluate():
    return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(16)

  def model_fn(features, labels, mode):
    hidden = v1.layers.dense(features['x'], 4, activation=tf.nn.relu)
    logits = v1.layers.dense(hidden, 2)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == v1.estimator.ModeKeys.EVAL:
      return v1.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
          'accuracy': v1.metrics.accuracy(labels, tf.argmax(logits, 1))})
    return v1.estimator.EstimatorSpec(
        mode, loss=loss, train_op=v1.train.AdamOptimizer(0.1).minimize(
            loss, v1.train.get_global_step()))

  config = v1.estimator.RunConfig(tf_random_seed=3)
  columns = [tf.feature_column.numeric_column('x', shape=(3,))]
  estimators = {
      'tf1_model_fn': lambda d: v1.estimator.Estimator(model_fn, d,
                                                       config=config),
      'v1_dnn_batch_norm': lambda d: v1.estimator.DNNClassifier(
          [4], columns, d, config=config, batch_norm=True),
      'v1_linear': lambda d: v1.estimator.LinearClassifier(columns, d,
                                                           config=config),
      'v2_dnn': lambda d: tf.compat.v2.estimator.DNNClassifier(
          [4], columns, model_dir=d, config=config),
  }
  result = {}
  for name, make in estimators.items():
    estimator = make(tempfile.mkdtemp())
    estimator.train(train, steps=_STEPS)
    metrics = estimator.evaluate(evaluate)
    result[name] = {'loss': float(metrics['loss']),
                    'global_step': int(metrics['global_step'])}
  return result


def main(argv):
  if argv[:1] == ['--record']:
    record = {}
    for part in PARTS:
      out = subprocess.run(
          [sys.executable, '-m', 'scripts.tf_estimator_215.tf1_parts_reference',
           part], capture_output=True, text=True, check=True,
          cwd=os.path.dirname(os.path.dirname(os.path.dirname(
              os.path.abspath(__file__))))).stdout
      record[part] = json.loads(out.split('RESULT ', 1)[1])
    with open(argv[1], 'w', encoding='utf-8') as f:
      json.dump(record, f, indent=1, sort_keys=True)
    return
  print('RESULT ' + json.dumps(_run(argv[0])), flush=True)


if __name__ == '__main__':
  main(sys.argv[1:])
