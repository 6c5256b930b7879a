"""The import hook's parts that need no fresh process (tests/test_installed.py
runs the hook itself, installed): what it serves, and how the Keras choice
reads a program and leaves the user's setting alone."""

import os

from estimator_rt.core import user_fns
from estimator_rt.compat import finder
from estimator_rt.compat import keras_choice
from estimator_rt.compat import startup


def test_the_hook_serves_every_module_path_the_layer_serves():
  """A module the compatibility layer serves that the hook would not see
  imported before tf.estimator is served would fail there."""
  roots = (finder.ROOT, finder.TF_PACKAGE, *finder.REMOVED_TF_MODULES)
  for root in roots:
    assert any(root == served or root.startswith(served + '.')
               for served in startup.SERVED_ROOTS), root


def test_the_main_file_counts_when_its_code_uses_tf_estimator(tmp_path):
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
    assert keras_choice.main_file_uses_tf_estimator(str(path)) is expected, (
        name)


def test_the_users_keras_setting_is_never_changed(monkeypatch, tmp_path):
  program = tmp_path / 'program.py'
  program.write_text('import tensorflow as tf\ntf.estimator.RunConfig()\n')
  for value in ('0', '1', 'false'):
    monkeypatch.setenv(keras_choice.VARIABLE, value)
    keras_choice.choose_for_main_program(str(program))
    keras_choice.choose_on_first_use()
    assert os.environ[keras_choice.VARIABLE] == value


def test_estimator_rt_own_binaries_are_not_tf_estimator_programs(
    monkeypatch):
  """The runner's and the binary's main files choose no Keras (the runner
  sets it itself; the binary leaves the user's)."""
  monkeypatch.delenv(keras_choice.VARIABLE, raising=False)
  here = os.path.dirname(os.path.abspath(keras_choice.__file__))
  for main in (os.path.join(here, '__main__.py'),
               os.path.join(os.path.dirname(here), 'main.py')):
    keras_choice.choose_for_main_program(main)
    assert keras_choice.VARIABLE not in os.environ, main


def test_only_the_bundled_names_fall_back_to_the_installed_copies():
  # A checkout (this one) has model_fns at its top: it is the one used.
  assert user_fns.bundled_fallback('model_fns.mlp') == 'model_fns.mlp'
  assert user_fns.bundled_fallback('my_model_fns.mlp') == 'my_model_fns.mlp'
  assert user_fns.bundled_fallback('json') == 'json'
