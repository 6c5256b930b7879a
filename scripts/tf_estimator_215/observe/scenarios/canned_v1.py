"""tf.compat.v1.estimator's canned estimators (the TF1 classes, v1
optimizers) each briefly, as canned.py runs the TF2 ones."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import canned
from scripts.tf_estimator_215.observe.scenarios import common


def run(rec):
  config = common.run_config(None)
  v1 = tf.compat.v1.estimator
  for name, (make, labels) in canned.estimators(
      v1, common.columns(), config).items():
    canned.exercise(rec, 'v1 ' + name, make, labels, rec.path(name))
  rec.call('v1 DNNClassifier optimizer instance', lambda: v1.DNNClassifier(
      [3], common.columns(), rec.path('opt'), config=config,
      optimizer=tf.compat.v1.train.AdagradOptimizer(0.1)).train(
          common.input_fn('class'), steps=1).get_variable_names())
