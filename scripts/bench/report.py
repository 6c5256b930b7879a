"""The local comparison's report: medians per side, ratios against the
bare loop and the peers, whether each target is met, and the tables.

Standard library only.
"""

import statistics
from typing import Dict, List

from scripts.bench.settings import FIRST_STEP_TARGET_S
from scripts.bench.settings import GRAPH_PEER_SPEED_TARGETS
from scripts.bench.settings import GRAPH_SPEED_TARGETS
from scripts.bench.settings import MEMORY_TARGET
from scripts.bench.settings import PEER_SPEED_TARGETS
from scripts.bench.settings import PEERS
from scripts.bench.settings import SPEED_TARGETS
from scripts.bench.settings import TAE_CHECKPOINT_EVERY
from scripts.bench.settings import TAE_EVAL_STEPS
from scripts.bench.settings import TAE_STEPS
from scripts.bench.settings import TAE_TARGET


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
                   runs: Dict[str, List[dict]], *, engine: str = 'eager'
                   ) -> dict:
  """The runtime against one peer: ratios runtime/peer, and the target
  (the `engine`'s: 'eager' or 'graph')."""
  ratio = runtime['steps_per_sec'] / peer_side['steps_per_sec']
  targets = GRAPH_PEER_SPEED_TARGETS if engine == 'graph' else (
      PEER_SPEED_TARGETS)
  target = targets[peer][workload]
  return {
      'steps_per_sec_ratio': ratio,
      'paired_steps_per_sec_ratio': _paired_ratio(runs, 'runtime', peer),
      'steps_per_sec_target': target,
      'meets_steps_per_sec': None if target is None else ratio >= target,
      'first_step_diff_s': runtime['first_step_s'] - peer_side['first_step_s'],
      'peak_rss_ratio': runtime['peak_rss_mib'] / peer_side['peak_rss_mib'],
  }


def summarize(workload: str, runs: Dict[str, List[dict]], *,
              engine: str = 'eager') -> dict:
  """Medians per side, ratios runtime/bare (and runtime/peer, for the
  peers that ran) and whether targets are met (the targets of the runtime
  side's `engine`, 'eager' or 'graph')."""
  speed_target = (GRAPH_SPEED_TARGETS if engine == 'graph' else
                  SPEED_TARGETS)[workload]
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
      'peers': {peer: summarize_peer(workload, peer, runtime, peer_side, runs,
                                     engine=engine)
                for peer, peer_side in peers.items()},
      'steps_per_sec_ratio': speed_ratio,
      'steps_per_sec_target': speed_target,
      'first_step_diff_s': first_step_diff,
      'first_step_target_s': FIRST_STEP_TARGET_S,
      'peak_rss_ratio': memory_ratio,
      'cpu_per_step_ratio': (runtime['cpu_ms_per_100_steps'] /
                             bare['cpu_ms_per_100_steps']),
      'paired_steps_per_sec_ratio': _paired_ratio(runs, 'runtime', 'bare'),
      'peak_rss_target': MEMORY_TARGET,
      'meets': {
          'steps_per_sec': speed_ratio >= speed_target,
          'first_step': first_step_diff <= FIRST_STEP_TARGET_S,
          'peak_rss': memory_ratio <= MEMORY_TARGET,
      },
  }


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
