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

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from estimator_rt.compat import namespaces
from estimator_rt.errors import UserInputError
from scripts.tf_estimator_215 import canned_reference as programs
from tests.conftest import run_python

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
    train, evaluate, predict = programs.input_fns(
        kind, programs.FEATURE_KEYS.get(name))
    estimator = programs.build(est, name, str(work / name))
    estimator.train(train, max_steps=programs.TRAIN_STEPS)
    export_path = estimator.export_saved_model(
        str(work / 'export'), programs.serving_receiver_fn(est))
    results[name] = {
        'metrics': programs.jsonable(estimator.evaluate(evaluate)),
        'predictions': programs.first_predictions(estimator, predict),
        'variables': {n: list(s) for n, s in tf.train.list_variables(
            estimator.latest_checkpoint())},
        'signatures': programs.signatures(export_path),
        'export_path': export_path,
    }
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
  train, evaluate, predict = programs.input_fns(
      kind, programs.FEATURE_KEYS.get(name))
  model_dir = str(tmp_path / name)
  shutil.copytree(os.path.join(programs.FIXTURE_ROOT, name), model_dir)
  estimator = programs.build(namespaces.v2(), name, model_dir)
  reference = REFERENCE[name]
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


def test_v1_canned_estimators_train_with_tf_compat_v1_optimizers(tmp_path):
  """tf.compat.v1.estimator.DNNClassifier: Adagrad at 0.05 from
  tf.compat.v1.train (its slots are named `<variable>/Adagrad`) and the
  loss summed over the batch, as 2.15's v1 class."""
  v1 = namespaces.v1()
  deep, _ = programs.columns()
  train, evaluate, _ = programs.input_fns('binary')
  classifier = v1.DNNClassifier([4], deep, model_dir=str(tmp_path),
                                config=v1.RunConfig(tf_random_seed=1))
  classifier.train(train, max_steps=5)
  names = {n for n, _ in tf.train.list_variables(
      classifier.latest_checkpoint())}
  assert 'dnn/hiddenlayer_0/kernel/Adagrad' in names, sorted(names)
  metrics = classifier.evaluate(evaluate, steps=1)
  # One batch of 64: the loss is the sum, average_loss the mean.
  assert np.isclose(metrics['loss'], 64 * metrics['average_loss'],
                    rtol=1e-5), metrics


def test_what_is_not_supported_is_refused_in_one_line(tmp_path):
  est = namespaces.v2()
  deep, wide = programs.columns()
  with pytest.raises(UserInputError, match='graph engine'):
    est.DNNClassifier([4], deep, config=est.RunConfig(engine='eager'))
  with pytest.raises(UserInputError, match='MultiHead is not supported'):
    est.MultiHead([est.BinaryClassHead()])
  with pytest.raises(UserInputError, match='RNN canned estimators'):
    est.experimental.RNNClassifier(sequence_feature_columns=[])
  train, _, _ = programs.input_fns('binary')
  linear = est.LinearClassifier(
      wide, model_dir=str(tmp_path / 'sdca'),
      optimizer=est.experimental.LinearSDCA(example_id_column='id'))
  with pytest.raises(UserInputError, match=r'LinearSDCA\(\.\.\.\) is not supported'):
    linear.train(train, max_steps=1)
  assert not os.path.exists(tmp_path / 'sdca')
  with pytest.raises(UserInputError, match="optimizer='Adadelta'"):
    est.DNNClassifier([4], deep, model_dir=str(tmp_path / 'bad'),
                      optimizer='Adadelta').train(train, max_steps=1)
  assert not os.path.exists(tmp_path / 'bad')

