"""The benchmark (`python -m scripts.bench`): it runs end to end, and
compares like with like.

No timing is asserted: the numbers depend on the machine. The tests check
that the script produces its figures for both sides, and that the bare loop
it compares against computes the same model and loss as the model_fns.
"""

import importlib
import io
import json
import os

import numpy as np
import pytest

from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.training.eager.variable_store import VariableStore

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench_module(name, monkeypatch):
  """scripts.bench.<name>, imported from this checkout."""
  monkeypatch.syspath_prepend(REPO_ROOT)
  return importlib.import_module(f'scripts.bench.{name}')


def test_benchmark_reports_both_sides_and_ratios(python_runner):
  proc = python_runner(
      ['-m', 'scripts.bench', '--rounds', '1', '--workloads', 'W1',
       '--steps', '300', '--json', '--timeout', '150'], timeout=360)
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(proc.stdout)
  assert report['rounds'] == 1
  assert list(report['results']) == ['W1']
  w1 = report['results']['W1']
  for side in ('bare', 'runtime'):
    assert w1[side]['steps_per_sec'] > 0
    assert w1[side]['first_step_s'] > 0
    assert w1[side]['peak_rss_mib'] > 0
    assert len(w1[side]['runs']) == 1
    assert w1[side]['runs'][0]['steps'] == 300
  assert w1['steps_per_sec_ratio'] == pytest.approx(
      w1['runtime']['steps_per_sec'] / w1['bare']['steps_per_sec'])
  assert w1['peak_rss_ratio'] > 0
  assert isinstance(w1['first_step_diff_s'], float)
  assert set(w1['meets']) == {'steps_per_sec', 'first_step', 'peak_rss'}


def test_benchmark_reports_a_peer_and_the_ratios_against_it(python_runner):
  """--peers keras_fit: Keras fit runs as a third side, and the report has
  the runtime/peer ratios and their target. (The tf.estimator peer needs
  `make bench-peers`' environment, which `make test` does not build.)"""
  proc = python_runner(
      ['-m', 'scripts.bench', '--rounds', '1', '--workloads', 'W2',
       '--steps', '300', '--peers', 'keras_fit', '--json', '--timeout',
       '150'], timeout=480)
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(proc.stdout)
  assert report['peers'] == ['keras_fit']
  w2 = report['results']['W2']
  assert w2['keras_fit']['runs'][0]['steps'] == 300
  assert w2['keras_fit']['steps_per_sec'] > 0
  peer = w2['peers']['keras_fit']
  assert peer['steps_per_sec_ratio'] == pytest.approx(
      w2['runtime']['steps_per_sec'] / w2['keras_fit']['steps_per_sec'])
  assert peer['steps_per_sec_target'] == 1.0
  assert peer['meets_steps_per_sec'] == (peer['steps_per_sec_ratio'] >= 1.0)
  assert peer['peak_rss_ratio'] > 0
  # The rounds were printed with every side.
  assert 'W2 keras_fit' in proc.stderr


def test_worker_times_a_local_train_and_evaluate(python_runner):
  """The runtime side of the train_and_evaluate comparison: it trains,
  evaluates after its checkpoints and reports when it ended."""
  proc = python_runner(
      ['-m', 'scripts.bench.worker', '--side', 'runtime', '--workload', 'W1',
       '--steps', '200', '--train_and_evaluate', '100,3'], timeout=240)
  assert proc.returncode == 0, proc.stderr[-3000:]
  line = [l for l in proc.stdout.splitlines()
          if l.startswith('BENCH_RESULT ')][-1]
  result = json.loads(line[len('BENCH_RESULT '):])
  assert result['mode'] == 'train_and_evaluate'
  assert result['steps'] == 200
  assert result['metrics']['global_step'] == 200
  assert result['metrics']['loss'] == pytest.approx(result['metrics']['mse'])
  assert result['done_wall'] > result['imports_done_wall']


@pytest.mark.parametrize('workload', ['W1', 'W2', 'W3'])
def test_bare_loop_computes_what_the_model_fn_computes(workload,
                                                      monkeypatch):
  workloads = _bench_module('workloads', monkeypatch)
  spec = workloads.WORKLOADS[workload]
  dataset, model, _, loss_fn = workloads.build_bare(workload)
  features, labels = next(iter(dataset))

  # The model_fn's model variables, in creation order, from one eager call.
  store = VariableStore()
  with store.recording():
    model_fn_spec = spec['model_fn'](features, labels, ModeKeys.TRAIN,
                                     dict(spec['params']))
  # The optimizer creates its (non-trainable) counters too; leave them out.
  created = [v for v in store.variables if v.trainable]
  bare_variables = model.trainable_variables
  assert [tuple(v.shape) for v in created] == [
      tuple(v.shape) for v in bare_variables]
  bare_optimizer = spec['bare_optimizer']()
  assert type(model_fn_spec.optimizer) is type(bare_optimizer)
  assert float(model_fn_spec.optimizer.learning_rate) == pytest.approx(
      float(bare_optimizer.learning_rate))

  # Same weights and batch give the same loss.
  for bare, reference in zip(bare_variables, created):
    bare.assign(reference)
  bare_loss = loss_fn(labels, model(features['x'], training=True))
  np.testing.assert_allclose(bare_loss.numpy(), model_fn_spec.loss.numpy(),
                             rtol=1e-6)


def test_distributed_benchmark_runs_every_side_on_a_cluster(python_runner):
  """--distributed multi_worker_mirrored: the bare TF2 program, the
  runtime and a standalone client each train W2 on a cluster of 2 real
  loopback workers, reach the global step asked for, and the report has
  their ratios and the target. (The parameter_server cluster goes through
  the same sides and report; it is left to `make bench-distributed`, its
  twelve processes being the costliest run of the suite.)"""
  proc = python_runner(
      ['-m', 'scripts.bench', '--distributed', 'multi_worker_mirrored',
       '--rounds', '1', '--distributed_steps', '200', '--json',
       '--timeout', '240'],
      timeout=1200)
  assert proc.returncode == 0, proc.stderr[-5000:]
  report = json.loads(proc.stdout)
  assert report['distributed_steps'] == {'multi_worker_mirrored': 200}
  assert list(report['distributed']) == ['multi_worker_mirrored']
  for strategy, summary in report['distributed'].items():
    speeds = summary['steps_per_sec']
    assert set(speeds) == {'bare', 'runtime', 'client'}, strategy
    assert all(s > 0 for s in speeds.values()), (strategy, speeds)
    assert summary['runtime_over_bare'] == pytest.approx(
        speeds['runtime'] / speeds['bare'])
    assert summary['client_over_runtime'] == pytest.approx(
        speeds['client'] / speeds['runtime'])
    assert summary['target'] == 0.95
    assert summary['meets'] == (summary['runtime_over_bare'] >= 0.95)
    for side, runs in summary['runs'].items():
      # The global step of the reporting task's last loop.
      assert [r['steps'] for r in runs] == [200], (strategy, side)
      assert f'W2 {strategy} {side}' in proc.stderr


def test_train_and_evaluate_summary_splits_off_the_imports(monkeypatch):
  """The train_and_evaluate comparison reports medians of the wall time
  and of the time after imports, and their ratios, from the children's
  timestamps (the tf.estimator side's environment is not built here)."""
  report = _bench_module('report', monkeypatch)

  def run(wall, after):
    return {'wall_s': wall, 'after_imports_s': after, 'steps': 2000,
            'metrics': {}}

  summary = report.summarize_train_and_evaluate({
      'runtime': [run(3.0, 0.9), run(3.4, 1.1), run(3.2, 1.0)],
      'tf_estimator': [run(2.6, 1.2), run(2.8, 1.4), run(2.7, 1.3)]})
  assert summary['runtime_wall_s'] == 3.2
  assert summary['tf_estimator_wall_s'] == 2.7
  assert summary['ratio'] == pytest.approx(3.2 / 2.7)
  assert summary['meets'] is False
  assert summary['after_imports_ratio'] == pytest.approx(1.0 / 1.3)
  assert 'after imports' in report.format_train_and_evaluate(
      {'W1': summary})


def test_intra_op_threads_reach_every_side(monkeypatch):
  """`--intra_op_threads N` is passed to every side's child alike (the
  bare loop, Keras fit, the runtime in either engine, tf.estimator 2.15),
  and nothing is passed when it is 0 (TensorFlow's choice)."""
  local_runs = _bench_module('local_runs', monkeypatch)
  for side in ('bare', 'keras_fit', 'runtime', 'tf_estimator'):
    for graph_engine in (False, True):
      command = local_runs._command(  # pylint: disable=protected-access
          side, 'W2', 200, jit_compile=False, graph_engine=graph_engine,
          peer_data_dir='/tmp', intra_op_threads=1)
      flag = command.index('--intra_op_threads')
      assert command[flag + 1] == '1', (side, command)
      default = local_runs._command(  # pylint: disable=protected-access
          side, 'W2', 200, jit_compile=False, graph_engine=graph_engine,
          peer_data_dir='/tmp')
      assert '--intra_op_threads' not in default, (side, default)


def test_calls_worker_times_train_and_evaluate_cycles(python_runner):
  """One call of the calls benchmark, run for real on the runtime side: a
  local train_and_evaluate with a checkpoint every 100 steps evaluates
  after each, and the worker reports the cycle between the two
  evaluations its exporter saw."""
  proc = python_runner(
      ['-m', 'scripts.bench.calls_worker', '--side', 'runtime', '--workload',
       'tf1', '--calls', 'tae_cycle', '--tae_evaluations', '2'], timeout=180)
  assert proc.returncode == 0, proc.stderr[-3000:]
  line = [l for l in proc.stdout.splitlines()
          if l.startswith('BENCH_RESULT ')][-1]
  result = json.loads(line[len('BENCH_RESULT '):])
  assert (result['side'], result['workload']) == ('runtime', 'tf1')
  assert result['train_and_evaluate']['evaluated_steps'] == [100, 200]
  [cycle] = result['wall_s']['tae_cycle']
  assert 0 < cycle < result['train_and_evaluate']['total_s']
  # Only the call asked for ran.
  assert set(result['wall_s']) == {'tae_cycle'}


def _call_run(**seconds):
  return {'wall_s': {call: list(values) for call, values in seconds.items()}}


def test_calls_summary_against_2_15_and_the_targets(monkeypatch):
  """Per call: medians over rounds of each round's median, the ratio
  runtime / 2.15 and each round's, the target met or not; the TF2
  model_fn's reference is 2.15 running the TF1-style one (made-up
  seconds)."""
  calls = _bench_module('calls', monkeypatch)
  runs = {
      'tf1': {'runtime': [_call_run(train=[0.2, 0.3, 0.25],
                                    predict_next=[0.05, 0.04]),
                          _call_run(train=[0.5, 0.6, 0.4],
                                    predict_next=[0.02, 0.02])],
              'tf_estimator': [_call_run(train=[1.0, 1.0, 1.0],
                                         predict_next=[0.3, 0.3]),
                               _call_run(train=[1.0, 0.8, 1.2],
                                         predict_next=[0.2, 0.4])]},
      'tf2': {'runtime': [_call_run(train=[0.1], predict_next=[0.01]),
                          _call_run(train=[0.3], predict_next=[0.03])]},
  }
  summary = calls.summarize(runs)
  train = summary['tf1']['calls']['train']
  assert train['runtime_rounds_s'] == [0.25, 0.5]
  assert train['runtime_s'] == pytest.approx(0.375)
  assert train['tf_estimator_s'] == pytest.approx(1.0)
  assert train['round_ratios'] == pytest.approx([0.25, 0.5])
  assert train['spread'] == pytest.approx(0.25 / 0.375)
  assert (train['ratio'], train['target'], train['meets']) == (
      pytest.approx(0.375), 0.5, True)
  # The median of the per-round ratios (0.045 / 0.3, 0.02 / 0.3).
  predict = summary['tf1']['calls']['predict_next']
  assert predict['ratio'] == pytest.approx(0.0325 / 0.3)
  assert (predict['target'], predict['meets']) == (0.1, False)
  tf2 = summary['tf2']
  assert tf2['reference'] == 'tf.estimator 2.15 running tf1'
  assert tf2['calls']['train']['round_ratios'] == pytest.approx([0.1, 0.3])
  table = calls.format_table({'v2': summary})
  assert '| v2 | tf1 | predict_next | 0.033 | 0.300 | 0.11 (0.15, 0.07) ' \
         '| <= 0.1 | **not met** |' in table
  assert '| v2 | tf2 (2.15: tf1) | train |' in table
  # The TF2 model_fn runs under TF2 behaviour only, on the runtime only.
  assert calls.sides_of('tf2', 'v1') == []
  assert calls.sides_of('tf2', 'v2') == ['runtime']
  assert calls.sides_of('canned', 'v1') == ['runtime', 'tf_estimator']


def test_guard_flags_only_drops_beyond_the_noise(monkeypatch):
  """A figure is flagged when it is worse than the recorded one by more
  than the largest of the 5% floor and either run's spread of per-round
  ratios; in either direction of 'better' (made-up figures)."""
  figures = _bench_module('figures', monkeypatch)
  speed = figures.figure([1.00, 1.04], better='higher', target=1.0)
  assert speed['value'] == pytest.approx(1.02)
  assert speed['spread'] == pytest.approx(0.04 / 1.02)
  assert speed['meets'] is True
  last = {'speed': speed,
          'noisy': figures.figure([0.8, 1.0], better='higher'),
          'time': figures.figure([0.40, 0.41], better='lower', target=0.5),
          'gone': figures.figure([2.0], better='higher')}
  new = {'speed': figures.figure([0.90, 0.92], better='higher', target=1.0),
         'noisy': figures.figure([0.85, 0.87], better='higher'),
         'time': figures.figure([0.48, 0.50], better='lower', target=0.5),
         'fresh': figures.figure([1.5], better='higher')}
  rows = {row['name']: row for row in figures.compare(new, last)}
  # 1.02 -> 0.91: -10.8%, beyond the 5% floor and both spreads (2-4%).
  assert rows['speed']['status'] == 'dropped'
  assert rows['speed']['change'] == pytest.approx(0.91 / 1.02 - 1)
  assert rows['speed']['tolerance'] == pytest.approx(0.05)
  # 0.9 -> 0.86 (-4.4%) is within the recorded run's 22% spread.
  assert rows['noisy']['status'] == 'held'
  assert rows['noisy']['tolerance'] == pytest.approx(0.2 / 0.9)
  # A time ratio 0.405 -> 0.49 is worse by 21%.
  assert rows['time']['status'] == 'dropped'
  assert (rows['fresh']['status'], rows['gone']['status']) == (
      'new', 'missing')
  # Better beyond the tolerance is an improvement, within it held.
  improved = figures.compare(
      {'t': figures.figure([0.3], better='lower')},
      {'t': figures.figure([0.4], better='lower')})
  assert improved[0]['status'] == 'improved'
  held = figures.compare({'t': figures.figure([0.98], better='higher')},
                         {'t': figures.figure([1.0], better='higher')})
  assert held[0]['status'] == 'held'
  table = figures.format_comparison(figures.compare(new, last))
  assert ('| speed | higher | >= 1 | 0.910 (0.90, 0.92) * | 1.020 (1.00, '
          '1.04) | -10.8% | 5.0% | **dropped** |') in table
  assert '| gone | higher | - | - | 2.000 (2.00) | - | - | missing |' in table
  with pytest.raises(ValueError, match="better='faster'"):
    figures.figure([1.0], better='faster')


def _local_run(steps_per_sec, **extra):
  run = {'steps': 300, 'steps_per_sec': steps_per_sec, 'first_step_s': 3.0,
         'import_s': 2.0, 'after_imports_s': 1.0, 'peak_rss_mib': 600.0,
         'cpu_ms_per_100_steps': 10.0}
  run.update(extra)
  return run


def test_guard_reads_every_benchmark_report(monkeypatch):
  """The figures of each benchmark's report, as each benchmark's own
  summaries build it from made-up rounds: paired per-round ratios, their
  direction and targets."""
  figures = _bench_module('figures', monkeypatch)
  report_lib = _bench_module('report', monkeypatch)
  canned = _bench_module('canned', monkeypatch)
  calls = _bench_module('calls', monkeypatch)
  local = {'results': {'W1': report_lib.summarize('W1', {
      'bare': [_local_run(100.0), _local_run(200.0)],
      'runtime': [_local_run(110.0), _local_run(180.0)],
      'tf_estimator': [_local_run(20.0), _local_run(40.0)]})},
           'train_and_evaluate': {'W1': report_lib.summarize_train_and_evaluate({
               'runtime': [{'wall_s': 3.0, 'after_imports_s': 1.0,
                            'steps': 2000, 'metrics': {}}] * 2,
               'tf_estimator': [{'wall_s': 2.0, 'after_imports_s': 2.0,
                                 'steps': 2000, 'metrics': {}}] * 2})}}
  found = figures.local_figures(local, 'eager')
  assert found['eager/W1/runtime_vs_bare']['rounds'] == pytest.approx(
      [1.1, 0.9])
  assert found['eager/W1/runtime_vs_bare']['target'] == 0.98
  assert found['eager/W1/runtime_vs_tf_estimator']['value'] == (
      pytest.approx(5.0))
  tae = found['eager/W1/train_and_evaluate_after_imports']
  assert (tae['value'], tae['better'], tae['meets']) == (0.5, 'lower', True)
  assert found['eager/W1/train_and_evaluate_wall']['meets'] is False

  def canned_run(rate, tae_secs):
    return {'steps_per_sec': rate, 'steady_steps_per_sec': 2 * rate,
            'train_and_evaluate_secs': tae_secs,
            'input_batches_per_sec': 1000.0, 'call_cpu_ms_per_step': 1.0}
  summary = canned._print_summary(  # pylint: disable=protected-access
      'C1', {'runtime': [canned_run(300.0, 1.0), canned_run(200.0, 1.0)],
             'tf_estimator': [canned_run(100.0, 2.0),
                              canned_run(100.0, 4.0)]},
      2, out=io.StringIO())
  found = figures.canned_figures({'results': {'C1': summary}})
  assert found['canned/C1/call_steps_per_sec']['rounds'] == [3.0, 2.0]
  assert found['canned/C1/call_steps_per_sec']['meets'] is True
  assert found['canned/C1/train_and_evaluate']['rounds'] == [0.5, 0.25]

  runs = {'canned': {'runtime': [_call_run(train=[0.4], export=[0.1])],
                     'tf_estimator': [_call_run(train=[1.0], export=[1.0])]}}
  found = figures.calls_figures({'results': {'v1': calls.summarize(runs)}})
  assert set(found) == {'calls/v1/canned/train', 'calls/v1/canned/export'}
  assert found['calls/v1/canned/train']['meets'] is True
  assert found['calls/v1/canned/export']['target'] is None


def test_guard_records_figures_beside_the_others(tmp_path, monkeypatch):
  """`--record` writes the figures of the benchmarks that ran, with their
  command and commit, and keeps those recorded of the others."""
  suite = _bench_module('suite', monkeypatch)
  figures = _bench_module('figures', monkeypatch)
  path = str(tmp_path / 'benchmarks.json')
  assert suite.read_last(path) == {}

  def ran(value):
    return {'command': 'python -m scripts.bench.calls --rounds 2 --json',
            'loadavg_before': (0.5, 0.5, 0.5),
            'loadavg_after': (0.7, 0.6, 0.5), 'wall_s': 600.0,
            'machine_s': [0.7412, 0.8049],
            'figures': {'calls/v2/tf1/train': figures.figure(
                [value], better='lower', target=0.5)}}
  suite.record(path, {'calls': ran(0.4), 'canned': ran(0.6)}, 'abc123')
  suite.record(path, {'calls': ran(0.3)}, 'def456')
  last = suite.read_last(path)
  assert last['calls']['commit'] == 'def456'
  assert last['calls']['figures']['calls/v2/tf1/train']['value'] == 0.3
  assert last['canned']['commit'] == 'abc123'
  assert last['canned']['figures']['calls/v2/tf1/train']['value'] == 0.6
  assert last['calls']['command'].startswith('python -m scripts.bench.calls')
  assert last['calls']['machine_s'] == [0.74, 0.8]
  # Printed beside this run's, as measured around each part.
  line = suite._machine_line(ran(0.2) | {'machine_s': [1.31, 1.52]},  # pylint: disable=protected-access
                             last['calls'])
  assert '1.31 s before, 1.52 s after; 0.74 / 0.80 in the recorded run' in (
      line)
  assert 0 < suite.machine_seconds() < 60


def test_model_fn_floor_builds_each_mode_in_a_graph_of_its_own():
  """scripts.bench.model_fn_floor times the calls benchmark's model_fn
  alone: each build makes the mode's graph (a train_op only in TRAIN), in
  a new graph each time."""
  floor = importlib.import_module('scripts.bench.model_fn_floor')
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  made = []
  built = floor.calls_worker._tf1_model_fn  # pylint: disable=protected-access

  def recording(features, labels, mode, params):
    spec = built(features, labels, mode, params)
    made.append((mode, tf.compat.v1.get_default_graph(),
                 spec.train_op is not None))
    return spec

  floor.calls_worker._tf1_model_fn = recording  # pylint: disable=protected-access
  try:
    for mode in floor.MODES:
      times = floor.build_times(mode, 2)
      assert len(times) == 2 and all(t > 0 for t in times)
  finally:
    floor.calls_worker._tf1_model_fn = built  # pylint: disable=protected-access
  assert [(m, has_train_op) for m, _, has_train_op in made] == [
      ('infer', False), ('infer', False), ('eval', False), ('eval', False),
      ('train', True), ('train', True)]
  assert len({id(graph) for _, graph, _ in made}) == 6


def test_executor_probe_runs_both_executors_and_a_single_cond():
  """scripts.bench.executor_probe trains a small MLP on either executor
  and runs a loop with one tf.cond on the single-threaded one (its
  nested-cond check, which hangs on TensorFlow 2.21, runs only by hand)."""
  probe = importlib.import_module('scripts.bench.executor_probe')
  for single_threaded in (False, True):
    result = probe.run_side('8x16', single_threaded, loops=1)
    assert result['steps_per_sec'] > 0
    assert result['cpu_ms_per_100_steps'] > 0
  # Steps 1-4 add 1.0, steps 5-10 add 0.5.
  assert probe.run_conds(nested=False) == 7.0
