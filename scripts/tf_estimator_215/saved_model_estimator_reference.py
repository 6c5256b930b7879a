r"""tf.estimator 2.15's TRAIN/EVAL/PREDICT SavedModel export and its
SavedModelEstimator, on a small TF1-style regression model: the figures
estimator_rt must reproduce.

    .venv-tf215/bin/python \
        scripts/tf_estimator_215/saved_model_estimator_reference.py

writes, from tf.estimator 2.15 (TF 2.15.1):
  - tests/data/tf_estimator_215/saved_model_estimator.json: for the model
    trained TRAIN_STEPS steps and exported with
    `experimental_export_all_saved_models` (all three modes), what the
    export holds (each MetaGraph's tags, signatures, their method, input and
    output keys, whether it keeps a train op), and what a
    SavedModelEstimator over it gives (`sme_figures`): evaluate before
    training (2.15's metrics), the loss and variables after MORE_STEPS more
    steps, the predictions, and the evaluation of a second
    SavedModelEstimator over its own re-export;
  - tests/data/tf_estimator_215/saved_model_all_modes/: that SavedModel
    itself (a few tens of KB), which estimator_rt loads in
    tests/test_saved_model_estimator.py.

The same functions run there through the compatibility layer (the
`tensorflow_estimator.python.estimator` paths), on estimator_rt's export
and on this fixture. The model: y = x . w + b, w and b starting at fixed
values, GradientDescent(0.1) on the mean squared error, with a mean
absolute error metric; fixed data, so every figure is exact to float32.
"""

import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

TRAIN_STEPS = 4
MORE_STEPS = 3
_DATA = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))), 'tests', 'data', 'tf_estimator_215')
OUT = os.path.join(_DATA, 'saved_model_estimator.json')
FIXTURE = os.path.join(_DATA, 'saved_model_all_modes')

X = np.array([[1., 2.], [2., -1.], [0., 3.], [4., 1.],
              [-1., 1.], [3., 3.], [2., 2.], [0., -2.]], np.float32)
Y = np.array([[3.], [1.], [4.], [6.], [0.], [7.], [5.], [-2.]], np.float32)
PREDICT_X = np.array([[1., 1.], [-2., 0.5], [3., -1.]], np.float32)


def _modules():
  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator import estimator
  from tensorflow_estimator.python.estimator import model_fn as model_fn_lib
  from tensorflow_estimator.python.estimator.canned import saved_model_estimator
  from tensorflow_estimator.python.estimator.export import export_lib
  from tensorflow_estimator.python.estimator.mode_keys import ModeKeys
  # pylint: enable=g-import-not-at-top
  return dict(estimator=estimator, model_fn=model_fn_lib,
              sme=saved_model_estimator, export_lib=export_lib,
              ModeKeys=ModeKeys)


def model_fn(features, labels, mode):
  """y = x . w + b, GradientDescent on the mean squared error."""
  m = _modules()
  w = tf.compat.v1.get_variable(
      'w', initializer=tf.constant([[.5], [-.25]]))
  b = tf.compat.v1.get_variable('b', initializer=tf.constant([.1]))
  y = tf.matmul(features['x'], w) + b
  predictions = {'y': y}
  if mode == m['ModeKeys'].PREDICT:
    return m['model_fn'].EstimatorSpec(mode, predictions=predictions)
  loss = tf.compat.v1.losses.mean_squared_error(labels, y)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return m['model_fn'].EstimatorSpec(
      mode, loss=loss, train_op=train_op, predictions=predictions,
      eval_metric_ops={
          'mae': tf.compat.v1.metrics.mean_absolute_error(labels, y)})


def train_input_fn():
  return tf.compat.v1.data.Dataset.from_tensor_slices(
      ({'x': X}, Y)).batch(4).repeat()


def eval_input_fn():
  return tf.compat.v1.data.Dataset.from_tensor_slices(({'x': X}, Y)).batch(4)


def predict_input_fn():
  return tf.compat.v1.data.Dataset.from_tensor_slices(
      {'x': PREDICT_X}).batch(3)


def receiver_fn_map():
  m = _modules()
  supervised = m['export_lib'].build_supervised_input_receiver_fn_from_input_fn(
      eval_input_fn)
  serving = m['export_lib'].build_raw_serving_input_receiver_fn(
      {'x': tf.constant(PREDICT_X)})
  modes = m['ModeKeys']
  return {modes.TRAIN: supervised, modes.EVAL: supervised,
          modes.PREDICT: serving}


def trained_export(work: str) -> str:
  """Trains the model TRAIN_STEPS steps and exports all three modes."""
  m = _modules()
  estimator = m['estimator'].Estimator(model_fn,
                                       os.path.join(work, 'trained'))
  estimator.train(train_input_fn, steps=TRAIN_STEPS)
  # bytes, as tf.estimator returns it (estimator_rt too).
  return tf.compat.as_text(estimator.experimental_export_all_saved_models(
      os.path.join(work, 'export'), receiver_fn_map()))


def describe_export(export_dir) -> dict:
  """Each MetaGraph of the SavedModel: by its sorted tags, its signatures
  (method, input and output keys) and whether it keeps a train op."""
  from tensorflow.python.saved_model import loader_impl  # pylint: disable=g-import-not-at-top
  saved_model = loader_impl.parse_saved_model(tf.compat.as_text(export_dir))
  described = {}
  for meta_graph in saved_model.meta_graphs:
    tags = ','.join(sorted(meta_graph.meta_info_def.tags))
    signatures = {
        key: {'method': signature.method_name,
              'inputs': sorted(signature.inputs),
              'outputs': sorted(signature.outputs)}
        for key, signature in meta_graph.signature_def.items()
        # The builder's own init op signature (TensorFlow's, not the
        # estimator's).
        if not key.startswith('__')}
    described[tags] = {
        'signatures': signatures,
        'train_op': 'saved_model_train_op' in meta_graph.collection_def}
  return described


def _rounded(value):
  return np.asarray(value, np.float64).round(5).tolist()


def _eval(results) -> dict:
  return {key: _rounded(value) for key, value in sorted(results.items())}


def sme_figures(export_dir, work: str) -> dict:
  """What a SavedModelEstimator over `export_dir` gives: evaluate, train
  MORE_STEPS steps (loss by evaluation, variables), predict, and the
  evaluation of a second one over its re-export of all modes."""
  m = _modules()
  sme = m['sme'].SavedModelEstimator(export_dir, os.path.join(work, 'sme'))
  figures = {'available_modes': sorted(sme._available_modes)}  # pylint: disable=protected-access
  figures['evaluate_before'] = _eval(sme.evaluate(eval_input_fn))
  sme.train(train_input_fn, steps=MORE_STEPS)
  figures['evaluate_after'] = _eval(sme.evaluate(eval_input_fn))
  figures['variables_after'] = {
      name: _rounded(sme.get_variable_value(name))
      for name in ('w', 'b', 'global_step')}
  figures['predictions'] = [_rounded(p['y']) for p in
                            sme.predict(predict_input_fn)]
  again = sme.experimental_export_all_saved_models(
      os.path.join(work, 'export_again'), receiver_fn_map())
  figures['re_export'] = describe_export(again)
  sme2 = m['sme'].SavedModelEstimator(again, os.path.join(work, 'sme2'))
  figures['re_export_evaluate'] = _eval(sme2.evaluate(eval_input_fn))
  return figures


def main():
  work = tempfile.mkdtemp()
  try:
    export_dir = trained_export(work)
    figures = {'versions': {'tensorflow': tf.__version__},
               'export': describe_export(export_dir),
               'sme': sme_figures(export_dir, work)}
    if os.path.exists(FIXTURE):
      shutil.rmtree(FIXTURE)
    shutil.copytree(tf.compat.as_text(export_dir), FIXTURE)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  print(json.dumps(figures, indent=1, sort_keys=True))
  with open(OUT, 'w') as f:
    json.dump(figures, f, indent=1, sort_keys=True)
    f.write('\n')


if __name__ == '__main__':
  main()
