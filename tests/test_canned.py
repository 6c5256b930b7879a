"""The canned estimators and heads against tf.estimator 2.15.

scripts/tf_estimator_215/canned_reference.py holds sixteen programs (every
canned estimator family, classifiers and regressors, a weighted string-label
classifier, named and default optimizers, and each kind of head through the
*Estimator classes) and ran them under tf.estimator 2.15
(`.venv-tf215/bin/python scripts/tf_estimator_215/canned_reference.py`),
recording in tests/data/tf_estimator_215/canned/reference.json what they
computed. Here the same programs run through the compatibility layer's
`tf.estimator` and must give the same evaluation metrics (same keys, values
within 1e-5), predictions, checkpoint variables (names and shapes) and
export signatures, and the exports must serve the same outputs in a fresh
process. The model_dirs 2.15 trained (tests/data/tf_estimator_215/canned/
<program>/) must evaluate and resume here to 2.15's numbers.
"""

import glob
import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.training import engine_choice
from estimator_rt.core import summaries
from estimator_rt.compat import namespaces
from estimator_rt.core.errors import UserInputError
from scripts.tf_estimator_215 import canned_reference as programs
from scripts.tf_estimator_215.unseeded import wide_deep_program
from conftest import run_python
import _cluster
from _models import checkpoint_steps

with open(os.path.join(programs.FIXTURE_ROOT, 'reference.json')) as f:
  REFERENCE = json.load(f)['programs']
TOLERANCE = 1e-5


def _assert_close(expected, actual, where):
  """Nested dicts/lists of numbers (1e-5, absolute or relative) and
  strings (equal)."""
  if isinstance(expected, dict):
    assert set(actual) == set(expected), (where, sorted(actual),
                                          sorted(expected))
    for key in expected:
      _assert_close(expected[key], actual[key], f'{where}[{key!r}]')
  elif isinstance(expected, list):
    assert len(actual) == len(expected), (where, actual, expected)
    for index, (e, a) in enumerate(zip(expected, actual)):
      _assert_close(e, a, f'{where}[{index}]')
  elif isinstance(expected, str):
    assert actual == expected, (where, actual, expected)
  else:
    assert np.isclose(actual, expected, rtol=TOLERANCE, atol=TOLERANCE), (
        where, actual, expected)


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """Every program trained here as 2.15 trained it: name -> what was
  recorded for it (as canned_reference records) and its export path."""
  est = namespaces.v2()
  work = tmp_path_factory.mktemp('canned')
  results = {}
  for name, (kind, _) in programs.PROGRAMS.items():
    record, export_path = programs.train_and_record(
        est, programs.build(est, name, str(work / name)),
        programs.input_fns(kind, programs.FEATURE_KEYS.get(name)),
        str(work / 'export'))
    results[name] = dict(record, export_path=export_path)
  return results


@pytest.mark.parametrize('name', sorted(programs.PROGRAMS))
def test_program_computes_what_tf_estimator_215_computed(trained, name):
  """Trained from scratch (graph seed 42): the same metrics, predictions,
  variables (so checkpoints are interchangeable) and signatures."""
  ours, theirs = trained[name], REFERENCE[name]
  _assert_close(theirs['metrics'], ours['metrics'], f'{name} metrics')
  _assert_close(theirs['predictions'], ours['predictions'],
                f'{name} predictions')
  assert ours['variables'] == theirs['variables']
  assert ours['signatures'] == theirs['signatures']


def test_exports_serve_2_15s_outputs_in_a_fresh_process(trained):
  """Every program's export, loaded by a new process that never imports
  estimator_rt, answers each signature as 2.15's export did."""
  paths = {name: result['export_path'] for name, result in trained.items()}
  code = (
      'import json, sys\n'
      'from scripts.tf_estimator_215 import canned_reference as p\n'
      'paths = json.loads(sys.argv[1])\n'
      'print(json.dumps({n: p.serve(path, p.serialized_examples())\n'
      '                  for n, path in paths.items()}))\n')
  result = run_python(['-c', code, json.dumps(paths)], timeout=240)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'estimator_rt' not in result.stderr
  served = json.loads(result.stdout.strip().splitlines()[-1])
  for name in paths:
    _assert_close(REFERENCE[name]['served'], served[name], f'{name} served')


@pytest.mark.parametrize('name', programs.FIXTURES)
def test_tf_estimator_215_model_dir_evaluates_and_resumes(tmp_path, name):
  """A model_dir tf.estimator 2.15 trained to step 30: evaluated here as
  it is, then trained on to step 50, it gives 2.15's numbers for the same
  continuation."""
  kind = programs.PROGRAMS[name][0]
  assert_resumes_as_2_15(
      fixture=os.path.join(programs.FIXTURE_ROOT, name),
      model_dir=str(tmp_path / name),
      build=lambda d: programs.build(namespaces.v2(), name, d),
      input_fns=programs.input_fns(kind, programs.FEATURE_KEYS.get(name)),
      reference=REFERENCE[name])


def assert_resumes_as_2_15(*, fixture, model_dir, build, input_fns,
                           reference):
  """A copy of 2.15's model_dir `fixture`, as `build(model_dir)` makes its
  estimator: evaluated as kept, then trained on to CONTINUED_STEPS, it
  gives `reference`'s fixture_metrics, continued_metrics and
  continued_predictions."""
  train, evaluate, predict = input_fns
  shutil.copytree(fixture, model_dir)
  estimator = build(model_dir)
  _assert_close(reference['fixture_metrics'],
                programs.jsonable(estimator.evaluate(evaluate)), 'as kept')
  estimator.train(train, max_steps=programs.CONTINUED_STEPS)
  assert estimator.latest_checkpoint().endswith(
      f'model.ckpt-{programs.CONTINUED_STEPS}')
  _assert_close(reference['continued_metrics'],
                programs.jsonable(estimator.evaluate(evaluate)), 'continued')
  _assert_close(reference['continued_predictions'],
                programs.first_predictions(estimator, predict),
                'continued predictions')


def test_what_is_not_supported_is_refused_in_one_line(tmp_path):
  est = namespaces.v2()
  deep, wide = programs.columns()
  with pytest.raises(UserInputError, match='graph engine'):
    est.DNNClassifier([4], deep, config=est.RunConfig(engine='eager'))
  train, _, _ = programs.input_fns('binary')
  with pytest.raises(UserInputError, match="optimizer='Adadelta'"):
    est.DNNClassifier([4], deep, model_dir=str(tmp_path / 'bad'),
                      optimizer='Adadelta').train(train, max_steps=1)
  assert not os.path.exists(tmp_path / 'bad')



# The binary with an estimator factory (model_fns/canned.py): wide & deep on
# input_fns.tabular, with embedding, crossed and bucketized columns.
_WIDE_AND_DEEP_FLAGS = ['--model_fn=model_fns.canned:wide_and_deep',
                        '--input_fn=input_fns.tabular:train_input_fn',
                        '--eval_input_fn=input_fns.tabular:eval_input_fn',
                        '--exporters=final']


@pytest.mark.parametrize('strategy, tasks', [
    ('parameter_server', dict(workers=1, ps=1, chief=True)),
    ('multi_worker_mirrored', dict(workers=2)),
])
def test_wide_and_deep_on_a_cluster_through_the_binary(tmp_path, strategy,
                                                       tasks):
  """A canned estimator as the binary's --model_fn, every task from
  TF_CONFIG: parameter_server (its embeddings and linear weights on the
  ps) and multi_worker_mirrored, each with an evaluator; all exit 0, the
  checkpoints hold tf.estimator's variable names, the evaluator evaluates
  the last one and exports. (Seeded: 400 steps of this model end anywhere
  between AUC 0.57 and 0.71 from three random starts run locally (0.48 to
  0.69 before input_fns.tabular standardized the deep side's numbers); the
  seed fixes the start, and the data order is fixed, so AUC > 0.5 checks
  that the cluster learned, not the luck of the draw: 0.71 and 0.72 here.)"""
  model_dir = str(tmp_path / 'model')
  run = _cluster.run_launcher(
      tmp_path, evaluator=True, grace_secs=40, timeout_secs=200, **tasks,
      args=[*_WIDE_AND_DEEP_FLAGS, f'--model_dir={model_dir}',
            '--max_steps=400', '--save_checkpoints_steps=200',
            '--tf_random_seed=1',
            f'--distribution_strategy={strategy}'])
  assert run.launcher_code == 0, run.tail()
  steps = checkpoint_steps(model_dir)
  assert steps and 400 <= steps[-1] <= 420, steps
  names = dict(tf.train.list_variables(
      os.path.join(model_dir, f'model.ckpt-{steps[-1]}')))
  assert 'dnn/input_from_feature_columns/input_layer/occupation_embedding/'\
      'embedding_weights' in names, sorted(names)
  assert 'linear/linear_model/education_X_occupation/weights' in names
  if strategy == 'parameter_server':
    # The variables live on the ps: the chief's save writes its shard too.
    assert glob.glob(os.path.join(
        model_dir, f'model.ckpt-{steps[-1]}.data-00001-of-00002'))
  auc = summaries.read_scalars(os.path.join(model_dir, 'eval'))['auc']
  assert auc[-1][0] == steps[-1] and auc[-1][1] > 0.5, auc
  assert glob.glob(os.path.join(model_dir, 'export', 'final', '*',
                                'saved_model.pb'))


def test_an_estimator_factory_that_returns_no_estimator_is_refused(tmp_path):
  module = tmp_path / 'factory.py'
  module.write_text('def estimator(config, params):\n  return "DNN"\n')
  result = run_python(['-m', 'estimator_rt.main', f'--model_fn={module}:'
                       'estimator', f'--model_dir={tmp_path / "m"}'],
                      timeout=120)
  assert result.returncode == 2, result.stderr[-3000:]
  assert 'called as an estimator factory' in result.stderr
  assert not os.path.exists(tmp_path / 'm')


def test_nan_in_a_canned_estimator_never_reaches_a_checkpoint(tmp_path):
  """An example weight that turns NaN at step 15 makes that step's loss
  NaN: training stops with NanLossError naming the step, and the newest
  checkpoint is the last finite one (step 10). (Not a NaN or infinite
  feature: a ReLU may hide it from the loss, depending on the initial
  weights, and then the weights diverge instead, which is reported for the
  loop's steps.)"""
  est = namespaces.v2()
  columns = [tf.feature_column.numeric_column('x')]
  classifier = est.DNNClassifier([4], columns, model_dir=str(tmp_path),
                                 weight_column='w',
                                 config=est.RunConfig(
                                     save_checkpoints_steps=10))

  def input_fn():
    weight = tf.data.Dataset.range(1, 10**6).map(
        lambda i: tf.where(i >= 15, float('nan'), 1.0))
    return tf.data.Dataset.zip(
        (weight.map(lambda w: {'x': tf.ones([8]), 'w': tf.fill([8], w)}),
         tf.data.Dataset.from_tensors(tf.zeros([8], tf.int64)).repeat()))

  with pytest.raises(ert.NanLossError, match='global step 15'):
    classifier.train(input_fn, max_steps=40)
  assert checkpoint_steps(str(tmp_path)) == [0, 10]


def _wide_deep_starts(est, model_dir, train_file, *, seed, calls):
  """A wide & deep classifier on the shuffled CSV input of
  scripts/tf_estimator_215/unseeded/wide_deep_program.py (two of its
  columns: the random draws are the initializers' and the shuffle's),
  trained `calls` times for 1 step: each call's first batch (its first 16
  `age` values, as tf.data made it) and the initial hidden kernel (the
  step-0 checkpoint's)."""
  occupation = tf.feature_column.categorical_column_with_hash_bucket(
      'occupation', 100)
  model = est.DNNLinearCombinedClassifier(
      model_dir=model_dir, linear_feature_columns=[occupation],
      dnn_feature_columns=[tf.feature_column.numeric_column('age'),
                           tf.feature_column.embedding_column(occupation, 2)],
      dnn_hidden_units=[4], config=est.RunConfig(tf_random_seed=seed))
  orders = []
  for _ in range(calls):
    batches = []

    def input_fn(batches=batches):
      return wide_deep_program.recorded(
          wide_deep_program.input_fn(train_file, 1, True, 64), batches)
    model.train(input_fn, steps=1)
    orders.append(batches[0])
  reader = tf.train.load_checkpoint(os.path.join(model_dir, 'model.ckpt-0'))
  return orders, reader.get_tensor('dnn/hiddenlayer_0/kernel')


def test_unseeded_training_draws_fresh_weights_and_order_as_2_15_did(
    tmp_path):
  """Without tf_random_seed, 2.15 drew a canned estimator's initial weights
  and its input's shuffle order afresh in every run, and the order afresh
  in every train call (the graph seed is None: every op draws its own
  seed); with one, a run repeats its weights and every call repeats the
  first call's order. Measured on both sides in fresh processes by
  scripts/tf_estimator_215/unseeded/compare.py; here in one process, as a
  program that builds two estimators would see it."""
  est = namespaces.v2()
  train_file, _ = wide_deep_program.write_data(str(tmp_path))
  orders_a, kernel_a = _wide_deep_starts(est, str(tmp_path / 'a'),
                                         train_file, seed=None, calls=2)
  orders_b, kernel_b = _wide_deep_starts(est, str(tmp_path / 'b'),
                                         train_file, seed=None, calls=1)
  assert orders_a[0] != orders_a[1]
  assert orders_a[0] != orders_b[0]
  assert not np.allclose(kernel_a, kernel_b)
  orders_s, _ = _wide_deep_starts(est, str(tmp_path / 's'), train_file,
                                  seed=3, calls=2)
  assert orders_s[0] == orders_s[1]


def test_add_metrics_on_a_canned_estimator(tmp_path):
  """tf.estimator.add_metrics on a canned classifier: its metrics and the
  added one (a tf.compat.v1.metrics pair, as 2.15's graph-mode programs
  wrote), with the canned model_dir and config kept."""
  est = namespaces.v2()
  name = 'linear_classifier'
  model_dir = str(tmp_path / name)
  shutil.copytree(os.path.join(programs.FIXTURE_ROOT, name), model_dir)
  classifier = programs.build(est, name, model_dir)

  def metric_fn(labels, predictions):
    return {'mean_logistic': tf.compat.v1.metrics.mean(
        predictions['logistic']), 'auc': tf.compat.v1.metrics.mean(
            tf.cast(labels, tf.float32))}

  extended = est.add_metrics(classifier, metric_fn)
  assert extended.model_dir == model_dir
  _, evaluate, _ = programs.input_fns('binary')
  metrics = extended.evaluate(evaluate)
  expected = REFERENCE[name]['fixture_metrics']
  assert set(metrics) == set(expected) | {'mean_logistic'}
  assert np.isclose(metrics['mean_logistic'], expected['prediction/mean'],
                    atol=1e-5)
  # A name the canned model reports too is replaced, as in tf.estimator.
  assert np.isclose(metrics['auc'], expected['label/mean'], atol=1e-5)


@pytest.mark.parametrize('head_name, reference_program, labels_kind', [
    ('BinaryClassHead', 'dnn_classifier', 'binary'),
    ('MultiClassHead', 'dnn_estimator_multiclass_head', 'multiclass'),
    ('RegressionHead', 'dnn_regressor', 'regression'),
])
def test_heads_in_a_tf2_model_fn_run_in_the_eager_engine(
    tmp_path, head_name, reference_program, labels_kind):
  """A head in a TF2 model_fn (Keras 3 layer, a Keras optimizer the
  runtime applies): it trains in the eager engine, and evaluates and
  predicts with 2.15's metric and prediction keys."""
  est = namespaces.v2()
  head = {'BinaryClassHead': lambda: est.BinaryClassHead(),
          'MultiClassHead': lambda: est.MultiClassHead(3),
          'RegressionHead': lambda: est.RegressionHead()}[head_name]()

  def model_fn(features, labels, mode):
    inputs = tf.stack([features['x1'], features['x2'], features['x3']], -1)
    logits = keras.layers.Dense(head.logits_dimension)(inputs)
    # Made in TRAIN only: a Keras 3 optimizer creates variables when built.
    optimizer = (keras.optimizers.SGD(0.1) if mode == ert.ModeKeys.TRAIN
                 else None)
    return head.create_estimator_spec(features=features, mode=mode,
                                      labels=labels, logits=logits,
                                      optimizer=optimizer)

  train, evaluate, predict = programs.input_fns(labels_kind)
  estimator = est.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(train, max_steps=20)
  assert engine_choice.is_object_based(estimator.latest_checkpoint())
  metrics = estimator.evaluate(evaluate)
  assert set(metrics) == set(REFERENCE[reference_program]['metrics'])
  prediction = next(iter(estimator.predict(predict)))
  assert set(prediction) == set(
      REFERENCE[reference_program]['predictions'][0])
