"""tf.estimator 2.15's `canned/timeseries/state_management`: wrappers that
decide which state a time series model's loss starts from."""

import abc

from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.compat.served.canned.timeseries import feature_keys


class PassthroughStateManager:
  """For models that keep no state between batches: the model's own loss,
  and no start state may be fed."""

  def __init__(self):
    self._input_statistics = None
    self._graph_initialized = False

  def initialize_graph(self, model, input_statistics=None):
    """Notes `input_statistics` (a math_utils.InputStatistics or None)."""
    del model  # The model initializes its own graph.
    self._graph_initialized = True
    self._input_statistics = input_statistics

  def define_loss(self, model, features, mode):
    """`model.define_loss(features, mode)`: a model.ModelOutputs.

    Raises:
      ValueError: `features` has a start state (STATE_TUPLE).
    """
    if feature_keys.State.STATE_TUPLE in features:
      raise ValueError(
          'Overriding start state is not supported for this model (got '
          f'feature {feature_keys.State.STATE_TUPLE!r}).')
    return model.define_loss(features, mode)


class _OverridableStateManager(PassthroughStateManager, abc.ABC):
  """A state manager that starts from a fed state (STATE_TUPLE) when there
  is one, outside training, and otherwise from the state it manages."""

  @abc.abstractmethod
  def _define_loss_with_saved_state(self, model, features, mode):
    """The model's outputs, starting from the managed state."""

  def define_loss(self, model, features, mode):
    """The model's outputs from the fed start state, if any (removed from
    `features`), or the managed one.

    Raises:
      ValueError: a start state is fed in training.
    """
    key = feature_keys.FilteringFeatures.STATE_TUPLE
    if key not in features:
      return self._define_loss_with_saved_state(
          model=model, features=features, mode=mode)
    if mode == ModeKeys.TRAIN:
      raise ValueError(
          'Overriding saved state for training is not supported (but a value '
          f'for feature {key} was specified).')
    start_state = features.pop(key)
    return model.get_batch_loss(features=features, mode=mode,
                                state=start_state)


class FilteringOnlyStateManager(_OverridableStateManager):
  """For window-based models (ARModel), which need no state to train but
  keep their last window as state for filtering: the model's own loss,
  unless a start state is fed."""

  def _define_loss_with_saved_state(self, model, features, mode):
    return model.define_loss(features, mode)
