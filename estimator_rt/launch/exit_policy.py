"""How a launcher reads a task's exit code, and what it restarts.

The contract every launcher keeps (local processes, Slurm, Kubernetes,
Ray): 0 finished; 2 bad input, never restarted; 143 preempted (the runtime
saved a checkpoint and asks to be resumed; a task killed by SIGTERM counts
the same), restarted without using the failure budget; anything else
failed, restarted while the budget lasts. The launcher's own exit code is
the chief's.
"""

import signal
from typing import Dict, List, Sequence

from estimator_rt.launch.layout import TaskKey
from estimator_rt.launch.layout import chief_of
from estimator_rt.launch.layout import task_name

# estimator_rt.cluster.preemption.PREEMPTED_EXIT_CODE, repeated: that module
# imports absl, and a launcher runs without it.
PREEMPTED_EXIT_CODE = 143
BAD_INPUT_EXIT_CODE = 2
TIMEOUT_EXIT_CODE = 124

# How a task's exit code is judged (see `exit_kind`).
FINISHED = 'finished'
BAD_INPUT = 'bad input'
PREEMPTED = 'preempted'
FAILED = 'failed'


def exit_kind(code: int) -> str:
  """FINISHED (0), BAD_INPUT (2), PREEMPTED (143, or killed by SIGTERM,
  which a shell reports as 143 too) or FAILED (anything else, including
  being killed by another signal)."""
  if code == 0:
    return FINISHED
  if code == BAD_INPUT_EXIT_CODE:
    return BAD_INPUT
  if code in (PREEMPTED_EXIT_CODE, -signal.SIGTERM):
    return PREEMPTED
  return FAILED


def describe_exit(code: int) -> str:
  """'-9 (failed: killed by SIGKILL)', '143 (preempted)', '1 (failed)'."""
  if code < 0:
    try:
      name = signal.Signals(-code).name
    except ValueError:
      name = f'signal {-code}'
    return f'{code} ({exit_kind(code)}: killed by {name})'
  return f'{code} ({exit_kind(code)})'


def shell_code(code: int) -> int:
  """A Popen return code as a process exit status: -N becomes 128 + N."""
  return 128 - code if code < 0 else code


def restart_set(cluster: Dict[str, List[str]], lost: TaskKey
                ) -> List[TaskKey]:
  """The tasks to restart when `lost` ended before the job was done.

  The evaluator restarts alone: it only reads model_dir. A worker of a
  parameter-server cluster (one with ps tasks) restarts alone: the
  ClusterCoordinator re-dispatches its work to the other workers and takes
  it back when a server answers at its address again. Anything else
  restarts every task but the evaluator: a multi_worker_mirrored collective
  cannot take a new member, and a lost ps or chief takes the variables or
  the coordinator with it, so the cluster resumes from the newest
  checkpoint.
  """
  job = lost[0]
  if job == 'evaluator' or (job == 'worker' and 'ps' in cluster and
                            lost != chief_of(cluster)):
    return [lost]
  return [(j, i) for j, addresses in cluster.items() if j != 'evaluator'
          for i in range(len(addresses))]


def can_carry_on_without(cluster: Dict[str, List[str]], lost: TaskKey,
                         alive: Sequence[TaskKey]) -> bool:
  """Whether the job can still finish with `lost` gone for good: it is the
  evaluator, or a parameter-server worker while another worker is `alive`.
  """
  if lost == chief_of(cluster):
    return False
  if lost[0] == 'evaluator':
    return True
  return (lost[0] == 'worker' and 'ps' in cluster and
          any(k[0] == 'worker' and k != lost for k in alive))


def describe_set(cluster: Dict[str, List[str]], lost: TaskKey,
                 keys: Sequence[TaskKey]) -> str:
  """'all tasks', 'worker:1 alone' or 'the training tasks (...)'."""
  everyone = [(j, i) for j, addresses in cluster.items()
              for i in range(len(addresses))]
  if sorted(keys) == sorted(everyone):
    return 'all tasks'
  if list(keys) == [lost]:
    return f'{task_name(lost)} alone'
  return ('the training tasks (' + ', '.join(task_name(k) for k in keys) +
          '; the evaluator keeps running)')
