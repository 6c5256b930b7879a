"""Every public name of tf.estimator 2.15 resolves after
`estimator_rt.compat.install()`, with a 2.15-compatible signature.

The names and signatures come from tf.estimator 2.15 itself
(tests/data/tf_estimator_215/api.json, made by
scripts/tf_estimator_215/list_api.py in the 2.15 environment). Compatible
means: every parameter 2.15 had is there, in the same position, accepting
the same kinds of argument (positional or keyword), with a default where
2.15 had one; parameters estimator_rt adds come after and have defaults or
are keyword-only. Classes also keep 2.15's public methods (same rule) and
properties. Names not built yet (the canned estimators and heads) resolve
to placeholders that refuse in one line: they are listed here, so that
the list only shrinks.
"""

import inspect
import json
import os
import subprocess
import sys

import pytest

import estimator_rt.compat
from conftest import REPO_ROOT

API = json.load(open(os.path.join(REPO_ROOT, 'tests', 'data',
                                  'tf_estimator_215', 'api.json')))['names']

# Refused in one line whatever the arguments: the signature is not theirs
# to keep (none today).
REFUSED = set()
ROOTS = ('tf.compat.v1.estimator.', 'tf.compat.v2.estimator.',
         'tf.estimator.')

estimator_rt.compat.install()


def _short(name):
  for root in ROOTS:
    if name.startswith(root):
      return name[len(root):]
  return name


ESTIMATOR_NAMES = sorted(n for n in API if n.startswith(ROOTS))


def _parameters(fn):
  try:
    return list(inspect.signature(fn).parameters.values())
  except (TypeError, ValueError):
    return None


_POSITIONAL = ('POSITIONAL_ONLY', 'POSITIONAL_OR_KEYWORD')


def _check_parameters(where, theirs, ours):
  """The compatibility rule of the module docstring; returns problems."""
  if theirs is None or ours is None:
    return []
  problems = []
  theirs = [p for p in theirs if p['kind'] not in ('VAR_POSITIONAL',
                                                   'VAR_KEYWORD')]
  ours_fixed = [p for p in ours if p.kind not in (p.VAR_POSITIONAL,
                                                  p.VAR_KEYWORD)]
  takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in ours)
  for i, their in enumerate(theirs):
    if i >= len(ours_fixed):
      if not takes_kwargs:
        problems.append(f'{where}: no parameter {their["name"]!r}')
      continue
    our = ours_fixed[i]
    if our.name != their['name']:
      problems.append(f'{where}: parameter {i} is {our.name!r}, 2.15 has '
                      f'{their["name"]!r}')
    elif their['kind'] in _POSITIONAL and our.kind.name not in _POSITIONAL:
      problems.append(f'{where}: {our.name!r} is {our.kind.name}, 2.15 '
                      'takes it positionally')
    elif 'default' in their and our.default is inspect.Parameter.empty:
      problems.append(f'{where}: {our.name!r} has no default; 2.15 had one')
  for our in ours_fixed[len(theirs):]:
    if our.default is inspect.Parameter.empty and our.kind != our.KEYWORD_ONLY:
      problems.append(f'{where}: extra parameter {our.name!r} needs a '
                      'default')
  return problems


def _strip_first(parameters, names=('self', 'cls', '_cls')):
  if parameters and parameters[0].name in names:
    return parameters[1:]
  return parameters


def _check_class(name, entry, ours):
  problems = []
  their_init = entry['methods'].get('__init__', entry['methods'].get(
      '__new__'))
  problems += _check_parameters(f'{name}()', their_init,
                                _parameters(ours))
  for method, theirs in entry['methods'].items():
    if method in ('__init__', '__new__'):
      continue
    attribute = inspect.getattr_static(ours, method, None)
    if attribute is None:
      problems.append(f'{name}.{method}: missing')
      continue
    if isinstance(attribute, property):
      continue
    problems += _check_parameters(
        f'{name}.{method}', theirs,
        _strip_first(_parameters(getattr(ours, method))))
  for prop in entry['properties']:
    if not hasattr(ours, prop):
      problems.append(f'{name}.{prop}: missing property')
  return problems


def test_the_list_is_tf_estimator_215s_whole_public_surface():
  counts = {root: sum(1 for n in ESTIMATOR_NAMES if n.startswith(root))
            for root in ROOTS}
  assert counts == {'tf.compat.v1.estimator.': 88,
                    'tf.compat.v2.estimator.': 76, 'tf.estimator.': 76}


@pytest.mark.parametrize('name', ESTIMATOR_NAMES)
def test_every_name_resolves_with_a_compatible_signature(name):
  entry = API[name]
  ours = estimator_rt.compat.resolve(name)  # Raises if it does not resolve.
  short = _short(name)
  if short in REFUSED:
    return
  if entry['kind'] == 'module':
    assert inspect.ismodule(ours), name
    return
  if entry['kind'] == 'class':
    assert inspect.isclass(ours), (name, ours)
    problems = _check_class(name, entry, ours)
  else:
    assert callable(ours), (name, ours)
    problems = _check_parameters(name, entry.get('parameters'),
                                 _parameters(ours))
  assert not problems, problems


def test_tf_attributes_and_module_paths_resolve_in_a_fresh_process():
  """What programs write: tf.estimator.X, tf.compat.v1.estimator.X,
  `import tensorflow_estimator`, module paths, `from tensorflow import
  estimator`; a private name and an unknown path fail in one line."""
  code = '''
import estimator_rt.compat
estimator_rt.compat.install()
estimator_rt.compat.install()  # Idempotent.
import tensorflow as tf
from tensorflow import estimator as tf_estimator
import tensorflow_estimator as te
from tensorflow_estimator.python.estimator import model_fn as model_fn_lib
from tensorflow_estimator.python.estimator.export import export_output
from tensorflow_estimator.python.estimator.tpu import tpu_estimator
import estimator_rt
assert tf.estimator.Estimator is estimator_rt.Estimator
assert tf.compat.v1.estimator.Estimator is estimator_rt.Estimator
assert tf.compat.v2.estimator.RunConfig is estimator_rt.RunConfig
assert tf.compat.v2.compat.v1.estimator is tf.compat.v1.estimator
assert tf.compat.v1.compat.v2.estimator is tf.estimator
from tensorflow.compat.v2.compat.v1.estimator import DNNClassifier
assert DNNClassifier is tf.compat.v1.estimator.DNNClassifier
assert tf_estimator is tf.estimator and te.estimator is tf.estimator
assert model_fn_lib.EstimatorSpec is estimator_rt.EstimatorSpec
assert export_output.PredictOutput is estimator_rt.export.PredictOutput
assert tpu_estimator.TPUEstimator is tf.compat.v1.estimator.tpu.TPUEstimator
try:
  model_fn_lib._TPU_ESTIMATOR_SPEC
except AttributeError as e:
  print('private:', e)
try:
  import tensorflow_estimator.python.estimator.no_such_module
except ModuleNotFoundError as e:
  print('unknown:', e)
'''
  result = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT,
                                   TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.splitlines()
  assert lines[0].startswith('private: tensorflow_estimator.python.estimator'
                             '.model_fn._TPU_ESTIMATOR_SPEC is not provided')
  assert lines[1].startswith('unknown: tensorflow_estimator.python.estimator'
                             '.no_such_module is not provided')


def test_module_paths_it_does_not_implement_are_not_stand_ins(tmp_path):
  """A module path that held no public object (a private module, or 2.15's
  test code) is not served as an empty module: importing it fails in one
  line saying so (`from package import module` too), and a finder placed ahead of the layer's (as the runner of 2.15's own
  tests places one) serves it under the layer's packages."""
  testing_module = tmp_path / 'dnn_testing_utils.py'
  testing_module.write_text('from tensorflow_estimator.python.estimator '
                            'import model_fn\nSPEC = model_fn.EstimatorSpec\n')
  code = f'''
import importlib.util
import sys
import estimator_rt
import estimator_rt.compat
estimator_rt.compat.install()
for name in ('canned.dnn_testing_utils',):
  package, _, module = ('tensorflow_estimator.python.estimator.' +
                        name).rpartition('.')
  for fromlist in ((), (module,)):  # import a.b.c; from a.b import c.
    try:
      __import__(package + '.' + module if not fromlist else package,
                 fromlist=fromlist)
    except ModuleNotFoundError as e:
      print(str(e).split(':')[0], len(str(e).splitlines()))

class TestCodeFinder:
  def find_spec(self, fullname, path=None, target=None):
    if fullname.endswith('.canned.dnn_testing_utils'):
      return importlib.util.spec_from_file_location(
          fullname, {str(testing_module)!r})
    return None

sys.meta_path.insert(0, TestCodeFinder())
from tensorflow_estimator.python.estimator.canned import dnn_testing_utils
assert dnn_testing_utils.SPEC is estimator_rt.EstimatorSpec
print('served ahead')
'''
  result = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT,
                                   TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stderr[-3000:]
  package = 'tensorflow_estimator.python.estimator.'
  assert result.stdout.splitlines() == [
      package + name + ' is not provided by estimator_rt 1'
      for name in ('canned.dnn_testing_utils',) for _ in range(2)] + [
                       'served ahead']


_LOGGING_PROGRAM = """
import numpy as np
import tensorflow as tf

def model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable('w', [1, 1])
  loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels),
                        name='the_loss')
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

def input_fn():
  x = np.ones((8, 1), np.float32)
  return tf.data.Dataset.from_tensor_slices((x, 2 * x)).repeat().batch(4)

tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
tf.estimator.Estimator(model_fn, model_dir=MODEL_DIR).train(
    input_fn, steps=3, hooks=[tf.compat.v1.train.LoggingTensorHook(
        {'logged': 'the_loss'}, every_n_iter=1)])
"""


@pytest.mark.parametrize('launcher', [['-m', 'estimator_rt.compat'], []],
                         ids=['compat_runner', 'plain_python'])
def test_each_tensorflow_log_line_is_printed_once(tmp_path, launcher):
  """A tf.estimator program imports TensorFlow before estimator_rt, whose
  absl logging then gave the root logger a handler beside TensorFlow's:
  every LoggingTensorHook line came out twice. The program is a module its
  main file imports: under plain python the import hook then chooses the
  Keras at tf.estimator's first use, and says so (absl) before any
  Estimator is made."""
  (tmp_path / 'program.py').write_text(_LOGGING_PROGRAM.replace(
      'MODEL_DIR', repr(str(tmp_path / 'm'))))
  main = tmp_path / 'main.py'
  main.write_text('import program\n')
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO_ROOT, str(
      tmp_path)]), TF_CPP_MIN_LOG_LEVEL='2')
  env.pop('TF_USE_LEGACY_KERAS', None)
  result = subprocess.run(
      [sys.executable] + launcher + [str(main)],
      capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, env=env)
  assert result.returncode == 0, result.stderr[-3000:]
  logged = [l for l in result.stderr.splitlines() if 'logged = ' in l]
  assert len(logged) == 3, result.stderr[-3000:]
