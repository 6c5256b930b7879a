"""The user's contract (DESIGN.md): model_fn and input_fn as users write them.

Checks that a model_fn called several times shares one variable set, that
the ways of training (optimizer or train_op) train what they should, that
input_fns with and without `input_context` get what they are promised, and
that mistakes in user code surface as one error naming the function and
the field.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.training.eager import variable_store
import _models as M


def _nothing_written(model_dir):
  return not model_dir.exists() or not list(model_dir.iterdir())


def _train_eval_input(n=32, batch_size=8, seed=0):
  x, y = M.make_data(n, seed=seed)
  return (x, y, M.global_input_fn(x, y, batch_size=batch_size),
          M.global_input_fn(x, y, batch_size=batch_size, repeat=False))


# ---------------------------------------------------------- variable sharing
def test_keras_model_rebuilt_on_every_call_shares_one_variable_set(tmp_path):
  calls = []
  x, y, train_fn, eval_fn = _train_eval_input()
  est = ert.Estimator(M.make_model_fn(calls=calls), model_dir=str(tmp_path),
                      config=M.quiet_config())
  est.train(train_fn, max_steps=20)

  train_calls = [c for c in calls if c[0] == ert.ModeKeys.TRAIN]
  assert len(train_calls) >= 2, calls  # The build call and the traced step.
  ckpt = est.latest_checkpoint()
  weights = M.read_model_variables(ckpt)
  # One variable set, however many Sequentials the model_fn built.
  assert [w.shape for w in weights] == [(4, 8), (8,), (8, 1), (1,)]
  assert not np.allclose(weights[0], M.initial_weights()[0])  # It trained.

  # EVAL and PREDICT rebuild the model again, and see the trained values.
  result = est.evaluate(eval_fn)
  expected = M.np_forward(weights, x)
  assert result['loss'] == pytest.approx(np.mean((expected - y) ** 2),
                                         rel=1e-5)
  predictions = np.array([p['y'] for p in est.predict(
      M.global_input_fn(x, batch_size=8, repeat=False))])
  np.testing.assert_allclose(predictions, expected, rtol=1e-5, atol=1e-6)
  assert {c[0] for c in calls} == set(ert.ModeKeys.ALL)


def test_plain_tf_variable_model_trains(tmp_path):
  def model_fn(features, labels, mode, params):
    w = tf.Variable(tf.zeros([M.NUM_FEATURES, 1]), name='w')
    b = tf.Variable(0.0, name='b')
    out = tf.matmul(features['x'], w) + b
    if mode == ert.ModeKeys.PREDICT:
      return ert.EstimatorSpec(mode, predictions=out)
    loss = tf.reduce_mean(tf.square(out - labels))
    return ert.EstimatorSpec(
        mode, loss=loss, optimizer=keras.optimizers.SGD(params['lr']))

  x, y, train_fn, _ = _train_eval_input(n=64, batch_size=64)
  est = ert.Estimator(model_fn, model_dir=str(tmp_path), params={'lr': 0.2},
                      config=M.quiet_config(save_checkpoints_steps=100))
  est.train(train_fn, max_steps=100)
  w, b = M.read_model_variables(est.latest_checkpoint())
  np.testing.assert_allclose(w, M.TRUE_W, atol=1e-3)
  assert float(b) == pytest.approx(0.5, abs=1e-3)
  predictions = np.array(list(est.predict(
      M.global_input_fn(x[:5], batch_size=2, repeat=False))))
  np.testing.assert_allclose(predictions, x[:5] @ w + b, rtol=1e-5, atol=1e-5)


def test_model_fn_declaring_config_receives_the_run_config(tmp_path):
  seen = []
  inner = M.make_model_fn()

  def model_fn(features, labels, mode, config):
    seen.append(config)
    return inner(features, labels, mode)

  _, _, train_fn, eval_fn = _train_eval_input()
  est = ert.Estimator(model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config(steps_per_loop=5))
  est.train(train_fn, max_steps=5)
  est.evaluate(eval_fn)
  assert seen and all(isinstance(c, ert.RunConfig) for c in seen)
  assert {c.model_dir for c in seen} == {str(tmp_path)}
  assert {c.steps_per_loop for c in seen} == {5}


def test_model_fn_declaring_only_features_labels_mode_works(tmp_path):
  inner = M.make_model_fn()

  def model_fn(features, labels, mode):  # No params, no config.
    return inner(features, labels, mode)

  _, _, train_fn, eval_fn = _train_eval_input()
  # Params it does not take are refused, as tf.estimator 2.15 refused them.
  with pytest.raises(ValueError, match='does not include params argument'):
    ert.Estimator(model_fn, model_dir=str(tmp_path), params={'unused': 1})
  est = ert.Estimator(model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config())
  est.train(train_fn, max_steps=10)
  assert est.evaluate(eval_fn)['global_step'] == 10


def test_model_fn_building_every_field_unconditionally(tmp_path):
  """EstimatorSpec docs: one model_fn may build every field in every mode
  (metrics before the model, an optimizer in EVAL and PREDICT too)."""
  weights = M.initial_weights()

  def model_fn(features, labels, mode):
    mae = keras.metrics.MeanAbsoluteError()
    out = M.build_keras_model(weights)(features['x'])
    optimizer = keras.optimizers.Adam(0.01)
    loss = None
    if labels is not None:
      loss = tf.reduce_mean(tf.square(out - labels))
      mae.update_state(labels, out)
    return ert.EstimatorSpec(mode, predictions={'y': out}, loss=loss,
                             optimizer=optimizer,
                             eval_metric_ops={'mae': mae})

  x, y, train_fn, eval_fn = _train_eval_input()
  est = ert.Estimator(model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config())
  est.train(train_fn, max_steps=10)
  trained = M.read_model_variables(est.latest_checkpoint())
  assert [w.shape for w in trained] == [(4, 8), (8,), (8, 1), (1,)]
  expected = M.np_forward(trained, x)
  result = est.evaluate(eval_fn)
  assert result['mae'] == pytest.approx(np.mean(np.abs(expected - y)),
                                        rel=1e-5)
  predictions = np.array([p['y'] for p in est.predict(
      M.global_input_fn(x, batch_size=8, repeat=False))])
  np.testing.assert_allclose(predictions, expected, rtol=1e-5, atol=1e-6)


def test_model_fn_creating_a_different_variable_later_fails(tmp_path):
  counter = [0]

  def model_fn(features, labels, mode):
    counter[0] += 1
    units = 1 if counter[0] == 1 else 2  # The 2nd call builds Dense(2).
    out = keras.layers.Dense(units)(features['x'])[:, :1]
    loss = tf.reduce_mean(tf.square(out - labels))
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=keras.optimizers.SGD(0.1))

  _, _, train_fn, _ = _train_eval_input()
  # The eager engine's calls, counted from its build call (on a fresh
  # model_dir the graph engine's build would otherwise come first).
  est = ert.Estimator(model_fn, model_dir=str(tmp_path / 'model'),
                      config=M.quiet_config(engine='eager'))
  with pytest.raises(ert.ModelFnError) as info:
    est.train(train_fn, max_steps=10)
  message = str(info.value)
  assert counter[0] >= 2
  assert 'kernel' in message, message
  assert '(4, 2)' in message and '(4, 1)' in message, message
  assert 'model_fn' in message and 'variable #0' in message, message
  assert _nothing_written(tmp_path / 'model')


def test_model_fn_creating_more_variables_later_fails(tmp_path):
  counter = [0]

  def model_fn(features, labels, mode):
    counter[0] += 1
    out = keras.layers.Dense(1)(features['x'])
    if counter[0] > 1:
      out = out + tf.Variable(0.0, name='late_bias')
    loss = tf.reduce_mean(tf.square(out - labels))
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=keras.optimizers.SGD(0.1))

  _, _, train_fn, _ = _train_eval_input()
  # The eager engine's calls, counted from its build call (on a fresh
  # model_dir the graph engine's build would otherwise come first).
  est = ert.Estimator(model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config(engine='eager'))
  with pytest.raises(ert.ModelFnError, match='late_bias'):
    est.train(train_fn, max_steps=10)
  assert M.checkpoint_steps(tmp_path) == []


def test_variable_store_names_the_first_mismatching_variable():
  """The check behind the contract, on variables whose shape is known from
  their initial value (what the reusing creator can see today)."""
  store = variable_store.VariableStore(owner='model_fn my_model_fn')
  with store.recording():
    tf.Variable(tf.zeros([4, 1]), name='w')
    tf.Variable(0.0, name='b')
  with store.reusing():
    w = tf.Variable(tf.ones([4, 1]), name='w')
    assert w is store.variables[0]
  with pytest.raises(ert.ModelFnError) as info:
    with store.reusing():
      tf.Variable(tf.zeros([4, 2]), name='w2')
  message = str(info.value)
  assert 'my_model_fn' in message and "'w2'" in message, message
  assert '(4, 2)' in message and '(4, 1)' in message, message
  with pytest.raises(ert.ModelFnError, match='more variables'):
    with store.reusing():
      tf.Variable(tf.zeros([4, 1]), name='w')
      tf.Variable(0.0, name='b')
      tf.Variable(0.0, name='extra')


def test_variable_store_knows_a_keras_3_variables_shape():
  """Keras 3 makes its tf.Variable from an initializer function; the
  reusing creator learns the shape Keras asked for all the same."""
  store = variable_store.VariableStore(owner='model_fn my_model_fn')
  with store.recording():
    keras.layers.Dense(3, name='dense').build((None, 4))
  with store.reusing():
    layer = keras.layers.Dense(3, name='dense')
    layer.build((None, 4))
    assert layer.kernel.value is store.variables[0]
  with pytest.raises(ert.ModelFnError) as info:
    with store.reusing():
      keras.layers.Dense(5, name='wider').build((None, 4))
  message = str(info.value)
  assert '(4, 5)' in message and '(4, 3)' in message, message


# ---------------------------------------------------------------- train_op
def _train_op_model_fn(optimizer_name, lr, *, optimizer_first=False):
  """A model_fn that differentiates and applies its own optimizer.

  `optimizer_first` creates the optimizer before the model's variables (as
  in `opt = ...; with tape: out = model(x)`), else after them.
  """
  weights = M.initial_weights()

  def model_fn(features, labels, mode):
    model = M.build_keras_model(weights)
    if mode != ert.ModeKeys.TRAIN:
      out = model(features['x'])
      if mode == ert.ModeKeys.PREDICT:
        return ert.EstimatorSpec(mode, predictions=out)
      return ert.EstimatorSpec(mode, loss=tf.reduce_mean(
          tf.square(out - labels)))
    if optimizer_first:
      optimizer = M.make_optimizer(optimizer_name, lr)
    with tf.GradientTape() as tape:
      out = model(features['x'])
      loss = tf.reduce_mean(tf.square(out - labels))
    grads = tape.gradient(loss, model.trainable_variables)
    if not optimizer_first:
      optimizer = M.make_optimizer(optimizer_name, lr)
    train_op = optimizer.apply_gradients(zip(grads,
                                             model.trainable_variables))
    return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)

  return model_fn


@pytest.mark.parametrize('optimizer_name,lr', [('sgd', 0.05), ('adam', 0.01)])
def test_train_op_path_trains_like_the_optimizer_path(tmp_path, optimizer_name,
                                                      lr):
  x, y, train_fn, eval_fn = _train_eval_input()
  ref = ert.Estimator(M.make_model_fn(optimizer=optimizer_name, lr=lr),
                      model_dir=str(tmp_path / 'ref'),
                      config=M.quiet_config())
  ref.train(train_fn, max_steps=30)
  est = ert.Estimator(_train_op_model_fn(optimizer_name, lr),
                      model_dir=str(tmp_path / 'op'), config=M.quiet_config())
  est.train(train_fn, max_steps=30)

  ckpt = est.latest_checkpoint()
  assert M.read_global_step(ckpt) == 30
  assert M.checkpoint_steps(est.model_dir) == [0, 10, 20, 30]
  variables = M.read_model_variables(ckpt)
  # The model_fn's own optimizer is model state here: its iteration
  # counter says how many updates ran. The build call's update was undone.
  iterations = [v for v in variables if v.dtype == np.int64 and v.ndim == 0]
  assert [int(v) for v in iterations] == [30]
  weights = variables[:4]  # Created first; then the optimizer's state.
  reference = M.read_model_variables(ref.latest_checkpoint())
  assert len(weights) == 4
  for got, want in zip(weights, reference):
    np.testing.assert_allclose(got, want, atol=1e-6)
  initial_loss = np.mean((M.np_forward(M.initial_weights(), x) - y) ** 2)
  assert est.evaluate(eval_fn)['loss'] < 0.5 * initial_loss


def test_train_op_with_optimizer_created_first_can_be_evaluated(tmp_path):
  x, y, train_fn, eval_fn = _train_eval_input()
  est = ert.Estimator(_train_op_model_fn('sgd', 0.05, optimizer_first=True),
                      model_dir=str(tmp_path), config=M.quiet_config())
  est.train(train_fn, max_steps=10)
  result = est.evaluate(eval_fn)
  assert result['global_step'] == 10
  assert np.isfinite(result['loss'])


def test_train_op_optimizer_state_is_not_taken_for_model_state(tmp_path):
  def model_fn(features, labels, mode):
    if mode == ert.ModeKeys.TRAIN:
      optimizer = keras.optimizers.SGD(0.05)
    scale = tf.Variable(3.0, trainable=False, name='scale')
    dense = keras.layers.Dense(1)
    with tf.GradientTape() as tape:
      out = dense(features['x']) * scale
      if mode == ert.ModeKeys.PREDICT:
        return ert.EstimatorSpec(mode, predictions=out)
      loss = tf.reduce_mean(tf.square(out - labels))
    if mode == ert.ModeKeys.EVAL:
      return ert.EstimatorSpec(mode, loss=loss)
    grads = tape.gradient(loss, dense.trainable_variables)
    return ert.EstimatorSpec(mode, loss=loss, train_op=optimizer.apply_gradients(
        zip(grads, dense.trainable_variables)))

  x, y, train_fn, _ = _train_eval_input()
  est = ert.Estimator(model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config())
  est.train(train_fn, max_steps=5)
  variables = M.read_model_variables(est.latest_checkpoint())
  kernel = [v for v in variables if v.shape == (4, 1)][0]
  bias = [v for v in variables if v.shape == (1,)][0]
  assert 3.0 in [float(v) for v in variables if v.shape == ()]
  predictions = np.stack(list(est.predict(
      M.global_input_fn(x[:5], batch_size=5, repeat=False))))
  np.testing.assert_allclose(predictions, (x[:5] @ kernel + bias) * 3.0,
                             rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ inputs
def test_input_fn_with_input_context_under_mirrored(tmp_path):
  contexts = []
  calls = []
  x, y = M.make_data(64)

  def input_fn(params, input_context):
    contexts.append(input_context)
    per_replica = input_context.get_per_replica_batch_size(
        params['batch_size'])
    ds = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
    ds = ds.shard(input_context.num_input_pipelines,
                  input_context.input_pipeline_id)
    return M.no_autotune(ds.repeat().batch(per_replica, drop_remainder=True))

  est = ert.Estimator(M.make_model_fn(calls=calls), model_dir=str(tmp_path),
                      params={'batch_size': 16},
                      config=M.quiet_config(train_distribute='mirrored'))
  est.train(input_fn, max_steps=10)
  assert contexts, 'input_fn was never called'
  assert all(c is not None for c in contexts)
  assert {c.num_replicas_in_sync for c in contexts} == {2}
  # The runtime trusts the input_fn's per-replica batching: every call of
  # the model_fn sees batches of 8 (16 / 2), never re-split to 4.
  train_shapes = {shape for mode, shape in calls
                  if mode == ert.ModeKeys.TRAIN}
  assert train_shapes == {(8, M.NUM_FEATURES)}, calls
  assert M.read_global_step(est.latest_checkpoint()) == 10


def test_input_fn_with_input_context_under_default_strategy(tmp_path):
  contexts = []
  x, y = M.make_data(32)

  def input_fn(input_context=None):
    contexts.append(input_context)
    return M.no_autotune(
        tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(8))

  # The eager engine's contract (on a fresh model_dir the graph engine's
  # build would come first, passing no context without a strategy, as
  # tf.estimator did).
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config(engine='eager'))
  est.train(input_fn, max_steps=10)
  assert contexts and all(c is not None for c in contexts)
  assert {c.num_replicas_in_sync for c in contexts} == {1}


def test_input_fn_without_context_is_split_across_replicas(tmp_path):
  calls = []
  params_seen = []
  x, y = M.make_data(64)

  def input_fn(params):
    params_seen.append(params)
    return M.no_autotune(tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat(
    ).batch(params['batch_size'], drop_remainder=True))

  # The eager engine's contract (on a fresh model_dir the graph engine's
  # build would come first, each replica taking its own element, as
  # tf.estimator did).
  est = ert.Estimator(M.make_model_fn(calls=calls), model_dir=str(tmp_path),
                      params={'batch_size': 16},
                      config=M.quiet_config(train_distribute='mirrored',
                                            engine='eager'))
  est.train(input_fn, max_steps=10)
  assert params_seen and params_seen[0]['batch_size'] == 16
  traced = [shape for mode, shape in calls[1:] if mode == ert.ModeKeys.TRAIN]
  assert traced and all(s[0] in (8, None) for s in traced), calls


@pytest.mark.parametrize('bad', [
    lambda: None,
    lambda: 'a file name',
    lambda: {'x': object()},
], ids=['none', 'string', 'object'])
def test_input_fn_not_returning_a_dataset(tmp_path, bad):
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'm'),
                      config=M.quiet_config())
  with pytest.raises(ert.InputFnError, match='tf.data.Dataset'):
    est.train(bad, max_steps=5)
  assert _nothing_written(tmp_path / 'm')


@pytest.mark.parametrize('constants', [
    lambda: [1.0, 2.0],
    lambda: np.zeros([4, 2], np.float32),
], ids=['list', 'ndarray'])
def test_input_fn_returning_constants_is_read_as_tf_estimator_did(
    tmp_path, constants):
  """tf.estimator passed NumPy arrays and Python values an input_fn
  returned to the model_fn (a len-2 list or tuple is (features, labels));
  a model_fn that indexes features by key then fails, in one ModelFnError,
  and nothing is written."""
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'm'),
                      config=M.quiet_config())
  # The value itself, not a tensor of it: indexing it by 'x' fails as
  # Python (or NumPy) fails, in its words (first, as 2.15 let them through).
  with pytest.raises(ert.ModelFnError,
                     match="(subscriptable|indices).*failed in mode 'train'"):
    est.train(constants, max_steps=5)
  assert _nothing_written(tmp_path / 'm')


def test_empty_input_fn_is_an_input_fn_error(tmp_path):
  x, y = M.make_data(4)

  def empty_input_fn():
    return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).take(0).batch(2)

  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config())
  with pytest.raises(ert.InputFnError, match='empty'):
    est.train(empty_input_fn, max_steps=5)


# ---------------------------------------------------- EstimatorSpec checks
def test_spec_train_without_loss():
  with pytest.raises(ert.ModelFnError, match='`loss` is required'):
    ert.EstimatorSpec(ert.ModeKeys.TRAIN, optimizer=keras.optimizers.SGD())


def test_spec_train_with_both_optimizer_and_train_op():
  with pytest.raises(ert.ModelFnError, match='not both'):
    ert.EstimatorSpec(ert.ModeKeys.TRAIN, loss=tf.constant(1.0),
                      optimizer=keras.optimizers.SGD(),
                      train_op=tf.constant(0))


def test_spec_train_with_neither_optimizer_nor_train_op():
  with pytest.raises(ert.ModelFnError, match='optimizer'):
    ert.EstimatorSpec(ert.ModeKeys.TRAIN, loss=tf.constant(1.0))


def test_spec_non_scalar_loss_names_its_shape():
  with pytest.raises(ert.ModelFnError, match=r'\(8, 1\)'):
    ert.EstimatorSpec(ert.ModeKeys.EVAL, loss=tf.zeros([8, 1]))


def test_spec_predict_without_predictions():
  with pytest.raises(ert.ModelFnError, match='predictions'):
    ert.EstimatorSpec(ert.ModeKeys.PREDICT, loss=tf.constant(1.0))


def test_spec_bad_metric_and_bad_mode():
  with pytest.raises(ert.ModelFnError, match="'acc'"):
    ert.EstimatorSpec(ert.ModeKeys.EVAL, loss=tf.constant(1.0),
                      eval_metric_ops={'acc': 0.5})



def test_a_spec_of_another_mode_is_refused_when_the_model_fn_returns_it(
    tmp_path):
  """EstimatorSpec takes any mode, as 2.15's did (its tests build
  EstimatorSpec(None) as a stand-in); the engine the model_fn returns it to
  refuses one that is not the mode it was called in, naming both."""
  assert ert.EstimatorSpec('training', loss=tf.constant(1.0)).mode == (
      'training')

  def model_fn(features, labels, mode):
    del mode  # The mistake: a mode of the user's own.
    out = keras.layers.Dense(1)(features['x'])
    return ert.EstimatorSpec('training', loss=tf.reduce_mean(out - labels),
                             optimizer=keras.optimizers.SGD(0.1))

  _, _, train_fn, _ = _train_eval_input()
  est = ert.Estimator(model_fn, model_dir=str(tmp_path / 'm'),
                      config=M.quiet_config())
  with pytest.raises(ert.ModelFnError, match="'training'.*'train'|'train'.*'training'"):
    est.train(train_fn, max_steps=5)
  assert not (tmp_path / 'm').exists()


def test_bad_spec_from_model_fn_fails_train_and_writes_nothing(tmp_path):
  def model_fn(features, labels, mode):
    out = keras.layers.Dense(1)(features['x'])
    # Forgot to reduce: a per-example loss.
    return ert.EstimatorSpec(mode, loss=tf.square(out - labels),
                             optimizer=keras.optimizers.SGD(0.1))

  _, _, train_fn, _ = _train_eval_input()
  model_dir = tmp_path / 'm'
  est = ert.Estimator(model_fn, model_dir=str(model_dir),
                      config=M.quiet_config())
  with pytest.raises(ert.ModelFnError, match=r'scalar.*\(8, 1\)'):
    est.train(train_fn, max_steps=5)
  assert _nothing_written(model_dir)


def test_model_fn_returning_a_dict_is_a_model_fn_error(tmp_path):
  def model_fn(features, labels, mode):
    del labels, mode
    return {'loss': tf.reduce_mean(features['x'])}

  _, _, train_fn, _ = _train_eval_input()
  est = ert.Estimator(model_fn, model_dir=str(tmp_path),
                      config=M.quiet_config())
  with pytest.raises(ert.ModelFnError, match='EstimatorSpec'):
    est.train(train_fn, max_steps=5)


def test_label_logit_shape_mismatch_names_model_fn_and_shapes(tmp_path):
  def mismatched_model_fn(features, labels, mode):
    logits = keras.layers.Dense(2)(features['x'])
    loss = tf.reduce_mean(tf.square(logits - labels))  # (8, 2) vs (8, 3)
    return ert.EstimatorSpec(mode, loss=loss,
                             optimizer=keras.optimizers.SGD(0.1))

  x, _ = M.make_data(16)
  y3 = np.zeros([16, 3], np.float32)
  est = ert.Estimator(mismatched_model_fn, model_dir=str(tmp_path / 'm'),
                      config=M.quiet_config())
  with pytest.raises(ert.ModelFnError) as info:
    est.train(M.global_input_fn(x, y3, batch_size=8), max_steps=5)
  message = str(info.value)
  assert 'mismatched_model_fn' in message, message
  assert '(8, 4)' in message and '(8, 3)' in message, message
  assert _nothing_written(tmp_path / 'm')


def test_model_fn_without_features_argument_is_refused():
  def model_fn(inputs, labels, mode):
    del inputs, labels, mode

  with pytest.raises(ert.UserInputError, match='features'):
    ert.Estimator(model_fn)
