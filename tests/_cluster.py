"""Helpers for the multi-process cluster tests: a tiny user module, the
launcher run as a subprocess, and tasks started (and always killed) by hand.

Every process started here is bounded by a timeout and ends up dead when the
helper returns: the launcher is asked to stop its tasks (SIGTERM, which it
handles by stopping every task) and killed if it does not; tasks started by
`start_tasks` are SIGKILLed by process group in `stop_tasks`.
"""

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from typing import Dict, List, Optional, Sequence

from estimator_rt.cluster import tf_config as cluster_lib
from estimator_rt.launch import layout as launch_layout

# One definition of each checkpoint reader, in _models; cluster tests reach
# them through this module too.
from _models import checkpoint_steps  # pylint: disable=unused-import
from _models import read_model_variables  # pylint: disable=unused-import

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable
LAUNCHER = [PYTHON, '-m', 'estimator_rt.launch.local']
BINARY = [PYTHON, '-m', 'estimator_rt.main']


def launcher():
  """The launchers' cluster layout (`make_cluster`, `free_ports`), for
  tests that lay a cluster out by hand as the local launcher does."""
  return launch_layout


def task_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
  """The environment of a task: the repo importable, TF quiet, unbuffered."""
  env = dict(os.environ)
  env.pop('TF_CONFIG', None)
  env['PYTHONPATH'] = REPO_ROOT + os.pathsep + env.get('PYTHONPATH', '')
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')
  env['PYTHONUNBUFFERED'] = '1'
  env.update(extra or {})
  return env


def start_run_server(log_path, *, cluster_flag: str, job: str, index: int,
                     extra=()) -> subprocess.Popen:
  """Starts `python -m estimator_rt.run_server` for `job:index`, the
  cluster given as `--cluster=<cluster_flag>` (JSON or @file), its output
  to `log_path`, in its own process group. Pair with `terminate`."""
  with open(log_path, 'w') as log:
    return subprocess.Popen(
        [sys.executable, '-m', 'estimator_rt.run_server',
         f'--cluster={cluster_flag}', f'--job_name={job}',
         f'--task_index={index}', *extra],
        env=task_env({'TF_CPP_MIN_LOG_LEVEL': '2'}), cwd=REPO_ROOT,
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def terminate(processes: Dict[str, subprocess.Popen], *, timeout: float = 30
              ) -> Dict[str, Optional[int]]:
  """SIGTERMs every process still running, then waits for each: their exit
  codes by name, None for one that had to be SIGKILLed after `timeout`."""
  for process in processes.values():
    if process.poll() is None:
      process.send_signal(signal.SIGTERM)
  codes = {}
  for name, process in processes.items():
    try:
      codes[name] = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      os.killpg(process.pid, signal.SIGKILL)
      process.wait()
      codes[name] = None
  return codes


def port_of(address: str) -> int:
  return int(address.rsplit(':', 1)[1])


def port_is_free(port: int) -> bool:
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    try:
      s.bind(('127.0.0.1', port))
      return True
    except OSError:
      return False


def reachable(address: str) -> bool:
  return cluster_lib.reachable(address, timeout=1)


def wait_for(predicate, *, timeout: float, what: str, poll: float = 0.2):
  deadline = time.time() + timeout
  while time.time() < deadline:
    if predicate():
      return
    time.sleep(poll)
  raise AssertionError(f'timed out after {timeout:.0f} s waiting for {what}')


# ------------------------------------------------------- the user module
# A linear regression on 4 features with fixed initial weights (so every
# process, whatever its strategy, starts from the same point) and plain SGD
# (so the update is linear in the gradient: N replicas on batch B must equal
# one on batch N*B). Options come through params (--params JSON):
#   ids_dir: TRAIN steps append the example ids they train on to
#     <ids_dir>/ids_<task>.txt (from the compiled step, not the eager build
#     call, which sees an unsharded sample batch).
#   context_dir: context_input_fn appends each InputContext it is given to
#     <context_dir>/context_<task>.txt.
#   chief_hang_marker: the PS chief, in its eager TRAIN build call under
#     the strategy (after it connected to the cluster; not in the call that
#     tells the engine, made before), creates this file and sleeps, so a
#     test can kill it mid-run.
#   nan_at_step, nan_task: the TRAIN loss of global step nan_at_step is NaN
#     on task nan_task ('worker_1') only.
TINY_MODEL_SOURCE = textwrap.dedent('''
    import json
    import os
    import time

    import keras
    import numpy as np
    import tensorflow as tf

    import estimator_rt as ert

    NUM_FEATURES = 4
    TRUE_W = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    INITIAL_KERNEL = (0.1 * np.random.RandomState(7).randn(NUM_FEATURES, 1)
                      ).astype(np.float32)


    def task_name():
      config = json.loads(os.environ.get('TF_CONFIG') or '{}')
      task = config.get('task')
      return f"{task['type']}_{task['index']}" if task else 'local'


    def no_autotune(ds):
      options = tf.data.Options()
      options.autotune.enabled = False
      return ds.with_options(options)


    def data(n, seed=0):
      rng = np.random.RandomState(seed)
      x = rng.randn(n, NUM_FEATURES).astype(np.float32)
      return x, (x @ TRUE_W + 0.5).astype(np.float32)


    def model_fn(features, labels, mode, params):
      layer = keras.layers.Dense(
          1, kernel_initializer=keras.initializers.Constant(INITIAL_KERNEL),
          bias_initializer='zeros', name='dense')
      out = layer(features['x'])
      placement_log = params.get('placement_log')
      if placement_log:  # Where each mode's variables were placed.
        kernel = getattr(layer.kernel, 'value', layer.kernel)
        with open(placement_log, 'a') as f:
          f.write(f'{mode} {kernel.device}\\n')
      if mode == ert.ModeKeys.PREDICT:
        return ert.EstimatorSpec(mode, predictions={'y': out})
      loss = tf.reduce_mean(tf.square(out - labels))
      if mode == ert.ModeKeys.EVAL:
        mae = keras.metrics.MeanAbsoluteError()
        mae.update_state(labels, out)
        return ert.EstimatorSpec(mode, loss=loss, eval_metric_ops={'mae': mae})
      marker = params.get('chief_hang_marker')
      if (marker and not tf.inside_function() and
          tf.distribute.has_strategy() and task_name() == 'chief_0'):
        with open(marker, 'w') as f:
          f.write('building')
        time.sleep(300)
      nan_at_step = params.get('nan_at_step')
      if nan_at_step and task_name() == params.get('nan_task'):
        hit = tf.equal(ert.get_global_step() + 1, nan_at_step)
        loss = loss * tf.where(hit, float('nan'), 1.0)
      ids_dir = params.get('ids_dir')
      if ids_dir and 'id' in features and tf.inside_function():
        stream = 'file://' + os.path.join(ids_dir, f'ids_{task_name()}.txt')
        with tf.control_dependencies([tf.print(
            features['id'], summarize=-1, output_stream=stream)]):
          loss = tf.identity(loss)
      return ert.EstimatorSpec(
          mode, loss=loss,
          optimizer=keras.optimizers.SGD(params.get('learning_rate', 0.05)))


    def global_input_fn(params):
      """Globally batched; params num_examples, epochs (None: forever)."""
      n = params.get('num_examples', 64)
      x, y = data(n)
      ds = tf.data.Dataset.from_tensor_slices(
          ({'x': x, 'id': np.arange(n, dtype=np.int64)}, y))
      epochs = params.get('epochs')
      ds = ds.repeat(epochs) if epochs else ds.repeat()
      return no_autotune(ds.batch(params['batch_size']))


    def context_input_fn(params, input_context):
      """Shards and batches itself; records the context it was given."""
      record_dir = params.get('context_dir')
      if record_dir:
        with open(os.path.join(record_dir, f'context_{task_name()}.txt'),
                  'a') as f:
          f.write(json.dumps([input_context.num_input_pipelines,
                              input_context.input_pipeline_id,
                              input_context.num_replicas_in_sync]) + '\\n')
      x, y = data(256)
      ds = tf.data.Dataset.from_tensor_slices(({'x': x}, y)).shard(
          input_context.num_input_pipelines, input_context.input_pipeline_id)
      return no_autotune(ds.repeat().batch(
          input_context.get_per_replica_batch_size(params['batch_size'])))


    def eval_input_fn(params):
      x, y = data(64, seed=1)
      return no_autotune(
          tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(32))
''')


def address_not_of_this_machine() -> str:
  """An IPv4 address that no interface of this machine has. Documentation
  ranges, checked: this sandbox's own eth0 sits in 192.0.2.0/24."""
  for candidate in ('198.51.100.7', '203.0.113.7', '192.0.2.7'):
    with socket.socket() as probe:
      try:
        probe.bind((candidate, 0))
      except OSError:
        return candidate
  raise RuntimeError('every documentation address is this machine\'s')


def outward_address() -> Optional[str]:
  """This machine's address on its route off the machine, or None when it
  has no such route (or only a loopback one)."""
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
    try:
      probe.connect((address_not_of_this_machine(), 9))
    except OSError:
      return None
    address = probe.getsockname()[0]
  return None if address.startswith('127.') else address


def write_tiny_model(directory) -> str:
  """Writes the tiny user module; returns its path (for `path.py:attr`)."""
  path = os.path.join(str(directory), 'tiny_model.py')
  with open(path, 'w') as f:
    f.write(TINY_MODEL_SOURCE)
  return path


def tiny_flags(module_path: str, *, input_fn: str = 'global_input_fn',
               params: Optional[dict] = None) -> List[str]:
  """Binary flags naming the tiny module's functions."""
  return [f'--model_fn={module_path}:model_fn',
          f'--input_fn={module_path}:{input_fn}',
          f'--eval_input_fn={module_path}:eval_input_fn',
          '--params=' + json.dumps(params or {'batch_size': 16})]


# ------------------------------------------------------------- launcher
@dataclasses.dataclass
class ClusterRun:
  """What one launcher run left behind."""

  launcher_code: int
  status: Optional[dict]  # --status_file: {'chief': code, 'tasks': {...}}
  output: str
  elapsed_secs: float

  @property
  def codes(self) -> Dict[str, Optional[int]]:
    return (self.status or {}).get('tasks', {})

  def log(self, task: str) -> str:
    """The output lines of one task ('worker:1'), without the prefix."""
    prefix = f'[{task}] '
    return '\n'.join(line[len(prefix):] for line in self.output.splitlines()
                     if line.startswith(prefix))

  def tail(self, chars: int = 6000) -> str:
    return self.output[-chars:]


def _stop_launcher(process: subprocess.Popen) -> str:
  """SIGTERM makes the launcher stop its tasks (each in its own process
  group, so killing the launcher alone would orphan them); SIGKILL if it
  does not exit. Returns what it printed."""
  process.send_signal(signal.SIGTERM)
  try:
    output, _ = process.communicate(timeout=90)
  except subprocess.TimeoutExpired:
    os.killpg(process.pid, signal.SIGKILL)
    output, _ = process.communicate()
  return output or ''


def run_launcher(tmp_path, *, args: List[str], workers: int, ps: int = 0,
                 chief: bool = False, evaluator: bool = False,
                 grace_secs: float = 40, timeout_secs: float = 240,
                 env: Optional[Dict[str, str]] = None) -> ClusterRun:
  """Runs `python -m estimator_rt.launch.local` with the binary and `args`.

  Bounded: the launcher stops the chief after `timeout_secs` and every
  other task `grace_secs` after the chief; if the launcher itself overruns,
  it gets SIGTERM (it then stops all tasks) and then SIGKILL.
  """
  status_file = os.path.join(str(tmp_path), 'launcher_status.json')
  command = [*LAUNCHER, f'--workers={workers}', f'--ps={ps}',
             f'--grace_secs={grace_secs}', f'--timeout_secs={timeout_secs}',
             f'--status_file={status_file}']
  command += ['--chief'] if chief else []
  command += ['--evaluator'] if evaluator else []
  command += ['--'] + BINARY + list(args)
  start = time.time()
  process = subprocess.Popen(command, env=task_env(env), cwd=REPO_ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, start_new_session=True)
  try:
    output, _ = process.communicate(timeout=timeout_secs + grace_secs + 90)
  except subprocess.TimeoutExpired:
    output = _stop_launcher(process)
    raise AssertionError('the launcher overran its own time limits:\n'
                         + output[-6000:])
  finally:
    if process.poll() is None:  # Interrupted: still stop every task.
      _stop_launcher(process)
  status = None
  if os.path.exists(status_file):
    with open(status_file) as f:
      status = json.load(f)
  return ClusterRun(launcher_code=process.returncode, status=status,
                    output=output, elapsed_secs=time.time() - start)


# ----------------------------------------------------- tasks by hand
@dataclasses.dataclass
class Task:
  name: str  # 'ps:0'
  process: subprocess.Popen
  log_path: str

  def log(self) -> str:
    with open(self.log_path, errors='replace') as f:
      return f.read()


def start_tasks(log_dir, *, cluster: Dict[str, List[str]],
                tasks: List[tuple], command: List[str],
                env: Optional[Dict[str, str]] = None) -> Dict[str, Task]:
  """Starts `command` once per (job, index) in `tasks` with its TF_CONFIG.

  Each task runs in its own process group, output to <log_dir>/<job>_<i>.log.
  Always pair with `stop_tasks` in a finally.
  """
  started = {}
  for job, index in tasks:
    name = f'{job}:{index}'
    log_path = os.path.join(str(log_dir), f'{job}_{index}.log')
    task_environment = task_env(env)
    task_environment['TF_CONFIG'] = json.dumps(
        {'cluster': cluster, 'task': {'type': job, 'index': index}})
    with open(log_path, 'w') as log:
      process = subprocess.Popen(command, env=task_environment, cwd=REPO_ROOT,
                                 stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    started[name] = Task(name=name, process=process, log_path=log_path)
  return started


def kill_task(task: Task) -> None:
  if task.process.poll() is None:
    try:
      os.killpg(task.process.pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
  task.process.wait(timeout=30)


def stop_tasks(tasks: Dict[str, Task]) -> None:
  for task in tasks.values():
    kill_task(task)


def wait_task(task: Task, *, deadline: float) -> Optional[int]:
  """The task's exit code, or None if it still runs at `deadline`."""
  try:
    return task.process.wait(timeout=max(0.0, deadline - time.time()))
  except subprocess.TimeoutExpired:
    return None


def wait_tasks(tasks: Dict[str, Task], names: List[str], *,
               timeout: float) -> Dict[str, Optional[int]]:
  """Each named task's exit code (None: still running after `timeout` s
  in all)."""
  deadline = time.time() + timeout
  return {name: wait_task(tasks[name], deadline=deadline) for name in names}


def wait_then_stop(tasks: Dict[str, Task], names: List[str], *,
                   timeout: float) -> Dict[str, Optional[int]]:
  """wait_tasks, then stop_tasks on every task whatever happened."""
  try:
    return wait_tasks(tasks, names, timeout=timeout)
  finally:
    stop_tasks(tasks)


def tails(tasks: Dict[str, Task], names: List[str]) -> str:
  """The end of each named task's log, for an assertion message."""
  return '\n'.join(f'--- {n}\n{tasks[n].log()[-2500:]}' for n in names)


# ---------------------------------------------- launcher in the background
@dataclasses.dataclass
class BackgroundLauncher:
  """A launcher started by `start_launcher`, its output going to a file so
  a test can read it (and the launcher's --pid_file) while it runs.
  Always pair with `stop` in a finally."""

  process: subprocess.Popen
  output_path: str
  status_file: str
  pid_file: str
  started: float

  def output(self) -> str:
    with open(self.output_path, errors='replace') as f:
      return f.read()

  def pids(self) -> Dict[str, int]:
    """Each task's current process id ({} before the first start)."""
    try:
      with open(self.pid_file) as f:
        return json.load(f)
    except FileNotFoundError:
      return {}

  def wait(self, *, timeout: float) -> ClusterRun:
    """Waits up to `timeout` for the launcher to exit on its own; stops it
    and fails the test if it does not."""
    try:
      self.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      self.stop()
      raise AssertionError(f'the launcher ran over {timeout:.0f} s:\n'
                           + self.output()[-6000:])
    status = None
    if os.path.exists(self.status_file):
      with open(self.status_file) as f:
        status = json.load(f)
    return ClusterRun(launcher_code=self.process.returncode, status=status,
                      output=self.output(),
                      elapsed_secs=time.time() - self.started)

  def stop(self) -> None:
    """SIGTERM (the launcher stops its tasks), SIGKILL if it lingers."""
    if self.process.poll() is not None:
      return
    self.process.send_signal(signal.SIGTERM)
    try:
      self.process.wait(timeout=90)
    except subprocess.TimeoutExpired:
      os.killpg(self.process.pid, signal.SIGKILL)
      self.process.wait()


def start_launcher(tmp_path, *, args: List[str], workers: int, ps: int = 0,
                   chief: bool = False, evaluator: bool = False,
                   launcher_args: Sequence[str] = (),
                   env: Optional[Dict[str, str]] = None
                   ) -> BackgroundLauncher:
  """Starts `python -m estimator_rt.launch.local` with the binary and
  `args`, in the background, with --status_file and --pid_file under `tmp_path`.
  `launcher_args` go to the launcher (--max_restarts, --grace_secs, ...)."""
  tmp = str(tmp_path)
  status_file = os.path.join(tmp, 'launcher_status.json')
  pid_file = os.path.join(tmp, 'launcher_pids.json')
  output_path = os.path.join(tmp, 'launcher_output.txt')
  command = [*LAUNCHER, f'--workers={workers}', f'--ps={ps}',
             f'--status_file={status_file}', f'--pid_file={pid_file}']
  command += ['--chief'] if chief else []
  command += ['--evaluator'] if evaluator else []
  command += list(launcher_args) + ['--'] + BINARY + list(args)
  with open(output_path, 'w') as output:
    process = subprocess.Popen(command, env=task_env(env), cwd=REPO_ROOT,
                               stdout=output, stderr=subprocess.STDOUT,
                               start_new_session=True)
  return BackgroundLauncher(process=process, output_path=output_path,
                            status_file=status_file, pid_file=pid_file,
                            started=time.time())


def group_alive(pgid: int) -> bool:
  """Whether any process is left in process group `pgid` (a launcher task
  runs in its own group, led by the task's process)."""
  try:
    os.killpg(pgid, 0)
    return True
  except ProcessLookupError:
    return False
