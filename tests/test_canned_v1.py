"""The tf.compat.v1.estimator canned estimators against tf.estimator 2.15.

scripts/tf_estimator_215/canned_v1_reference.py ran six v1 programs under
tf.estimator 2.15 (DNN, linear and wide & deep classifiers and regressors,
a baseline; default and named optimizers) and recorded what they computed
in tests/data/tf_estimator_215/canned_v1/reference.json, with two model_dirs
2.15 trained. Here the same programs, through the compatibility layer's
`tf.compat.v1.estimator`, must give the same metrics and predictions (1e-5),
the same checkpoint variables (names and shapes: the v1 optimizers' slots)
and export signatures; and 2.15's model_dirs must evaluate and resume here
to 2.15's numbers. Issue 46's program (checkpoint_corpus.issue_program: a
partitioned input layer whose Adagrad slots are slices of one tensor)
trains, resumes and trains and evaluates as on 2.15. (Serving an export in a fresh process is shown for the
TF2 classes in test_canned.py; the v1 classes export through the same
code.)
"""

import json
import os

import numpy as np
import pytest

from estimator_rt.compat import namespaces
from scripts.tf_estimator_215 import canned_reference as common
from scripts.tf_estimator_215 import canned_v1_reference as programs
from scripts.tf_estimator_215 import checkpoint_corpus
from test_canned import _assert_close
from test_canned import assert_resumes_as_2_15

with open(os.path.join(programs.FIXTURE_ROOT, 'reference.json')) as f:
  REFERENCE = json.load(f)['programs']


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """Every v1 program trained here as 2.15 trained it: name -> what was
  recorded for it."""
  v1 = namespaces.v1()
  work = tmp_path_factory.mktemp('canned_v1')
  results = {}
  for name in programs.PROGRAMS:
    results[name], _ = common.train_and_record(
        v1, programs.build(v1, name, str(work / name)),
        programs.input_fns(name), str(work / 'export'))
  return results


@pytest.mark.parametrize('name', sorted(programs.PROGRAMS))
def test_v1_program_computes_what_tf_estimator_215_computed(trained, name):
  ours, theirs = trained[name], REFERENCE[name]
  _assert_close(theirs['metrics'], ours['metrics'], f'{name} metrics')
  _assert_close(theirs['predictions'], ours['predictions'],
                f'{name} predictions')
  assert ours['variables'] == theirs['variables']
  assert ours['signatures'] == theirs['signatures']


@pytest.mark.parametrize('name', programs.FIXTURES)
def test_tf_estimator_215_v1_model_dir_evaluates_and_resumes(tmp_path, name):
  """A v1 model_dir 2.15 trained to step 30 (its optimizer slots
  included): evaluated as kept, then trained on to step 50, it gives 2.15's
  numbers."""
  assert_resumes_as_2_15(
      fixture=os.path.join(programs.FIXTURE_ROOT, name),
      model_dir=str(tmp_path / name),
      build=lambda d: programs.build(namespaces.v1(), name, d),
      input_fns=programs.input_fns(name), reference=REFERENCE[name])


with open(os.path.join(checkpoint_corpus.REFERENCE_ROOT,
                       'manifest.json')) as f:
  PARTITIONED_SLOTS = json.load(f)['issue_program']


def assert_partitioned_slots_as_2_15(now, then):
  """What checkpoint_corpus.issue_program saw here is what it saw on 2.15:
  the three calls trained to their steps, the embedding read whole (7, 4),
  one part's slot not (2.15's ValueError), the same metrics (1e-5)."""
  assert now['steps'] == then['steps'] == [3, 6, 9]
  assert now['slot_read_whole'] == then['slot_read_whole']
  assert then['slot_read_whole'].startswith(
      'ValueError: Does not have sufficient slices')
  assert now['embedding']['shape'] == then['embedding']['shape'] == [7, 4]
  np.testing.assert_allclose(now['embedding']['sum'],
                             then['embedding']['sum'], rtol=1e-5)
  assert sorted(now['metrics']) == sorted(then['metrics'])
  for key, value in then['metrics'].items():
    np.testing.assert_allclose(now['metrics'][key], value, rtol=1e-5,
                               atol=1e-6, err_msg=key)


def test_partitioned_input_layer_with_adagrad_trains_resumes_and_evaluates(
    tmp_path):
  """Issue 46: a v1 DNNClassifier with input_layer_partitioner and its
  default Adagrad saves each part's slot as a slice of one tensor
  (`.../embedding_weights/t_0/Adagrad`). Its checkpoints are usable: train,
  get_variable_value, a second train and train_and_evaluate run as on
  2.15 (TF1 behaviour: test_tf1_behavior.py)."""
  assert_partitioned_slots_as_2_15(
      checkpoint_corpus.issue_program(str(tmp_path)), PARTITIONED_SLOTS)
