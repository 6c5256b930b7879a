"""What a call keeps for the next call of the same Estimator (issue 47):
the graph engine's graphs and open sessions (training/graph/
kept_sessions.py), the eager engine's models and compiled functions.

Every call gives what a new graph and session gave, as tf.estimator 2.15
made them: each program here runs its calls twice, once keeping
(the default) and once with ESTIMATOR_RT_KEPT_SESSIONS_MB=0 (every call
builds and restores afresh), and the numbers, the model_fn's calls and the
hooks' calls must be the same; keeping must also open fewer sessions.
"""

import collections

import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert

tf1 = tf.compat.v1
X = np.linspace(-1, 1, 64, dtype=np.float32).reshape(-1, 4)
Y = (X.sum(axis=1, keepdims=True) > 0).astype(np.float32)


def _input_fn():
  return tf.data.Dataset.from_tensor_slices(({'x': X}, Y)).repeat().batch(8)


def _example(value):
  """A one-example input_fn, as a service predicts."""
  return lambda: tf.data.Dataset.from_tensor_slices(
      {'x': np.full([1, 4], value, np.float32)}).batch(1)


class _Counts:
  """Calls of the model_fn per mode, and of a SessionRunHook's methods."""

  def __init__(self):
    self.calls = collections.Counter()


def _tf1_model_fn(counts, *, dropout=None, change_at_train=None):
  """A TF1-style model_fn; its `change_at_train`-th TRAIN call builds
  another graph (one more op) of the same variables."""
  def model_fn(features, labels, mode):
    counts.calls[f'model_fn:{mode}'] += 1
    changed = (mode == ert.ModeKeys.TRAIN and
               counts.calls[f'model_fn:{mode}'] == change_at_train)
    hidden = tf1.layers.dense(features['x'], 8, activation=tf.nn.relu)
    if dropout and mode == ert.ModeKeys.TRAIN:
      hidden = tf1.nn.dropout(hidden, rate=dropout)
    logits = tf1.layers.dense(hidden, 1)
    if mode == ert.ModeKeys.PREDICT:
      return ert.EstimatorSpec(mode, predictions={'logits': logits})
    loss = tf1.losses.sigmoid_cross_entropy(labels, logits)
    if changed:
      loss = tf.identity(loss, name='changed')
    if mode == ert.ModeKeys.EVAL:
      return ert.EstimatorSpec(mode, loss=loss, eval_metric_ops={
          'mean_logit': tf1.metrics.mean(logits)})
    train_op = tf1.train.AdagradOptimizer(0.3).minimize(
        loss, global_step=tf1.train.get_global_step())
    return ert.EstimatorSpec(mode, loss=loss, train_op=train_op)
  return model_fn


class _CountingHook(tf1.train.SessionRunHook):

  def __init__(self, counts):
    self._counts = counts

  def begin(self):
    self._counts.calls['hook:begin'] += 1

  def after_create_session(self, session, coord):
    self._counts.calls['hook:after_create_session'] += 1

  def end(self, session):
    self._counts.calls['hook:end'] += 1


def _calls(estimator, counts):
  """Alternating calls, as programs and train_and_evaluate make them: what
  each returned."""
  out = []
  for round_ in range(3):
    estimator.train(_input_fn, steps=5)
    out.append(estimator.evaluate(_input_fn, steps=2,
                                  hooks=[_CountingHook(counts)]))
    out.append([next(estimator.predict(_example(v))) for v in (0.1, -0.4)])
    out.append(list(estimator.predict(_input_fn_of_x)))
    del round_
  return out


def _input_fn_of_x():
  return tf.data.Dataset.from_tensor_slices({'x': X[:3]}).batch(2)


def _sessions_made(monkeypatch):
  """Counts the sessions the graph engine opens from now on, restoring a
  checkpoint or initializing (not those that only read a new input)."""
  made = []
  create = tf1.train.ChiefSessionCreator.create_session

  def counting(self):
    made.append(1)
    return create(self)

  monkeypatch.setattr(tf1.train.ChiefSessionCreator, 'create_session',
                      counting)
  return made


def _run(make, tmp_path, monkeypatch, keep):
  monkeypatch.setenv('ESTIMATOR_RT_KEPT_SESSIONS_MB', '1024' if keep else '0')
  counts = _Counts()
  made = _sessions_made(monkeypatch)
  estimator = make(counts, str(tmp_path / ('kept' if keep else 'fresh')))
  out = _calls(estimator, counts)
  monkeypatch.undo()
  return out, counts.calls, len(made)


def _assert_same(kept, fresh):
  for a, b in zip(tf.nest.flatten(kept), tf.nest.flatten(fresh)):
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('program',
                         ['tf1', 'canned', 'tf1_dropout', 'tf1_changing'])
def test_a_kept_session_gives_what_a_new_one_gave(tmp_path, monkeypatch,
                                                  program):
  """The same numbers, model_fn calls (a TF1-style model_fn is called once
  per call, as by 2.15) and hook calls, in fewer sessions; a model whose
  seeded dropout runs each step is not kept (its kernel's random sequence
  would go on), and gives the same numbers too. A training graph built on
  the input as the input_fn made it (a kept graph reads that input
  rewritten), which is not the kept graph after all, trains on it alike."""
  config = ert.RunConfig(tf_random_seed=7)

  def make(counts, model_dir):
    if program == 'canned':
      return tf.estimator.DNNRegressor(
          hidden_units=[8], feature_columns=[
              tf.feature_column.numeric_column('x', shape=[4])],
          model_dir=model_dir, config=config)
    return ert.Estimator(
        _tf1_model_fn(counts, dropout=0.5 if program == 'tf1_dropout'
                      else None,
                      change_at_train=3 if program == 'tf1_changing'
                      else None), model_dir=model_dir, config=config)

  kept, kept_calls, kept_sessions = _run(make, tmp_path, monkeypatch, True)
  fresh, fresh_calls, fresh_sessions = _run(make, tmp_path, monkeypatch,
                                            False)
  _assert_same(kept, fresh)
  assert kept_calls == fresh_calls, (kept_calls, fresh_calls)
  assert kept_calls['hook:begin'] == kept_calls['hook:end'] == 3
  if program.startswith('tf1'):
    assert kept_calls['model_fn:train'] == 3  # Once per call.
    assert kept_calls['model_fn:infer'] == 9
  # 3 rounds of train, evaluate and 3 predicts: 15 sessions afresh; kept,
  # the first of each mode and the second train (the first, from no
  # checkpoint, is not kept), every train with a seeded dropout, and the
  # train that built another graph.
  assert fresh_sessions == 15
  assert kept_sessions == (5 if program in ('tf1_dropout', 'tf1_changing')
                           else 4), kept_sessions


def test_a_kept_session_restores_a_checkpoint_another_writer_saved(
    tmp_path, monkeypatch):
  """The newest checkpoint on disk is what a call restores, also when the
  kept session holds an older one (another Estimator trained since)."""
  monkeypatch.setenv('ESTIMATOR_RT_KEPT_SESSIONS_MB', '1024')
  model_dir = str(tmp_path / 'shared')
  config = ert.RunConfig(tf_random_seed=3)
  reader = ert.Estimator(_tf1_model_fn(_Counts()), model_dir=model_dir,
                         config=config)
  reader.train(_input_fn, steps=2)
  before = reader.evaluate(_input_fn, steps=1)
  again = reader.evaluate(_input_fn, steps=1)
  assert again['loss'] == before['loss']
  writer = ert.Estimator(_tf1_model_fn(_Counts()), model_dir=model_dir,
                         config=config)
  writer.train(_input_fn, steps=4)
  after = reader.evaluate(_input_fn, steps=1)
  assert after['global_step'] == 6
  expected = ert.Estimator(_tf1_model_fn(_Counts()), model_dir=model_dir,
                           config=config).evaluate(_input_fn, steps=1)
  assert after['loss'] == expected['loss'] != before['loss']


def _tf2_model_fn(features, labels, mode):
  layer = keras.layers.Dense(1)
  logits = layer(features['x'])
  if mode == ert.ModeKeys.PREDICT:
    return ert.EstimatorSpec(mode, predictions={'logits': logits})
  loss = tf.reduce_mean(keras.losses.binary_crossentropy(
      labels, logits, from_logits=True))
  if mode == ert.ModeKeys.EVAL:
    return ert.EstimatorSpec(mode, loss=loss)
  return ert.EstimatorSpec(mode, loss=loss,
                           optimizer=keras.optimizers.Adam(0.1))


def test_the_eager_engine_keeps_its_model_and_loop(tmp_path, monkeypatch):
  """A TF2 model_fn's training and prediction models and compiled
  functions are kept (as its evaluation's were): the same numbers as
  built afresh, the newest checkpoint restored when another writer
  saved one."""
  results = {}
  for keep in (True, False):
    monkeypatch.setenv('ESTIMATOR_RT_KEPT_SESSIONS_MB',
                       '1024' if keep else '0')
    model_dir = str(tmp_path / str(keep))
    estimator = ert.Estimator(_tf2_model_fn, model_dir=model_dir,
                              config=ert.RunConfig(tf_random_seed=5))
    out = []
    for _ in range(2):
      estimator.train(_input_fn, steps=3)
      out.append([next(estimator.predict(_example(v)))['logits']
                  for v in (0.2, -0.3)])
    ert.Estimator(_tf2_model_fn, model_dir=model_dir).train(_input_fn,
                                                            steps=2)
    estimator.train(_input_fn, steps=1)
    out.append(estimator.get_variable_value('global_step'))
    out.append(next(estimator.predict(_example(0.5)))['logits'])
    results[keep] = out
  _assert_same(results[True], results[False])
  assert results[True][2] == 9


@pytest.mark.parametrize('fails', [False, True])
def test_a_kept_session_whose_input_restart_failed_is_not_used(fails):
  """The input's restart runs after the call, on a thread of its own; the
  next call that takes the session waits for it, and gets no session (so
  builds a new one) if it failed; the failed session is closed."""
  from estimator_rt.training.graph import kept_sessions  # pylint: disable=g-import-not-at-top
  graph = tf.Graph()
  with graph.as_default():
    ran = tf1.get_variable('ran', initializer=0)
    value = tf1.placeholder_with_default(2 if fails else 1, [])
    initializer = tf.group(tf1.assert_equal(1, value),
                           tf1.assign_add(ran, 1))
    session = tf1.Session()
    session.run(ran.initializer)
  keeper = kept_sessions.Keeper(budget=1 << 20)
  keeper.keep(kept_sessions.Kept(
      mode='eval', input_key='in', model_key='model', graph=graph,
      session=session, parts=None, holds=None,
      restart=kept_sessions.InputRestart(session, initializer)))
  taken = keeper.take('eval', lambda kept: True)
  if fails:
    assert taken is None
    assert session._closed  # pylint: disable=protected-access
  else:
    assert taken is not None and taken.session is session
    assert session.run(ran) == 1
    taken.close()


@pytest.mark.parametrize('value,megabytes,warned', [
    ('', 1024, False), ('0', 0, False), ('2.5', 2.5, False),
    ('lots', 1024, True), ('-1', 1024, True), ('nan', 1024, True),
    ('inf', 1024, True)])
def test_the_kept_bound_is_read_from_the_environment(
    value, megabytes, warned, monkeypatch, caplog):
  """ESTIMATOR_RT_KEPT_SESSIONS_MB: a number of megabytes bounds what an
  Estimator keeps; anything else keeps the default, with one warning that
  names the variable and its value (a memory setting stops no program)."""
  from estimator_rt.training import kept_state  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv('ESTIMATOR_RT_KEPT_SESSIONS_MB', value)
  kept_state._bytes_of.cache_clear()  # pylint: disable=protected-access
  with caplog.at_level('WARNING'):
    assert kept_state.kept_bytes() == int(megabytes * 2**20)
    kept_state.kept_bytes()
  lines = [r.getMessage() for r in caplog.records
           if 'ESTIMATOR_RT_KEPT_SESSIONS_MB' in r.getMessage()]
  assert len(lines) == (1 if warned else 0), lines
  if warned:
    assert repr(value) in lines[0] and 'default 1024 MB' in lines[0]
