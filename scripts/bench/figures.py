"""The regression guard's figures (`make bench`, `scripts.bench.suite`):
each benchmark's JSON report as named ratios, compared with the last
recorded ones.

A figure is one ratio of the runtime against a reference (the bare loop,
Keras fit, tf.estimator 2.15), from the rounds of one run:

  value    the median of the per-round ratios (each round's two sides ran
           back to back, so its ratio cancels slow changes in the machine's
           load);
  rounds   the per-round ratios;
  spread   (max - min) / median of `rounds`: this run's own noise;
  better   'higher' (a speed ratio) or 'lower' (a time ratio);
  target   the issue's bound on `value`, or None.

A figure has dropped when it is worse than the recorded one by more than
its tolerance: the largest of FLOOR, this run's spread and the recorded
run's spread (a single round has no spread; FLOOR is this machine's
known round-to-round noise then). Standard library only.
"""

import statistics
from typing import Dict, List, Optional

# The smallest relative change called a drop (docs/benchmarks.md: runs on
# the 2-core machine vary by 5-15% from round to round).
FLOOR = 0.05


def figure(rounds: List[float], *, better: str,
           target: Optional[float] = None) -> dict:
  """A figure (see the module docstring) from its per-round ratios."""
  if better not in ('higher', 'lower'):
    raise ValueError(f"better={better!r}: expected 'higher' or 'lower'.")
  if not rounds:
    raise ValueError('rounds=[]: a figure needs at least one round.')
  value = statistics.median(rounds)
  meets = None if target is None else (
      value >= target if better == 'higher' else value <= target)
  # A zero median (a broken run) has no relative spread; it is judged by
  # the other run's spread and the floor.
  spread = (max(rounds) - min(rounds)) / abs(value) if value else 0.0
  return {'value': value, 'rounds': list(rounds), 'spread': spread,
          'better': better,
          'target': target, 'meets': meets}


def _paired(runs: dict, side: str, other: str, key: str) -> List[float]:
  return [a[key] / b[key] for a, b in zip(runs[side], runs[other])]


def local_figures(report: dict, prefix: str) -> Dict[str, dict]:
  """The figures of a `python -m scripts.bench --json` report: per
  workload, runtime / bare and runtime / each peer steps/s (higher is
  better), and the local train_and_evaluate's wall time runtime /
  tf.estimator, from process start and after the imports (lower)."""
  figures = {}
  for workload, result in report['results'].items():
    runs = {side: result[side]['runs'] for side in
            ('bare', 'runtime', *result['peers'])}
    figures[f'{prefix}/{workload}/runtime_vs_bare'] = figure(
        _paired(runs, 'runtime', 'bare', 'steps_per_sec'), better='higher',
        target=result['steps_per_sec_target'])
    for peer, against in result['peers'].items():
      figures[f'{prefix}/{workload}/runtime_vs_{peer}'] = figure(
          _paired(runs, 'runtime', peer, 'steps_per_sec'), better='higher',
          target=against['steps_per_sec_target'])
  for workload, result in report.get('train_and_evaluate', {}).items():
    for key, name in (('wall_s', 'wall'), ('after_imports_s',
                                           'after_imports')):
      figures[f'{prefix}/{workload}/train_and_evaluate_{name}'] = figure(
          _paired(result['runs'], 'runtime', 'tf_estimator', key),
          better='lower', target=result['target'])
  return figures


# scripts.bench.canned's figures: (key, name, better, target); a
# higher-is-better ratio of rates is runtime / 2.15, of times or costs
# runtime / 2.15 with lower better.
CANNED_FIGURES = (
    ('steps_per_sec', 'call_steps_per_sec', 'higher', 2.0),
    ('steady_steps_per_sec', 'steady_steps_per_sec', 'higher', None),
    ('train_and_evaluate_secs', 'train_and_evaluate', 'lower', None),
    ('call_cpu_ms_per_step', 'cpu_per_step', 'lower', None),
)


def canned_figures(report: dict) -> Dict[str, dict]:
  """The figures of a `python -m scripts.bench.canned --json` report:
  per workload, runtime / tf.estimator 2.15 (CANNED_FIGURES)."""
  figures = {}
  for workload, sides in report['results'].items():
    runs = {side: [dict(zip(figures_of['rounds'], values)) for values in
                   zip(*figures_of['rounds'].values())]
            for side, figures_of in sides.items()}
    for key, name, better, target in CANNED_FIGURES:
      figures[f'canned/{workload}/{name}'] = figure(
          _paired(runs, 'runtime', 'tf_estimator', key), better=better,
          target=target)
  return figures


def calls_figures(report: dict) -> Dict[str, dict]:
  """The figures of a `python -m scripts.bench.calls --json` report: per
  behaviour, workload and call with a 2.15 reference, runtime / 2.15
  seconds (lower is better)."""
  figures = {}
  for behavior, workloads in report['results'].items():
    for workload, result in workloads.items():
      for call, call_figures in result['calls'].items():
        if call_figures['round_ratios']:
          figures[f'calls/{behavior}/{workload}/{call}'] = figure(
              call_figures['round_ratios'], better='lower',
              target=call_figures['target'])
  return figures


def compare(new: Dict[str, dict], last: Optional[Dict[str, dict]], *,
            floor: float = FLOOR) -> List[dict]:
  """Each figure of `new` against the same one of `last` (None: nothing
  recorded), then those only `last` has.

  Returns:
    One row per figure: name, new and last (figures or None), change (new
    value / last value - 1, or None), tolerance (the largest of `floor` and
    both spreads), status: 'dropped' (worse by more than the tolerance),
    'improved' (better by more), 'held', 'new' (nothing recorded) or
    'missing' (recorded, not measured in this run).
  """
  last = last or {}
  rows = []
  for name in list(new) + [n for n in last if n not in new]:
    now, before = new.get(name), last.get(name)
    row = {'name': name, 'new': now, 'last': before, 'change': None,
           'tolerance': None,
           'status': 'missing' if now is None else 'new'}
    if now is not None and before is not None:
      tolerance = max(floor, now['spread'], before['spread'])
      # Nothing recorded as zero is meant as a figure to hold: any value
      # beside it counts as a change of +100%.
      change = (now['value'] / before['value'] - 1 if before['value'] else
                1.0)
      gain = change if now['better'] == 'higher' else -change
      row.update(change=change, tolerance=tolerance, status=(
          'dropped' if gain < -tolerance else
          'improved' if gain > tolerance else 'held'))
    rows.append(row)
  return rows


def _value(value: Optional[dict]) -> str:
  if value is None:
    return '-'
  rounds = ', '.join(f'{r:.2f}' for r in value['rounds'])
  return f"{value['value']:.3f} ({rounds})"


def format_comparison(rows: List[dict]) -> str:
  """The rows of `compare` as a Markdown table; a dropped figure's status
  is in bold, a missed target starred."""
  lines = ['| figure | better | target | this run (rounds) | last recorded '
           '(rounds) | change | tolerance | status |', '|' + '---|' * 8]
  for row in rows:
    shown = row['new'] or row['last']
    target = shown['target']
    target_text = '-' if target is None else (
        ('>= ' if shown['better'] == 'higher' else '<= ') + f'{target:g}')
    missed = ' *' if row['new'] and row['new']['meets'] is False else ''
    status = row['status']
    lines.append(
        f"| {row['name']} | {shown['better']} | {target_text} | "
        f"{_value(row['new'])}{missed} | {_value(row['last'])} | "
        + ('-' if row['change'] is None else f"{row['change']:+.1%}")
        + ' | ' + ('-' if row['tolerance'] is None else
                   f"{row['tolerance']:.1%}")
        + ' | ' + (f'**{status}**' if status == 'dropped' else status)
        + ' |')
  return '\n'.join(lines)
