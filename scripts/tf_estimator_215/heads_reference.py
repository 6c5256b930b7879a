r"""tf.estimator 2.15's heads in a custom model_fn: the programs, and the
reference figures estimator_rt's heads must reproduce.

    .venv-tf215/bin/python scripts/tf_estimator_215/heads_reference.py
    .venv-tf215/bin/python scripts/tf_estimator_215/heads_reference.py \
        train_op_fn

The first prints, for every case of CASES, what tf.estimator 2.15 gave: evaluate()'s
metrics after TRAIN_STEPS steps, the first two predictions, the
checkpoint's variable names, and the export's signatures (their input and
output keys, and what each returns for the first two examples). The
figures are pasted as constants into tests/test_heads.py. For FIXTURES it
also keeps the trained model_dir's checkpoint under
tests/data/tf_estimator_215/heads/<case>/ and records the metrics after
training a copy on to CONTINUED_STEPS. The second prints the metrics,
predictions and variables of TRAIN_OP_FN_CASES (train_op_fn with a
tf.compat.v1.train optimizer; a Keras 2 Adagrad's slots).

Importable under both TensorFlow 2.15 and 2.21: `graph_model_fn` takes a
tf.estimator-shaped namespace (`tf.estimator` under 2.15, estimator_rt's
`estimator_rt.compat.namespaces.v2()` here) and the Keras 2 module
(`tf.keras` under 2.15, `tf_keras` here). Each case's model is one Dense
layer with fixed initial weights, trained with plain SGD (learning rate
0.1) whose `iterations` is the global step (as 2.15's canned estimators
set it), on 32 generated examples in batches of 8.
"""

import glob
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import tensorflow as tf

TRAIN_STEPS = 5
# For FIXTURES, the model_dir at TRAIN_STEPS is kept under FIXTURE_ROOT
# (the checkpoint and a `checkpoint` file), and a copy trained on to
# CONTINUED_STEPS is evaluated: what a resume here must reproduce.
CONTINUED_STEPS = 7
FIXTURES = ('binary', 'multihead')
FIXTURE_ROOT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))), 'tests', 'data', 'tf_estimator_215', 'heads')
BATCH = 8
ROWS = 32
LEARNING_RATE = 0.1
VOCABULARY = ('a', 'b', 'c')
STEPS = 3  # The sequential case's sequence length.


def make_head(case: str, est):
  """The head of `case`, from namespace `est`."""
  if case == 'binary':
    return est.BinaryClassHead(weight_column='w', thresholds=[0.3, 0.6])
  if case == 'multiclass':
    return est.MultiClassHead(3, label_vocabulary=list(VOCABULARY))
  if case == 'regression':
    return est.RegressionHead(label_dimension=2, weight_column='w')
  if case == 'poisson':
    return est.PoissonRegressionHead()
  if case == 'logistic':
    return est.LogisticRegressionHead()
  if case == 'multilabel':
    return est.MultiLabelHead(3, thresholds=[0.4],
                              classes_for_class_based_metrics=[0, 2])
  if case == 'multihead':
    return est.MultiHead([est.BinaryClassHead(name='b'),
                          est.RegressionHead(name='r')],
                         head_weights=[1., 0.5])
  if case == 'sequential':
    return sequential_head_wrapper(est)(est.BinaryClassHead(), 'mask')
  raise ValueError(f'case={case!r}')


CASES = ('binary', 'multiclass', 'regression', 'poisson', 'logistic',
         'multilabel', 'multihead', 'sequential')
# Cases whose export is checked (the sequential one has sequence features,
# which a parsing receiver of fixed-length features does not give).
EXPORTED = tuple(c for c in CASES if c != 'sequential')


def sequential_head_wrapper(est):
  """SequentialHeadWrapper: not in tf.estimator's public API (2.15's RNN
  estimators used it), so found by module."""
  del est
  # estimator_rt's compat finder also serves `tensorflow_estimator` once a
  # program imported it, so the test is which runtime is installed.
  try:
    from estimator_rt.estimator.head import sequential_head  # pylint: disable=g-import-not-at-top
  except ImportError:  # TensorFlow 2.15's venv: no estimator_rt there.
    from tensorflow_estimator.python.estimator.head import sequential_head  # pylint: disable=g-import-not-at-top
  return sequential_head.SequentialHeadWrapper


def logits_dimension(case: str) -> int:
  return {'binary': 1, 'multiclass': 3, 'regression': 2, 'poisson': 1,
          'logistic': 1, 'multilabel': 3, 'multihead': 2,
          'sequential': 1}[case]


def initial_kernel(case: str) -> np.ndarray:
  """A fixed [4, logits_dimension] kernel (the bias starts at 0)."""
  units = logits_dimension(case)
  return (((np.arange(4 * units).reshape(4, units) % 5) - 2) *
          0.1).astype(np.float32)


def data(case: str):
  """(features dict of numpy arrays, labels) of `case`: 32 examples."""
  rng = np.random.RandomState(7)
  x = rng.normal(size=(ROWS, 4)).astype(np.float32)
  w = rng.uniform(0.5, 1.5, size=(ROWS, 1)).astype(np.float32)
  binary = (x[:, :1] + 0.5 * x[:, 1:2] > 0).astype(np.int64)
  features = {'x': x, 'w': w}
  if case == 'binary':
    return features, binary
  if case == 'multiclass':
    return features, np.array(VOCABULARY)[np.argmax(x[:, :3], -1)][:, None]
  if case == 'regression':
    return features, np.stack([x[:, 0] + x[:, 1], x[:, 2] - x[:, 3]], -1)
  if case == 'poisson':
    return features, rng.poisson(np.exp(0.3 * x[:, :1])).astype(np.float32)
  if case == 'logistic':
    return features, (1. / (1. + np.exp(-x[:, :1]))).astype(np.float32)
  if case == 'multilabel':
    return features, (x[:, :3] > 0).astype(np.int64)
  if case == 'multihead':
    return features, {'b': binary,
                      'r': (x[:, :1] + x[:, 1:2]).astype(np.float32)}
  if case == 'sequential':
    sequences = rng.normal(size=(ROWS, STEPS, 4)).astype(np.float32)
    lengths = 1 + np.arange(ROWS) % STEPS
    mask = (np.arange(STEPS)[None, :] < lengths[:, None]).astype(np.int64)
    labels = (sequences[..., 0] > 0).astype(np.int64)
    return {'x': sequences, 'mask': mask}, labels
  raise ValueError(f'case={case!r}')


def input_fn(case: str, *, train: bool):
  """Batches of 8 in order; repeated for training."""
  features, labels = data(case)

  def fn():
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    if train:
      dataset = dataset.repeat()
    return dataset.batch(BATCH)

  return fn


def predict_input_fn(case: str):
  features, _ = data(case)
  return lambda: tf.data.Dataset.from_tensor_slices(
      {k: v[:2] for k, v in features.items()}).batch(2)


def graph_model_fn(case: str, est, keras2, make_optimizer=None):
  """A TF1-style model_fn: a Keras 2 Dense layer, the head's spec, trained
  by a Keras 2 SGD (or `make_optimizer()`) through
  `create_estimator_spec(optimizer=...)`."""

  def model_fn(features, labels, mode):
    head = make_head(case, est)
    layer = keras2.layers.Dense(
        head.logits_dimension,
        kernel_initializer=keras2.initializers.Constant(initial_kernel(case)),
        bias_initializer='zeros', name='logits')
    logits = layer(features['x'])
    optimizer = None
    if mode == est.ModeKeys.TRAIN:
      optimizer = (make_optimizer() if make_optimizer else
                   keras2.optimizers.legacy.SGD(LEARNING_RATE))
      optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        optimizer=optimizer, trainable_variables=layer.trainable_weights)

  return model_fn


# 2.15's other ways to train a head, each checked on a few cases: a
# tf.compat.v1.layers.dense layer trained through `train_op_fn` by a
# tf.compat.v1.train optimizer (which advances the global step itself), and
# a Keras 2 Adagrad through `optimizer=` (its slots are named
# training/Adagrad/..., what the train op's 'training' scope is for).
TRAIN_OP_FN_CASES = {'binary_sgd': ('binary', 'sgd'),
                     'multiclass_sgd': ('multiclass', 'sgd'),
                     'regression_sgd': ('regression', 'sgd'),
                     'regression_keras2_adagrad': ('regression',
                                                   'keras2_adagrad')}


def train_op_fn_model_fn(name: str, est, keras2):
  """The model_fn of TRAIN_OP_FN_CASES[name] (see there)."""
  case, training = TRAIN_OP_FN_CASES[name]
  if training == 'keras2_adagrad':
    return graph_model_fn(
        case, est, keras2,
        make_optimizer=lambda: keras2.optimizers.legacy.Adagrad(
            LEARNING_RATE))

  def model_fn(features, labels, mode):
    head = make_head(case, est)
    logits = tf.compat.v1.layers.dense(
        features['x'], head.logits_dimension,
        kernel_initializer=tf.compat.v1.constant_initializer(
            initial_kernel(case)),
        bias_initializer=tf.compat.v1.zeros_initializer(), name='logits')

    def train_op_fn(loss):
      return tf.compat.v1.train.GradientDescentOptimizer(
          LEARNING_RATE).minimize(
              loss, global_step=tf.compat.v1.train.get_global_step())

    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        train_op_fn=train_op_fn)

  return model_fn


def serving_examples(case: str) -> list:
  """The first two examples' `x` as serialized tf.Examples."""
  features, _ = data(case)
  return [tf.train.Example(features=tf.train.Features(feature={
      'x': tf.train.Feature(float_list=tf.train.FloatList(value=row))
  })).SerializeToString() for row in features['x'][:2]]


def parsing_spec():
  return {'x': tf.io.FixedLenFeature([4], tf.float32)}


def _plain(value):
  """Numbers and strings of a result, as JSON takes them."""
  value = np.asarray(value)
  if value.dtype.kind in 'SOU':
    return [[v.decode() if isinstance(v, bytes) else str(v) for v in row]
            for row in value.reshape(value.shape[0], -1)]
  return np.round(value.astype(np.float64), 6).tolist()


def served(export_dir: str, case: str) -> dict:
  """signature -> {output key: value} for the first two examples, and
  signature -> sorted input keys, of a SavedModel (loaded with
  tf.saved_model.load)."""
  loaded = tf.saved_model.load(export_dir)
  examples = tf.constant(serving_examples(case))
  results, inputs = {}, {}
  for name, fn in sorted(loaded.signatures.items()):
    input_names = sorted(fn.structured_input_signature[1])
    inputs[name] = input_names
    outputs = fn(**{input_names[0]: examples})
    results[name] = {k: _plain(v) for k, v in sorted(outputs.items())}
  return {'inputs': inputs, 'outputs': results}


def _prediction_key(key):
  # MultiHead predictions are keyed by (head name, key) tuples.
  return '/'.join(key) if isinstance(key, tuple) else key


def run(case: str, est, model_fn, model_dir: str, export=True,
        serve=True) -> dict:
  """Trains, evaluates, predicts and exports `case`; the figures (with
  `serve=False`, the export's directory instead of what it serves)."""
  estimator = est.Estimator(model_fn, model_dir=model_dir)
  estimator.train(input_fn(case, train=True), max_steps=TRAIN_STEPS)
  metrics = estimator.evaluate(input_fn(case, train=False))
  predictions = list(estimator.predict(predict_input_fn(case)))
  figures = {
      'metrics': {k: float(v) for k, v in sorted(metrics.items())
                  if k != 'global_step'},
      'global_step': int(metrics['global_step']),
      'predictions': [{_prediction_key(k): _plain(np.atleast_1d(v)[None])[0]
                       for k, v in sorted(p.items(), key=lambda kv: str(kv[0]))
                       } for p in predictions],
      'variables': sorted(name for name, _ in tf.train.list_variables(
          estimator.latest_checkpoint())),
  }
  if export:
    export_dir = estimator.export_saved_model(
        tempfile.mkdtemp(), est.export.build_parsing_serving_input_receiver_fn(
            parsing_spec()))
    export_dir = (export_dir.decode() if isinstance(export_dir, bytes)
                  else export_dir)
    if serve:
      figures['export'] = served(export_dir, case)
    else:
      figures['export_dir'] = export_dir
  return figures


def keep_fixture(case: str, model_dir: str) -> None:
  """Copies the newest checkpoint of `model_dir` (index and data) to
  FIXTURE_ROOT/<case>, with a `checkpoint` file naming it."""
  target = os.path.join(FIXTURE_ROOT, case)
  shutil.rmtree(target, ignore_errors=True)
  os.makedirs(target)
  prefix = tf.train.latest_checkpoint(model_dir)
  for path in glob.glob(prefix + '.*'):
    if not path.endswith('.meta'):  # The graph is not needed to restore.
      shutil.copy(path, target)
  name = os.path.basename(prefix)
  with open(os.path.join(target, 'checkpoint'), 'w') as f:
    f.write(f'model_checkpoint_path: "{name}"\n'
            f'all_model_checkpoint_paths: "{name}"\n')


def continued_metrics(case: str, est, model_fn, model_dir: str) -> dict:
  """Trains `model_dir` on to CONTINUED_STEPS; evaluate()'s metrics."""
  estimator = est.Estimator(model_fn, model_dir=model_dir)
  estimator.train(input_fn(case, train=True), max_steps=CONTINUED_STEPS)
  metrics = estimator.evaluate(input_fn(case, train=False))
  return {k: float(v) for k, v in sorted(metrics.items())}


def main():
  import tensorflow_estimator  # pylint: disable=g-import-not-at-top,unused-import
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
  est = tf.estimator
  if sys.argv[1:] == ['train_op_fn']:
    # Only TRAIN_OP_FN_CASES, without exports (the PREDICT graph is the
    # cases' above) and without touching the fixtures.
    print(json.dumps({
        name: run(TRAIN_OP_FN_CASES[name][0], est,
                  train_op_fn_model_fn(name, est, tf.keras),
                  tempfile.mkdtemp(), export=False)
        for name in TRAIN_OP_FN_CASES}, indent=1, sort_keys=True))
    return
  reference = {}
  for case in CASES:
    model_dir = tempfile.mkdtemp()
    model_fn = graph_model_fn(case, est, tf.keras)
    reference[case] = run(case, est, model_fn, model_dir,
                          export=case in EXPORTED)
    if case in FIXTURES:
      keep_fixture(case, model_dir)
      reference[case]['continued'] = continued_metrics(case, est, model_fn,
                                                       model_dir)
  print(json.dumps(reference, indent=1, sort_keys=True))


if __name__ == '__main__':
  main()
