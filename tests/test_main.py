"""The binary: the default job, modes, and bad input (exit 2, one line,
model_dir untouched)."""

import hashlib
import json
import os
import shlex
import textwrap

import pytest

from conftest import run_python

USER_FNS = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf
    import keras
    import estimator_rt as ert

    NOT_A_FUNCTION = 3

    def _data(n=64):
      rng = np.random.RandomState(0)
      x = rng.randn(n, 4).astype('float32')
      return x, (x.sum(axis=1) > 0).astype('int64')

    def input_fn(params):
      x, y = _data()
      return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(16)

    def eval_input_fn(params):
      x, y = _data()
      return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(16)

    def pools_input_fn(params):
      print('pools', tf.config.threading.get_intra_op_parallelism_threads(),
            tf.config.threading.get_inter_op_parallelism_threads())
      return input_fn(params)

    def list_input_fn(params):
      return [1, 2, 3]

    def onehot_input_fn(params):
      x, y = _data()
      return tf.data.Dataset.from_tensor_slices(
          ({'x': x}, np.eye(2, dtype='float32')[y])).repeat().batch(16)

    def model_fn(features, labels, mode, params):
      logits = keras.layers.Dense(params.get('units', 2))(features['x'])
      if mode == ert.ModeKeys.PREDICT:
        return ert.EstimatorSpec(mode, predictions={'class': tf.argmax(logits, -1)})
      loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
          labels, logits, from_logits=True))
      return ert.EstimatorSpec(mode, loss=loss,
                               optimizer=keras.optimizers.SGD(0.1))

    def no_loss_model_fn(features, labels, mode, params):
      keras.layers.Dense(2)(features['x'])
      return ert.EstimatorSpec(mode, optimizer=keras.optimizers.SGD(0.1))
''')


@pytest.fixture
def user_fns(tmp_path):
  path = tmp_path / 'user_fns.py'
  path.write_text(USER_FNS)
  return str(path)


def _tree_digest(path):
  """Names, sizes and contents of everything under `path` (None if absent)."""
  if not os.path.exists(path):
    return None
  digest = {}
  for root, _, files in os.walk(path):
    for name in files:
      full = os.path.join(root, name)
      with open(full, 'rb') as f:
        digest[os.path.relpath(full, path)] = hashlib.sha1(f.read()).hexdigest()
  return digest


def _binary(args, timeout=180):
  return run_python(['-m', 'estimator_rt.main'] + list(args), timeout=timeout)


def _assert_one_line_error(result, *fragments):
  assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
  errors = [l for l in result.stderr.splitlines() if l.startswith('error: ')]
  assert len(errors) == 1, result.stderr[-3000:]
  assert 'Traceback' not in result.stderr, result.stderr[-3000:]
  for fragment in fragments:
    assert fragment in errors[0], errors[0]
  return errors[0]


# What `make run` runs (the Makefile's run target), the README's quick start,
# run here as written (tests/test_docs.py checks the README against it).
README_COMMAND = 'python -m estimator_rt.main'


def test_default_job_with_no_flags_trains_evaluates_and_exports():
  program, *args = shlex.split(README_COMMAND)
  assert program == 'python'
  result = run_python(args, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.splitlines()
  metrics = json.loads(
      [l for l in lines if l.startswith('Final metrics: ')][0].split(': ', 1)[1])
  assert metrics['global_step'] == 1000
  assert metrics['accuracy'] > 0.9
  export = [l for l in lines if l.startswith('Exported: ')][0].split(': ', 1)[1]
  assert os.path.isfile(os.path.join(export, 'saved_model.pb'))
  model_dir = [l for l in lines if l.startswith('model_dir: ')][0].split(
      ': ', 1)[1]
  assert os.path.isfile(os.path.join(model_dir, 'model.ckpt-1000.index'))


def test_train_then_evaluate_predict_and_export_modes(user_fns, tmp_path):
  model_dir = str(tmp_path / 'model')
  common = [f'--model_fn={user_fns}:model_fn', f'--input_fn={user_fns}:input_fn',
            f'--eval_input_fn={user_fns}:eval_input_fn',
            f'--model_dir={model_dir}']
  # --intra_op_threads/--inter_op_threads size TensorFlow's pools before
  # any op runs (the input_fn reports them).
  result = _binary([f'--model_fn={user_fns}:model_fn',
                    f'--input_fn={user_fns}:pools_input_fn',
                    f'--eval_input_fn={user_fns}:eval_input_fn',
                    f'--model_dir={model_dir}', '--mode=train',
                    '--max_steps=40', '--intra_op_threads=1',
                    '--inter_op_threads=2'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'pools 1 2' in result.stdout
  assert 'asks for' not in result.stderr
  assert os.path.isfile(os.path.join(model_dir, 'model.ckpt-40.index'))
  result = _binary(common + ['--mode=evaluate'])
  assert result.returncode == 0, result.stderr[-3000:]
  metrics = json.loads(result.stdout.split('Metrics: ', 1)[1].splitlines()[0])
  assert metrics['global_step'] == 40 and metrics['loss'] > 0
  result = _binary(common[:1] + [f'--input_fn={user_fns}:eval_input_fn',
                                 f'--model_dir={model_dir}', '--mode=predict'])
  assert result.returncode == 0, result.stderr[-3000:]
  predictions = [json.loads(l) for l in result.stdout.splitlines()
                 if l.startswith('{')]
  assert len(predictions) == 64 and set(predictions[0]) == {'class'}
  result = _binary(common + ['--mode=export'])
  assert result.returncode == 0, result.stderr[-3000:]
  export = result.stdout.split('Exported: ', 1)[1].splitlines()[0]
  assert export.startswith(os.path.join(model_dir, 'export', 'saved_model'))
  assert os.path.isfile(os.path.join(export, 'saved_model.pb'))


def test_rerunning_a_finished_model_dir_trains_zero_steps(user_fns, tmp_path):
  model_dir = str(tmp_path / 'model')
  args = [f'--model_fn={user_fns}:model_fn', f'--input_fn={user_fns}:input_fn',
          f'--model_dir={model_dir}', '--mode=train', '--max_steps=20']
  assert _binary(args).returncode == 0
  before = _tree_digest(model_dir)
  result = _binary(args)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'Skipping training' in result.stderr
  assert _tree_digest(model_dir) == before


@pytest.mark.parametrize('flag_args,fragments', [
    (['--model_fn=no_such_module_xyz:model_fn'],
     ['--model_fn', 'no_such_module_xyz']),
    (['--model_fn={fns}:NOT_A_FUNCTION'], ['--model_fn', 'NOT_A_FUNCTION']),
    (['--model_fn={fns}:missing_attr'], ['--model_fn', 'missing_attr']),
    (['--input_fn={fns}:list_input_fn'], ['list_input_fn', 'tf.data.Dataset']),
    (['--model_fn={fns}:no_loss_model_fn'], ['loss', 'train']),
    (['--input_fn={fns}:onehot_input_fn'], ['model_fn', '(16, 2)']),
    (['--params={{not json'], ['--params', 'JSON']),
    (['--params=[1, 2]'], ['--params', 'JSON object']),
    (['--params=@/nonexistent/params.json'], ['--params', 'cannot read']),
    (['--mode=bogus'], ['mode']),
    (['--save_checkpoints_steps=5', '--save_checkpoints_secs=5'],
     ['save_checkpoints_steps', 'save_checkpoints_secs']),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    user_fns, tmp_path, flag_args, fragments):
  model_dir = str(tmp_path / 'model')
  args = [f'--model_fn={user_fns}:model_fn', f'--input_fn={user_fns}:input_fn',
          f'--model_dir={model_dir}', '--mode=train', '--max_steps=10']
  args += [a.format(fns=user_fns) for a in flag_args]
  result = _binary(args)
  _assert_one_line_error(result, *fragments)
  assert not os.path.exists(model_dir)


def test_unwritable_model_dir_exits_2(user_fns, tmp_path):
  blocker = tmp_path / 'a_file'
  blocker.write_text('not a directory')
  result = _binary([f'--model_fn={user_fns}:model_fn',
                    f'--input_fn={user_fns}:input_fn',
                    f'--model_dir={blocker}/model', '--mode=train'])
  _assert_one_line_error(result, 'model_dir', 'a_file')
  assert blocker.read_text() == 'not a directory'


def test_model_dir_of_a_different_model_exits_2_and_is_untouched(
    user_fns, tmp_path):
  model_dir = str(tmp_path / 'model')
  base = [f'--model_fn={user_fns}:model_fn', f'--input_fn={user_fns}:input_fn',
          f'--model_dir={model_dir}', '--mode=train']
  assert _binary(base + ['--max_steps=20']).returncode == 0
  before = _tree_digest(model_dir)
  result = _binary(base + ['--max_steps=40', '--params={"units": 3}'])
  _assert_one_line_error(result, 'different model', model_dir)
  assert _tree_digest(model_dir) == before
