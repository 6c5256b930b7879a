r"""What a tf.estimator program sees for each fault, in both TF behaviours.

    # The reference, once, in the 2.15 environment (one process per case):
    .venv-tf215/bin/python -m scripts.tf_estimator_215.faults_reference \
        --record tests/data/tf_estimator_215/faults.json
    # Here (tests/test_fault_lines.py): every fault of one behaviour in one
    # process, as a tf.estimator program runs:
    .venv/bin/python -m estimator_rt.compat \
        scripts/tf_estimator_215/faults_reference.py tf1 save_denied ...

A TF1-style model_fn (get_variable, a v1 optimizer's minimize; the graph
engine here) trains in a fresh model_dir per fault, under TF2 behaviour
(`tf2`) or after `tf.compat.v1.disable_v2_behavior()` (`tf1`), and meets
the fault for real:

  save_denied      model_dir stops being writable mid-training (chmod
                   a-w; as root, the process's effective uid becomes
                   nobody's, since root writes anywhere), the next save
                   fails
  save_disk_full   the process's file size limit (RLIMIT_FSIZE) drops
                   below a checkpoint's size mid-training
  start_denied     model_dir is not writable when the Estimator is made
                   and training starts
  damaged_data     the newest checkpoint's .data truncated, then train on
  garbage_index    the newest checkpoint's .index overwritten with garbage
  none_usable      every checkpoint's .data truncated, then train on
  nan_loss         the loss becomes NaN at step 7
  restore_missing  the model_fn gains a variable the checkpoint lacks
  restore_shape    a variable's shape differs from the checkpoint's
  export_denied    export_saved_model into a directory not writable
  sigterm          SIGTERM at step 7 (2.15 had no handler: the process
                   died; recorded by the driver)

The program prints one line `RESULT <json>`: for each fault, what train
(or export) ended with (`raised`: the exception's classes, most derived
first, and its message; or `ok`) and the warnings logged meanwhile.
"""

import json
import logging
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

FAULTS = ('save_denied', 'save_disk_full', 'start_denied', 'damaged_data',
          'garbage_index', 'none_usable', 'nan_loss', 'restore_missing',
          'restore_shape', 'export_denied', 'sigterm')
BEHAVIORS = ('tf2', 'tf1')
# A checkpoint's .data holds this many floats (400 KB), over the file size
# limit save_disk_full sets (the event file and graph.pbtxt stay under it).
_PAD = 100_000
_FILE_SIZE_LIMIT = 200_000
_NOBODY = 65534


def _deny_writes(path):
  """`path` is no longer writable by this process: chmod a-w, and as root
  (who writes anywhere) the effective uid of every thread becomes nobody's
  (glibc's seteuid applies to all of them), to whom it is not either."""
  os.chmod(path, 0o555)
  if os.geteuid() == 0 or os.getuid() == 0:
    os.seteuid(_NOBODY)


def _allow_writes(path):
  if os.getuid() == 0:
    os.seteuid(0)
  os.chmod(path, 0o755)


class _Warnings(logging.Handler):
  """The WARNING and ERROR lines logged (TensorFlow's logger, absl's)."""

  def __init__(self):
    super().__init__(logging.WARNING)
    self.lines = []

  def emit(self, record):
    self.lines.append(record.getMessage())


def _model_fn(features, labels, mode, params):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  v1 = tf.compat.v1
  pad = v1.get_variable('pad', [params.get('pad', 10)],
                        initializer=v1.zeros_initializer())
  w = v1.get_variable('w', [4, 1], initializer=v1.zeros_initializer())
  out = tf.matmul(features['x'], w) + 0.0 * pad[0]
  if params.get('extra'):
    out += v1.get_variable('extra', [1], initializer=v1.zeros_initializer())
  if mode == v1.estimator.ModeKeys.PREDICT:
    return v1.estimator.EstimatorSpec(mode, predictions={'y': out},
                                      export_outputs={
        'y': v1.estimator.export.PredictOutput({'y': out})})
  loss = tf.reduce_mean(tf.square(out - labels))
  global_step = v1.train.get_global_step()
  if params.get('nan_at'):
    loss = tf.where(global_step + 1 >= params['nan_at'],
                    tf.constant(float('nan')), loss)
  if mode == v1.estimator.ModeKeys.EVAL:
    return v1.estimator.EstimatorSpec(mode, loss=loss)
  train_op = v1.train.GradientDescentOptimizer(0.01).minimize(
      loss, global_step=global_step)
  return v1.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = np.random.RandomState(0).rand(8, 4).astype(np.float32)
  y = x.sum(1, keepdims=True)
  return tf.data.Dataset.from_tensors(({'x': x}, y)).repeat()


def _estimator(model_dir, **params):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  config = tf.compat.v1.estimator.RunConfig(save_checkpoints_steps=5,
                                            log_step_count_steps=100)
  return tf.compat.v1.estimator.Estimator(_model_fn, model_dir,
                                          config=config, params=params)


def _at_step(step, action):
  """A hook that calls `action()` once, after the step that reaches
  global step `step`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  class AtStep(tf.compat.v1.train.SessionRunHook):

    def begin(self):
      self._step = tf.compat.v1.train.get_global_step()
      self._done = False

    def before_run(self, run_context):
      return tf.compat.v1.train.SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
      if not self._done and run_values.results + 1 >= step:
        self._done = True
        action()

  return AtStep()


def _damage(model_dir, *, newest_only, part):
  names = sorted(os.listdir(model_dir))
  steps = sorted(int(n[len('model.ckpt-'):-len('.index')]) for n in names
                 if n.startswith('model.ckpt-') and n.endswith('.index'))
  for step in steps[-1:] if newest_only else steps:
    prefix = os.path.join(model_dir, f'model.ckpt-{step}')
    if part == 'data':
      with open(prefix + '.data-00000-of-00001', 'r+b') as f:
        f.truncate(10)
    else:
      with open(prefix + '.index', 'wb') as f:
        f.write(os.urandom(200))


def _run_fault(fault, model_dir):
  """Meets `fault`; returns what the call that met it ended with."""
  est = _estimator(model_dir)
  hooks = []
  if fault == 'save_denied':
    hooks = [_at_step(7, lambda: _deny_writes(model_dir))]
  elif fault == 'save_disk_full':
    est = _estimator(model_dir, pad=_PAD)
    hooks = [_at_step(7, lambda: resource.setrlimit(
        resource.RLIMIT_FSIZE, (_FILE_SIZE_LIMIT, resource.RLIM_INFINITY)))]
  elif fault == 'start_denied':
    os.makedirs(model_dir)
    _deny_writes(model_dir)
    est = _estimator(model_dir)  # 2.15 took it: a read-only one predicts.
  elif fault == 'nan_loss':
    est = _estimator(model_dir, nan_at=7)
  elif fault == 'sigterm':
    hooks = [_at_step(7, lambda: os.kill(os.getpid(), signal.SIGTERM))]
  else:
    est.train(_input_fn, max_steps=10)
    if fault in ('damaged_data', 'garbage_index', 'none_usable'):
      _damage(model_dir, newest_only=fault != 'none_usable',
              part='index' if fault == 'garbage_index' else 'data')
    elif fault == 'restore_missing':
      est = _estimator(model_dir, extra=True)
    elif fault == 'restore_shape':
      est = _estimator(model_dir, pad=20)
    elif fault == 'export_denied':
      export_dir = os.path.join(os.path.dirname(model_dir), 'export')
      os.makedirs(export_dir)
      _deny_writes(export_dir)
      return lambda: est.export_saved_model(export_dir, _serving_input)
  return lambda: est.train(_input_fn, hooks=hooks, max_steps=20)


def _serving_input():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = tf.compat.v1.placeholder(tf.float32, [None, 4], name='x')
  return tf.compat.v1.estimator.export.ServingInputReceiver({'x': x},
                                                            {'x': x})


def _classes(error):
  return [f'{c.__module__}.{c.__qualname__}' for c in type(error).__mro__
          if c not in (object, BaseException, Exception)]


def _one(fault, base):
  handler = _Warnings()
  loggers = [logging.getLogger('tensorflow'), logging.getLogger('absl')]
  for logger in loggers:
    logger.addHandler(handler)
  model_dir = os.path.join(base, fault, 'model')
  os.makedirs(os.path.dirname(model_dir))
  limit = resource.getrlimit(resource.RLIMIT_FSIZE)
  try:
    call = _run_fault(fault, model_dir)
    del handler.lines[:]  # Only what the faulty call logs.
    call()
    result = {'ok': True}
  except BaseException as e:  # pylint: disable=broad-except
    # estimator_rt's PreemptedError is a BaseException (as SystemExit is).
    if type(e) in (SystemExit, KeyboardInterrupt, GeneratorExit):
      raise
    result = {'raised': _classes(e), 'message': str(e)}
  finally:
    resource.setrlimit(resource.RLIMIT_FSIZE, limit)
    if os.getuid() == 0:
      os.seteuid(0)
    for logger in loggers:
      logger.removeHandler(handler)
  result['warnings'] = handler.lines
  return result


def run(behavior, faults):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if behavior == 'tf1':
    tf.compat.v1.disable_v2_behavior()
  # Ignored, a write past RLIMIT_FSIZE fails with EFBIG instead of killing.
  signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
  base = tempfile.mkdtemp()
  os.chmod(base, 0o755)  # nobody (see _deny_writes) reads in there.
  try:
    return {fault: _one(fault, base) for fault in faults}
  finally:
    for root, dirs, _ in os.walk(base):
      for name in dirs:
        os.chmod(os.path.join(root, name), 0o755)
    shutil.rmtree(base, ignore_errors=True)


def _trimmed(record):
  """`record` without what makes it big and says nothing of the faults:
  the frames of TensorFlow's graph tracebacks (their headers and the
  reason stay), and the deprecation warnings 2.15 logged."""
  for results in record.values():
    for result in results.values():
      if 'message' in result:
        result['message'] = '\n'.join(
            line for line in result['message'].splitlines()
            if not line.lstrip().startswith('File "'))
      if 'warnings' in result:
        result['warnings'] = [w for w in result['warnings']
                              if 'deprecated' not in w]
  return record


def _record(path):
  root = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  record = {}
  for behavior in BEHAVIORS:
    record[behavior] = {}
    for fault in FAULTS:
      done = subprocess.run(
          [sys.executable, '-m', 'scripts.tf_estimator_215.faults_reference',
           behavior, fault], capture_output=True, text=True, cwd=root,
          timeout=300, check=False)
      if 'RESULT ' in done.stdout:
        record[behavior].update(json.loads(done.stdout.split('RESULT ', 1)[1]))
      else:  # Killed (sigterm): what the user saw is the exit status.
        record[behavior][fault] = {'exit': done.returncode,
                                   'stderr_tail': done.stderr[-300:]}
  with open(path, 'w', encoding='utf-8') as f:
    json.dump(_trimmed(record), f, indent=1, sort_keys=True)


def main(argv):
  if argv[:1] == ['--record']:
    _record(argv[1])
    return
  behavior, faults = argv[0], argv[1:] or list(FAULTS)
  print('RESULT ' + json.dumps(run(behavior, faults)), flush=True)


if __name__ == '__main__':
  main(sys.argv[1:])
