r"""Records tf.estimator 2.15's observables: the reference records and the
coverage map.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.observe.record \
        [SCENARIO ...]

(from the repository root, with tf.estimator 2.15's interpreter: see
scripts/tf_estimator_215/make_venv.sh). Runs every scenario (or those
named) in both behaviours, one process per behaviour with the coverage
trace on (trace.py; it slows 2.15's run about twofold, which the
comparison here does not pay), and writes
tests/data/tf_estimator_215/observables/SCENARIO.BEHAVIOR.json (the
entries) and coverage.json: for each public name of api.json, the
scenarios that cover it in each behaviour, and the same for each class's
methods and properties. About 4 minutes on 2 cores.
"""

import json
import os
import subprocess
import sys
import tempfile

from scripts.tf_estimator_215.observe import compare

COVERAGE = os.path.join(compare.REFERENCE_DIR, 'coverage.json')


def _record(names) -> None:
  env = dict(os.environ, PYTHONPATH=compare.REPO, TF_CPP_MIN_LOG_LEVEL='1')
  with tempfile.TemporaryDirectory() as out:
    processes = [subprocess.Popen(
        [sys.executable, '-m', 'scripts.tf_estimator_215.observe.run',
         '--behavior', behavior, '--out', out, '--trace'] + list(names),
        cwd=compare.REPO, env=env) for behavior in compare.BEHAVIORS]
    if any(p.wait() for p in processes):
      sys.exit('a recording process failed')
    os.makedirs(compare.REFERENCE_DIR, exist_ok=True)
    for name in sorted(os.listdir(out)):
      with open(os.path.join(out, name)) as f:
        record = json.load(f)
      record['_made_with'] = _made_with()
      with open(os.path.join(compare.REFERENCE_DIR, name), 'w') as f:
        json.dump(record, f, indent=1)
        f.write('\n')


def _made_with() -> str:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return f'tensorflow {tf.__version__}, python {sys.version.split()[0]}'


def write_coverage() -> dict:
  """coverage.json from the reference records' traces."""
  with open(os.path.join(os.path.dirname(compare.REFERENCE_DIR),
                         'api.json')) as f:
    api = json.load(f)['names']
  names = {n: {b: [] for b in compare.BEHAVIORS} for n in api}
  methods = {}
  for name, entry in api.items():
    for member in list(entry.get('methods', {})) + entry.get(
        'properties', []):
      methods[f'{name}.{member}'] = {b: [] for b in compare.BEHAVIORS}
  for (scenario, behavior), record in sorted(
      compare.reference_records().items()):
    for name in record.get('coverage', {}).get('names', []):
      names[name][behavior].append(scenario)
    for name in record.get('coverage', {}).get('methods', []):
      methods[name][behavior].append(scenario)
  coverage = {'names': names, 'methods': methods}
  with open(COVERAGE, 'w') as f:
    json.dump(coverage, f, indent=1, sort_keys=True)
    f.write('\n')
  return coverage


def main(argv=None) -> int:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith('2.15'):
    sys.exit(f'run this with tf.estimator 2.15 (TensorFlow {tf.__version__} '
             'here): .venv-tf215/bin/python -m ...')
  _record(sys.argv[1:] if argv is None else argv)
  coverage = write_coverage()
  for kind, table in coverage.items():
    for behavior in compare.BEHAVIORS:
      covered = sum(1 for v in table.values() if v[behavior])
      print(f'{kind} {behavior}: {covered} of {len(table)} covered')
  return 0


if __name__ == '__main__':
  sys.exit(main())
