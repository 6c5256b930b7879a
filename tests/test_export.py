"""SavedModel export: load each export in a FRESH process (which never sees
the model_fn or estimator_rt) and compare its serving_default outputs with
Estimator.predict on the same inputs."""

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
import _models as M
from conftest import run_python

# Serves saved inputs with a SavedModel in a process that imports only
# TensorFlow. argv: a JSON list of jobs {export_dir, inputs, outputs}, where
# inputs is an .npz of signature inputs or a TFRecord file of serialized
# tf.train.Examples (fed as the string input `examples`).
_SERVE_SCRIPT = textwrap.dedent('''
    import json, sys
    import numpy as np
    import tensorflow as tf

    report = []
    for job in json.loads(sys.argv[1]):
      loaded = tf.saved_model.load(job['export_dir'])
      serve = loaded.signatures['serving_default']
      if job['inputs'].endswith('.tfrecord'):
        records = [r.numpy() for r in tf.data.TFRecordDataset(job['inputs'])]
        feed = {'examples': tf.constant(records)}
      else:
        feed = {k: tf.constant(v) for k, v in np.load(job['inputs']).items()}
      outputs = serve(**feed)
      np.savez(job['outputs'], **{k: v.numpy() for k, v in outputs.items()})
      _, kwargs = serve.structured_input_signature
      report.append({
          'inputs': {k: [s.dtype.name, s.shape.as_list()]
                     for k, s in kwargs.items()},
          'outputs': sorted(outputs)})
    # The environment's import hook (estimator_rt.compat.startup) is in
    # every process of it, and reads a main file that names estimator_rt
    # (this one does) with estimator_rt.compat's scanner, and routes the
    # TF1 layers (estimator_rt.core.legacy_layers, which it loads alone);
    # the runtime itself (its engines, its Estimator) must not be needed to
    # serve.
    report.append({'estimator_rt_imported': sorted(
        m for m in sys.modules if m.startswith('estimator_rt.') and
        not m.startswith('estimator_rt.compat') and
        m != 'estimator_rt.core.legacy_layers')})
    print(json.dumps(report))
''')


def _serve(tmp_path, jobs):
  script = tmp_path / 'serve.py'
  script.write_text(_SERVE_SCRIPT)
  done = run_python([str(script), json.dumps(jobs)], timeout=180,
                    cwd=str(tmp_path))
  assert done.returncode == 0, done.stderr[-3000:]
  report = json.loads(done.stdout.strip().splitlines()[-1])
  assert report[-1] == {'estimator_rt_imported': []}
  return report[:-1]


def _predict_batch(est, x):
  predictions = list(est.predict(
      M.global_input_fn(x, batch_size=3, repeat=False)))
  return {k: np.stack([p[k] for p in predictions]) for k in predictions[0]}


def _trained(tmp_path, strategy='default', **kwargs):
  x, y = M.make_data(64)
  est = ert.Estimator(M.make_model_fn(optimizer='adam', lr=0.02, **kwargs),
                      model_dir=str(tmp_path / 'model'),
                      config=M.quiet_config(train_distribute=strategy))
  return est, x, y


def test_export_with_inferred_dict_features(tmp_path):
  # Trained under mirrored: the inferred inputs come from per-replica data,
  # the export itself runs without distribution.
  est, x, y = _trained(tmp_path, 'mirrored')
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=20)
  # No serving_input_receiver_fn: inputs come from the training features.
  export_dir = est.export_saved_model(str(tmp_path / 'export')).decode()
  assert os.path.dirname(export_dir) == str(tmp_path / 'export')
  assert os.path.basename(export_dir).isdigit()
  # The same with explicit raw inputs.
  raw_dir = est.export_saved_model(
      str(tmp_path / 'raw'), ert.build_raw_serving_input_fn(
          {'x': tf.TensorSpec([None, M.NUM_FEATURES], tf.float32)})).decode()

  jobs = []
  for n in (1, 7):
    inputs = M.make_data(n, seed=10 + n)[0]
    np.savez(tmp_path / f'in{n}.npz', x=inputs)
    for name, path in (('inferred', export_dir), ('raw', raw_dir)):
      jobs.append({'export_dir': path, 'inputs': str(tmp_path / f'in{n}.npz'),
                   'outputs': str(tmp_path / f'out_{name}{n}.npz')})
  report = _serve(tmp_path, jobs)
  for entry in report:
    assert entry['inputs'] == {'x': ['float32', [None, M.NUM_FEATURES]]}
    assert entry['outputs'] == ['double', 'y']

  for n in (1, 7):
    inputs = np.load(tmp_path / f'in{n}.npz')['x']
    expected = _predict_batch(est, inputs)
    assert expected['y'].shape == (n, 1)
    for name in ('inferred', 'raw'):
      served = np.load(tmp_path / f'out_{name}{n}.npz')
      assert served['y'].shape == (n, 1)
      for key in ('y', 'double'):
        np.testing.assert_allclose(served[key], expected[key], rtol=1e-6,
                                   atol=1e-6)
    # The export holds the trained weights, not the initial ones.
    trained = M.read_model_variables(est.latest_checkpoint())
    np.testing.assert_allclose(expected['y'], M.np_forward(trained, inputs),
                               rtol=1e-5, atol=1e-5)
  assert M.saved_model_global_step(export_dir) == 20


def test_export_with_single_tensor_features(tmp_path):
  est, x, y = _trained(tmp_path, dict_features=False, single_prediction=True)
  est.train(M.global_input_fn(x, y, batch_size=16, dict_features=False),
            max_steps=10)
  # A fresh Estimator has seen no data: it infers from input_fn.
  fresh = ert.Estimator(
      M.make_model_fn(dict_features=False, single_prediction=True),
      model_dir=str(tmp_path / 'model'), config=M.quiet_config())
  export_dir = fresh.export_saved_model(
      str(tmp_path / 'export'),
      input_fn=M.global_input_fn(x, y, batch_size=16, dict_features=False)).decode()

  jobs = []
  for n in (1, 7):
    np.savez(tmp_path / f'in{n}.npz', features=M.make_data(n, seed=n)[0])
    jobs.append({'export_dir': export_dir,
                 'inputs': str(tmp_path / f'in{n}.npz'),
                 'outputs': str(tmp_path / f'out{n}.npz')})
  report = _serve(tmp_path, jobs)
  assert report[0]['inputs'] == {
      'features': ['float32', [None, M.NUM_FEATURES]]}
  assert report[0]['outputs'] == ['predictions']

  for n in (1, 7):
    inputs = np.load(tmp_path / f'in{n}.npz')['features']
    expected = np.stack(list(est.predict(
        M.global_input_fn(inputs, batch_size=4, repeat=False,
                          dict_features=False))))
    served = np.load(tmp_path / f'out{n}.npz')['predictions']
    assert served.shape == expected.shape == (n, 1)
    np.testing.assert_allclose(served, expected, rtol=1e-6, atol=1e-6)


def test_export_with_parsing_serving_input_fn(tmp_path):
  est, x, y = _trained(tmp_path)
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=10)
  serving_fn = ert.build_parsing_serving_input_fn(
      {'x': tf.io.FixedLenFeature([M.NUM_FEATURES], tf.float32)})
  export_dir = est.export_saved_model(str(tmp_path / 'export'), serving_fn).decode()

  jobs = []
  for n in (1, 7):
    inputs = M.make_data(n, seed=20 + n)[0]
    np.save(tmp_path / f'x{n}.npy', inputs)
    with tf.io.TFRecordWriter(str(tmp_path / f'in{n}.tfrecord')) as writer:
      for row in inputs:
        example = tf.train.Example(features=tf.train.Features(feature={
            'x': tf.train.Feature(float_list=tf.train.FloatList(value=row))}))
        writer.write(example.SerializeToString())
    jobs.append({'export_dir': export_dir,
                 'inputs': str(tmp_path / f'in{n}.tfrecord'),
                 'outputs': str(tmp_path / f'out{n}.npz')})
  report = _serve(tmp_path, jobs)
  assert report[0]['inputs'] == {'examples': ['string', [None]]}

  for n in (1, 7):
    inputs = np.load(tmp_path / f'x{n}.npy')
    expected = _predict_batch(est, inputs)
    served = np.load(tmp_path / f'out{n}.npz')
    assert served['y'].shape == (n, 1)
    for key in ('y', 'double'):
      np.testing.assert_allclose(served[key], expected[key], rtol=1e-6,
                                 atol=1e-6)


def test_export_of_a_named_checkpoint(tmp_path):
  """The checkpoint asked for; the export base may be bytes, as 2.15 took
  it (its own tests pass `os.path.join(as_bytes(tmpdir), b'export')`)."""
  est, x, y = _trained(tmp_path)
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=20)
  export_dir = est.export_saved_model(
      str(tmp_path / 'export').encode(), checkpoint_path=M.ckpt_path(
          tmp_path / 'model', 10)).decode()
  assert export_dir.startswith(str(tmp_path / 'export'))
  assert M.saved_model_global_step(export_dir) == 10


def test_export_without_known_inputs_is_a_user_error(tmp_path):
  est, x, y = _trained(tmp_path)
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=5)
  fresh = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'model'),
                        config=M.quiet_config())
  with pytest.raises(ert.UserInputError, match='serving_input_receiver_fn'):
    fresh.export_saved_model(str(tmp_path / 'export'))
  assert not (tmp_path / 'export').exists()


def test_serving_input_fn_returning_the_wrong_type(tmp_path):
  est, x, y = _trained(tmp_path)
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=5)
  with pytest.raises(ert.UserInputError, match='ServingInputReceiver'):
    est.export_saved_model(str(tmp_path / 'export'),
                           lambda: {'x': tf.TensorSpec([None, 4])})
  assert not (tmp_path / 'export').exists()


def test_export_without_a_checkpoint_is_a_user_error(tmp_path):
  est, x, _ = _trained(tmp_path)
  with pytest.raises(ValueError, match="Couldn't find trained model at "):
    est.export_saved_model(str(tmp_path / 'export'),
                           input_fn=M.global_input_fn(x, batch_size=4))


# Writes an export into argv[1] with export_dirs.write_export: the write
# announces itself (argv[2]/ready-<pid>) and waits for argv[2]/go, so that
# two such processes rename at the same moment. Prints the export's path.
_CONCURRENT_EXPORT_SCRIPT = textwrap.dedent('''
    import os, sys, time
    from estimator_rt.export import export_dirs

    base, meeting = sys.argv[1], sys.argv[2]

    def write(path):
      os.makedirs(path)
      with open(os.path.join(path, 'writer'), 'w') as f:
        f.write(str(os.getpid()))
      open(os.path.join(meeting, f'ready-{os.getpid()}'), 'w').close()
      deadline = time.time() + 60
      while not os.path.exists(os.path.join(meeting, 'go')):
        if time.time() > deadline:
          sys.exit('never told to go')
        time.sleep(0.01)

    print(export_dirs.write_export(base, write), flush=True)
''')


def test_two_processes_exporting_at_once_get_distinct_increasing_names(
    tmp_path):
  """Two processes renaming their exports into one base in the same second
  (an evaluator and a chief once did): both succeed, under distinct,
  consecutive names, each holding its own files, and no temporary
  directory is left."""
  base, meeting = tmp_path / 'export' / 'final', tmp_path / 'meeting'
  meeting.mkdir()
  script = tmp_path / 'export_once.py'
  script.write_text(_CONCURRENT_EXPORT_SCRIPT)
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
       os.environ.get('PYTHONPATH', '')]))
  writers = [subprocess.Popen(
      [sys.executable, str(script), str(base), str(meeting)],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
  try:
    deadline = time.time() + 120
    while len(list(meeting.glob('ready-*'))) < 2:
      assert time.time() < deadline, 'the writers never got ready'
      assert all(w.poll() is None for w in writers), [
          w.communicate()[1][-2000:] for w in writers]
      time.sleep(0.05)
    (meeting / 'go').touch()
    outputs = [w.communicate(timeout=60) for w in writers]
  finally:
    for w in writers:
      w.kill()
  assert [w.returncode for w in writers] == [0, 0], [e[-2000:] for _, e in
                                                      outputs]
  paths = [out.strip().splitlines()[-1] for out, _ in outputs]
  names = sorted(int(os.path.basename(p)) for p in paths)
  assert names[1] == names[0] + 1, paths
  assert sorted(os.listdir(base)) == sorted(str(n) for n in names)
  for writer, path in zip(writers, paths):
    assert open(os.path.join(path, 'writer')).read() == str(writer.pid)


def test_a_failed_export_write_leaves_nothing_behind(tmp_path):
  """A write that fails half-way leaves no temporary or final directory."""
  from estimator_rt.export import export_dirs  # pylint: disable=g-import-not-at-top
  base = tmp_path / 'export' / 'latest'

  def write(path):
    os.makedirs(path)
    (tmp_path / 'export' / 'latest').joinpath(
        os.path.basename(path), 'half').write_text('x')
    raise OSError('disk full')

  with pytest.raises(OSError, match='disk full'):
    export_dirs.write_export(str(base), write)
  assert os.listdir(base) == []
