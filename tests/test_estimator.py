"""Estimator.evaluate / predict and the summaries train and evaluate write,
checked against NumPy recomputations from the checkpoint's weights."""

import collections
import itertools
import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.core import summaries
import _models as M


def _trained(tmp_path, strategy='default', steps=20, **config):
  x, y = M.make_data(64)
  est = ert.Estimator(M.make_model_fn(optimizer='adam', lr=0.02),
                      model_dir=str(tmp_path),
                      config=M.quiet_config(train_distribute=strategy,
                                            **config))
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=steps)
  return est


def _numpy_metrics(est, x, y, checkpoint=None):
  weights = M.read_model_variables(checkpoint or est.latest_checkpoint())
  out = M.np_forward(weights, x)
  return {'loss': np.mean((out - y) ** 2), 'mae': np.mean(np.abs(out - y)),
          'mean_prediction': np.mean(out)}


# -------------------------------------------------------------- evaluate
@pytest.mark.parametrize('strategy', ['default', 'mirrored'])
@pytest.mark.parametrize('n', [9, 11, 16])
def test_evaluate_weights_loss_by_examples_with_partial_batches(tmp_path,
                                                                strategy, n):
  """Batches of 4: 9 examples end with a batch of 1 (one replica of two gets
  nothing), 11 with a batch of 3 (split 2/1). The loss must be the mean
  over examples, not over batches or replicas."""
  est = _trained(tmp_path, strategy)
  ex, ey = M.make_data(n, seed=5)
  result = est.evaluate(M.global_input_fn(ex, ey, batch_size=4, repeat=False))
  expected = _numpy_metrics(est, ex, ey)
  assert result['global_step'] == 20
  for key, value in expected.items():
    assert result[key] == pytest.approx(value, rel=1e-5), key


@pytest.mark.parametrize('strategy', ['default', 'mirrored'])
def test_evaluate_twice_gives_identical_results(tmp_path, strategy):
  est = _trained(tmp_path, strategy)
  ex, ey = M.make_data(20, seed=2)
  eval_fn = M.global_input_fn(ex, ey, batch_size=8, repeat=False)
  first = est.evaluate(eval_fn)
  second = est.evaluate(eval_fn)
  assert first == second
  # Metrics are reset, not accumulated: both equal the one-pass values.
  expected = _numpy_metrics(est, ex, ey)
  assert first['mae'] == pytest.approx(expected['mae'], rel=1e-5)
  # A different checkpoint in between gives its own results, then the
  # latest again gives the first ones.
  older = est.evaluate(eval_fn, checkpoint_path=M.ckpt_path(tmp_path, 10))
  assert older['global_step'] == 10
  assert older['loss'] != first['loss']
  assert older['loss'] == pytest.approx(
      _numpy_metrics(est, ex, ey, M.ckpt_path(tmp_path, 10))['loss'],
      rel=1e-5)
  assert est.evaluate(eval_fn) == first


def test_evaluate_steps_limits_the_batches(tmp_path):
  est = _trained(tmp_path)
  ex, ey = M.make_data(40, seed=3)
  # A fraction of a step counts as one, as in tf.estimator 2.15.
  result = est.evaluate(M.global_input_fn(ex, ey, batch_size=4), steps=2.5)
  expected = _numpy_metrics(est, ex[:12], ey[:12])
  assert result['loss'] == pytest.approx(expected['loss'], rel=1e-5)
  assert result['mae'] == pytest.approx(expected['mae'], rel=1e-5)


def test_evaluate_with_value_update_op_pair_metric(tmp_path):
  """A `(value, update_op)` metric built on the model_fn's own variables
  counts examples across every evaluation batch, and starts from 0 in
  each evaluation."""
  weights = M.initial_weights()

  def model_fn(features, labels, mode):
    out = M.build_keras_model(weights)(features['x'])
    loss = tf.reduce_mean(tf.square(out - labels))
    if mode == ert.ModeKeys.EVAL:
      seen = tf.Variable(0.0, trainable=False, name='seen')
      update = seen.assign_add(tf.cast(tf.shape(out)[0], tf.float32))
      return ert.EstimatorSpec(mode, loss=loss,
                               eval_metric_ops={'seen': (seen, update)})
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=keras.optimizers.SGD(0.05))

  x, y = M.make_data(32)
  est = ert.Estimator(model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config())
  est.train(M.global_input_fn(x, y, batch_size=8), max_steps=10)
  eval_fn = M.global_input_fn(x[:10], y[:10], batch_size=4, repeat=False)
  assert est.evaluate(eval_fn)['seen'] == 10.0
  assert est.evaluate(eval_fn)['seen'] == 10.0


def test_evaluate_forever_repeating_input_without_steps(tmp_path):
  est = _trained(tmp_path)
  ex, ey = M.make_data(8)
  with pytest.raises(ert.UserInputError, match='steps'):
    est.evaluate(M.global_input_fn(ex, ey, batch_size=4))  # repeat()s.
  assert not (tmp_path / 'eval').exists()


def test_evaluate_and_predict_without_a_checkpoint_run_the_initialization(
    tmp_path):
  # As tf.estimator 2.15: the initial weights, at global step 0.
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'empty'),
                      config=M.quiet_config())
  ex, ey = M.make_data(8)
  expected = M.np_forward(M.initial_weights(0), ex)
  results = est.evaluate(M.global_input_fn(ex, ey, batch_size=4,
                                           repeat=False))
  assert results['global_step'] == 0
  np.testing.assert_allclose(results['loss'], np.mean((expected - ey)**2),
                             rtol=1e-5)
  predicted = [p['y'] for p in est.predict(
      M.global_input_fn(ex, batch_size=4, repeat=False))]
  np.testing.assert_allclose(np.stack(predicted), expected, rtol=1e-5)
  assert not M.checkpoint_steps(str(tmp_path / 'empty'))
  with pytest.raises(ert.UserInputError):
    est.evaluate(M.global_input_fn(ex, ey, batch_size=4, repeat=False),
                 checkpoint_path=str(tmp_path / 'nope' / 'model.ckpt-3'))


def test_evaluate_without_a_checkpoint_warm_starts(tmp_path):
  trained = _trained(tmp_path / 'trained')
  ex, ey = M.make_data(8)
  eval_fn = M.global_input_fn(ex, ey, batch_size=4, repeat=False)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'empty'),
                      config=M.quiet_config(),
                      warm_start_from=trained.model_dir)
  warm = est.evaluate(eval_fn)
  assert warm['global_step'] == 0  # The warm start's variables, not its step.
  assert warm['loss'] == pytest.approx(trained.evaluate(eval_fn)['loss'],
                                       rel=1e-5)
  # Exported with no checkpoint: warm_start_from's, as 2.15 exported it.
  export_dir = est.export_saved_model(
      str(tmp_path / 'export'), input_fn=M.global_input_fn(ex, batch_size=4))
  assert M.saved_model_global_step(export_dir) == 20


def test_estimator_arguments_are_checked(tmp_path):
  with pytest.raises(ert.UserInputError, match='different values'):
    ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'a'),
                  config=ert.RunConfig(model_dir=str(tmp_path / 'b')))
  with pytest.raises(ert.UserInputError, match='RunConfig'):
    ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                  config={'steps_per_loop': 5})
  # Any params, as 2.15 took them (it handed the model_fn `params or {}`).
  assert ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                       params=[1]).params == [1]
  with pytest.raises(ert.UserInputError, match='callable'):
    ert.Estimator('model_fn', model_dir=str(tmp_path))
  # model_dir given only in the config is used.
  est = ert.Estimator(M.make_model_fn(),
                      config=M.quiet_config(model_dir=str(tmp_path / 'c')))
  assert est.model_dir == str(tmp_path / 'c')


# --------------------------------------------------------------- predict
@pytest.mark.parametrize('strategy', ['default', 'mirrored'])
def test_predict_yields_every_example_in_order(tmp_path, strategy):
  est = _trained(tmp_path, strategy)
  px, py = M.make_data(11, seed=4)
  expected = M.np_forward(M.read_model_variables(est.latest_checkpoint()), px)
  # Labels in the input are ignored.
  single = list(est.predict(M.global_input_fn(px, py, batch_size=4,
                                              repeat=False)))
  assert len(single) == 11
  assert all(set(p) == {'y', 'double'} for p in single)
  np.testing.assert_allclose(np.stack([p['y'] for p in single]), expected,
                             rtol=1e-5, atol=1e-5)
  batches = list(est.predict(M.global_input_fn(px, batch_size=4,
                                               repeat=False),
                             predict_keys=['double'],
                             yield_single_examples=False))
  assert [set(b) for b in batches] == [{'double'}] * 3
  assert [len(b['double']) for b in batches] == [4, 4, 3]
  np.testing.assert_allclose(np.concatenate([b['double'] for b in batches]),
                             2 * expected, rtol=1e-5, atol=1e-5)


def test_predict_unknown_key_and_repeating_input(tmp_path):
  est = _trained(tmp_path)
  px, _ = M.make_data(4)
  with pytest.raises(ert.UserInputError, match='nope'):
    list(est.predict(M.global_input_fn(px, batch_size=2, repeat=False),
                     predict_keys=['nope']))
  # A repeating input yields forever (as tf.estimator's predict did), unless
  # the caller asks for the refusal (the binary's predict mode does).
  assert len(list(itertools.islice(
      est.predict(M.global_input_fn(px, batch_size=2)), 10))) == 10
  with pytest.raises(ert.UserInputError, match='forever'):
    next(est.predict(M.global_input_fn(px, batch_size=2),
                     refuse_endless_input=True))


def test_predict_reads_its_input_once_as_2_15_did(tmp_path):
  """A predict input_fn reading a stream (a generator over requests, as a
  service's): its generator starts once per call and every request is
  answered once, in order, none read and dropped for the model's build."""
  est = _trained(tmp_path)
  px, _ = M.make_data(5, seed=6)
  requests = collections.deque(px)
  starts = []

  def stream():
    starts.append(1)
    while requests:
      yield {'x': requests.popleft()[np.newaxis]}

  def input_fn():
    return tf.data.Dataset.from_generator(stream, output_signature={
        'x': tf.TensorSpec([1, px.shape[1]], tf.float32)})

  answers = [p['y'] for p in est.predict(input_fn)]
  assert len(starts) == 1 and not requests
  np.testing.assert_allclose(
      np.stack(answers),
      M.np_forward(M.read_model_variables(est.latest_checkpoint()), px),
      rtol=1e-5, atol=1e-5)


def _aligned_copy(array: np.ndarray) -> np.ndarray:
  """`array` copied to memory that starts on a 64-byte boundary, where
  TensorFlow takes a NumPy array's buffer as it is rather than copying it
  (the generator's 8-row slices of the labels start on one every 2nd)."""
  raw = np.empty(array.nbytes + 64, np.uint8)
  start = -raw.ctypes.data % 64
  aligned = raw[start:start + array.nbytes].view(array.dtype)
  aligned = aligned.reshape(array.shape)
  aligned[...] = array
  return aligned


@pytest.mark.parametrize('replicas', [0, 1, 2])
def test_train_and_evaluate_read_a_stream_once_as_2_15_did(tmp_path,
                                                           replicas):
  """train and evaluate on a generator over a stream (shared state, as a
  queue or socket reader is): its generator starts once per call and every
  batch reaches the loop, the one read to build the model too. Training
  ends with the weights, and evaluation with the figures, of the same
  batches read from tensors (which are read on a separate pass). Under a
  strategy that splits the batches in this process (Mirrored on one and on
  two CPU devices) as under the default one (`replicas` 0): the strategy's
  loop used to make its own iterator, and lost the batch read for the
  build and what was prefetched after it (3 of the 6 steps). The arrays the
  generator slices are the program's and stay as they were: two replicas
  used to write into the labels' rows of each replica-0 share whose slice
  TensorFlow did not copy, and every later run on them went wrong."""
  # Two replicas by name: the process's one two-device Mirrored strategy
  # (a second one would share its collective keys, see strategies.py).
  strategy = {0: 'default', 1: tf.distribute.MirroredStrategy(['/cpu:0']),
              2: 'mirrored'}[replicas]
  x, y = (_aligned_copy(a) for a in M.make_data(48, seed=3))
  x_before, y_before = x.copy(), y.copy()
  batches = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 48, 8)]
  starts = []

  def stream_input_fn():
    queue = collections.deque(batches)

    def stream():
      starts.append(1)
      while queue:
        features, labels = queue.popleft()
        yield {'x': features}, labels

    def input_fn():
      return tf.data.Dataset.from_generator(stream, output_signature=(
          {'x': tf.TensorSpec([None, x.shape[1]], tf.float32)},
          tf.TensorSpec([None, 1], tf.float32)))
    return input_fn, queue

  results = {}
  for kind in ('stream', 'tensors'):
    est = ert.Estimator(M.make_model_fn(optimizer='sgd', lr=0.1),
                        model_dir=str(tmp_path / kind),
                        config=M.quiet_config(engine='eager',
                                              train_distribute=strategy,
                                              eval_distribute=strategy))
    if kind == 'stream':
      train_fn, train_queue = stream_input_fn()
      eval_fn, eval_queue = stream_input_fn()
    else:
      train_fn = eval_fn = M.global_input_fn(x, y, batch_size=8,
                                             repeat=False)
    est.train(train_fn)
    metrics = est.evaluate(eval_fn)
    results[kind] = (M.read_model_variables(est.latest_checkpoint()),
                     metrics)
  assert len(starts) == 2 and not train_queue and not eval_queue
  np.testing.assert_array_equal(x, x_before)
  np.testing.assert_array_equal(y, y_before)
  (stream_weights, stream_metrics), (weights, metrics) = (
      results['stream'], results['tensors'])
  assert stream_metrics['global_step'] == metrics['global_step'] == 6
  for got, want in zip(stream_weights, weights):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
  for key in ('loss', 'mae', 'mean_prediction'):
    np.testing.assert_allclose(stream_metrics[key], metrics[key], rtol=1e-6)


def test_an_input_fn_taking_input_context_is_called_once_per_call(tmp_path):
  """Under the default strategy an input_fn that declares input_context (as
  the ready-made input_fns do) is called once per train, evaluate and
  predict, with the one input pipeline's context, as one without is."""
  x, y = M.make_data(64)
  contexts = []

  def input_fn(params, input_context=None):
    del params
    contexts.append((input_context.num_input_pipelines,
                     input_context.input_pipeline_id,
                     input_context.num_replicas_in_sync))
    return M.global_input_fn(x, y, batch_size=16, repeat=False)()

  # The eager engine's calls alone (no graph build deciding the engine).
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config(engine='eager'))
  est.train(input_fn, steps=3)
  est.evaluate(input_fn, steps=1)
  predictions = list(est.predict(input_fn))
  assert contexts == [(1, 0, 1)] * 3
  assert len(predictions) == 64


# ------------------------------------------------------------- summaries
def test_train_summaries_at_the_first_step_then_every_n(tmp_path):
  """As tf.estimator 2.15's hooks wrote them: the loss at each train()
  call's first step, then every save_summary_steps; global_step/sec every
  log_step_count_steps after the first step."""
  est = _trained(tmp_path, steps=50, save_summary_steps=10, steps_per_loop=7,
                 save_checkpoints_steps=25, log_step_count_steps=20)
  scalars = summaries.read_scalars(str(tmp_path))
  assert [s for s, _ in scalars['loss']] == [1, 11, 21, 31, 41]
  assert [s for s, _ in scalars['global_step/sec']] == [21, 41]
  assert all(v > 0 and np.isfinite(v) for _, v in scalars['global_step/sec'])
  losses = [v for _, v in scalars['loss']]
  assert all(np.isfinite(losses)) and losses[-1] < losses[0]
  # A resumed run appends to the same tags, from its own first step.
  x, y = M.make_data(64)
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=70)
  steps = [s for s, _ in summaries.read_scalars(str(tmp_path))['loss']]
  assert steps == [1, 11, 21, 31, 41, 51, 61]


def test_no_train_summaries_when_disabled(tmp_path):
  _trained(tmp_path, save_summary_steps=0)
  assert 'loss' not in summaries.read_scalars(str(tmp_path))


def test_eval_summaries_in_eval_and_eval_name(tmp_path):
  est = _trained(tmp_path)
  ex, ey = M.make_data(16, seed=7)
  eval_fn = M.global_input_fn(ex, ey, batch_size=8, repeat=False)
  plain = est.evaluate(eval_fn)
  named = est.evaluate(eval_fn, checkpoint_path=M.ckpt_path(tmp_path, 10),
                       name='holdout')
  written = summaries.read_scalars(str(tmp_path / 'eval'))
  assert set(written) == {'loss', 'mae', 'mean_prediction'}
  for tag in written:
    assert written[tag] == [(20, pytest.approx(plain[tag], rel=1e-6))], tag
  written_named = summaries.read_scalars(str(tmp_path / 'eval_holdout'))
  assert written_named['loss'] == [(10, pytest.approx(named['loss'],
                                                      rel=1e-6))]


# ------------------------------------------------------------------ seeds
def _keras_initialized_model_fn(features, labels, mode):
  out = keras.Sequential([keras.layers.Dense(8, activation='tanh'),
                          keras.layers.Dense(1)])(features['x'])
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions=out)
  loss = tf.reduce_mean(tf.square(out - labels))
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=keras.optimizers.SGD(0.05))


def test_tf_random_seed_makes_runs_repeatable(tmp_path):
  x, y = M.make_data(64)
  weights = {}
  # -1: any int64, as 2.15 took it (the eager engine seeds NumPy with it
  # modulo 2**32).
  for name, seed, strategy in (('a', 7, 'default'), ('b', 7, 'default'),
                               ('c', 8, 'default'), ('m', 7, 'mirrored'),
                               ('n', -1, 'default')):
    est = ert.Estimator(_keras_initialized_model_fn,
                        model_dir=str(tmp_path / name),
                        config=M.quiet_config(tf_random_seed=seed,
                                              train_distribute=strategy))
    est.train(M.global_input_fn(x, y, batch_size=16), max_steps=10)
    weights[name] = M.read_model_variables(est.latest_checkpoint())
  for a, b in zip(weights['a'], weights['b']):
    np.testing.assert_array_equal(a, b)
  assert not np.allclose(weights['a'][0], weights['c'][0])
  assert not np.allclose(weights['a'][0], weights['n'][0])
  for a, m in zip(weights['a'], weights['m']):
    np.testing.assert_allclose(a, m, atol=1e-5)


def test_an_optimizer_made_in_every_mode_is_not_part_of_the_model(tmp_path):
  """tf.estimator users made the optimizer at the top of the model_fn. A
  Keras 3 optimizer creates variables when constructed: in EVAL and
  PREDICT, where the spec does not name it, they must still not be taken
  for model variables (the checkpoint has no such model variable)."""
  x, y = M.make_data(32)

  def model_fn(features, labels, mode):
    optimizer = keras.optimizers.Adam(0.01)  # Made whatever the mode.
    out = keras.layers.Dense(1, kernel_initializer='ones')(features['x'])
    if mode == ert.ModeKeys.PREDICT:
      return ert.EstimatorSpec(mode, predictions={'y': out})
    loss = tf.reduce_mean(tf.square(out - labels))
    return ert.EstimatorSpec(mode, loss=loss, optimizer=optimizer)

  est = ert.Estimator(model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config())
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=3)
  kernel = tf.train.load_checkpoint(est.latest_checkpoint()).get_tensor(
      'model/0/.ATTRIBUTES/VARIABLE_VALUE')
  assert not np.allclose(kernel, 1.0)  # Trained.
  result = est.evaluate(M.global_input_fn(x, y, batch_size=16, repeat=False))
  expected = x @ kernel + tf.train.load_checkpoint(
      est.latest_checkpoint()).get_tensor('model/1/.ATTRIBUTES/VARIABLE_VALUE')
  assert result['loss'] == pytest.approx(np.mean((expected - y) ** 2),
                                         rel=1e-5)
  predictions = [p['y'] for p in est.predict(
      M.global_input_fn(x, batch_size=16, repeat=False))]
  np.testing.assert_allclose(np.array(predictions), expected, rtol=1e-5,
                             atol=1e-5)
