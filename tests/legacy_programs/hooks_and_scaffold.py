"""(e) A model_fn with a SessionRunHook, Scaffold, summaries, export_outputs.

A linear regression written with the parts of the tf.estimator contract
that go beyond loss and train_op:

- `training_hooks` and `evaluation_hooks`: a `tf.compat.v1.train.
  SessionRunHook` that asks for the loss and the global step on every run
  (`SessionRunArgs`) and writes them down.
- `scaffold`: a `tf.compat.v1.train.Scaffold` whose `init_fn` sets known
  starting weights (all zeros, so the first loss is the mean of y^2 over the
  first batch, which main() also works out by hand) and whose own `Saver`
  keeps 2 checkpoints where the RunConfig says 1 (the scaffold's saver wins
  in tf.estimator).
- `tf.compat.v1.summary.scalar` in the model_fn, found again in the training
  event files.
- `export_outputs` with two `PredictOutput` signatures, and a raw
  placeholder `ServingInputReceiver`.

Data: y = 3 x0 - 2 x1 + 0.5 x2 + 1 + noise, fixed numpy seed, unshuffled so
the first batch is known.
"""

import glob
import os

import numpy as np
import tensorflow as tf

import estimator_rt

BATCH_SIZE = 16
TRUE_WEIGHTS = np.array([3., -2., 0.5], dtype=np.float32)
TRUE_BIAS = 1.


def make_points(num_examples, seed):
  """Returns (x float32 [n, 3], y float32 [n, 1])."""
  rng = np.random.RandomState(seed)
  x = rng.uniform(-1., 1., size=(num_examples, 3)).astype(np.float32)
  y = x @ TRUE_WEIGHTS + TRUE_BIAS + rng.normal(scale=0.05, size=num_examples)
  return x, y.astype(np.float32)[:, np.newaxis]


TRAIN_DATA = make_points(256, seed=0)
EVAL_DATA = make_points(64, seed=1)

# What the hooks saw, by mode; filled while the estimator runs.
RECORDS = {}


class RecordingHook(tf.compat.v1.train.SessionRunHook):
  """Writes down the loss and the global step after every session run."""

  def __init__(self, loss, mode):
    self._loss = loss
    self._mode = mode

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()
    RECORDS[self._mode] = {'runs': 0, 'losses': [], 'steps': []}

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(
        {'loss': self._loss, 'step': self._global_step})

  def after_run(self, run_context, run_values):
    record = RECORDS[self._mode]
    record['runs'] += 1
    record['losses'].append(float(run_values.results['loss']))
    record['steps'].append(int(run_values.results['step']))


def model_fn(features, labels, mode):
  x = features['x']
  weights = tf.compat.v1.get_variable('weights', [3, 1])
  bias = tf.compat.v1.get_variable('bias', [1])
  y = tf.matmul(x, weights) + bias

  if mode == estimator_rt.ModeKeys.PREDICT:
    return estimator_rt.EstimatorSpec(
        mode, predictions={'y': y},
        export_outputs={
            'serving_default': estimator_rt.export.PredictOutput({'y': y}),
            'with_input': estimator_rt.export.PredictOutput({'y': y, 'x': x}),
        })

  loss = tf.compat.v1.losses.mean_squared_error(labels=labels, predictions=y)
  tf.compat.v1.summary.scalar('mean_absolute_error',
                              tf.reduce_mean(tf.abs(labels - y)))
  tf.compat.v1.summary.scalar('bias_value', bias[0])

  if mode == estimator_rt.ModeKeys.EVAL:
    return estimator_rt.EstimatorSpec(
        mode, loss=loss,
        eval_metric_ops={
            'mae': tf.compat.v1.metrics.mean_absolute_error(labels, y)},
        evaluation_hooks=[RecordingHook(loss, 'eval')])

  start_from_zero = tf.group(weights.assign(tf.zeros([3, 1])),
                             bias.assign(tf.zeros([1])))
  scaffold = tf.compat.v1.train.Scaffold(
      init_fn=lambda scaffold, session: session.run(start_from_zero),
      saver=tf.compat.v1.train.Saver(max_to_keep=2, sharded=True,
                                     save_relative_paths=True))
  train_op = tf.compat.v1.train.MomentumOptimizer(
      learning_rate=0.05, momentum=0.9).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
  return estimator_rt.EstimatorSpec(
      mode, loss=loss, train_op=train_op, scaffold=scaffold,
      training_hooks=[RecordingHook(loss, 'train')])


def train_input_fn():
  return tf.data.Dataset.from_tensor_slices(
      ({'x': TRAIN_DATA[0]}, TRAIN_DATA[1])).repeat().batch(BATCH_SIZE)


def eval_input_fn():
  return tf.data.Dataset.from_tensor_slices(
      ({'x': EVAL_DATA[0]}, EVAL_DATA[1])).batch(BATCH_SIZE)


def predict_input_fn():
  return tf.data.Dataset.from_tensor_slices({'x': EVAL_DATA[0][:3]}).batch(3)


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 3], name='x')
  return estimator_rt.export.ServingInputReceiver({'x': x}, {'x': x})


SERVING_EXAMPLE = {'x': EVAL_DATA[0][:2].tolist()}


def summary_tags(directory):
  """The scalar tags in directory's own event files (not its subdirectories)."""
  tags = set()
  for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(value.tag for value in event.summary.value)
  return sorted(tags)


def main(model_dir, train_steps=200):
  """Trains up to `train_steps`, evaluates, predicts and exports.

  Returns:
    A dict: 'eval' (evaluate's metrics), 'predictions', 'export_dir', and
    what shows the hooks, scaffold and summaries worked: 'train_hook' and
    'eval_hook' (runs seen, first and last loss and step), 'first_loss_by_hand'
    (the first batch's loss from zero weights), 'weights' and 'bias' (the
    trained values), 'checkpoints_kept' and 'summary_tags'.
  """
  config = estimator_rt.RunConfig(tf_random_seed=1, keep_checkpoint_max=1,
                                  save_checkpoints_steps=50,
                                  save_summary_steps=10)
  regressor = estimator_rt.Estimator(model_fn=model_fn, model_dir=model_dir,
                                     config=config)
  regressor.train(input_fn=train_input_fn, max_steps=train_steps)
  metrics = regressor.evaluate(input_fn=eval_input_fn)
  predictions = list(regressor.predict(input_fn=predict_input_fn))
  export_dir = regressor.export_saved_model(model_dir + '/export',
                                            serving_input_receiver_fn)

  def summary(record):
    return {'runs': record['runs'],
            'first_loss': record['losses'][0],
            'last_loss': record['losses'][-1],
            'first_step': record['steps'][0], 'last_step': record['steps'][-1]}

  first_y = TRAIN_DATA[1][:BATCH_SIZE]
  return {
      'eval': metrics,
      'predictions': predictions,
      'export_dir': export_dir,
      'train_hook': summary(RECORDS['train']),
      'eval_hook': summary(RECORDS['eval']),
      'first_loss_by_hand': float(np.mean(first_y ** 2)),
      'weights': regressor.get_variable_value('weights').ravel(),
      'bias': regressor.get_variable_value('bias'),
      'checkpoints_kept': sorted(
          os.path.basename(path)[:-len('.index')] for path in
          glob.glob(os.path.join(model_dir, 'model.ckpt-*.index'))),
      'summary_tags': summary_tags(model_dir),
  }
