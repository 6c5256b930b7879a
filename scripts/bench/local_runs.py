"""The local comparison's children: one fresh process per side and run.

Each child is a `scripts.bench.worker` (bare, runtime, graph, keras_fit)
or, for the tf.estimator peer, a `scripts.bench.tf_estimator_worker` under
`settings.PEER_PYTHON`; each prints one result line (`protocol`), read here
with the wall time the child was started at. Standard library only.
"""

import os
import subprocess
from typing import Dict, List, Optional

from scripts.bench.processes import ChildError
from scripts.bench.processes import module_command
from scripts.bench.processes import REPO_ROOT
from scripts.bench.processes import run_child_process
from scripts.bench.settings import PEER_PYTHON
from scripts.bench.settings import TAE_CHECKPOINT_EVERY
from scripts.bench.settings import TAE_EVAL_STEPS
from scripts.bench.settings import TAE_STEPS


def peer_data_path(workload: str, directory: str) -> str:
  return os.path.join(directory, f'{workload}.npz')


def write_peer_data(workloads: List[str], directory: str, *,
                    env: Dict[str, str], timeout_s: float) -> None:
  """Saves the arrays each workload's input_fn draws from, for the
  tf.estimator side (whose environment cannot import the project), from a
  child of this Python (`scripts.bench.peer_data`; the parent imports
  nothing heavy itself)."""
  args = [a for w in workloads for a in (w, peer_data_path(w, directory))]
  result = subprocess.run(module_command('peer_data', *args),
                          env=env, cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=timeout_s, check=False)
  if result.returncode != 0:
    raise ChildError('writing the tf.estimator side\'s data failed:\n'
                     + result.stderr[-3000:])


def _command(side: str, workload: str, steps: int, *, jit_compile: bool,
             graph_engine: bool, peer_data_dir: Optional[str],
             intra_op_threads: int = 0, v1_behavior: bool = False
             ) -> List[str]:
  # Every side alike (protocol.apply_intra_op_threads).
  threads = (['--intra_op_threads', str(intra_op_threads)]
             if intra_op_threads else [])
  # The estimator sides of the graph engine's comparison (the bare loop is
  # TF2's either way).
  behavior = (['--v1_behavior'] if v1_behavior and graph_engine and
              side in ('runtime', 'tf_estimator') else [])
  if side == 'tf_estimator':
    # With the graph engine, both sides run the same TF1-style model_fn.
    return module_command('tf_estimator_worker', '--workload', workload,
                          '--steps', str(steps), '--data',
                          peer_data_path(workload, peer_data_dir),
                          *(['--tf1_model_fn'] if graph_engine else []),
                          *threads, *behavior, python=PEER_PYTHON)
  worker_side = 'graph' if (side == 'runtime' and graph_engine) else side
  command = module_command('worker', '--side', worker_side, '--workload',
                           workload, '--steps', str(steps), *threads,
                           *behavior)
  if jit_compile and side == 'runtime':
    command.append('--jit_compile')
  return command


def run_train_and_evaluate_child(side: str, workload: str, *,
                                 timeout_s: float, env: Dict[str, str],
                                 peer_data_dir: Optional[str],
                                 intra_op_threads: int = 0) -> dict:
  """One local train_and_evaluate (TAE_STEPS steps, a checkpoint every
  TAE_CHECKPOINT_EVERY, TAE_EVAL_STEPS batches evaluated after each) by the
  runtime or tf.estimator in a fresh process; adds `wall_s`, from just
  before the process started until train_and_evaluate returned."""
  command = _command(side, workload, TAE_STEPS, jit_compile=False,
                     graph_engine=False, peer_data_dir=peer_data_dir,
                     intra_op_threads=intra_op_threads)
  command += ['--train_and_evaluate',
              f'{TAE_CHECKPOINT_EVERY},{TAE_EVAL_STEPS}']
  result, launched = run_child_process(
      command, f'{side} {workload} train_and_evaluate', timeout_s=timeout_s,
      env=env)
  result['wall_s'] = result['done_wall'] - launched
  result['after_imports_s'] = result['done_wall'] - result['imports_done_wall']
  return result


def run_child(side: str, workload: str, steps: int, *,
              timeout_s: float, env: Dict[str, str],
              jit_compile: bool = False, graph_engine: bool = False,
              peer_data_dir: Optional[str] = None,
              intra_op_threads: int = 0, v1_behavior: bool = False) -> dict:
  """Runs one side of one workload in a fresh process; returns its result.

  Adds `first_step_s` (from just before the process was started to the end
  of its first step), `import_s` (process start to imports done) and
  `peak_rss_mib` to what the child reports.

  Raises:
    ChildError: the child exited non-zero, ran past `timeout_s` (it is
      killed) or printed no result line.
  """
  command = _command(side, workload, steps, jit_compile=jit_compile,
                     graph_engine=graph_engine, peer_data_dir=peer_data_dir,
                     intra_op_threads=intra_op_threads,
                     v1_behavior=v1_behavior)
  result, launched = run_child_process(command, f'{side} {workload}',
                                  timeout_s=timeout_s, env=env)
  result['first_step_s'] = result['first_step_wall'] - launched
  result['import_s'] = result['imports_done_wall'] - launched
  result['after_imports_s'] = result['first_step_s'] - result['import_s']
  result['peak_rss_mib'] = result['peak_rss_kib'] / 1024.0
  return result
