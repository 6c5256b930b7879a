"""Canned estimators for the binary: estimator factories.

`--model_fn` may name an *estimator factory* instead of a model_fn: a
function of `config` and/or `params` (no `features` argument) returning an
Estimator. The binary calls it with the RunConfig it made from the flags
and TF_CONFIG and the job's params, and runs what it returns; the input_fns
still get the job's params. For example:

    python -m estimator_rt.main --model_fn=model_fns.canned:wide_and_deep \\
        --input_fn=input_fns.tabular:train_input_fn \\
        --eval_input_fn=input_fns.tabular:eval_input_fn \\
        --params='{"batch_size": 64}' --max_steps=2000

* `dnn_classifier`: a DNNClassifier on the numeric features 'x' of
  input_fns.synthetic.classification_input_fn / input_fns.digits.
* `wide_and_deep`: a DNNLinearCombinedClassifier on input_fns.tabular's
  columns (categorical, crossed, bucketized, embedding).
"""

import importlib

import tensorflow as tf

# The bundled input_fns beside this package: the top-level `input_fns` of a
# checkout, or `estimator_rt.input_fns` when installed (setup.py).
tabular = importlib.import_module(
    __name__.rpartition('model_fns.')[0] + 'input_fns.tabular')

DEFAULT_PARAMS = {'batch_size': 64}


def dnn_classifier(config, params):
  """DNNClassifier(hidden_units) on 'x' of width params['num_features']
  (default 64, the digits' width) with params['n_classes'] (default 10)."""
  from estimator_rt.estimator.canned import dnn  # pylint: disable=g-import-not-at-top
  columns = [tf.feature_column.numeric_column(
      'x', shape=(params.get('num_features', 64),))]
  return dnn.DNNClassifier(
      hidden_units=params.get('hidden_units', [64, 32]),
      feature_columns=columns, n_classes=params.get('n_classes', 10),
      optimizer=params.get('optimizer', 'Adagrad'), config=config)


def wide_and_deep(config, params):
  """DNNLinearCombinedClassifier on input_fns.tabular's columns."""
  from estimator_rt.estimator.canned import dnn_linear_combined  # pylint: disable=g-import-not-at-top
  wide, deep = tabular.feature_columns()
  return dnn_linear_combined.DNNLinearCombinedClassifier(
      linear_feature_columns=wide, dnn_feature_columns=deep,
      dnn_hidden_units=params.get('hidden_units', [32, 16]), config=config)


