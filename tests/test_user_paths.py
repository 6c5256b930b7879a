"""The product run as its users run it: the smoke matrix.

{binary, Python API, `python -m estimator_rt.compat`} x {TF2 model_fn,
TF1-style model_fn, canned estimator} x {local train_and_evaluate; a
parameter-server cluster with its evaluator outside the cluster spec
(tf.estimator's own layout); a multi_worker_mirrored cluster with its
evaluator inside}, each in fresh processes, on the user code of
tests/user_programs/: `smoke_models.py` (which imports TensorFlow and binds
`tf1 = tf.compat.v1` before it imports estimator_rt), `api_program.py` and
`tfe_program.py` (a tf.estimator program, run unchanged).

Every cell checks the exit codes, the final step, the evaluator's last
evaluated step, and exactly one export per exporter per evaluated
checkpoint (a LatestExporter's per evaluation, a FinalExporter's once), with
no temporary export directory left. Three user-path breaks got past the unit
tests once (TF1-style layers outside the compatibility runner, an evaluator
and a chief both exporting in tf.estimator's layout, canned graph names);
this matrix is what would have caught the first two.

Cheap by design: tiny models and few steps; locally the API and the
compatibility runner train all three models in one process each (the binary
takes one model_fn per run); a cluster run mixes the entry points across its
tasks, rotating them so that across a layout's three runs (one per model)
each entry point plays each role once. Every process is bounded in time and
killed at the end.
"""

import json
import os
import subprocess
import sys
import time
from typing import Dict, List, Tuple

import pytest

from estimator_rt.core import summaries
import _cluster

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        'user_programs')
ENTRY_POINTS = ('binary', 'api', 'compat')
MODELS = ('tf2', 'tf1', 'canned')
LOCAL_STEPS, CLUSTER_STEPS, SAVE_EVERY = 20, 30, 10
LOCAL_SECS, CLUSTER_SECS = 300, 300

_BINARY_MODEL_FNS = {'tf2': 'smoke_models:tf2_model_fn',
                     'tf1': 'smoke_models:tf1_model_fn',
                     'canned': 'smoke_models:canned_estimator'}


def _command(entry: str, models: List[str], base_dir: str, strategy: str,
             max_steps: int) -> List[str]:
  """The command line of one entry point training `models` in
  `base_dir/<model>`, as a user would type it."""
  if entry == 'binary':
    (model,) = models
    return [sys.executable, '-m', 'estimator_rt.main',
            f'--model_fn={_BINARY_MODEL_FNS[model]}',
            '--input_fn=smoke_models:input_fn',
            '--eval_input_fn=smoke_models:eval_input_fn',
            '--exporters=latest,final', f'--max_steps={max_steps}',
            f'--save_checkpoints_steps={SAVE_EVERY}', '--throttle_secs=0',
            f'--model_dir={base_dir}/{model}',
            f'--distribution_strategy={strategy}']
  arguments = [','.join(models), base_dir, strategy, str(max_steps),
               str(SAVE_EVERY)]
  if entry == 'api':
    return [sys.executable, 'api_program.py'] + arguments
  if strategy == 'parameter_server':
    arguments[2] = 'default'  # As tf.estimator programs: no strategy.
  return [sys.executable, '-m', 'estimator_rt.compat',
          'tfe_program.py'] + arguments


def _env(tf_config=None, **extra) -> Dict[str, str]:
  env = _cluster.task_env(extra)
  env['PYTHONPATH'] = PROGRAMS + os.pathsep + env['PYTHONPATH']
  if tf_config is not None:
    env['TF_CONFIG'] = json.dumps(tf_config)
  return env


def _start(command, *, env, log_path) -> subprocess.Popen:
  with open(log_path, 'w') as log:
    return subprocess.Popen(command, env=env, cwd=PROGRAMS, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def _wait_all(processes: Dict[str, Tuple[subprocess.Popen, str]], *,
              timeout: float) -> Dict[str, int]:
  """Every process's exit code (None: still running at the deadline, then
  killed); every process is dead when this returns."""
  deadline = time.time() + timeout
  codes = {}
  try:
    for name, (process, _) in processes.items():
      try:
        codes[name] = process.wait(timeout=max(0.0, deadline - time.time()))
      except subprocess.TimeoutExpired:
        codes[name] = None
  finally:
    for process, _ in processes.values():
      if process.poll() is None:
        os.killpg(process.pid, 9)
        process.wait()
  return codes


def _tails(processes) -> str:
  parts = []
  for name, (_, log_path) in processes.items():
    with open(log_path, errors='replace') as f:
      parts.append(f'--- {name}\n{f.read()[-2500:]}')
  return '\n'.join(parts)


def _check_model_dir(model_dir: str, *, final_step: int, where: str,
                     overshoot: int = 0) -> None:
  """The newest checkpoint is at `final_step` (up to `overshoot` steps
  past it), the last evaluation is of a checkpoint at `final_step` or past
  it (at the step it holds, up to `overshoot` past the newest's name), no
  step was evaluated twice, and
  each exporter exported exactly once per evaluation (latest) or once per
  evaluation of a checkpoint at `final_step` or past it (final), nothing
  half-written."""
  steps = _cluster.checkpoint_steps(model_dir)
  assert steps and final_step <= steps[-1] <= final_step + overshoot, (
      where, steps)
  evaluated = [step for step, _ in summaries.read_scalars(
      os.path.join(model_dir, 'eval')).get('loss', [])]
  # Between-graph, a checkpoint named at the step the chief read holds the
  # global step the worker had moved on to when it was written (as
  # tf.estimator's CheckpointSaverHook named it): its evaluation says so.
  # And the evaluator stops after the first evaluation at max_steps or past
  # it, as tf.estimator's did: a final save the chief makes after that (at
  # 31 of 30, the worker's step in flight; seen once in CI) is not
  # evaluated. In-graph (overshoot 0) both bounds are `final_step`.
  assert evaluated and (
      final_step <= evaluated[-1] <= steps[-1] + overshoot), (where, evaluated)
  assert len(set(evaluated)) == len(evaluated), (where, evaluated)
  export = os.path.join(model_dir, 'export')
  assert sorted(os.listdir(export)) == ['final', 'latest'], (where, export)
  latest = os.listdir(os.path.join(export, 'latest'))
  final = os.listdir(os.path.join(export, 'final'))
  assert all(name.isdigit() for name in latest + final), (where, latest,
                                                          final)
  assert len(latest) == len(evaluated), (where, latest, evaluated)
  # tf.estimator's FinalExporter exports at each evaluation whose global
  # step reached max_steps: once in-graph; between-graph, a legacy master
  # that evaluated the checkpoint at max_steps evaluates (and exports) the
  # chief's final save one step past it too, as 2.15's did (seen once).
  at_the_end = [step for step in evaluated if step >= final_step]
  assert len(final) == len(at_the_end) >= 1, (where, final, evaluated)


# The environment that starts the user programs under a behaviour:
# smoke_models calls tf.compat.v1.disable_v2_behavior() first with
# SMOKE_TF1_BEHAVIOR=1.
_BEHAVIOR_ENV = {'tf2': {}, 'tf1': {'SMOKE_TF1_BEHAVIOR': '1'}}
# The models a TF1-behaviour program brings (Keras 3 runs in TF2 behaviour
# only).
TF1_MODELS = ('tf1', 'canned')


# ------------------------------------------------------------------ local
@pytest.mark.parametrize('behavior', ['tf2', 'tf1'])
def test_local_train_and_evaluate_through_every_entry_point(tmp_path,
                                                            behavior):
  """Locally: each entry point trains each model to max_steps, evaluates
  the checkpoints at 10 and 20, and exports (TF_USE_LEGACY_KERAS unset:
  the compatibility runner then makes tf.keras Keras 2, the binary and the
  API leave it Keras 3); under TF1 behaviour, the TF1-style and canned
  models."""
  models_here = MODELS if behavior == 'tf2' else TF1_MODELS
  env = _env(**_BEHAVIOR_ENV[behavior])
  env.pop('TF_USE_LEGACY_KERAS', None)
  runs = []
  for entry in ENTRY_POINTS:
    for models in ([[m] for m in models_here] if entry == 'binary' else
                   [list(models_here)]):
      runs.append((f'{entry}:{",".join(models)}',
                   _command(entry, models, str(tmp_path / entry), 'default',
                            LOCAL_STEPS),
                   str(tmp_path / f'{entry}_{models[0]}.log')))
  # The runs of every model first (they take longest), then two at a time
  # (the machine has two cores), the next one started as soon as one ends.
  runs.sort(key=lambda run: -len(run[0].split(',')))
  processes = {}
  deadline = time.time() + LOCAL_SECS * len(runs) / 2
  try:
    while runs and time.time() < deadline:
      if sum(p.poll() is None for p, _ in processes.values()) < 2:
        name, command, log_path = runs.pop(0)
        processes[name] = (_start(command, env=env, log_path=log_path),
                           log_path)
      else:
        time.sleep(0.2)
  finally:
    codes = _wait_all(processes, timeout=max(0.0, deadline - time.time()))
  assert not runs, f'not started in time: {runs}'
  assert codes == {name: 0 for name in processes}, _tails(processes)
  for entry in ENTRY_POINTS:
    for model in models_here:
      model_dir = str(tmp_path / entry / model)
      _check_model_dir(model_dir, final_step=LOCAL_STEPS,
                       where=f'{entry} {model}')
      evaluated = [s for s, _ in summaries.read_scalars(
          os.path.join(model_dir, 'eval')).get('loss', [])]
      assert evaluated == [SAVE_EVERY, LOCAL_STEPS], (entry, model,
                                                       evaluated)


def test_the_compat_runner_with_keras_3_kept(tmp_path):
  """`TF_USE_LEGACY_KERAS=0` keeps tf.keras Keras 3 under the compatibility
  runner; the TF1-style layers are still Keras 2's."""
  log_path = str(tmp_path / 'compat.log')
  command = _command('compat', ['tf1'], str(tmp_path), 'default',
                     LOCAL_STEPS)
  processes = {'compat': (_start(command, env=_env(TF_USE_LEGACY_KERAS='0'),
                                 log_path=log_path), log_path)}
  assert _wait_all(processes, timeout=LOCAL_SECS) == {'compat': 0}, (
      _tails(processes))
  _check_model_dir(str(tmp_path / 'tf1'), final_step=LOCAL_STEPS,
                   where='compat tf1, Keras 3')


# --------------------------------------------------------------- clusters
def _layout(layout: str):
  """(cluster spec given to the tasks, the tasks, the strategy)."""
  if layout == 'legacy_master':
    # tf.estimator's legacy between-graph cluster (hosted training's
    # TF_CONFIG of its time): a `master` that trains and evaluates, no
    # evaluator task.
    spec = _cluster.launcher().make_cluster(workers=1, ps=1, chief=True,
                                            evaluator=False)
    spec = {('master' if job == 'chief' else job): addresses
            for job, addresses in spec.items()}
    return spec, [('master', 0), ('worker', 0), ('ps', 0)], (
        'parameter_server')
  if layout == 'parameter_server':
    spec = _cluster.launcher().make_cluster(workers=1, ps=1, chief=True,
                                            evaluator=False)
    # tf.estimator's layout: the evaluator is not in the cluster spec.
    return spec, [('chief', 0), ('worker', 0), ('ps', 0),
                  ('evaluator', 0)], 'parameter_server'
  spec = _cluster.launcher().make_cluster(workers=2, ps=0, chief=False,
                                          evaluator=True)
  return spec, [('worker', 0), ('worker', 1), ('evaluator', 0)], (
      'multi_worker_mirrored')


# (layout, rotation, model, behaviour): every model in both layouts; under
# TF1 behaviour (the programs call tf.compat.v1.disable_v2_behavior()
# first) the TF1-style and canned models, one layout each, every entry
# point in a role of both. Under TF1 behaviour the two multi_worker_mirrored
# workers are the Python programs (rotation 1: api, compat) and the binary
# evaluates: the binary makes its strategy eagerly before the user's
# modules run, with TensorFlow's coordination service, which the standard
# server of a TF1-behaviour program's strategy does not join
# (docs/clusters.md).
_CLUSTER_RUNS = [(layout, rotation, model, 'tf2')
                 for layout in ('parameter_server', 'multi_worker_mirrored')
                 for rotation, model in enumerate(MODELS)] + [
                     ('parameter_server', 1, 'canned', 'tf1'),
                     ('multi_worker_mirrored', 1, 'tf1', 'tf1')] + [
                         # A legacy `master` (tf.estimator 2.15 ran it,
                         # for between-graph models): each entry point as
                         # the master once.
                         ('legacy_master', 0, 'tf1', 'tf2'),
                         ('legacy_master', 1, 'canned', 'tf1'),
                         ('legacy_master', 2, 'canned', 'tf2')]


@pytest.mark.parametrize('layout, rotation, model, behavior', _CLUSTER_RUNS)
def test_a_cluster_of_mixed_entry_points(tmp_path, layout, rotation, model,
                                         behavior):
  """One cluster job per (layout, model, behaviour): task i runs entry
  point (i + rotation) % 3. Every task exits 0; the chief saves the final
  checkpoint at max_steps (one past it at most between-graph); only the
  evaluator (a legacy cluster's master) evaluates (never one checkpoint
  twice) and exports, once per exporter per evaluation."""
  spec, tasks, strategy = _layout(layout)
  processes = {}
  for i, (job, index) in enumerate(tasks):
    entry = ENTRY_POINTS[(i + rotation) % len(ENTRY_POINTS)]
    name = f'{job}:{index} ({entry})'
    log_path = str(tmp_path / f'{job}_{index}.log')
    command = _command(entry, [model], str(tmp_path), strategy,
                       CLUSTER_STEPS)
    env = _env({'cluster': spec, 'task': {'type': job, 'index': index}},
               **_BEHAVIOR_ENV[behavior])
    processes[name] = (_start(command, env=env, log_path=log_path),
                       log_path)
  codes = _wait_all(processes, timeout=CLUSTER_SECS)
  assert codes == {name: 0 for name in processes}, _tails(processes)
  # Between-graph (TF1-style and canned models on parameter servers, as
  # tf.estimator trained them) the chief and the worker step asynchronously:
  # each stops once it sees max_steps, and the chief's final save lands
  # after the steps the worker had in flight (tf.estimator's overshoot
  # too). On an idle machine that is one step; in a loaded full run the
  # final checkpoint was seen at 34 of 30 once: a fifth of the run past at
  # most.
  between_graph = layout != 'multi_worker_mirrored' and model != 'tf2'
  try:
    _check_model_dir(str(tmp_path / model), final_step=CLUSTER_STEPS,
                     where=f'{layout} {model}',
                     overshoot=CLUSTER_STEPS // 5 if between_graph else 0)
  except AssertionError as e:
    # What each task logged: a wrong final step or evaluation is a timing
    # of the tasks against one another, seen once in many runs.
    raise AssertionError(f'{e}\n{_tails(processes)}') from e
