"""Every benchmark in one command, each ratio beside the last recorded one:
the guard against regressions (`make bench`).

    python -m scripts.bench.suite [--rounds 2] [--only eager,calls]
        [--record] [--last docs/benchmarks.json]

runs, one after the other, each in its own process with `--json`:

  eager   `scripts.bench --peers --workloads W1,W2`: the eager engine
          against the bare loop, Keras fit and tf.estimator 2.15, and the
          local train_and_evaluate against 2.15's;
  graph   `scripts.bench --engine graph --peers tf_estimator --workloads
          W1,W2`: the graph engine (TF1-style model_fns) against the bare
          loop and 2.15;
  v1      the same under TF1 behaviour (`--v1_behavior`), on W1 only as
          its earlier runs in docs/benchmarks.md (the suite's time);
  canned  `scripts.bench.canned --user_prefetch yes`: C1 and C2 against
          2.15's canned estimators;
  calls   `scripts.bench.calls`: the cost of each call on one Estimator
          against 2.15's, in both behaviours.

Then it prints the calls table and one table of every figure
(`scripts.bench.figures`: the median of the per-round ratios and the
rounds) beside the figure recorded in `--last`, marking a drop beyond the
run-to-run noise: worse than the recorded figure by more than the largest
of 5%, this run's spread of per-round ratios and the recorded run's. It
exits 1 when a figure dropped or a benchmark failed.

`--record` (`make bench RECORD=1`) writes this run's figures into `--last`
(those of the benchmarks that ran and succeeded; the others' stay), with
the commit, date, load average, the machine's reference loop (a Python
loop timed before and after the benchmark, `machine_seconds`) and command
of each benchmark: commit it after a run on a quiet machine. Needs .venv-tf215
(scripts/tf_estimator_215/make_venv.sh). About 20 minutes on a quiet 2-core
machine at the default two rounds, by its parts' timings (each part's wall
time is recorded with its figures).
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from typing import Dict, List, Optional

from scripts.bench import calls as calls_lib
from scripts.bench import figures as figures_lib
from scripts.bench.processes import child_env
from scripts.bench.processes import REPO_ROOT

DEFAULT_LAST = os.path.join(REPO_ROOT, 'docs', 'benchmarks.json')
# Each benchmark: (module, its arguments without --rounds and --json, the
# function that turns its report into figures).
BENCHMARKS = {
    'eager': ('scripts.bench', ['--peers', '--workloads', 'W1,W2'],
              lambda r: figures_lib.local_figures(r, 'eager')),
    'graph': ('scripts.bench', ['--engine', 'graph', '--peers',
                                'tf_estimator', '--workloads', 'W1,W2'],
              lambda r: figures_lib.local_figures(r, 'graph')),
    'v1': ('scripts.bench', ['--engine', 'graph', '--peers', 'tf_estimator',
                             '--v1_behavior', '--workloads', 'W1'],
           lambda r: figures_lib.local_figures(r, 'v1')),
    'canned': ('scripts.bench.canned', ['--user_prefetch', 'yes'],
               figures_lib.canned_figures),
    'calls': ('scripts.bench.calls', [], figures_lib.calls_figures),
}
# With --smoke, what each benchmark adds to run briefly: checks that every
# part runs and reports, its figures meaning nothing.
SMOKE_ARGUMENTS = {
    'eager': ['--steps', '300'], 'graph': ['--steps', '300'],
    'v1': ['--steps', '300'], 'canned': ['--steps', '400'],
    'calls': ['--repeats', '1', '--predictions', '1', '--tae_evaluations',
              '2'],
}
# The most one benchmark may take before it is killed (the longest, calls,
# takes about 10 minutes at two rounds on the 2-core machine).
TIMEOUT_S = 3600
# The machine's reference: a pure-Python loop of this many additions in a
# function, timed before and after each benchmark (0.28-0.36 s on the 2-core
# machine on 2026-12-06). Two rounds cannot tell a change of the machine's
# speed within a run from a change of the code; this shows it.
REFERENCE_ADDITIONS = 10**7


def _git_commit() -> Optional[str]:
  try:
    return subprocess.run(
        ['git', 'rev-parse', 'HEAD'], cwd=REPO_ROOT, capture_output=True,
        text=True, timeout=30, check=False).stdout.strip() or None
  except (OSError, subprocess.SubprocessError):
    return None


def machine_seconds() -> float:
  """Seconds of REFERENCE_ADDITIONS additions in a Python loop, on this
  process's thread: the machine's speed at that moment."""
  started, total = time.perf_counter(), 0
  for i in range(REFERENCE_ADDITIONS):
    total += i
  return time.perf_counter() - started


def run_benchmark(name: str, rounds: int, *, smoke: bool = False) -> dict:
  """Runs benchmark `name` with `rounds` rounds (its progress goes to this
  process's stderr), briefly with `smoke` (SMOKE_ARGUMENTS); returns what
  is recorded of it: command, report, load average, the machine's
  reference loop (`machine_seconds`) before and after, wall time.

  Raises:
    RuntimeError: it failed, printed no JSON or ran past TIMEOUT_S.
  """
  module, arguments, _ = BENCHMARKS[name]
  command = [sys.executable, '-m', module, *arguments,
             *(SMOKE_ARGUMENTS[name] if smoke else []), '--rounds',
             str(rounds), '--json']
  machine_before = machine_seconds()
  load_before, started = os.getloadavg(), time.time()
  try:
    result = subprocess.run(command, cwd=REPO_ROOT, env=child_env(),
                            stdout=subprocess.PIPE, text=True,
                            timeout=TIMEOUT_S, check=False)
  except subprocess.TimeoutExpired:
    raise RuntimeError(f'{name} ran past {TIMEOUT_S} s and was killed'
                       ) from None
  if result.returncode != 0:
    raise RuntimeError(f'{name} exited with {result.returncode} (its '
                       'stderr is above)')
  try:
    report = json.loads(result.stdout)
  except ValueError:
    raise RuntimeError(f'{name} printed no JSON report; stdout tail:\n'
                       f'{result.stdout[-2000:]}') from None
  return {'command': ' '.join(['python'] + command[1:]),
          'loadavg_before': load_before, 'loadavg_after': os.getloadavg(),
          'wall_s': time.time() - started, 'report': report,
          'machine_s': [machine_before, machine_seconds()]}


def read_last(path: str) -> dict:
  """The recorded figures in `path` ({} if there is no such file)."""
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    return json.load(f)['benchmarks']


def _rounded(figure: dict) -> dict:
  """`figure` with its numbers to 4 decimals (a readable file; far finer
  than the noise)."""
  def rounded(value):
    return round(value, 4) if isinstance(value, float) else value
  return {key: [rounded(v) for v in value] if isinstance(value, list)
          else rounded(value) for key, value in figure.items()}


def record(path: str, ran: Dict[str, dict], commit: Optional[str]) -> None:
  """Writes the figures of the benchmarks in `ran` into `path`, keeping the
  recorded ones of the others."""
  benchmarks = read_last(path)
  date = datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC')
  for name, run in ran.items():
    benchmarks[name] = {
        'command': run['command'], 'commit': commit, 'date': date,
        'loadavg_before': [round(x, 2) for x in run['loadavg_before']],
        'loadavg_after': [round(x, 2) for x in run['loadavg_after']],
        'wall_s': round(run['wall_s']),
        'machine_s': [round(x, 2) for x in run['machine_s']],
        'figures': {figure_name: _rounded(figure) for figure_name, figure
                    in run['figures'].items()}}
  with open(path, 'w') as f:
    json.dump({'written_by': 'python -m scripts.bench.suite --record',
               'benchmarks': benchmarks}, f, indent=1, sort_keys=True)
    f.write('\n')


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(prog='python -m scripts.bench.suite',
                                   description=__doc__.split('\n')[0])
  parser.add_argument('--rounds', type=int, default=2,
                      help='rounds of every benchmark (default 2)')
  parser.add_argument('--only', default=','.join(BENCHMARKS),
                      help='comma-separated subset of '
                      + ','.join(BENCHMARKS) + ' (default all)')
  parser.add_argument('--last', default=DEFAULT_LAST,
                      help='the recorded figures (default docs/'
                      'benchmarks.json)')
  parser.add_argument('--record', action='store_true',
                      help="write this run's figures into --last")
  parser.add_argument('--smoke', action='store_true',
                      help='every benchmark briefly (a few hundred steps, '
                      'one repetition per call): checks that each runs and '
                      'reports; its figures mean nothing and are never '
                      'recorded')
  return parser


def _print_report(ran: Dict[str, dict], last: dict) -> List[dict]:
  """Prints the calls table, notes on what differs from the recorded runs
  and the table of every figure; returns the comparison's rows."""
  if 'calls' in ran:
    print(calls_lib.format_table(ran['calls']['report']['results']))
    print()
  new, recorded = {}, {}
  for name in BENCHMARKS:
    if name in ran:
      new.update(ran[name]['figures'])
    if name in last:
      recorded.update(last[name]['figures'])
      if name in ran and last[name]['command'] != ran[name]['command']:
        print(f"note: {name} was recorded with `{last[name]['command']}`, "
              f"this run is `{ran[name]['command']}`.")
  for name in ran:
    print(f"{name}: {_machine_line(ran[name], last.get(name))}")
    if name in last:
      print(f"{name}: last recorded at {str(last[name]['commit'])[:10]}, "
            f"{last[name]['date']}")
  rows = figures_lib.compare(new, recorded)
  print(figures_lib.format_comparison(rows))
  return rows


def _machine_line(run: dict, recorded: Optional[dict]) -> str:
  """The machine's reference loop around `run`, and around the recorded
  run where it was recorded."""
  line = ("the machine's reference loop (larger: slower) {:.2f} s before, "
          '{:.2f} s after').format(*run['machine_s'])
  if recorded and 'machine_s' in recorded:
    line += '; {:.2f} / {:.2f} in the recorded run'.format(
        *recorded['machine_s'])
  return line


# The project's packages whose bytecode the benchmarks' children read.
_PACKAGES = ('estimator_rt', 'model_fns', 'input_fns', 'scripts')


def _write_bytecode() -> None:
  """Compiles the project's modules before any child starts, as `make
  test` does. Where PYTHONDONTWRITEBYTECODE is set (some containers set
  it, this one does), a module whose .pyc is missing or older than its
  source is compiled again by every child that imports it, in the timed
  part too (the engines load on first use), while tf.estimator 2.15's
  modules were compiled when pip installed them."""
  env = {k: v for k, v in os.environ.items()
         if k != 'PYTHONDONTWRITEBYTECODE'}
  subprocess.run([sys.executable, '-m', 'compileall', '-q', *_PACKAGES],
                 cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL,
                 check=False, timeout=600)


def main(argv: Optional[List[str]] = None) -> int:
  parser = _parser()
  args = parser.parse_args(argv)
  names = [n.strip() for n in args.only.split(',') if n.strip()]
  if not names or set(names) - set(BENCHMARKS):
    parser.error(f'--only={args.only!r}: expected a comma-separated subset '
                 f'of {",".join(BENCHMARKS)}.')
  if args.rounds < 1:
    parser.error(f'--rounds={args.rounds} must be >= 1.')
  if args.smoke and args.record:
    parser.error('--smoke --record: a smoke run\'s figures are not '
                 'recorded.')
  started, commit = time.time(), _git_commit()
  _write_bytecode()
  # A smoke run's figures are compared with nothing: they would all drop.
  last = {} if args.smoke else read_last(args.last)
  ran, failed = {}, []
  for name in [n for n in BENCHMARKS if n in names]:
    print(f'== {name} ({time.time() - started:.0f} s in)', file=sys.stderr,
          flush=True)
    try:
      ran[name] = run_benchmark(name, args.rounds, smoke=args.smoke)
    except RuntimeError as e:
      print(f'== {name} failed: {e}', file=sys.stderr, flush=True)
      failed.append(name)
      continue
    ran[name]['figures'] = BENCHMARKS[name][2](ran[name]['report'])
  rows = _print_report(ran, last)
  dropped = [row['name'] for row in rows if row['status'] == 'dropped']
  print(f'\n{len(rows)} figures; dropped: {", ".join(dropped) or "none"}; '
        f'failed: {", ".join(failed) or "none"}. Commit '
        f'{str(commit)[:10]}, {time.time() - started:.0f} s in all, load '
        f'average now {os.getloadavg()[0]:.2f}.')
  if not last and not args.smoke and not args.record:
    print(f'Nothing recorded in {args.last} yet: `make bench RECORD=1` on a '
          'quiet machine records this run.')
  if args.record and ran:
    record(args.last, ran, commit)
    print(f'Recorded {", ".join(ran)} in {args.last}.')
  return 1 if dropped or failed else 0


if __name__ == '__main__':
  sys.exit(main())
