"""A pytest plugin (`-p record_outcomes`): one JSON line per finished test.

Written to the file named by LIBRARY_TESTS_LOG as each test ends, so that a
run killed for its time still leaves the outcomes of the tests it finished
(pytest's JUnit report is written only at the end). A line holds the test's
id (`file::Class::name`, the file relative to --rootdir), its outcome
(passed, failed, skipped) and, if it failed, `Type: first line` of the
exception that failed it (its first failing phase).
"""

import json
import os

_LOG = os.environ.get('LIBRARY_TESTS_LOG')
_STATE = {}


def _reason(report) -> str:
  crash = getattr(report.longrepr, 'reprcrash', None)
  message = crash.message if crash is not None else str(report.longrepr)
  lines = message.strip().splitlines()
  return lines[0][:300] if lines else ''


def pytest_runtest_logreport(report):
  """Keeps the first failure or skip of a test; writes it at teardown."""
  state = _STATE.setdefault(report.nodeid, {'outcome': 'passed'})
  if state['outcome'] == 'passed':
    if report.failed:
      state.update(outcome='failed', reason=_reason(report))
    elif report.skipped:
      state['outcome'] = 'skipped'
  if report.when == 'teardown' and _LOG:
    with open(_LOG, 'a', encoding='utf-8') as f:
      f.write(json.dumps(dict(test=report.nodeid, **_STATE.pop(
          report.nodeid))) + '\n')
