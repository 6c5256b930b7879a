"""A cluster task's part for an estimator that the runtime does not drive.

`train_and_evaluate` runs the runtime's roles (roles.py) for estimator_rt's
Estimators: it reads the cluster (refusing, in one line, one it cannot
run), decides each task's role from the strategy and the model_fn's
engine, and starts the servers itself.

An object that only stands in for an Estimator passes `_TrainingExecutor`'s
`isinstance` check through its `__class__` (as `unittest.mock.Mock(spec=
Estimator)` does, which is how tf.estimator 2.15's own tests exercise the
executor) while its class is not one. It has no model_fn, engine or strategy
the runtime could ask about, and it distributes its own training if it does
at all. For it the executor does what 2.15's did for every estimator:

  - start this task's standard TensorFlow server (`Server(cluster_spec,
    job_name=task_type, task_index=task_id, start=False)`, then `start()`),
    except in Google's environment, or when the cluster is this one trainer
    and `config.master` is empty (a ps always starts one);
  - delay a worker by (task_id + 1) * 5 s, at most 60 s or
    `config.experimental_max_worker_delay_secs`;
  - call `estimator.train`; a ps instead serves (`server.join()`).

The cluster is used as given, as 2.15 used it: the runtime starts nothing
here but the one server this task asks for, so the address checks of its
own runs (tf_config.py) do not apply.
"""

import time
from typing import Any, Optional

from absl import logging
import tensorflow as tf
# The module 2.15 created its server through: code written for 2.15 (its
# tests among it) replaces `Server` there, so it is looked up there, at the
# call.
from tensorflow.python.training import server_lib as tf_server_lib

# tf.estimator 2.15's worker delays.
MAX_DELAY_SECS = 60
DELAY_SECS_PER_WORKER = 5

# The jobs whose only task may run with no server (config.master empty).
TRAINER_JOBS = ('chief', 'master', 'worker')


def is_stand_in(estimator: Any) -> bool:
  """Whether `estimator` passes as an estimator_rt Estimator only through
  its `__class__` (a `Mock(spec=Estimator)`), its type not being one."""
  from estimator_rt.estimator import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
  return not issubclass(type(estimator), estimator_lib.Estimator)


def server_config_problem(config) -> Optional[str]:
  """tf.estimator 2.15's checks of a cluster task's config before its
  server starts: the message of the RuntimeError it raised, or None."""
  if (not config.cluster_spec or not config.task_type or
      config.task_id is None):
    return ('Could not start server; be sure to specify cluster_spec, '
            'task_type, and task in RunConfig or set the TF_CONFIG '
            'environment variable.')
  if not config.master and not _single_trainer(config):
    return ('Could not start server; be sure to specify master in '
            'RunConfig or set the TF_CONFIG environment variable.')
  return None


def _single_trainer(config) -> bool:
  jobs = config.cluster_spec.jobs
  return (len(jobs) == 1 and len(config.cluster_spec.job_tasks(jobs[0])) == 1
          and config.task_type in TRAINER_JOBS)


def start_std_server(config):
  """Starts this task's standard server, as tf.estimator 2.15 did.

  Args:
    config: the estimator's config (`cluster_spec`, `task_type`,
      `task_id`, `master`, `session_config`, `protocol`).

  Returns:
    The started server, or None for a cluster of this one trainer with an
    empty `config.master` (2.15 started none then: there is no peer).

  Raises:
    RuntimeError: `server_config_problem(config)`'s message.
  """
  problem = server_config_problem(config)
  if problem:
    raise RuntimeError(
        f'{problem} (task_type={config.task_type!r}, task_id='
        f'{config.task_id!r}, master={config.master!r}, cluster_spec='
        f'{config.cluster_spec!r})')
  if not config.master:
    logging.info('Not starting a TensorFlow server: the cluster is this one '
                 'task.')
    return None
  # Only the GPU options of the user's session config: 2.15 kept its
  # device filters and placement options out of the server's defaults.
  session_config = tf.compat.v1.ConfigProto(log_device_placement=False)
  if config.session_config is not None:
    session_config.gpu_options.CopyFrom(config.session_config.gpu_options)
  logging.info('Starting the TensorFlow server of %s:%s.', config.task_type,
               config.task_id)
  server = tf_server_lib.Server(
      config.cluster_spec, job_name=config.task_type,
      task_index=config.task_id, config=session_config, start=False,
      protocol=config.protocol)
  server.start()
  return server


def worker_delay_secs(config) -> int:
  """How long a worker waits before training (0 for other tasks): 2.15
  staggered asynchronous workers, worker i by (i + 1) * 5 s, so that the
  chief's first steps shape the model before they all join."""
  if config.task_type != 'worker':
    return 0
  max_delay_secs = MAX_DELAY_SECS
  if config.experimental_max_worker_delay_secs is not None:
    max_delay_secs = int(config.experimental_max_worker_delay_secs)
  return min(max_delay_secs, (config.task_id + 1) * DELAY_SECS_PER_WORKER)


def train(estimator, train_spec, *, extra_hooks, saving_listeners,
          start_server: bool) -> None:
  """A training task's part (chief, master or worker): its server (if
  `start_server`), its delay, then `estimator.train` with the hooks of
  `train_spec` and `extra_hooks`."""
  config = estimator.config
  if start_server:
    # Before the delay: the other tasks wait for this server to connect.
    start_std_server(config)
  delay_secs = worker_delay_secs(config)
  if delay_secs > 0:
    logging.info('Waiting %d secs before starting training.', delay_secs)
    time.sleep(delay_secs)
  estimator.train(input_fn=train_spec.input_fn,
                  max_steps=train_spec.max_steps,
                  hooks=list(train_spec.hooks) + list(extra_hooks),
                  saving_listeners=saving_listeners)


def serve(estimator) -> None:
  """A ps's part: its server, until the process is ended (2.15's ps
  served forever, also in Google's environment)."""
  # Never None: a ps is not a trainer, so a config that would start no
  # server raised.
  start_std_server(estimator.config).join()
