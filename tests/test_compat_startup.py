"""The import hook's parts that need no fresh process (tests/test_installed.py
runs the hook itself, installed): what it serves, and how the Keras choice
reads a program and leaves the user's setting alone."""

import os

from estimator_rt.core import user_fns
from estimator_rt.compat import finder
from estimator_rt.compat import keras_choice
from estimator_rt.compat import program_code
from estimator_rt.compat import startup


def test_the_hook_serves_every_module_path_the_layer_serves():
  """A module the compatibility layer serves that the hook would not see
  imported before tf.estimator is served would fail there."""
  roots = (finder.ROOT, finder.TF_PACKAGE, *finder.REMOVED_TF_MODULES)
  for root in roots:
    assert any(root == served or root.startswith(served + '.')
               for served in startup.SERVED_ROOTS), root


def test_a_file_counts_when_its_code_uses_tf_estimator(tmp_path):
  programs = {
      'aliased.py': ('import tensorflow.compat.v1 as tf1\n'
                     'spec = tf1.estimator.EstimatorSpec\n', True),
      'module_path.py': ('from tensorflow_estimator.python.estimator '
                         'import run_config\n', True),
      'from_import.py': ('from tensorflow import estimator as tfe\n', True),
      'sklearn_like.py': ('class Search:\n  def fit(self, x):\n'
                          '    return self.estimator.fit(x)\n', False),
      'comment.py': ('import tensorflow as tf\n# was tf.estimator once\n'
                     'print("tf.estimator")\n', False),
      'broken.py': ('tf.estimator.Estimator(\n', False),
  }
  for name, (source, expected) in programs.items():
    path = tmp_path / name
    path.write_text(source)
    assert (keras_choice.first_use([str(path)]) is not None) is expected, name


def _write(path, text=''):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(text)
  return str(path)


def test_a_programs_own_modules_count_wherever_they_are_imported(tmp_path):
  """The main file's own modules, reached through packages, relative
  imports and imports inside functions, are read; installed code and
  modules the program does not import are not."""
  app = tmp_path / 'app'
  main = _write(app / 'train.py', 'import tensorflow as tf\n'
                'from pipeline import run\nrun()\n')
  _write(app / 'pipeline' / '__init__.py', 'from .steps import run\n')
  _write(app / 'pipeline' / 'steps.py',
         'def run():\n  from . import model\n  return model.build()\n')
  _write(app / 'pipeline' / 'model.py',
         'import tensorflow.compat.v1 as tf\n\n\ndef build():\n'
         '  return tf.estimator.Estimator(model_fn=None)\n')
  _write(app / 'unrelated.py', 'import tensorflow as tf\ntf.estimator\n')
  program = program_code.of_main_file(main, path_entries=[])
  assert [os.path.relpath(f, str(app)) for f in program.files] == [
      'train.py', os.path.join('pipeline', '__init__.py'),
      os.path.join('pipeline', 'steps.py'),
      os.path.join('pipeline', 'model.py')]
  keras, reason = keras_choice.decide(program)
  assert keras == keras_choice.KERAS_2
  assert 'tf.compat.v1.estimator.Estimator, ' in reason, reason
  assert reason.endswith('model.py:5)'), reason

  # The same module installed (in site-packages) is not the program's own.
  site = tmp_path / 'venv' / 'lib' / 'site-packages'
  _write(site / 'lib_model.py', 'import tensorflow as tf\ntf.estimator\n')
  other = _write(app / 'serve.py', 'import lib_model\nimport json\n')
  program = program_code.of_main_file(other, path_entries=[str(site)])
  assert program.files == [os.path.realpath(other)]
  assert keras_choice.decide(program)[0] == keras_choice.KERAS_3


def test_a_pytest_run_reads_the_test_files_under_its_paths(tmp_path):
  """`pytest tests -k Estimator` from a repository's root: the test files
  (not the option's value) and the package they import; without paths,
  the configuration's testpaths."""
  repo = tmp_path / 'repo'
  _write(repo / 'lib' / '__init__.py')
  _write(repo / 'lib' / 'layers.py', 'import tensorflow as tf\n')
  _write(repo / 'lib' / 'est.py',
         'import tensorflow as tf\nmake = tf.estimator.Estimator\n')
  _write(repo / 'tests' / '__init__.py')
  _write(repo / 'tests' / 'layers_test.py', 'from lib import layers\n')
  _write(repo / 'tests' / 'models_test.py', 'from lib.est import make\n')
  _write(repo / 'tests' / 'helper.py', 'import tensorflow as tf\n')
  _write(repo / 'docs' / 'test_docs.py', 'import os\n')
  run = program_code.of_pytest_run(['tests', '-k', 'Estimator', '-q'],
                                   cwd=str(repo), path_entries=[])
  assert run.description == 'pytest tests'
  read = {os.path.relpath(f, str(repo)) for f in run.files}
  assert read == {os.path.join(*p) for p in (
      ('tests', '__init__.py'), ('tests', 'layers_test.py'),
      ('tests', 'models_test.py'), ('lib', '__init__.py'),
      ('lib', 'layers.py'), ('lib', 'est.py'))}, read
  keras, reason = keras_choice.decide(run)
  assert keras == keras_choice.KERAS_2 and 'est.py:2' in reason, reason

  # A node id counts as its file; no path: setup.cfg's testpaths.
  run = program_code.of_pytest_run(['tests/layers_test.py::test_add'],
                                   cwd=str(repo), path_entries=[])
  assert keras_choice.decide(run)[0] == keras_choice.KERAS_3
  _write(repo / 'setup.cfg', '[metadata]\nname = lib\n[tool:pytest]\n'
         'testpaths =\n    docs\n')
  run = program_code.of_pytest_run([], cwd=str(repo), path_entries=[])
  assert [os.path.basename(f) for f in run.files] == ['test_docs.py']


def test_the_users_keras_setting_is_never_changed(monkeypatch, tmp_path):
  program = program_code.of_main_file(
      _write(tmp_path / 'program.py',
             'import tensorflow as tf\ntf.estimator.RunConfig()\n'),
      path_entries=[])
  for value in ('0', '1', 'false'):
    monkeypatch.setenv(keras_choice.VARIABLE, value)
    keras_choice.choose_for_program(program)
    keras_choice.choose_on_first_use()
    assert os.environ[keras_choice.VARIABLE] == value


def test_estimator_rt_own_binaries_are_not_tf_estimator_programs():
  """The runner's and the binary's main files are no program's own code
  (the runner sets the variable itself; the binary leaves the user's)."""
  here = os.path.dirname(os.path.abspath(keras_choice.__file__))
  for main in (os.path.join(here, '__main__.py'),
               os.path.join(os.path.dirname(here), 'main.py')):
    assert program_code.of_main_file(main).files == [], main


def test_only_the_bundled_names_fall_back_to_the_installed_copies():
  # A checkout (this one) has model_fns at its top: it is the one used.
  assert user_fns.bundled_fallback('model_fns.mlp') == 'model_fns.mlp'
  assert user_fns.bundled_fallback('my_model_fns.mlp') == 'my_model_fns.mlp'
  assert user_fns.bundled_fallback('json') == 'json'
