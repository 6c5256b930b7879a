r"""tf.estimator 2.15's tf.compat.v1.estimator canned estimators on the data
of canned_reference.py: the programs, and the figures estimator_rt's v1
classes must reproduce.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.canned_v1_reference

The v1 classes differ from the TF2 ones in what they train with
(tf.compat.v1.train optimizers, slots named `<variable>/<Optimizer>`), in
their default loss reduction (SUM: the loss summed over the batch) and a
named DNN optimizer's learning rate (0.05). Like canned_reference.py, run
under 2.15 it trains each program TRAIN_STEPS steps (graph seed 42) and
records evaluate()'s metrics, the first predictions, the checkpoint's
variables, the export's signatures and what they serve; for FIXTURES it
keeps the model_dir (checkpoint only) under
tests/data/tf_estimator_215/canned_v1/<program>/ and records its metrics as
kept and after training on to CONTINUED_STEPS. Everything goes to
tests/data/tf_estimator_215/canned_v1/reference.json.
"""

import os

import tensorflow as tf

from scripts.tf_estimator_215 import canned_reference as common

FIXTURE_ROOT = os.path.join(os.path.dirname(common.FIXTURE_ROOT),
                            'canned_v1')
FIXTURES = ('dnn_classifier', 'wide_deep_classifier')


def _programs():
  """name -> (label kind, feature keys or None, builder(est, dir, config)),
  `est` a tf.compat.v1.estimator-shaped namespace."""
  deep, wide = common.columns()
  return {
      'dnn_classifier': ('binary', None, lambda est, d, c: est.DNNClassifier(
          [8, 4], deep, model_dir=d, config=c)),
      'dnn_regressor_adam': ('regression', None, lambda est, d, c:
                             est.DNNRegressor([8], deep, model_dir=d,
                                              optimizer='Adam', config=c)),
      'linear_classifier_3class': ('multiclass', None, lambda est, d, c:
                                   est.LinearClassifier(
                                       wide, model_dir=d, n_classes=3,
                                       config=c)),
      'linear_regressor': ('regression', None, lambda est, d, c:
                           est.LinearRegressor(wide, model_dir=d, config=c)),
      'wide_deep_classifier': ('binary', None, lambda est, d, c:
                               est.DNNLinearCombinedClassifier(
                                   model_dir=d, linear_feature_columns=wide,
                                   dnn_feature_columns=deep,
                                   dnn_hidden_units=[8, 4], config=c)),
      'linear_classifier_adam': ('binary', None, lambda est, d, c:
                                 est.LinearClassifier(
                                     wide, model_dir=d, optimizer='Adam',
                                     config=c)),
      'wide_deep_regressor_adam': ('regression', None, lambda est, d, c:
                                   est.DNNLinearCombinedRegressor(
                                       model_dir=d,
                                       linear_feature_columns=wide,
                                       linear_optimizer='Adam',
                                       dnn_feature_columns=deep,
                                       dnn_optimizer='Adam',
                                       dnn_hidden_units=[8], config=c)),
      # One feature: see canned_reference.FEATURE_KEYS.
      'baseline_classifier': ('binary', ('x1',), lambda est, d, c:
                              est.BaselineClassifier(model_dir=d, config=c)),
  }


PROGRAMS = _programs()


def build(est, name: str, model_dir: str):
  """Program `name`'s estimator with `est`'s classes, in `model_dir`."""
  config = est.RunConfig(tf_random_seed=42, save_checkpoints_steps=1000,
                         save_summary_steps=1000)
  return PROGRAMS[name][2](est, model_dir, config)


def input_fns(name: str):
  """(train, eval, predict) input_fns of program `name`."""
  kind, keys, _ = PROGRAMS[name]
  return common.input_fns(kind, keys)


def _reference(est, name: str, work: str) -> dict:
  return common.reference_record(
      est, build=lambda model_dir: build(est, name, model_dir),
      input_fns=input_fns(name), model_dir=os.path.join(work, name),
      work=work,
      fixture=(os.path.join(FIXTURE_ROOT, name) if name in FIXTURES
               else None))


def main():
  common.write_reference(
      fixture_root=FIXTURE_ROOT,
      command='.venv-tf215/bin/python -m '
      'scripts.tf_estimator_215.canned_v1_reference',
      names=PROGRAMS,
      record=lambda name, work: _reference(tf.compat.v1.estimator, name,
                                           work))


if __name__ == '__main__':
  main()
