r"""Prints the per-file table of tf.estimator 2.15's own suite in both
behaviours, from the results run_own_tests.py committed:

    python scripts/tf_estimator_215/both_behaviors_table.py

For each test file: the tests passing on 2.15 under TF2 behaviour and how
many of them pass on estimator_rt, and the same under TF1 behaviour
(`--v1-behavior`: `tf.compat.v1.disable_v2_behavior()` first); then the
totals. docs/tests.md holds its output.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

import run_own_tests  # pylint: disable=g-import-not-at-top,wrong-import-position

_OWN = os.path.join(_HERE, 'own_tests')
RUNS = {
    'TF2': (os.path.join(_OWN, 'results_215.json'),
            os.path.join(_OWN, 'results_estimator_rt.json')),
    'TF1': (os.path.join(_OWN, 'v1_behavior', 'results_215.json'),
            os.path.join(_OWN, 'v1_behavior', 'results_estimator_rt.json')),
}


def counts() -> dict:
  """{behaviour: {file: [passing on 2.15, of those passing here]}}."""
  out = {}
  for behavior, (reference, here) in RUNS.items():
    per_file, _ = run_own_tests.compare(run_own_tests.load_results(reference),
                                        run_own_tests.load_results(here))
    out[behavior] = per_file
  return out


def render(per_behavior: dict) -> str:
  files = sorted(set().union(*per_behavior.values()))
  lines = ['| file | TF2: 2.15 passing | passing here | TF1: 2.15 passing | '
           'passing here |', '| --- | ---: | ---: | ---: | ---: |']
  totals = {b: [0, 0] for b in per_behavior}
  for name in files:
    cells = []
    for behavior, per_file in per_behavior.items():
      passing, here = per_file.get(name, (0, 0))
      totals[behavior][0] += passing
      totals[behavior][1] += here
      cells += [str(passing), str(here)]
    lines.append(f'| `{name}` | ' + ' | '.join(cells) + ' |')
  cells = []
  for passing, here in totals.values():
    cells += [f'**{passing:,}**',
              f'**{here:,} ({run_own_tests._percent(here, passing)})**']  # pylint: disable=protected-access
  lines.append(f'| **all {len(files)} files** | ' + ' | '.join(cells) + ' |')
  return '\n'.join(lines)


def main() -> None:
  print(render(counts()))


if __name__ == '__main__':
  main()
