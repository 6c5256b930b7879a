"""The calls benchmark: what each call on one Estimator costs, estimator_rt
against tf.estimator 2.15 running the same program, in the same run.

    python -m scripts.bench.calls [--rounds 2] [--workloads canned,tf1,tf2]
        [--behaviors v2,v1] [--repeats 5] [--predictions 5] [--json]

(or `make bench-calls`). Needs .venv-tf215
(scripts/tf_estimator_215/make_venv.sh). Each round runs each side of each
workload in a fresh process (`scripts.bench.calls_worker`, which says what
each call is), alternating which side goes first; `--behaviors v1` runs the
same with `tf.compat.v1.disable_v2_behavior()` first on both sides. Per
call, each side's figure is the median over rounds of each round's median
over its repetitions; the ratio is the median of the per-round ratios
runtime / tf.estimator 2.15 (lower is better), printed with each round's.
Targets
(issue 47): at most 0.5x for train, evaluate, the first prediction and a
train_and_evaluate cycle, at most 0.1x for the next predictions; none for
export.

The TF2 model_fn (`tf2`) has no tf.estimator 2.15 side: its reference is
2.15 running the TF1-style model_fn of the same model (`tf1`) in the same
round, the program a user moving to a TF2 model_fn had before. It runs
under TF2 behaviour only.
"""

import argparse
import json
import os
import statistics
import sys
import time
from typing import Dict, List, Optional

from scripts.bench.processes import child_env
from scripts.bench.processes import module_command
from scripts.bench.processes import run_child_process
from scripts.bench.settings import PEER_PYTHON

SIDES = ('runtime', 'tf_estimator')
WORKLOADS = ('canned', 'tf1', 'tf2')
BEHAVIORS = ('v2', 'v1')
# The worker's calls (scripts.bench.calls_worker.CALLS, which imports
# nothing heavy either, but is a child's module) and their targets.
CALLS = ('train', 'evaluate', 'predict_first', 'predict_next', 'export',
         'tae_cycle')
TARGETS = {'train': 0.5, 'evaluate': 0.5, 'predict_first': 0.5,
           'predict_next': 0.1, 'export': None, 'tae_cycle': 0.5}
# The workload whose tf.estimator 2.15 runs are the reference of each
# workload: its own, but for the TF2 model_fn, which 2.15 cannot run.
REFERENCE_WORKLOAD = {'canned': 'canned', 'tf1': 'tf1', 'tf2': 'tf1'}
DEFAULT_TIMEOUT_S = 600


def sides_of(workload: str, behavior: str) -> List[str]:
  """The sides that run `workload` under `behavior` ('v2' or 'v1'): none
  for the TF2 model_fn under TF1 behaviour, only the runtime under TF2's."""
  if workload == 'tf2':
    return ['runtime'] if behavior == 'v2' else []
  return list(SIDES)


def _spread(values: List[float]) -> float:
  """(max - min) / median: how far the rounds were apart, relative."""
  return (max(values) - min(values)) / statistics.median(values)


def summarize_call(runtime_rounds: List[List[float]],
                   reference_rounds: Optional[List[List[float]]],
                   target: Optional[float]) -> dict:
  """One call's figures from each round's seconds per repetition.

  Args:
    runtime_rounds: per round, the runtime side's seconds of each
      repetition of the call.
    reference_rounds: the same of tf.estimator 2.15 (as many rounds), or
      None where there is none.
    target: the largest ratio runtime / 2.15 that meets the target, or None.

  Returns:
    runtime_s and tf_estimator_s (medians over rounds of each round's
    median), round_ratios (each round's runtime / 2.15 of those medians:
    the two sides of a round ran back to back), ratio (the median of
    round_ratios, the figure the targets and `make bench` judge), spread
    (of round_ratios: (max - min) / median), target and meets (None
    without a target or a reference).
  """
  runtime_medians = [statistics.median(r) for r in runtime_rounds]
  figures = {'runtime_s': statistics.median(runtime_medians),
             'runtime_rounds_s': runtime_medians, 'target': target}
  if not reference_rounds:
    return {**figures, 'tf_estimator_s': None, 'ratio': None,
            'round_ratios': [], 'spread': None, 'meets': None}
  reference_medians = [statistics.median(r) for r in reference_rounds]
  round_ratios = [a / b for a, b in zip(runtime_medians, reference_medians)]
  ratio = statistics.median(round_ratios)
  return {**figures, 'tf_estimator_s': statistics.median(reference_medians),
          'tf_estimator_rounds_s': reference_medians, 'ratio': ratio,
          'round_ratios': round_ratios, 'spread': _spread(round_ratios),
          'meets': None if target is None else ratio <= target}


def summarize(runs: Dict[str, Dict[str, List[dict]]]
              ) -> Dict[str, dict]:
  """Per workload: `reference` (what its 2.15 figures are, or None) and
  per call, `summarize_call` of the runs (by workload and side, one worker
  result per round) of one behaviour."""
  summary = {}
  for workload, by_side in runs.items():
    if not by_side.get('runtime'):
      continue
    reference = runs.get(REFERENCE_WORKLOAD[workload], {}).get(
        'tf_estimator') or []
    # The calls made (none of predict_next with --predictions 0).
    calls = [c for c in CALLS if by_side['runtime'][0]['wall_s'].get(c)]
    summary[workload] = {
        'reference': (f'tf.estimator 2.15 running {REFERENCE_WORKLOAD[workload]}'
                      if reference else None),
        'calls': {call: summarize_call(
            [r['wall_s'][call] for r in by_side['runtime']],
            [r['wall_s'][call] for r in reference] or None, TARGETS[call])
                  for call in calls}}
  return summary


def _seconds(value: Optional[float]) -> str:
  return '-' if value is None else f'{value:.3f}'


def format_table(summaries: Dict[str, Dict[str, dict]]) -> str:
  """Per behaviour, workload and call: the medians, the ratio (with each
  round's), the target and whether it is met, as a Markdown table."""
  rows = ['| behaviour | workload | call | runtime s | 2.15 s | ratio '
          '(rounds) | target | met |', '|' + '---|' * 8]
  for behavior, summary in summaries.items():
    for workload, figures_of in summary.items():
      reference = REFERENCE_WORKLOAD[workload]
      name = (workload if reference == workload else
              f'{workload} (2.15: {reference})')
      for call in CALLS:
        figures = figures_of['calls'].get(call)
        if figures is None:
          continue
        ratio = figures['ratio']
        ratio_text = '-' if ratio is None else (
            f'{ratio:.2f} (' + ', '.join(
                f'{r:.2f}' for r in figures['round_ratios']) + ')')
        target = figures['target']
        met = {None: '-', True: 'met', False: '**not met**'}[
            figures['meets']]
        rows.append(
            f'| {behavior} | {name} | {call} | '
            f"{_seconds(figures['runtime_s'])} | "
            f"{_seconds(figures['tf_estimator_s'])} | {ratio_text} | "
            f"{'-' if target is None else f'<= {target}'} | {met} |")
  return '\n'.join(rows)


def _worker_command(side: str, workload: str, behavior: str, args
                    ) -> List[str]:
  return module_command(
      'calls_worker', '--side', side, '--workload', workload,
      '--calls', ','.join(args.calls), '--repeats', str(args.repeats),
      '--predictions', str(args.predictions), '--tae_evaluations',
      str(args.tae_evaluations),
      *(['--v1_behavior'] if behavior == 'v1' else []),
      *(['--intra_op_threads', str(args.intra_op_threads)]
        if args.intra_op_threads else []),
      python=PEER_PYTHON if side == 'tf_estimator' else sys.executable)


def run_rounds(args, behavior: str) -> Dict[str, Dict[str, List[dict]]]:
  """Every side of every workload under `behavior`, `args.rounds` times,
  alternating which side goes first; the worker results by workload and
  side."""
  env = child_env()
  runs = {w: {side: [] for side in sides_of(w, behavior)}
          for w in args.workloads if sides_of(w, behavior)}
  for round_index in range(args.rounds):
    for workload, by_side in runs.items():
      order = list(by_side) if round_index % 2 == 0 else list(by_side)[::-1]
      for side in order:
        result, _ = run_child_process(
            _worker_command(side, workload, behavior, args),
            f'{behavior} {workload} {side}', timeout_s=args.timeout, env=env)
        by_side[side].append(result)
        print(f'round {round_index + 1}/{args.rounds} {behavior} {workload} '
              f'{side:12s}: ' + ', '.join(
                  f'{call} {statistics.median(secs):.3f} s'
                  for call, secs in result['wall_s'].items() if secs),
              file=sys.stderr, flush=True)
  return runs


def _names(text: str, known, flag: str) -> List[str]:
  names = [n.strip() for n in text.split(',') if n.strip()]
  if not names or set(names) - set(known):
    raise argparse.ArgumentTypeError(
        f'{flag}={text!r}: expected a comma-separated subset of '
        f'{",".join(known)}.')
  return [n for n in known if n in names]


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog='python -m scripts.bench.calls',
      description=__doc__.split('\n')[0])
  parser.add_argument('--rounds', type=int, default=2,
                      help='runs per side and workload (default 2)')
  parser.add_argument('--workloads', default=list(WORKLOADS),
                      type=lambda t: _names(t, WORKLOADS, '--workloads'),
                      help='comma-separated subset of ' + ','.join(WORKLOADS))
  parser.add_argument('--behaviors', default=list(BEHAVIORS),
                      type=lambda t: _names(t, BEHAVIORS, '--behaviors'),
                      help='v2 (TensorFlow 2 behaviour), v1 '
                      '(disable_v2_behavior() first on both sides), or both '
                      '(default)')
  parser.add_argument('--calls', default=list(CALLS),
                      type=lambda t: _names(t, CALLS, '--calls'),
                      help='comma-separated subset of ' + ','.join(CALLS))
  parser.add_argument('--repeats', type=int, default=5,
                      help='times each call is made per process (default 5)')
  parser.add_argument('--predictions', type=int, default=5,
                      help='predict_next calls per repeat (default 5)')
  parser.add_argument('--tae_evaluations', type=int, default=6,
                      help='evaluations of the train_and_evaluate, one every '
                      '100 steps (default 6)')
  parser.add_argument('--intra_op_threads', type=int, default=0,
                      help="every side's intra-op pool size (0: "
                      "TensorFlow's choice)")
  parser.add_argument('--timeout', type=float, default=DEFAULT_TIMEOUT_S,
                      help='seconds after which a child is killed (default '
                      f'{DEFAULT_TIMEOUT_S})')
  parser.add_argument('--json', action='store_true',
                      help='print one JSON object instead of the table '
                      '(progress still goes to stderr)')
  return parser


def main(argv: Optional[List[str]] = None) -> int:
  args = _parser().parse_args(argv)
  if args.rounds < 1:
    raise SystemExit(f'--rounds={args.rounds} must be >= 1.')
  if not os.path.exists(PEER_PYTHON):
    raise SystemExit(f'{PEER_PYTHON} is missing: make it with '
                     'scripts/tf_estimator_215/make_venv.sh.')
  load_before, started = os.getloadavg(), time.time()
  runs = {behavior: run_rounds(args, behavior) for behavior in args.behaviors}
  summaries = {behavior: summarize(by_workload)
               for behavior, by_workload in runs.items()}
  report = {'rounds': args.rounds, 'repeats': args.repeats,
            'predictions': args.predictions,
            'tae_evaluations': args.tae_evaluations,
            'loadavg_before': load_before, 'loadavg_after': os.getloadavg(),
            'wall_s': time.time() - started, 'results': summaries,
            'runs': runs}
  if args.json:
    print(json.dumps(report, indent=2))
    return 0
  print(format_table(summaries))
  print(f"\n{args.rounds} round(s) of {args.repeats} repetitions per call "
        f"({args.predictions} next predictions each); seconds are medians; "
        'ratio = median of the per-round ratios runtime / tf.estimator '
        '2.15. Load average before '
        f"{load_before[0]:.2f}, after {report['loadavg_after'][0]:.2f}; "
        f"{report['wall_s']:.0f} s in all.")
  return 0


if __name__ == '__main__':
  sys.exit(main())
