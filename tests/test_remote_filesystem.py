"""A model_dir and export dir on a filesystem that is not the local one.

tf.estimator users kept model_dirs on object stores (gs://, s3://, hdfs://),
reached through TensorFlow's filesystems. The one such filesystem every
TensorFlow has is `ram://` (in memory, one per process), and it answers
POSIX questions as object stores do, or worse: every prefix of a file's
name "exists" and "is a directory", a directory cannot be renamed (only
its own entry moves, not the files under it), and nothing has a
modification time. On it, through the Python API (in this process) and
through the binary (its entry called in one fresh process, since ram://
lives in one process), training, evaluation, prediction, export, resume,
the fallback from a damaged checkpoint and preemption work as on a local
disk, and the export serves.
"""

import json
import os
import signal
import uuid

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.compat import namespaces
from scripts.tf_estimator_215 import model_dir_listing as listing_lib

import _models as M
from conftest import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
X = np.random.RandomState(7).uniform(-1, 1, (5, 4)).astype(np.float32)


def _ram_dir(name: str) -> str:
  """A new directory on ram:// (one filesystem for the whole process)."""
  return f'ram://{name}_{uuid.uuid4().hex[:8]}'


def _names(directory: str) -> list:
  return sorted(name.rstrip('/') for name in tf.io.gfile.listdir(directory))


def _predictions(estimator) -> np.ndarray:
  return np.array([p['y'][0] for p in estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({'x': X}).batch(5))])


def _damage_newest(model_dir: str, step: int) -> None:
  """Overwrites checkpoint `step`'s data with garbage of the same size."""
  path = os.path.join(model_dir, f'model.ckpt-{step}.data-00000-of-00001')
  size = tf.io.gfile.stat(path).length
  tf.io.gfile.remove(path)  # ram:// appends to a file opened for writing.
  with tf.io.gfile.GFile(path, 'wb') as f:
    f.write(b'\x17' * size)


class _SigtermAt(ert.Hook):
  """Sends this process SIGTERM after the loop that reaches `step`."""

  def __init__(self, step):
    self._step = step

  def after_loop(self, result):
    if result.global_step >= self._step:
      os.kill(os.getpid(), signal.SIGTERM)


def test_the_graph_engine_on_ram():
  """A TF1-style model_fn, from train to preemption, on ram://."""
  est = namespaces.v2()
  model_dir, export_base = _ram_dir('graph'), _ram_dir('graph_export')

  def estimator():
    return est.Estimator(listing_lib.tf1_model_fn_for(est), config=est.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=10, steps_per_loop=5))

  first = estimator()
  first.train(listing_lib.train_input_fn, steps=30)
  assert _names(model_dir) == sorted(
      ['checkpoint', 'graph.pbtxt'] +
      [n for n in _names(model_dir) if n.startswith('events.out')] +
      [f'model.ckpt-{s}.{x}' for s in (0, 10, 20, 30)
       for x in ('data-00000-of-00001', 'index', 'meta')])
  # The checkpoints read back (the issue: evaluate refused them all).
  assert first.evaluate(listing_lib.eval_input_fn)['global_step'] == 30
  expected = _predictions(first)

  # Exported to ram:// and served from there.
  exported = first.export_saved_model(
      export_base, listing_lib.serving_input_receiver_fn(est)).decode()
  assert _names(export_base) == [os.path.basename(exported)]
  assert 'saved_model.pb' in _names(exported)
  served = tf.saved_model.load(exported).signatures['serving_default'](
      x=tf.constant(X))
  np.testing.assert_allclose(served['y'].numpy().ravel(), expected, rtol=1e-5)

  # Resumed by a new Estimator; then the newest checkpoint is damaged.
  estimator().train(listing_lib.train_input_fn, steps=10)
  _damage_newest(model_dir, 40)
  assert estimator().evaluate(listing_lib.eval_input_fn)['global_step'] == 30
  estimator().train(listing_lib.train_input_fn, steps=5)
  assert _names(os.path.join(model_dir, 'unusable_checkpoints')) == [
      'model.ckpt-40.data-00000-of-00001', 'model.ckpt-40.index',
      'model.ckpt-40.meta']
  assert estimator().latest_checkpoint() == f'{model_dir}/model.ckpt-35'

  # Preempted: a checkpoint at the loop's end, and training resumes there.
  with pytest.raises(ert.PreemptedError) as raised:
    estimator().train(listing_lib.train_input_fn, steps=100,
                      hooks=[_SigtermAt(42)])
  step = raised.value.global_step
  assert 42 <= step <= 45
  assert tf.io.gfile.exists(f'{model_dir}/model.ckpt-{step}.index')
  estimator().train(listing_lib.train_input_fn, max_steps=50)
  assert estimator().latest_checkpoint() == f'{model_dir}/model.ckpt-50'


def test_the_eager_engine_on_ram():
  """A TF2 model_fn: train, evaluate, predict, export, resume and the
  damaged-checkpoint fallback on ram://."""
  model_dir, export_base = _ram_dir('eager'), _ram_dir('eager_export')
  x, y = M.make_data(64)

  def estimator():
    return ert.Estimator(M.make_model_fn(), model_dir=model_dir,
                         config=M.quiet_config(save_checkpoints_steps=10,
                                               steps_per_loop=5))

  first = estimator()
  first.train(M.global_input_fn(x, y, batch_size=16), max_steps=20)
  names = _names(model_dir)
  for step in (0, 10, 20):
    assert f'model.ckpt-{step}.index' in names
  assert 'graph.pbtxt' in names
  assert first.evaluate(M.global_input_fn(x, y, batch_size=16, repeat=False)
                        )['global_step'] == 20
  predicted = list(first.predict(M.global_input_fn(x[:4], y[:4], batch_size=4,
                                                   repeat=False)))
  assert len(predicted) == 4
  exported = first.export_saved_model(
      export_base, input_fn=M.global_input_fn(x, y, batch_size=16)).decode()
  assert 'saved_model.pb' in _names(exported)
  assert tf.saved_model.load(exported).signatures['serving_default']

  estimator().train(M.global_input_fn(x, y, batch_size=16), max_steps=30)
  _damage_newest(model_dir, 30)
  assert estimator().evaluate(
      M.global_input_fn(x, y, batch_size=16, repeat=False))['global_step'] == 20
  estimator().train(M.global_input_fn(x, y, batch_size=16), max_steps=25)
  assert 'model.ckpt-30.index' in _names(
      os.path.join(model_dir, 'unusable_checkpoints'))
  assert estimator().latest_checkpoint() == f'{model_dir}/model.ckpt-25'


_BINARY_ON_RAM = '''
import json, os, sys
import tensorflow as tf
from estimator_rt import main

fns, copy_to = sys.argv[1:3]
model_dir, export_dir = 'ram://binary_md', 'ram://binary_export'
common = [f'--model_fn={fns}:model_fn', f'--input_fn={fns}:input_fn',
          f'--model_dir={model_dir}', '--save_checkpoints_steps=10',
          '--steps_per_loop=5', '--eval_steps=2', '--throttle_secs=0']


def binary(*args):
  sys.argv = ['estimator_rt.main', *common, *args]
  try:
    main.main_entry()
  except SystemExit as e:
    return e.code
  return 0


codes = [binary('--mode=train_and_evaluate', '--max_steps=30'),
         binary('--mode=train', '--max_steps=40'),
         binary('--mode=export', f'--export_dir={export_dir}')]
listed = sorted(n.rstrip('/') for n in tf.io.gfile.listdir(model_dir))
exports = sorted(tf.io.gfile.listdir(export_dir))
final = [d for d, _, files in tf.io.gfile.walk(model_dir + '/export') if 'saved_model.pb' in files]
# The export, copied out through gfile for a process of its own to serve.
source = export_dir + '/' + exports[0].rstrip('/')
for directory, _, files in tf.io.gfile.walk(source):
  target = os.path.join(copy_to, directory[len(source):].lstrip('/'))
  tf.io.gfile.makedirs(target)
  for name in files:
    tf.io.gfile.copy(os.path.join(directory, name),
                     os.path.join(target, name))
print(json.dumps({'codes': codes, 'model_dir': listed, 'exports': exports,
                  'final': final}))
'''


def test_the_binary_on_ram(tmp_path):
  """The binary's entry, in one fresh process, on a ram:// model_dir and
  export dir: train_and_evaluate (evaluations of the checkpoints by path,
  the final export), a resumed train and an export all exit 0; the
  export, copied out with gfile, serves here."""
  script = tmp_path / 'binary_on_ram.py'
  script.write_text(_BINARY_ON_RAM)
  copy = tmp_path / 'export'
  done = run_python([str(script), os.path.join(HERE, '_legacy_fns.py'),
                     str(copy)], timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  result = json.loads(done.stdout.strip().splitlines()[-1])
  assert result['codes'] == [0, 0, 0], done.stderr[-3000:]
  for step in (0, 10, 20, 30, 40):  # keep_checkpoint_max=5.
    assert f'model.ckpt-{step}.meta' in result['model_dir']
  assert 'graph.pbtxt' in result['model_dir']
  assert len(result['exports']) == 1 and len(result['final']) == 1
  served = tf.saved_model.load(str(copy)).signatures['serving_default'](
      x=tf.constant(X))
  assert np.all(np.isfinite(next(iter(served.values())).numpy()))
