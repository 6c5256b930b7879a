"""The tf.compat.v1.estimator canned estimators against tf.estimator 2.15.

scripts/tf_estimator_215/canned_v1_reference.py ran six v1 programs under
tf.estimator 2.15 (DNN, linear and wide & deep classifiers and regressors,
a baseline; default and named optimizers) and recorded what they computed
in tests/data/tf_estimator_215/canned_v1/reference.json, with two model_dirs
2.15 trained. Here the same programs, through the compatibility layer's
`tf.compat.v1.estimator`, must give the same metrics and predictions (1e-5),
the same checkpoint variables (names and shapes: the v1 optimizers' slots)
and export signatures; and 2.15's model_dirs must evaluate and resume here
to 2.15's numbers. (Serving an export in a fresh process is shown for the
TF2 classes in test_canned.py; the v1 classes export through the same
code.)
"""

import json
import os

import pytest

from estimator_rt.compat import namespaces
from scripts.tf_estimator_215 import canned_reference as common
from scripts.tf_estimator_215 import canned_v1_reference as programs
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
