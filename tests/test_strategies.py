"""Strategies: every one-process strategy trains and evaluates, and N
replicas on a per-replica batch B train exactly like one replica on N*B.

conftest splits the CPU into 2 logical devices, so 'mirrored' and
'central_storage' run 2 replicas here.
"""

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
import _models as M

STRATEGIES = ['default', 'one_device', 'mirrored', 'central_storage']
REPLICATED = ['mirrored', 'central_storage']


@pytest.mark.parametrize('strategy', STRATEGIES)
def test_strategy_trains_and_evaluates(tmp_path, strategy):
  x, y = M.make_data(64)
  est = ert.Estimator(M.make_model_fn(optimizer='adam', lr=0.02),
                      model_dir=str(tmp_path), params={'batch_size': 16},
                      config=M.quiet_config(train_distribute=strategy))
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=40)
  ckpt = est.latest_checkpoint()
  assert M.checkpoint_steps(str(tmp_path)) == [0, 10, 20, 30, 40]
  assert M.read_global_step(ckpt) == 40
  weights = M.read_model_variables(ckpt)

  result = est.evaluate(M.global_input_fn(x, y, batch_size=16, repeat=False))
  expected = M.np_forward(weights, x)
  assert result['global_step'] == 40
  assert result['loss'] == pytest.approx(np.mean((expected - y) ** 2),
                                         rel=1e-5)
  assert result['mae'] == pytest.approx(np.mean(np.abs(expected - y)),
                                        rel=1e-5)
  initial = np.mean((M.np_forward(M.initial_weights(), x) - y) ** 2)
  assert result['loss'] < 0.5 * initial
  predictions = np.array([p['y'] for p in est.predict(
      M.global_input_fn(x, batch_size=16, repeat=False))])
  np.testing.assert_allclose(predictions, expected, rtol=1e-5, atol=1e-5)


def _assert_same_weights(path_a, path_b, *, atol=1e-5):
  a = M.read_model_variables(path_a)
  b = M.read_model_variables(path_b)
  assert len(a) == len(b) == 4
  for got, want in zip(a, b):
    np.testing.assert_allclose(got, want, atol=atol, rtol=0)


def _train_reference(model_dir, optimizer, lr, input_fn, steps):
  ref = ert.Estimator(M.make_model_fn(optimizer=optimizer, lr=lr),
                      model_dir=model_dir, params={'batch_size': 16},
                      config=M.quiet_config())
  ref.train(input_fn, max_steps=steps)
  return ref.latest_checkpoint()


@pytest.mark.parametrize('optimizer,lr', [('sgd', 0.1), ('adam', 0.02)])
@pytest.mark.parametrize('strategy', REPLICATED)
def test_replicas_match_one_replica_on_the_global_batch(tmp_path, strategy,
                                                        optimizer, lr):
  """2 replicas x batch 8 == 1 replica x batch 16 (global batch 16 given to
  both; the strategy splits it)."""
  x, y = M.make_data(64, noise=0.3)
  input_fn = M.global_input_fn(x, y, batch_size=16)
  reference = _train_reference(str(tmp_path / 'ref'), optimizer, lr, input_fn,
                               25)
  est = ert.Estimator(M.make_model_fn(optimizer=optimizer, lr=lr),
                      model_dir=str(tmp_path / strategy),
                      params={'batch_size': 16},
                      config=M.quiet_config(train_distribute=strategy))
  assert est.train_strategy.num_replicas_in_sync == 2
  est.train(input_fn, max_steps=25)
  ckpt = est.latest_checkpoint()
  assert M.read_global_step(ckpt) == M.read_global_step(reference) == 25
  # The weights moved (so equality below is not equality of initial values).
  assert not np.allclose(M.read_model_variables(ckpt)[0],
                         M.initial_weights()[0], atol=1e-2)
  _assert_same_weights(ckpt, reference)


@pytest.mark.parametrize('optimizer,lr', [('sgd', 0.1), ('adam', 0.02)])
def test_input_context_replicas_match_one_replica(tmp_path, optimizer, lr):
  """An input_fn that takes input_context batches per replica (8) and shards
  by input pipeline.

  In one process MirroredStrategy builds ONE input pipeline
  (num_input_pipelines=1, so `shard(1, 0)` keeps everything) and hands its
  consecutive batches to the replicas in turn: at step k replica 0 gets
  rows [16k, 16k+8) and replica 1 rows [16k+8, 16k+16). Their union is
  exactly the reference's global batch k of 16, so the weights must match
  exactly (up to float reduction order). Disjoint shards per pipeline need
  several workers; that is a multi-process test.
  """
  x, y = M.make_data(64, noise=0.3)
  contexts = []

  def input_fn(params, input_context):
    contexts.append((input_context.num_input_pipelines,
                     input_context.input_pipeline_id,
                     input_context.num_replicas_in_sync))
    per_replica = input_context.get_per_replica_batch_size(
        params['batch_size'])
    ds = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
    ds = ds.shard(input_context.num_input_pipelines,
                  input_context.input_pipeline_id)
    return M.no_autotune(ds.repeat().batch(per_replica))

  reference = _train_reference(str(tmp_path / 'ref'), optimizer, lr,
                               M.global_input_fn(x, y, batch_size=16), 25)
  est = ert.Estimator(M.make_model_fn(optimizer=optimizer, lr=lr),
                      model_dir=str(tmp_path / 'ctx'),
                      params={'batch_size': 16},
                      config=M.quiet_config(train_distribute='mirrored'))
  est.train(input_fn, max_steps=25)
  assert set(contexts) == {(1, 0, 2)}
  ckpt = est.latest_checkpoint()
  assert M.read_global_step(ckpt) == 25
  _assert_same_weights(ckpt, reference)


@pytest.mark.parametrize('num_examples', [11, 9], ids=[
    'last_batch_of_3_split_2_1', 'last_batch_of_1_leaves_a_replica_empty'])
def test_partial_last_batch_matches_one_replica(tmp_path, num_examples):
  """A finite dataset in global batches of 4 over 2 replicas. 11 examples
  end with a batch of 3, split 2/1; 9 end with a batch of 1, so one replica
  gets an empty batch. Training must end at step 3 without NaN, and the
  update must still be the mean over the last batch's examples, with the
  same weights as on one replica."""
  x, y = M.make_data(num_examples, noise=0.3)
  input_fn = M.global_input_fn(x, y, batch_size=4, repeat=False)
  reference = _train_reference(str(tmp_path / 'ref'), 'sgd', 0.1, input_fn,
                               100)
  est = ert.Estimator(M.make_model_fn(optimizer='sgd', lr=0.1),
                      model_dir=str(tmp_path / 'mirrored'),
                      config=M.quiet_config(train_distribute='mirrored'))
  est.train(input_fn, max_steps=100)
  assert M.read_global_step(est.latest_checkpoint()) == 3
  _assert_same_weights(est.latest_checkpoint(), reference)


def test_unknown_strategy_name_is_a_user_input_error(tmp_path):
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config(train_distribute='tpu_pod'))
  x, y = M.make_data(8)
  with pytest.raises(ert.UserInputError, match='tpu_pod'):
    est.train(M.global_input_fn(x, y, batch_size=4), max_steps=2)


def _context_input_fn(x, y=None, *, per_replica_batch, repeat):
  def input_fn(input_context):
    elements = {'x': x} if y is None else ({'x': x}, y)
    ds = tf.data.Dataset.from_tensor_slices(elements)
    ds = ds.shard(input_context.num_input_pipelines,
                  input_context.input_pipeline_id)
    if repeat:
      ds = ds.repeat()
    return M.no_autotune(ds.batch(per_replica_batch))
  return input_fn


def test_evaluate_and_predict_with_input_context_under_mirrored(tmp_path):
  """11 examples in per-replica batches of 4: the second step has one batch
  (3 examples) for replica 0 and nothing for replica 1."""
  x, y = M.make_data(64)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config(train_distribute='mirrored'))
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=10)
  ex, ey = M.make_data(11, seed=4)
  expected = M.np_forward(M.read_model_variables(est.latest_checkpoint()), ex)
  result = est.evaluate(_context_input_fn(ex, ey, per_replica_batch=4,
                                          repeat=False))
  assert result['loss'] == pytest.approx(np.mean((expected - ey) ** 2),
                                         rel=1e-5)
  assert result['mae'] == pytest.approx(np.mean(np.abs(expected - ey)),
                                        rel=1e-5)
  predictions = list(est.predict(_context_input_fn(ex, per_replica_batch=4,
                                                   repeat=False)))
  np.testing.assert_allclose(np.stack([p['y'] for p in predictions]),
                             expected, rtol=1e-5, atol=1e-5)


def test_finite_input_context_dataset_ends_training_under_mirrored(tmp_path):
  ex, ey = M.make_data(11, seed=4)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config(train_distribute='mirrored'))
  est.train(_context_input_fn(ex, ey, per_replica_batch=4, repeat=False),
            max_steps=100)
  assert M.checkpoint_steps(str(tmp_path)) == [0, 2]
