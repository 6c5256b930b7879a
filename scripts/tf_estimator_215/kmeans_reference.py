r"""tf.estimator 2.15's KMeans on small generated data: the programs, and
the reference figures estimator_rt's KMeans must reproduce.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.kmeans_reference

Importable under both TensorFlow 2.15 and 2.21: `build(kmeans_class, name,
model_dir)` makes program `name`'s estimator from a KMeans class
(`tf.compat.v1.estimator.experimental.KMeans` under 2.15,
`estimator_rt.estimator.canned.kmeans.KMeans` here), on three 2-D gaussian blobs
drawn with fixed seeds. tests/test_kmeans.py runs the same programs here.

Run as a script (under 2.15 only), for every program it trains from scratch
(graph seed 42) and records the cluster centers, score(), evaluate()'s
metrics, the first predictions, transform()'s first rows, the checkpoint's
variables (names and shapes) and the export's signatures and served
outputs. For FIXTURE it keeps the newest checkpoint as a model_dir under
tests/data/tf_estimator_215/kmeans/<program>/ (index, data and a
`checkpoint` file), evaluates it as kept, and trains a copy on to
CONTINUED_STEPS, recording the centers and metrics there. Everything goes
to tests/data/tf_estimator_215/kmeans/reference.json.
"""

import os
import shutil

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215 import canned_reference as canned

_HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE_ROOT = os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'tests',
                            'data', 'tf_estimator_215', 'kmeans')
TRAIN_STEPS = 10
CONTINUED_STEPS = 15
BATCH = 30
FIXTURE = 'random_mini_batch'
BLOB_CENTERS = np.array([[0., 0.], [5., 5.], [-5., 5.]], np.float32)


def points(split: str) -> np.ndarray:
  """Three gaussian blobs (sd 1): 90 training points or 30 eval points,
  shuffled, float32 [n, 2]."""
  rows = 90 if split == 'train' else 30
  rng = np.random.RandomState({'train': 3, 'eval': 4}[split])
  blob = np.arange(rows) % len(BLOB_CENTERS)
  x = BLOB_CENTERS[blob] + rng.normal(size=(rows, 2)).astype(np.float32)
  return x[rng.permutation(rows)].astype(np.float32)


def input_fns(full_batch: bool = False, as_dict: bool = False):
  """(train, eval, predict) input_fns. Train: batches of BATCH repeated
  in order (the whole set per batch for full-batch k-means); eval: one
  pass in batches of 15; predict: the first 6 eval points. Features only
  (no labels), a tensor or a dict {'x': ...} of it (as_dict)."""
  train_points, eval_points = points('train'), points('eval')

  def wrap(x):
    return {'x': x} if as_dict else x

  def train():
    batch = len(train_points) if full_batch else BATCH
    return tf.data.Dataset.from_tensor_slices(
        wrap(train_points)).repeat().batch(batch)

  def evaluate():
    return tf.data.Dataset.from_tensor_slices(wrap(eval_points)).batch(15)

  def predict():
    return tf.data.Dataset.from_tensor_slices(wrap(eval_points[:6])).batch(6)

  return train, evaluate, predict


# name -> (KMeans keyword arguments, full_batch input, dict features,
# single-threaded session).
#
# clustering_ops' mini-batch step reads and updates the per-cluster counts
# (and, with mini_batch_steps_per_iteration > 1, the centers) in ops no
# dependency orders (its code says so: "there is a race condition here"),
# so mini-batch numbers depend on the executor's schedule, in 2.15 as here:
# with TensorFlow's thread pools, repeated 2.15 runs of the same program
# differed by up to 0.08 (more on a busy machine). Mini-batch programs
# therefore run on one thread (inter- and intra-op), where 2.15 repeats its
# numbers and estimator_rt gives the same ones. Full-batch programs are
# deterministic anyway. With mini_batch_steps_per_iteration > 1 the numbers
# still move between runs on one thread: RACY programs' numbers are
# recorded but not meant to be compared.
PROGRAMS = {
    'random_mini_batch': (dict(initial_clusters='random', seed=7), False,
                          False, True),
    'kmeans_plus_plus_mini_batch': (
        dict(initial_clusters='kmeans_plus_plus', seed=7), False, True,
        True),
    'kmeans_plus_plus_full_batch': (
        dict(initial_clusters='kmeans_plus_plus', seed=7,
             use_mini_batch=False, relative_tolerance=1e-4), True, False,
        False),
    'random_full_batch': (
        dict(initial_clusters='random', seed=7, use_mini_batch=False), True,
        True, False),
    'random_mini_batch_cosine': (
        dict(initial_clusters='random', seed=11, distance_metric='cosine'),
        False, False, True),
    'random_mini_batch_steps_3': (
        dict(initial_clusters='random', seed=11,
             mini_batch_steps_per_iteration=3), False, False, True),
}
RACY = ('random_mini_batch_steps_3',)


def build(kmeans_class, name: str, model_dir: str):
  """Program `name`'s KMeans (3 clusters) from `kmeans_class`, in
  `model_dir`, with graph seed 42."""
  kwargs, _, _, single_threaded = PROGRAMS[name]
  return kmeans_class(num_clusters=3, model_dir=model_dir,
                      config=_run_config(kmeans_class, single_threaded),
                      **kwargs)


def _run_config(kmeans_class, single_threaded: bool):
  if kmeans_class.__module__.startswith('estimator_rt'):
    from estimator_rt.cluster.run_config import RunConfig  # pylint: disable=g-import-not-at-top
  else:
    RunConfig = tf.estimator.RunConfig  # pylint: disable=invalid-name
  session_config = None
  if single_threaded:
    session_config = tf.compat.v1.ConfigProto(
        inter_op_parallelism_threads=1, intra_op_parallelism_threads=1,
        # Its own pool: a process-wide one (the default) is sized by the
        # first session of the process, and a test suite made it earlier.
        use_per_session_threads=True)
  return RunConfig(tf_random_seed=42, save_checkpoints_steps=1000,
                   save_summary_steps=1000, session_config=session_config)


def serving_receiver_fn(export_module):
  """A receiver of raw points, float32 [None, 2], named 'x' (features
  {'x': points}); `export_module` is tf.estimator.export (2.15) or
  estimator_rt.export."""

  def receiver():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
    return export_module.ServingInputReceiver({'x': x}, {'x': x})

  return receiver


def serve(export_path: str, rows: int = 4):
  """Each signature of an export called on the first eval points."""
  loaded = tf.saved_model.load(export_path)
  results = {}
  for name, function in sorted(loaded.signatures.items()):
    outputs = function(x=tf.constant(points('eval')[:rows]))
    results[name] = canned.jsonable(
        {k: v.numpy() for k, v in outputs.items()})
  return results


def record(estimator, name: str) -> dict:
  """What is recorded for a trained program: centers, score, metrics,
  predictions, transform, checkpoint variables."""
  _, full_batch, as_dict, _ = PROGRAMS[name]
  _, evaluate, predict = input_fns(full_batch, as_dict)
  return {
      'centers': canned.jsonable(estimator.cluster_centers()),
      'score': canned.jsonable(estimator.score(evaluate)),
      'metrics': canned.jsonable(estimator.evaluate(evaluate)),
      'predictions': canned.first_predictions(estimator, predict, 6),
      'cluster_index': canned.jsonable(
          list(estimator.predict_cluster_index(predict))),
      'transform': canned.jsonable(list(estimator.transform(predict))),
      'variables': {n: list(s) for n, s in tf.train.list_variables(
          estimator.latest_checkpoint())},
  }


def _reference(kmeans_class, export_module, name: str, work: str) -> dict:
  _, full_batch, as_dict, _ = PROGRAMS[name]
  train, _, _ = input_fns(full_batch, as_dict)
  model_dir = os.path.join(work, name)
  estimator = build(kmeans_class, name, model_dir)
  estimator.train(train, max_steps=TRAIN_STEPS)
  result = record(estimator, name)
  export_path = estimator.export_saved_model(
      os.path.join(work, 'export'), serving_receiver_fn(export_module))
  result['signatures'] = canned.signatures(export_path)
  result['served'] = serve(export_path)
  if name == FIXTURE:
    fixture = os.path.join(FIXTURE_ROOT, name)
    canned.keep_checkpoint(model_dir, fixture)
    kept_copy = os.path.join(work, name + '_kept')
    shutil.copytree(fixture, kept_copy)
    kept = build(kmeans_class, name, kept_copy)
    result['fixture'] = record(kept, name)
    scratch = os.path.join(work, name + '_continued')
    shutil.copytree(fixture, scratch)
    continued = build(kmeans_class, name, scratch)
    continued.train(train, max_steps=CONTINUED_STEPS)
    result['continued'] = record(continued, name)
  return result


def main():
  canned.write_reference(
      fixture_root=FIXTURE_ROOT,
      command='.venv-tf215/bin/python -m '
      'scripts.tf_estimator_215.kmeans_reference',
      names=PROGRAMS,
      record=lambda name, work: _reference(
          tf.compat.v1.estimator.experimental.KMeans, tf.estimator.export,
          name, work))


if __name__ == '__main__':
  main()
