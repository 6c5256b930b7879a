r"""Runs tf.estimator 2.15's own tests, against estimator_rt or against 2.15.

    # The reference: the tests, as they are, in the tf.estimator 2.15
    # environment (scripts/tf_estimator_215/make_venv.sh).
    python scripts/tf_estimator_215/run_own_tests.py --source TREE --215 \
        --python .venv-tf215/bin/python
    # estimator_rt, through its compatibility layer.
    .venv/bin/python scripts/tf_estimator_215/run_own_tests.py --source TREE
    # estimator_rt as installed: each file a plain `python -m pytest` in
    # an environment with the built wheel installed (no runner, no
    # install(), no TF_USE_LEGACY_KERAS): what the import hook alone does.
    PY=$(.venv/bin/python scripts/installed_env.py /tmp/installed)
    .venv/bin/python scripts/tf_estimator_215/run_own_tests.py --source TREE \
        --plain --python $PY
    # Some files only (their results replace those files' in --out).
    .venv/bin/python scripts/tf_estimator_215/run_own_tests.py --source TREE \
        --files 'head/*' canned/dnn_test.py
    # Only the table, from the results already written.
    python scripts/tf_estimator_215/run_own_tests.py --report-only
    # As TF1 programs ran (tf.compat.v1.disable_v2_behavior() first): the
    # run_v1_only tests, which TF2 behaviour skips; results of their own.
    .venv/bin/python scripts/tf_estimator_215/run_own_tests.py --source TREE \
        --v1-behavior --files canned/saved_model_estimator_test.py \
        --out own_tests/v1_behavior/results_estimator_rt.json \
        --reference-results own_tests/v1_behavior/results_215.json \
        --table own_tests/v1_behavior/OWN_TESTS.md

TREE is a checkout of tensorflow/estimator at v2.15.0, which shipped its tests
inside its package. Every test file under TREE/tensorflow_estimator/python/
estimator (`*_test.py`, and the `*_test_*.py` of canned/ and canned/v1/: the
tree's py_test targets) runs in its own process, `python -m pytest` with
own_tests_plugin.py, which loads the tests and their testing modules from
TREE and the product from the target (test_code.py says which modules are
test code). A test still running after OWN_TESTS_TEST_TIMEOUT seconds (120 by
default) fails with `TestTimeout`; a file still running after --timeout
seconds is killed, and its unfinished tests fail with reason `timeout`.

With --plain, the plugin installs nothing: the tests reach estimator_rt
through the import hook of the environment of --python (which must have
estimator_rt installed, not on PYTHONPATH), and TF_USE_LEGACY_KERAS is left
unset, as for a user who runs `pytest` there.

It writes:
  - --out, the per-test results (default own_tests/results_estimator_rt.json,
    own_tests/results_215.json with --215, own_tests/results_plain.json
    with --plain): for each test id
    (`canned/dnn_test.py::Class::test_name`) its outcome (passed, failed,
    skipped) and, if it did not pass, a one-line reason (`Type: first line of
    the message`, `timeout`, `import error: ...`); a test passes when it and
    all its subtests pass. Running some files only replaces those files'
    entries;
  - --table (own_tests/OWN_TESTS.md): for each file, the tests passing on
    2.15 and how many of them pass on estimator_rt, and the reasons those
    fail, grouped, most common first. Only tests that pass on 2.15 count.

The child's output, per file, goes to --logs.
"""

import argparse
import collections
import datetime
import fnmatch
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

import test_code

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
_OUTPUTS = os.path.join(_HERE, 'own_tests')
RESULTS_215 = os.path.join(_OUTPUTS, 'results_215.json')
RESULTS_HERE = os.path.join(_OUTPUTS, 'results_estimator_rt.json')
RESULTS_PLAIN = os.path.join(_OUTPUTS, 'results_plain.json')
TABLE = os.path.join(_OUTPUTS, 'OWN_TESTS.md')
TABLE_PLAIN = os.path.join(_OUTPUTS, 'OWN_TESTS_PLAIN.md')
TARGET_215 = 'tf215'
TARGET_HERE = 'estimator_rt'
# estimator_rt as installed: the import hook only.
TARGET_PLAIN = 'plain'


# ---------------------------------------------------------------------------
# Running one file.


def list_test_files(source: str, patterns: Optional[List[str]]) -> List[str]:
  """The tree's test files (paths relative to its package directory) that
  match one of `patterns` (all if None), sorted."""
  top = test_code.package_dir(source)
  found = []
  for root, _, files in os.walk(top):
    for name in files:
      relative = os.path.relpath(os.path.join(root, name), top)
      if not test_code.is_test_file(name):
        continue
      if patterns and not any(fnmatch.fnmatch(relative, p) or
                              fnmatch.fnmatch(name, p) for p in patterns):
        continue
      found.append(relative)
  return sorted(found)


def _child_environment(target: str, source: str, log: str, *,
                       v1_behavior: bool = False) -> Dict[str, str]:
  """The environment of the process that runs one file (`v1_behavior`: the
  plugin calls `tf.compat.v1.disable_v2_behavior()` first)."""
  env = dict(os.environ)
  if v1_behavior:
    env['OWN_TESTS_V1_BEHAVIOR'] = '1'

  paths = [_HERE]
  if target == TARGET_HERE:
    paths.insert(0, _REPO_ROOT)
    # The tests were written for TensorFlow 2.15, where tf.keras was Keras 2:
    # as `python -m estimator_rt.compat` does for a program.
    env.setdefault('TF_USE_LEGACY_KERAS', '1')
  elif target == TARGET_PLAIN:
    # As a user's pytest: the environment's estimator_rt and its hook, and
    # the Keras the hook chooses.
    for name in ('TF_USE_LEGACY_KERAS', 'ESTIMATOR_RT_COMPAT'):
      env.pop(name, None)
  env.update(
      PYTHONPATH=os.pathsep.join(paths),
      OWN_TESTS_SOURCE=os.path.abspath(source),
      OWN_TESTS_TARGET=target,
      OWN_TESTS_LOG=log,
      # The tree is fetched code: nothing is written into it.
      PYTHONDONTWRITEBYTECODE='1',
      # Only this runner's plugin: the same pytest in both environments.
      PYTEST_DISABLE_PLUGIN_AUTOLOAD='1',
      TF_CPP_MIN_LOG_LEVEL='2',
      CUDA_VISIBLE_DEVICES='')
  return env


def _pytest_command(python: str, source: str, relative: str,
                    ini: str) -> List[str]:
  top = test_code.package_dir(source)
  # A class that fails to collect (it reads a private name at definition)
  # must not keep the file's other classes from running.
  return [python, '-m', 'pytest', '-p', 'no:cacheprovider',
          '-p', 'own_tests_plugin', '-c', ini, '--rootdir', top,
          '--continue-on-collection-errors', '-q', '--tb=short', '-rN',
          os.path.join(top, relative)]


def _run_child(command: List[str], env: Dict[str, str], cwd: str,
               output: str, timeout: float) -> Tuple[Optional[int], float]:
  """Runs `command` in its own process group; returns its exit code (None if
  it was killed for taking longer than `timeout`) and its seconds."""
  start = time.monotonic()
  with open(output, 'w', encoding='utf-8') as out:
    child = subprocess.Popen(command, env=env, cwd=cwd, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
      code = child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      # The whole group: a test may have started processes of its own.
      os.killpg(child.pid, signal.SIGKILL)
      child.wait()
      code = None
  return code, time.monotonic() - start


def _read_log(path: str) -> List[Dict[str, object]]:
  if not os.path.exists(path):
    return []
  with open(path, encoding='utf-8') as f:
    # A killed child may leave its last line half written.
    records = []
    for line in f:
      try:
        records.append(json.loads(line))
      except json.JSONDecodeError:
        pass
    return records


def _exit_reason(code: Optional[int]) -> str:
  if code is None:
    return 'timeout'
  if code < 0:
    return f'crash: killed by signal {signal.Signals(-code).name}'
  return f'crash: exit code {code}'


def summarize_file(relative: str, records: List[Dict[str, object]],
                   code: Optional[int], seconds: float
                   ) -> Tuple[Dict[str, object], Dict[str, Dict[str, str]]]:
  """The file's entry and its tests' results, from the child's log.

  A test that was collected but has no outcome fails with the reason the
  process ended (`timeout`, `crash: ...`); a file whose tests could not be
  collected gets a file-level `error`, which the comparison gives to each of
  its tests that passed on 2.15.
  """
  tests, collected, errors = {}, [], []
  versions, finished = {}, False
  for record in records:
    if 'versions' in record:
      versions = record['versions']
    elif 'collected' in record:
      collected = record['collected']
    elif 'file_error' in record:
      errors.append(record['file_error'])
    elif 'test' in record:
      result = {'outcome': record['outcome']}
      if 'reason' in record:
        result['reason'] = record['reason']
      tests[f"{relative}::{record['test'].split('::', 1)[1]}"] = result
    elif 'done' in record:
      finished = True
  ended = None if finished else _exit_reason(code)
  for nodeid in collected:
    key = f"{relative}::{nodeid.split('::', 1)[1]}"
    if key not in tests:
      tests[key] = {'outcome': 'failed', 'reason': ended or 'not run'}
  entry = {'seconds': round(seconds, 1), 'tests': len(tests),
           'passed': sum(t['outcome'] == 'passed' for t in tests.values())}
  if errors or (not collected and ended):
    entry['error'] = errors[0] if errors else ended
  if ended:
    entry['ended'] = ended
  entry['versions'] = versions
  return entry, tests


def run_file(args, relative: str, work: str) -> Tuple[Dict[str, object],
                                                      Dict[str, Dict[str, str]]]:
  """Runs one test file in a child process; returns summarize_file's."""
  stem = relative.replace(os.sep, '__')[:-len('.py')]
  log = os.path.join(work, stem + '.jsonl')
  output = os.path.join(args.logs, stem + '.txt')
  cwd = tempfile.mkdtemp(prefix=stem + '-', dir=work)
  if os.path.exists(log):
    os.remove(log)
  code, seconds = _run_child(
      _pytest_command(args.python, args.source, relative,
                      os.path.join(work, 'pytest.ini')),
      _child_environment(args.target, args.source, log,
                         v1_behavior=args.v1_behavior), cwd, output,
      args.timeout)
  return summarize_file(relative, _read_log(log), code, seconds)


# ---------------------------------------------------------------------------
# Results files.


def load_results(path: str) -> Dict[str, object]:
  if not os.path.exists(path):
    return {'files': {}, 'tests': {}}
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def merge_results(results: Dict[str, object], relative: str,
                  entry: Dict[str, object],
                  tests: Dict[str, Dict[str, str]]) -> None:
  """Replaces the file `relative`'s entry and tests in `results`."""
  results['files'][relative] = entry
  prefix = relative + '::'
  results['tests'] = {k: v for k, v in results['tests'].items()
                      if not k.startswith(prefix)}
  results['tests'].update(tests)


def write_results(path: str, results: Dict[str, object]) -> None:
  results['files'] = dict(sorted(results['files'].items()))
  results['tests'] = dict(sorted(results['tests'].items()))
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(results, f, indent=1)
    f.write('\n')


def _git_head() -> str:
  try:
    head = subprocess.run(['git', '-C', _REPO_ROOT, 'rev-parse', '--short',
                           'HEAD'], capture_output=True, text=True,
                          check=True).stdout.strip()
    dirty = subprocess.run(['git', '-C', _REPO_ROOT, 'status', '--porcelain',
                            '--untracked-files=no', 'estimator_rt'],
                           capture_output=True, text=True).stdout.strip()
    return head + (' (estimator_rt/ modified)' if dirty else '')
  except (OSError, subprocess.CalledProcessError):
    return 'unknown'


# ---------------------------------------------------------------------------
# The table.


def file_of(test_id: str) -> str:
  return test_id.split('::', 1)[0]


def reason_here(test_id: str, here: Dict[str, object]) -> Optional[str]:
  """Why the test `test_id` does not pass in the results `here` (None if it
  passes)."""
  result = here['tests'].get(test_id)
  if result is not None:
    if result['outcome'] == 'passed':
      return None
    return result.get('reason') or result['outcome']
  entry = here['files'].get(file_of(test_id))
  if entry is None:
    return 'not run'
  return entry.get('error') or 'not collected'


# What varies between failures of one cause: the test's own functions named
# in the message (`package.module:Class.test.<locals>.<lambda>`), addresses,
# temporary paths and numbers. Grouping ignores them.
_VARYING = [(re.compile(r'\w+(\.\w+)+:[\w.<>]+'), '<function>'),
            (re.compile(r'0x[0-9a-fA-F]+'), '0x…'),
            (re.compile(r'/tmp/\S+'), '/tmp/…'),
            # Not the version the messages name ('tf.estimator 2.15').
            (re.compile(r'(?<![\w.])(?!2\.15\b)\d+(\.\d+)?(e-?\d+)?(?![\w])'),
             'N')]
# A group's text is cut here, after the above: messages of one cause that were
# cut at different places (their varying parts differ in length) stay one.
_GROUP_CHARACTERS = 200


def reason_group(reason: str) -> str:
  """The text `reason` is grouped under (see _VARYING)."""
  for pattern, replacement in _VARYING:
    reason = pattern.sub(replacement, reason)
  return reason[:_GROUP_CHARACTERS]


def compare(reference: Dict[str, object], here: Dict[str, object]):
  """Per file: (passing on 2.15, of those passing here); and the failures'
  groups: reason -> Counter of files."""
  per_file = collections.OrderedDict()
  groups = collections.defaultdict(collections.Counter)
  for relative in sorted(reference['files']):
    per_file[relative] = [0, 0]
  for test_id, result in sorted(reference['tests'].items()):
    if result['outcome'] != 'passed':
      continue
    counts = per_file.setdefault(file_of(test_id), [0, 0])
    counts[0] += 1
    reason = reason_here(test_id, here)
    if reason is None:
      counts[1] += 1
    else:
      groups[reason_group(reason)][file_of(test_id)] += 1
  return per_file, groups


def _percent(part: int, whole: int) -> str:
  return f'{100.0 * part / whole:.0f}%' if whole else '-'


def _escape(text: str) -> str:
  return text.replace('|', '\\|').replace('\n', ' ')


def _about(results: Dict[str, object]) -> str:
  minutes = sum(e.get('seconds', 0) for e in results['files'].values()) / 60
  return (f"{results.get('about', '')}; {len(results['files'])} files in "
          f'{minutes:.0f} min')


def render_table(reference: Dict[str, object], here: Dict[str, object]) -> str:
  """OWN_TESTS.md: the per-file table and the 'why not' summary."""
  per_file, groups = compare(reference, here)
  lines = [
      '# tf.estimator 2.15\'s own tests on estimator_rt',
      '',
      'Made by `scripts/tf_estimator_215/run_own_tests.py` (see its '
      'docstring). Only the tests that pass on tf.estimator 2.15 count; a '
      'test passes when it and all its subtests pass.',
      '',
      f'- 2.15 reference: {_about(reference)}',
      f'- estimator_rt: {_about(here)}',
      '',
      '| file | 2.15 passing | passing here | % | s on 2.15 | s here |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
  ]
  total = [0, 0]
  for relative, (passing, ours) in per_file.items():
    total[0] += passing
    total[1] += ours
    # The kind of the file's error only ('import error: ModuleNotFoundError'):
    # its whole text is in 'Why not'.
    note = here['files'].get(relative, {}).get('error')
    name = relative
    if note and passing:
      name = f"{relative} ({_escape(': '.join(note.split(': ')[:2]))})"
    lines.append(
        f'| {name} | {passing} | {ours} | {_percent(ours, passing)} | '
        f"{reference['files'].get(relative, {}).get('seconds', '-')} | "
        f"{here['files'].get(relative, {}).get('seconds', '-')} |")
  seconds = [sum(r['files'][f].get('seconds', 0) for f in r['files'])
             for r in (reference, here)]
  lines.append(f'| **all {len(per_file)} files** | **{total[0]}** | '
               f'**{total[1]}** | **{_percent(*total[::-1])}** | '
               f'{seconds[0]:.0f} | {seconds[1]:.0f} |')
  lines += ['', '## Why not', '',
            'The reasons the tests that pass on 2.15 fail here, most common '
            'first (numbers, addresses, temporary paths and the test\'s own '
            'functions in a message are shown as N, 0x…, /tmp/… and '
            '<function>, so that one cause is one row).', '',
            '| tests | reason | files (tests) |', '| ---: | --- | --- |']
  ordered = sorted(groups.items(), key=lambda g: (-sum(g[1].values()), g[0]))
  for reason, files in ordered:
    where = ', '.join(f'{f} ({n})' for f, n in files.most_common())
    lines.append(f'| {sum(files.values())} | {_escape(reason)} | {where} |')
  return '\n'.join(lines) + '\n'


def write_table(reference_path: str, here_path: str, table: str) -> bool:
  """Writes the table if both results exist; returns whether it did."""
  if not (os.path.exists(reference_path) and os.path.exists(here_path)):
    return False
  text = render_table(load_results(reference_path), load_results(here_path))
  with open(table, 'w', encoding='utf-8') as f:
    f.write(text)
  return True


# ---------------------------------------------------------------------------
# Main.


def _describe(args, results: Dict[str, object]) -> str:
  versions = {}
  for entry in results['files'].values():
    versions.update(entry.get('versions') or {})
  parts = [f'{k} {v}' for k, v in sorted(versions.items())
           if k != 'estimator_rt']
  if args.target == TARGET_HERE:
    parts.insert(0, f'estimator_rt at {_git_head()}')
  elif args.target == TARGET_PLAIN:
    parts.insert(0, f'estimator_rt installed from the wheel of {_git_head()}, '
                 'plain pytest')
  return f"{', '.join(parts)}; run on {datetime.date.today().isoformat()}"


def run(args) -> None:
  """Runs the chosen files, merging their results into args.out."""
  files = list_test_files(args.source, args.files)
  if not files:
    sys.exit(f'error: no test file matches {args.files} under '
             f'{test_code.package_dir(args.source)}')
  os.makedirs(args.logs, exist_ok=True)
  results = load_results(args.out)
  if args.resume:
    files = [f for f in files if f not in results['files']]
  start = time.monotonic()
  with tempfile.TemporaryDirectory(prefix='own_tests-') as work:
    with open(os.path.join(work, 'pytest.ini'), 'w') as f:
      f.write('[pytest]\n')
    for i, relative in enumerate(files, 1):
      entry, tests = run_file(args, relative, work)
      merge_results(results, relative, entry, tests)
      failed = entry['tests'] - entry['passed']
      print(f"[{i}/{len(files)}] {relative}: {entry['passed']} passed, "
            f"{failed} not, {entry['seconds']:.0f} s"
            + (f"  ({entry['error']})" if 'error' in entry else ''),
            flush=True)
      results['about'] = _describe(args, results)
      # After each file: a run stopped half-way keeps what it did.
      write_results(args.out, results)
  print(f'{len(files)} files in {(time.monotonic() - start) / 60:.1f} min '
        f'-> {args.out}')


def parse_args(argv: List[str]):
  parser = argparse.ArgumentParser(
      description=__doc__.split('\n\n')[0],
      formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--source', help='checkout of tensorflow/estimator '
                      'v2.15.0 (holds tensorflow_estimator/python/estimator)')
  parser.add_argument('--215', dest='reference', action='store_true',
                      help='run against tf.estimator 2.15 (the reference)')
  parser.add_argument('--plain', action='store_true',
                      help='run as plain pytest in the environment of '
                      '--python, where estimator_rt is installed (its import '
                      'hook only: no install(), no TF_USE_LEGACY_KERAS)')
  parser.add_argument('--files', nargs='+', metavar='GLOB',
                      help='only these test files (globs on the path under '
                      'the package, or on the file name)')
  parser.add_argument('--out', help='results JSON (default: own_tests/'
                      'results_215.json or results_estimator_rt.json)')
  parser.add_argument('--python', default=None,
                      help='interpreter of the children (default: this one '
                      'for estimator_rt, .venv-tf215/bin/python for --215)')
  # The slowest file (canned/rnn_test.py) takes 7.5 minutes on 2.15 on a busy
  # 2-core machine.
  parser.add_argument('--timeout', type=float, default=900,
                      help='seconds a file may run (default 900)')
  parser.add_argument('--reference-results', default=RESULTS_215,
                      help='the 2.15 results the table compares with')
  parser.add_argument('--logs', default=None,
                      help='directory for each file\'s output (default: a '
                      'directory under the system\'s temporary directory)')
  parser.add_argument('--resume', action='store_true',
                      help='skip the files --out already has results for '
                      '(to go on with a run that was stopped)')
  parser.add_argument('--report-only', action='store_true',
                      help='only write the table from existing results')
  # 2.15's run_v1_only tests (canned/saved_model_estimator_test.py) skip
  # under TF2 behaviour; this runs them as TF1 programs ran, in both targets.
  parser.add_argument('--v1-behavior', action='store_true',
                      help='call tf.compat.v1.disable_v2_behavior() before '
                      'the tests (give --out, --reference-results and '
                      '--table of their own)')
  parser.add_argument('--table', default=None, help='markdown table to write '
                      '(default: own_tests/OWN_TESTS.md, OWN_TESTS_PLAIN.md '
                      'with --plain)')
  args = parser.parse_args(argv)
  if args.reference and args.plain:
    parser.error('--215 and --plain exclude each other')
  args.target = (TARGET_215 if args.reference else
                 TARGET_PLAIN if args.plain else TARGET_HERE)
  if args.out is None:
    args.out = {TARGET_215: RESULTS_215, TARGET_PLAIN: RESULTS_PLAIN,
                TARGET_HERE: RESULTS_HERE}[args.target]
  if args.table is None:
    args.table = TABLE_PLAIN if args.plain else TABLE
  if args.plain and args.python is None:
    parser.error('--plain needs --python: the interpreter of an environment '
                 'with estimator_rt installed (scripts/installed_env.py)')
  if args.python is None:
    args.python = (os.path.join(_REPO_ROOT, '.venv-tf215', 'bin', 'python')
                   if args.reference else sys.executable)
  if args.logs is None:
    args.logs = os.path.join(tempfile.gettempdir(),
                             f'own_tests_logs_{args.target}')
  if not args.report_only and not args.source:
    parser.error('--source is required (unless --report-only)')
  return args


def main(argv: List[str]) -> None:
  args = parse_args(argv)
  if not args.report_only:
    run(args)
  here = RESULTS_HERE if args.reference else args.out
  reference = args.out if args.reference else args.reference_results
  if write_table(reference, here, args.table):
    print(f'table -> {args.table}')
  else:
    print('no table: it needs both the 2.15 results and estimator_rt\'s')


if __name__ == '__main__':
  main(sys.argv[1:])
