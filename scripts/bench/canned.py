"""The canned-estimator benchmark: estimator_rt's canned estimators against
tf.estimator 2.15's running the same program, in the same run.

    python -m scripts.bench.canned [--rounds 3] [--workloads C1,C2]
        [--user_prefetch both|yes|no] [--json]

(or `make bench-canned`). Needs .venv-tf215
(scripts/tf_estimator_215/make_venv.sh). Each round runs each side of each
workload in a fresh process (scripts/bench/canned_worker.py, which says
what is measured), alternating which side goes first; prints the medians
and the ratios runtime/tf.estimator of call and steady steps/s (higher is
better for the runtime) and of train_and_evaluate wall time (lower is
better). Each workload runs twice (`--user_prefetch both`, the default):
with the train input_fn ending in the user's own `.prefetch(2)`, and
without it, where the runtime prefetches for the user and tf.estimator 2.15
did not.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# The runtime side runs under the Python running this (the project's
# environment, as `make bench-canned` runs it).
PYTHONS = {'runtime': sys.executable,
           'tf_estimator': os.path.join(_REPO, '.venv-tf215', 'bin',
                                        'python')}
TIMEOUT_SECS = 900


def run_side(side: str, workload: str, extra) -> dict:
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=_REPO)
  result = subprocess.run(
      [PYTHONS[side], '-m', 'scripts.bench.canned_worker', '--side', side,
       '--workload', workload, *extra],
      cwd=_REPO, env=env, capture_output=True, text=True,
      timeout=TIMEOUT_SECS, check=False)
  for line in result.stdout.splitlines():
    if line.startswith('CANNED_RESULT '):
      return json.loads(line[len('CANNED_RESULT '):])
  raise RuntimeError(f'{side} {workload} gave no result (exit '
                     f'{result.returncode}):\n{result.stderr[-3000:]}')


# Per side and round, what `_print_summary` reports.
KEYS = ('steps_per_sec', 'steady_steps_per_sec', 'train_and_evaluate_secs',
        'input_batches_per_sec', 'call_cpu_ms_per_step')


def _print_summary(label: str, results, rounds: int, *, out) -> dict:
  """Prints one workload's medians and ratios to `out`; returns them with
  each side's per-round figures."""
  median = {side: {key: statistics.median(r[key] for r in runs)
                   for key in KEYS}
            for side, runs in results.items()}
  runtime, reference = median['runtime'], median['tf_estimator']
  print(f'{label}: call steps/s runtime {runtime["steps_per_sec"]:.0f} '
        f'tf.estimator {reference["steps_per_sec"]:.0f} ratio '
        f'{runtime["steps_per_sec"] / reference["steps_per_sec"]:.2f}x; '
        f'steady steps/s runtime {runtime["steady_steps_per_sec"]:.0f} '
        f'tf.estimator {reference["steady_steps_per_sec"]:.0f} ratio '
        f'{runtime["steady_steps_per_sec"] / reference["steady_steps_per_sec"]:.2f}x; '
        f'train_and_evaluate s runtime '
        f'{runtime["train_and_evaluate_secs"]:.1f} tf.estimator '
        f'{reference["train_and_evaluate_secs"]:.1f} ratio '
        f'{runtime["train_and_evaluate_secs"] / reference["train_and_evaluate_secs"]:.2f}x; '
        f'input alone {runtime["input_batches_per_sec"]:.0f} batches/s; '
        f'CPU ms/step of the call runtime '
        f'{runtime["call_cpu_ms_per_step"]:.2f} tf.estimator '
        f'{reference["call_cpu_ms_per_step"]:.2f} ratio '
        f'{reference["call_cpu_ms_per_step"] / runtime["call_cpu_ms_per_step"]:.2f}x '
        f'({rounds} rounds; load average {os.getloadavg()[0]:.1f})',
        file=out, flush=True)
  for side, runs in results.items():
    print(f'  {side} rounds: ' + '; '.join(
        ', '.join(f'{key.replace("_per_sec", "/s")} {r[key]:.0f}'
                  for key in KEYS[:2]) for r in runs), file=out, flush=True)
  return {side: {'median': median[side],
                 'rounds': {key: [r[key] for r in runs] for key in KEYS}}
          for side, runs in results.items()}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--workloads', default='C1,C2')
  parser.add_argument('--steps', type=int, default=None)
  parser.add_argument('--intra_op_threads', type=int, default=0,
                      help="both sides' TensorFlow intra-op pool size, in "
                      "their session_config (0: TensorFlow's choice)")
  parser.add_argument('--user_prefetch', choices=('both', 'yes', 'no'),
                      default='both',
                      help="whether the train input_fn ends in the user's "
                      'own .prefetch(2); both: each workload both ways')
  parser.add_argument('--json', action='store_true',
                      help='print one JSON object (per workload and side, '
                      'the medians and each round\'s figures) on stdout, '
                      'the summary lines on stderr')
  args = parser.parse_args()
  # With --json, stdout carries the JSON alone.
  out = sys.stderr if args.json else sys.stdout
  report = {}
  for side, python in PYTHONS.items():
    if not os.path.exists(python):
      sys.exit(f'{python} is missing ({side} side); see this module.')
  steps = ['--steps', str(args.steps)] if args.steps else []
  if args.intra_op_threads:
    steps += ['--intra_op_threads', str(args.intra_op_threads)]
  prefetch = ['yes', 'no'] if args.user_prefetch == 'both' else [
      args.user_prefetch]
  for workload, user_prefetch in [(w, p) for w in args.workloads.split(',')
                                  for p in prefetch]:
    extra = steps + ['--user_prefetch', user_prefetch]
    results = {'runtime': [], 'tf_estimator': []}
    for round_index in range(args.rounds):
      order = (['runtime', 'tf_estimator'] if round_index % 2 == 0 else
               ['tf_estimator', 'runtime'])
      for side in order:
        results[side].append(run_side(side, workload, extra))
    label = (f'{workload} ({"with" if user_prefetch == "yes" else "without"}'
             " the user's prefetch)")
    report[f'{workload}{"" if user_prefetch == "yes" else "_no_prefetch"}'] = (
        _print_summary(label, results, args.rounds, out=out))
  if args.json:
    print(json.dumps({'rounds': args.rounds, 'results': report}, indent=2))


if __name__ == '__main__':
  main()
