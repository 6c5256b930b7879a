r"""Runs an unseeded tf.estimator program many times under tf.estimator 2.15
and here, one fresh process at a time, and compares what the runs end in.

    S=scripts/tf_estimator_215/unseeded
    python $S/compare.py run --runs 40 --out runs.jsonl [--record] [--seed N]
    python $S/compare.py summary runs.jsonl ... [--threshold T]

`run` alternates the two sides (2.15's `.venv-tf215/bin/python`, and this
project's `.venv/bin/python`, which serves `tf.estimator` through the
import hook) so that a change in the machine's load falls on both, runs
wide_deep_program.py (by default) in a new directory each time, and appends
each run's JSON line (AUC, accuracy, the initial weights, with `--record`
the order of each `train` call's batches) to `--out`; it resumes a file it
finds. `summary` prints, per side, the AUCs, how many runs end below
`--threshold` (the lower mode; by default the pooled median) and above, a
two-sided Fisher exact test of those counts and a Mann-Whitney U test
(normal approximation) of the AUCs, and whether the initial weights or the
data orders repeat across runs or across the two `train` calls of a run.

Measured (issue 46; the machine shared, runs of 25-60 s): 40 unseeded runs
on each side, 20 of them with `--record`: mean AUC 0.625 (2.15) and 0.636
(here), 21 and 19 below the pooled median (Fisher p = 0.82), Mann-Whitney
p = 0.46; no run repeated another's initial weights or data order, and no
run's two calls read the same order, on either side. Seeded (`--seed` 1,
2, 7): the AUCs agree within 2e-5; 1234: 0.6009 (2.15), 0.5968 (here),
with the same initial weights and orders (rounding, amplified: see
docs/differences.md).
"""

import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
SIDES = {'tf215': os.path.join(_ROOT, '.venv-tf215', 'bin', 'python'),
         'here': os.path.join(_ROOT, '.venv', 'bin', 'python')}
RUN_TIMEOUT_SECS = 600


def _one_run(side, program, extra_args):
  """One fresh process of `program` on `side`: its RESULT line as a dict."""
  with tempfile.TemporaryDirectory() as directory:
    proc = subprocess.run(
        [SIDES[side], program, '--dir', directory] + extra_args,
        capture_output=True, text=True, timeout=RUN_TIMEOUT_SECS, check=False)
  for line in proc.stdout.splitlines():
    if line.startswith('RESULT '):
      return json.loads(line[len('RESULT '):])
  raise RuntimeError(f'{side} run failed (exit {proc.returncode}): '
                     f'{proc.stderr[-2000:]}')


def run(args):
  done = collections.Counter()
  if os.path.exists(args.out):
    with open(args.out) as f:
      done.update(json.loads(line)['side'] for line in f if line.strip())
  extra = (['--record'] if args.record else []) + (
      ['--seed', str(args.seed)] if args.seed is not None else [])
  for index in range(args.runs):
    for side in SIDES:
      if done[side] > index:
        continue
      result = _one_run(side, args.program, extra)
      result.update(side=side, run=index, seed=args.seed)
      with open(args.out, 'a') as f:
        f.write(json.dumps(result) + '\n')
      print(side, index, round(result['auc'], 4), flush=True)


def fisher_exact(table):
  """Two-sided Fisher exact p of a 2x2 table [[a, b], [c, d]]: the summed
  probability of every table with the same margins no likelier than it."""
  (a, b), (c, d) = table
  row1, col1, total = a + b, a + c, a + b + c + d

  def prob(x):
    return (math.comb(col1, x) * math.comb(total - col1, row1 - x) /
            math.comb(total, row1))
  observed = prob(a)
  lowest, highest = max(0, row1 + col1 - total), min(row1, col1)
  return min(1.0, sum(prob(x) for x in range(lowest, highest + 1)
                      if prob(x) <= observed * (1 + 1e-9)))


def mann_whitney(xs, ys):
  """(U of `xs`, two-sided p) by the normal approximation, mid-ranks for
  ties (without the tie correction of the variance)."""
  pooled = sorted((v, i) for i, v in enumerate(list(xs) + list(ys)))
  ranks = [0.0] * len(pooled)
  start = 0
  while start < len(pooled):
    end = start
    while end + 1 < len(pooled) and pooled[end + 1][0] == pooled[start][0]:
      end += 1
    for k in range(start, end + 1):
      ranks[pooled[k][1]] = (start + end) / 2 + 1
    start = end + 1
  n1, n2 = len(xs), len(ys)
  u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
  sigma = math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
  z = (u - n1 * n2 / 2) / sigma
  return u, math.erfc(abs(z) / math.sqrt(2))


def _repeats(rows, key):
  """How many runs share their `key` value with another run."""
  values = [json.dumps(row[key], sort_keys=True) for row in rows
            if row.get(key) is not None]
  counts = collections.Counter(values)
  return sum(c for c in counts.values() if c > 1), len(values)


def _randomness(rows):
  """Lines on whether a side's initial weights and data orders repeat
  across its runs or across the two `train` calls of a run."""
  lines = []
  for key in ('initial', 'orders'):
    shared, total = _repeats(rows, key)
    if total:
      lines.append(f'  runs whose {key} another run repeats: {shared} of '
                   f'{total}')
  calls = [row['orders'] for row in rows if len(row.get('orders') or []) == 2]
  if calls:
    same = sum(first == second for first, second in calls)
    lines.append(f'  runs whose two train calls read the same order: {same} '
                 f'of {len(calls)}')
  return lines


def summary(args):
  rows = []
  for path in args.results:
    with open(path) as f:
      rows.extend(json.loads(line) for line in f if line.strip())
  by_side = collections.defaultdict(list)
  for row in rows:
    by_side[row['side']].append(row)
  threshold = args.threshold
  if threshold is None:  # The pooled median: no threshold chosen by eye.
    pooled = sorted(row['auc'] for row in rows)
    threshold = (pooled[(len(pooled) - 1) // 2] + pooled[len(pooled) // 2]) / 2
  table = []
  for side in SIDES:
    aucs = sorted(row['auc'] for row in by_side[side])
    low = sum(auc < threshold for auc in aucs)
    table.append([low, len(aucs) - low])
    print(f'{side}: {len(aucs)} runs, {low} below {threshold:.4f}, '
          f'{len(aucs) - low} above; mean AUC '
          f'{sum(aucs) / max(len(aucs), 1):.4f}')
    print('  AUCs: ' + ' '.join(f'{auc:.3f}' for auc in aucs))
    print('\n'.join(_randomness(by_side[side])))
  if not all(by_side[side] for side in SIDES):
    return
  print(f'Fisher exact (below vs above {threshold:.4f}, tf215 vs here): '
        f'p = {fisher_exact(table):.4f}')
  u, p = mann_whitney([r['auc'] for r in by_side['tf215']],
                      [r['auc'] for r in by_side['here']])
  print(f'Mann-Whitney U (AUCs): U = {u:.1f}, p = {p:.4f}')


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  commands = parser.add_subparsers(dest='command', required=True)
  runner = commands.add_parser('run')
  runner.add_argument('--runs', type=int, default=40)
  runner.add_argument('--out', required=True)
  runner.add_argument('--record', action='store_true')
  runner.add_argument('--seed', type=int, default=None)
  runner.add_argument('--program', default=os.path.join(
      _HERE, 'wide_deep_program.py'))
  summarizer = commands.add_parser('summary')
  summarizer.add_argument('results', nargs='+')
  summarizer.add_argument('--threshold', type=float, default=None,
                          help='AUC below which a run is in the lower mode '
                          '(default: the pooled median)')
  args = parser.parse_args(argv)
  (run if args.command == 'run' else summary)(args)


if __name__ == '__main__':
  sys.exit(main())
