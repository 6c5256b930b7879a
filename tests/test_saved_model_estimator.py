"""TRAIN/EVAL/PREDICT SavedModel exports and SavedModelEstimator, against
tf.estimator 2.15's numbers.

scripts/tf_estimator_215/saved_model_estimator_reference.py trained a small
TF1-style regression model under tf.estimator 2.15 (TF 2.15.1), exported it
with `experimental_export_all_saved_models`, ran a SavedModelEstimator over
the export (evaluate, train 3 more steps, predict, re-export, evaluate the
re-export) and recorded what it saw in
tests/data/tf_estimator_215/saved_model_estimator.json, with the SavedModel
itself under tests/data/tf_estimator_215/saved_model_all_modes/. Here the
same functions run through the compatibility layer: estimator_rt's export
must hold 2.15's MetaGraphs (tags, signature keys, methods, input and
output keys, train ops), and a SavedModelEstimator, over estimator_rt's
export and over 2.15's own, must give 2.15's numbers. The behaviours no
number shows (refusals, a subclass) are checked directly. 2.15's own
saved_model_estimator_test.py runs as TF1 programs did through
scripts/tf_estimator_215/run_own_tests.py --v1-behavior (not here).
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt.compat
from scripts.tf_estimator_215 import saved_model_estimator_reference as cases

estimator_rt.compat.install()

# pylint: disable=g-import-not-at-top,wrong-import-position
import estimator_rt as ert
from tensorflow_estimator.python.estimator.canned import saved_model_estimator
import _models as M
# pylint: enable=g-import-not-at-top,wrong-import-position

with open(cases.OUT) as f:
  REFERENCE = json.load(f)


def _assert_close(got, want, where=''):
  """`got` equals `want` (JSON-like), numbers to 2e-5."""
  if isinstance(want, dict):
    assert isinstance(got, dict) and sorted(got) == sorted(want), where
    for key in want:
      _assert_close(got[key], want[key], f'{where}/{key}')
  elif isinstance(want, float) or (
      isinstance(want, list) and want and
      isinstance(want[0], (list, float))):
    np.testing.assert_allclose(np.asarray(got, np.float64),
                               np.asarray(want, np.float64), atol=2e-5,
                               rtol=0, err_msg=where)
  else:
    assert got == want, where


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
  """estimator_rt's export of the reference model, trained as 2.15 trained
  it."""
  return cases.trained_export(str(tmp_path_factory.mktemp('trained')))


def test_export_holds_2_15s_meta_graphs_and_signatures(exported):
  assert cases.describe_export(exported) == REFERENCE['export']


def test_over_estimator_rt_export_gives_2_15s_numbers(exported, tmp_path):
  _assert_close(cases.sme_figures(exported, str(tmp_path)),
                REFERENCE['sme'])


def test_over_2_15s_own_export_gives_2_15s_numbers(tmp_path):
  # A copy: nothing may be written into the fixture.
  saved_model = str(tmp_path / 'saved_model')
  shutil.copytree(cases.FIXTURE, saved_model)
  _assert_close(cases.sme_figures(saved_model, str(tmp_path / 'work')),
                REFERENCE['sme'])


def test_a_prediction_only_export_refuses_training(exported, tmp_path):
  """2.15's RuntimeError, naming the mode and what the SavedModel has."""
  trained = os.path.join(os.path.dirname(os.path.dirname(exported)),
                         'trained')
  estimator = ert.Estimator(cases.model_fn, trained)
  predict_only = estimator.export_saved_model(
      str(tmp_path / 'export'), cases.receiver_fn_map()[ert.ModeKeys.PREDICT])
  sme = saved_model_estimator.SavedModelEstimator(predict_only,
                                                  str(tmp_path / 'sme'))
  assert sme._available_modes == [ert.ModeKeys.PREDICT]  # pylint: disable=protected-access
  with pytest.raises(RuntimeError, match='train mode is not available'):
    sme.train(cases.train_input_fn, steps=1)
  assert not (tmp_path / 'sme').exists()


def test_an_input_fn_that_makes_a_global_step_is_refused(exported, tmp_path):
  def input_fn():
    tf.compat.v1.train.get_or_create_global_step()
    return cases.train_input_fn()

  sme = saved_model_estimator.SavedModelEstimator(exported,
                                                  str(tmp_path / 'sme'))
  with pytest.raises(RuntimeError, match='must not contain a global step'):
    sme.train(input_fn, steps=1)


def test_a_subclass_constructs_and_reads_the_saved_model(exported, tmp_path):
  """As 2.15's: constructed with (saved_model_dir, model_dir), its
  protected readers of the SavedModel work, and overriding one of them
  (allowed: it is not an Estimator member) is what the model_fn calls."""
  seen = []

  class Logged(saved_model_estimator.SavedModelEstimator):

    def _get_signature_def_for_mode(self, mode):
      seen.append(mode)
      return super()._get_signature_def_for_mode(mode)

  sme = Logged(exported, model_dir=str(tmp_path / 'sme'))
  assert sme.saved_model_dir == exported
  assert sorted(sme._available_modes) == REFERENCE['sme']['available_modes']  # pylint: disable=protected-access
  assert (sme._get_signature_def_for_mode('eval').method_name ==  # pylint: disable=protected-access
          'tensorflow/supervised/eval')
  seen.clear()
  sme.evaluate(cases.eval_input_fn)
  assert seen == ['eval']
  # With no checkpoint in model_dir, the SavedModel's variables are the
  # latest checkpoint (what an export before training exports).
  assert sme.latest_checkpoint() == os.path.join(exported, 'variables',
                                                 'variables')


def test_experimental_mode_and_receiver_map_are_checked(exported):
  estimator = ert.Estimator(cases.model_fn, os.path.join(
      os.path.dirname(os.path.dirname(exported)), 'trained'))
  base = os.path.join(os.path.dirname(exported), 'refused')
  with pytest.raises(ValueError, match='An input_receiver_fn must be defined'):
    estimator.export_saved_model(base, experimental_mode=ert.ModeKeys.TRAIN)
  with pytest.raises(ValueError, match='No valid modes for exporting found'):
    estimator.experimental_export_all_saved_models(
        base, {ert.ModeKeys.TRAIN: None})
  with pytest.raises(ValueError, match=r"keys \['training'\] that are not"):
    estimator.experimental_export_all_saved_models(
        base, {'training': cases.receiver_fn_map()[ert.ModeKeys.TRAIN]})
  assert not os.path.exists(base)


def test_a_tf2_model_fn_refuses_train_and_eval_exports(tmp_path):
  """One line, nothing written: a TF2 model_fn's compiled functions and
  object-based checkpoint have no TRAIN or EVAL MetaGraph."""
  x, y = M.make_data(16)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path / 'model'),
                      config=M.quiet_config())
  est.train(M.global_input_fn(x, y, batch_size=8), max_steps=2)
  assert est.chosen_engine == 'eager'
  receiver = ert.export.build_raw_supervised_input_receiver_fn(
      {'x': tf.TensorSpec([None, 4])}, tf.TensorSpec([None, 1]))
  with pytest.raises(ert.UserInputError,
                     match=r"modes \['eval', 'train'\] are not exported for "
                     'a TF2 model_fn'):
    est.experimental_export_all_saved_models(
        str(tmp_path / 'export'), {ert.ModeKeys.TRAIN: receiver,
                                   ert.ModeKeys.EVAL: receiver})
  with pytest.raises(ert.UserInputError, match=r"modes \['eval'\]"):
    est.export_saved_model(str(tmp_path / 'export'), receiver,
                           experimental_mode=ert.ModeKeys.EVAL)
  assert not (tmp_path / 'export').exists()
