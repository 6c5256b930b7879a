"""KMeans (tf.compat.v1.estimator.experimental.KMeans) against tf.estimator
2.15.

scripts/tf_estimator_215/kmeans_reference.py holds six programs (random
and kmeans++ initialization, each mini-batch and full-batch, one with
relative_tolerance, cosine distance, mini_batch_steps_per_iteration=3) on
three 2-D gaussian blobs, and ran them under tf.estimator 2.15
(`.venv-tf215/bin/python -m scripts.tf_estimator_215.kmeans_reference`),
recording in tests/data/tf_estimator_215/kmeans/reference.json the cluster
centers, score(), evaluate(), predictions, transform(), the checkpoint's
variables and the export's signatures and served outputs. Here the same
programs run through estimator_rt's KMeans.

Tolerances: 1e-5 (measured: equal to the last bit). Full-batch k-means is
deterministic, and so is evaluating a kept checkpoint. clustering_ops'
mini-batch step reads and updates the per-cluster counts in ops no
dependency orders, so with TensorFlow's thread pools 2.15 itself does not
repeat its mini-batch numbers (runs differed by up to 0.08 relative to
1 + |value|, and by more, here, on a busy machine); the mini-batch programs
run on one thread in both, where they repeat and agree. With
mini_batch_steps_per_iteration > 1 the numbers move even on one thread:
only the variables, signatures and global step are compared
(kmeans_reference.RACY). Variable names and shapes, signature
names and dtypes, metric keys and global steps are always compared exactly.

The full-batch kmeans++ program stops at step 3 of 10, as in 2.15: its
relative_tolerance hook ran at every step, so KMeans' training (with its
SessionRunHooks) ran one step per session run, not in the in-graph loop.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from estimator_rt.export import saved_model as export_lib
from estimator_rt.estimator.canned.kmeans import KMeans
from estimator_rt.core.errors import UserInputError
from scripts.tf_estimator_215 import canned_reference
from scripts.tf_estimator_215 import kmeans_reference as programs
from conftest import run_python

with open(os.path.join(programs.FIXTURE_ROOT, 'reference.json')) as f:
  REFERENCE = json.load(f)['programs']
TOLERANCE = 1e-5


def _assert_close(expected, actual, where, tolerance):
  """Nested dicts/lists of numbers (ints equal; floats within `tolerance`,
  absolute or relative) and strings (equal)."""
  if isinstance(expected, dict):
    assert set(actual) == set(expected), (where, sorted(actual),
                                          sorted(expected))
    for key in expected:
      _assert_close(expected[key], actual[key], f'{where}[{key!r}]',
                    tolerance)
  elif isinstance(expected, list):
    assert len(actual) == len(expected), (where, actual, expected)
    for index, (e, a) in enumerate(zip(expected, actual)):
      _assert_close(e, a, f'{where}[{index}]', tolerance)
  elif isinstance(expected, (str, int)):
    assert actual == expected, (where, actual, expected)
  else:
    assert np.isclose(actual, expected, rtol=tolerance, atol=tolerance), (
        where, actual, expected)


def _compare(expected, actual, name, where):
  """A `kmeans_reference.record` here against 2.15's."""
  assert actual['variables'] == expected['variables'], where
  assert actual['metrics']['global_step'] == expected['metrics'][
      'global_step'], where
  assert set(actual['metrics']) == set(expected['metrics']), where
  if name in programs.RACY:
    return
  for field in ('centers', 'score', 'metrics', 'predictions',
                'cluster_index', 'transform'):
    _assert_close(expected[field], actual[field], f'{where} {field}',
                  TOLERANCE)


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """Every program trained here as 2.15 trained it: name -> its record
  (kmeans_reference.record), signatures and export path."""
  work = tmp_path_factory.mktemp('kmeans')
  results = {}
  for name, (_, full_batch, as_dict, _) in programs.PROGRAMS.items():
    train, _, _ = programs.input_fns(full_batch, as_dict)
    estimator = programs.build(KMeans, name, str(work / name))
    estimator.train(train, max_steps=programs.TRAIN_STEPS)
    result = programs.record(estimator, name)
    export_path = estimator.export_saved_model(
        str(work / 'export'), programs.serving_receiver_fn(export_lib)).decode()
    result['signatures'] = canned_reference.signatures(export_path)
    result['export_path'] = export_path
    results[name] = result
  return results


@pytest.mark.parametrize('name', list(programs.PROGRAMS))
def test_program_gives_2_15s_numbers(trained, name):
  """Centers, score, metrics, predictions, transform, checkpoint variables
  and export signatures as 2.15 computed them (see the module docstring
  for the tolerances); the full-batch program stops early at 2.15's step
  (relative_tolerance), and the initialization ran from the hook."""
  ours, theirs = trained[name], REFERENCE[name]
  _compare(theirs, ours, name, name)
  assert ours['signatures'] == theirs['signatures']


def test_exports_serve_2_15s_outputs_in_a_fresh_process(trained):
  """Each export, loaded by a process that never imports estimator_rt,
  answers its three signatures (all_distances, cluster_index,
  serving_default) as 2.15's export did."""
  paths = {name: result['export_path'] for name, result in trained.items()}
  code = ('import json, sys\n'
          'from scripts.tf_estimator_215 import kmeans_reference as k\n'
          'paths = json.loads(sys.argv[1])\n'
          'print(json.dumps({n: k.serve(p) for n, p in paths.items()}))\n')
  result = run_python(['-c', code, json.dumps(paths)], timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'estimator_rt' not in result.stderr
  served = json.loads(result.stdout.strip().splitlines()[-1])
  for name in paths:
    expected = REFERENCE[name]['served']
    assert set(served[name]) == set(expected) == {
        'all_distances', 'cluster_index', 'serving_default'}
    if name not in programs.RACY:
      _assert_close(expected, served[name], f'{name} served', TOLERANCE)


def test_tf_estimator_215_model_dir_evaluates_and_resumes(tmp_path):
  """The model_dir 2.15 trained to step 10 (mini-batch, random init):
  here its centers, score, metrics and predictions are 2.15's (1e-5: no
  training), and trained on to step 15 it resumes without re-initializing
  the centers (the checkpoint's `initialized` is True), to 2.15's
  continuation within the mini-batch tolerance."""
  name = programs.FIXTURE
  model_dir = str(tmp_path / name)
  shutil.copytree(os.path.join(programs.FIXTURE_ROOT, name), model_dir)
  estimator = programs.build(KMeans, name, model_dir)
  kept = programs.record(estimator, name)
  expected = REFERENCE[name]['fixture']
  assert kept['variables'] == expected['variables']
  for field in ('centers', 'score', 'metrics', 'predictions',
                'cluster_index', 'transform'):
    _assert_close(expected[field], kept[field], f'kept {field}', TOLERANCE)
  np.testing.assert_array_equal(
      estimator.cluster_centers(),
      tf.train.load_variable(model_dir, KMeans.CLUSTER_CENTERS_VAR_NAME))

  _, full_batch, as_dict, _ = programs.PROGRAMS[name]
  train, _, _ = programs.input_fns(full_batch, as_dict)
  estimator.train(train, max_steps=programs.CONTINUED_STEPS)
  _compare(REFERENCE[name]['continued'], programs.record(estimator, name),
           name, 'continued')


def _points_fn(value, labels=None):
  def input_fn():
    features = tf.constant(value)
    return features if labels is None else (features, tf.constant(labels))
  return input_fn


@pytest.mark.parametrize('make, words', [
    (lambda d: KMeans(3, model_dir=d, distance_metric='manhattan'),
     ['distance_metric', "'manhattan'"]),
    (lambda d: KMeans(3, model_dir=d, initial_clusters='kmeans||'),
     ['initial_clusters', "'kmeans||'"]),
])
def test_bad_constructor_argument_is_one_clear_error(tmp_path, make, words):
  with pytest.raises(UserInputError) as raised:
    make(str(tmp_path))
  assert all(word in str(raised.value) for word in words), raised.value


@pytest.mark.parametrize('input_fn, words', [
    (_points_fn(np.ones((6, 2), np.int32)), ['int32', 'float']),
    (_points_fn(np.ones((6,), np.float32)), ['shape', '[batch, dimensions]']),
    (_points_fn(np.ones((6, 2), np.float32), labels=np.ones(6)),
     ['labels', 'only the features']),
    (_points_fn(np.ones((2, 2), np.float32)),
     ['initial cluster centers', 'at least num_clusters']),
])
def test_bad_input_is_one_clear_error(tmp_path, input_fn, words):
  """Points that are not a float matrix, labels, or too few points for
  kmeans++, fail with one UserInputError that says what KMeans takes, not
  a TensorFlow trace."""
  estimator = KMeans(3, model_dir=str(tmp_path), seed=1,
                     initial_clusters=KMeans.KMEANS_PLUS_PLUS_INIT)
  with pytest.raises(UserInputError) as raised:
    estimator.train(input_fn, max_steps=1)
  message = str(raised.value)
  assert 'KMeans' in message and all(w in message for w in words), message


def test_kmeans_plus_plus_without_any_seed_trains(tmp_path):
  """seed=None and no RunConfig.tf_random_seed: 2.15's kmeans++ failed
  ("Tried to convert 'seed' to a tensor"); here it picks the centers from
  the first batch with TensorFlow's default graph seed."""
  points = programs.points('train')
  estimator = KMeans(3, model_dir=str(tmp_path),
                     initial_clusters=KMeans.KMEANS_PLUS_PLUS_INIT)
  estimator.train(lambda: tf.constant(points), max_steps=2)
  centers = estimator.cluster_centers()
  assert centers.shape == (3, 2) and np.all(np.isfinite(centers))
