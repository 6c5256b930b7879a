"""Benchmark: estimator_rt against a bare TF2 loop on the same workloads.

    PYTHONPATH=. python scripts/benchmark.py [--rounds 3] [--workloads W1,W3]
        [--steps W1=60000,W3=800] [--peers] [--json]

For each workload (W1 linear model on batches of 64, W2 the MLP on the
bundled digits with Adam, batch 128, W3 the CNN on 32x32x3 synthetic images,
batch 128), each round runs the bare loop and the runtime once each, every
run in a fresh process (scripts/_bench_worker.py), alternating which goes
first (round 1: bare then runtime, round 2: runtime then bare, ...) so that
neither side always runs on a warmer or cooler machine. Both use the
project's own model_fn / input_fn definitions; the bare loop builds the same
Keras layers once and runs a `tf.function` of 100 steps per call.

It reports, as medians over rounds:

* steady-state steps/s of each side and their ratio runtime/bare (target:
  >= 0.98 on each workload);
* time from process start (just before the parent starts the child) to the
  end of the first training step, and the difference runtime - bare
  (target: <= 0.3 s);
* peak RSS of each process and the ratio runtime/bare (target: <= 1.2).

With --peers, two more sides run in the same rotation: Keras 3 `fit` with
steps_per_execution=100 on the bare side's model, optimizer, loss and
dataset (_bench_worker.py --side keras_fit), and tf.estimator 2.15 in its own
environment (.venv-tf215, made by `make bench-peers`; _bench_tf_estimator.py)
with the same model written as its users wrote it, on the same arrays and
pipeline; a table gives the ratios runtime/peer (targets: >= 1.0 against
Keras fit on W1-W3; >= 3 and >= 1.8 against tf.estimator on W1 and W2).

With the tf.estimator peer, the same rounds then time a local
`train_and_evaluate` on W1 and W2 (2,000 steps, a checkpoint every 500,
20 eval batches after each, throttle_secs=0) by the runtime and by
tf.estimator, each in a fresh process, from process start until
train_and_evaluate returns (target: runtime <= 0.5x tf.estimator).

A further table helps explain the first: the median of each round's paired
steps/s ratio (the two runs of a round ran back to back), process CPU time
per 100 steps (all threads; less sensitive than wall time to other
processes on the machine), the runtime's median time per loop outside its
compiled call (hooks, summaries, logging), and the first-step time split
into imports and what follows them.

This script itself imports nothing heavy: all TensorFlow work happens in the
children, so the parent's own state cannot favour either side.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

import _bench_distributed
from _bench_tf_estimator import read_result
from _bench_tf_estimator import RESULT_PREFIX

_SCRIPTS_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(_SCRIPTS_DIR)
_WORKER = os.path.join(_SCRIPTS_DIR, '_bench_worker.py')
_TF_ESTIMATOR_WORKER = os.path.join(_SCRIPTS_DIR, '_bench_tf_estimator.py')
# The Python of tf.estimator 2.15 (TensorFlow 2.15.1, tensorflow-estimator
# 2.15.0), made by scripts/tf_estimator_215/make_venv.sh (`make
# bench-peers`): never installed by `make test`.
PEER_PYTHON = os.path.join(_REPO_ROOT, '.venv-tf215', 'bin', 'python')

WORKLOADS = ('W1', 'W2', 'W3')

# Steps per run, chosen so that each child has about 5-10 s of steady state
# on a 2-core CPU machine (bare W1 6,000-14,000 steps/s, W2 3,000-5,000,
# W3 ~100). Multiples of 100, so that every loop after the first two is a
# full one.
DEFAULT_STEPS = {'W1': 60000, 'W2': 30000, 'W3': 800}

# Minimum steps/s ratio runtime/bare per workload.
SPEED_TARGETS = {'W1': 0.98, 'W2': 0.98, 'W3': 0.98}
# Most seconds the runtime's first step may come after the bare loop's.
FIRST_STEP_TARGET_S = 0.3
# The peers (--peers): Keras 3 fit with steps_per_execution=100, and
# tf.estimator 2.15 in its own environment; minimum steps/s ratios
# runtime/peer (None: no target).
PEERS = ('keras_fit', 'tf_estimator')
# The local train_and_evaluate compared with tf.estimator's (--peers with
# tf_estimator): steps, checkpoint interval, eval batches after each
# checkpoint; the most wall time runtime/tf.estimator; on which workloads.
TAE_STEPS = 2000
TAE_CHECKPOINT_EVERY = 500
TAE_EVAL_STEPS = 20
TAE_TARGET = 0.5
TAE_WORKLOADS = ('W1', 'W2')
PEER_SPEED_TARGETS = {
    'keras_fit': {'W1': 1.0, 'W2': 1.0, 'W3': 1.0},
    'tf_estimator': {'W1': 3.0, 'W2': 1.8, 'W3': None},
}
# Largest peak-RSS ratio runtime/bare.
MEMORY_TARGET = 1.2

DEFAULT_TIMEOUT_S = 300


def _child_env() -> Dict[str, str]:
  """The environment of every child: the same for both sides."""
  env = dict(os.environ)
  env['PYTHONPATH'] = _REPO_ROOT + (
      os.pathsep + env['PYTHONPATH'] if env.get('PYTHONPATH') else '')
  # TensorFlow's C++ INFO/WARNING lines only add noise to stderr.
  env['TF_CPP_MIN_LOG_LEVEL'] = '2'
  # Unbuffered, so that a child killed on timeout still leaves its output.
  env['PYTHONUNBUFFERED'] = '1'
  return env


class ChildError(RuntimeError):
  """A benchmark child failed, timed out, or printed no result."""


def peer_data_path(workload: str, directory: str) -> str:
  return os.path.join(directory, f'{workload}.npz')


def write_peer_data(workloads: List[str], directory: str, *,
                    env: Dict[str, str], timeout_s: float) -> None:
  """Saves the arrays each workload's input_fn draws from, for the
  tf.estimator side (whose environment cannot import the project), from a
  child of this Python (this script imports nothing heavy itself)."""
  code = ('import sys; sys.path.insert(0, sys.argv[1]); '
          'import _bench_tf_estimator as peer; '
          '[peer.write_data(w, p) for w, p in zip(sys.argv[2::2], '
          'sys.argv[3::2])]')
  args = [a for w in workloads for a in (w, peer_data_path(w, directory))]
  result = subprocess.run([sys.executable, '-c', code, _SCRIPTS_DIR, *args],
                          env=env, cwd=_REPO_ROOT, capture_output=True,
                          text=True, timeout=timeout_s, check=False)
  if result.returncode != 0:
    raise ChildError('writing the tf.estimator side\'s data failed:\n'
                     + result.stderr[-3000:])


def _command(side: str, workload: str, steps: int, *, jit_compile: bool,
             graph_engine: bool, peer_data_dir: Optional[str]) -> List[str]:
  if side == 'tf_estimator':
    return [PEER_PYTHON, _TF_ESTIMATOR_WORKER, '--workload', workload,
            '--steps', str(steps), '--data',
            peer_data_path(workload, peer_data_dir)]
  worker_side = 'graph' if (side == 'runtime' and graph_engine) else side
  command = [sys.executable, _WORKER, '--side', worker_side, '--workload',
             workload, '--steps', str(steps)]
  if jit_compile and side == 'runtime':
    command.append('--jit_compile')
  return command


def _run_process(command: List[str], label: str, *, timeout_s: float,
                 env: Dict[str, str]) -> tuple:
  """Runs a child; returns (its result dict, the wall time it was started).

  Raises:
    ChildError: see run_child.
  """
  # Wall clock, not perf_counter: the child reports time.time() and the two
  # clocks must be the same one across processes.
  launched = time.time()
  process = subprocess.Popen(command, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env,
                             cwd=_REPO_ROOT)
  try:
    stdout, stderr = process.communicate(timeout=timeout_s)
  except subprocess.TimeoutExpired:
    process.kill()
    stdout, stderr = process.communicate()
    raise ChildError(
        f'{label} ran past {timeout_s} s and was killed; stderr '
        f'tail:\n{stderr[-3000:]}') from None
  if process.returncode != 0:
    raise ChildError(
        f'{label} exited with {process.returncode}; stderr tail:\n'
        f'{stderr[-3000:]}')
  result = read_result(stdout)
  if result is None:
    raise ChildError(
        f'{label} printed no {RESULT_PREFIX.strip()} line; '
        f'stdout tail:\n{stdout[-2000:]}\nstderr tail:\n{stderr[-2000:]}')
  return result, launched


def run_train_and_evaluate_child(side: str, workload: str, *,
                                 timeout_s: float, env: Dict[str, str],
                                 peer_data_dir: Optional[str]) -> dict:
  """One local train_and_evaluate (TAE_STEPS steps, a checkpoint every
  TAE_CHECKPOINT_EVERY, TAE_EVAL_STEPS batches evaluated after each) by the
  runtime or tf.estimator in a fresh process; adds `wall_s`, from just
  before the process started until train_and_evaluate returned."""
  command = _command(side, workload, TAE_STEPS, jit_compile=False,
                     graph_engine=False, peer_data_dir=peer_data_dir)
  command += ['--train_and_evaluate',
              f'{TAE_CHECKPOINT_EVERY},{TAE_EVAL_STEPS}']
  result, launched = _run_process(
      command, f'{side} {workload} train_and_evaluate', timeout_s=timeout_s,
      env=env)
  result['wall_s'] = result['done_wall'] - launched
  result['after_imports_s'] = result['done_wall'] - result['imports_done_wall']
  return result


def summarize_train_and_evaluate(runs: Dict[str, List[dict]]) -> dict:
  """Median wall times and the ratio runtime/tf.estimator (target <=
  TAE_TARGET); also the time after the imports (the frameworks' import
  times differ by more than the whole train_and_evaluate takes)."""
  def median(side, key):
    return statistics.median(r[key] for r in runs[side])
  runtime, peer = median('runtime', 'wall_s'), median('tf_estimator', 'wall_s')
  runtime_after = median('runtime', 'after_imports_s')
  peer_after = median('tf_estimator', 'after_imports_s')
  return {'runtime_wall_s': runtime, 'tf_estimator_wall_s': peer,
          'ratio': runtime / peer, 'target': TAE_TARGET,
          'meets': runtime / peer <= TAE_TARGET,
          'runtime_after_imports_s': runtime_after,
          'tf_estimator_after_imports_s': peer_after,
          'after_imports_ratio': runtime_after / peer_after,
          'runs': {side: [{k: r[k] for k in ('wall_s', 'after_imports_s',
                                             'steps', 'metrics')}
                          for r in side_runs]
                   for side, side_runs in runs.items()}}


def run_child(side: str, workload: str, steps: int, *,
              timeout_s: float, env: Dict[str, str],
              jit_compile: bool = False, graph_engine: bool = False,
              peer_data_dir: Optional[str] = None) -> dict:
  """Runs one side of one workload in a fresh process; returns its result.

  Adds `first_step_s` (from just before the process was started to the end
  of its first step), `import_s` (process start to imports done) and
  `peak_rss_mib` to what the child reports.

  Raises:
    ChildError: the child exited non-zero, ran past `timeout_s` (it is
      killed) or printed no result line.
  """
  command = _command(side, workload, steps, jit_compile=jit_compile,
                     graph_engine=graph_engine, peer_data_dir=peer_data_dir)
  result, launched = _run_process(command, f'{side} {workload}',
                                  timeout_s=timeout_s, env=env)
  result['first_step_s'] = result['first_step_wall'] - launched
  result['import_s'] = result['imports_done_wall'] - launched
  result['after_imports_s'] = result['first_step_s'] - result['import_s']
  result['peak_rss_mib'] = result['peak_rss_kib'] / 1024.0
  return result


# What each run contributes to the report (outer_ms_per_loop: runtime only).
_RUN_KEYS = ('steps', 'steps_per_sec', 'first_step_s', 'import_s',
             'after_imports_s', 'peak_rss_mib', 'cpu_ms_per_100_steps',
             'outer_ms_per_loop')


def _median(runs: List[dict], key: str) -> float:
  return statistics.median(r[key] for r in runs)


def _paired_ratio(runs: Dict[str, List[dict]], side: str, other: str
                  ) -> float:
  # Each round's runs ran back to back: their ratio cancels slow changes
  # in the machine's load, which the ratio of medians does not.
  return statistics.median(
      a['steps_per_sec'] / b['steps_per_sec']
      for a, b in zip(runs[side], runs[other]))


def summarize_peer(workload: str, peer: str, runtime: dict, peer_side: dict,
                   runs: Dict[str, List[dict]]) -> dict:
  """The runtime against one peer: ratios runtime/peer, and the target."""
  ratio = runtime['steps_per_sec'] / peer_side['steps_per_sec']
  target = PEER_SPEED_TARGETS[peer][workload]
  return {
      'steps_per_sec_ratio': ratio,
      'paired_steps_per_sec_ratio': _paired_ratio(runs, 'runtime', peer),
      'steps_per_sec_target': target,
      'meets_steps_per_sec': None if target is None else ratio >= target,
      'first_step_diff_s': runtime['first_step_s'] - peer_side['first_step_s'],
      'peak_rss_ratio': runtime['peak_rss_mib'] / peer_side['peak_rss_mib'],
  }


def summarize(workload: str, runs: Dict[str, List[dict]]) -> dict:
  """Medians per side, ratios runtime/bare (and runtime/peer, for the
  peers that ran) and whether targets are met."""
  sides = {}
  for side in runs:
    side_runs = runs[side]
    keys = [k for k in _RUN_KEYS if k in side_runs[0]]
    sides[side] = {k: _median(side_runs, k) for k in keys if k != 'steps'}
    sides[side]['runs'] = [{k: r[k] for k in keys} for r in side_runs]
  bare, runtime = sides['bare'], sides['runtime']
  speed_ratio = runtime['steps_per_sec'] / bare['steps_per_sec']
  first_step_diff = runtime['first_step_s'] - bare['first_step_s']
  memory_ratio = runtime['peak_rss_mib'] / bare['peak_rss_mib']
  peers = {peer: sides[peer] for peer in PEERS if peer in sides}
  return {
      'bare': bare,
      'runtime': runtime,
      **peers,
      'peers': {peer: summarize_peer(workload, peer, runtime, peer_side, runs)
                for peer, peer_side in peers.items()},
      'steps_per_sec_ratio': speed_ratio,
      'steps_per_sec_target': SPEED_TARGETS[workload],
      'first_step_diff_s': first_step_diff,
      'first_step_target_s': FIRST_STEP_TARGET_S,
      'peak_rss_ratio': memory_ratio,
      'cpu_per_step_ratio': (runtime['cpu_ms_per_100_steps'] /
                             bare['cpu_ms_per_100_steps']),
      'paired_steps_per_sec_ratio': _paired_ratio(runs, 'runtime', 'bare'),
      'peak_rss_target': MEMORY_TARGET,
      'meets': {
          'steps_per_sec': speed_ratio >= SPEED_TARGETS[workload],
          'first_step': first_step_diff <= FIRST_STEP_TARGET_S,
          'peak_rss': memory_ratio <= MEMORY_TARGET,
      },
  }


def format_table(results: Dict[str, dict]) -> str:
  """The results as a Markdown table (a '*' marks a missed target)."""
  header = ('| workload | bare steps/s | runtime steps/s | ratio | target | '
            'first step bare s | runtime s | diff s | peak RSS bare MiB | '
            'runtime MiB | ratio |')
  rows = [header, '|' + '---|' * 11]
  for workload, r in results.items():
    miss = {k: '' if ok else ' *' for k, ok in r['meets'].items()}
    rows.append(
        f"| {workload} | {r['bare']['steps_per_sec']:,.0f} | "
        f"{r['runtime']['steps_per_sec']:,.0f} | "
        f"{r['steps_per_sec_ratio']:.3f}{miss['steps_per_sec']} | "
        f">= {r['steps_per_sec_target']} | "
        f"{r['bare']['first_step_s']:.2f} | "
        f"{r['runtime']['first_step_s']:.2f} | "
        f"{r['first_step_diff_s']:+.2f}{miss['first_step']} | "
        f"{r['bare']['peak_rss_mib']:.0f} | "
        f"{r['runtime']['peak_rss_mib']:.0f} | "
        f"{r['peak_rss_ratio']:.3f}{miss['peak_rss']} |")
  return '\n'.join(rows)


def format_peers(results: Dict[str, dict]) -> str:
  """The runtime against each peer, as a Markdown table ('*': target
  missed)."""
  rows = ['| workload | peer | peer steps/s | runtime steps/s | ratio '
          'runtime/peer | paired ratio | target | first step peer s | '
          'diff s | peak RSS peer MiB | RSS ratio |',
          '|' + '---|' * 11]
  for workload, r in results.items():
    for peer, p in r['peers'].items():
      target = p['steps_per_sec_target']
      miss = ' *' if p['meets_steps_per_sec'] is False else ''
      rows.append(
          f"| {workload} | {peer} | {r[peer]['steps_per_sec']:,.0f} | "
          f"{r['runtime']['steps_per_sec']:,.0f} | "
          f"{p['steps_per_sec_ratio']:.3f}{miss} | "
          f"{p['paired_steps_per_sec_ratio']:.3f} | "
          f"{'-' if target is None else f'>= {target}'} | "
          f"{r[peer]['first_step_s']:.2f} | "
          f"{p['first_step_diff_s']:+.2f} | "
          f"{r[peer]['peak_rss_mib']:.0f} | {p['peak_rss_ratio']:.3f} |")
  return '\n'.join(rows)


def format_train_and_evaluate(results: Dict[str, dict]) -> str:
  """Local train_and_evaluate wall times ('*': target missed)."""
  rows = [f'| workload | train_and_evaluate ({TAE_STEPS} steps, checkpoint '
          f'every {TAE_CHECKPOINT_EVERY}, {TAE_EVAL_STEPS} eval steps each) '
          'runtime s | tf.estimator s | ratio | target | after imports: '
          'runtime s | tf.estimator s | ratio |',
          '|' + '---|' * 8]
  for workload, r in results.items():
    rows.append(f"| {workload} | {r['runtime_wall_s']:.1f} | "
                f"{r['tf_estimator_wall_s']:.1f} | {r['ratio']:.3f}"
                f"{'' if r['meets'] else ' *'} | <= {r['target']} | "
                f"{r['runtime_after_imports_s']:.2f} | "
                f"{r['tf_estimator_after_imports_s']:.2f} | "
                f"{r['after_imports_ratio']:.3f} |")
  return '\n'.join(rows)


def format_diagnostics(results: Dict[str, dict]) -> str:
  """Figures that help explain the table (not targets)."""
  rows = ['| workload | paired steps/s ratio | CPU ms/100 steps bare | '
          'runtime | ratio | runtime outside compiled loop, ms/loop | '
          'imports bare s | runtime s | first step after imports bare s | '
          'runtime s |',
          '|' + '---|' * 10]
  for workload, r in results.items():
    bare, runtime = r['bare'], r['runtime']
    rows.append(
        f"| {workload} | {r['paired_steps_per_sec_ratio']:.3f} | "
        f"{bare['cpu_ms_per_100_steps']:.1f} | "
        f"{runtime['cpu_ms_per_100_steps']:.1f} | "
        f"{r['cpu_per_step_ratio']:.3f} | "
        f"{runtime.get('outer_ms_per_loop', float('nan')):.2f} | "
        f"{bare['import_s']:.2f} | {runtime['import_s']:.2f} | "
        f"{bare['after_imports_s']:.2f} | {runtime['after_imports_s']:.2f} |")
  return '\n'.join(rows)


def _git_state() -> Dict[str, object]:
  """The commit measured and whether the measured code differs from it.

  Figures in the README should say which runtime they belong to; a tree
  with uncommitted changes to the runtime, model_fns or input_fns is not
  exactly that commit.
  """
  def git(*args):
    return subprocess.run(['git', *args], cwd=_REPO_ROOT, capture_output=True,
                          text=True, timeout=30, check=False).stdout.strip()
  try:
    changed = git('status', '--porcelain', '--', 'estimator_rt', 'model_fns',
                  'input_fns')
    return {'commit': git('rev-parse', 'HEAD') or None,
            'uncommitted_changes': bool(changed)}
  except (OSError, subprocess.SubprocessError):
    return {'commit': None, 'uncommitted_changes': None}


def _parse_workloads(text: str) -> List[str]:
  names = [w.strip().upper() for w in text.split(',') if w.strip()]
  unknown = [w for w in names if w not in WORKLOADS]
  if unknown or not names:
    raise argparse.ArgumentTypeError(
        f'--workloads={text!r}: expected a comma-separated subset of '
        f'{",".join(WORKLOADS)}.')
  return names


def _parse_peers(text: str) -> List[str]:
  names = [p.strip() for p in text.split(',') if p.strip()]
  unknown = [p for p in names if p not in PEERS]
  if unknown or not names:
    raise argparse.ArgumentTypeError(
        f'--peers={text!r}: expected a comma-separated subset of '
        f'{",".join(PEERS)}.')
  return [p for p in PEERS if p in names]


def _parse_steps(text: str) -> Dict[str, int]:
  """'300' (every workload) or 'W1=60000,W3=800' (the rest default)."""
  try:
    if '=' not in text:
      return {w: int(text) for w in WORKLOADS}
    steps = {}
    for item in text.split(','):
      name, value = item.split('=')
      name = name.strip().upper()
      if name not in WORKLOADS:
        raise ValueError(name)
      steps[name] = int(value)
    return steps
  except ValueError:
    raise argparse.ArgumentTypeError(
        f'--steps={text!r}: expected N or W1=N,W2=N,...') from None


def _parse_strategies(text: str) -> List[str]:
  names = [s.strip() for s in text.split(',') if s.strip()]
  known = list(_bench_distributed.CLUSTERS)
  if not names or set(names) - set(known):
    raise argparse.ArgumentTypeError(
        f'--distributed={text!r}: expected a comma-separated subset of '
        f'{",".join(known)}.')
  return [s for s in known if s in names]


def _command_line(argv: Optional[List[str]]) -> str:
  return ' '.join([os.path.basename(sys.executable), 'scripts/benchmark.py']
                  + (sys.argv[1:] if argv is None else list(argv)))


def _footer(report: dict, steps_text: str) -> str:
  """The line under the tables: what ran, on what machine, which commit."""
  return (f"\n{report['rounds']} round(s); {steps_text}; medians over "
          "rounds; '*' = target missed. Load average before "
          f"{report['loadavg_before'][0]:.2f}, after "
          f"{report['loadavg_after'][0]:.2f} ({report['cpu_count']} CPUs); "
          f"{report['wall_s']:.0f} s in all; commit "
          f"{str(report['git']['commit'])[:10]}"
          + (' with uncommitted runtime changes'
             if report['git']['uncommitted_changes'] else '') + '.')


def _main_distributed(args, argv) -> int:
  """`--distributed`: the runtime on loopback clusters against a bare TF2
  program and a standalone client (see _bench_distributed.py)."""
  if args.rounds < 1:
    raise SystemExit(f'--rounds={args.rounds} must be >= 1.')
  if args.distributed_steps is not None and args.distributed_steps < 101:
    raise SystemExit(f'--distributed_steps={args.distributed_steps} must be '
                     '>= 101 (the first, 1-step loop is discarded).')
  steps = {s: args.distributed_steps or _bench_distributed.DEFAULT_STEPS[s]
           for s in args.distributed}
  load_before = os.getloadavg()
  started = time.time()
  summary = _bench_distributed.run(rounds=args.rounds, steps=steps,
                                   timeout_s=args.timeout, env=_child_env(),
                                   strategies=args.distributed)
  report = {
      'command': _command_line(argv),
      'rounds': args.rounds,
      'distributed_steps': steps,
      'git': _git_state(),
      'cpu_count': os.cpu_count(),
      'loadavg_before': load_before,
      'loadavg_after': os.getloadavg(),
      'wall_s': time.time() - started,
      'distributed': summary,
  }
  if args.json:
    print(json.dumps(report, indent=2))
  else:
    print(_bench_distributed.format_table(summary))
    print(_footer(report, f'global steps {steps}'))
  return 0


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__.split('\n')[0],
      formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--rounds', type=int, default=3,
                      help='runs per side and workload (default 3)')
  parser.add_argument('--workloads', type=_parse_workloads,
                      default=list(WORKLOADS),
                      help='comma-separated subset of W1,W2,W3 (default all)')
  parser.add_argument('--steps', type=_parse_steps, default={},
                      help='training steps per run: N for every workload, or '
                      'W1=N,W2=N,... (default '
                      + ','.join(f'{k}={v}' for k, v in DEFAULT_STEPS.items())
                      + ')')
  parser.add_argument('--timeout', type=float, default=DEFAULT_TIMEOUT_S,
                      help='seconds after which a child is killed '
                      f'(default {DEFAULT_TIMEOUT_S})')
  parser.add_argument('--jit_compile', action='store_true',
                      help='the runtime side compiles its steps with XLA '
                      '(RunConfig.jit_compile); the bare loop does not, so '
                      'the ratio shows what XLA gains over the plain loop')
  parser.add_argument('--engine', choices=('eager', 'graph'),
                      default='eager',
                      help='graph: the runtime side runs TF1-style model_fns '
                      '(tf.compat.v1 layers, losses and optimizers, the same '
                      'model, loss and learning rate) in the graph engine, '
                      'one step per session run; W1 and W2 only')
  parser.add_argument('--peers', nargs='?', type=_parse_peers,
                      const=list(PEERS), default=[],
                      help='also run Keras 3 fit (steps_per_execution=100) '
                      'and tf.estimator 2.15 (from .venv-tf215: `make '
                      'bench-peers` makes it) on the same workloads, and '
                      'report runtime/peer ratios; optionally a comma-'
                      'separated subset of ' + ','.join(PEERS))
  parser.add_argument('--distributed', nargs='?',
                      type=_parse_strategies,
                      const=list(_bench_distributed.CLUSTERS), default=[],
                      help='instead: W2 on loopback clusters (multi_worker_'
                      'mirrored: 2 workers; parameter_server: chief, 2 '
                      'workers, 1 ps), a bare TF2 program against the '
                      'runtime against a standalone client (see '
                      '_bench_distributed.py); optionally a comma-separated '
                      'subset of ' + ','.join(_bench_distributed.CLUSTERS))
  parser.add_argument('--distributed_steps', type=int, default=None,
                      help='global steps per distributed run (default '
                      + ', '.join(f'{k} {v}' for k, v in
                                  _bench_distributed.DEFAULT_STEPS.items())
                      + ')')
  parser.add_argument('--json', action='store_true',
                      help='print one JSON object on stdout instead of the '
                      'table (progress still goes to stderr)')
  args = parser.parse_args(argv)
  if args.distributed:
    return _main_distributed(args, argv)
  if args.engine == 'graph' and set(args.workloads) - {'W1', 'W2'}:
    parser.error('--engine=graph: only W1 and W2 have TF1-style model_fns; '
                 'pass --workloads W1,W2.')
  if args.rounds < 1:
    parser.error(f'--rounds={args.rounds} must be >= 1.')
  steps = {w: args.steps.get(w, DEFAULT_STEPS[w]) for w in args.workloads}
  for workload, n in steps.items():
    if n < 101:
      parser.error(f'--steps: {workload}={n} must be >= 101 (the first, '
                   '1-step loop is discarded).')

  if args.peers and args.engine == 'graph':
    parser.error('--peers compares the eager engine; drop --engine=graph.')
  if 'tf_estimator' in args.peers and not os.path.exists(PEER_PYTHON):
    parser.error(f'--peers: {PEER_PYTHON} does not exist; make it with '
                 '`make bench-peers` (or scripts/tf_estimator_215/'
                 'make_venv.sh).')
  sides = ['bare', 'runtime'] + args.peers

  env = _child_env()
  runs = {w: {side: [] for side in sides} for w in args.workloads}
  load_before = os.getloadavg()
  started = time.time()
  peer_data_dir = tempfile.mkdtemp(prefix='bench_peer_data_')
  if 'tf_estimator' in args.peers:
    write_peer_data(args.workloads, peer_data_dir, env=env,
                    timeout_s=args.timeout)
  for round_index in range(args.rounds):
    # Rotate which side goes first, so that drift in the machine's state
    # (thermal, page cache, a neighbour's load) does not favour one side.
    shift = round_index % len(sides)
    order = sides[shift:] + sides[:shift]
    for workload in args.workloads:
      for side in order:
        result = run_child(side, workload, steps[workload],
                           timeout_s=args.timeout, env=env,
                           jit_compile=args.jit_compile,
                           graph_engine=args.engine == 'graph',
                           peer_data_dir=peer_data_dir)
        runs[workload][side].append(result)
        print(f'round {round_index + 1}/{args.rounds} {workload} {side:12s}: '
              f"{result['steps_per_sec']:9,.0f} steps/s, first step "
              f"{result['first_step_s']:.2f} s (imports "
              f"{result['import_s']:.2f} s), peak RSS "
              f"{result['peak_rss_mib']:.0f} MiB, "
              f"{result['cpu_ms_per_100_steps']:.1f} CPU ms/100 steps",
              file=sys.stderr, flush=True)
  tae_runs = {w: {'runtime': [], 'tf_estimator': []}
              for w in args.workloads
              if w in TAE_WORKLOADS and 'tf_estimator' in args.peers}
  for round_index in range(args.rounds if tae_runs else 0):
    order = (('runtime', 'tf_estimator') if round_index % 2 == 0 else
             ('tf_estimator', 'runtime'))
    for workload in tae_runs:
      for side in order:
        result = run_train_and_evaluate_child(
            side, workload, timeout_s=args.timeout, env=env,
            peer_data_dir=peer_data_dir)
        tae_runs[workload][side].append(result)
        print(f'round {round_index + 1}/{args.rounds} {workload} '
              f"{side:12s} train_and_evaluate: {result['wall_s']:.1f} s",
              file=sys.stderr, flush=True)
  shutil.rmtree(peer_data_dir, ignore_errors=True)
  results = {w: summarize(w, runs[w]) for w in args.workloads}
  train_and_evaluate = {w: summarize_train_and_evaluate(r)
                        for w, r in tae_runs.items()}
  report = {
      'command': _command_line(argv),
      'rounds': args.rounds,
      'steps': steps,
      'jit_compile': args.jit_compile,
      'engine': args.engine,
      'peers': sides[2:],
      'git': _git_state(),
      'cpu_count': os.cpu_count(),
      'loadavg_before': load_before,
      'loadavg_after': os.getloadavg(),
      'wall_s': time.time() - started,
      'results': results,
      'train_and_evaluate': train_and_evaluate,
  }
  if args.json:
    print(json.dumps(report, indent=2))
  else:
    print(format_table(results))
    if args.peers:
      print()
      print(format_peers(results))
    if train_and_evaluate:
      print()
      print(format_train_and_evaluate(train_and_evaluate))
    print()
    print(format_diagnostics(results))
    print(_footer(report, f'steps {steps}'))
  return 0


if __name__ == '__main__':
  sys.exit(main())
