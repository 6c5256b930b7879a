"""Benchmark: estimator_rt against a bare TF2 loop on the same workloads.

    python -m scripts.bench [--rounds 3] [--workloads W1,W3]
        [--steps W1=60000,W3=800] [--peers] [--json]

run from the repository root. For each workload (W1 linear model on
batches of 64, W2 the MLP on the bundled digits with Adam, batch 128, W3
the CNN on 32x32x3 synthetic images, batch 128), each round runs the bare
loop and the runtime once each, every run in a fresh process
(scripts.bench.worker), alternating which goes first (round 1: bare then
runtime, round 2: runtime then bare, ...) so that neither side always runs
on a warmer or cooler machine. Both use the
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
dataset (scripts.bench.worker --side keras_fit), and tf.estimator 2.15 in
its own environment (.venv-tf215, made by `make bench-peers`;
scripts.bench.tf_estimator_worker) with the same model written as its users
wrote it, on the same arrays and pipeline; a table gives the ratios
runtime/peer (targets: >= 1.0 against Keras fit on W1-W3; >= 3 and >= 1.8
against tf.estimator on W1 and W2).

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

With --distributed, instead: W2 on loopback clusters, the runtime against a
bare TF2 program and a standalone client (scripts.bench.distributed).

The parent imports nothing heavy: all TensorFlow work happens in the
children, so the parent's own state cannot favour either side.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

from scripts.bench import distributed
from scripts.bench import report as report_lib
from scripts.bench.local_runs import run_child
from scripts.bench.local_runs import run_train_and_evaluate_child
from scripts.bench.local_runs import write_peer_data
from scripts.bench.processes import child_env
from scripts.bench.processes import REPO_ROOT
from scripts.bench.protocol import MIN_STEPS
from scripts.bench.settings import DEFAULT_STEPS
from scripts.bench.settings import DEFAULT_TIMEOUT_S
from scripts.bench.settings import PEER_PYTHON
from scripts.bench.settings import PEERS
from scripts.bench.settings import TAE_WORKLOADS
from scripts.bench.settings import WORKLOADS


def _git_state() -> Dict[str, object]:
  """The commit measured and whether the measured code differs from it.

  Figures in docs/benchmarks.md should say which runtime they belong to; a tree
  with uncommitted changes to the runtime, model_fns or input_fns is not
  exactly that commit.
  """
  def git(*args):
    return subprocess.run(['git', *args], cwd=REPO_ROOT, capture_output=True,
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
  known = list(distributed.CLUSTERS)
  if not names or set(names) - set(known):
    raise argparse.ArgumentTypeError(
        f'--distributed={text!r}: expected a comma-separated subset of '
        f'{",".join(known)}.')
  return [s for s in known if s in names]


def _command_line(argv: Optional[List[str]]) -> str:
  return ' '.join([os.path.basename(sys.executable), '-m', 'scripts.bench']
                  + (sys.argv[1:] if argv is None else list(argv)))


def _machine_state(argv, started: float, load_before) -> dict:
  """The report's fields on what ran, on what machine, at which commit."""
  return {'command': _command_line(argv), 'git': _git_state(),
          'cpu_count': os.cpu_count(), 'loadavg_before': load_before,
          'loadavg_after': os.getloadavg(), 'wall_s': time.time() - started}


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
  program and a standalone client (see scripts.bench.distributed)."""
  if args.rounds < 1:
    raise SystemExit(f'--rounds={args.rounds} must be >= 1.')
  if (args.distributed_steps is not None and
      args.distributed_steps < MIN_STEPS):
    raise SystemExit(f'--distributed_steps={args.distributed_steps} must be '
                     f'>= {MIN_STEPS} (the first, 1-step loop is '
                     'discarded).')
  steps = {s: args.distributed_steps or distributed.DEFAULT_STEPS[s]
           for s in args.distributed}
  load_before = os.getloadavg()
  started = time.time()
  summary = distributed.run(rounds=args.rounds, steps=steps,
                            timeout_s=args.timeout, env=child_env(),
                            strategies=args.distributed)
  state = _machine_state(argv, started, load_before)
  report = {
      'command': state.pop('command'),
      'rounds': args.rounds,
      'distributed_steps': steps,
      **state,
      'distributed': summary,
  }
  if args.json:
    print(json.dumps(report, indent=2))
  else:
    print(distributed.format_table(summary))
    print(_footer(report, f'global steps {steps}'))
  return 0


def _parser() -> argparse.ArgumentParser:
  """The command line; see the module doc."""
  parser = argparse.ArgumentParser(
      prog='python -m scripts.bench',
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
                      'model, loss and learning rate) in the graph engine '
                      '(its in-graph loop), and the tf.estimator peer runs '
                      'the same model_fn; the targets are then >= 0.8x the '
                      'bare loop and >= 2x tf.estimator; no '
                      'train_and_evaluate comparison; W1 and W2 only')
  parser.add_argument('--peers', nargs='?', type=_parse_peers,
                      const=list(PEERS), default=[],
                      help='also run Keras 3 fit (steps_per_execution=100) '
                      'and tf.estimator 2.15 (from .venv-tf215: `make '
                      'bench-peers` makes it) on the same workloads, and '
                      'report runtime/peer ratios; optionally a comma-'
                      'separated subset of ' + ','.join(PEERS))
  parser.add_argument('--distributed', nargs='?',
                      type=_parse_strategies,
                      const=list(distributed.CLUSTERS), default=[],
                      help='instead: W2 on loopback clusters (multi_worker_'
                      'mirrored: 2 workers; parameter_server: chief, 2 '
                      'workers, 1 ps), a bare TF2 program against the '
                      'runtime against a standalone client (see '
                      'scripts.bench.distributed); optionally a comma-'
                      'separated subset of ' + ','.join(distributed.CLUSTERS))
  parser.add_argument('--distributed_steps', type=int, default=None,
                      help='global steps per distributed run (default '
                      + ', '.join(f'{k} {v}' for k, v in
                                  distributed.DEFAULT_STEPS.items())
                      + ')')
  parser.add_argument('--intra_op_threads', type=int, default=0,
                      help="every side's TensorFlow intra-op pool size "
                      "(default 0: TensorFlow's choice); the estimator "
                      'sides also ask for it in their session_config, as '
                      'users do. With 1, the TF1-style W2 no longer pays '
                      "TensorFlow 2.16+'s fused Adam kernel splitting small "
                      'variables across the pool (docs/engines.md); '
                      'local comparison only')
  parser.add_argument('--v1_behavior', action='store_true',
                      help='with --engine graph: the runtime and tf.estimator '
                      'sides start as TF1 programs did '
                      '(tf.compat.v1.disable_v2_behavior(); the graph '
                      'engine then runs one step per session run)')
  parser.add_argument('--json', action='store_true',
                      help='print one JSON object on stdout instead of the '
                      'table (progress still goes to stderr)')
  return parser


def _local_steps(parser: argparse.ArgumentParser,
                 args: argparse.Namespace) -> Dict[str, int]:
  """The steps per workload of the local comparison; a parser error for
  flags that do not go together."""
  if args.v1_behavior and args.engine != 'graph':
    parser.error('--v1_behavior: only with --engine graph.')
  if args.engine == 'graph' and set(args.workloads) - {'W1', 'W2'}:
    parser.error('--engine=graph: only W1 and W2 have TF1-style model_fns; '
                 'pass --workloads W1,W2.')
  if args.rounds < 1:
    parser.error(f'--rounds={args.rounds} must be >= 1.')
  if args.intra_op_threads < 0:
    parser.error(f'--intra_op_threads={args.intra_op_threads} must be >= 0 '
                 "(0: TensorFlow's choice).")
  steps = {w: args.steps.get(w, DEFAULT_STEPS[w]) for w in args.workloads}
  for workload, n in steps.items():
    if n < MIN_STEPS:
      parser.error(f'--steps: {workload}={n} must be >= {MIN_STEPS} (the '
                   'first, 1-step loop is discarded).')
  if 'tf_estimator' in args.peers and not os.path.exists(PEER_PYTHON):
    parser.error(f'--peers: {PEER_PYTHON} does not exist; make it with '
                 '`make bench-peers` (or scripts/tf_estimator_215/'
                 'make_venv.sh).')
  return steps


def _run_sides(args, steps: Dict[str, int], sides: List[str], *,
               env: Dict[str, str], peer_data_dir: str
               ) -> Dict[str, Dict[str, List[dict]]]:
  """Every side on every workload, `args.rounds` times; the runs by
  workload and side."""
  runs = {w: {side: [] for side in sides} for w in args.workloads}
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
                           peer_data_dir=peer_data_dir,
                           intra_op_threads=args.intra_op_threads,
                           v1_behavior=args.v1_behavior)
        runs[workload][side].append(result)
        print(f'round {round_index + 1}/{args.rounds} {workload} {side:12s}: '
              f"{result['steps_per_sec']:9,.0f} steps/s, first step "
              f"{result['first_step_s']:.2f} s (imports "
              f"{result['import_s']:.2f} s), peak RSS "
              f"{result['peak_rss_mib']:.0f} MiB, "
              f"{result['cpu_ms_per_100_steps']:.1f} CPU ms/100 steps",
              file=sys.stderr, flush=True)
  return runs


def _run_train_and_evaluate(args, *, env: Dict[str, str], peer_data_dir: str
                            ) -> Dict[str, Dict[str, List[dict]]]:
  """With the tf.estimator peer: the local train_and_evaluate of both
  sides on TAE_WORKLOADS, `args.rounds` times, alternating which goes
  first; the runs by workload and side (none without that peer)."""
  # The comparison runs the eager engine's model_fns: not with --engine
  # graph, whose report is about the TF1-style ones.
  tae_runs = {w: {'runtime': [], 'tf_estimator': []}
              for w in args.workloads
              if w in TAE_WORKLOADS and 'tf_estimator' in args.peers and
              args.engine == 'eager'}
  for round_index in range(args.rounds if tae_runs else 0):
    order = (('runtime', 'tf_estimator') if round_index % 2 == 0 else
             ('tf_estimator', 'runtime'))
    for workload in tae_runs:
      for side in order:
        result = run_train_and_evaluate_child(
            side, workload, timeout_s=args.timeout, env=env,
            peer_data_dir=peer_data_dir,
            intra_op_threads=args.intra_op_threads)
        tae_runs[workload][side].append(result)
        print(f'round {round_index + 1}/{args.rounds} {workload} '
              f"{side:12s} train_and_evaluate: {result['wall_s']:.1f} s",
              file=sys.stderr, flush=True)
  return tae_runs


def _print_tables(report: dict) -> None:
  results = report['results']
  print(report_lib.format_table(results))
  if report['peers']:
    print()
    print(report_lib.format_peers(results))
  if report['train_and_evaluate']:
    print()
    print(report_lib.format_train_and_evaluate(report['train_and_evaluate']))
  print()
  print(report_lib.format_diagnostics(results))
  print(_footer(report, f"steps {report['steps']}"))


def _main_local(parser: argparse.ArgumentParser, args: argparse.Namespace,
                argv) -> int:
  """The local comparison: the runtime against the bare loop (and the
  peers) on each workload, in fresh processes."""
  steps = _local_steps(parser, args)
  sides = ['bare', 'runtime'] + args.peers
  env = child_env()
  load_before = os.getloadavg()
  started = time.time()
  peer_data_dir = tempfile.mkdtemp(prefix='bench_peer_data_')
  try:
    if 'tf_estimator' in args.peers:
      write_peer_data(args.workloads, peer_data_dir, env=env,
                      timeout_s=args.timeout)
    runs = _run_sides(args, steps, sides, env=env,
                      peer_data_dir=peer_data_dir)
    tae_runs = _run_train_and_evaluate(args, env=env,
                                       peer_data_dir=peer_data_dir)
  finally:
    shutil.rmtree(peer_data_dir, ignore_errors=True)
  state = _machine_state(argv, started, load_before)
  report = {
      'command': state.pop('command'),
      'rounds': args.rounds,
      'steps': steps,
      'jit_compile': args.jit_compile,
      'engine': args.engine,
      'v1_behavior': args.v1_behavior,
      'peers': sides[2:],
      **state,
      'results': {w: report_lib.summarize(w, runs[w], engine=args.engine)
                  for w in args.workloads},
      'train_and_evaluate': {w: report_lib.summarize_train_and_evaluate(r)
                             for w, r in tae_runs.items()},
  }
  if args.json:
    print(json.dumps(report, indent=2))
  else:
    _print_tables(report)
  return 0


def main(argv: Optional[List[str]] = None) -> int:
  parser = _parser()
  args = parser.parse_args(argv)
  if args.distributed:
    return _main_distributed(args, argv)
  return _main_local(parser, args, argv)


if __name__ == '__main__':
  sys.exit(main())
