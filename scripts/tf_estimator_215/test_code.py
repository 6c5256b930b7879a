"""Which of tf.estimator 2.15's modules are test code, and a finder for them.

tf.estimator 2.15 shipped its tests inside its package, next to the product
code: the test files themselves (`canned/dnn_test.py`, `canned/v1/
linear_test_v1.py`, ...), the *testing modules* they import (`canned/
dnn_testing_utils.py`, `head/head_utils.py`, `hooks/fake_summary_writer.py`,
...), and one package that holds nothing else (`canned/v1`). A run of 2.15's
own tests (run_own_tests.py) loads them from the 2.15 source tree with
`TestCodeFinder`, placed ahead of every other finder for exactly these module
names; estimator_rt's compatibility layer serves the test files' paths not at
all, and serves `head/head_utils` (its product function, which canned
classifiers call, and its test helpers) and the `canned/v1` package as the
product's, for programs and libraries.

The rule, read from the tree rather than listed by hand so that it follows
the tree:

  - a test file is named `*_test.py` or `*_test_*.py` (`dnn_test_fc_v2.py`,
    `linear_test_v1.py`: the names of the tree's `py_test` targets);
  - a testing module is any other module whose source drives a test case
    (`self.assert...`, a `test_case` argument, `tf.test.`, TensorFlow's
    `test_util` or `platform.test`, `googletest`, `absltest`);
  - a test-only package is a package whose modules are all test code.

`head/head_utils.py` is a testing module by this rule although 2.15's canned
estimators also call its one product function: the head tests need its
private test helpers from the tree, as they ran on 2.15.
"""

import importlib.abc
import importlib.util
import os
import re
import sys
from typing import Dict

PACKAGE = 'tensorflow_estimator.python.estimator'

_TEST_FILE = re.compile(r'_test(_\w+)?\.py$')
# What a module that drives a test case calls or imports.
_TEST_CASE_API = re.compile(
    r'self\.assert|\btest_case\b|\btf\.test\.|\btest_util\b|\bgoogletest\b|'
    r'\babsltest\b|platform import test\b')


def is_test_file(path: str) -> bool:
  """Whether `path` is one of the tree's test files (by its name)."""
  return bool(_TEST_FILE.search(os.path.basename(path)))


def is_test_code(path: str) -> bool:
  """Whether the module file `path` is test code: a test file, or a module
  whose source drives a test case."""
  if is_test_file(path):
    return True
  if os.path.basename(path) == '__init__.py':
    return False
  with open(path, encoding='utf-8') as f:
    return bool(_TEST_CASE_API.search(f.read()))


def is_test_only_package(directory: str) -> bool:
  """Whether the package `directory` holds test code only (a package without
  modules holds none, and is the product's)."""
  modules = []
  for root, _, files in os.walk(directory):
    modules += [os.path.join(root, name) for name in files
                if name.endswith('.py') and name != '__init__.py']
  return bool(modules) and all(is_test_code(path) for path in modules)


def package_dir(source: str) -> str:
  """The directory of `tensorflow_estimator.python.estimator` in the source
  tree `source` (a checkout of tensorflow/estimator)."""
  return os.path.join(source, *PACKAGE.split('.'))


def find_test_code(source: str) -> Dict[str, str]:
  """Module name -> file (a package's `__init__.py`) of every module of the
  source tree `source` that is test code."""
  top = package_dir(source)
  found = {}
  for root, _, files in os.walk(top):
    parts = os.path.relpath(root, top).split(os.sep)
    prefix = '.'.join([PACKAGE] + [p for p in parts if p != '.'])
    if root != top and '__init__.py' in files and is_test_only_package(root):
      found[prefix] = os.path.join(root, '__init__.py')
    for name in files:
      path = os.path.join(root, name)
      if name.endswith('.py') and name != '__init__.py' and is_test_code(path):
        found[f'{prefix}.{name[:-3]}'] = path
  return found


def test_module_name(source: str, path: str) -> str:
  """The module name of the file `path` of the source tree `source`."""
  relative = os.path.relpath(os.path.abspath(path), package_dir(source))
  return '.'.join([PACKAGE] + relative[:-len('.py')].split(os.sep))


class TestCodeFinder(importlib.abc.MetaPathFinder):
  """Loads the source tree's test code, and nothing else, from the tree.

  Placed first on `sys.meta_path`, ahead of estimator_rt's compatibility layer
  (which does not serve test code) or of an installed tensorflow_estimator
  (which ships its testing modules, not its tests): the product's modules
  still come from there.
  """

  def __init__(self, modules: Dict[str, str]):
    self._modules = modules

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    file = self._modules.get(fullname)
    if file is None:
      return None
    search = None
    if os.path.basename(file) == '__init__.py':
      search = [os.path.dirname(file)]
    return importlib.util.spec_from_file_location(
        fullname, file, submodule_search_locations=search)


def install_finder(source: str) -> TestCodeFinder:
  """Puts a TestCodeFinder for the tree `source` first on sys.meta_path."""
  finder = TestCodeFinder(find_test_code(source))
  sys.meta_path.insert(0, finder)
  return finder
