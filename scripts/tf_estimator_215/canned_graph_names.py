r"""The op names of tf.estimator 2.15's canned estimators' graphs, as a
SessionRunHook sees them.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.canned_graph_names

Programs written for tf.estimator fetch tensors of the canned estimators'
graphs by name: tensorflow/models' census wide & deep logs
`head/truediv` and `head/weighted_loss/Sum` with a LoggingTensorHook. For
every program of PROGRAMS (DNN, linear, wide & deep and baseline
classifiers, binary and 3-class, and regressors, on two small feature
columns), in `tf.estimator` and `tf.compat.v1.estimator`, this builds the
TRAIN, EVAL and PREDICT graphs the way a user's hook meets them (one
training step, one evaluation batch and one prediction, each with a hook
that lists the graph's ops in `begin()`), and records:

  - `spec`: the names of the tensors the model_fn returned: the loss and
    each prediction;
  - `fetched`: name -> op type of the ops FETCHED_PATTERNS select, the ones
    programs fetch by name (the head's loss and mean loss, the layers'
    outputs, the linear model's sums, the wide & deep logits, the global
    step, the loss summaries);
  - `op_count`, and for FULL_OP_LISTS every op name (what else differs).

It also records what the census program's hook (CENSUS_TENSORS) logs over
CENSUS_STEPS steps of the v1 wide & deep classifier (`census_logged`).
Everything goes to tests/data/tf_estimator_215/canned_graph_names.json.
Importable under TensorFlow 2.15 and 2.21: tests/test_canned_graph_names.py
records estimator_rt's graphs with the same `record_program` and compares.
"""

import inspect
import json
import os
import re
import sys
import tempfile

import tensorflow as tf

from scripts.tf_estimator_215 import canned_reference as common

REFERENCE_PATH = os.path.join(os.path.dirname(common.FIXTURE_ROOT),
                              'canned_graph_names.json')
MODES = ('train', 'eval', 'infer')
NAMESPACES = ('v2', 'v1')  # tf.estimator, tf.compat.v1.estimator
# (program, mode) whose every op name is kept: the census program's
# estimator and the graph its hook ran in.
FULL_OP_LISTS = (('v1/wide_deep_classifier', 'train'),)
# What programs fetch by name, matched against whole op names. The head's
# scope is `head`, or under the model's (`dnn/head`, `linear/head`) in the
# v1 DNN and linear estimators.
FETCHED_PATTERNS = tuple(re.compile(pattern) for pattern in (
    r'global_step',
    r'IteratorGetNext',
    r'add',  # wide & deep: the sum of the two models' logits
    r'((dnn|linear)/)?head/truediv',  # the v1 heads' mean loss
    r'((dnn|linear)/)?head/(losses/)?weighted_loss/(Sum|value)',
    r'((dnn|linear)/)?head/(losses/)?(logistic_loss|mean_squared_error/'
    r'SquaredDifference|sparse_softmax_cross_entropy_loss/xentropy/xentropy)',
    r'((dnn|linear)/)?head/predictions/(logistic|probabilities|'
    r'two_class_logits|class_ids|str_classes)',
    r'dnn/hiddenlayer_\d+/(MatMul|BiasAdd|Relu)',
    r'dnn/logits/(MatMul|BiasAdd)',
    r'dnn/input_from_feature_columns/input_layer/concat',
    r'linear/linear_model/[A-Za-z0-9_/]*weighted_sum(_no_bias)?',
    r'baseline/Mul',
    r'(loss|average_loss)',  # the loss summaries
))


# tensorflow/models' official/r1/wide_deep census_main.py: its
# LoggingTensorHook, every step here.
CENSUS_TENSORS = {'average_loss': 'head/truediv',
                  'loss': 'head/weighted_loss/Sum'}
CENSUS_STEPS = 3


def columns():
  """(DNN columns, linear columns): one numeric, one categorical."""
  fc = tf.feature_column
  x1 = fc.numeric_column('x1')
  color = fc.categorical_column_with_vocabulary_list('color', common.COLORS)
  return [x1, fc.indicator_column(color)], [x1, color]


def _programs():
  """name -> (label kind, builder(est, model_dir, config)); every builder
  exists in both namespaces."""
  deep, wide = columns()
  return {
      'dnn_classifier': ('binary', lambda e, d, c: e.DNNClassifier(
          [4, 3], deep, model_dir=d, config=c)),
      'dnn_classifier_3class': ('multiclass', lambda e, d, c:
                                e.DNNClassifier([4], deep, model_dir=d,
                                                n_classes=3, config=c)),
      'dnn_regressor': ('regression', lambda e, d, c: e.DNNRegressor(
          [4], deep, model_dir=d, config=c)),
      'linear_classifier': ('binary', lambda e, d, c: e.LinearClassifier(
          wide, model_dir=d, config=c)),
      'linear_classifier_3class': ('multiclass', lambda e, d, c:
                                   e.LinearClassifier(wide, model_dir=d,
                                                      n_classes=3, config=c)),
      'linear_regressor': ('regression', lambda e, d, c: e.LinearRegressor(
          wide, model_dir=d, config=c)),
      'wide_deep_classifier': ('binary', lambda e, d, c:
                               e.DNNLinearCombinedClassifier(
                                   model_dir=d, linear_feature_columns=wide,
                                   dnn_feature_columns=deep,
                                   dnn_hidden_units=[4, 3], config=c)),
      'wide_deep_classifier_3class': ('multiclass', lambda e, d, c:
                                      e.DNNLinearCombinedClassifier(
                                          model_dir=d,
                                          linear_feature_columns=wide,
                                          dnn_feature_columns=deep,
                                          dnn_hidden_units=[4], n_classes=3,
                                          config=c)),
      'wide_deep_regressor': ('regression', lambda e, d, c:
                              e.DNNLinearCombinedRegressor(
                                  model_dir=d, linear_feature_columns=wide,
                                  dnn_feature_columns=deep,
                                  dnn_hidden_units=[4], config=c)),
      'baseline_classifier': ('binary', lambda e, d, c: e.BaselineClassifier(
          model_dir=d, config=c)),
      'baseline_classifier_3class': ('multiclass', lambda e, d, c:
                                     e.BaselineClassifier(model_dir=d,
                                                          n_classes=3,
                                                          config=c)),
      'baseline_regressor': ('regression', lambda e, d, c:
                             e.BaselineRegressor(model_dir=d, config=c)),
  }


PROGRAMS = _programs()


def feature_keys(name: str):
  """The features program `name` reads: the baselines get one (2.15's fail
  to start on two, see canned_reference.FEATURE_KEYS)."""
  return ('x1',) if name.startswith('baseline') else ('x1', 'color')


class GraphRecorder(tf.compat.v1.train.SessionRunHook):
  """Lists the op names and types of the graph it is run with, in
  `begin()`: the graph as a user's hook sees it."""

  def __init__(self):
    self.ops = None

  def begin(self):
    self.ops = [(op.name, op.type)
                for op in tf.compat.v1.get_default_graph().get_operations()]


def _recording_model_fn(model_fn, specs: list):
  """`model_fn`, appending each spec it returns to `specs`. Declares
  `config` so that both estimators pass it, and passes it on only if
  `model_fn` takes it."""
  takes_config = 'config' in inspect.signature(model_fn).parameters

  def recording_model_fn(features, labels, mode, config):
    kwargs = {'config': config} if takes_config else {}
    spec = model_fn(features, labels, mode, **kwargs)
    specs.append(spec)
    return spec

  return recording_model_fn


def _spec_names(spec) -> dict:
  """The names of the tensors of an EstimatorSpec users fetch."""
  names = {}
  if spec.loss is not None:
    names['loss'] = spec.loss.name
  predictions = spec.predictions
  if isinstance(predictions, dict):
    names['predictions'] = {key: value.name
                            for key, value in sorted(predictions.items())}
  return names


def fetched(ops) -> dict:
  """name -> type of the ops among `ops` ((name, type) pairs) that
  FETCHED_PATTERNS select."""
  return {name: op_type for name, op_type in ops
          if any(p.fullmatch(name) for p in FETCHED_PATTERNS)}


def _run_mode(estimator, mode: str, input_fns, hook) -> None:
  """Builds and runs `mode` once with `hook`: one training step (the
  model_dir is new), one evaluation batch, one prediction."""
  train, evaluate, predict = input_fns
  if mode == 'train':
    estimator.train(train, hooks=[hook], max_steps=1)
  elif mode == 'eval':
    estimator.evaluate(evaluate, hooks=[hook], steps=1)
  else:
    next(iter(estimator.predict(predict, hooks=[hook])))


def record_program(est, name: str, model_dir: str, *,
                   full_ops=()) -> dict:
  """mode -> what a hook sees of program `name`'s graph in that mode, built
  by namespace `est`'s estimator in `model_dir` (new): `spec`, `fetched`,
  `op_count` and, for the modes in `full_ops`, `ops` (every op name)."""
  kind, builder = PROGRAMS[name]
  input_fns = common.input_fns(kind, feature_keys(name))
  record = {}
  for mode in MODES:
    config = est.RunConfig(tf_random_seed=42, save_summary_steps=1000)
    estimator = builder(est, model_dir, config)
    specs = []
    estimator._model_fn = _recording_model_fn(estimator._model_fn, specs)  # pylint: disable=protected-access
    hook = GraphRecorder()
    _run_mode(estimator, mode, input_fns, hook)
    record[mode] = {'spec': _spec_names(specs[-1]),
                    'fetched': fetched(hook.ops),
                    'op_count': len(hook.ops)}
    if mode in full_ops:
      record[mode]['ops'] = [op_name for op_name, _ in hook.ops]
  return record


def census_logged(est, model_dir: str) -> list:
  """The values the census program's LoggingTensorHook (CENSUS_TENSORS)
  logs at each of CENSUS_STEPS training steps of the wide & deep classifier
  of namespace `est` (tf.compat.v1.estimator), in `model_dir` (new)."""
  logged = []

  def formatter(values):
    logged.append({key: float(value) for key, value in values.items()})
    return ', '.join(f'{key} = {value}' for key, value in values.items())

  hook = tf.compat.v1.train.LoggingTensorHook(
      CENSUS_TENSORS, every_n_iter=1, formatter=formatter)
  kind, builder = PROGRAMS['wide_deep_classifier']
  train, _, _ = common.input_fns(kind, feature_keys('wide_deep_classifier'))
  estimator = builder(est, model_dir, est.RunConfig(tf_random_seed=42))
  estimator.train(train, hooks=[hook], max_steps=CENSUS_STEPS)
  return logged


def program_keys():
  """'<namespace>/<program>' for every namespace and program."""
  return [f'{namespace}/{name}' for namespace in NAMESPACES
          for name in PROGRAMS]


def record_all(namespaces: dict, work: str) -> dict:
  """'<namespace>/<program>' -> record_program's record, `namespaces`
  mapping 'v2' and 'v1' to estimator namespaces."""
  records = {}
  for key in program_keys():
    namespace, name = key.split('/')
    print('program', key, flush=True)
    full_ops = [mode for program, mode in FULL_OP_LISTS if program == key]
    records[key] = record_program(
        namespaces[namespace], name, os.path.join(work, namespace, name),
        full_ops=full_ops)
  return records


def main():
  major, minor = (int(p) for p in tf.__version__.split('.')[:2])
  if (major, minor) >= (2, 16):
    sys.exit('Run under TensorFlow 2.15 (.venv-tf215): the point is what '
             'tf.estimator\'s graphs were.')
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory() as work:
    programs = record_all({'v2': tf.estimator,
                           'v1': tf.compat.v1.estimator}, work)
    logged = census_logged(tf.compat.v1.estimator,
                           os.path.join(work, 'census'))
  reference = {
      'tensorflow': tf.__version__,
      'tensorflow_estimator': metadata.version('tensorflow-estimator'),
      'command': '.venv-tf215/bin/python -m '
                 'scripts.tf_estimator_215.canned_graph_names',
      'programs': programs,
      'census_logged': logged}
  with open(REFERENCE_PATH, 'w') as f:
    json.dump(reference, f, indent=1, sort_keys=True)
    f.write('\n')


if __name__ == '__main__':
  main()
