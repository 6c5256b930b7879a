"""Stopping processes by pid (estimator_rt.launch.stopping) and its user
`local_servers stop`, on real processes."""

import json
import os
import subprocess
import sys

from estimator_rt.launch import stopping

# Exits on SIGTERM (Python's default), or ignores it.
_SLEEPER = 'import time; time.sleep(600)'
_DEAF = ('import signal, sys, time; '
         'signal.signal(signal.SIGTERM, signal.SIG_IGN); '
         'print("ready", flush=True); time.sleep(600)')


def _start(code):
  process = subprocess.Popen([sys.executable, '-c', code],
                             stdout=subprocess.PIPE, text=True)
  if code == _DEAF:
    assert process.stdout.readline() == 'ready\n'  # Its handler is set.
  return process


def test_sigterm_first_and_sigkill_for_what_ignores_it():
  polite, deaf = _start(_SLEEPER), _start(_DEAF)
  try:
    killed = stopping.stop_pids([polite.pid, deaf.pid], grace_secs=1.0)
    assert killed == [deaf.pid]
    # Both reaped here (they are this process's children): gone for good.
    assert not stopping.alive(polite.pid) and not stopping.alive(deaf.pid)
    assert polite.returncode is None  # Reaped by stop_pids, not Popen.
    for process in (polite, deaf):
      assert not os.path.exists(f'/proc/{process.pid}')
  finally:
    for process in (polite, deaf):
      if process.poll() is None:
        process.kill()


def test_pids_that_ended_already_are_skipped():
  ended = _start('pass')
  ended.wait()
  assert stopping.stop_pids([ended.pid], grace_secs=1.0) == []


def test_local_servers_start_then_stop(tmp_path):
  cluster_file = str(tmp_path / 'cluster.json')
  command = [sys.executable, '-m', 'estimator_rt.launch.local_servers']
  started = subprocess.run(
      command + ['start', '--workers=1', '--ps=0',
                 f'--cluster_file={cluster_file}',
                 '--startup_timeout_secs=120'],
      capture_output=True, text=True, timeout=180, check=False)
  with open(cluster_file + '.pids') as f:
    pids = json.load(f)
  try:
    assert started.returncode == 0, started.stderr
    cluster = json.loads(started.stdout.strip().splitlines()[-1])
    assert list(cluster) == ['worker'] and len(pids) == 1, (cluster, pids)
    stopped = subprocess.run(
        command + ['stop', f'--cluster_file={cluster_file}'],
        capture_output=True, text=True, timeout=60, check=False)
    assert stopped.returncode == 0, stopped.stderr
    assert 'stopped 1 server(s)' in stopped.stdout, stopped.stdout
    assert 'ignored SIGTERM' not in stopped.stderr, stopped.stderr
    assert not os.path.exists(cluster_file + '.pids')
    # The server was not the stopper's child: it ended on SIGTERM and
    # start's process (its parent, gone) left it to init to reap.
    assert not any(stopping.alive(pid) for pid in pids.values()), pids
  finally:
    stopping.stop_pids(pids.values(), grace_secs=1.0)
