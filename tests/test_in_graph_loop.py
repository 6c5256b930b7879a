"""The graph engine's in-graph loop (estimator_rt/training/graph/in_graph_loop.py):
a canned estimator runs many steps per session run and computes what one
step per run computes.

The same wide & deep model is resumed from one checkpoint twice: once in
the loop (the default for canned estimators) and once one step per run (a
SessionRunHook given to train() asks for that). The input ends inside a
loop (37 batches, loops of 10), and the two must end at the same step with
the same variables, having written the model's own summaries (the DNN's
fraction_of_zero_values, the head's loss) at the same steps.
"""

import os
import shutil

import numpy as np
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.core import summaries
from _models import checkpoint_steps
from _models import ckpt_path
from _models import SessionRunCounter

BATCH, BATCHES = 16, 37
LOOP_LINE = 'runs its steps in an in-graph loop'


def _data():
  rng = np.random.RandomState(3)
  n = BATCH * BATCHES
  features = {
      'age': rng.uniform(18, 80, n).astype(np.float32),
      'education': np.array([b'a', b'b', b'c', b'd'])[rng.randint(0, 4, n)],
      'occupation': np.array([f'job_{i}'.encode()
                              for i in rng.randint(0, 30, n)]),
  }
  labels = (rng.uniform(size=n) < 0.4).astype(np.int64)
  return features, labels


def _estimator(model_dir):
  fc = tf.feature_column
  education = fc.categorical_column_with_vocabulary_list(
      'education', [b'a', b'b', b'c', b'd'])
  occupation = fc.categorical_column_with_hash_bucket('occupation', 20)
  config = ert.RunConfig(model_dir=model_dir, tf_random_seed=7,
                         steps_per_loop=10, save_summary_steps=10,
                         save_checkpoints_steps=1000, log_step_count_steps=0)
  return ert.DNNLinearCombinedClassifier(
      linear_feature_columns=[education, occupation,
                              fc.crossed_column(['education', 'occupation'],
                                                40)],
      dnn_feature_columns=[fc.numeric_column('age'),
                           fc.indicator_column(education),
                           fc.embedding_column(occupation, 4)],
      dnn_hidden_units=[8, 4], config=config)


def _input_fn(features, labels, *, repeat):
  def input_fn():
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return (dataset.repeat() if repeat else dataset).batch(BATCH)
  return input_fn


def _train(model_dir, input_fn, hooks, caplog):
  caplog.clear()
  _estimator(model_dir).train(input_fn, hooks=hooks)
  return caplog.text


def test_the_loop_computes_what_one_step_per_run_computes(tmp_path, caplog):
  features, labels = _data()
  start = str(tmp_path / 'start')
  # One step, so that both runs start from the same variables.
  _estimator(start).train(_input_fn(features, labels, repeat=True),
                          max_steps=1)
  looped, stepped = str(tmp_path / 'looped'), str(tmp_path / 'stepped')
  shutil.copytree(start, looped)
  shutil.copytree(start, stepped)
  finite = _input_fn(features, labels, repeat=False)
  # The line is absl's: an earlier test that parsed absl flags leaves absl's
  # verbosity at its flag default (WARNING), so set the absl logger itself.
  caplog.set_level('INFO', logger='absl')

  looped_log = _train(looped, finite, [], caplog)
  counter = SessionRunCounter()
  stepped_log = _train(stepped, finite, [counter], caplog)

  assert LOOP_LINE in looped_log
  assert LOOP_LINE not in stepped_log
  assert counter.runs == BATCHES  # A SessionRunHook sees every step.
  # The input ended inside the fourth loop (10, 10, 10, then 7 steps).
  assert checkpoint_steps(looped) == checkpoint_steps(stepped) == [
      0, 1, 1 + BATCHES]
  ours = tf.train.load_checkpoint(ckpt_path(looped, 1 + BATCHES))
  theirs = tf.train.load_checkpoint(ckpt_path(stepped, 1 + BATCHES))
  names = sorted(ours.get_variable_to_shape_map())
  assert names == sorted(theirs.get_variable_to_shape_map())
  assert 'training/Ftrl/linear/linear_model/education/weights/accumulator' in (
      names)
  for name in names:
    np.testing.assert_allclose(ours.get_tensor(name), theirs.get_tensor(name),
                               rtol=1e-5, atol=1e-6, err_msg=name)
  looped_scalars = summaries.read_scalars(looped)
  stepped_scalars = summaries.read_scalars(stepped)
  tag = 'dnn/hiddenlayer_0/fraction_of_zero_values'
  # At the first step of each train() call (1 the first, 2 this one), then
  # every 10 steps.
  assert [s for s, _ in looped_scalars[tag]] == [1, 2, 12, 22, 32]
  for tag in (tag, 'dnn/logits/fraction_of_zero_values',
              'linear/fraction_of_zero_values'):
    np.testing.assert_allclose(
        [v for _, v in looped_scalars[tag]],
        [v for _, v in stepped_scalars[tag]], rtol=1e-5, err_msg=tag)
