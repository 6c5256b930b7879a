"""checkpoint_input: the input iterator's position is saved with each
training checkpoint, so a resumed run ends with the weights of an
uninterrupted one (and sees each example of an epoch once); where
TensorFlow cannot do it, training is refused before anything is written."""

import os

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt import cluster
from estimator_rt.errors import UserInputError
import _models as M

N_EXAMPLES = 24


def _ids_input_fn(params=None):
  """A shuffled (seeded, new order each epoch), repeated, batched dataset:
  restarting it from its beginning visibly changes which examples a step
  sees."""
  x, y = M.make_data(N_EXAMPLES, seed=3)
  ds = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
  ds = ds.shuffle(N_EXAMPLES, seed=7, reshuffle_each_iteration=True)
  return M.no_autotune(ds.repeat().batch(6))


def _train(model_dir, max_steps, *, strategy='default', checkpoint_input=True):
  est = ert.Estimator(
      M.make_model_fn(optimizer='adam', lr=0.05), model_dir=str(model_dir),
      config=M.quiet_config(train_distribute=strategy, steps_per_loop=1,
                            save_checkpoints_steps=1, tf_random_seed=1,
                            checkpoint_input=checkpoint_input))
  est.train(_ids_input_fn, max_steps=max_steps)
  return M.read_model_variables(est.latest_checkpoint())


def _close(a, b):
  return all(np.allclose(u, v, atol=1e-5, rtol=0) for u, v in zip(a, b))


def test_resumed_run_matches_uninterrupted_run(tmp_path):
  whole = _train(tmp_path / 'whole', 9)
  _train(tmp_path / 'split', 5)
  resumed = _train(tmp_path / 'split', 9)
  assert _close(whole, resumed)
  reader = tf.train.load_checkpoint(str(tmp_path / 'split' / 'model.ckpt-9'))
  assert any(k.startswith('input_iterator/')
             for k in reader.get_variable_to_shape_map())


def test_without_checkpoint_input_the_resume_differs(tmp_path):
  """The same comparison fails with checkpoint_input off: the input
  restarts from its beginning, so the test above can fail."""
  whole = _train(tmp_path / 'whole', 9, checkpoint_input=False)
  _train(tmp_path / 'split', 5, checkpoint_input=False)
  resumed = _train(tmp_path / 'split', 9, checkpoint_input=False)
  assert not _close(whole, resumed)


def test_checkpoint_without_input_state_resumes_from_input_start(tmp_path):
  _train(tmp_path, 3, checkpoint_input=False)
  _train(tmp_path, 5, checkpoint_input=True)
  assert M.read_global_step(M.ckpt_path(str(tmp_path), 5)) == 5
  from estimator_rt import checkpoints
  assert checkpoints.problem_with(M.ckpt_path(str(tmp_path), 5)) is None


@pytest.mark.parametrize('strategy', ['mirrored', 'one_device'])
def test_strategies_without_checkpointable_iterator_are_refused(tmp_path,
                                                                strategy):
  """TensorFlow 2.21: their DistributedIterator holds an
  OwnedMultiDeviceIterator, which is not trackable."""
  with pytest.raises(UserInputError,
                     match=f'not supported with {strategy} training'):
    _train(tmp_path / 'm', 2, strategy=strategy)
  assert not (tmp_path / 'm').exists()


def test_uncheckpointable_dataset_is_refused_before_writing(tmp_path):
  def generator_input_fn():
    def gen():
      while True:
        yield {'x': np.zeros(4, np.float32)}, np.zeros(1, np.float32)
    return tf.data.Dataset.from_generator(gen, output_signature=(
        {'x': tf.TensorSpec([4], tf.float32)},
        tf.TensorSpec([1], tf.float32))).batch(2)

  model_dir = tmp_path / 'model'
  est = ert.Estimator(M.make_model_fn(), model_dir=str(model_dir),
                      config=M.quiet_config(checkpoint_input=True))
  with pytest.raises(UserInputError, match='checkpoint_input') as info:
    est.train(generator_input_fn, max_steps=2)
  assert 'cannot be checkpointed' in str(info.value)
  assert not model_dir.exists()


@pytest.mark.parametrize('task,name', [
    (cluster.TaskInfo(cluster={'chief': ['localhost:1'],
                               'worker': ['localhost:2'],
                               'ps': ['localhost:3']},
                      task_type='chief', task_index=0),
     'parameter_server'),
])
def test_cluster_strategies_are_refused(tmp_path, task, name):
  config = M.quiet_config(checkpoint_input=True, task_info=task,
                          train_distribute=name)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'm'),
                      config=config)
  with pytest.raises(UserInputError, match=name):
    est.train(_ids_input_fn, max_steps=2)
  assert not (tmp_path / 'm').exists()


def test_checkpoint_input_is_validated():
  with pytest.raises(UserInputError, match="checkpoint_input='yes'"):
    ert.RunConfig(checkpoint_input='yes')
