"""pytest plugin that runs one of tf.estimator 2.15's own test files.

Loaded by run_own_tests.py into the child process that runs one test file
(`python -m pytest -p own_tests_plugin FILE`), configured by its environment:

  OWN_TESTS_SOURCE  the tensorflow/estimator source tree the file is from;
  OWN_TESTS_TARGET  `estimator_rt` (estimator_rt.compat.install() first),
                    `plain` (nothing installed here: the environment's
                    estimator_rt serves tf.estimator through its import
                    hook, as in a user's pytest) or `tf215` (the installed
                    tf.estimator 2.15, as it is);
  OWN_TESTS_LOG     the JSON-lines file it writes what happens to;
  OWN_TESTS_V1_BEHAVIOR  `1`: `tf.compat.v1.disable_v2_behavior()` once the
                    target is installed, as TF1 programs (and 2.15's
                    run_v1_only tests) ran.

What it does, in either target:
  - puts test_code.TestCodeFinder first on sys.meta_path, so that the test
    file and the testing modules it imports come from the source tree, and
    the product's modules from the target;
  - imports the test file under its own module name
    (`tensorflow_estimator.python.estimator.canned.dnn_test`), not under
    pytest's guess from the directories, and runs what the file's
    `if __name__ == '__main__':` block runs besides its test main (five TPU
    files call `disable_v2_behavior()` there);
  - marks absl's flags parsed, as `tf.test.main()` with no arguments would;
  - logs, one JSON object a line and flushed at once (a file that hangs is
    killed, and what it finished must survive): the versions, the collected
    test ids, each test's outcome with a one-line reason, and a file-level
    error (`import error: ...`).
"""

import ast
import importlib
import json
import os
import signal
import sys
from typing import Dict, List, Optional

import pytest

import test_code

_SOURCE = os.environ.get('OWN_TESTS_SOURCE', '')
_TARGET = os.environ.get('OWN_TESTS_TARGET', 'estimator_rt')
_LOG = os.environ.get('OWN_TESTS_LOG', '')
_REASON_CHARACTERS = 1000


def _log(record: Dict[str, object]) -> None:
  if not _LOG:
    return
  with open(_LOG, 'a', encoding='utf-8') as f:
    f.write(json.dumps(record) + '\n')
    f.flush()


def one_line(error: BaseException) -> str:
  """`Type: first line of the message` of an exception."""
  lines = str(error).strip().splitlines()
  text = type(error).__name__ + (f': {lines[0].strip()}' if lines else '')
  return text[:_REASON_CHARACTERS]


def _install_target() -> Dict[str, str]:
  """Makes tf.estimator the target's; returns the versions in use."""
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  if _TARGET == 'plain':
    # Nothing imported ahead of the test file, as in a user's pytest.
    import importlib.util  # pylint: disable=g-import-not-at-top
    return {'python': sys.version.split()[0],
            'tensorflow': metadata.version('tensorflow'),
            'estimator_rt': os.path.dirname(
                importlib.util.find_spec('estimator_rt').origin)}
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  versions = {'python': sys.version.split()[0], 'tensorflow': tf.__version__}
  if _TARGET == 'estimator_rt':
    import estimator_rt.compat  # pylint: disable=g-import-not-at-top
    estimator_rt.compat.install()
    versions['estimator_rt'] = os.path.dirname(
        os.path.dirname(os.path.abspath(estimator_rt.compat.__file__)))
  else:
    # The installed package, imported before anything could look for it in
    # the source tree (which has no __init__.py at its top).
    import tensorflow_estimator  # pylint: disable=g-import-not-at-top,unused-import
    versions['tensorflow_estimator'] = metadata.version('tensorflow-estimator')
  return versions


def pytest_configure(config):
  del config
  try:
    versions = _install_target()
    if os.environ.get('OWN_TESTS_V1_BEHAVIOR') == '1':
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      tf.compat.v1.disable_v2_behavior()
      versions['behavior'] = 'v1'
    test_code.install_finder(_SOURCE)
    from absl import flags  # pylint: disable=g-import-not-at-top
    # tf.test.main() parses the command line; a test reading a flag (the TPU
    # tests do) gets its default, as there.
    flags.FLAGS.mark_as_parsed()
  except Exception as e:  # pylint: disable=broad-except
    _log({'file_error': f'bootstrap error: {one_line(e)}'})
    raise
  _log({'versions': versions})


def _main_block_setup(path: str) -> Optional[ast.Module]:
  """The statements of the file's `if __name__ == '__main__':` block other
  than those that call its test main (`tf.test.main()`, `test.main()`), or
  None."""
  with open(path, encoding='utf-8') as f:
    tree = ast.parse(f.read(), path)
  for node in tree.body:
    if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and
        isinstance(node.test.left, ast.Name) and
        node.test.left.id == '__name__'):
      body = [s for s in node.body if not _calls_main(s)]
      return ast.Module(body=body, type_ignores=[]) if body else None
  return None


def _calls_main(statement: ast.stmt) -> bool:
  """Whether `statement` calls a `main` anywhere in it (a `with` block around
  `tf.test.main()` is left out whole: it is there for the main)."""
  for node in ast.walk(statement):
    if isinstance(node, ast.Call):
      function = node.func
      if (isinstance(function, ast.Attribute) and function.attr == 'main' or
          isinstance(function, ast.Name) and function.id == 'main'):
        return True
  return False


class OwnTestModule(pytest.Module):
  """A test file of the source tree, imported under its own module name."""

  def _getobj(self):
    name = test_code.test_module_name(_SOURCE, str(self.path))
    try:
      module = importlib.import_module(name)
    except Exception as e:  # pylint: disable=broad-except
      reason = f'import error: {one_line(e)}'
      _log({'file_error': reason})
      raise self.CollectError(reason) from e
    setup = _main_block_setup(str(self.path))
    if setup is not None:
      try:
        exec(compile(setup, str(self.path), 'exec'), module.__dict__)  # pylint: disable=exec-used
      except Exception as e:  # pylint: disable=broad-except
        reason = f'main block error: {one_line(e)}'
        _log({'file_error': reason})
        raise self.CollectError(reason) from e
    return module


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
  return OwnTestModule.from_parent(parent, path=module_path)


def pytest_collectreport(report):
  # A failure collecting a class (not the module, logged above) is the
  # file's too: its tests are then missing.
  if report.failed and report.nodeid.count('::') >= 1:
    _log({'file_error': f'collection error: {_reason_of_report(report)}'})


def pytest_collection_modifyitems(items):
  _log({'collected': [item.nodeid for item in items]})


class TestTimeout(Exception):
  """A test ran past the per-test bound (OWN_TESTS_TEST_TIMEOUT)."""


# A test still running after this many seconds fails with TestTimeout, so
# that one test waiting for a server it never started (2.15's test_master_*
# mock MonitoredTrainingSession; here the master waits for its ps) does not
# cost the file's other results. 2.15's slowest files here average under 10
# s per test.
_TEST_TIMEOUT_SECS = float(os.environ.get('OWN_TESTS_TEST_TIMEOUT', '120'))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
  del item

  def expire(signum, frame):
    del signum, frame
    raise TestTimeout(f'still running after {_TEST_TIMEOUT_SECS:.0f} s (the '
                      "runner's per-test bound)")

  previous = signal.signal(signal.SIGALRM, expire)
  signal.setitimer(signal.ITIMER_REAL, _TEST_TIMEOUT_SECS)
  try:
    return (yield)
  finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
  del item
  report = yield
  if report.failed and call.excinfo is not None:
    report.own_reason = one_line(call.excinfo.value)
  return report


def _reason_of_report(report) -> str:
  """The one-line reason of a failed or skipped report."""
  reason = getattr(report, 'own_reason', None)
  if reason:
    return reason
  longrepr = report.longrepr
  if isinstance(longrepr, tuple):  # A skip: (path, line, 'Skipped: why').
    return str(longrepr[2])[:_REASON_CHARACTERS]
  crash = getattr(longrepr, 'reprcrash', None)
  text = crash.message if crash is not None else str(longrepr)
  lines = text.strip().splitlines() or ['']
  # 'package.module.Type: message' -> 'Type: message'.
  head, colon, message = lines[0].partition(': ')
  if ' ' not in head:
    head = head.rsplit('.', 1)[-1]
  return (head + colon + message)[:_REASON_CHARACTERS]


class _Outcomes:
  """Each test's outcome over its reports (setup, call, teardown and its
  subtests): failed if any failed, else skipped if any skipped."""

  def __init__(self):
    self._reports: Dict[str, List[object]] = {}

  def add(self, report) -> None:
    self._reports.setdefault(report.nodeid, []).append(report)

  def pop(self, nodeid: str) -> Dict[str, str]:
    reports = self._reports.pop(nodeid, [])
    for wanted in ('failed', 'skipped'):
      for report in reports:
        if getattr(report, wanted):
          reason = _reason_of_report(report)
          if wanted == 'skipped':
            reason = 'skipped: ' + reason.replace('Skipped: ', '', 1)
          return {'outcome': wanted, 'reason': reason}
    return {'outcome': 'passed'}


_outcomes = _Outcomes()


def pytest_runtest_logreport(report):
  _outcomes.add(report)


def pytest_runtest_logfinish(nodeid, location):
  del location
  _log(dict(test=nodeid, **_outcomes.pop(nodeid)))


def pytest_sessionfinish(session, exitstatus):
  del session
  _log({'done': int(exitstatus)})
