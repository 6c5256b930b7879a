"""estimator_rt as a user meets it: the built wheel installed into a fresh
virtual environment, and programs run there with plain `python`.

One environment for the module (scripts/installed_env.py: the wheel built
from this checkout, installed `--no-deps` into a new venv that sees this
environment's packages through a path line, so that TensorFlow is not
installed again), and few fresh processes: each is what is tested here (an
interpreter started by a user, its .pth file, its children).
"""

import json
import os
import subprocess
import textwrap
import zipfile

import pytest

from scripts import installed_env

TIMEOUT_SECS = 300

# A tf.estimator program as written for TensorFlow <= 2.15: tf.estimator
# and tf.keras (Keras 2's legacy optimizer) in its main file, a fork child
# made before it imports TensorFlow and a spawn child, each of which imports
# a tensorflow_estimator module path first, then TensorFlow.
PROGRAM = '''
import json
import multiprocessing
import sys


def fit(model_dir):
  import numpy as np
  import tensorflow as tf
  x = np.arange(32, dtype=np.float32).reshape(-1, 1) / 32
  input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
      {'x': x}, 2 * x + 1, batch_size=8, num_epochs=None, shuffle=False)
  estimator = tf.estimator.LinearRegressor(
      [tf.feature_column.numeric_column('x')], model_dir=model_dir,
      optimizer=tf.keras.optimizers.legacy.Ftrl(0.5))
  estimator.train(input_fn, steps=5)
  return {'estimator': type(estimator).__module__,
          'global_step': int(estimator.get_variable_value('global_step')),
          'keras': tf.keras.optimizers.legacy.Ftrl.__module__}


def child(queue, model_dir):
  # tensorflow_estimator's module path before TensorFlow itself.
  from tensorflow_estimator.python.estimator import estimator as estimator_lib
  import tensorflow as tf
  queue.put({'v1': tf.compat.v1.estimator.Estimator.__module__,
             'same': estimator_lib.Estimator is tf.estimator.Estimator,
             **fit(model_dir)})


def in_child(method, model_dir):
  context = multiprocessing.get_context(method)
  queue = context.Queue()
  process = context.Process(target=child, args=(queue, model_dir))
  process.start()
  try:
    return queue.get(timeout=240)
  finally:
    process.join(timeout=60)


if __name__ == '__main__':
  model_dir = sys.argv[1]
  # Forked before this process imports TensorFlow (forking a process whose
  # TensorFlow runtime has started is unsafe): it inherits the hook.
  results = {'fork': in_child('fork', model_dir + '/fork')}
  results['main'] = fit(model_dir + '/main')
  results['spawn'] = in_child('spawn', model_dir + '/spawn')
  print('RESULT', json.dumps(results))
'''

# An image-classifier-like package whose predict module uses
# tf.compat.v1.estimator and tensorflow_estimator's module paths, imported by
# a program that says nothing of tf.estimator.
LIBRARY = '''
import tensorflow as tf
import tensorflow_estimator as tfe
from tensorflow.python.estimator import run_config


def describe():
  estimator = tf.compat.v1.estimator.LinearClassifier(
      [tf.feature_column.numeric_column('x')])
  return {'estimator': type(estimator).__module__,
          'same_namespace': tfe.estimator is tf.estimator,
          'run_config': run_config.RunConfig is tf.estimator.RunConfig,
          'keras': tf.keras.layers.Dense.__module__}
'''
LIBRARY_USER = '''
import json
import estimator_rt  # before TensorFlow: the hook serves either order
from classifier import predict
print('RESULT', json.dumps(predict.describe()))
'''

TEST_FILE = '''
import tensorflow as tf


def test_v1_estimator(tmp_path):
  estimator = tf.compat.v1.estimator.DNNClassifier(
      hidden_units=[2], feature_columns=[tf.feature_column.numeric_column('x')],
      model_dir=str(tmp_path))
  assert type(estimator).__module__.startswith('estimator_rt.')
  assert estimator.model_dir == str(tmp_path)
  # Chosen when tf.estimator was first used: the import path too.
  from tensorflow.keras.layers import Dense
  assert Dense.__module__.startswith('tf_keras.'), Dense.__module__
'''

# A TensorFlow program that never touches tf.estimator, but for a TF1 layer
# (tf_keras's, whichever Keras tf.keras is), until a module it finds at run
# time does, after tf.keras was resolved to Keras 3 (the marker on stderr
# between the two). A program whose own code uses tf.estimator gets Keras 2
# from the start (TF1_PROGRAM).
KERAS_PROGRAM = '''
import importlib
import json
import sys
import tensorflow as tf
layer = tf.keras.layers.Dense(1)
print('RESULT', json.dumps({
    'keras': type(layer).__module__,
    'v1_layer': tf.compat.v1.layers.Dense.__module__,
    'estimator_rt': sorted(m for m in sys.modules
                           if m.split('.')[0] == 'estimator_rt'),
    'has_estimator': hasattr(tf, 'estimator')}))
print('NOW TF.ESTIMATOR', file=sys.stderr, flush=True)
importlib.import_module('late_user').use()
assert type(tf.keras.layers.Dense(1)).__module__.startswith('keras.')
'''
LATE_USER = '''
import tensorflow as tf


def use():
  tf.estimator.RunConfig()
  tf.compat.v1.estimator.RunConfig()
'''

# A TF1-style program whose main file never names tf.estimator: its
# estimator code is in a module of its own, which subclasses a TF1 layer
# when imported (before any tf.estimator name is read).
TF1_PROGRAM = '''
import json
import sys
import tensorflow.compat.v1 as tf
from trainer import model
tf.disable_v2_behavior()
estimator = model.train(sys.argv[1])
print('RESULT', json.dumps({
    'keras': tf.keras.layers.Dense.__module__,
    'global_step': int(estimator.get_variable_value('global_step'))}))
'''
TF1_TRAINER = '''
import numpy as np
import tensorflow.compat.v1 as tf


class Normalization(tf.layers.BatchNormalization):
  pass


def model_fn(features, labels, mode):
  hidden = Normalization()(features['x'], training=True)
  loss = tf.losses.mean_squared_error(labels, tf.layers.dense(hidden, 1))
  train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def train(model_dir):
  x = np.linspace(0, 1, 16, dtype=np.float32).reshape(-1, 1)
  estimator = tf.estimator.Estimator(model_fn, model_dir=model_dir)
  estimator.train(tf.estimator.inputs.numpy_input_fn(
      {'x': x}, 2 * x, batch_size=8, shuffle=False), steps=2)
  return estimator
'''

# A library's repository, its tests run from its root as its CI runs them
# (`python -m pytest tests -k Estimator`): the first test module collected
# resolves tf.keras before any estimator is used, and the estimator's
# graph-mode model_fn calls a Keras layer whose class name starts with an
# underscore (DeepCTR's `_Add`): Keras 2 names its scope `private__add`,
# Keras 3 refuses `__add` as a root scope name.
LIBRARY_REPOSITORY = {
    'mylib/__init__.py': '',
    'mylib/layers.py': '''
import tensorflow as tf


class _Add(tf.keras.layers.Layer):

  def call(self, inputs):
    return tf.add_n(inputs)
''',
    'mylib/estimator.py': '''
import tensorflow as tf
from mylib.layers import _Add


def model_fn(features, labels, mode):
  x = features['x']
  predictions = _Add()([tf.compat.v1.layers.dense(x, 1), x])
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
''',
    'tests/__init__.py': '',
    'tests/layers_test.py': '''
import tensorflow as tf
from mylib.layers import _Add


def test_add():
  assert float(_Add()([tf.ones([1]), tf.ones([1])])[0]) == 2.0
''',
    'tests/v1_test.py': TEST_FILE,
    'tests/models_test.py': '''
import numpy as np
import tensorflow as tf
from mylib.estimator import model_fn


def test_MyEstimator(tmp_path):
  x = np.ones([8, 1], np.float32)
  estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(lambda: tf.data.Dataset.from_tensor_slices(
      ({'x': x}, 2 * x)).batch(4), steps=2)
  assert estimator.get_variable_value('global_step') == 2
''',
}

# With the hook off: plain TensorFlow 2.16+.
OFF_PROGRAM = '''
import json
import tensorflow as tf
try:
  import tensorflow_estimator
  imported = True
except ModuleNotFoundError:
  imported = False
print('RESULT', json.dumps({'has_estimator': hasattr(tf, 'estimator'),
                            'tensorflow_estimator': imported}))
'''


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
  """(the new environment's Python, the wheel)."""
  directory = str(tmp_path_factory.mktemp('installed'))
  wheel = installed_env.build_wheel(os.path.join(directory, 'wheel'))
  return installed_env.make_environment(directory, wheel=wheel), wheel


def _run(python, args, cwd, **env):
  """Runs `python args...` in `cwd` as a user would: no PYTHONPATH."""
  done = subprocess.run(
      [python] + list(args), cwd=str(cwd), capture_output=True, text=True,
      timeout=TIMEOUT_SECS,
      env=installed_env.clean_environment(dict(TF_CPP_MIN_LOG_LEVEL='2',
                                               **env)))
  results = [json.loads(line[len('RESULT '):])
             for line in done.stdout.splitlines() if line.startswith('RESULT ')]
  return done, (results[0] if results else None)


def _write(path, text):
  os.makedirs(os.path.dirname(str(path)), exist_ok=True)
  with open(str(path), 'w') as f:
    f.write(textwrap.dedent(text))
  return str(path)


def test_the_wheel_installs_estimator_rt_and_its_hook_only(installed):
  _, wheel = installed
  with zipfile.ZipFile(wheel) as archive:
    names = archive.namelist()
  top = {name.split('/')[0] for name in names}
  assert top == {'estimator_rt', 'estimator_rt_compat.pth',
                 'estimator_rt-0.1.0.dist-info'}, top
  for bundled in ('estimator_rt/model_fns/mlp.py',
                  'estimator_rt/input_fns/digits.py',
                  'estimator_rt/input_fns/data/digits.csv.gz'):
    assert bundled in names


def test_python_without_tensorflow_loads_the_hook_alone(installed, tmp_path):
  """A process that never imports TensorFlow has one estimator_rt module,
  the hook's; ESTIMATOR_RT_COMPAT=0 leaves it out too."""
  python, _ = installed
  code = ('import json, sys; print("RESULT", json.dumps(sorted('
          'm for m in sys.modules if m.split(".")[0] == "estimator_rt")))')
  for switch, expected in ((None, ['estimator_rt.compat.startup']),
                           ('0', [])):
    env = {} if switch is None else {'ESTIMATOR_RT_COMPAT': switch}
    done, modules = _run(python, ['-c', code], tmp_path, **env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert modules == expected, (switch, modules)


def test_a_tf_estimator_program_runs_with_plain_python(installed, tmp_path):
  """The program, its fork child and its spawn child get tf.estimator
  (estimator_rt's) and the Keras 2 the program meant."""
  python, _ = installed
  program = _write(tmp_path / 'program' / 'train.py', PROGRAM)
  done, results = _run(python, [program, str(tmp_path / 'model')], tmp_path)
  assert done.returncode == 0 and results, done.stderr[-4000:]
  for where in ('main', 'fork', 'spawn'):
    result = results[where]
    assert result['estimator'] == 'estimator_rt.estimator.canned.linear', where
    assert result['global_step'] == 5, where
    assert result['keras'].startswith('tf_keras.'), where
  for where in ('fork', 'spawn'):
    assert results[where]['v1'] == 'estimator_rt.estimator.estimator', where
    assert results[where]['same'], where


def test_a_library_uses_tf_estimator_in_a_program_that_does_not(
    installed, tmp_path):
  """A package that uses tf.compat.v1.estimator, imported by a program that
  does not. (pytest running test files that use it: the library repository
  below.)"""
  python, _ = installed
  _write(tmp_path / 'app' / 'classifier' / '__init__.py', '')
  _write(tmp_path / 'app' / 'classifier' / 'predict.py', LIBRARY)
  program = _write(tmp_path / 'app' / 'serve.py', LIBRARY_USER)
  done, result = _run(python, [program], tmp_path)
  assert done.returncode == 0 and result, done.stderr[-4000:]
  assert result == {'estimator': 'estimator_rt.estimator.canned.v1',
                    'same_namespace': True, 'run_config': True,
                    'keras': 'tf_keras.src.layers.core.dense'}



def test_a_program_whose_estimator_code_is_in_a_module_of_its_own(
    installed, tmp_path):
  """Keras 2 from the start for a TF1-style program whose main file never
  names tf.estimator, and whose trainer module subclasses a TF1 layer when
  imported."""
  python, _ = installed
  program = _write(tmp_path / 'app' / 'main.py', TF1_PROGRAM)
  _write(tmp_path / 'app' / 'trainer' / '__init__.py', '')
  _write(tmp_path / 'app' / 'trainer' / 'model.py', TF1_TRAINER)
  done, result = _run(python, [program, str(tmp_path / 'model')], tmp_path)
  assert done.returncode == 0 and result, done.stderr[-4000:]
  assert result == {'keras': 'tf_keras.src.layers.core.dense',
                    'global_step': 2}, result


def test_a_librarys_own_tests_run_with_pytest_from_its_root(
    installed, tmp_path):
  python, _ = installed
  for name, text in LIBRARY_REPOSITORY.items():
    _write(tmp_path / 'repo' / name, text)
  done = subprocess.run(
      [python, '-m', 'pytest', 'tests', '-k', 'Estimator', '-q', '-p',
       'no:cacheprovider'], cwd=str(tmp_path / 'repo'), capture_output=True,
      text=True, timeout=TIMEOUT_SECS, env=installed_env.clean_environment(
          {'TF_CPP_MIN_LOG_LEVEL': '2'}))
  assert done.returncode == 0 and '2 passed' in done.stdout, (
      done.stdout[-3000:] + done.stderr[-3000:])


def test_a_keras_program_keeps_its_keras_and_the_switch_turns_it_off(
    installed, tmp_path):
  """A TensorFlow program that does not use tf.estimator: Keras 3 (TF1
  layers from tf_keras), no estimator_rt module but the hook's, no warning;
  when a module found at run time uses tf.estimator, Keras 3 stays, and one
  warning says what to set.
  ESTIMATOR_RT_COMPAT=0: tf.estimator absent, as on plain TensorFlow."""
  python, _ = installed
  program = _write(tmp_path / 'keras' / 'keras_program.py', KERAS_PROGRAM)
  _write(tmp_path / 'keras' / 'late_user.py', LATE_USER)
  done, result = _run(python, [program], tmp_path)
  assert done.returncode == 0 and result, done.stderr[-3000:]
  assert result == {'keras': 'keras.src.layers.core.dense',
                    'v1_layer': 'tf_keras.src.legacy_tf_layers.core',
                    'estimator_rt': ['estimator_rt.compat.program_code',
                                     'estimator_rt.compat.startup',
                                     'estimator_rt.core.legacy_layers'],
                    'has_estimator': True}
  before, after = done.stderr.split('NOW TF.ESTIMATOR')
  assert 'estimator_rt' not in before, before[-3000:]
  warnings = [line for line in after.splitlines() if 'estimator_rt:' in line]
  assert len(warnings) == 1 and 'TF_USE_LEGACY_KERAS=1' in warnings[0], after

  program = _write(tmp_path / 'off_program.py', OFF_PROGRAM)
  done, result = _run(python, [program], tmp_path, ESTIMATOR_RT_COMPAT='0')
  assert done.returncode == 0 and result, done.stderr[-3000:]
  assert result == {'has_estimator': False, 'tensorflow_estimator': False}


def test_the_bundled_model_fns_load_from_the_wheel_and_yield_to_the_users(
    installed, tmp_path):
  """`--model_fn=model_fns.mlp:model_fn` from the installed wheel: the
  bundled module where the user has no `model_fns`, the user's own where
  they have one."""
  python, _ = installed
  _write(tmp_path / 'user' / 'model_fns' / '__init__.py', '')
  _write(tmp_path / 'user' / 'model_fns' / 'mlp.py',
         'def model_fn(features, labels, mode):\n  pass\n')
  code = textwrap.dedent('''
      import json, os, sys
      from estimator_rt.core import user_fns
      found = {}
      for where in ('empty', 'user'):
        os.chdir(where)
        found[where] = user_fns.load_callable(
            'model_fns.mlp:model_fn', flag='model_fn').__module__
        os.chdir('..')
      print('RESULT', json.dumps(found))
      ''')
  os.makedirs(str(tmp_path / 'empty'))
  done, found = _run(python, ['-c', code], tmp_path)
  assert done.returncode == 0 and found, done.stderr[-3000:]
  assert found == {'empty': 'estimator_rt.model_fns.mlp',
                   'user': 'model_fns.mlp'}
