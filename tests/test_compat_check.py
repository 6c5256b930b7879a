"""`python -m estimator_rt.compat --check DIR...` on a small codebase.

The codebase is written here: one file per way programs reach tf.estimator
(`import tensorflow as tf`, `import tensorflow.compat.v1 as tf`, `from
tensorflow import estimator as tfe`, `tensorflow_estimator` module paths,
`tensorflow.python.estimator` paths, aliases), a refused name, names with
documented differences, a TF 2.16 break, a file that does not parse and one
that must not be imported. The real CLI checks it once (one process, shared
by the tests that read its report); the exit codes 0 and 2 get runs of
their own. Refusal reasons are compared with what the layer itself says,
and the status of the paths the layer may serve or not
(`tensorflow.python.estimator.*`, `tf.compat.v2.compat.v1.estimator`) with
what the same import statements do in this process after install().
"""

import os
import re

import pytest

from conftest import run_python
from estimator_rt.compat import check
from estimator_rt.compat import differences
from estimator_rt.compat import scan

# file -> its lines. Every line holding a use ends with `# <name>` (the name
# the report must give) or `# -` (must not be reported); `_expected` reads
# them, so the line numbers cannot drift from the sources.
CODEBASE = {
    'tf_v2.py': [
        'import tensorflow as tf',
        'estimator = tf.estimator.Estimator(model_fn=None)  '
        '# tf.estimator.Estimator',
        'config = tf.estimator.RunConfig()  # tf.estimator.RunConfig',
        'tf.estimator.ModeKeys.TRAIN  # tf.estimator.ModeKeys',
        'tf.estimator.experimental.RNNClassifier  '
        '# tf.estimator.experimental.RNNClassifier',
        'tf.estimator.experimental.InMemoryEvaluatorHook  '
        '# tf.estimator.experimental.InMemoryEvaluatorHook',
        'tf.compat.v1.estimator.inputs.numpy_input_fn  '
        '# tf.compat.v1.estimator.inputs.numpy_input_fn',
        'tf.compat.v2.estimator.TrainSpec  # tf.compat.v2.estimator.TrainSpec',
        'tf.compat.v2.compat.v1.estimator.EvalSpec  '
        '# tf.compat.v2.compat.v1.estimator.EvalSpec',
        'tf.keras.estimator.model_to_estimator  '
        '# tf.keras.estimator.model_to_estimator',
        'tf.contrib.layers.xavier_initializer()  '
        '# tf.contrib.layers.xavier_initializer',
        'def train(estimator, tf=None):',
        '  estimator.train(input_fn=None)  # -',
        '  return tf.estimator  # -',
        'estimator.train  # -',
    ],
    'tf_v1.py': [
        'import tensorflow.compat.v1 as tf',
        'tf.estimator.DNNClassifier  # tf.compat.v1.estimator.DNNClassifier',
        'tf.estimator.tpu.TPUEstimator  '
        '# tf.compat.v1.estimator.tpu.TPUEstimator',
        'tf.estimator.experimental.KMeans  '
        '# tf.compat.v1.estimator.experimental.KMeans',
    ],
    'tf_compat_v2.py': [
        'import tensorflow.compat.v2 as tf',
        'tf.estimator.LinearRegressor  '
        '# tf.compat.v2.estimator.LinearRegressor',
        'import tensorflow as tf',
        'if tf.__version__ < "2":',
        '  pass',
        'else:',
        '  tf = tf.compat.v1',
        'tf.estimator.LinearRegressor  '
        '# tf.compat.v1.estimator.LinearRegressor',
    ],
    'from_imports.py': [
        'from tensorflow import estimator as tfe  # tf.estimator',
        'from tensorflow.compat.v1 import estimator  # tf.compat.v1.estimator',
        'tfe.export.PredictOutput  # tf.estimator.export.PredictOutput',
        'estimator.inputs.pandas_input_fn  '
        '# tf.compat.v1.estimator.inputs.pandas_input_fn',
        'from tensorflow.estimator import BestExporter  '
        '# tf.estimator.BestExporter',
        'exporter = BestExporter()  # tf.estimator.BestExporter',
        'hooks = tfe.experimental  # tf.estimator.experimental',
        'hooks.stop_if_no_decrease_hook  '
        '# tf.estimator.experimental.stop_if_no_decrease_hook',
        'import tensorflow as tf',
        'keras_tpu = tf.compat.v1.keras  # -',
        'keras_tpu.estimator.model_to_estimator  '
        '# tf.compat.v1.keras.estimator.model_to_estimator',
    ],
    'module_paths.py': [
        'import tensorflow_estimator as tf_estimator  # tensorflow_estimator',
        'tf_estimator.estimator.BaselineClassifier  '
        '# tensorflow_estimator.estimator.BaselineClassifier',
        'from tensorflow_estimator.python.estimator import estimator as '
        'estimator_lib  # tensorflow_estimator.python.estimator.estimator',
        'estimator_lib.Estimator  '
        '# tensorflow_estimator.python.estimator.estimator.Estimator',
        'estimator_lib._no_such_helper.__doc__  '
        '# tensorflow_estimator.python.estimator.estimator._no_such_helper',
        'from tensorflow_estimator.python.estimator.canned import head as '
        'head_lib  # tensorflow_estimator.python.estimator.canned.head',
        'from tensorflow_estimator.python.estimator.export import '
        'export_output  '
        '# tensorflow_estimator.python.estimator.export.export_output',
        'export_output.RegressionOutput  '
        '# tensorflow_estimator.python.estimator.export.export_output.'
        'RegressionOutput',
        'from tensorflow_estimator.python.estimator.canned.linear import '
        'LinearSDCA  '
        '# tensorflow_estimator.python.estimator.canned.linear.LinearSDCA',
        'import tensorflow_estimator.python.estimator.no_such_module  '
        '# tensorflow_estimator.python.estimator.no_such_module',
        'from tensorflow_estimator.python.estimator.canned.dnn import *  '
        '# tensorflow_estimator.python.estimator.canned.dnn',
    ],
    'tf_python.py': [
        'from tensorflow.python.estimator import estimator as estimator_lib  '
        '# tensorflow.python.estimator.estimator',
        'estimator_lib.Estimator  # tensorflow.python.estimator.estimator.'
        'Estimator',
        'from tensorflow.python.estimator.canned import head as head_lib  '
        '# tensorflow.python.estimator.canned.head',
        'from tensorflow.python.estimator.export.export_output import '
        'PredictOutput  '
        '# tensorflow.python.estimator.export.export_output.PredictOutput',
        'from tensorflow.python.estimator.canned.dnn import *  '
        '# tensorflow.python.estimator.canned.dnn',
    ],
    # Would leave a file behind if imported: the check must not import it.
    'never_imported.py': [
        'import os, tensorflow as tf',
        'open(os.path.join(os.path.dirname(__file__), "IMPORTED"), "w")',
        'tf.estimator.WarmStartSettings  # tf.estimator.WarmStartSettings',
    ],
    'sub/broken.py': [
        'import tensorflow as tf',
        'def f(:',
    ],
}

def _registry_file():
  """Every name differences.py documents, as a program would write it."""
  lines = ['import tensorflow as tf']
  for name in differences.DIFFERENCES:
    if name.startswith('tensorflow_estimator.'):
      module = name.rsplit('.', 1)[0]
      lines.append(f'import {module}  # {module}')
    lines.append(f'{name}  # {name}')
  return lines


CODEBASE['registry.py'] = _registry_file()

# Names the layer may serve or not (it is growing): their status must be
# what the same statements give a program here (see _what_a_program_gets).
UNSETTLED_NAMES = (
    'tf.compat.v2.compat.v1.estimator.EvalSpec',
    'tensorflow.python.estimator.estimator',
    'tensorflow.python.estimator.estimator.Estimator',
    'tensorflow.python.estimator.canned.head',
    'tensorflow.python.estimator.export.export_output.PredictOutput',
    'tensorflow.python.estimator.canned.dnn',
)
# The statements a program would run for each unsettled name.
UNSETTLED_CODE = {
    'tf.compat.v2.compat.v1.estimator.EvalSpec':
        'import tensorflow as tf\ntf.compat.v2.compat.v1.estimator.EvalSpec',
    'tensorflow.python.estimator.estimator':
        'from tensorflow.python.estimator import estimator',
    'tensorflow.python.estimator.estimator.Estimator':
        'from tensorflow.python.estimator import estimator\n'
        'estimator.Estimator',
    'tensorflow.python.estimator.canned.head':
        'from tensorflow.python.estimator.canned import head',
    'tensorflow.python.estimator.export.export_output.PredictOutput':
        'from tensorflow.python.estimator.export.export_output import '
        'PredictOutput',
    'tensorflow.python.estimator.canned.dnn':
        'from tensorflow.python.estimator.canned.dnn import *',
}

RUNS = 'runs here'
DIFFERS = 'runs with a documented difference'
REFUSED = 'refused'
TF_BREAK = 'breaks on TensorFlow 2.16+'
# name -> status, for every name CODEBASE reports, except UNSETTLED_NAMES.
STATUS = {
    'tf.estimator.Estimator': DIFFERS,
    'tf.estimator.RunConfig': DIFFERS,
    'tf.estimator.ModeKeys': RUNS,
    'tf.estimator.experimental.RNNClassifier': RUNS,
    'tf.estimator.experimental.InMemoryEvaluatorHook': DIFFERS,
    'tf.compat.v1.estimator.inputs.numpy_input_fn': DIFFERS,
    'tf.compat.v2.estimator.TrainSpec': RUNS,
    'tf.compat.v2.compat.v1.estimator.EvalSpec': DIFFERS,
    'tf.keras.estimator.model_to_estimator': DIFFERS,
    'tf.contrib.layers.xavier_initializer': TF_BREAK,
    'tf.compat.v1.estimator.DNNClassifier': DIFFERS,
    'tf.compat.v1.estimator.tpu.TPUEstimator': DIFFERS,
    'tf.compat.v1.estimator.experimental.KMeans': RUNS,
    'tf.compat.v2.estimator.LinearRegressor': RUNS,
    'tf.compat.v1.estimator.LinearRegressor': DIFFERS,
    'tf.estimator': RUNS,
    'tf.compat.v1.estimator': RUNS,
    'tf.estimator.export.PredictOutput': RUNS,
    'tf.compat.v1.estimator.inputs.pandas_input_fn': DIFFERS,
    'tf.estimator.BestExporter': RUNS,
    'tf.estimator.experimental': RUNS,
    'tf.estimator.experimental.stop_if_no_decrease_hook': RUNS,
    'tf.compat.v1.keras.estimator.model_to_estimator': DIFFERS,
    'tensorflow_estimator': RUNS,
    'tensorflow_estimator.estimator.BaselineClassifier': RUNS,
    'tensorflow_estimator.python.estimator.estimator': RUNS,
    'tensorflow_estimator.python.estimator.estimator.Estimator': DIFFERS,
    'tensorflow_estimator.python.estimator.estimator._no_such_helper':
        REFUSED,
    'tensorflow_estimator.python.estimator.canned.head': RUNS,
    'tensorflow_estimator.python.estimator.export.export_output': RUNS,
    'tensorflow_estimator.python.estimator.export.export_output.'
    'RegressionOutput': RUNS,
    'tensorflow_estimator.python.estimator.canned.linear.LinearSDCA':
        RUNS,
    'tensorflow_estimator.python.estimator.no_such_module': REFUSED,
    'tensorflow_estimator.python.estimator.canned.dnn': RUNS,
    'tf.estimator.WarmStartSettings': DIFFERS,
    'tensorflow_estimator.python.estimator.keras_lib': RUNS,
}
STATUS.update({name: DIFFERS for name in differences.DIFFERENCES})


def _write(root, files):
  for name, lines in files.items():
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
      f.write('\n'.join(lines) + '\n')


def _expected(files):
  """[(file, line, name)] of the uses the `# name` comments announce."""
  found = []
  for name in sorted(files):
    for number, line in enumerate(files[name], start=1):
      match = re.search(r'#\s*(\S+)\s*$', line)
      if match and match.group(1) != '-':
        found.append((name, number, match.group(1)))
  return found


def _check(cwd, *dirs):
  return run_python(['-m', 'estimator_rt.compat', '--check', *dirs],
                    cwd=str(cwd), timeout=300)


def _uses(stdout):
  """{(file, line): [(name, status, detail)]} from a report's use lines."""
  found = {}
  pattern = re.compile(r'^codebase/(\S+?):(\d+): (\S+): (' + '|'.join(
      re.escape(s) for s in (RUNS, DIFFERS, REFUSED, TF_BREAK)) +
                       r')(?:: (.*))?$')
  for line in stdout.splitlines():
    match = pattern.match(line)
    if match:
      file, number, name, status, detail = match.groups()
      found.setdefault((file, int(number)), []).append(
          (name, status, detail or ''))
  return found


@pytest.fixture(scope='module')
def report(tmp_path_factory):
  """The CLI's run over CODEBASE: (CompletedProcess, codebase dir)."""
  root = tmp_path_factory.mktemp('check')
  _write(str(root / 'codebase'), CODEBASE)
  result = _check(root, 'codebase')
  return result, root / 'codebase'


def _what_a_program_gets(code):
  """None if `code` runs after install(), else its error's first line."""
  import estimator_rt.compat  # pylint: disable=g-import-not-at-top
  estimator_rt.compat.install()
  try:
    exec(compile(code, '<program>', 'exec'), {})  # pylint: disable=exec-used
  except (AttributeError, ImportError) as e:
    return str(e).splitlines()[0]
  return None


def test_every_use_is_reported_at_its_line_with_its_status(report):
  result, _ = report
  assert result.returncode == 1, result.stdout + result.stderr[-3000:]
  uses = _uses(result.stdout)
  expected = _expected(CODEBASE)
  for file, line, name in expected:
    assert (file, line) in uses, (file, line, name, result.stdout)
    names = [u[0] for u in uses[(file, line)]]
    assert name in names, (file, line, names)
    status = dict((u[0], u[1]) for u in uses[(file, line)])[name]
    if name in UNSETTLED_NAMES:
      got = _what_a_program_gets(UNSETTLED_CODE[name])
      # A tensorflow.python.estimator path, served, is the same object as
      # its tensorflow_estimator twin, with the same status.
      twin = name.replace('tensorflow.python.estimator',
                          'tensorflow_estimator.python.estimator', 1)
      assert status == (STATUS.get(twin, RUNS) if got is None else REFUSED), (
          name, got)
    else:
      assert status == STATUS[name], (file, line, name, status)
  # Nothing else: no use where the comments announce none.
  reported = sum(len(v) for v in uses.values())
  assert reported == len(expected), result.stdout


def test_refusals_are_the_layers_own_lines(report):
  result, _ = report
  details = {u[0]: u[2] for found in _uses(result.stdout).values()
             for u in found}
  # The layer's AttributeError and ModuleNotFoundError, naming what fails.
  private = details[
      'tensorflow_estimator.python.estimator.estimator._no_such_helper']
  assert private.startswith('tensorflow_estimator.python.estimator.'
                            'estimator._no_such_helper is not provided by '
                            'estimator_rt'), private
  module = details['tensorflow_estimator.python.estimator.no_such_module']
  assert module.startswith('tensorflow_estimator.python.estimator.'
                           'no_such_module is not provided by estimator_rt'), (
                               module)


def test_differences_are_the_registrys_lines(report):
  result, _ = report
  details = {u[0]: u[2] for found in _uses(result.stdout).values()
             for u in found}
  registry = differences.DIFFERENCES
  assert details['tf.estimator.RunConfig'] == registry['tf.estimator.RunConfig']
  # Matched by object: 2.15's module path to Estimator is the same class.
  assert details['tensorflow_estimator.python.estimator.estimator.'
                 'Estimator'] == registry['tf.estimator.Estimator']
  assert details['tf.compat.v1.estimator.LinearRegressor'] == registry[
      'tf.compat.v1.estimator.LinearRegressor']
  assert details['tf.contrib.layers.xavier_initializer'].startswith(
      'tf.contrib was removed in TensorFlow 2.0')


def test_files_are_reported_in_order(report):
  """Directories walked in sorted order, a file's uses by line, a skipped
  file in its place."""
  result, _ = report
  files = []
  for line in result.stdout.splitlines():
    match = re.match(r'^codebase/(\S+?):(\d+): ', line)
    if match:
      files.append((match.group(1), int(match.group(2))))
  top = sorted(f for f in CODEBASE if '/' not in f)
  assert list(dict.fromkeys(f for f, _ in files)) == top + ['sub/broken.py']
  assert files == sorted(files, key=lambda f: (
      (top + ['sub/broken.py']).index(f[0]), f[1]))


def test_unparsable_file_is_reported_and_skipped_and_nothing_imported(report):
  result, codebase = report
  assert 'codebase/sub/broken.py:2: skipped: syntax error' in result.stdout
  assert not (codebase / 'IMPORTED').exists()


def test_summary_counts_uses_per_status_and_per_name(report):
  result, _ = report
  lines = result.stdout.splitlines()
  expected = _expected(CODEBASE)
  summary = next(l for l in lines if l.startswith('summary:'))
  tf_breaks = sum(1 for e in expected if STATUS.get(e[2]) == TF_BREAK)
  assert summary.startswith(
      f'summary: {len(CODEBASE)} files scanned, '
      f'{len(expected) - tf_breaks} uses of '), summary
  assert summary.endswith(', 1 skipped (not parsed)'), summary
  counts = {}
  for line in lines:
    match = re.match(r'^  (\S.*?)\s+(\d+)  ', line)
    if match and match.group(1) in (RUNS, DIFFERS, REFUSED, TF_BREAK):
      counts[match.group(1)] = int(match.group(2))
  statuses = [s for found in _uses(result.stdout).values()
              for _, s, _ in found]
  assert counts == {s: statuses.count(s)
                    for s in (RUNS, DIFFERS, REFUSED, TF_BREAK)}, counts
  # tf.estimator.BestExporter: imported on one line, called on another.
  assert re.search(r'^\s+2  runs here\s+tf\.estimator\.BestExporter$',
                   result.stdout, re.M), result.stdout
  assert lines[-1].endswith('refused (exit 1)'), lines[-1]


def test_exit_0_when_every_use_runs(tmp_path):
  """Differences run; a TF 2.16 break and an unparsable file are shown but
  are not tf.estimator uses refused."""
  _write(str(tmp_path / 'codebase'), {
      'ok.py': ['import tensorflow as tf',
                'tf.estimator.RunConfig()',
                'tf.estimator.LinearClassifier',
                'tf.contrib.slim'],
      'py2.py': ['print "hello"'],
  })
  # ok.py twice (in its DIR, and by name): checked once.
  result = _check(tmp_path, 'codebase', 'codebase/ok.py')
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]
  uses = _uses(result.stdout)
  assert uses[('ok.py', 2)] == [('tf.estimator.RunConfig', DIFFERS,
                                 differences.DIFFERENCES[
                                     'tf.estimator.RunConfig'])]
  assert uses[('ok.py', 3)] == [('tf.estimator.LinearClassifier', RUNS, '')]
  assert uses[('ok.py', 4)][0][:2] == ('tf.contrib.slim', TF_BREAK)
  assert 'codebase/py2.py:1: skipped: syntax error' in result.stdout
  assert result.stdout.count('codebase/ok.py:2: ') == 1, result.stdout
  # The Keras each path gets: `python FILE`, and `pytest DIR` (no test
  # file there: nothing read).
  assert ('keras: python codebase/ok.py: Keras 2 (tf_keras): the code of '
          'ok.py uses tf.estimator (tf.estimator.RunConfig, codebase/ok.py:2)'
          in result.stdout), result.stdout
  assert ('keras: pytest codebase: Keras 3: the code of pytest codebase does '
          'not use tf.estimator (0 files read)' in result.stdout), result.stdout
  assert 'summary: 2 files scanned, 2 uses of 2 tf.estimator names, ' \
      '1 skipped (not parsed)' in result.stdout, result.stdout
  assert result.stdout.splitlines()[-1] == (
      'result: every tf.estimator use runs here (exit 0)')


@pytest.mark.parametrize('args,message', [
    ([], 'error: --check needs at least one DIR to scan'),
    (['no_such_dir'], "error: --check: DIR 'no_such_dir' does not exist"),
    (['.', 'no_such_dir'], "error: --check: DIR 'no_such_dir' does not exist"),
])
def test_exit_2_on_bad_arguments(tmp_path, args, message):
  result = _check(tmp_path, *args)
  assert result.returncode == 2, result.stdout + result.stderr
  assert result.stderr.strip().splitlines()[-1] == message, result.stderr
  assert result.stdout == ''


def test_every_registered_difference_is_reported_with_its_line(report):
  """The registry cannot drift: each of its names resolves to a real
  object, which the check reports with the registry's line (registry.py
  in CODEBASE uses them all)."""
  result, _ = report
  found = {u[0]: (u[1], u[2]) for v in _uses(result.stdout).values()
           for u in v}
  for name, difference in differences.DIFFERENCES.items():
    assert found.get(name) == (DIFFERS, difference), (name, found.get(name))


@pytest.mark.parametrize('source,expected', [
    ('import tensorflow as tf\ntf.estimator.Estimator',
     ['tensorflow.estimator.Estimator']),
    ('import tensorflow.compat.v1 as tf\ntf.estimator.Estimator',
     ['tensorflow.compat.v1.estimator.Estimator']),
    ('import tensorflow.compat.v2 as tf\ntf.compat.v1.estimator.X',
     ['tensorflow.compat.v2.compat.v1.estimator.X']),
    ('import tensorflow\ntensorflow.compat.v2.estimator.X',
     ['tensorflow.compat.v2.estimator.X']),
    ('from tensorflow import estimator as tfe\ntfe.X',
     ['tensorflow.estimator', 'tensorflow.estimator.X']),
    ('from tensorflow.compat.v1 import estimator\nestimator.X',
     ['tensorflow.compat.v1.estimator', 'tensorflow.compat.v1.estimator.X']),
    ('import tensorflow as tf\ntf.keras.estimator.model_to_estimator(m)',
     ['tensorflow.keras.estimator.model_to_estimator']),
    ('import tensorflow_estimator as te\nte.estimator.X',
     ['tensorflow_estimator', 'tensorflow_estimator.estimator.X']),
    ('import tensorflow_estimator.python.estimator.canned.dnn\n'
     'tensorflow_estimator.python.estimator.canned.dnn.X',
     ['tensorflow_estimator.python.estimator.canned.dnn',
      'tensorflow_estimator.python.estimator.canned.dnn.X']),
    ('from tensorflow.python.estimator.canned import head as h\nh._f()',
     ['tensorflow.python.estimator.canned.head',
      'tensorflow.python.estimator.canned.head._f']),
    ('from tensorflow.python.estimator.export.export import *',
     ['tensorflow.python.estimator.export.export']),
    ('import tensorflow as tf\nE = tf.estimator.Estimator\nE(f)',
     ['tensorflow.estimator.Estimator', 'tensorflow.estimator.Estimator']),
    # Rebinding to anything else ends the alias; a parameter shadows it.
    ('import tensorflow as tf\ntf = make()\ntf.estimator.X', []),
    ('from tensorflow import estimator\n'
     'def f(estimator):\n  estimator.train()',
     ['tensorflow.estimator']),
    ('from tensorflow import estimator\n'
     'def f():\n  estimator = build()\n  estimator.train()',
     ['tensorflow.estimator']),
    ('import tensorflow as tf\nclass C:\n  tf = 1\n  def m(self):\n'
     '    return tf.estimator.X',
     ['tensorflow.estimator.X']),
    ('import tensorflow as tf\nf = lambda tf: tf.estimator', []),
    ('import tensorflow as tf\ndel tf\ntf.estimator.X', []),
    ('import tensorflow as tf\n[tf.estimator for tf in xs]', []),
    ('from . import estimator\nestimator.X', []),
    ('import tensorflow as tf\ntf.estimator_thing.X', []),
    ('import tensorflow as tf\ntf.contrib.layers.l2_regularizer(1.0)',
     ['tensorflow.contrib.layers.l2_regularizer']),
    ('import keras\nkeras.estimator.model_to_estimator',
     ['keras.estimator.model_to_estimator']),
    ('"tf.estimator.Estimator"  # tf.estimator.Estimator', []),
])
def test_scan_resolves_aliases(source, expected):
  assert [u.qualified for u in scan.scan_source(source)] == expected


@pytest.mark.parametrize('written,failed,reported', [
    ('tensorflow.python.estimator.canned.dnn', 3,
     'tensorflow.python.estimator.canned.dnn'),
    ('tensorflow.compat.v2.compat.v1.estimator.EvalSpec.__init__', 6,
     'tensorflow.compat.v2.compat.v1.estimator.EvalSpec'),
    ('tensorflow_estimator.python.estimator.run_config.TaskType.WORKER', 5,
     'tensorflow_estimator.python.estimator.run_config.TaskType'),
    ('tensorflow_estimator.python.estimator.canned.head._regression_head.x',
     6, 'tensorflow_estimator.python.estimator.canned.head._regression_head'),
])
def test_a_name_that_does_not_resolve_is_cut_after_its_module_path(
    written, failed, reported):
  """`written`'s part number `failed` (1-based) does not resolve: the name
  reported ends at the first part not named as modules are."""
  parts = written.split('.')
  length = check._failed_name_length(parts, failed)  # pylint: disable=protected-access
  assert '.'.join(parts[:length]) == reported


def test_a_tf1_only_name_in_the_tf2_namespace_names_its_v1_place():
  """`tf.estimator.inputs` was TensorFlow 1's (DeepCTR reaches it on its
  TF1 branch): refused, saying 2.15's TF2 API lacked it too and where TF2
  programs found it; a name in neither namespace keeps the layer's
  message."""
  checker = check.Classifier()
  name, status, detail = checker.classify(
      'tensorflow.estimator.inputs.pandas_input_fn')
  assert (name, status) == ('tf.estimator.inputs.pandas_input_fn',
                            check.REFUSED)
  assert detail == (
      "not in tf.estimator 2.15's TF2 API either (TensorFlow 2 programs used "
      'tf.compat.v1.estimator.inputs.pandas_input_fn, which runs here)')
  _, status, detail = checker.classify('tensorflow.estimator.NoSuchName')
  assert status == check.REFUSED and 'TF2 API either' not in detail
