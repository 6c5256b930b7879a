"""The checkpoint check accepts every layout tf.estimator 2.15 wrote, and
still finds damage.

scripts/tf_estimator_215/checkpoint_corpus.py wrote the corpus twice: with
tf.estimator 2.15 (tests/data/tf_estimator_215/checkpoints/) and with
estimator_rt (tests/data/runtime_checkpoints/), the same programs:
partitioned variables (three partitioners; v1 canned input layers, linear
models, embeddings) times every optimizer's slots (the v1 ones, SDCA,
Keras 2's legacy and new), moving-average shadows, a partitioned table on
two ps tasks saved in two shards, TPUEstimator embedding tables, variables
holding infinities. Each manifest records what TensorFlow's own restore
(the .meta's Saver) read from each checkpoint.

Here every checkpoint passes `checkpoints.problem_with`, and TensorFlow's
Saver restores the recorded slices to the recorded values; then copies are
damaged (data truncated, overwritten inside a partitioned tensor's slice,
a data shard deleted, the index garbage or truncated, a NaN written into a
slice) and each is still found unusable, while an infinity written into a
slice is not (see `checkpoints._holds_nan`). Nothing trains: the test only
reads the committed files and copies of them.
"""

import gzip
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from estimator_rt.core import checkpoint_slices
from estimator_rt.core import checkpoints
from scripts.tf_estimator_215 import checkpoint_corpus as corpus

ROOTS = {'tf215': corpus.REFERENCE_ROOT, 'runtime': corpus.RUNTIME_ROOT}


def _manifest(source):
  with open(os.path.join(ROOTS[source], 'manifest.json')) as f:
    return json.load(f)


MANIFESTS = {source: _manifest(source) for source in ROOTS}
CASES = [(source, name) for source in sorted(ROOTS)
         for name in sorted(MANIFESTS[source]['cases'])]
SHARDED = 'ps_sharded_partitioned_adagrad'


def test_the_corpus_covers_every_layout_from_both_writers():
  """Both writers wrote every case; the layouts are what they say."""
  assert set(MANIFESTS['tf215']['cases']) == set(corpus._cases())
  assert set(MANIFESTS['runtime']['cases']) == set(corpus._cases())
  assert MANIFESTS['tf215']['written_by'].startswith('tf.estimator 2.15')
  assert MANIFESTS['runtime']['written_by'].startswith('estimator_rt')
  for source in ROOTS:
    cases = MANIFESTS[source]['cases']
    for name, case in cases.items():
      offsets = {tuple(v['offset']) for v in case['variables'] if v['offset']}
      if 'partitioned' in name:
        assert len(offsets) > 1, (source, name)
    shards = os.listdir(os.path.join(ROOTS[source], SHARDED))
    assert sum('.data-' in n for n in shards) == 2, shards
    held = {v['name']: v['sum'] for v in cases['infinities']['variables']}
    assert held['best_loss'] == np.inf and held['mask'] == -np.inf


def _copy(source, name, target):
  """The case's checkpoint copied into `target` (gunzipped); its prefix."""
  case_dir = os.path.join(ROOTS[source], name)
  os.makedirs(target, exist_ok=True)
  for file_name in os.listdir(case_dir):
    path = os.path.join(case_dir, file_name)
    if file_name.endswith('.gz'):
      with gzip.open(path) as f, open(
          os.path.join(target, file_name[:-3]), 'wb') as out:
        out.write(f.read())
    else:
      shutil.copy(path, target)
  return os.path.join(target,
                      MANIFESTS[source]['cases'][name]['checkpoint'])


def _restore_recorded(prefix, variables):
  """Restores `variables` (the manifest's records) from `prefix` with
  TensorFlow's Saver, each part by its slice as a partitioned variable's
  parts restore; returns their values."""
  graph = tf.Graph()
  with graph.as_default():
    made = []
    for record in variables:
      variable = tf.compat.v1.Variable(
          tf.zeros(record['shape'], record['dtype']), name=record['name'])
      if record['offset'] is not None:
        variable._set_save_slice_info(tf.Variable.SaveSliceInfo(  # pylint: disable=protected-access
            record['key'], record['full_shape'], record['offset'],
            record['shape']))
      made.append(variable)
    saver = tf.compat.v1.train.Saver(var_list=made)
    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf.compat.v1.Session(config=config) as session:
      saver.restore(session, prefix)
      return session.run(made)


@pytest.mark.parametrize('source, name', CASES)
def test_every_checkpoint_is_usable_and_restores_as_recorded(
    tmp_path, source, name):
  prefix = _copy(source, name, str(tmp_path))
  assert checkpoints.problem_with(prefix) is None
  variables = MANIFESTS[source]['cases'][name]['variables']
  for record, value in zip(variables,
                           _restore_recorded(prefix, variables)):
    assert value.shape == tuple(record['shape']), record['name']
    assert float(np.sum(value, dtype=np.float64)) == record['sum'], (
        record['name'])
    if record['first'] is not None:
      assert float(value.flat[0]) == record['first'], record['name']


def test_a_partitioned_slot_is_read_by_its_slices_as_2_15_read_it(tmp_path):
  """The issue's layout: a v1 DNN's partitioned embedding and its Adagrad
  slots. A slot's key holds only its part's rows: read whole, as
  tf.estimator 2.15's get_variable_value read it, it fails as it did; the
  check reads its one stored slice, as a restore does."""
  prefix = _copy('tf215', 'dnn_v1_partitioned_adagrad', str(tmp_path))
  embedding = ('dnn/input_from_feature_columns/input_layer/x_embedding/'
               'embedding_weights')
  opened = checkpoints.reader(prefix)
  slices = checkpoint_slices.stored_slices(opened)
  assert slices[embedding] == ['7 4 0,4:0,4', '7 4 4,3:0,4']
  assert slices[embedding + '/t_0/Adagrad'] == ['7 4 0,4:0,4']
  assert slices[embedding + '/t_1/Adagrad'] == ['7 4 4,3:0,4']
  assert opened.get_tensor(embedding).shape == (7, 4)
  with pytest.raises(ValueError, match='Does not have sufficient slices'):
    opened.get_tensor(embedding + '/t_0/Adagrad')
  reader = checkpoint_slices.SliceReader(prefix=prefix)
  (rows,) = reader.read(embedding + '/t_1/Adagrad', ['7 4 4,3:0,4'],
                        tf.float32)
  reader.close()
  assert rows.shape == (3, 4) and np.all(rows > 0)
  assert checkpoints.problem_with(prefix) is None


def test_slice_keys_decode_at_any_offset(tmp_path):
  """Slices far into huge tensors (OrderedCode's multi-byte numbers, up to
  an offset of 2**60; a tensor of 2**63 elements or more aborts
  TensorFlow's own reader) decode to the specs they were saved with."""
  specs = {f'v{i}': f'{full} 2 {start},1:-'
           for i, (full, start) in enumerate([
               (100, 63), (1000, 64), (10 ** 5, 8191), (10 ** 5, 8192),
               (2 ** 30, 2 ** 20 + 3), (2 ** 41, 2 ** 40),
               (2 ** 61, 2 ** 60 + 5)])}
  prefix = str(tmp_path / 'far')
  names = sorted(specs)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                    shape_and_slices=[specs[n] for n in names],
                    tensors=[tf.fill([1, 2], float(i))
                             for i, _ in enumerate(names)])
  found = checkpoint_slices.stored_slices(checkpoints.reader(prefix))
  assert found == {name: [spec] for name, spec in specs.items()}
  assert checkpoints.problem_with(prefix) is None


# ---------------------------------------------------------------- damage
def _data_files(prefix):
  return sorted(tf.io.gfile.glob(prefix + '.data-*'))


def _sliced_bytes(prefix):
  """(data file, [offsets], length) of the bytes of a partitioned tensor's
  stored slice: every place they occur (SDCA keeps a copy of each part
  beside it), so that flipping a byte at each damages the slice."""
  opened = checkpoints.reader(prefix)
  dtypes = opened.get_variable_to_dtype_map()
  reader = checkpoint_slices.SliceReader(prefix=prefix)
  try:
    for key, specs in sorted(checkpoint_slices.stored_slices(opened).items()):
      if dtypes[key] != tf.float32 or len(specs) < 2:
        continue
      for spec in specs:
        (value,) = reader.read(key, [spec], tf.float32)
        content = np.ascontiguousarray(value).tobytes()
        if len(set(content)) < 2:
          continue  # All zeros: could be any tensor's bytes.
        for path in _data_files(prefix):
          data = open(path, 'rb').read()
          offsets, at = [], data.find(content)
          while at >= 0:
            offsets.append(at)
            at = data.find(content, at + 1)
          if offsets:
            return path, offsets, len(content)
  finally:
    reader.close()
  raise AssertionError(f'no partitioned tensor found in {prefix}')


def _overwrite_slice(prefix):
  path, offsets, length = _sliced_bytes(prefix)
  with open(path, 'r+b') as f:
    for offset in offsets:
      f.seek(offset + length // 2)
      byte = f.read(1)
      f.seek(offset + length // 2)
      f.write(bytes([byte[0] ^ 0x5a]))


def _truncate(path, keep_fraction):
  size = os.path.getsize(path)
  with open(path, 'r+b') as f:
    f.truncate(int(size * keep_fraction))


def _rewrite_with(prefix, value):
  """Saves the checkpoint again with TensorFlow's SaveV2, slices as
  slices, the last element of the first slice of the first tensor stored
  in several slices set to `value`."""
  opened = checkpoints.reader(prefix)
  dtypes = opened.get_variable_to_dtype_map()
  sliced = checkpoint_slices.stored_slices(opened)
  reader = checkpoint_slices.SliceReader(prefix=prefix)
  names, specs, tensors, poisoned = [], [], [], False
  for key in sorted(opened.get_variable_to_shape_map()):
    key_specs = sliced.get(key, [''])
    values = reader.read(key, key_specs, dtypes[key])
    for spec, array in zip(key_specs, values):
      if len(key_specs) > 1 and not poisoned and dtypes[key] == tf.float32:
        array = np.array(array)
        array.flat[-1] = value
        poisoned = True
      names.append(key)
      specs.append(spec)
      tensors.append(tf.constant(array, dtype=dtypes[key]))
  reader.close()
  assert poisoned, prefix
  for path in tf.io.gfile.glob(prefix + '.*'):
    tf.io.gfile.remove(path)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                    shape_and_slices=specs, tensors=tensors)


DAMAGE = {
    'truncated data': lambda p: _truncate(_data_files(p)[0], 0.5),
    'overwritten slice': _overwrite_slice,
    'deleted data shard': lambda p: os.remove(_data_files(p)[-1]),
    'garbage index': lambda p: open(p + '.index', 'wb').write(
        np.random.RandomState(0).bytes(300)),
    'truncated index': lambda p: _truncate(p + '.index', 0.6),
    'NaN in a slice': lambda p: _rewrite_with(p, np.nan),
}
# What each damage is reported as.
FOUND_AS = {
    'truncated data': 'cannot be read', 'overwritten slice': 'cannot be read',
    'deleted data shard': 'cannot be read',
    'garbage index': 'index file cannot be read',
    'truncated index': 'index file cannot be read',
    'NaN in a slice': 'holds NaN values',
}
PARTITIONED = [(source, name) for source, name in CASES
               if 'partitioned' in name]


@pytest.mark.parametrize('damage', sorted(DAMAGE))
def test_damaged_copies_are_found_damaged(tmp_path, damage):
  """Each damage, on a copy of every partitioned checkpoint of the corpus
  (the sharded one loses its second shard), is found."""
  missed = []
  for source, name in PARTITIONED:
    if damage == 'deleted data shard' and name != SHARDED:
      continue
    prefix = _copy(source, name, str(tmp_path / source / name))
    DAMAGE[damage](prefix)
    problem = checkpoints.problem_with(prefix)
    if problem is None or FOUND_AS[damage] not in problem:
      missed.append((source, name, problem))
  assert not missed


def test_an_infinity_in_a_slice_is_a_value_not_damage(tmp_path):
  """2.15 saved and restored infinities; so does the check accept them (a
  NaN it refuses, above)."""
  prefix = _copy('tf215', 'dnn_v1_partitioned_adagrad', str(tmp_path))
  _rewrite_with(prefix, -np.inf)
  assert checkpoints.problem_with(prefix) is None
  values = checkpoints.reader(prefix).get_tensor(
      'dnn/input_from_feature_columns/input_layer/x_embedding/'
      'embedding_weights')
  assert np.isneginf(values).sum() == 1
