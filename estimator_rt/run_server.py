"""`python -m estimator_rt.run_server`: a long-running TensorFlow server.

Starts the standard server of one task of a standalone-client cluster and
waits for work; clients run `python -m estimator_rt.main
--remote_cluster=...` from anywhere and drive training on it, one after
another. The task comes from TF_CONFIG, or from --cluster, --job_name and
--task_index. Exits 0 on SIGTERM or SIGINT; bad input exits 2 with one line.

TensorFlow servers run work from anyone who can reach their port: keep them
on a private network.
"""

import json
import os
import signal
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')

from absl import flags  # pylint: disable=g-import-not-at-top
from absl import logging

from estimator_rt import cli  # pylint: disable=g-import-not-at-top

FLAGS = flags.FLAGS
flags.DEFINE_string('cluster', None,
                    'The cluster as JSON (job -> addresses) or @file.json. '
                    'Instead of TF_CONFIG, with --job_name and --task_index.')
flags.DEFINE_string('job_name', None, "This task's job, e.g. 'worker', 'ps'.")
flags.DEFINE_string('task_index', None, "This task's index in its job.")


def _task_from_flags():
  """The TaskInfo the flags describe, or None when none of them is given."""
  from estimator_rt import cluster  # pylint: disable=g-import-not-at-top
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


def _main(argv) -> None:
  del argv
  from estimator_rt import server  # pylint: disable=g-import-not-at-top
  from estimator_rt.errors import UserInputError  # pylint: disable=g-import-not-at-top
  try:
    tf_server = server.run_server(_task_from_flags())
  except UserInputError as e:
    cli.fail(str(e))
  del tf_server  # Kept alive by the process; join() would block signals.

  def stop(signum, frame):
    del frame
    logging.info('Signal %d: the server stops.', signum)
    sys.stdout.flush()
    sys.stderr.flush()
    # A TensorFlow server cannot be shut down cleanly (its destructor would
    # wait forever at interpreter exit); there is no state to save.
    os._exit(0)  # pylint: disable=protected-access

  signal.signal(signal.SIGTERM, stop)
  signal.signal(signal.SIGINT, stop)
  # TensorFlow serves on its own threads; this thread only waits for a
  # signal (Server.join() would not return to Python to handle one).
  while True:
    time.sleep(3600)


def main_entry():
  cli.run(_main)


if __name__ == '__main__':
  main_entry()
