"""tensorflow.python.distribute.estimator_training, over estimator_rt.

TensorFlow <= 2.15 held here the glue between tf.estimator and its
distribute coordinator: whether a RunConfig runs `train_and_evaluate`
through the coordinator, and the coordinator's mode. estimator_rt keeps
2.15's answers (`RunConfig._distribute_coordinator_mode`, set by
RunConfig itself), while its roles (estimator_rt/cluster/roles.py) do the
coordinator's work: `train_and_evaluate` here is estimator_rt's.
"""

from absl import logging
from tensorflow.python.distribute import distribute_coordinator as dc

# pylint: disable=protected-access
CHIEF = dc._TaskType.CHIEF
EVALUATOR = dc._TaskType.EVALUATOR
PS = dc._TaskType.PS
WORKER = dc._TaskType.WORKER
# pylint: enable=protected-access


def init_run_config(config, tf_config):
  """2.15's: sets `config._distribute_coordinator_mode` (STANDALONE_CLIENT
  for a remote cluster, INDEPENDENT_WORKER for a TF_CONFIG cluster with a
  training strategy, else None) from `tf_config`, a TF_CONFIG dict."""
  config._init_distribute_coordinator_mode(tf_config or {})  # pylint: disable=protected-access


def should_run_distribute_coordinator(config):
  """2.15's: whether `train_and_evaluate` went through the distribute
  coordinator for `config` (a coordinator mode and a cluster)."""
  mode = getattr(config, '_distribute_coordinator_mode', None)
  if mode is None:
    logging.info('Not using Distribute Coordinator.')
    return False
  if mode not in (dc.CoordinatorMode.STANDALONE_CLIENT,
                  dc.CoordinatorMode.INDEPENDENT_WORKER):
    logging.warning('Unexpected distribute_coordinator_mode: %r', mode)
    return False
  if not config.cluster_spec:
    logging.warning('Running `train_and_evaluate` locally, ignoring '
                    '`experimental_distribute_coordinator_mode`.')
    return False
  return True


def train_and_evaluate(estimator, train_spec, eval_spec, executor_cls=None):
  """2.15 ran `train_and_evaluate` of a coordinator mode here; estimator_rt's
  `train_and_evaluate` runs every mode (its roles), `executor_cls` unused."""
  del executor_cls
  from estimator_rt.estimator import train_and_evaluate as training  # pylint: disable=g-import-not-at-top
  return training.train_and_evaluate(estimator, train_spec, eval_spec)
