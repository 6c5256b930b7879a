r"""tf.estimator 2.15's canned estimators and heads on small generated data:
the programs, and the reference figures estimator_rt's must reproduce.

    .venv-tf215/bin/python scripts/tf_estimator_215/canned_reference.py

Importable under both TensorFlow 2.15 and 2.21: `PROGRAMS` builds each
program's estimator from a tf.estimator-shaped namespace (`tf.estimator`
under 2.15; estimator_rt's, e.g. `estimator_rt.compat.namespaces.v2()`,
here), with tf.feature_column columns and input_fns over numpy data drawn
with fixed seeds. tests/test_canned.py runs the same programs here.

Run as a script (under 2.15 only), for every program it trains TRAIN_STEPS
steps from scratch (graph seed 42) and records evaluate()'s metrics, the
first predictions, the checkpoint's variables and the export signatures
(parsing receiver). For FIXTURES it also keeps the newest checkpoint as a
model_dir under tests/data/tf_estimator_215/canned/<program>/ (index, data
and a `checkpoint` file: no events, no graph.pbtxt), evaluates it as kept,
and trains a copy on to CONTINUED_STEPS, recording the metrics and
predictions there: what a resume here must reproduce exactly. Everything
goes to tests/data/tf_estimator_215/canned/reference.json.
"""

import glob
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import tensorflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE_ROOT = os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'tests',
                            'data', 'tf_estimator_215', 'canned')
TRAIN_STEPS = 30
CONTINUED_STEPS = 50
BATCH = 32
FIXTURES = ('dnn_classifier', 'linear_classifier', 'wide_deep_classifier',
            'baseline_classifier', 'dnn_regressor')
COLORS = ('red', 'green', 'blue', 'black', 'white')


def data(kind: str, split: str):
  """(features dict of numpy arrays, labels) for `kind` in binary,
  multiclass, regression; `split` train (256 rows) or eval (128)."""
  rows = 256 if split == 'train' else 128
  rng = np.random.RandomState({'train': 1, 'eval': 2}[split])
  x = rng.normal(size=(rows, 3)).astype(np.float32)
  color = rng.randint(0, len(COLORS), rows)
  region = rng.randint(0, 20, rows).astype(np.int64)
  features = {'x1': x[:, 0], 'x2': x[:, 1], 'x3': x[:, 2],
              'color': np.array(COLORS)[color].astype(bytes),
              'region': region,
              'weight': rng.uniform(0.5, 1.5, rows).astype(np.float32)}
  score = x[:, 0] - 0.5 * x[:, 1] + 0.3 * (color - 2) + 0.05 * (region - 10)
  if kind == 'binary':
    labels = (score + 0.5 * rng.normal(size=rows) > 0).astype(np.int64)
  elif kind == 'multiclass':
    labels = np.digitize(score, [-0.7, 0.7]).astype(np.int64)
  elif kind == 'strings':
    labels = np.where(score > 0, b'yes', b'no')
  elif kind == 'counts':
    labels = rng.poisson(np.exp(0.3 * score)).astype(np.float32)
  elif kind == 'probability':
    labels = (1 / (1 + np.exp(-score))).astype(np.float32)
  else:
    labels = (2.0 * score + 0.1 * rng.normal(size=rows)).astype(np.float32)
  return features, labels


def columns():
  """(dense columns for a DNN, columns for a linear model)."""
  fc = tf.feature_column
  x1, x2, x3 = (fc.numeric_column(k) for k in ('x1', 'x2', 'x3'))
  color = fc.categorical_column_with_vocabulary_list('color', COLORS)
  region = fc.categorical_column_with_identity('region', 20)
  deep = [x1, x2, x3, fc.indicator_column(color),
          fc.embedding_column(region, 3)]
  wide = [x1, fc.bucketized_column(x2, [-1.0, 0.0, 1.0]), color, region,
          fc.crossed_column([color, fc.bucketized_column(x3, [0.0])], 10)]
  return deep, wide


def input_fns(kind: str, keys=None):
  """(train, eval, predict) input_fns: train batches of 32 repeated in
  order, eval one pass in batches of 64, predict the first 8 eval rows;
  only the features `keys` (all when None)."""
  train_features, train_labels = data(kind, 'train')
  eval_features, eval_labels = data(kind, 'eval')
  if keys:
    train_features = {k: train_features[k] for k in keys}
    eval_features = {k: eval_features[k] for k in keys}

  def train():
    return tf.data.Dataset.from_tensor_slices(
        (train_features, train_labels)).repeat().batch(BATCH)

  def evaluate():
    return tf.data.Dataset.from_tensor_slices(
        (eval_features, eval_labels)).batch(64)

  def predict():
    return tf.data.Dataset.from_tensor_slices(
        {k: v[:8] for k, v in eval_features.items()}).batch(8)

  return train, evaluate, predict


# The features a program's input_fns give (all when not listed). The
# baselines get one: tf.estimator 2.15's BaselineClassifier/Regressor fail
# to start training on two or more features (their bias variable's
# initializer depends on the batch-size checks, hence on the input
# iterator); estimator_rt's do not, but the reference must run under 2.15.
FEATURE_KEYS = {'baseline_classifier': ('x1',), 'baseline_regressor': ('x1',),
                'baseline_estimator_logistic_head': ('x1',)}


def _programs():
  """name -> (label kind, builder(est, model_dir, config))."""
  deep, wide = columns()
  dense = [c for c in deep if 'embedding' not in c.name]
  return {
      'dnn_classifier': ('binary', lambda est, d, c: est.DNNClassifier(
          [8, 4], deep, model_dir=d, config=c)),
      'dnn_classifier_3class': ('multiclass', lambda est, d, c:
                                est.DNNClassifier([8], dense, model_dir=d,
                                                  n_classes=3, config=c)),
      'dnn_classifier_adam': ('binary', lambda est, d, c: est.DNNClassifier(
          [8], deep, model_dir=d, optimizer='Adam', config=c)),
      'dnn_regressor': ('regression', lambda est, d, c: est.DNNRegressor(
          [8, 4], deep, model_dir=d, config=c)),
      'linear_classifier': ('binary', lambda est, d, c: est.LinearClassifier(
          wide, model_dir=d, config=c)),
      'linear_classifier_3class': ('multiclass', lambda est, d, c:
                                   est.LinearClassifier(
                                       wide, model_dir=d, n_classes=3,
                                       config=c)),
      'linear_classifier_weighted': ('strings', lambda est, d, c:
                                     est.LinearClassifier(
                                         wide, model_dir=d,
                                         weight_column='weight',
                                         label_vocabulary=['no', 'yes'],
                                         optimizer='SGD', config=c)),
      'linear_regressor': ('regression', lambda est, d, c:
                           est.LinearRegressor(wide, model_dir=d, config=c)),
      'wide_deep_classifier': ('binary', lambda est, d, c:
                               est.DNNLinearCombinedClassifier(
                                   model_dir=d, linear_feature_columns=wide,
                                   dnn_feature_columns=deep,
                                   dnn_hidden_units=[8, 4], config=c)),
      'wide_deep_regressor': ('regression', lambda est, d, c:
                              est.DNNLinearCombinedRegressor(
                                  model_dir=d, linear_feature_columns=wide,
                                  dnn_feature_columns=deep,
                                  dnn_hidden_units=[8], config=c)),
      'baseline_classifier': ('multiclass', lambda est, d, c:
                              est.BaselineClassifier(model_dir=d, n_classes=3,
                                                     config=c)),
      'baseline_regressor': ('regression', lambda est, d, c:
                             est.BaselineRegressor(model_dir=d, config=c)),
      'dnn_estimator_multiclass_head': ('multiclass', lambda est, d, c:
                                        est.DNNEstimator(
                                            est.MultiClassHead(3), [8], dense,
                                            model_dir=d, config=c)),
      'linear_estimator_poisson_head': ('counts', lambda est, d, c:
                                        est.LinearEstimator(
                                            est.PoissonRegressionHead(), wide,
                                            model_dir=d, config=c)),
      'baseline_estimator_logistic_head': ('probability', lambda est, d, c:
                                           est.BaselineEstimator(
                                               est.LogisticRegressionHead(),
                                               model_dir=d, config=c)),
      'linear_estimator_binary_head_thresholds': (
          'binary', lambda est, d, c: est.LinearEstimator(
              est.BinaryClassHead(thresholds=[0.3, 0.7]), wide, model_dir=d,
              config=c)),
  }


PROGRAMS = _programs()


def build(est, name: str, model_dir: str):
  """Program `name`'s estimator with `est`'s classes, in `model_dir`."""
  config = est.RunConfig(tf_random_seed=42, save_checkpoints_steps=1000,
                         save_summary_steps=1000)
  return PROGRAMS[name][1](est, model_dir, config)


def serving_receiver_fn(est):
  deep, wide = columns()
  spec = tf.feature_column.make_parse_example_spec(deep + wide + [
      tf.feature_column.numeric_column('weight')])
  return est.export.build_parsing_serving_input_receiver_fn(spec)


def serialized_examples(rows: int = 4):
  """The first eval rows as serialized tf.Examples (to call an export)."""
  features, _ = data('binary', 'eval')
  examples = []
  for i in range(rows):
    feature = {}
    for key, values in features.items():
      value = values[i]
      if isinstance(value, bytes):
        feature[key] = tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[value]))
      elif np.issubdtype(type(value), np.integer):
        feature[key] = tf.train.Feature(
            int64_list=tf.train.Int64List(value=[int(value)]))
      else:
        feature[key] = tf.train.Feature(
            float_list=tf.train.FloatList(value=[float(value)]))
    examples.append(tf.train.Example(
        features=tf.train.Features(feature=feature)).SerializeToString())
  return examples


def jsonable(value):
  if isinstance(value, dict):
    return {k: jsonable(v) for k, v in value.items()}
  if isinstance(value, np.ndarray):
    return jsonable(value.tolist())
  if isinstance(value, (list, tuple)):
    return [jsonable(v) for v in value]
  if isinstance(value, bytes):
    return value.decode()
  if isinstance(value, (np.floating, np.integer)):
    return value.item()
  return value


def first_predictions(estimator, predict_input_fn, count: int = 4):
  out = []
  for prediction in estimator.predict(predict_input_fn):
    out.append(jsonable(prediction))
    if len(out) == count:
      break
  return out


def signatures(export_path: str):
  """name -> {inputs: sorted keys, outputs: {key: dtype}} of an export.

  Read from saved_model.pb's serving meta graph, as `tf.saved_model.load`
  would build its `signatures` (the same keys and dtypes) without loading
  the graph and its variables: a second or more per export.
  """
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  saved = saved_model_pb2.SavedModel()
  with open(os.path.join(export_path, 'saved_model.pb'), 'rb') as f:
    saved.ParseFromString(f.read())
  (meta_graph,) = [m for m in saved.meta_graphs
                   if set(m.meta_info_def.tags) == {'serve'}]
  found = {}
  for name, signature in meta_graph.signature_def.items():
    if name == '__saved_model_init_op':
      continue  # Not a signature: the init op tf.saved_model.load runs.
    found[name] = {
        'inputs': sorted(signature.inputs),
        'outputs': {k: tf.as_dtype(v.dtype).name
                    for k, v in sorted(signature.outputs.items())}}
  return found


def serve(export_path: str, examples):
  """Each signature of an export called on serialized examples."""
  loaded = tf.saved_model.load(export_path)
  results = {}
  for name, function in sorted(loaded.signatures.items()):
    key = function.structured_input_signature[1]
    (argument,) = key
    outputs = function(**{argument: tf.constant(examples)})
    results[name] = jsonable({k: v.numpy() for k, v in outputs.items()})
  return results


def keep_checkpoint(model_dir: str, target: str) -> None:
  """The newest checkpoint of model_dir, alone, as model_dir `target`."""
  path = tf.train.latest_checkpoint(model_dir)
  os.makedirs(target)
  for file in glob.glob(path + '.*'):
    if not file.endswith('.meta'):  # The graph: rebuilt from the program.
      shutil.copy(file, target)
  with open(os.path.join(target, 'checkpoint'), 'w') as f:
    name = os.path.basename(path)
    f.write(f'model_checkpoint_path: "{name}"\n'
            f'all_model_checkpoint_paths: "{name}"\n')


def train_and_record(est, estimator, input_fns, export_dir: str):
  """Trains `estimator` TRAIN_STEPS steps on `input_fns`' train input and
  exports it under `export_dir` (`est`'s parsing receiver).

  Returns:
    (record, export path): the record holds evaluate()'s metrics, the first
    predictions, the checkpoint's variables (name -> shape) and the
    export's signatures, what 2.15 and estimator_rt are compared on.
  """
  train, evaluate, predict = input_fns
  estimator.train(train, max_steps=TRAIN_STEPS)
  record = {
      'metrics': jsonable(estimator.evaluate(evaluate)),
      'predictions': first_predictions(estimator, predict),
      'variables': {n: list(s) for n, s in tf.train.list_variables(
          estimator.latest_checkpoint())},
  }
  # bytes, as tf.estimator returns it (estimator_rt too).
  export_path = tf.compat.as_text(estimator.export_saved_model(
      export_dir, serving_receiver_fn(est)))
  record['signatures'] = signatures(export_path)
  return record, export_path


def reference_record(est, *, build, input_fns, model_dir: str, work: str,
                     fixture=None) -> dict:
  """What 2.15 computes for one program (`build(model_dir)` makes its
  estimator): train_and_record's record and what its export serves. With
  `fixture` (a path), the newest checkpoint is also kept there as a
  model_dir, and the record gets its metrics as kept and, trained on to
  CONTINUED_STEPS, its metrics and predictions (both from copies:
  evaluation writes into model_dir)."""
  train, evaluate, predict = input_fns
  record, export_path = train_and_record(est, build(model_dir), input_fns,
                                         os.path.join(work, 'export'))
  record['served'] = serve(export_path, serialized_examples())
  if fixture is not None:
    keep_checkpoint(model_dir, fixture)
    kept_copy = model_dir + '_kept'
    shutil.copytree(fixture, kept_copy)
    record['fixture_metrics'] = jsonable(build(kept_copy).evaluate(evaluate))
    scratch = model_dir + '_continued'
    shutil.copytree(fixture, scratch)
    continued = build(scratch)
    continued.train(train, max_steps=CONTINUED_STEPS)
    record['continued_metrics'] = jsonable(continued.evaluate(evaluate))
    record['continued_predictions'] = first_predictions(continued, predict)
  return record


def _reference(est, name: str, work: str) -> dict:
  kind = PROGRAMS[name][0]
  return reference_record(
      est, build=lambda model_dir: build(est, name, model_dir),
      input_fns=input_fns(kind, FEATURE_KEYS.get(name)),
      model_dir=os.path.join(work, name), work=work,
      fixture=(os.path.join(FIXTURE_ROOT, name) if name in FIXTURES
               else None))


def write_reference(*, fixture_root: str, command: str, names, record):
  """Runs, under TensorFlow 2.15 only, `record(name, work_dir)` for each
  program name and writes what it returned, with the versions and
  `command`, to `fixture_root`/reference.json (fixture_root is made anew:
  `record` keeps its fixtures there)."""
  major, minor = (int(p) for p in tf.__version__.split('.')[:2])
  if (major, minor) >= (2, 16):
    sys.exit('Run under TensorFlow 2.15 (.venv-tf215): the point is what '
             'tf.estimator computed.')
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  if os.path.exists(fixture_root):
    shutil.rmtree(fixture_root)
  os.makedirs(fixture_root)
  reference = {'tensorflow': tf.__version__,
               'tensorflow_estimator': metadata.version(
                   'tensorflow-estimator'),
               'command': command, 'programs': {}}
  with tempfile.TemporaryDirectory() as work:
    for name in names:
      print('program', name, flush=True)
      reference['programs'][name] = record(name, work)
  with open(os.path.join(fixture_root, 'reference.json'), 'w') as f:
    json.dump(reference, f, indent=1, sort_keys=True)


def main():
  write_reference(
      fixture_root=FIXTURE_ROOT,
      command='.venv-tf215/bin/python scripts/tf_estimator_215/'
      'canned_reference.py',
      names=PROGRAMS,
      record=lambda name, work: _reference(tf.estimator, name, work))


if __name__ == '__main__':
  main()
