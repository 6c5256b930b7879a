"""tf.estimator 2.15's Estimator construction, and what its subclasses call.

Each test does what a 2.15 program or subclass did and checks 2.15's
outcome: subclasses may not override the Estimator's members, params need
a model_fn that takes them, a missing model_dir is a temporary directory
made at once, saving listeners need checkpoints during training, and the
protected helpers subclasses call build into their graph.
"""

import os

import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.estimator.protected_methods import IteratorInitializerHook

from _legacy_fns import constant_input_fn as _constant_input_fn
from _legacy_fns import counting_model_fn as _counting_model_fn

tf1 = tf.compat.v1


def test_a_subclass_may_not_override_estimator_members():
  class Overrides(ert.Estimator):

    def predict(self, input_fn, predict_keys=None, hooks=None):
      del input_fn, predict_keys, hooks

  class SkipsTheCheck(Overrides):

    def _assert_members_are_not_overridden(self):
      pass

    def predict(self, input_fn, predict_keys=None, hooks=None):
      del input_fn, predict_keys, hooks

  with pytest.raises(ValueError, match='cannot override members of '
                     r'Estimator.*\[.predict.\]'):
    Overrides(_counting_model_fn)
  SkipsTheCheck(_counting_model_fn)


def test_params_need_a_model_fn_that_takes_them():
  with pytest.raises(ValueError, match='does not include params argument'):
    ert.Estimator(_counting_model_fn, params={'units': 4})
  ert.Estimator(_counting_model_fn)


def test_without_model_dir_a_temporary_one_is_made_at_once():
  for model_dir in (None, ''):
    estimator = ert.Estimator(_counting_model_fn, model_dir=model_dir)
    assert os.path.isdir(estimator.model_dir)
    assert estimator.config.model_dir == estimator.model_dir
    os.rmdir(estimator.model_dir)


def test_saving_listeners_need_checkpoints_during_training(tmp_path):
  config = ert.RunConfig(save_checkpoints_steps=None,
                         save_checkpoints_secs=None)
  estimator = ert.Estimator(_counting_model_fn, model_dir=str(tmp_path),
                            config=config)
  with pytest.raises(ValueError, match='There should be a CheckpointSaverHook'):
    estimator.train(_constant_input_fn, steps=1,
                    saving_listeners=[tf1.train.CheckpointSaverListener()])


def test_protected_helpers_build_into_the_callers_graph(tmp_path):
  def model_fn(features, labels, mode, params):
    return ert.EstimatorSpec(
        mode, predictions=features['x'] * params['scale'] + labels)

  estimator = ert.Estimator(model_fn, model_dir=str(tmp_path),
                            params={'scale': 3.})
  with tf.Graph().as_default() as graph:
    estimator._create_and_assert_global_step(graph)  # pylint: disable=protected-access
    iterator, hooks = estimator._get_iterator_from_input_fn(  # pylint: disable=protected-access
        lambda mode: tf.data.Dataset.from_tensors(({'x': [2.]}, [1.])),
        ert.ModeKeys.PREDICT)
    assert [type(hook) for hook in hooks] == [IteratorInitializerHook]
    features, labels = iterator.get_next()
    spec = estimator._call_model_fn(  # pylint: disable=protected-access
        features, labels, ert.ModeKeys.PREDICT, estimator.config)
    with tf1.train.MonitoredSession(hooks=hooks) as session:
      assert session.run(spec.predictions).tolist() == [7.]
