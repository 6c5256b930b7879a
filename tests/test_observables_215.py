"""What a tf.estimator program observes is what it observed under 2.15.

scripts/tf_estimator_215/observe/ holds scenario programs that together call
every public name of tf.estimator 2.15's API, in TF1 and TF2 behaviour, and
record what a program sees: return values (types, dtypes, values),
exceptions (class, what `except` catches, the message's start), which
argument values each call takes or refuses, the model_dir and export files
read back (events' tags, steps and value kinds: `simple_value`, `histo`,
a tensor's dtype and plugin; the checkpoint state, checkpoints' variables,
SavedModels' signatures), the process state left behind, the INFO lines
scripts grep (a number printed as a float32 or with more digits is a
difference), and the calls hooks and saving listeners receive.
tf.estimator 2.15 recorded them once (tests/data/tf_estimator_215/
observables/, by `observe/record.py`); here the same scenarios run in a few
fresh processes (both behaviours, two at a time) and every difference must
be accepted with its reason by a pattern in observe/accepted/*.json, or be
listed in observe/ALLOWLIST.json as not yet examined (the report,
observe/REPORT.md, shows which are accepted and which not yet examined).
Every public name must be covered by a scenario in both behaviours, or be
allowlisted with a reason.

About 3 minutes on 2 cores (the scenarios' processes; nothing else here).
"""

import json
import os

import pytest

from scripts.tf_estimator_215.observe import compare
from scripts.tf_estimator_215.observe import report


@pytest.fixture(scope='module')
def compared(tmp_path_factory):
  """(records here, the differences sorted by the allowlist)."""
  out = str(tmp_path_factory.mktemp('observables'))
  here = compare.run_here(out)
  failures = here.pop('_failures')
  found = compare.differences(compare.reference_records(), here)
  sorted_out = compare.classify(found, compare.load_allowlist())
  report_path = tmp_path_factory.mktemp('report') / 'REPORT.md'
  report_path.write_text(report.render(sorted_out, here, 0))
  return here, failures, sorted_out, report_path


def test_every_scenario_ran_here(compared):
  here, failures, _, _ = compared
  assert not failures, '\n'.join(failures)
  missing = sorted(set(compare.reference_records()) - set(here))
  assert not missing, f'no record here for {missing}'


def test_no_difference_outside_the_allowlist(compared):
  _, _, sorted_out, report_path = compared
  unexplained = sorted_out['unexplained']
  shown = '\n'.join(
      f'{d["scenario"]} {d["behavior"]} {d["path"]}: 2.15 '
      f'{json.dumps(d["theirs"])[:200]}, here {json.dumps(d["ours"])[:200]}'
      for d in unexplained[:30])
  assert not unexplained, (
      f'{len(unexplained)} differences from tf.estimator 2.15 that '
      f'observe/ALLOWLIST.json does not name (report: {report_path}):\n'
      f'{shown}')


def test_every_public_name_is_covered_in_both_behaviours():
  coverage = report.load_coverage()
  excused = compare.load_allowlist().get('uncovered', {})
  with open(os.path.join(os.path.dirname(compare.REFERENCE_DIR),
                         'api.json')) as f:
    names = json.load(f)['names']
  assert sorted(coverage['names']) == sorted(names)
  uncovered = [f'{n} ({b})' for n, where in sorted(coverage['names'].items())
               for b in compare.BEHAVIORS if not where[b] and n not in excused]
  assert not uncovered, f'no scenario covers {uncovered}'


def test_the_allowlist_gives_a_reason_for_each_entry():
  allowlist = compare.load_allowlist()
  for key, entry in allowlist['differences'].items():
    assert entry['reason'].strip() and entry['behaviors'], key
    assert set(entry['behaviors']) <= set(compare.BEHAVIORS), key
  for name, reason in allowlist.get('uncovered', {}).items():
    assert reason.strip(), name


def test_a_difference_fails_the_comparison():
  """The comparison itself: a changed value, type, message or missing
  entry is a difference the allowlist must name."""
  theirs = {'train': {'returned': {'type': 'numpy.float32', 'value': 1.5}},
            'log': {'value': ['INFO:tensorflow:Loss for final step: <f>.']}}
  ours = json.loads(json.dumps(theirs))
  assert not compare.diff(theirs, ours)
  ours['train']['returned']['value'] = 1.5 * (1 + 1e-6)
  assert not compare.diff(theirs, ours)  # within float tolerance
  ours['train']['returned'] = {'type': 'float', 'value': 1.5}
  assert compare.diff(theirs, ours) == [
      ('train/returned/type', 'numpy.float32', 'float')]
  del ours['log']
  found = compare.differences({('s', 'v1'): {'entries': theirs}},
                              {('s', 'v1'): {'entries': ours}})
  assert [d['path'] for d in found] == ['train/returned/type', 'log']
  assert compare.classify(found, {'differences': {}})['unexplained'] == found


def test_what_differs_between_runs_or_packages_compares_alike():
  """An object's address in a message (masked digit by digit in records
  made before: `#x#fc#dd#e#`) and the module of an object's class inside
  an argument list (2.15's or estimator_rt's) are not differences."""
  theirs = {'type': 'ValueError', 'catches': ['ValueError'],
            'message': 'model_fn (<function f at #x#fc#dd#e#>) has'}
  ours = dict(theirs, message='model_fn (<function f at 0x#>) has more')
  assert compare.same_exception(theirs, ours)
  assert not compare.same_exception(theirs, dict(ours, message='other'))
  from scripts.tf_estimator_215.observe import recorder  # pylint: disable=g-import-not-at-top

  class LatestExporter:
    pass

  assert recorder.candidate_key([LatestExporter()]) == (
      'list:[<LatestExporter object>]')


def test_how_a_number_is_printed_and_a_value_kind_are_compared():
  """A log line's float printed as 2.15 printed a float32 (`1.1269032`)
  and with a Python float's digits (`1.1927422285079956`) mask apart; an
  event value's kind names what a reader finds in it."""
  from scripts.tf_estimator_215.observe import files  # pylint: disable=g-import-not-at-top
  from scripts.tf_estimator_215.observe import recorder  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  mask = recorder._masked_log_line  # pylint: disable=protected-access
  assert mask('loss = 1.1269032, step = 0') == 'loss = <f>, step = 0'
  assert mask('loss = 1.1927422285079956, step = 0') == (
      'loss = <f64>, step = 0')
  assert mask('Loss for final step: nan.') == 'Loss for final step: <f>.'
  assert mask('x = 1.23e-06, y = 0.5 (0.003 sec)') == (
      'x = <f>, y = <f> (<t> sec)')
  value = tf.compat.v1.Summary.Value
  assert files.value_kind(value(tag='loss', simple_value=1.0)) == (
      'simple_value')
  scalar = value(tag='loss', tensor=tf.make_tensor_proto(1.0),
                 metadata=tf.compat.v1.SummaryMetadata(
                     plugin_data=tf.compat.v1.SummaryMetadata.PluginData(
                         plugin_name='scalars')))
  assert files.value_kind(scalar) == 'tensor:float32/scalars'
