"""The canned estimators' graphs have tf.estimator 2.15's names for the
tensors programs fetch by name.

scripts/tf_estimator_215/canned_graph_names.py built the TRAIN, EVAL and
PREDICT graphs of twelve programs (DNN, linear, wide & deep and baseline;
binary and 3-class classifiers and regressors) under tf.estimator 2.15,
in tf.estimator and tf.compat.v1.estimator, and recorded in
tests/data/tf_estimator_215/canned_graph_names.json what a SessionRunHook
sees: the names of the spec's loss and predictions, and of the ops programs
fetch (FETCHED_PATTERNS). Here the same function records eight of them
(PROGRAMS) as estimator_rt builds them, the same way (one training step,
one evaluation batch, one prediction, each with the hook), and the names
must be 2.15's, with the same op types. Then tensorflow/models' census wide & deep hook (a
LoggingTensorHook of `head/truediv` and `head/weighted_loss/Sum`) runs on a
v1 DNNLinearCombinedClassifier through `tf.compat.v1.estimator` and logs
2.15's values.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt.compat
from estimator_rt.compat import namespaces
from scripts.tf_estimator_215 import canned_graph_names as graph_names

with open(graph_names.REFERENCE_PATH) as f:
  _REFERENCE = json.load(f)
REFERENCE = _REFERENCE['programs']
# The programs checked here, of the reference's 24: every canned family in
# both namespaces, and each head (binary, 3-class, regression) in both,
# the census program's estimator among them. (All 24 matched when this was
# written; building every graph takes a minute on this machine.)
PROGRAMS = ('v2/dnn_classifier_3class', 'v2/linear_regressor',
            'v2/wide_deep_classifier', 'v2/baseline_regressor',
            'v1/dnn_regressor', 'v1/linear_classifier',
            'v1/wide_deep_classifier', 'v1/baseline_classifier_3class')
CASES = [(key, mode) for key in PROGRAMS for mode in graph_names.MODES]


@pytest.fixture(scope='module')
def ours(tmp_path_factory):
  """PROGRAMS' graphs as estimator_rt builds them, recorded as the
  reference script recorded 2.15's."""
  work = tmp_path_factory.mktemp('graph_names')
  namespaces_by_key = {'v2': namespaces.v2(), 'v1': namespaces.v1()}
  records = {}
  for key in PROGRAMS:
    namespace, name = key.split('/')
    records[key] = graph_names.record_program(
        namespaces_by_key[namespace], name, str(work / namespace / name))
  return records


@pytest.mark.parametrize('key,mode', CASES)
def test_spec_tensors_have_2_15s_names(ours, key, mode):
  """The loss and every prediction are the tensors 2.15 returned, by
  name."""
  assert ours[key][mode]['spec'] == REFERENCE[key][mode]['spec']


@pytest.mark.parametrize('key,mode', CASES)
def test_fetched_ops_have_2_15s_names_and_types(ours, key, mode):
  """Every op 2.15's graph had among those programs fetch exists here under
  its name, as an op of the same type."""
  theirs = REFERENCE[key][mode]['fetched']
  mine = ours[key][mode]['fetched']
  different = {name: (op_type, mine.get(name))
               for name, op_type in theirs.items()
               if mine.get(name) != op_type}
  assert not different, (
      f'{key} {mode}: name -> (2.15\'s op type, ours): {different}')


def test_census_hook_logs_2_15s_values(tmp_path):
  """The census program's LoggingTensorHook on a v1 wide & deep classifier,
  through tf.compat.v1.estimator as `python -m estimator_rt.compat` gives
  it: every step logs head/truediv (the mean loss) and
  head/weighted_loss/Sum (the summed loss) with 2.15's values."""
  estimator_rt.compat.install()
  logged = graph_names.census_logged(tf.compat.v1.estimator,
                                     str(tmp_path / 'census'))
  expected = _REFERENCE['census_logged']
  assert len(logged) == len(expected) == graph_names.CENSUS_STEPS
  for step, (ours, theirs) in enumerate(zip(logged, expected)):
    assert set(ours) == set(theirs), step
    for key in theirs:
      assert np.isclose(ours[key], theirs[key], rtol=1e-5, atol=1e-5), (
          step, key, ours[key], theirs[key])
