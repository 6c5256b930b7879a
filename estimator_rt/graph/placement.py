"""Where a graph-engine model's ops and variables go, one class per strategy.

Each placement answers the same questions for `model.build` and the
engine: in which scope variables are created, how the model_fn is called
(once, or once per replica on its share of the batch), how the replicas'
losses, metrics and predictions become one, and which session target and
config the monitored session uses.
"""

import contextlib
from typing import Any, Callable, ContextManager, Dict, List, Optional

import tensorflow as tf

from estimator_rt import strategies
from estimator_rt.errors import UserInputError


def session_config() -> tf.compat.v1.ConfigProto:
  """Soft placement, as tf.estimator's default session config had it (an op
  with no kernel on the device asked for runs where it has one)."""
  return tf.compat.v1.ConfigProto(allow_soft_placement=True)


class SingleDevicePlacement:
  """Everything in this process, on one device (or where TensorFlow puts it).

  Args:
    device: the device for every op and variable; None: TensorFlow's choice
      (the default strategy).
  """

  num_replicas = 1

  def __init__(self, *, device: Optional[str] = None):
    self._device = device

  @property
  def name(self) -> str:
    return 'default' if self._device is None else 'one_device'

  def _scope(self) -> ContextManager:
    return (tf.device(self._device) if self._device is not None
            else contextlib.nullcontext())

  def variable_scope(self) -> ContextManager:
    return self._scope()

  def call_for_each_replica(self, fn: Callable, features, labels) -> List[Any]:
    with self._scope():
      return [fn(features, labels)]

  def mean_loss(self, losses: List[tf.Tensor]) -> tf.Tensor:
    return losses[0]

  def merge_metrics(self, metrics: List[Dict[str, Any]]) -> Dict[str, Any]:
    return dict(metrics[0])

  def concat_predictions(self, predictions: List[Dict[str, tf.Tensor]]
                         ) -> Dict[str, tf.Tensor]:
    return dict(predictions[0])

  @property
  def master(self) -> str:
    return ''

  def session_config(self) -> tf.compat.v1.ConfigProto:
    return session_config()


def make_placement(strategy: Any, *, for_training: bool):
  """The placement for a RunConfig's train_distribute (a name, a strategy
  object or None).

  Raises:
    UserInputError: a strategy the graph engine does not run, naming why.
  """
  name = strategies.name_of(strategy)
  if name in (None, 'default'):
    return SingleDevicePlacement()
  if name in ('one_device', 'OneDeviceStrategy'):
    device = None
    if isinstance(strategy, tf.distribute.Strategy):
      device = strategy.extended.worker_devices[0]
    return SingleDevicePlacement(device=device or '/cpu:0')
  if not for_training:
    # Evaluation and prediction run in one process, undistributed, as
    # tf.estimator did unless told otherwise.
    return SingleDevicePlacement()
  raise UserInputError(
      f'RunConfig: train_distribute={name!r} is not supported for TF1-style '
      'model_fns (graph engine) yet; use the default or one_device '
      'strategy.')
