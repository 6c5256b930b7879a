r"""Runs the own tests of libraries built on tf.estimator, here and on 2.15.

    # estimator_rt: the library installed --no-deps in .venv-libraries
    # (`make libraries-venv`), its tests run unchanged through
    # `python -m estimator_rt.compat`.
    .venv/bin/python scripts/tf_estimator_215/run_library_tests.py tfgan
    # The reference: the same tests in tf.estimator 2.15's environment
    # (.venv-tf215-libraries, `make libraries-venv-215`).
    .venv/bin/python scripts/tf_estimator_215/run_library_tests.py --215 tfgan
    # Only the table, from the results already written.
    .venv/bin/python scripts/tf_estimator_215/run_library_tests.py --report-only

Each library (LIBRARIES) names the test files its wheel ships: those pytest
runs, and those that are programs (they read absl flags, so they run as
`python FILE`, absltest's own runner). They run from the installed package,
unchanged: the pytest files in one process, each program in its own. pytest
reports each test as it ends (library_harness/record_outcomes.py: a run
killed for its time keeps what it finished), absltest through its JUnit
file (XML_OUTPUT_FILE). The processes get
library_harness/ first on their PYTHONPATH: its sitecustomize gives back
what Python 3.11 removed from under the libraries (on both sides: the
harness, never the product), and a library's data plugin stands in for the
data sets its tests download (no network here).

It writes the results (per test: outcome, and a one-line reason when it did
not pass; 2.15's to tests/data/tf_estimator_215/library_tests.json, which
tests/test_libraries.py compares with, estimator_rt's to
own_tests/library_tests_estimator_rt.json) and own_tests/LIBRARY_TESTS.md:
per file, the tests passing on 2.15 and how many of those pass here, and why
the others fail.
"""

import argparse
import collections
import dataclasses
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from typing import Dict, List, Optional, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
HARNESS = os.path.join(_HERE, 'library_harness')
OUTPUTS = os.path.join(_HERE, 'own_tests')
TABLE = os.path.join(OUTPUTS, 'LIBRARY_TESTS.md')
REFERENCE = os.path.join(_REPO_ROOT, 'tests', 'data', 'tf_estimator_215',
                         'library_tests.json')
TARGET_215 = 'tf215'
TARGET_HERE = 'estimator_rt'
PYTHON_HERE = os.path.join(_REPO_ROOT, '.venv-libraries', 'bin', 'python')
PYTHON_215 = os.path.join(_REPO_ROOT, '.venv-tf215-libraries', 'bin',
                          'python')


@dataclasses.dataclass(frozen=True)
class Library:
  """A library's own estimator tests, as its wheel ships them.

  Attributes:
    package: its import name; the files are relative to its directory.
    requirement: the pip requirement both sides install (`--no-deps`).
    from_source: its wheel ships no tests: they come from a checkout of its
      repository (`--source NAME=DIR`), the files relative to DIR, which is
      first on the path (the checkout's package is the one tested).
    pytest_files: test files pytest runs.
    programs: test files that run as programs (absltest's main).
    plugins: modules of library_harness/ given to pytest with `-p`.
    home_data: a function of library_harness/ (`module:function`) that
      writes, under a fresh HOME, the data files the tests would download.
    harness: the give-backs of library_harness/sitecustomize.py it needs
      (the variables that turn them on, set to 1).
  """
  package: str
  requirement: str
  from_source: bool = False
  pytest_files: Tuple[str, ...] = ()
  programs: Tuple[str, ...] = ()
  plugins: Tuple[str, ...] = ()
  home_data: Optional[str] = None
  harness: Tuple[str, ...] = ()


LIBRARIES = {
    # TF-Ranking's estimator tests (tf.estimator, its ranking head and
    # model_fn, Keras model_to_estimator), from a checkout of
    # tensorflow/ranking (0.5.5 at 5b1d133); needs tensorflow-serving-api.
    'tfranking': Library(
        package='tensorflow_ranking',
        requirement='tensorflow-ranking==0.5.5',
        from_source=True,
        # Programs: they are absltest programs (tf.test.main), and four of
        # estimator_test.py's read --test_tmpdir, unparsed under pytest.
        programs=('tensorflow_ranking/python/estimator_test.py',
                  'tensorflow_ranking/python/head_test.py',
                  'tensorflow_ranking/python/model_test.py',
                  'tensorflow_ranking/python/keras/estimator_test.py')),
    # TF Constrained Optimization's estimator heads (HeadV1/HeadV2 wrap a
    # tf.estimator head), from a checkout of
    # google-research/tensorflow_constrained_optimization (723d63f).
    'tfco': Library(
        package='tensorflow_constrained_optimization',
        requirement='tensorflow-constrained-optimization',
        from_source=True,
        programs=('tensorflow_constrained_optimization/python/rates/'
                  'estimator_head_test.py',)),
    # AdaNet's Estimator (a tf.estimator.Estimator subclass that grows an
    # ensemble over iterations), from a checkout of tensorflow/adanet
    # (0.9.0 at 0364cc4); it reads TensorFlow 2.10's
    # tensorflow.python.training.tracking and NumPy 1.23's numpy.float.
    'adanet': Library(
        package='adanet',
        requirement='adanet==0.9.0',
        from_source=True,
        programs=('adanet/core/estimator_test.py',
                  'adanet/autoensemble/estimator_test.py'),
        harness=('LIBRARY_HARNESS_TF_NAMES', 'LIBRARY_HARNESS_NUMPY')),
    'tfgan': Library(
        package='tensorflow_gan',
        requirement='tensorflow-gan==2.1.0',
        pytest_files=('python/estimator/gan_estimator_test.py',
                      'python/estimator/latent_gan_estimator_test.py',
                      'python/estimator/stargan_estimator_test.py'),
        programs=('python/estimator/tpu_gan_estimator_test.py',)),
    # 2.0.13 is the last release with the canned estimators (2.1.0 dropped
    # tensorflow_lattice/python/estimators.py).
    # TensorFlow Privacy's DP estimators: subclasses of 2.15's v1 and TF2
    # heads overriding _create_tpu_estimator_spec, and v1 DNN and linear
    # classifiers over canned.dnn._dnn_model_fn and linear._linear_model_fn.
    'tfprivacy': Library(
        package='tensorflow_privacy',
        requirement='tensorflow-privacy==0.9.0',
        pytest_files=tuple(
            f'privacy/estimators/{name}_test.py' for name in (
                'binary_class_head', 'dnn', 'multi_class_head',
                'multi_label_head', 'v1/dnn', 'v1/head', 'v1/linear'))),
    'lattice': Library(
        package='tensorflow_lattice',
        requirement='tensorflow-lattice==2.0.13',
        pytest_files=('python/estimators_test.py',),
        plugins=('lattice_data',),
        home_data='lattice_data:write_keras_datasets',
        harness=('LIBRARY_HARNESS_NUMPY',)),
}


# ---------------------------------------------------------------------------
# Running one file.


def package_dir(python: str, package: str) -> str:
  """Where `python` imports `package` from (without importing it)."""
  found = subprocess.run(
      [python, '-c', 'import importlib.util, os, sys; spec = importlib.util.'
       f'find_spec({package!r}); print(os.path.dirname(spec.origin))'],
      capture_output=True, text=True, timeout=120, check=True,
      env=dict(os.environ, PYTHONPATH=''))
  return found.stdout.strip().splitlines()[-1]


def _environment(target: str, library: Library, top: str, report: str,
                 home: Optional[str]) -> Dict[str, str]:
  env = dict(os.environ)
  paths = [HARNESS]
  if target == TARGET_HERE:
    paths.append(_REPO_ROOT)
  if library.from_source:
    paths.append(top)
  env.update(
      PYTHONPATH=os.pathsep.join(paths),
      # absltest's JUnit report (Bazel's variable), record_outcomes.py's.
      XML_OUTPUT_FILE=report,
      LIBRARY_TESTS_LOG=report,
      # The wheel is installed code: nothing is written into it.
      PYTHONDONTWRITEBYTECODE='1',
      PYTEST_DISABLE_PLUGIN_AUTOLOAD='1',
      TF_CPP_MIN_LOG_LEVEL='2',
      CUDA_VISIBLE_DEVICES='')
  env.update((variable, '1') for variable in library.harness)
  if home:
    env['HOME'] = home
  return env


def _command(target: str, python: str, library: Library, top: str,
             files: Tuple[str, ...], is_program: bool) -> List[str]:
  """The command that runs `files` (under the package directory `top`)."""
  runner = [python, '-m', 'estimator_rt.compat'] if target == TARGET_HERE \
      else [python]
  paths = [os.path.join(top, f) for f in files]
  if is_program:
    if library.from_source:
      # As a module of the checkout's package, as Bazel ran it: run as a
      # file, its directory would come first on the path and its siblings
      # (estimator.py, head.py) would shadow TensorFlow's modules.
      return runner + ['-m', files[0][:-len('.py')].replace('/', '.')]
    return runner + paths
  plugins = [a for p in ('record_outcomes', *library.plugins)
             for a in ('-p', p)]
  return runner + ['-m', 'pytest', '-p', 'no:cacheprovider', *plugins,
                   '-c', os.devnull, '--rootdir', top, '-q', '--tb=short',
                   '-rN', *paths]


def _run_child(command: List[str], env: Dict[str, str], cwd: str,
               output: str, timeout: float) -> Tuple[Optional[int], float]:
  """Runs `command` in its own process group; its exit code (None if killed
  after `timeout` seconds) and its seconds."""
  start = time.monotonic()
  with open(output, 'w', encoding='utf-8') as out:
    child = subprocess.Popen(command, env=env, cwd=cwd, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
      code = child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      os.killpg(child.pid, signal.SIGKILL)
      child.wait()
      code = None
  return code, time.monotonic() - start


def _reason(element: ElementTree.Element) -> str:
  """`Type: first line of the message` of a failure or error element."""
  message = (element.get('message') or element.text or '').strip()
  kind = element.get('type') or ''
  quoted = re.fullmatch(r"<class '([\w.]+)'>", kind)  # absltest's form
  kind = (quoted.group(1) if quoted else kind).rsplit('.', 1)[-1]
  first = message.splitlines()[0] if message else ''
  if kind and kind not in ('failure', 'error') and not first.startswith(kind):
    first = f'{kind}: {first}'
  return first[:300]


def read_outcomes(path: str) -> Dict[str, Dict[str, str]]:
  """record_outcomes.py's lines: per test id, its outcome [and reason]."""
  tests = {}
  if os.path.exists(path):
    with open(path, encoding='utf-8') as f:
      for line in f:
        try:
          record = json.loads(line)
        except json.JSONDecodeError:  # a killed run's last, half line
          continue
        tests[record.pop('test')] = record
  return tests


def read_junit(path: str, file: str) -> Dict[str, Dict[str, str]]:
  """absltest's JUnit report: per test `file::Class::name`, its outcome
  and, if not passed, reason."""
  tests = {}
  if not os.path.exists(path):
    return tests
  try:
    root = ElementTree.parse(path).getroot()
  except ElementTree.ParseError:
    return tests
  for case in root.iter('testcase'):
    cls = (case.get('classname') or '').rsplit('.', 1)[-1]
    key = f"{file}::{cls}::{case.get('name')}"
    failed = [c for c in case if c.tag in ('failure', 'error')]
    skipped = [c for c in case if c.tag == 'skipped']
    if failed:
      tests[key] = {'outcome': 'failed', 'reason': _reason(failed[0])}
    elif skipped or case.get('result') == 'suppressed':
      tests[key] = {'outcome': 'skipped'}
    else:
      tests[key] = {'outcome': 'passed'}
  return tests


def _exit_reason(code: Optional[int]) -> str:
  if code is None:
    return 'timeout'
  if code < 0:
    return f'crash: killed by signal {signal.Signals(-code).name}'
  return f'exit code {code} with no test report'


def run_library(name: str, target: str, python: str, timeout: float = 900,
                logs: Optional[str] = None,
                source: Optional[str] = None) -> Dict[str, object]:
  """Runs library `name`'s test files on `target`; its results.

  The pytest files run in one process (one TensorFlow start), each program
  in its own. Returns {'files': {file: {'tests', 'passed'[, 'error']}},
  'runs': [{'files', 'seconds'}], 'tests': {'file::Class::name':
  {'outcome'[, 'reason']}}, 'versions'}. `source`: the checkout a
  `from_source` library's tests come from.
  """
  library = LIBRARIES[name]
  if library.from_source:
    if not source:
      raise ValueError(f'{name}: its tests come from a checkout of its '
                       f'repository: give --source {name}=DIR')
    top = os.path.abspath(source)
  else:
    top = package_dir(python, library.package)
  files, runs, tests = {}, [], {}
  with tempfile.TemporaryDirectory(prefix=f'{name}-tests-') as work:
    home = None
    if library.home_data:
      home = os.path.join(work, 'home')
      os.makedirs(home)
      module, function = library.home_data.split(':')
      sys.path.insert(0, HARNESS)
      try:
        getattr(__import__(module), function)(home)
      finally:
        sys.path.remove(HARNESS)
    groups = [(library.pytest_files, False)] if library.pytest_files else []
    groups += [((program,), True) for program in library.programs]
    for group, is_program in groups:
      stem = group[0].replace('/', '__')[:-len('.py')]
      report = os.path.join(work, stem + ('.xml' if is_program else '.jsonl'))
      output = os.path.join(logs or work, f'{name}__{stem}.txt')
      cwd = tempfile.mkdtemp(prefix=stem, dir=work)
      code, seconds = _run_child(
          _command(target, python, library, top, group, is_program),
          _environment(target, library, top, report, home), cwd, output, timeout)
      runs.append({'files': list(group), 'seconds': round(seconds, 1)})
      found = (read_junit(report, group[0]) if is_program
               else read_outcomes(report))
      tests.update(found)
      for relative in group:
        of_file = [t for k, t in found.items()
                   if k.split('::')[0] == relative]
        entry = {'tests': len(of_file),
                 'passed': sum(t['outcome'] == 'passed' for t in of_file)}
        if not of_file:
          entry['error'] = _last_line(output) or _exit_reason(code)
        elif code is None:
          entry['error'] = 'timeout'
        files[relative] = entry
  result = {'files': files, 'runs': runs,
            'tests': dict(sorted(tests.items())),
            'versions': _versions(python, library)}
  if library.from_source:
    result['source_commit'] = subprocess.run(
        ['git', '-C', top, 'rev-parse', 'HEAD'], capture_output=True,
        text=True).stdout.strip()
  return result


def _last_line(path: str) -> str:
  with open(path, encoding='utf-8', errors='replace') as f:
    lines = [l.strip() for l in f if l.strip()]
  return lines[-1][:300] if lines else ''


def _versions(python: str, library: Library) -> Dict[str, str]:
  distribution = library.requirement.split('==')[0]
  code = ('import importlib.metadata as m, platform\n'
          'def v(d):\n'
          '  try: return m.version(d)\n'
          '  except m.PackageNotFoundError: return None\n'
          'print({"python": platform.python_version(), '
          f'"{distribution}": v("{distribution}"), '
          '"tensorflow": v("tensorflow") or v("tensorflow-cpu"), '
          '"tensorflow-estimator": v("tensorflow-estimator")})')
  done = subprocess.run([python, '-c', code], capture_output=True, text=True,
                        timeout=120, check=True)
  return {k: v for k, v in eval(done.stdout.strip()).items() if v}  # pylint: disable=eval-used


# ---------------------------------------------------------------------------
# Results and the table.


def results_path(target: str) -> str:
  """2.15's results are the reference figures tests/test_libraries.py
  reads; estimator_rt's go beside the table."""
  if target == TARGET_215:
    return REFERENCE
  return os.path.join(OUTPUTS, 'library_tests_estimator_rt.json')


def load(path: str) -> Dict[str, Dict[str, object]]:
  if not os.path.exists(path):
    return {}
  with open(path, encoding='utf-8') as f:
    return json.load(f)


def save(path: str, results: Dict[str, Dict[str, object]]) -> None:
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(dict(sorted(results.items())), f, indent=1)
    f.write('\n')


def passing_here_of_215(reference: Dict[str, object],
                        here: Dict[str, object]
                        ) -> Tuple[List[str], Dict[str, str]]:
  """The tests that pass on 2.15; of those, the reason each that does not
  pass here fails (a test missing here fails as `not run`)."""
  passing = sorted(k for k, t in reference['tests'].items()
                   if t['outcome'] == 'passed')
  failing = {}
  for key in passing:
    result = here['tests'].get(key)
    if result is None:
      error = here['files'].get(key.split('::')[0], {}).get('error')
      failing[key] = error or 'not run'
    elif result['outcome'] != 'passed':
      failing[key] = result.get('reason', result['outcome'])
  return passing, failing


def _normalize(reason: str) -> str:
  reason = re.sub(r'/tmp/\S+', '/tmp/…', reason)
  reason = re.sub(r'0x[0-9a-f]+', '0x…', reason)
  return re.sub(r'\b\d+(\.\d+)?(e-?\d+)?\b', 'N', reason)


def table(reference_all: Dict[str, Dict[str, object]],
          here_all: Dict[str, Dict[str, object]]) -> str:
  lines = ['# Libraries built on tf.estimator: their own tests here', '',
           'Made by `scripts/tf_estimator_215/run_library_tests.py` (see its '
           'docstring). Only the tests that pass on tf.estimator 2.15 '
           'count.', '']
  for name in sorted(set(reference_all) & set(here_all)):
    reference, here = reference_all[name], here_all[name]
    lines += [f'## {name} ({LIBRARIES[name].requirement})', '',
              f"- 2.15: {_describe(reference)}",
              f"- estimator_rt: {_describe(here)}", '',
              '| file | tests on 2.15 | passing on 2.15 | passing here |',
              '| --- | ---: | ---: | ---: |']
    passing, failing = passing_here_of_215(reference, here)
    for file in sorted(set(reference['files']) | set(here['files'])):
      of_file = [k for k in passing if k.split('::')[0] == file]
      ref_entry = reference['files'].get(file, {})
      lines.append(
          f"| {file} | {ref_entry.get('tests', 0)} | {len(of_file)} | "
          f"{len([k for k in of_file if k not in failing])} |")
    lines.append(f'| **all** | | **{len(passing)}** | '
                 f'**{len(passing) - len(failing)}** |')
    if failing:
      lines += ['', 'Passing on 2.15, not here, by reason:', '']
      by_reason = collections.defaultdict(list)
      for key, reason in sorted(failing.items()):
        by_reason[re.sub(r'/tmp/[^ ,:]+', '/tmp/…', reason)].append(
            key.split('::', 1)[1])
      for reason, keys in sorted(by_reason.items(), key=lambda i: -len(i[1])):
        lines.append(f"- {len(keys)}: {reason} ({', '.join(keys)})")
    errors = {f: e['error'] for f, e in reference['files'].items()
              if e.get('error')}
    if errors:
      lines += ['', 'Files that run no test on 2.15:', '']
      lines += [f'- `{f}`: {e}' for f, e in sorted(errors.items())]
    not_215 = collections.defaultdict(list)
    for key, result in sorted(reference['tests'].items()):
      if result['outcome'] == 'failed':
        not_215[_normalize(result.get('reason', ''))].append(
            key.split('::', 1)[1])
    if not_215:
      lines += ['', 'Failing on 2.15 (not counted), by reason:', '']
      lines += [f"- {len(keys)}: {reason} ({', '.join(keys)})"
                for reason, keys in sorted(not_215.items(),
                                           key=lambda i: -len(i[1]))]
    lines.append('')
  return '\n'.join(lines)


def _describe(results: Dict[str, object]) -> str:
  versions = ', '.join(f'{k} {v}' for k, v in
                       sorted(results.get('versions', {}).items()))
  seconds = sum(r['seconds'] for r in results.get('runs', []))
  return (f"{versions}; run on {results.get('date', '?')}"
          f"{' at ' + results['commit'] if results.get('commit') else ''}; "
          f'{seconds:.0f} s')


def _git_head() -> str:
  try:
    return subprocess.run(['git', '-C', _REPO_ROOT, 'rev-parse', '--short',
                           'HEAD'], capture_output=True, text=True,
                          check=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return ''


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('libraries', nargs='*', metavar='LIBRARY',
                      help=f'of {sorted(LIBRARIES)} (default: all)')
  parser.add_argument('--215', dest='reference', action='store_true',
                      help='run on tf.estimator 2.15 (the reference)')
  parser.add_argument('--python', help='interpreter of the children '
                      '(default: .venv-libraries or, with --215, '
                      '.venv-tf215-libraries)')
  parser.add_argument('--timeout', type=float, default=1800,
                      help='seconds a file may run (default 1800)')
  parser.add_argument('--logs', help='directory for each file\'s output')
  parser.add_argument('--source', action='append', default=[],
                      metavar='NAME=DIR', help='the checkout the tests of '
                      'library NAME come from (for those without tests in '
                      'their wheel)')
  parser.add_argument('--report-only', action='store_true')
  args = parser.parse_args(argv)
  target = TARGET_215 if args.reference else TARGET_HERE
  if not args.report_only:
    python = args.python or (PYTHON_215 if args.reference else PYTHON_HERE)
    if args.logs:
      os.makedirs(args.logs, exist_ok=True)
    path = results_path(target)
    results = load(path)
    for name in args.libraries or sorted(LIBRARIES):
      if name not in LIBRARIES:
        parser.error(f'unknown library {name!r}; known: {sorted(LIBRARIES)}')
      sources = dict(item.split('=', 1) for item in args.source)
      result = run_library(name, target, python, args.timeout, args.logs,
                           sources.get(name))
      result['date'] = datetime.date.today().isoformat()
      if target == TARGET_HERE:
        result['commit'] = _git_head()
      results[name] = result
      counts = collections.Counter(t['outcome']
                                   for t in result['tests'].values())
      print(f'{name}: {dict(counts)} in '
            f"{sum(r['seconds'] for r in result['runs']):.0f} s; " + ', '.join(
                f"{f} {e['passed']}/{e['tests']}"
                + (f" ({e['error']})" if e.get('error') else '')
                for f, e in result['files'].items()), flush=True)
    save(path, results)
  text = table(load(results_path(TARGET_215)), load(results_path(TARGET_HERE)))
  with open(TABLE, 'w', encoding='utf-8') as f:
    f.write(text)
  print(text)


if __name__ == '__main__':
  main(sys.argv[1:])
