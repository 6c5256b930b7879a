"""What TPUEstimator knew of its TPU without asking one: tf.estimator's
`_InternalTPUContext` for a mode, reduced to the settings read from the
RunConfig (the TPU job name). The rest of 2.15's context queried a TPU
system, which estimator_rt does not run on.
"""

import contextlib
import copy
from typing import Optional

from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys

# Masters that mean "this process": no TPU job to place on.
_LOCAL_MASTERS = ('', 'local')
_DEFAULT_JOB_NAME = 'tpu_worker'
_DEFAULT_COORDINATOR_JOB_NAME = 'coordinator'


def master_job(master: str, cluster_def) -> Optional[str]:
  """tf.estimator's TPU job for `master` in `cluster_def` (a ClusterDef or
  None): None for a local master; 'tpu_worker' without a cluster; the
  cluster's one job, or its one job besides 'coordinator'.

  Raises:
    ValueError: a job named 'tpu_worker' in the cluster, or no job to infer.
  """
  if master in _LOCAL_MASTERS:
    return None
  if not cluster_def or not cluster_def.job:
    return _DEFAULT_JOB_NAME
  names = {job.name for job in cluster_def.job}
  if _DEFAULT_JOB_NAME in names:
    raise UserInputError(
        'Currently, tpu_worker is not an allowed job name (session_config.'
        f'cluster_def jobs: {sorted(names)}).')
  if len(names) == 1:
    return cluster_def.job[0].name
  if len(names) == 2 and _DEFAULT_COORDINATOR_JOB_NAME in names:
    return (names - {_DEFAULT_COORDINATOR_JOB_NAME}).pop()
  raise UserInputError(
      f'Could not infer TPU job name (session_config.cluster_def jobs: '
      f'{sorted(names)}).')


class InternalTPUContext:
  """A TPUEstimator's settings, for one mode once `with_mode` gives it."""

  def __init__(self, config, mode: Optional[str] = None):
    self._config = config
    self._mode = mode

  @contextlib.contextmanager
  def with_mode(self, mode: str):
    """A copy of this context for `mode`."""
    context = copy.copy(self)
    context._mode = mode  # pylint: disable=protected-access
    yield context

  @property
  def mode(self) -> str:
    if self._mode is None:
      raise RuntimeError('`mode` must be set first (use with_mode).')
    return self._mode

  @property
  def master_job(self) -> Optional[str]:
    """The TPU job: TPUConfig.tpu_job_name, else the one `master_job`
    infers from the mode's master (evaluation_master for EVAL) and the
    session config's cluster_def.

    Raises:
      ValueError: the job cannot be inferred.
    """
    config = self._config
    if config.tpu_config.tpu_job_name:
      return config.tpu_config.tpu_job_name
    master = (config.evaluation_master if self.mode == ModeKeys.EVAL else
              config.master)
    cluster_def = (config.session_config.cluster_def
                   if config.session_config else None)
    try:
      return master_job(master, cluster_def)
    except UserInputError as e:
      raise UserInputError(
          f'{e} Please specify a tpu_job_name as part of your TPUConfig.'
      ) from None
