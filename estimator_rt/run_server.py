"""`python -m estimator_rt.run_server`: a long-running TensorFlow server.

Starts the standard server of one task (worker, ps, or an evaluator to
evaluate on) of a standalone-client cluster and waits for work; clients run `python -m estimator_rt.main
--remote_cluster=...` from anywhere and drive training on it, one after
another. The task comes from TF_CONFIG, or from --cluster, --job_name and
--task_index. Exits 0 on SIGTERM or SIGINT; bad input exits 2 with one line.

The server listens on the address the cluster gives its task and nothing
wider (TensorFlow alone would listen on every interface): the process
relaunches itself once with the bind guard preloaded (see
estimator_rt/cluster/bind_guard.py) before TensorFlow is imported. --bind_host
names another address of this machine, or 0.0.0.0 for every interface.

TensorFlow servers run work from anyone who can reach their port: keep them
on a private network.
"""

import json
import os
import signal
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')

from absl import flags  # pylint: disable=g-import-not-at-top
from absl import logging

from estimator_rt.core import cli  # pylint: disable=g-import-not-at-top

FLAGS = flags.FLAGS
flags.DEFINE_string('cluster', None,
                    'The cluster as JSON (job -> addresses) or @file.json. '
                    'Instead of TF_CONFIG, with --job_name and --task_index.')
flags.DEFINE_string('job_name', None, "This task's job, e.g. 'worker', 'ps'.")
flags.DEFINE_string('task_index', None, "This task's index in its job.")
flags.DEFINE_string(
    'bind_host', None,
    'Where to listen instead of the host the cluster gives this task: an '
    "address of this machine when the cluster names another (a service "
    'name, a NAT address), or 0.0.0.0 for every interface. Default: the '
    "cluster's host, and nothing wider.")


def _task_from_flags():
  """The TaskInfo the flags describe, or None when none of them is given."""
  from estimator_rt.cluster import tf_config as cluster  # pylint: disable=g-import-not-at-top
  given = [FLAGS.cluster, FLAGS.job_name, FLAGS.task_index]
  if all(v is None for v in given):
    return None
  if os.environ.get('TF_CONFIG', '').strip():
    raise cluster.ClusterConfigError(
        'run_server: both TF_CONFIG and --cluster/--job_name/--task_index '
        'are set; give one of them.')
  for name, value in zip(('--cluster', '--job_name', '--task_index'), given):
    if value is None:
      raise cluster.ClusterConfigError(
          f'run_server: {name} is missing; --cluster, --job_name and '
          '--task_index go together.')
  parsed = cli.load_json_flag(FLAGS.cluster, flag='cluster')
  return cluster.parse_tf_config(json.dumps({
      'cluster': parsed,
      'task': {'type': FLAGS.job_name, 'index': FLAGS.task_index}}))


def _exit_with_error(message: str) -> None:
  print(f'error: {message}', file=sys.stderr)
  sys.stdout.flush()
  sys.stderr.flush()
  # A started TensorFlow server would keep the interpreter from exiting.
  os._exit(2)  # pylint: disable=protected-access


def _main(argv) -> None:
  del argv
  # Block the stop signals now, before any other thread exists: TensorFlow's
  # threads inherit the mask (so none of them takes the signal, where no
  # Python handler would ever run), and a signal sent at any moment, even
  # during start-up or across the relaunch (exec keeps the mask), waits
  # pending for the sigwait below. A handler installed after the server
  # started would race both.
  stop_signals = {signal.SIGTERM, signal.SIGINT}
  signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
  # TensorFlow is imported only after the relaunch under the bind guard, so
  # a relaunch costs an interpreter start, not a TensorFlow import.
  from estimator_rt.cluster import bind_guard  # pylint: disable=g-import-not-at-top
  from estimator_rt.cluster import tf_config as cluster  # pylint: disable=g-import-not-at-top
  from estimator_rt.core.errors import UserInputError  # pylint: disable=g-import-not-at-top
  try:
    task = cluster.server_task(_task_from_flags(),
                               tf_config=os.environ.get('TF_CONFIG'))
    listen_address = bind_guard.guard_this_process(
        task.address, FLAGS.bind_host,
        task_name=f'{task.task_type}:{task.task_index}',
        module='estimator_rt.run_server')
    from estimator_rt.cluster import server  # pylint: disable=g-import-not-at-top
    serving = server.start_server(task, listen_address=listen_address)
  except UserInputError as e:
    _exit_with_error(str(e))
  if listen_address is None:
    logging.warning('--bind_host=%s: listening on every interface; anyone '
                    'who reaches port %s can run work on this server.',
                    FLAGS.bind_host, cluster.split_host_port(task.address)[1])
  # TensorFlow serves on its own threads (`serving` keeps the server
  # referenced); this one waits for a stop signal.
  signum = signal.sigwait(stop_signals)
  del serving
  logging.info('Signal %d: the server stops.', signum)
  sys.stdout.flush()
  sys.stderr.flush()
  # A TensorFlow server cannot be shut down cleanly (its destructor would
  # wait forever at interpreter exit); there is no state to save.
  os._exit(0)  # pylint: disable=protected-access


def main_entry():
  cli.run(_main)


if __name__ == '__main__':
  main_entry()
