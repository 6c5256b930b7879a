"""A one-node Slurm for the tests, and jobs submitted to it (bounded).

`local_slurm` (a context manager, used by a module-scoped fixture) installs
Slurm if `sbatch` is missing (root, apt-get), starts the daemons if they
are not running, and stops the ones it started when the tests are done.
`submit` runs `sbatch --wait` with a time limit; every job a test submits
carries the test's job name, and `cancel_jobs` (called from a finalizer)
cancels whatever of them still runs.
"""

import contextlib
import dataclasses
import os
import re
import subprocess
import time
import uuid
from typing import Dict, List, Optional, Sequence

import _cluster

LOCAL_SLURM = os.path.join(_cluster.REPO_ROOT, 'scripts', 'slurm',
                           'local_slurm.sh')
SBATCH_SCRIPT = os.path.join(_cluster.REPO_ROOT, 'scripts', 'slurm',
                             'estimator_rt.sbatch')

INSTALL_TIMEOUT_SECS = 900
START_TIMEOUT_SECS = 180


class SlurmUnavailable(Exception):
  """Slurm cannot run here; the message says why (a skip reason)."""


def _run(args: Sequence[str], *, timeout: float
         ) -> subprocess.CompletedProcess:
  return subprocess.run(list(args), capture_output=True, text=True,
                        timeout=timeout, check=False)


@contextlib.contextmanager
def local_slurm():
  """Yields the SLURM_CONF of a running one-node Slurm.

  Raises:
    SlurmUnavailable: not root, or the install failed.
  """
  if os.geteuid() != 0:
    raise SlurmUnavailable(
        'a one-node Slurm needs root (its daemons run as root; the install '
        'uses apt-get); run the tests as root, or start one with '
        'scripts/slurm/local_slurm.sh install && ... start')
  installed = _run([LOCAL_SLURM, 'install'], timeout=INSTALL_TIMEOUT_SECS)
  if installed.returncode != 0:
    raise SlurmUnavailable(
        f'scripts/slurm/local_slurm.sh install failed: '
        f'{(installed.stderr or installed.stdout).strip()[-500:]}')
  already_running = _run([LOCAL_SLURM, 'status'], timeout=30).returncode == 0
  conf = _run([LOCAL_SLURM, 'env'], timeout=30).stdout.strip().split('=', 1)[1]
  if not already_running:
    started = _run([LOCAL_SLURM, 'start'], timeout=START_TIMEOUT_SECS)
    # Installed and root, so a start that fails is a failure, not a skip.
    assert started.returncode == 0, started.stdout + started.stderr
  try:
    yield conf
  finally:
    if not already_running:
      _run([LOCAL_SLURM, 'stop'], timeout=120)


@dataclasses.dataclass
class JobResult:
  """What one `sbatch --wait` left behind."""

  code: Optional[int]  # sbatch's exit code (the job's); None: timed out.
  output: str          # The job's output file (stdout and stderr).
  elapsed_secs: float

  def lines(self, prefix: str) -> List[str]:
    """The output lines of `prefix` ('worker:1', 'sbatch', 'slurm'),
    without the prefix."""
    start = f'[{prefix}] '
    return [line[len(start):] for line in self.output.splitlines()
            if line.startswith(start)]

  def log(self, prefix: str) -> str:
    return '\n'.join(self.lines(prefix))

  def unprefixed_lines(self) -> List[str]:
    """Lines that do not say whose they are. Slurm's own messages about
    the batch step are written into the output file by slurmstepd, past
    the script's pipes, and name their source: `slurmstepd-<node>: `."""
    return [line for line in self.output.splitlines()
            if line.strip() and not re.match(
                r'\[[a-z]+(:\d+)?\] |slurmstepd-\S+: ', line)]

  def exit_codes(self) -> Dict[str, List[int]]:
    """Each task's exit codes, one per step run, from the entry's last
    line ('[worker:1] estimator_rt.launch.slurm: worker:1 exited 0')."""
    codes: Dict[str, List[int]] = {}
    for match in re.finditer(
        r'^\[([a-z]+:\d+)\] estimator_rt\.launch\.slurm: \1 exited (-?\d+)$',
        self.output, re.M):
      codes.setdefault(match.group(1), []).append(int(match.group(2)))
    return codes

  def tail(self, chars: int = 6000) -> str:
    return self.output[-chars:]


class Jobs:
  """Submits the jobs of one test, all under one job name, and cancels
  what still runs of them (`cancel`, from a finalizer)."""

  def __init__(self, *, conf: str, directory):
    self.name = f'ert_test_{uuid.uuid4().hex[:10]}'
    self.directory = str(directory)
    self.env = _cluster.task_env({'SLURM_CONF': conf,
                                  'TF_CPP_MIN_LOG_LEVEL': '2'})
    self._count = 0

  def _sbatch(self, sbatch_args: Sequence[str], script_args: Sequence[str],
              output: str, *, wait: bool) -> List[str]:
    return (['sbatch', f'--job-name={self.name}', f'--chdir={self.directory}',
             f'--output={output}', '--overcommit'] +
            (['--wait'] if wait else ['--parsable']) +
            list(sbatch_args) + [SBATCH_SCRIPT] + list(script_args))

  def _output_path(self) -> str:
    self._count += 1
    return os.path.join(self.directory, f'job{self._count}.out')

  def run(self, *, ntasks: int, script_args: Sequence[str],
          sbatch_args: Sequence[str] = (), timeout: float = 300,
          env: Optional[Dict[str, str]] = None) -> JobResult:
    """`sbatch --wait --ntasks=N ... estimator_rt.sbatch <script_args>`,
    at most `timeout` seconds (then the job is cancelled, code None)."""
    output = self._output_path()
    started = time.monotonic()
    try:
      code = subprocess.run(
          self._sbatch([f'--ntasks={ntasks}', *sbatch_args], script_args,
                       output, wait=True),
          env=dict(self.env, **(env or {})), capture_output=True,
          text=True, timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
      code = None
      self.cancel()
    return JobResult(code=code, output=_read(output),
                     elapsed_secs=time.monotonic() - started)

  def submit(self, *, ntasks: int, script_args: Sequence[str],
             sbatch_args: Sequence[str] = (),
             env: Optional[Dict[str, str]] = None) -> 'Submitted':
    """Submits without waiting; see `Submitted.wait`."""
    output = self._output_path()
    result = subprocess.run(
        self._sbatch([f'--ntasks={ntasks}', *sbatch_args], script_args,
                     output, wait=False),
        env=dict(self.env, **(env or {})), capture_output=True, text=True,
        timeout=60, check=True)
    return Submitted(job_id=result.stdout.strip().split(';')[0],
                     output_path=output, env=self.env,
                     started=time.monotonic())

  def cancel(self) -> None:
    """Cancels every job of this test still queued or running (SIGKILL
    after Slurm's KillWait) and waits, bounded, for them to leave."""
    subprocess.run(['scancel', f'--name={self.name}'], env=self.env,
                   capture_output=True, timeout=60, check=False)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and self.queued():
      time.sleep(1)

  def queued(self) -> List[str]:
    result = subprocess.run(['squeue', '-h', f'--name={self.name}', '-o',
                             '%i'], env=self.env, capture_output=True,
                            text=True, timeout=60, check=False)
    return result.stdout.split()


@dataclasses.dataclass
class Submitted:
  """A job submitted without --wait."""

  job_id: str
  output_path: str
  env: Dict[str, str]
  started: float

  def output(self) -> str:
    return _read(self.output_path)

  def signal_steps(self, signal_name: str = 'TERM') -> None:
    """`scancel --signal=TERM JOB`: every process of the job's steps gets
    it (as on a preemption), the batch script does not."""
    subprocess.run(['scancel', f'--signal={signal_name}', self.job_id],
                   env=self.env, capture_output=True, timeout=60, check=True)

  def wait(self, *, timeout: float) -> JobResult:
    """Waits (bounded) for the job to leave the queue; its exit code from
    `scontrol show job` (kept by slurmctld for MinJobAge, 300 s)."""
    deadline = time.monotonic() + timeout
    code = None
    while time.monotonic() < deadline:
      shown = subprocess.run(['scontrol', 'show', 'job', self.job_id],
                             env=self.env, capture_output=True, text=True,
                             timeout=60, check=False).stdout
      state = re.search(r'JobState=(\S+)', shown)
      if state and state.group(1) not in ('PENDING', 'RUNNING',
                                          'CONFIGURING', 'COMPLETING'):
        code = int(re.search(r'ExitCode=(\d+):', shown).group(1))
        break
      time.sleep(1)
    return JobResult(code=code, output=self.output(),
                     elapsed_secs=time.monotonic() - self.started)


def _read(path: str) -> str:
  try:
    with open(path, errors='replace') as f:
      return f.read()
  except FileNotFoundError:
    return ''
