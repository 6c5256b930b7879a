"""Runs TensorFlow's own published tf.estimator programs, unchanged, under
tf.estimator 2.15 and under estimator_rt, and prints what each side did.

    python scripts/tf_estimator_215/run_public_programs.py --source DOCS \
        [--compat_python PY] [--plain_python PY] [--sides SIDE,...] \
        [--programs NAME,...] [--json OUT]

DOCS is a checkout of tensorflow/docs (the programs are fetched code: they
are read from there and never committed). Each program is the tf.estimator
part of a notebook of the TensorFlow 2 migration guides or of the Estimator
tutorials (`PROGRAMS`): its setup cells and its "TensorFlow 1" cells, with
the notebooks' shell lines (`!pip`, `%tensorboard`) and plotting left out,
and the value of a cell's last expression printed, as a notebook shows it.
Nothing of the program's own code is changed. This machine has no network,
so a prelude replaces the three downloads the programs make with local
synthetic data of the same shapes and columns (`_PRELUDE`): MNIST
(`tf.keras.datasets.mnist.load_data`), the Titanic CSVs (`pandas.read_csv`
of their URLs) and the Iris CSVs (`tf.keras.utils.get_file`).

Each program runs in a fresh process on each side: with `.venv-tf215`'s
Python (tf.estimator 2.15) and with `--compat_python -m estimator_rt.compat`
(the environment must have pandas 2, which estimator_rt does not need: the
project's `.venv` leaves it out, see docs/getting-started.md; under pandas 3 the
canned-estimator guide's `df['sex'].replace(..., inplace=True)` changes
nothing, and its model then fails on string features on both sides). The
weights start unseeded in most programs, so the sides' metrics agree in
kind, not to the digit. Last results: `public_programs.json` beside this
script.

With --plain_python PY, a third side runs each program with plain `PY
program.py`: PY's environment has estimator_rt installed (its wheel,
scripts/installed_env.py), whose import hook serves tf.estimator and
chooses Keras, with TF_USE_LEGACY_KERAS unset. --sides picks the sides to
run (`tf_estimator_2.15`, `estimator_rt`, `estimator_rt_plain`); a --json
that exists keeps the other sides' results.
"""

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TF215_PYTHON = os.path.join(_REPO, '.venv-tf215', 'bin', 'python')
TIMEOUT_SECS = 900

# name -> (notebook in tensorflow/docs, what it exercises)
PROGRAMS = {
    'canned_estimators': (
        'site/en/guide/migrate/canned_estimators.ipynb',
        'LinearEstimator, DNNEstimator, DNNLinearCombinedEstimator with '
        'BinaryClassHead, Keras legacy Ftrl/Adam'),
    'checkpoint_saver': (
        'site/en/guide/migrate/checkpoint_saver.ipynb',
        'DNNClassifier, RunConfig checkpoint settings'),
    'evaluator': (
        'site/en/guide/migrate/evaluator.ipynb',
        'DNNClassifier, train_and_evaluate'),
    'tensorboard': (
        'site/en/guide/migrate/tensorboard.ipynb',
        'DNNClassifier, train_and_evaluate, summaries'),
    'fault_tolerance': (
        'site/en/guide/migrate/fault_tolerance.ipynb',
        'DNNClassifier interrupted by a SessionRunHook, resumed'),
    'migrating_feature_columns': (
        'site/en/guide/migrate/migrating_feature_columns.ipynb',
        'feature columns called outside an estimator, DNNClassifier on '
        'indicator, embedding and normalized numeric columns'),
    'premade': (
        'site/en/tutorials/estimator/premade.ipynb',
        'DNNClassifier on Iris: train, evaluate, predict'),
    'linear': (
        'site/en/tutorials/estimator/linear.ipynb',
        'LinearClassifier on Titanic, crossed columns, predict'),
}

_PRELUDE = '''
# --- run_public_programs.py prelude: local data instead of downloads ---
import numpy as _np
import tensorflow as _tf

def _mnist(*args, **kwargs):
  rng = _np.random.RandomState(0)
  def split(n):
    x = rng.randint(0, 256, (n, 28, 28)).astype(_np.uint8)
    y = (x[:, 14, :10].argmax(axis=1)).astype(_np.uint8)
    return x, y
  return split(60000), split(10000)

_tf.keras.datasets.mnist.load_data = _mnist

def _iris_csv(path, n, seed):
  rng = _np.random.RandomState(seed)
  species = rng.randint(0, 3, n)
  rows = [f"{n},4,setosa,versicolor,virginica"]
  for s in species:
    rows.append(",".join(f"{v:.1f}" for v in (
        5 + s * 0.8 + rng.normal(0, 0.3), 3 + rng.normal(0, 0.3),
        1.5 + s * 2 + rng.normal(0, 0.3), 0.2 + s * 0.8 + rng.normal(0, 0.1)))
        + f",{s}")
  with open(path, "w") as f:
    f.write("\\n".join(rows) + "\\n")

def _get_file(fname, origin=None, *args, **kwargs):
  import tempfile as _tempfile, os as _os
  path = _os.path.join(_tempfile.mkdtemp(), fname)
  _iris_csv(path, 120 if "training" in fname else 30,
            0 if "training" in fname else 1)
  return path

_tf.keras.utils.get_file = _get_file

import pandas as _pd
_read_csv = _pd.read_csv

def _titanic(path):
  rng = _np.random.RandomState(0 if "train" in path else 1)
  n = 627 if "train" in path else 264
  sex = rng.choice(["male", "female"], n)
  klass = rng.choice(["First", "Second", "Third"], n)
  survived = (rng.uniform(size=n) < _np.where(sex == "female", 0.7, 0.2)
              + _np.where(klass == "First", 0.15, 0.0)).astype(int)
  return _pd.DataFrame({
      "survived": survived, "sex": sex,
      "age": rng.uniform(1, 80, n).round(), "n_siblings_spouses":
      rng.randint(0, 4, n), "parch": rng.randint(0, 3, n),
      "fare": rng.uniform(5, 200, n).round(2), "class": klass,
      "deck": rng.choice(["unknown", "A", "B", "C", "D"], n),
      "embark_town": rng.choice(["Southampton", "Cherbourg", "Queenstown"], n),
      "alone": rng.choice(["y", "n"], n)})

def _patched_read_csv(path, *args, **kwargs):
  if "titanic" in str(path):
    return _titanic(str(path))
  return _read_csv(path, *args, **kwargs)

_pd.read_csv = _patched_read_csv
# --- end of prelude; the program follows, unchanged ---
'''

# Lines a script cannot run (notebook shell and magics) or that only draw.
_DROPPED_LINE = re.compile(
    r'^\s*([!%]|from IPython|import matplotlib|from matplotlib|'
    r'import tensorflow_decision_forests|ClearOutput\(|clear_output\()')
# Cells that only draw or inspect data with plotting libraries.
_DROPPED_CELL = re.compile(r'\.plot\(|\.hist\(|plt\.|roc_curve|sklearn')


def _sections(cells):
  """The code cells of the tf.estimator part: setup and "TensorFlow 1"
  sections, not the "TensorFlow 2" ones, and not the Keras preprocessing
  half of migrating_feature_columns."""
  keep = True
  for cell in cells:
    source = ''.join(cell['source'])
    if cell['cell_type'] == 'markdown':
      for line in source.splitlines():
        if line.startswith('##'):  # Sections, not the page's title.
          heading = line.lower()
          if 'tensorflow 2' in heading or 'keras preprocessing' in heading:
            keep = False
          elif ('tensorflow 1' in heading or 'example' in heading or
                'feature columns' in heading or 'setup' in heading):
            keep = True
      continue
    if keep and not _DROPPED_CELL.search(source):
      yield source


def _keras_only(source: str) -> bool:
  """A migrating_feature_columns cell that shows the Keras layer replacing
  a feature column (not tf.estimator code)."""
  return ('tf.keras.layers.' in source and 'feature_column' not in source
          and 'estimator' not in source)


def _as_script_cell(source: str) -> str:
  lines = [line for line in source.splitlines()
           if not _DROPPED_LINE.match(line)]
  source = '\n'.join(lines)
  try:
    tree = ast.parse(source)
  except SyntaxError:
    return source
  if tree.body and isinstance(tree.body[-1], ast.Expr):
    # A notebook shows the value of a cell's last expression.
    last = tree.body[-1]
    head = '\n'.join(lines[:last.lineno - 1])
    tail = '\n'.join(lines[last.lineno - 1:])
    return f'{head}\nprint(repr(({tail})))'
  return source


def program_text(docs: str, name: str) -> str:
  notebook, _ = PROGRAMS[name]
  with open(os.path.join(docs, notebook)) as f:
    cells = json.load(f)['cells']
  parts = [_PRELUDE]
  for source in _sections(cells):
    if source.lstrip().startswith('#@title Licensed'):
      continue
    if name == 'migrating_feature_columns' and _keras_only(source):
      continue
    parts.append(_as_script_cell(source))
  return '\n\n'.join(parts) + '\n'


def run_side(command, path: str) -> dict:
  start = time.time()
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  # Each side's own choices: the runner's, the import hook's.
  for name in ('PYTHONPATH', 'TF_USE_LEGACY_KERAS', 'ESTIMATOR_RT_COMPAT'):
    env.pop(name, None)
  try:
    result = subprocess.run(command + [path], cwd=os.path.dirname(path),
                            env=env, capture_output=True, text=True,
                            timeout=TIMEOUT_SECS, check=False)
    code, out, err = result.returncode, result.stdout, result.stderr
  except subprocess.TimeoutExpired as e:
    code, out, err = 'timeout', e.stdout or '', e.stderr or ''
    out = out.decode() if isinstance(out, bytes) else out
    err = err.decode() if isinstance(err, bytes) else err
  printed = [line for line in out.splitlines() if line.strip()]
  errors = [line for line in err.splitlines()
            if re.search(r'(Error|Exception)\b', line)]
  return {'exit': code, 'secs': round(time.time() - start, 1),
          'printed': printed[-12:], 'last_error': errors[-1:]}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--source', required=True,
                      help='a tensorflow/docs checkout')
  parser.add_argument('--compat_python', default=sys.executable,
                      help='Python with estimator_rt and pandas installed')
  parser.add_argument('--plain_python', default=None,
                      help='Python of an environment with estimator_rt '
                      'installed: runs the programs with plain `python`')
  parser.add_argument('--sides', default=None,
                      help='comma-separated sides to run (default: all)')
  parser.add_argument('--programs', default=','.join(PROGRAMS))
  parser.add_argument('--json', default=None, help='write the results here')
  args = parser.parse_args()
  sides = {'tf_estimator_2.15': [TF215_PYTHON],
           'estimator_rt': [args.compat_python, '-m', 'estimator_rt.compat']}
  if args.plain_python:
    sides['estimator_rt_plain'] = [args.plain_python]
  if args.sides:
    sides = {name: sides[name] for name in args.sides.split(',')}
  results = {}
  if args.json and os.path.exists(args.json):
    with open(args.json) as f:
      results = json.load(f)
  with tempfile.TemporaryDirectory() as scratch:
    for name in args.programs.split(','):
      results.setdefault(name, {})
      for side, command in sides.items():
        directory = os.path.join(scratch, name, side)
        os.makedirs(directory)
        # Not NAME.py: a program named like a module it imports
        # (tensorboard) would import itself.
        path = os.path.join(directory, 'program.py')
        with open(path, 'w') as f:
          f.write(program_text(args.source, name))
        results[name][side] = outcome = run_side(command, path)
        print(f'{name} [{side}]: exit {outcome["exit"]} in '
              f'{outcome["secs"]} s; {outcome["last_error"]}', flush=True)
        for line in outcome['printed'][-4:]:
          print(f'    {line[:200]}', flush=True)
  if args.json:
    with open(args.json, 'w') as f:
      json.dump(results, f, indent=1)


if __name__ == '__main__':
  main()
