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

# A TensorFlow program that never touches tf.estimator, until a module it
# imports late does, after tf.keras was resolved to Keras 3 (the marker on
# stderr between the two). Its main file says nothing of tf.estimator: a
# program whose main file does gets Keras 2 from the start.
KERAS_PROGRAM = '''
import json
import sys
import tensorflow as tf
layer = tf.keras.layers.Dense(1)
print('RESULT', json.dumps({
    'keras': type(layer).__module__,
    'estimator_rt': sorted(m for m in sys.modules
                           if m.split('.')[0] == 'estimator_rt'),
    'has_estimator': hasattr(tf, 'estimator')}))
print('NOW TF.ESTIMATOR', file=sys.stderr, flush=True)
import late_user
late_user.use()
assert type(tf.keras.layers.Dense(1)).__module__.startswith('keras.')
'''
LATE_USER = '''
import tensorflow as tf


def use():
  tf.estimator.RunConfig()
  tf.compat.v1.estimator.RunConfig()
'''

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


def test_a_library_and_a_pytest_run_use_tf_estimator(installed, tmp_path):
  """A package that uses tf.compat.v1.estimator, imported by a program that
  does not, and pytest running a test file that uses it."""
  python, _ = installed
  _write(tmp_path / 'app' / 'classifier' / '__init__.py', '')
  _write(tmp_path / 'app' / 'classifier' / 'predict.py', LIBRARY)
  program = _write(tmp_path / 'app' / 'serve.py', LIBRARY_USER)
  done, result = _run(python, [program], tmp_path)
  assert done.returncode == 0 and result, done.stderr[-4000:]
  assert result == {'estimator': 'estimator_rt.estimator.canned.v1',
                    'same_namespace': True, 'run_config': True,
                    'keras': 'tf_keras.src.layers.core.dense'}

  test_file = _write(tmp_path / 'suite' / 'test_estimator.py', TEST_FILE)
  done = subprocess.run(
      [python, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', test_file],
      cwd=str(tmp_path / 'suite'), capture_output=True, text=True,
      timeout=TIMEOUT_SECS, env=installed_env.clean_environment(
          {'TF_CPP_MIN_LOG_LEVEL': '2'}))
  assert done.returncode == 0 and '1 passed' in done.stdout, (
      done.stdout[-3000:] + done.stderr[-3000:])


def test_a_keras_program_keeps_its_keras_and_the_switch_turns_it_off(
    installed, tmp_path):
  """A TensorFlow program that does not use tf.estimator: Keras 3, no
  estimator_rt module but the hook, no warning; when it then uses
  tf.estimator, Keras 3 stays, and one warning says what to set.
  ESTIMATOR_RT_COMPAT=0: tf.estimator absent, as on plain TensorFlow."""
  python, _ = installed
  program = _write(tmp_path / 'keras' / 'keras_program.py', KERAS_PROGRAM)
  _write(tmp_path / 'keras' / 'late_user.py', LATE_USER)
  done, result = _run(python, [program], tmp_path)
  assert done.returncode == 0 and result, done.stderr[-3000:]
  assert result == {'keras': 'keras.src.layers.core.dense',
                    'estimator_rt': ['estimator_rt.compat.startup'],
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
