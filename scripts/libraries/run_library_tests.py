r"""Runs a library's own estimator tests, unchanged from its wheel, on
estimator_rt and on tf.estimator 2.15, and tables what passes.

    .venv/bin/python scripts/libraries/run_library_tests.py tensorflow-privacy
    .venv/bin/python scripts/libraries/run_library_tests.py --report-only

For each side a scratch environment (under --work) sees everything of that
side's environment (a .pth file adds its site-packages, as the Makefile
does for .venv-ray) and adds the library (`pip install --no-deps`: these
libraries pin TensorFlow releases that had tf.estimator) and what its
modules import that the environment lacks (LIBRARIES below). The tests are
the library's own files in its installed package, run by pytest in that
environment: here as `python -m estimator_rt.compat -m pytest ...`, on
2.15 as `python -m pytest ...`. Nothing of the library or its tests is
changed.

It writes results/<library>.json (each test's outcome on both sides) and
the table LIBRARY_TESTS.md beside this file, counting only the tests that
pass on 2.15.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(HERE, 'results')
TABLE = os.path.join(HERE, 'LIBRARY_TESTS.md')

# What each library needs: its requirement, the test files (globs in its
# installed package), and per side what its imports need beyond the
# environment (`no_deps`: installed without their own requirements, which
# pin versions the environment's TensorFlow does not match).
LIBRARIES = {
    'tensorflow-privacy': {
        'requirement': 'tensorflow-privacy==0.9.0',
        'tests': 'tensorflow_privacy/privacy/estimators',
        'here': {'no_deps': ['dp-accounting==0.4.3'],
                 'deps': ['scipy', 'mpmath', 'scikit-learn',
                          'tensorflow-probability==0.25.0']},
        '2.15': {'no_deps': ['dp-accounting==0.4.3'],
                 'deps': ['mpmath', 'dm-tree',
                          'tensorflow-probability==0.23.0']},
    },
}

SIDES = {'here': os.path.join(REPO, '.venv', 'bin', 'python'),
         '2.15': os.path.join(REPO, '.venv-tf215', 'bin', 'python')}
# pytest -rA's summary lines (a parametrized test's id may hold spaces).
_OUTCOME = re.compile(r'^(PASSED|FAILED|ERROR|SKIPPED) (.+?)(?: - (.*))?$')
_DURATION = re.compile(r' in ([0-9.]+)s')
# pytest -rA's lines for skipped tests: a count, the skipping file, a reason.
_SKIPPED = re.compile(r'^SKIPPED \[(\d+)\] \S+:\d+: (.*)$')


def _purelib(python: str) -> str:
  return subprocess.run(
      [python, '-c', 'import sysconfig; print(sysconfig.get_paths()'
       '["purelib"])'], capture_output=True, text=True,
      check=True).stdout.strip()


def scratch_env(side: str, library: str, work: str) -> str:
  """The python of `side`'s scratch environment for `library`, made (and
  the library and its needs installed) if it is not there yet."""
  env_dir = os.path.join(work, f'{library}-{side.replace(".", "")}')
  python = os.path.join(env_dir, 'bin', 'python')
  stamp = os.path.join(env_dir, '.installed')
  if os.path.exists(stamp):
    return python
  base = SIDES[side]
  subprocess.run([base, '-m', 'venv', '--without-pip', env_dir], check=True)
  with open(os.path.join(_purelib(python), 'base_venv.pth'), 'w') as f:
    f.write(f"import site; site.addsitedir('{_purelib(base)}')\n")
  spec = LIBRARIES[library]
  needs = spec[side]
  pip = [python, '-m', 'pip', 'install', '--quiet']
  subprocess.run(pip + ['--no-deps', spec['requirement']] + needs['no_deps'],
                 check=True)
  if needs['deps']:
    subprocess.run(pip + needs['deps'], check=True)
  open(stamp, 'w').close()
  return python


def run_tests(side: str, library: str, python: str, work: str,
              timeout: float) -> dict:
  """test id -> {'outcome', 'reason'} of the library's tests on `side`."""
  tests = os.path.join(_purelib(python), LIBRARIES[library]['tests'])
  runner = ['-m', 'pytest'] if side == '2.15' else [
      '-m', 'estimator_rt.compat', '-m', 'pytest']
  rundir = os.path.join(work, f'run-{library}-{side.replace(".", "")}')
  os.makedirs(rundir, exist_ok=True)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  if side == 'here':
    env['PYTHONPATH'] = REPO
  done = subprocess.run(
      [python] + runner + ['-q', '-rA', '-p', 'no:cacheprovider',
                           f'--rootdir={rundir}', tests],
      capture_output=True, text=True, timeout=timeout, cwd=rundir, env=env)
  log = os.path.join(rundir, 'pytest.log')
  with open(log, 'w') as f:
    f.write(done.stdout + done.stderr)
  return parse_log(log)


def parse_log(log: str) -> dict:
  """{'seconds': pytest's own duration, 'tests': {test id: {'outcome',
  'reason'}}} of a pytest -rA log."""
  results, seconds = {}, None
  with open(log) as f:
    lines = f.read().splitlines()
  for line in lines:
    skipped = _SKIPPED.match(line)
    if skipped:
      count, reason = skipped.groups()
      results[f'({count} skipped: {reason})'] = {'outcome': 'skipped',
                                                 'reason': reason[:200]}
      continue
    match = _OUTCOME.match(line)
    if match:
      outcome, test, reason = match.groups()
      results[test] = {'outcome': outcome.lower(),
                       'reason': (reason or '')[:200]}
    elif line.startswith('=') or re.match(r'^\d+ (passed|failed)', line):
      duration = _DURATION.search(line)
      seconds = float(duration.group(1)) if duration else seconds
  return {'seconds': seconds, 'tests': results}


def _versions(python: str) -> str:
  code = ('import sys, tensorflow as tf; print(sys.version.split()[0], '
          'tf.__version__)')
  out = subprocess.run([python, '-c', code], capture_output=True, text=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'))
  python_version, tf_version = out.stdout.split()[-2:]
  return f'python {python_version}, tensorflow {tf_version}'


def write_table() -> None:
  rows = []
  for name in sorted(os.listdir(RESULTS)):
    with open(os.path.join(RESULTS, name)) as f:
      record = json.load(f)
    then = {t for t, r in record['2.15']['tests'].items()
            if r['outcome'] == 'passed'}
    here = {t for t, r in record['here']['tests'].items()
            if r['outcome'] == 'passed'}
    failing = sorted(then - here)
    rows.append((record['requirement'], len(then), len(then & here),
                 record['2.15']['seconds'], record['here']['seconds'],
                 record['date'], failing))
  lines = [
      '# Libraries\' own estimator tests on estimator_rt',
      '',
      'Made by `scripts/libraries/run_library_tests.py` (see its '
      'docstring): each library\'s own test files, unchanged from its '
      'wheel, run by pytest on tf.estimator 2.15 (TF 2.15.1) and here '
      '(`python -m estimator_rt.compat -m pytest`). Only the tests that '
      'pass on 2.15 count.',
      '',
      '| library | passing on 2.15 | passing here | s on 2.15 | s here | '
      'run on |',
      '| --- | ---: | ---: | ---: | ---: | --- |']
  for requirement, then, both, s_then, s_here, date, _ in rows:
    lines.append(f'| {requirement} | {then} | {both} | {s_then} | '
                 f'{s_here} | {date} |')
  for requirement, _, _, _, _, _, failing in rows:
    if failing:
      lines += ['', f'Not passing here ({requirement}):', '']
      lines += [f'- `{test}`' for test in failing]
  with open(TABLE, 'w') as f:
    f.write('\n'.join(lines) + '\n')


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('libraries', nargs='*', default=sorted(LIBRARIES))
  parser.add_argument('--work', default=os.path.join(
      os.environ.get('TMPDIR', '/tmp'), 'estimator_rt_library_tests'),
                      help='where the scratch environments and runs go')
  parser.add_argument('--timeout', type=float, default=1800)
  parser.add_argument('--report-only', action='store_true')
  parser.add_argument('--from-logs', action='store_true',
                      help='read the last runs\' logs under --work again '
                      'instead of running the tests')
  args = parser.parse_args()
  if not args.report_only:
    os.makedirs(RESULTS, exist_ok=True)
    for library in args.libraries:
      record = {'requirement': LIBRARIES[library]['requirement'],
                'date': datetime.date.today().isoformat()}
      for side in ('2.15', 'here'):
        python = scratch_env(side, library, args.work)
        if args.from_logs:
          record[side] = parse_log(os.path.join(
              args.work, f'run-{library}-{side.replace(".", "")}',
              'pytest.log'))
        else:
          record[side] = run_tests(side, library, python, args.work,
                                   args.timeout)
        record[side]['versions'] = _versions(python)
        passed = sum(r['outcome'] == 'passed'
                     for r in record[side]['tests'].values())
        print(f'{library} on {side}: {passed} passed of '
              f'{len(record[side]["tests"])}, {record[side]["seconds"]} s',
              flush=True)
      with open(os.path.join(RESULTS, f'{library}.json'), 'w') as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write('\n')
  write_table()


if __name__ == '__main__':
  sys.exit(main())
