"""Libraries built on tf.estimator, run unchanged on estimator_rt.

Each program of tests/libraries/ uses one library's estimator API as its
users do, and runs here under `python -m estimator_rt.compat` in a fresh
process; where tf.estimator 2.15 ran the same program
(tests/data/tf_estimator_215/libraries.json, from
scripts/tf_estimator_215/libraries_reference.py) its figures must be
2.15's. A library's own tests, from its wheel, run through
scripts/tf_estimator_215/run_library_tests.py and must pass wherever they
pass on 2.15 (tests/data/tf_estimator_215/library_tests.json).

A library that is not installed is skipped: `make test` installs TF-Ranking
and DeepCTR into .venv (`pip install --no-deps`, they pin old TensorFlow
releases), and TF-GAN with tensorflow-probability into .venv-libraries, an
environment that sees all of .venv; TF-GAN runs there with the library
harness (scripts/tf_estimator_215/library_harness/: `inspect.getargspec`,
which Python 3.11 removed and TF-GAN calls, given back on both sides).
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, 'libraries')
REPO = os.path.dirname(HERE)
with open(os.path.join(HERE, 'data', 'tf_estimator_215',
                       'libraries.json')) as f:
  REFERENCE = json.load(f)

sys.path.insert(0, os.path.join(REPO, 'scripts', 'tf_estimator_215'))
import run_library_tests  # pylint: disable=g-import-not-at-top,wrong-import-position

LIBRARIES_PYTHON = run_library_tests.PYTHON_HERE


def _installed(module: str) -> bool:
  try:
    return importlib.util.find_spec(module) is not None
  except ModuleNotFoundError:
    return False


def _in_libraries_venv(module: str) -> bool:
  """Whether .venv-libraries (`make test` makes it) imports `module`."""
  return os.path.exists(LIBRARIES_PYTHON) and subprocess.run(
      [LIBRARIES_PYTHON, '-c', f'import importlib.util, sys; sys.exit('
       f'importlib.util.find_spec({module!r}) is None)'],
      capture_output=True, timeout=120, check=False).returncode == 0


def _run(name: str, tmp_path, python: str = sys.executable,
         path: str = REPO) -> dict:
  """The program's RESULT under the compatibility runner."""
  done = subprocess.run(
      [python, '-m', 'estimator_rt.compat',
       os.path.join(PROGRAMS, f'{name}_program.py'), str(tmp_path / 'm')],
      capture_output=True, text=True, timeout=600, cwd=REPO,
      env=dict(os.environ, PYTHONPATH=path, TF_CPP_MIN_LOG_LEVEL='2'))
  results = [l for l in done.stdout.splitlines() if l.startswith('RESULT ')]
  assert done.returncode == 0 and results, done.stderr[-4000:]
  return json.loads(results[-1][len('RESULT '):])


@pytest.mark.skipif(not _installed('tensorflow_ranking'),
                    reason='TF-Ranking is not installed')
def test_tf_ranking_dnn_ranking_estimator_gives_2_15s_ndcg(tmp_path):
  result = _run('tfranking', tmp_path)
  reference = REFERENCE['tfranking']
  assert result['global_step'] == reference['global_step'] == 30
  assert result['metrics'] == reference['metrics']
  # make_dnn_ranking_estimator takes no RunConfig, so its init is unseeded
  # on both sides: the NDCG is 2.15's in most runs, and moved by 0.004 in
  # one CI run of about 30; it learns the ranking either way.
  assert result['ndcg'] == pytest.approx(reference['ndcg'], abs=0.01)
  assert result['predictions'] == reference['predictions']
  assert result['scores_shape'] == reference['scores_shape']


_TF_GAN = pytest.mark.skipif(
    not _in_libraries_venv('tensorflow_gan'),
    reason='TF-GAN is not installed in .venv-libraries (make test installs '
    'it, with tensorflow-probability)')


@_TF_GAN
def test_tf_gan_gan_estimator_trains_evaluates_and_predicts(tmp_path):
  """TF-GAN's model_fn refuses eager execution with its own ValueError:
  it runs in the graph engine, as under tf.estimator. (2.15 ran the
  program as well, with the same harness; its figures are unseeded.)"""
  result = _run('tfgan', tmp_path, LIBRARIES_PYTHON,
                os.pathsep.join([run_library_tests.HARNESS, REPO]))
  assert result['global_step'] == 10
  assert len(result['predictions']) == 4
  assert all(len(p) == 3 for p in result['predictions'])


@pytest.mark.skipif(not _installed('deepctr'),
                    reason='DeepCTR is not installed')
def test_deepctr_deepfm_estimator_gives_2_15s_auc(tmp_path):
  """DeepCTR subclasses tf.estimator's v1 `canned.head._Head` and takes
  `canned.optimizers.get_optimizer_instance`, both by their
  `tensorflow.python.estimator` paths."""
  result = _run('deepctr', tmp_path)
  reference = REFERENCE['deepctr']
  assert result['global_step'] == reference['global_step'] == 50
  assert result['metrics'] == reference['metrics']
  assert result['auc'] == pytest.approx(reference['auc'], abs=1e-6)
  assert result['prediction_keys'] == reference['prediction_keys']
  assert result['predictions'] == reference['predictions']


@_TF_GAN
def test_tf_gan_own_estimator_tests_pass_where_they_pass_on_2_15():
  """TF-GAN 2.1.0's wheel's tensorflow_gan/python/estimator/*_test.py, run
  unchanged (tpu_gan_estimator_test.py as a program: it reads absl flags)."""
  with open(run_library_tests.REFERENCE) as f:
    reference = json.load(f)['tfgan']
  here = run_library_tests.run_library(
      'tfgan', run_library_tests.TARGET_HERE, LIBRARIES_PYTHON, timeout=600)
  passing, failing = run_library_tests.passing_here_of_215(reference, here)
  assert len(passing) == 43
  assert not failing
