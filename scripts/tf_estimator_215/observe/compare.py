r"""Runs the scenarios here and lists each difference from tf.estimator 2.15.

    .venv/bin/python -m scripts.tf_estimator_215.observe.compare [--report]

(from the repository root). Runs every scenario in both behaviours in a
few fresh processes (`run_here`: two at a time, the scenarios dealt out by
their recorded run time so the processes end together), compares each
record with 2.15's (`tests/data/tf_estimator_215/observables/`), and sorts
the differences: accepted (an fnmatch pattern of a file in accepted/ names
it, with the team's reason), not yet examined (ALLOWLIST.json: issue 42's
open work, reason "not yet examined (issue 42)"), or unexplained (named by
neither: the test fails).
`--report` writes REPORT.md; `--update-allowlist` adds every unexplained
difference to ALLOWLIST.json as not yet examined (after a re-recording or
a new scenario; review what it adds) and, run on every scenario, drops the
entries no difference matched any more.

A difference is (scenario, behaviour, path, 2.15's value, here's value);
its path names the entry and the place in it (`train/log`,
`evaluate/returned/items/loss/type`). Floats compare to a relative 1e-4
(TensorFlow 2.21's kernels are not 2.15's to the last bit); what a scenario
marked inexact was recorded by type and shape only.
"""

import argparse
import concurrent.futures
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
REFERENCE_DIR = os.path.join(REPO, 'tests', 'data', 'tf_estimator_215',
                             'observables')
ALLOWLIST = os.path.join(_HERE, 'ALLOWLIST.json')
ACCEPTED_DIR = os.path.join(_HERE, 'accepted')
REPORT = os.path.join(_HERE, 'REPORT.md')
NOT_EXAMINED = 'not yet examined (issue 42)'
BEHAVIORS = ('v1', 'v2')
PROCESSES_PER_BEHAVIOR = 2
RTOL, ATOL = 1e-4, 1e-6


def reference_records() -> dict:
  """(scenario, behaviour) -> 2.15's record."""
  records = {}
  for name in sorted(os.listdir(REFERENCE_DIR)):
    if name.endswith(('.v1.json', '.v2.json')):
      with open(os.path.join(REFERENCE_DIR, name)) as f:
        record = json.load(f)
      records[(record['scenario'], record['behavior'])] = record
  return records


def pandas_python():
  """An interpreter of this TensorFlow with pandas (pandas is kept out of
  .venv: Keras 3 imports it in every process when present), or None:
  $OBSERVE_PANDAS_PYTHON, else .venv-ray's beside this environment."""
  candidate = os.environ.get('OBSERVE_PANDAS_PYTHON') or os.path.join(
      os.path.dirname(sys.prefix), '.venv-ray', 'bin', 'python')
  return candidate if os.path.exists(candidate) else None


def _needs_pandas(name: str) -> bool:
  import importlib  # pylint: disable=g-import-not-at-top
  spec = importlib.util.find_spec(
      f'scripts.tf_estimator_215.observe.scenarios.{name}')
  with open(spec.origin) as f:
    return "NEEDS = ('pandas',)" in f.read()


def _jobs(names, seconds: dict) -> list:
  """(python, behaviour, scenarios) per process: each behaviour's
  scenarios dealt out longest first to PROCESSES_PER_BEHAVIOR processes."""
  jobs = []
  pandas = pandas_python()
  for behavior in BEHAVIORS:
    plain = [n for n in names if not _needs_pandas(n)]
    bins = [[0.0, []] for _ in range(PROCESSES_PER_BEHAVIOR)]
    for name in sorted(plain, key=lambda n: -seconds.get((n, behavior), 5)):
      lightest = min(bins, key=lambda b: b[0])
      lightest[0] += seconds.get((name, behavior), 5)
      lightest[1].append(name)
    # Each process runs its scenarios in the recording's order: what one
    # scenario leaves in the process (the default graph's state at its
    # end) can depend on which ran before it.
    order = {n: i for i, n in enumerate(names)}
    jobs += [(sys.executable, behavior, sorted(b[1], key=order.get))
             for b in bins if b[1]]
    with_pandas = [n for n in names if _needs_pandas(n)]
    if with_pandas and pandas:
      jobs.append((pandas, behavior, with_pandas))
  return jobs


def _run_job(job, out: str):
  python, behavior, names = job
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='1')
  done = subprocess.run(
      [python, '-m', 'scripts.tf_estimator_215.observe.run', '--behavior',
       behavior, '--out', out] + list(names), cwd=REPO, env=env,
      capture_output=True, text=True, timeout=900, check=False)
  return job, done


def run_here(out: str, names=None, python_check=None) -> dict:
  """Runs the scenarios here into `out`; (scenario, behaviour) -> record
  (a scenario whose process failed has none)."""
  del python_check
  reference = reference_records()
  from scripts.tf_estimator_215.observe import scenarios  # pylint: disable=g-import-not-at-top
  names = list(names or scenarios.NAMES)
  seconds = {k: r.get('seconds', 5) for k, r in reference.items()}
  failures = []
  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    for job, done in pool.map(lambda j: _run_job(j, out),
                              _jobs(names, seconds)):
      if done.returncode:
        failures.append(f'{job[1]} {job[2]}: exit {done.returncode}\n'
                        f'{done.stderr[-3000:]}')
  records = {}
  for name in os.listdir(out):
    with open(os.path.join(out, name)) as f:
      record = json.load(f)
    records[(record['scenario'], record['behavior'])] = record
  records['_failures'] = failures
  return records


def _close(a, b) -> bool:
  return abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b))


_EXCEPTION_KEYS = {'type', 'catches', 'message'}


def same_exception(theirs: dict, ours: dict) -> bool:
  """Whether exception record `ours` is what the project's contract makes
  of 2.15's `theirs` (DESIGN.md): every `except` that caught 2.15's
  catches it (its classes include 2.15's), and its message starts with
  2.15's words (without the final period), going on with its own."""
  if not set(theirs['catches']) <= set(ours['catches']):
    return False
  # A TensorFlow error class is named `tf:X` as a type, `tf.errors.X` among
  # the classes an except catches.
  their_type = re.sub(r'^tf:', 'tf.errors.', theirs['type'])
  if theirs['type'] != ours['type'] and their_type not in ours['catches']:
    return False
  # Both are the starts of the messages (describe.mask_message), masked the
  # same way; addresses (an object's repr) compare as one (records made
  # before mask_message masked them whole hold `#x#fc#dd#e#`).
  return _addresses_masked(ours['message']).startswith(
      _addresses_masked(theirs['message']).rstrip('.'))


def _addresses_masked(message: str) -> str:
  return re.sub(r'[0#]x[0-9a-f#]+', '0x#', message)


def diff(theirs, ours, path: str = '') -> list:
  """[(path, 2.15's value, here's value)] where `ours` differs (an
  exception by same_exception)."""
  if (isinstance(theirs, dict) and isinstance(ours, dict) and
      _EXCEPTION_KEYS <= set(theirs) and _EXCEPTION_KEYS <= set(ours) and
      same_exception(theirs, ours)):
    return []
  if isinstance(theirs, dict) and isinstance(ours, dict):
    out = []
    for key in list(theirs) + [k for k in ours if k not in theirs]:
      if key in ('seconds',):
        continue
      sub = f'{path}/{key}' if path else str(key)
      if key not in ours:
        out.append((sub, theirs[key], '<absent>'))
      elif key not in theirs:
        out.append((sub, '<absent>', ours[key]))
      else:
        out += diff(theirs[key], ours[key], sub)
    return out
  if isinstance(theirs, list) and isinstance(ours, list):
    if len(theirs) != len(ours):
      return [(path, theirs, ours)]
    out = []
    for i, (a, b) in enumerate(zip(theirs, ours)):
      out += diff(a, b, f'{path}[{i}]')
    return out
  if (isinstance(theirs, float) and isinstance(ours, (int, float)) and
      not isinstance(ours, bool) and _close(theirs, ours)):
    return []
  return [] if theirs == ours and type(theirs) is type(ours) else [
      (path, theirs, ours)]


def _undoubled(lines: list) -> list:
  """`lines` printed through two handlers at once (each line twice in a
  row: a process whose earlier scenarios gave the root logger a handler of
  its own, as 2.15's recording process had for some) as printed once. The
  runtime's own printing of a line twice is caught by its own test
  (test_compat_api's printed-once case)."""
  if len(lines) % 2 == 0 and lines and all(
      lines[i] == lines[i + 1] for i in range(0, len(lines), 2)):
    return lines[::2]
  return lines


def _logs_undoubled(value):
  if isinstance(value, dict):
    return {k: (_undoubled(v) if k == 'log' and isinstance(v, list) else
                _logs_undoubled(v)) for k, v in value.items()}
  if isinstance(value, list):
    return [_logs_undoubled(v) for v in value]
  return value


def differences(reference: dict, here: dict) -> list:
  """Every difference: dicts with scenario, behavior, path, theirs, ours."""
  found = []
  for key, record in sorted(reference.items()):
    ours = here.get(key)
    scenario, behavior = key
    if ours is None:
      found.append({'scenario': scenario, 'behavior': behavior,
                    'path': '<record>', 'theirs': 'recorded',
                    'ours': 'no record (its process failed)'})
      continue
    for path, theirs, mine in diff(_logs_undoubled(record['entries']),
                                   _logs_undoubled(ours['entries'])):
      found.append({'scenario': scenario, 'behavior': behavior,
                    'path': path, 'theirs': theirs, 'ours': mine})
  return found


def load_allowlist() -> dict:
  """ALLOWLIST.json (the differences not yet examined), with the accepted
  ones of ACCEPTED_DIR's files under 'accepted'."""
  with open(ALLOWLIST) as f:
    allowlist = json.load(f)
  allowlist['accepted'] = accepted_reasons()
  return allowlist


def accepted_reasons() -> dict:
  """{key pattern: reason} of every file in ACCEPTED_DIR: the differences
  the team examined and accepts, each with its reason (docs/differences.md
  says more). A pattern is an fnmatch pattern on `scenario|path`, for
  either behaviour."""
  reasons = {}
  for name in sorted(os.listdir(ACCEPTED_DIR)):
    if name.endswith('.json'):
      with open(os.path.join(ACCEPTED_DIR, name)) as f:
        reasons.update(json.load(f)['reasons'])
  return reasons


def _accepted(key: str, accepted: dict):
  for pattern, reason in accepted.items():
    if fnmatch.fnmatchcase(key, pattern):
      return reason
  return None


def classify(found: list, allowlist: dict) -> dict:
  """{'accepted': [...], 'not_examined': [...], 'unexplained': [...],
  'stale': [allowlist keys no difference matched]}."""
  entries = allowlist.get('differences', {})
  accepted = allowlist.get('accepted', {})
  out = {'accepted': [], 'not_examined': [], 'unexplained': []}
  used = set()
  for d in found:
    key = f'{d["scenario"]}|{d["path"]}'
    reason = _accepted(key, accepted)
    if reason is not None:
      out['accepted'].append(dict(d, reason=reason))
      continue
    entry = entries.get(key)
    if entry is None or d['behavior'] not in entry['behaviors']:
      out['unexplained'].append(d)
      continue
    used.add(key)
    kind = 'not_examined' if entry['reason'] == NOT_EXAMINED else 'accepted'
    out[kind].append(dict(d, reason=entry['reason']))
  out['stale'] = sorted(set(entries) - used)
  return out


def update_allowlist(unexplained: list, stale=()) -> int:
  """Adds `unexplained` as not yet examined and drops the `stale` keys (a
  difference that is gone needs no entry, nor its reason)."""
  allowlist = load_allowlist()
  entries = allowlist.setdefault('differences', {})
  for key in stale:
    entries.pop(key, None)
  for d in unexplained:
    entry = entries.setdefault(f'{d["scenario"]}|{d["path"]}', {
        'behaviors': [], 'reason': NOT_EXAMINED})
    entry['behaviors'] = sorted(set(entry['behaviors']) | {d['behavior']})
  allowlist['differences'] = dict(sorted(entries.items()))
  with open(ALLOWLIST, 'w') as f:
    json.dump(allowlist, f, indent=1)
    f.write('\n')
  return len(unexplained)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--report', action='store_true')
  parser.add_argument('--update-allowlist', action='store_true')
  parser.add_argument('scenarios', nargs='*')
  args = parser.parse_args(argv)
  from scripts.tf_estimator_215.observe import report  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  started = time.time()
  with tempfile.TemporaryDirectory() as out:
    here = run_here(out, args.scenarios or None)
  seconds = time.time() - started
  failures = here.pop('_failures')
  reference = reference_records()
  if args.scenarios:
    reference = {k: v for k, v in reference.items() if k[0] in args.scenarios}
  sorted_out = classify(differences(reference, here), load_allowlist())
  print('\n'.join(failures))
  print(f'{seconds:.0f} s; ' + ', '.join(
      f'{k}: {len(v)}' for k, v in sorted_out.items()))
  if args.update_allowlist:
    # Entries of scenarios that did not run are not stale.
    update_allowlist(sorted_out['unexplained'],
                     stale=() if args.scenarios else sorted_out['stale'])
  if args.report:
    with open(REPORT, 'w') as f:
      f.write(report.render(sorted_out, here, seconds))
    print('wrote', REPORT)
  return 1 if sorted_out['unexplained'] or failures else 0


if __name__ == '__main__':
  sys.exit(main())
