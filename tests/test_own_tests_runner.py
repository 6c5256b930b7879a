"""scripts/tf_estimator_215/run_own_tests.py, on a small tree of its own.

The runner runs tf.estimator 2.15's own tests against estimator_rt; here a
tree laid out like tensorflow/estimator's (a test file, a testing module it
imports, a file that imports a module path estimator_rt does not serve) stands
in for the real one, and its results and table are checked.
"""

import json
import os
import subprocess
import sys

from conftest import REPO_ROOT

SCRIPTS = os.path.join(REPO_ROOT, 'scripts', 'tf_estimator_215')
sys.path.insert(0, SCRIPTS)
import run_own_tests  # pylint: disable=g-import-not-at-top,wrong-import-position
import test_code  # pylint: disable=g-import-not-at-top,wrong-import-position

PACKAGE_DIR = os.path.join('tensorflow_estimator', 'python', 'estimator')

TESTING_MODULE = '''
from tensorflow_estimator.python.estimator import model_fn


def check_spec(test_case, spec_class):
  test_case.assertIs(spec_class, model_fn.EstimatorSpec)
'''

TEST_FILE = '''
import time
import tensorflow as tf
from tensorflow_estimator.python.estimator import model_fn
from tensorflow_estimator.python.estimator.canned import sample_testing_utils

import estimator_rt


class SampleTest(tf.test.TestCase):

  def test_passes(self):
    sample_testing_utils.check_spec(self, estimator_rt.EstimatorSpec)

  def test_main_block_ran(self):
    self.assertTrue(SET_UP_IN_MAIN)

  def test_fails(self):
    raise ValueError('first line\\nsecond line')

  def test_a_subtest_fails(self):
    for i in range(3):
      with self.subTest(i=i):
        self.assertLess(i, 2)

  def test_private_name(self):
    self.assertIsNotNone(model_fn._TPU_ESTIMATOR_SPEC)

  def test_outlives_the_bound(self):
    time.sleep(120)


if __name__ == '__main__':
  SET_UP_IN_MAIN = True
  tf.test.main()
'''

# A product module (not test code) of the tree that estimator_rt does not
# serve (2.15 had no such module: every one of 2.15's is served or will be).
UNSERVED_FILE = '''
from tensorflow_estimator.python.estimator.canned.timeseries import unserved_module
'''

# pytest makes each TestCase when it collects the file: one that reads a
# private name there fails the class's collection, not the file's others.
BROKEN_CLASS_FILE = '''
import tensorflow as tf
from tensorflow_estimator.python.estimator import model_fn


class BrokenInInitTest(tf.test.TestCase):

  def __init__(self, method_name='runTest'):
    super().__init__(method_name)
    self.spec = model_fn._TPU_ESTIMATOR_SPEC

  def test_never(self):
    pass


class OtherTest(tf.test.TestCase):

  def test_ok(self):
    pass
'''


def _write_tree(root):
  top = root / PACKAGE_DIR
  (top / 'canned').mkdir(parents=True)
  (top / 'canned' / '__init__.py').write_text('')
  (top / 'canned' / 'sample_testing_utils.py').write_text(TESTING_MODULE)
  (top / 'canned' / 'sample_test.py').write_text(TEST_FILE)
  (top / 'optimizers_test.py').write_text(UNSERVED_FILE)
  (top / 'canned' / 'broken_class_test.py').write_text(BROKEN_CLASS_FILE)
  # Product modules: `canned` is not a test-only package.
  (top / 'canned' / 'optimizers.py').write_text('PRODUCT = True\n')
  (top / 'canned' / 'timeseries').mkdir()
  (top / 'canned' / 'timeseries' / 'unserved_module.py').write_text(
      'PRODUCT = True\n')


def test_test_code_is_the_test_files_and_their_testing_modules(tmp_path):
  _write_tree(tmp_path)
  found = test_code.find_test_code(str(tmp_path))
  package = test_code.PACKAGE
  assert sorted(found) == [f'{package}.canned.broken_class_test',
                           f'{package}.canned.sample_test',
                           f'{package}.canned.sample_testing_utils',
                           f'{package}.optimizers_test']


def test_runs_each_file_against_estimator_rt_and_compares(tmp_path):
  source = tmp_path / 'tree'
  _write_tree(source)
  out, table = tmp_path / 'results.json', tmp_path / 'OWN_TESTS.md'
  reference = tmp_path / 'results_215.json'
  passing = {'outcome': 'passed'}
  reference.write_text(json.dumps({
      'about': '2.15',
      'files': {'canned/sample_test.py': {'seconds': 1},
                'canned/broken_class_test.py': {'seconds': 1},
                'optimizers_test.py': {'seconds': 1}},
      'tests': {f'canned/sample_test.py::SampleTest::{name}': passing
                for name in ('test_passes', 'test_main_block_ran',
                             'test_fails', 'test_a_subtest_fails',
                             'test_private_name')} | {
                                 'canned/broken_class_test.py::OtherTest::'
                                 'test_ok': passing,
                                 'canned/broken_class_test.py::'
                                 'BrokenInInitTest::test_never': passing,
                                 'optimizers_test.py::OptimizersTest::'
                                 'test_x': passing}}))
  result = subprocess.run(
      [sys.executable, os.path.join(SCRIPTS, 'run_own_tests.py'),
       '--source', str(source), '--out', str(out), '--table', str(table),
       '--reference-results', str(reference), '--logs',
       str(tmp_path / 'logs'), '--timeout', '300'],
      capture_output=True, text=True, timeout=600,
      env=dict(os.environ, OWN_TESTS_TEST_TIMEOUT='3'))
  assert result.returncode == 0, result.stdout + result.stderr
  results = json.loads(out.read_text())
  tests = {k.split('::')[-1]: v for k, v in results['tests'].items()}
  assert tests['test_passes'] == passing
  assert tests['test_main_block_ran'] == passing
  assert tests['test_fails'] == {'outcome': 'failed',
                                 'reason': 'ValueError: first line'}
  assert tests['test_a_subtest_fails']['outcome'] == 'failed'
  # The per-test bound ends a test; the file's others still run.
  assert tests['test_outlives_the_bound'] == {
      'outcome': 'failed', 'reason': "TestTimeout: still running after 3 s "
                                     "(the runner's per-test bound)"}
  assert tests['test_a_subtest_fails']['reason'].startswith('AssertionError')
  assert tests['test_private_name']['reason'].startswith(
      'AttributeError: tensorflow_estimator.python.estimator.model_fn.'
      '_TPU_ESTIMATOR_SPEC is not provided by estimator_rt')
  # The product's module is not loaded from the tree, test code or not.
  assert results['files']['optimizers_test.py']['error'].startswith(
      'import error: ModuleNotFoundError: tensorflow_estimator.python.'
      'estimator.canned.timeseries.unserved_module is not provided by '
      'estimator_rt')
  assert tests['test_ok'] == passing
  assert 'test_never' not in tests
  assert results['files']['canned/broken_class_test.py']['error'].startswith(
      'collection error: AttributeError: tensorflow_estimator.python.'
      'estimator.model_fn._TPU_ESTIMATOR_SPEC is not provided')
  text = table.read_text()
  assert '| canned/sample_test.py | 5 | 2 | 40% |' in text
  assert ('| canned/broken_class_test.py (collection error: AttributeError) '
          '| 2 | 1 | 50% |') in text
  assert '| **all 3 files** | **8** | **3** | **38%** |' in text
  assert ('| 1 | ValueError: first line | canned/sample_test.py (1) |'
          in text)


def test_a_file_killed_mid_run_fails_its_unfinished_tests():
  records = [{'versions': {'tensorflow': 'x'}},
             {'collected': ['f_test.py::T::test_a', 'f_test.py::T::test_b']},
             {'test': 'f_test.py::T::test_a', 'outcome': 'passed'}]
  entry, tests = run_own_tests.summarize_file('d/f_test.py', records, None,
                                              20.0)
  assert tests == {'d/f_test.py::T::test_a': {'outcome': 'passed'},
                   'd/f_test.py::T::test_b': {'outcome': 'failed',
                                              'reason': 'timeout'}}
  assert entry['ended'] == 'timeout' and 'error' not in entry
  entry, tests = run_own_tests.summarize_file('d/f_test.py', records[:1],
                                              None, 20.0)
  assert entry['error'] == 'timeout' and not tests


def test_reasons_group_without_their_numbers_and_paths():
  group = run_own_tests.reason_group
  assert group('AssertionError: 3 != 4 at /tmp/abc/model.ckpt-7') == (
      group('AssertionError: 1 != 2 at /tmp/xyz/model.ckpt-9'))
  assert group('ValueError: dense_1/kernel:0') == (
      'ValueError: dense_1/kernel:N')
  assert group('InputFnError: input_fn a.b_test:T.test_x.<locals>.<lambda> '
               'returned tuple') == (
                   'InputFnError: input_fn <function> returned tuple')
