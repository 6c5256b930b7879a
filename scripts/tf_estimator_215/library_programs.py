"""What the library program runners share (run_easyrec.py,
run_object_detection.py): the two environments, a bounded child process,
and what a finished run left in its model_dir."""

import datetime
import glob
import json
import os
import signal
import subprocess
from typing import Dict, List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
HARNESS = os.path.join(_HERE, 'library_harness')
REFERENCE_DIR = os.path.join(REPO_ROOT, 'tests', 'data', 'tf_estimator_215')
HERE_DIR = os.path.join(_HERE, 'own_tests')
PYTHON_HERE = os.path.join(REPO_ROOT, '.venv-libraries', 'bin', 'python')
PYTHON_215 = os.path.join(REPO_ROOT, '.venv-tf215-libraries', 'bin',
                          'python')


def runner(python: str, reference: bool) -> List[str]:
  """How a program runs: plainly on 2.15, through the compat runner here."""
  return [python] if reference else [python, '-m', 'estimator_rt.compat']


def environment(reference: bool, paths: List[str],
                **variables: str) -> Dict[str, str]:
  """The child's environment: the harness first on PYTHONPATH, then (here)
  the repository, then `paths`."""
  path = [HARNESS] + ([] if reference else [REPO_ROOT]) + paths
  return dict(os.environ, PYTHONPATH=os.pathsep.join(path),
              TF_CPP_MIN_LOG_LEVEL='2', CUDA_VISIBLE_DEVICES='',
              PYTHONDONTWRITEBYTECODE='1', **variables)


def run(command: List[str], env: Dict[str, str], cwd: str, log: str,
        timeout: float) -> Optional[int]:
  """Runs `command` in its own process group, output to `log`, killed after
  `timeout` seconds; its exit code, None if killed."""
  with open(log, 'w') as out:
    child = subprocess.Popen(command, env=env, cwd=cwd, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
      return child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      os.killpg(child.pid, signal.SIGKILL)
      child.wait()
      return None


def last_error(log: str) -> str:
  """The log's last line naming an error (else its last line)."""
  with open(log, errors='replace') as f:
    lines = [l.strip() for l in f if l.strip()]
  errors = [l for l in lines if 'Error' in l.split(':')[0]]
  return (errors or lines or [''])[-1][:300]


def checkpoint_steps(model_dir: str) -> List[int]:
  return sorted({int(p.split('model.ckpt-')[1].split('.')[0]) for p in
                 glob.glob(os.path.join(model_dir, 'model.ckpt-*.index'))})


def final_eval(model_dir: str) -> Dict[str, float]:
  """The last step's scalar summaries in the eval event files
  (model_dir/eval*/), and that step."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  found = {}
  for path in sorted(glob.glob(os.path.join(model_dir, 'eval*', 'events.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.HasField('simple_value'):
          found[(event.step, value.tag)] = value.simple_value
        elif value.HasField('tensor'):
          array = tf.make_ndarray(value.tensor)
          if array.size == 1 and array.dtype.kind == 'f':
            found[(event.step, value.tag)] = float(array)
  if not found:
    return {}
  last = max(step for step, _ in found)
  metrics = {tag: round(v, 6) for (step, tag), v in sorted(found.items())
             if step == last}
  return dict(metrics, step=last)


def exports(model_dir: str) -> List[str]:
  """The exporters that wrote a SavedModel under model_dir/export."""
  return sorted({os.path.relpath(p, model_dir).split(os.sep)[1] for p in
                 glob.glob(os.path.join(model_dir, 'export', '*', '*',
                                        'saved_model.pb'))})


def versions(python: str) -> Dict[str, str]:
  """`python`'s Python and TensorFlow versions."""
  code = ('import platform, importlib.metadata as m\n'
          'names = {d.metadata["Name"] for d in m.distributions()}\n'
          'tf = "tensorflow" if "tensorflow" in names else "tensorflow-cpu"\n'
          'print(platform.python_version(), m.version(tf))')
  python_version, tf_version = subprocess.run(
      [python, '-c', code], capture_output=True, text=True, timeout=120,
      check=True).stdout.split()
  return {'python': python_version, 'tensorflow': tf_version}


def write_results(name: str, reference: bool, python: str,
                  results: Dict[str, object], **about: str) -> str:
  """Writes tests/data/tf_estimator_215/<name>.json (2.15) or
  own_tests/<name>_estimator_rt.json; returns the path."""
  path = (os.path.join(REFERENCE_DIR, f'{name}.json') if reference else
          os.path.join(HERE_DIR, f'{name}_estimator_rt.json'))
  with open(path, 'w') as f:
    json.dump(dict(about, date=datetime.date.today().isoformat(),
                   results=results, **versions(python)),
              f, indent=1, sort_keys=True)
    f.write('\n')
  return path
