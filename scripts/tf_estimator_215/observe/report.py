"""REPORT.md: the comparison's differences and the coverage map, in words.

Sections, in this order: the figures (scenarios, run time, differences by
kind, coverage per behaviour); unexplained differences (none when the test
passes); not yet examined (issue 42's open work), by scenario; accepted,
by reason; allowlist entries no difference matched any more (a fixed
difference: take it out); which scenarios cover each public name, and the
names and methods none covers.
"""

import collections
import json
import os

from scripts.tf_estimator_215.observe import compare

MAX_VALUE = 160


def _short(value) -> str:
  text = json.dumps(value, sort_keys=True)
  text = text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 3] + '...'
  return '`' + text.replace('`', "'").replace('|', '\\|') + '`'


def load_coverage() -> dict:
  with open(os.path.join(compare.REFERENCE_DIR, 'coverage.json')) as f:
    return json.load(f)


def coverage_figures(coverage: dict, allowlist: dict) -> dict:
  """kind -> behaviour -> (covered, allowlisted, total)."""
  excused = allowlist.get('uncovered', {})
  figures = {}
  for kind, table in coverage.items():
    figures[kind] = {}
    for behavior in compare.BEHAVIORS:
      covered = sum(1 for v in table.values() if v[behavior])
      allowed = sum(1 for n, v in table.items()
                    if not v[behavior] and n in excused)
      figures[kind][behavior] = (covered, allowed, len(table))
  return figures


def _differences(rows: list, with_reason: bool) -> list:
  lines = []
  by_scenario = collections.defaultdict(list)
  for d in rows:
    by_scenario[d['scenario']].append(d)
  for scenario in sorted(by_scenario):
    lines += ['', f'#### {scenario} ({len(by_scenario[scenario])})', '',
              '| behaviour | path | 2.15 | here |' + (
                  ' reason |' if with_reason else ''),
              '|---|---|---|---|' + ('---|' if with_reason else '')]
    for d in sorted(by_scenario[scenario], key=lambda d: (d['path'],
                                                          d['behavior'])):
      lines.append(f'| {d["behavior"]} | `{d["path"]}` | '
                   f'{_short(d["theirs"])} | {_short(d["ours"])} |' + (
                       f' {d["reason"]} |' if with_reason else ''))
  return lines


def _coverage_lines(coverage: dict, allowlist: dict) -> list:
  lines = ['', '## Coverage: which scenario covers which name', '',
           'From the trace of tf.estimator 2.15 while recording '
           '(`trace.py` says what counts).', '',
           '| name | v1 | v2 |', '|---|---|---|']
  for name, where in sorted(coverage['names'].items()):
    lines.append(f'| `{name}` | {", ".join(where["v1"]) or "**none**"} | '
                 f'{", ".join(where["v2"]) or "**none**"} |')
  excused = allowlist.get('uncovered', {})
  for kind in ('names', 'methods'):
    missing = [n for n, w in sorted(coverage[kind].items())
               if not (w['v1'] and w['v2'])]
    lines += ['', f'### {kind.capitalize()} not covered in both behaviours '
              f'({len(missing)})', '']
    lines += [f'- `{n}`: ' + ', '.join(
        b for b in compare.BEHAVIORS if not coverage[kind][n][b]) +
              (f' (allowlisted: {excused[n]})' if n in excused else '')
              for n in missing] or ['None.']
  return lines


def render(sorted_out: dict, here: dict, seconds: float) -> str:
  """The report's text."""
  allowlist = compare.load_allowlist()
  coverage = load_coverage()
  figures = coverage_figures(coverage, allowlist)
  lines = ['# tf.estimator 2.15 side by side: what a program observes', '',
           'Written by `python -m scripts.tf_estimator_215.observe.compare '
           '--report` (see `scripts/tf_estimator_215/observe/__init__.py`). '
           f'{len({k[0] for k in here})} scenarios, each in TF1 (v1) and TF2 '
           f'(v2) behaviour; the comparison took {seconds:.0f} s here.', '',
           '| differences | count |', '|---|---|']
  for kind in ('unexplained', 'not_examined', 'accepted'):
    lines.append(f'| {kind.replace("_", " ")} | {len(sorted_out[kind])} |')
  lines += ['', '| coverage | v1 | v2 |', '|---|---|---|']
  for kind, per in figures.items():
    lines.append(f'| {kind} | ' + ' | '.join(
        f'{c} of {t}' + (f' (+{a} allowlisted)' if a else '')
        for c, a, t in (per[b] for b in compare.BEHAVIORS)) + ' |')
  lines += ['', '## Unexplained differences (the test fails on these)']
  lines += _differences(sorted_out['unexplained'], False) or ['', 'None.']
  lines += ['', f'## Not yet examined ({compare.NOT_EXAMINED})']
  lines += _differences(sorted_out['not_examined'], False) or ['', 'None.']
  lines += ['', '## Accepted, with the reason']
  lines += _differences(sorted_out['accepted'], True) or ['', 'None.']
  lines += ['', '## Allowlist entries that matched no difference', '']
  lines += [f'- `{k}`' for k in sorted_out['stale']] or ['None.']
  lines += _coverage_lines(coverage, allowlist)
  return '\n'.join(lines) + '\n'
