"""The local Ray start's one retry (estimator_rt.launch.ray_local).

Ray's own startup timeout takes 30 s of a loaded machine to provoke, so
`init` here stands in for `ray.init`: it starts real processes (a child
with a grandchild, as Ray's gcs_server and raylet start theirs) and
raises Ray's message. What is checked is ours: the failed start's
processes are stopped before the retry, nothing else is, and only Ray's
startup timeout is retried.
"""

import os
import subprocess
import sys
import time

import pytest

from estimator_rt.launch import ray_local
from estimator_rt.launch import stopping

# A process that starts a grandchild and then sleeps, both until killed.
_TREE = ('import subprocess, sys, time; '
         'subprocess.Popen([sys.executable, "-c", "import time; '
         'time.sleep(600)"]); time.sleep(600)')

_RAY_TIMEOUT = ('The current node timed out during startup. This could '
                'happen because some of the raylet failed to startup or the '
                'GCS has become overloaded.')


class _Starts:
  """`ray.init` for the test: each call starts a process tree, and the
  first `failures` calls raise `error` after it started."""

  def __init__(self, failures, error=_RAY_TIMEOUT):
    self.failures = failures
    self.error = error
    self.trees = []
    self.calls = []

  def __call__(self, **kwargs):
    self.calls.append(kwargs)
    root = subprocess.Popen([sys.executable, '-c', _TREE])
    deadline = time.monotonic() + 30
    while not ray_local.descendant_pids(root.pid):  # The grandchild.
      if time.monotonic() > deadline:
        root.kill()
        root.wait()
        raise AssertionError('grandchild did not start')
      time.sleep(0.05)
    self.trees.append(ray_local.descendant_pids(root.pid) | {root.pid})
    if len(self.calls) <= self.failures:
      raise Exception(self.error)  # pylint: disable=broad-exception-raised

  def stop_all(self):
    for pids in self.trees:
      stopping.stop_pids(pids, grace_secs=5)


def _running(pids):
  return {pid for pid in pids if pid in ray_local.descendant_pids(os.getpid())}


def test_a_startup_timeout_stops_what_the_start_left_and_starts_again(
    capsys):
  bystander = subprocess.Popen([sys.executable, '-c',
                                'import time; time.sleep(600)'])
  starts = _Starts(failures=1)
  try:
    ray_local.start_local_ray(starts, num_cpus=2, include_dashboard=False)
    first, second = starts.trees
    assert starts.calls == [
        {'address': 'local', 'num_cpus': 2, 'include_dashboard': False}] * 2
    assert len(first) == 2 and not _running(first)
    assert _running(second) == second
    assert bystander.poll() is None  # Started before the start: kept.
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'attempt 2 of 2' in err, err
    assert 'timed out during startup' in err, err
  finally:
    starts.stop_all()
    bystander.kill()
    bystander.wait()


def test_the_last_attempts_timeout_is_raised():
  starts = _Starts(failures=ray_local.START_ATTEMPTS)
  try:
    with pytest.raises(Exception, match='timed out during startup'):
      ray_local.start_local_ray(starts)
    assert len(starts.calls) == ray_local.START_ATTEMPTS
  finally:
    starts.stop_all()


def test_any_other_failure_is_raised_at_once():
  starts = _Starts(failures=1, error='raylet binary not found')
  try:
    with pytest.raises(Exception, match='raylet binary not found'):
      ray_local.start_local_ray(starts)
    assert len(starts.calls) == 1
  finally:
    starts.stop_all()
