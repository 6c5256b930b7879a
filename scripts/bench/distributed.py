"""The distributed part of the benchmark (`python -m scripts.bench
--distributed`).

W2 on two loopback clusters, each task a fresh process of
`scripts.bench.cluster_worker`:

  multi_worker_mirrored: 2 workers;
  parameter_server: a chief, 2 workers and 1 ps.

Three sides run on each, alternating their order from round to round:

  bare: a plain TF2 program with the same strategy and cluster (the same
    step, loop and, under parameter_server, the same split of each loop's
    steps between the workers);
  runtime: every task runs estimator_rt's train_and_evaluate from TF_CONFIG;
  client: a standalone client outside the cluster driving servers started
    by `python -m estimator_rt.run_server`: synchronous (in-graph over the 2
    workers) for multi_worker_mirrored, asynchronous (a coordinator over the
    2 workers and 1 ps) for parameter_server.

Reported: the steady-state global steps/s the reporting task saw (worker
0, the chief, the client), runtime/bare (target >= 0.95) and
client/runtime (the same cluster driven from outside against run
in-process; no target).

Imports only the standard library, the benchmark's stdlib modules and the
project's cluster and launch layout modules (which import no TensorFlow),
as the parent (`scripts.bench.__main__`) does.
"""

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

from estimator_rt.cluster import tf_config as cluster_lib
from estimator_rt.launch import layout
from scripts.bench.processes import module_command
from scripts.bench.processes import REPO_ROOT
from scripts.bench.protocol import read_result

WORKLOAD = 'W2'
SIDES = ('bare', 'runtime', 'client')
# The clusters, as launch layouts take them.
CLUSTERS = {
    'multi_worker_mirrored': dict(workers=2, ps=0, chief=False),
    'parameter_server': dict(workers=2, ps=1, chief=True),
}
# Global steps per run: about 10-15 s of steady state on a 2-core machine
# (shorter runs varied by 15% between rounds).
DEFAULT_STEPS = {'multi_worker_mirrored': 6000, 'parameter_server': 6000}
SPEED_TARGET = 0.95  # runtime/bare, both strategies.
# How long tasks other than the reporting one get to end by themselves
# once it has (a runtime server waits for the chief's signal).
_FOLLOWERS_EXIT_S = 60
# How long the parent waits for server ports before starting the task
# that connects to them.
_SERVERS_UP_S = 120


class ClusterRunError(RuntimeError):
  """A task of a distributed benchmark run failed, timed out, or the
  reporting task printed no result."""


def _reporting_task(strategy: str, side: str):
  if side == 'client':
    return ('client', 0)
  return ('chief', 0) if CLUSTERS[strategy]['chief'] else ('worker', 0)


class _Task:
  """One process of a run, its output in files (many processes' pipes
  could fill up unread)."""

  def __init__(self, name: str, command: List[str], env: Dict[str, str],
               log_dir: str):
    self.name = name
    self.stdout_path = os.path.join(log_dir, f'{name}.out')
    self.stderr_path = os.path.join(log_dir, f'{name}.err')
    with open(self.stdout_path, 'w') as out, open(self.stderr_path,
                                                  'w') as err:
      # Its own process group: killing it kills whatever it started (the
      # run_server relaunch).
      self.process = subprocess.Popen(command, stdout=out, stderr=err,
                                      env=env, cwd=REPO_ROOT,
                                      start_new_session=True)

  def wait(self, timeout_s: float):
    try:
      return self.process.wait(timeout=max(0.0, timeout_s))
    except subprocess.TimeoutExpired:
      return None

  def signal(self, signum: int) -> None:
    try:
      os.killpg(self.process.pid, signum)
    except ProcessLookupError:
      pass

  def tail(self, chars: int = 2000) -> str:
    with open(self.stderr_path, errors='replace') as f:
      return f'--- {self.name} stderr tail:\n{f.read()[-chars:]}'

  def result(self):
    with open(self.stdout_path, errors='replace') as f:
      return read_result(f.read())


def _worker_command(side, strategy, steps, model_dir, remote_cluster=None):
  command = module_command('cluster_worker', '--side', side, '--strategy',
                           strategy, '--workload', WORKLOAD, '--steps',
                           str(steps), '--model_dir', model_dir)
  if remote_cluster is not None:
    command += ['--remote_cluster', json.dumps(remote_cluster)]
  return command


def run_cluster(side: str, strategy: str, steps: int, *, timeout_s: float,
                env: Dict[str, str]) -> dict:
  """One run of `side` on a fresh loopback cluster for `strategy`; returns
  the reporting task's result. Every process started is gone on return.

  Raises:
    ClusterRunError: a task exited non-zero (servers the parent stops
      excepted), the run took over `timeout_s`, or no result was printed.
  """
  shape = dict(CLUSTERS[strategy])
  if side == 'client':
    shape['chief'] = False  # The client is the chief (remote_cluster).
  cluster = layout.make_cluster(evaluator=False, **shape)
  scratch = tempfile.mkdtemp(prefix=f'bench_{strategy}_{side}_')
  model_dir = os.path.join(scratch, 'model_dir')
  reporter_key = _reporting_task(strategy, side)
  # Which tasks the parent stops (they serve until killed) rather than
  # waits for.
  stopped_by_parent = (side == 'client' or
                       (side == 'bare' and strategy == 'parameter_server'))
  tasks: Dict[tuple, _Task] = {}
  reporter = None
  deadline = time.monotonic() + timeout_s
  try:
    for job, index in layout.start_order(cluster):
      name = f'{job}{index}'
      task_env = dict(env)
      if side == 'client':
        command = [sys.executable, '-m', 'estimator_rt.run_server',
                   '--cluster', json.dumps(cluster), '--job_name', job,
                   '--task_index', str(index)]
      else:
        task_env['TF_CONFIG'] = json.dumps(
            {'cluster': cluster, 'task': {'type': job, 'index': index}})
        command = _worker_command(side, strategy, steps, model_dir)
      if (job, index) == reporter_key:
        continue  # Started last, below.
      tasks[(job, index)] = _Task(name, command, task_env, scratch)
    if side == 'client' or strategy == 'parameter_server':
      # The reporting task connects to servers: start it once they listen
      # (a bare ParameterServerStrategy would otherwise retry on its own
      # schedule, which the timing would include).
      addresses = [cluster[job][index] for job, index in tasks]
      servers_deadline = min(deadline, time.monotonic() + _SERVERS_UP_S)
      while not all(cluster_lib.reachable(a, timeout=1.0)
                     for a in addresses):
        if time.monotonic() > servers_deadline:
          raise ClusterRunError(f'{strategy} {side}: servers at {addresses} '
                                'did not listen in time.\n'
                                + '\n'.join(t.tail() for t in tasks.values()))
        for task in tasks.values():
          if task.process.poll() is not None:
            raise ClusterRunError(
                f'{strategy} {side}: {task.name} exited with '
                f'{task.process.returncode} before the run began.\n'
                + task.tail())
        time.sleep(0.2)
    if side == 'client':
      command = _worker_command(side, strategy, steps, model_dir,
                                remote_cluster=cluster)
      reporter_env = dict(env)
    else:
      reporter_env = dict(env)
      reporter_env['TF_CONFIG'] = json.dumps(
          {'cluster': cluster,
           'task': {'type': reporter_key[0], 'index': reporter_key[1]}})
      command = _worker_command(side, strategy, steps, model_dir)
    launched = time.time()
    reporter = _Task(f'{reporter_key[0]}{reporter_key[1]}', command,
                     reporter_env, scratch)
    code = reporter.wait(deadline - time.monotonic())
    if code is None:
      raise ClusterRunError(
          f'{strategy} {side}: {reporter.name} ran past {timeout_s} s.\n'
          + '\n'.join(t.tail() for t in [reporter, *tasks.values()]))
    if code != 0:
      raise ClusterRunError(
          f'{strategy} {side}: {reporter.name} exited with {code}.\n'
          + '\n'.join(t.tail() for t in [reporter, *tasks.values()]))
    result = reporter.result()
    if result is None:
      raise ClusterRunError(f'{strategy} {side}: {reporter.name} printed no '
                            'result.\n' + reporter.tail())
    if not stopped_by_parent:
      for task in tasks.values():
        code = task.wait(min(_FOLLOWERS_EXIT_S, deadline - time.monotonic()))
        if code != 0:
          raise ClusterRunError(
              f'{strategy} {side}: {task.name} '
              + ('did not exit' if code is None else f'exited with {code}')
              + ' after the run.\n' + task.tail())
    result['first_step_s'] = result['first_step_wall'] - launched
    return result
  finally:
    if reporter is not None and reporter.process.poll() is None:
      reporter.signal(signal.SIGKILL)  # It ran past the deadline.
      reporter.wait(30)
    for task in tasks.values():
      # run_server exits 0 on SIGTERM; a bare server only dies.
      task.signal(signal.SIGTERM if side == 'client' else signal.SIGKILL)
    for task in tasks.values():
      if task.wait(30) is None:
        task.signal(signal.SIGKILL)
        task.wait(30)
    # The model_dir and the logs (errors above carry the logs' tails).
    shutil.rmtree(scratch, ignore_errors=True)


def summarize(runs: Dict[str, Dict[str, List[dict]]]) -> Dict[str, dict]:
  """Per strategy: each side's median steps/s, runtime/bare (with the
  target) and client/runtime, of medians and paired per round."""
  summary = {}
  for strategy, by_side in runs.items():
    medians = {side: statistics.median(r['steps_per_sec'] for r in results)
               for side, results in by_side.items()}

    def paired(a, b):
      return statistics.median(x['steps_per_sec'] / y['steps_per_sec']
                               for x, y in zip(by_side[a], by_side[b]))

    ratio = medians['runtime'] / medians['bare']
    summary[strategy] = {
        'steps_per_sec': medians,
        'runs': {side: [{k: r[k] for k in ('steps', 'steps_per_sec',
                                            'first_step_s')}
                        for r in results]
                 for side, results in by_side.items()},
        'runtime_over_bare': ratio,
        'paired_runtime_over_bare': paired('runtime', 'bare'),
        'target': SPEED_TARGET,
        'meets': ratio >= SPEED_TARGET,
        'client_over_runtime': medians['client'] / medians['runtime'],
        'paired_client_over_runtime': paired('client', 'runtime'),
    }
  return summary


def format_table(summary: Dict[str, dict]) -> str:
  """The summary as a Markdown table ('*': target missed)."""
  rows = ['| W2 cluster (loopback) | bare steps/s | runtime steps/s | ratio '
          'runtime/bare | paired | target | standalone client steps/s | '
          'client/runtime | paired |',
          '|' + '---|' * 9]
  for strategy, s in summary.items():
    shape = CLUSTERS[strategy]
    cluster = (('chief, ' if shape['chief'] else '') +
               f"{shape['workers']} workers" +
               (f", {shape['ps']} ps" if shape['ps'] else ''))
    rows.append(
        f"| {strategy} ({cluster}) | {s['steps_per_sec']['bare']:,.0f} | "
        f"{s['steps_per_sec']['runtime']:,.0f} | "
        f"{s['runtime_over_bare']:.3f}{'' if s['meets'] else ' *'} | "
        f"{s['paired_runtime_over_bare']:.3f} | >= {s['target']} | "
        f"{s['steps_per_sec']['client']:,.0f} | "
        f"{s['client_over_runtime']:.3f} | "
        f"{s['paired_client_over_runtime']:.3f} |")
  return '\n'.join(rows)


def run(*, rounds: int, steps: Dict[str, int], timeout_s: float,
        env: Dict[str, str], strategies=tuple(CLUSTERS)) -> Dict[str, dict]:
  """Every side on every strategy's cluster, `rounds` times, rotating the
  order of the sides; returns `summarize` of the runs."""
  runs = {s: {side: [] for side in SIDES} for s in strategies}
  for round_index in range(rounds):
    shift = round_index % len(SIDES)
    order = SIDES[shift:] + SIDES[:shift]
    for strategy in strategies:
      for side in order:
        result = run_cluster(side, strategy, steps[strategy],
                             timeout_s=timeout_s, env=env)
        runs[strategy][side].append(result)
        print(f'round {round_index + 1}/{rounds} W2 {strategy} {side:8s}: '
              f"{result['steps_per_sec']:9,.0f} global steps/s, first step "
              f"{result['first_step_s']:.2f} s after its start",
              file=sys.stderr, flush=True)
  return summarize(runs)
