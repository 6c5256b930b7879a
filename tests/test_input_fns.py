"""Tests for input_fns/: shapes, batching, sharding, determinism, errors.

Real data throughout: generated arrays, scikit-learn's bundled digits, files
written to tmp_path, and a tiny TFDS data set built into tmp_path by TFDS
itself. The only fake is TFDS's own `tfds.testing.mock_data`, for a
registered data set ('mnist') whose real files are not on this machine.
"""

import collections
import csv
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')

# pylint: disable=g-import-not-at-top
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow.python.data.experimental.ops import distribute as tfd_dist

import estimator_rt as ert
from input_fns import digits
from input_fns import files
from input_fns import synthetic
from input_fns import tfds as tfds_input
# pylint: enable=g-import-not-at-top


def _context(pipeline_id, num_pipelines=2):
  return tf.distribute.InputContext(num_input_pipelines=num_pipelines,
                                    input_pipeline_id=pipeline_id,
                                    num_replicas_in_sync=num_pipelines)


def _collect(dataset, max_batches=None):
  """Returns (x, y, batch sizes) of `dataset` as NumPy arrays."""
  xs, ys, sizes = [], [], []
  for features, labels in dataset.take(max_batches or -1):
    xs.append(features['x'].numpy())
    ys.append(labels.numpy())
    sizes.append(len(labels))
  return np.concatenate(xs), np.concatenate(ys), sizes


def _multiset(x, y):
  """Examples as a multiset, to compare contents regardless of order."""
  return collections.Counter(
      (row.astype(np.float32).tobytes(), label.tobytes())
      for row, label in zip(x, y))


def _assert_spec(dataset, x_shape, x_dtype, y_shape, y_dtype):
  features_spec, labels_spec = dataset.element_spec
  assert set(features_spec) == {'x'}
  assert features_spec['x'].shape.as_list() == x_shape
  assert features_spec['x'].dtype == x_dtype
  assert labels_spec.shape.as_list() == y_shape
  assert labels_spec.dtype == y_dtype


def _assert_exactly_once_across_pipelines(input_fn, params, num_pipelines=2):
  """Pipelines 0..n-1 together yield the examples of the unsharded pass."""
  x, y, _ = _collect(input_fn(params))
  parts = [_collect(input_fn(params, _context(i, num_pipelines)))
           for i in range(num_pipelines)]
  for part_x, _, _ in parts:
    assert 0 < len(part_x) < len(x)
  assert (_multiset(np.concatenate([p[0] for p in parts]),
                    np.concatenate([p[1] for p in parts])) ==
          _multiset(x, y))
  assert sum(len(p[1]) for p in parts) == len(y)


# --- shared batching and params errors ---------------------------------------


@pytest.mark.parametrize('input_fn', [
    synthetic.linear_input_fn, synthetic.classification_input_fn,
    synthetic.images_input_fn, digits.train_input_fn, digits.eval_input_fn
])
def test_missing_batch_size_names_the_param(input_fn):
  with pytest.raises(ert.InputFnError, match=r"params\['batch_size'\]"):
    input_fn({})


def test_batch_size_not_divisible_by_replicas_is_a_clear_error():
  with pytest.raises(ert.InputFnError,
                     match=r"batch_size'\]=5 .* replicas in sync, 2"):
    synthetic.linear_input_fn({'batch_size': 5}, _context(0))


def test_bad_param_value_names_param_and_value():
  with pytest.raises(ert.InputFnError, match=r"params\['num_features'\].*-1"):
    synthetic.linear_input_fn({'batch_size': 4, 'num_features': -1})
  with pytest.raises(ert.InputFnError, match=r"params\['data'\].*'nope'"):
    synthetic.linear_input_fn({'batch_size': 4, 'data': 'nope'})


# --- synthetic ---------------------------------------------------------------


def test_linear_global_and_per_replica_batches():
  params = {'batch_size': 8, 'num_features': 3}
  dataset = synthetic.linear_input_fn(params)
  # Infinite stream: batches are full, so the batch dimension is static.
  _assert_spec(dataset, [8, 3], tf.float32, [8], tf.float32)
  assert dataset.cardinality() == tf.data.INFINITE_CARDINALITY
  _assert_spec(synthetic.linear_input_fn(params, _context(1)), [4, 3],
               tf.float32, [4], tf.float32)


def test_linear_regression_data_follows_its_truth():
  params = {'batch_size': 64, 'num_features': 3, 'seed': 7}
  x, y, _ = _collect(synthetic.linear_input_fn(params), max_batches=16)
  weights, bias = synthetic.linear_truth(params)
  residual = y - (x @ weights + bias)
  assert abs(residual.std() - 0.1) < 0.02  # the default noise_stddev
  assert abs(residual.mean()) < 0.02


def test_linear_constant_is_the_readme_data():
  params = {'batch_size': 4, 'data': 'constant'}
  x, y, _ = _collect(synthetic.linear_input_fn(params), max_batches=3)
  np.testing.assert_array_equal(x, np.ones((12, 1), np.float32))
  np.testing.assert_array_equal(y, np.ones((12,), np.float32))


def test_classification_spec_and_per_replica_batch():
  params = {'batch_size': 16}
  _assert_spec(synthetic.classification_input_fn(params), [16, 20],
               tf.float32, [16], tf.int64)
  _assert_spec(synthetic.classification_input_fn(params, _context(0)),
               [8, 20], tf.float32, [8], tf.int64)
  _, y, _ = _collect(synthetic.classification_input_fn(
      {'batch_size': 50, 'n_classes': 3}), max_batches=4)
  assert set(y) == {0, 1, 2}


def test_classification_is_deterministic_given_the_seed():
  def first_batches(seed):
    return _collect(synthetic.classification_input_fn(
        {'batch_size': 32, 'seed': seed, 'num_examples': 64}), max_batches=5)

  a, b, c = first_batches(3), first_batches(3), first_batches(4)
  np.testing.assert_array_equal(a[0], b[0])
  np.testing.assert_array_equal(a[1], b[1])
  assert not np.array_equal(a[0], c[0])
  # Reshuffled between epochs: epoch 2 is epoch 1 in another order.
  assert _multiset(a[0][:64], a[1][:64]) == _multiset(a[0][64:128],
                                                      a[1][64:128])
  assert not np.array_equal(a[0][:64], a[0][64:128])


def test_classification_one_pass_is_split_exactly_once():
  _assert_exactly_once_across_pipelines(
      synthetic.classification_input_fn,
      {'batch_size': 8, 'num_examples': 101, 'repeat': False})


def test_images_spec_values_and_per_replica_batch():
  params = {'batch_size': 4, 'num_examples': 16, 'n_classes': 5}
  dataset = synthetic.images_input_fn(params)
  _assert_spec(dataset, [4, 32, 32, 3], tf.float32, [4], tf.int64)
  x, y, _ = _collect(dataset, max_batches=4)
  assert x.min() >= 0.0 and x.max() <= 1.0
  assert y.min() >= 0 and y.max() < 5
  _assert_spec(
      synthetic.images_input_fn(
          {'batch_size': 4, 'image_size': 8, 'channels': 1}, _context(1)),
      [2, 8, 8, 1], tf.float32, [2], tf.int64)


# --- digits ------------------------------------------------------------------


def test_digits_split_sizes_values_and_cache():
  x_train, y_train, x_eval, y_eval = digits.load_split()
  assert x_train.shape == (1438, 64) and y_train.shape == (1438,)
  assert x_eval.shape == (359, 64) and y_eval.shape == (359,)
  assert x_train.dtype == np.float32 and y_train.dtype == np.int64
  for x in (x_train, x_eval):
    assert x.min() == 0.0 and x.max() == 1.0
  assert set(y_train) == set(y_eval) == set(range(10))
  assert digits.load_split() is digits.load_split()  # loaded once
  assert not x_train.flags.writeable  # the cached arrays are shared


def test_digits_eval_one_pass_in_order_with_final_partial_batch():
  dataset = digits.eval_input_fn({'batch_size': 100})
  _assert_spec(dataset, [None, 64], tf.float32, [None], tf.int64)
  x, y, sizes = _collect(dataset)
  assert sizes == [100, 100, 100, 59]
  _, _, x_eval, y_eval = digits.load_split()
  np.testing.assert_array_equal(x, x_eval)
  np.testing.assert_array_equal(y, y_eval)


def test_digits_eval_two_pipelines_see_each_example_once():
  _assert_exactly_once_across_pipelines(digits.eval_input_fn,
                                        {'batch_size': 64})
  _, _, sizes = _collect(digits.eval_input_fn({'batch_size': 64},
                                              _context(0)))
  assert sizes[0] == 32  # the per-replica batch


def test_digits_train_shuffled_repeated_and_deterministic():
  params = {'batch_size': 32, 'seed': 1}
  dataset = digits.train_input_fn(params)
  _assert_spec(dataset, [32, 64], tf.float32, [32], tf.int64)
  _assert_spec(digits.train_input_fn(params, _context(1)), [16, 64],
               tf.float32, [16], tf.int64)
  x, y, _ = _collect(dataset, max_batches=50)  # more than one epoch
  assert len(y) == 1600
  x2, _, _ = _collect(digits.train_input_fn(params), max_batches=50)
  np.testing.assert_array_equal(x, x2)
  x_train, y_train, _, _ = digits.load_split()
  assert not np.array_equal(x[:32], x_train[:32])  # shuffled

  one_epoch = digits.train_input_fn({'batch_size': 100, 'num_epochs': 1})
  x, y, sizes = _collect(one_epoch)
  assert sizes[-1] == 38
  assert _multiset(x, y) == _multiset(x_train, y_train)


# --- TFRecord and CSV files --------------------------------------------------


def _write_tfrecord_shards(directory, num_files=2, per_file=10):
  rng = np.random.default_rng(0)
  x = rng.normal(size=(num_files * per_file, 3)).astype(np.float32)
  ids = np.arange(num_files * per_file, dtype=np.int64)
  labels = (ids % 4).astype(np.int64)
  for i in range(num_files):
    rows = slice(i * per_file, (i + 1) * per_file)
    files.write_tfrecords(
        os.path.join(directory, f'data-{i:05d}.tfrecord'),
        {'x': x[rows], 'id': ids[rows]}, labels[rows])
  spec = files.infer_feature_spec({'x': x, 'id': ids}, labels)
  return x, ids, labels, spec


def _tfrecord_params(directory, spec, **overrides):
  params = {'file_pattern': os.path.join(directory, '*.tfrecord'),
            'feature_spec': spec, 'batch_size': 4, 'shuffle': False,
            'repeat': False}
  params.update(overrides)
  return params


def test_tfrecord_round_trip(tmp_path):
  x, ids, labels, spec = _write_tfrecord_shards(str(tmp_path))
  assert spec == {'x': {'shape': [3], 'dtype': 'float32'},
                  'id': {'shape': [], 'dtype': 'int64'},
                  'label': {'shape': [], 'dtype': 'int64'}}
  dataset = files.tfrecord_input_fn(_tfrecord_params(str(tmp_path), spec))
  features_spec, labels_spec = dataset.element_spec
  assert features_spec['x'].shape.as_list() == [None, 3]
  assert features_spec['x'].dtype == tf.float32
  assert features_spec['id'].dtype == tf.int64
  assert labels_spec.shape.as_list() == [None]
  got = {}
  for features, batch_labels in dataset:
    for row, i, label in zip(features['x'].numpy(), features['id'].numpy(),
                             batch_labels.numpy()):
      got[int(i)] = (row, label)
  assert sorted(got) == list(ids)
  for i in ids:
    np.testing.assert_array_equal(got[i][0], x[i])
    assert got[i][1] == labels[i]


def test_tfrecord_overlapping_patterns_read_each_file_once(tmp_path):
  _, ids, _, spec = _write_tfrecord_shards(str(tmp_path))
  patterns = [os.path.join(str(tmp_path), '*.tfrecord'),
              os.path.join(str(tmp_path), 'data-00000.tfrecord')]
  dataset = files.tfrecord_input_fn(
      _tfrecord_params(str(tmp_path), spec, file_pattern=patterns))
  assert sorted(int(v) for f, _ in dataset for v in f['id'].numpy()) == list(
      ids)


def test_tfrecord_label_key_none_gives_features_only(tmp_path):
  _, _, _, spec = _write_tfrecord_shards(str(tmp_path))
  dataset = files.tfrecord_input_fn(
      _tfrecord_params(str(tmp_path), spec, label_key=None))
  assert set(dataset.element_spec) == {'x', 'id', 'label'}


@pytest.mark.parametrize('num_files', [2, 3, 1])
def test_tfrecord_pipelines_see_each_record_once(tmp_path, num_files):
  # 2 or 3 files shard by file; 1 file falls back to sharding records.
  _, ids, _, spec = _write_tfrecord_shards(str(tmp_path), num_files=num_files)
  params = _tfrecord_params(str(tmp_path), spec)
  seen = []
  for i in range(2):
    dataset = files.tfrecord_input_fn(params, _context(i))
    part = [int(v) for f, _ in dataset for v in f['id'].numpy()]
    assert 0 < len(part) < len(ids)
    sizes = [len(l) for _, l in dataset]
    assert max(sizes) == 2  # per-replica batch of the global 4
    seen += part
  assert sorted(seen) == list(ids)


@pytest.mark.parametrize('num_pipelines', [2, 3])
def test_tfrecord_shuffled_unseeded_pipelines_see_each_record_once(
    tmp_path, num_pipelines):
  # With 3 pipelines for 2 files the records are sharded one by one, which
  # only partitions them if every pipeline reads them in the same order.
  _, ids, _, spec = _write_tfrecord_shards(str(tmp_path), per_file=30)
  params = _tfrecord_params(str(tmp_path), spec, shuffle=True,
                            batch_size=num_pipelines)
  seen = []
  for i in range(num_pipelines):
    dataset = files.tfrecord_input_fn(params, _context(i, num_pipelines))
    seen += [int(v) for f, _ in dataset for v in f['id'].numpy()]
  assert sorted(seen) == list(ids)


def test_tfrecord_without_context_can_be_auto_sharded_by_file(tmp_path):
  # What the runtime's FILE auto-shard policy does to a dataset from an
  # input_fn that takes no input context. _AutoShardDataset is private, but
  # it is exactly the rewrite tf.distribute applies per worker.
  _, ids, _, spec = _write_tfrecord_shards(str(tmp_path), num_files=4)
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = (
      tf.data.experimental.AutoShardPolicy.FILE)
  seen = []
  for worker in range(2):
    dataset = files.tfrecord_input_fn(
        _tfrecord_params(str(tmp_path), spec, shuffle=True))
    # pylint: disable-next=protected-access
    dataset = tfd_dist._AutoShardDataset(dataset.with_options(options), 2,
                                         worker)
    part = [int(v) for f, _ in dataset for v in f['id'].numpy()]
    assert len(part) == 20  # 2 whole files of 10
    seen += part
  assert sorted(seen) == list(ids)


def test_tfrecord_shuffle_is_deterministic_given_the_seed(tmp_path):
  _, ids, _, spec = _write_tfrecord_shards(str(tmp_path), per_file=50)

  def order(seed):
    dataset = files.tfrecord_input_fn(_tfrecord_params(
        str(tmp_path), spec, shuffle=True, seed=seed, shuffle_buffer=100))
    return [int(v) for f, _ in dataset for v in f['id'].numpy()]

  assert order(5) == order(5)
  assert order(5) != order(6)
  assert sorted(order(5)) == list(ids)
  assert order(5) != list(ids)


def test_tfrecord_repeats_by_default_with_static_batch(tmp_path):
  _, _, _, spec = _write_tfrecord_shards(str(tmp_path))
  params = {'file_pattern': os.path.join(str(tmp_path), '*.tfrecord'),
            'feature_spec': spec, 'batch_size': 8, 'seed': 0}
  dataset = files.tfrecord_input_fn(params)
  assert dataset.element_spec[1].shape.as_list() == [8]
  assert len(list(dataset.take(5))) == 5  # 40 records from 20: repeated


def test_tfrecord_errors_name_the_param(tmp_path):
  _, _, _, spec = _write_tfrecord_shards(str(tmp_path))
  with pytest.raises(ert.InputFnError, match=r"params\['file_pattern'\]"):
    files.tfrecord_input_fn({'feature_spec': spec, 'batch_size': 4})
  missing = os.path.join(str(tmp_path), 'nothing-*.tfrecord')
  with pytest.raises(ert.InputFnError, match='matched no files') as info:
    files.tfrecord_input_fn(_tfrecord_params(str(tmp_path), spec,
                                             file_pattern=missing))
  assert missing in str(info.value)
  with pytest.raises(ert.InputFnError, match=r"params\['feature_spec'\]"):
    files.tfrecord_input_fn(_tfrecord_params(str(tmp_path), None))
  with pytest.raises(ert.InputFnError, match=r"label_key'\]='target'"):
    files.tfrecord_input_fn(_tfrecord_params(str(tmp_path), spec,
                                             label_key='target'))
  with pytest.raises(ert.InputFnError, match=r"\['x'\].*'float64'"):
    files.tfrecord_input_fn(_tfrecord_params(
        str(tmp_path), {**spec, 'x': {'shape': [3], 'dtype': 'float64'}}))


def _write_csv(path, header, rows):
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(header)
    writer.writerows(rows)


def _csv_files(directory, num_files=2, per_file=7):
  rows = [[float(i), float(10 * i), i % 3] for i in range(num_files * per_file)]
  for i in range(num_files):
    _write_csv(os.path.join(directory, f'part-{i}.csv'), ['a', 'b', 'label'],
               rows[i * per_file:(i + 1) * per_file])
  return np.array(rows, np.float32)


def _csv_params(directory, **overrides):
  params = {'file_pattern': os.path.join(directory, 'part-*.csv'),
            'batch_size': 4, 'shuffle': False, 'repeat': False}
  params.update(overrides)
  return params


def test_csv_round_trip(tmp_path):
  rows = _csv_files(str(tmp_path))
  dataset = files.csv_input_fn(_csv_params(str(tmp_path)))
  _assert_spec(dataset, [None, 2], tf.float32, [None], tf.float32)
  x, y, _ = _collect(dataset)
  assert _multiset(x, y) == _multiset(rows[:, :2], rows[:, 2])

  dataset = files.csv_input_fn(_csv_params(
      str(tmp_path), feature_columns=['b', 'a'], label_dtype='int64'))
  _assert_spec(dataset, [None, 2], tf.float32, [None], tf.int64)
  x, y, _ = _collect(dataset)
  assert _multiset(x, y.astype(np.float32)) == _multiset(
      rows[:, [1, 0]], rows[:, 2])


def test_csv_two_pipelines_see_each_row_once(tmp_path):
  _csv_files(str(tmp_path))
  _assert_exactly_once_across_pipelines(files.csv_input_fn,
                                        _csv_params(str(tmp_path)))


def test_csv_errors(tmp_path):
  _csv_files(str(tmp_path))
  with pytest.raises(ert.InputFnError, match=r"params\['file_pattern'\]"):
    files.csv_input_fn({'batch_size': 4})
  with pytest.raises(ert.InputFnError, match='matched no files'):
    files.csv_input_fn(_csv_params(
        str(tmp_path), file_pattern=os.path.join(str(tmp_path), '*.nope')))
  with pytest.raises(ert.InputFnError, match=r"label_column'\]='y'.*'a'"):
    files.csv_input_fn(_csv_params(str(tmp_path), label_column='y'))
  with pytest.raises(ert.InputFnError, match=r"unknown: \['c'\]"):
    files.csv_input_fn(_csv_params(str(tmp_path), feature_columns=['a', 'c']))
  _write_csv(os.path.join(str(tmp_path), 'part-9.csv'), ['a', 'label', 'b'],
             [[1, 2, 3]])
  with pytest.raises(ert.InputFnError, match='same columns'):
    files.csv_input_fn(_csv_params(str(tmp_path)))


# --- TFDS --------------------------------------------------------------------


class EstimatorRtTinyImages(tfds.core.GeneratorBasedBuilder):
  """A 3-class data set of 4x4 images, built locally by TFDS for the tests.

  Image i is filled with the value i, so an image identifies its example.
  """

  VERSION = tfds.core.Version('1.0.0')

  def _info(self):
    return tfds.core.DatasetInfo(
        builder=self,
        features=tfds.features.FeaturesDict({
            'image': tfds.features.Image(shape=(4, 4, 1)),
            'label': tfds.features.ClassLabel(num_classes=3),
        }))

  def _split_generators(self, dl_manager):
    del dl_manager  # Nothing to download.
    return {'train': self._generate_examples(30),
            'test': self._generate_examples(9)}

  def _generate_examples(self, n):
    for i in range(n):
      yield i, {'image': np.full((4, 4, 1), i, np.uint8), 'label': i % 3}


@pytest.fixture(scope='module')
def tiny_tfds_dir(tmp_path_factory):
  """A data_dir holding EstimatorRtTinyImages, 2 files per split."""
  data_dir = str(tmp_path_factory.mktemp('tfds'))
  tfds.builder('estimator_rt_tiny_images', data_dir=data_dir
              ).download_and_prepare(
                  download_config=tfds.download.DownloadConfig(num_shards=2))
  return data_dir


def _tfds_params(data_dir, **overrides):
  params = {'dataset': 'estimator_rt_tiny_images', 'data_dir': data_dir,
            'batch_size': 4, 'shuffle': False, 'repeat': False}
  params.update(overrides)
  return params


def _image_ids(dataset):
  return [int(round(v * 255)) for f, _ in dataset
          for v in f['x'].numpy()[:, 0, 0, 0]]


def test_tfds_local_dataset_spec_and_values(tiny_tfds_dir):
  dataset = tfds_input.tfds_input_fn(_tfds_params(tiny_tfds_dir))
  _assert_spec(dataset, [None, 4, 4, 1], tf.float32, [None], tf.int64)
  x, y, _ = _collect(dataset)
  ids = np.round(x[:, 0, 0, 0] * 255).astype(int)
  assert sorted(ids) == list(range(30))
  np.testing.assert_array_equal(y, ids % 3)
  assert x.max() <= 1.0
  raw = tfds_input.tfds_input_fn(_tfds_params(tiny_tfds_dir, normalize=False))
  assert raw.element_spec[0]['x'].dtype == tf.uint8


@pytest.mark.parametrize('num_pipelines', [2, 3])
def test_tfds_pipelines_see_each_example_once(tiny_tfds_dir, num_pipelines):
  # 2 pipelines shard the 2 files; 3 pipelines (more than files) use
  # tfds.even_splits instead.
  params = _tfds_params(tiny_tfds_dir, batch_size=2 * num_pipelines)
  seen = []
  for i in range(num_pipelines):
    dataset = tfds_input.tfds_input_fn(params, _context(i, num_pipelines))
    assert max(len(l) for _, l in dataset) == 2  # per-replica batch
    part = _image_ids(dataset)
    assert 0 < len(part) < 30
    seen += part
  assert sorted(seen) == list(range(30))


def test_tfds_shuffle_is_deterministic_given_the_seed(tiny_tfds_dir):
  def order(seed):
    return _image_ids(tfds_input.tfds_input_fn(
        _tfds_params(tiny_tfds_dir, shuffle=True, seed=seed)))

  assert order(3) == order(3)
  assert sorted(order(3)) == list(range(30))
  assert order(3) != list(range(30))


def test_tfds_mock_mnist():
  with tfds.testing.mock_data(num_examples=10):
    dataset = tfds_input.tfds_input_fn(
        {'dataset': 'mnist', 'batch_size': 4, 'repeat': False})
    _assert_spec(dataset, [None, 28, 28, 1], tf.float32, [None], tf.int64)
    x, y, sizes = _collect(dataset)
    assert sizes == [4, 4, 2]
    assert x.min() >= 0.0 and x.max() <= 1.0
    assert y.min() >= 0 and y.max() < 10
    repeated = tfds_input.tfds_input_fn(
        {'dataset': 'mnist', 'batch_size': 4, 'split': 'test'}, _context(1))
    _assert_spec(repeated, [2, 28, 28, 1], tf.float32, [2], tf.int64)
    assert len(list(repeated.take(8))) == 8


def test_tfds_errors(tmp_path):
  with pytest.raises(ert.InputFnError, match=r"params\['dataset'\]"):
    tfds_input.tfds_input_fn({'batch_size': 4})
  with pytest.raises(ert.InputFnError,
                     match="'estimator_rt_no_such_dataset' is not a TFDS"):
    tfds_input.tfds_input_fn({'dataset': 'estimator_rt_no_such_dataset',
                              'batch_size': 4})
  empty = str(tmp_path)
  with pytest.raises(ert.InputFnError, match='tfds build') as info:
    tfds_input.tfds_input_fn({'dataset': 'mnist', 'data_dir': empty,
                              'batch_size': 4})
  assert "'mnist'" in str(info.value) and empty in str(info.value)
  with pytest.raises(ert.InputFnError, match=r"feature_key'\]='pixels'"):
    tfds_input.tfds_input_fn({'dataset': 'mnist', 'data_dir': empty,
                              'batch_size': 4, 'feature_key': 'pixels'})


@pytest.mark.parametrize('split,batch_size,size', [
    ('train', 31, 30), ('test', 10, 9), ('train[:10]', 11, 10)])
def test_tfds_refuses_a_batch_larger_than_the_split(tiny_tfds_dir, split,
                                                     batch_size, size):
  with pytest.raises(ert.InputFnError) as raised:
    tfds_input.tfds_input_fn(_tfds_params(tiny_tfds_dir, split=split,
                                          batch_size=batch_size))
  message = str(raised.value)
  assert f"params['batch_size']={batch_size} is larger than" in message
  assert f'split {split!r} ({size} examples)' in message
  # The whole split in one batch is fine.
  dataset = tfds_input.tfds_input_fn(_tfds_params(tiny_tfds_dir, split=split,
                                                  batch_size=size))
  assert [len(y) for _, y in dataset] == [size]
