"""input_fns that read TFRecord and CSV files, plus a TFRecord writer.

Both input_fns list the files matching params['file_pattern'] in a fixed
(sorted) order with `tf.data.Dataset.list_files(..., shuffle=False)`, read
them with an interleave, and parse whole batches at once (vectorized
parsing is much cheaper than one parse per record).

Sharding with an input context is BY FILE: pipeline i reads files i, i + n,
... of the sorted list, so no pipeline reads a byte it then throws away.
That needs at least as many files as pipelines; with fewer, every pipeline
reads every file and keeps every n-th record instead (correct, but n times
the reading), and a warning says so. Without an input context the dataset
is left unsharded and, since its source is a file list, the runtime's FILE
auto-shard policy can shard it the same way.

Params common to both input_fns:
  file_pattern: a glob or list of globs (required).
  batch_size: the GLOBAL batch size (required). The number of records is
    not known without reading every file, so it is not checked against
    the data: a batch_size above the records of one pass gives one short
    batch per pass (or, repeating with drop_remainder, batches spanning
    passes). Values that are not integers in [1, 2**24] are refused
    (`input_fns._common.MAX_BATCH_SIZE`), before any file is opened.
  shuffle: shuffle file order and records (default True, which suits
    training; pass False for evaluation).
  shuffle_buffer: records in the shuffle buffer (default 10000).
  seed: shuffle seed (default None: a different order every run).
  repeat: True (default) repeats forever; False makes one pass.
  num_epochs: number of passes; overrides 'repeat' when given.
  drop_remainder: see `input_fns._common.shard_and_batch`.
"""

import csv
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.core.errors import InputFnError
from . import _common

_DTYPES = {'float32': tf.float32, 'int64': tf.int64, 'string': tf.string}


def _match_files(name: str, params: Mapping[str, Any]) -> List[str]:
  """Returns the sorted, distinct files matching params['file_pattern'].

  Raises:
    InputFnError: 'file_pattern' is missing or matches no file.
  """
  pattern = _common.required(name, params, 'file_pattern')
  patterns = [pattern] if isinstance(pattern, (str, os.PathLike)) else list(
      pattern)
  patterns = [os.fspath(p) for p in patterns]
  files = sorted({f for p in patterns for f in tf.io.gfile.glob(p)})
  if not files:
    raise InputFnError(
        f"{name}: params['file_pattern']={pattern!r} matched no files.")
  return files


def _records(name: str, params: Mapping[str, Any],
             input_context: Optional[tf.distribute.InputContext],
             reader) -> Tuple[tf.data.Dataset, bool]:
  """Returns (records of this pipeline's files, whether sharded by file).

  `reader` maps a file name to a dataset of its records. Shards by file when
  there are enough files (see the module docstring); otherwise the records
  are left unsharded for `shard_and_batch` to shard one by one.
  """
  files = _match_files(name, params)
  shuffle = _common.bool_param(name, params, 'shuffle', True)
  seed = _common.int_param(name, params, 'seed', None, minimum=0)
  pipelines = input_context.num_input_pipelines if input_context else 1
  by_file = pipelines > 1 and len(files) >= pipelines
  if pipelines > 1 and not by_file:
    logging.warning(
        '%s: %d file(s) for %d input pipelines; every pipeline reads every '
        'file and keeps 1/%d of the records. Write at least %d files to '
        'shard by file.', name, len(files), pipelines, pipelines, pipelines)

  # The matched names rather than the patterns: overlapping patterns would
  # otherwise list a file twice. Unshuffled, list_files sorts them, so every
  # pipeline agrees on which file is whose.
  file_names = tf.data.Dataset.list_files(files, shuffle=False)
  if by_file:
    file_names = file_names.shard(pipelines, input_context.input_pipeline_id)
  if shuffle and (by_file or pipelines == 1):
    # Not when records are sharded one by one: every pipeline must then see
    # the records in the same order for `shard` to partition them, and
    # unseeded shuffles differ between pipelines. The record shuffle after
    # sharding still mixes each pipeline's records.
    file_names = file_names.shuffle(len(files), seed=seed,
                                    reshuffle_each_iteration=True)
  records = file_names.interleave(
      reader, cycle_length=min(len(files), 8),
      num_parallel_calls=tf.data.AUTOTUNE)
  return records, by_file


def _finish(name: str, params: Mapping[str, Any],
            input_context: Optional[tf.distribute.InputContext],
            records: tf.data.Dataset, by_file: bool,
            parse_batch) -> tf.data.Dataset:
  shuffle = _common.bool_param(name, params, 'shuffle', True)
  return _common.shard_and_batch(
      records, name=name, params=params, input_context=input_context,
      epochs=_common.num_epochs(name, params, repeat_default=True),
      shuffle_buffer=(_common.int_param(name, params, 'shuffle_buffer', 10000)
                      if shuffle else 0),
      seed=_common.int_param(name, params, 'seed', None, minimum=0),
      already_sharded=by_file, map_batch_fn=parse_batch)


def _parse_spec(name: str, feature_spec: Any) -> Dict[str, Any]:
  """Turns params['feature_spec'] into tf.io.FixedLenFeature objects."""
  if not isinstance(feature_spec, Mapping) or not feature_spec:
    raise InputFnError(
        f"{name}: params['feature_spec'] must be a non-empty dict name -> "
        f"{{'shape': [...], 'dtype': 'float32'|'int64'|'string'}}, got "
        f'{feature_spec!r}.')
  spec = {}
  for key, entry in feature_spec.items():
    if isinstance(entry, tf.io.FixedLenFeature):
      spec[key] = entry
      continue
    if not isinstance(entry, Mapping) or entry.get('dtype') not in _DTYPES:
      raise InputFnError(
          f"{name}: params['feature_spec'][{key!r}] must be a dict with "
          f"'dtype' in {sorted(_DTYPES)} and 'shape' (a list), got "
          f'{entry!r}.')
    shape = entry.get('shape', [])
    if not isinstance(shape, (list, tuple)) or not all(
        isinstance(d, int) and d > 0 for d in shape):
      raise InputFnError(
          f"{name}: params['feature_spec'][{key!r}]['shape'] must be a list "
          f'of positive integers, got {shape!r}.')
    spec[key] = tf.io.FixedLenFeature(list(shape), _DTYPES[entry['dtype']])
  return spec


def tfrecord_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """Reads tf.train.Example records: (features dict, labels) batches.

  Params (besides the common ones in the module docstring):
    feature_spec: dict name -> {'shape': [...], 'dtype': 'float32' |
      'int64' | 'string'} (or a tf.io.FixedLenFeature) for every key to
      parse, the label included (required). `infer_feature_spec` builds
      one from arrays.
    label_key: the key parsed as labels and removed from the features
      (default 'label'); None gives a dataset of features only.

  Returns:
    A dataset of (features, labels): features maps every non-label key of
    feature_spec to a [batch, *shape] tensor; labels is [batch, *shape].

  Raises:
    InputFnError: file_pattern or feature_spec missing or invalid, no file
      matching, or label_key not in feature_spec.
  """
  name = 'input_fns.files.tfrecord_input_fn'
  params = _common.check_params(name, params)
  _common.global_batch_size(name, params)  # Before any file is read.
  spec = _parse_spec(name, _common.required(name, params, 'feature_spec'))
  label_key = params.get('label_key', 'label')
  if label_key is not None and label_key not in spec:
    raise InputFnError(
        f"{name}: params['label_key']={label_key!r} is not a key of "
        f"params['feature_spec'] ({sorted(spec)}).")
  records, by_file = _records(name, params, input_context,
                              tf.data.TFRecordDataset)

  def parse_batch(serialized):
    features = tf.io.parse_example(serialized, spec)
    if label_key is None:
      return features
    labels = features.pop(label_key)
    return features, labels

  return _finish(name, params, input_context, records, by_file, parse_batch)


def _read_header(name: str, path: str, delimiter: str) -> List[str]:
  with tf.io.gfile.GFile(path, 'r') as f:
    line = f.readline()
  row = next(csv.reader([line], delimiter=delimiter), [])
  columns = [c.strip() for c in row]
  if not columns or not any(columns):
    raise InputFnError(
        f'{name}: {path} has no header line; the first line must name the '
        'columns.')
  return columns


def csv_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """Reads CSV files with a header line: ({'x': float32 [b, d]}, labels).

  Every matched file must start with the same header line. Fields of the
  used columns must not be empty (an empty one is an error at read time,
  rather than being silently read as 0). Blank lines are skipped.

  Params (besides the common ones in the module docstring):
    label_column: the column read as labels (default 'label').
    label_dtype: 'float32' (default, for regression), 'int64' or 'string'.
      The bundled classifiers (model_fns.mlp, model_fns.cnn) take integer
      class ids: pass 'int64' for them.
    feature_columns: the columns stacked, in this order, into features['x']
      as float32 (default: every column but the label, in file order).
    field_delim: default ','.

  Raises:
    InputFnError: file_pattern missing or matching no file, a file without
      the same header, or a named column that is not in the header.
  """
  name = 'input_fns.files.csv_input_fn'
  params = _common.check_params(name, params)
  _common.global_batch_size(name, params)  # Before any file is read.
  delimiter = params.get('field_delim', ',')
  files = _match_files(name, params)
  header = _read_header(name, files[0], delimiter)
  for path in files[1:]:
    other = _read_header(name, path, delimiter)
    if other != header:
      raise InputFnError(
          f'{name}: {path} has header {other}, but {files[0]} has {header}; '
          'all files must have the same columns.')

  label_column = params.get('label_column', 'label')
  if label_column not in header:
    raise InputFnError(
        f"{name}: params['label_column']={label_column!r} is not a column "
        f'of {files[0]} (header: {header}).')
  label_dtype = params.get('label_dtype', 'float32')
  if label_dtype not in _DTYPES:
    raise InputFnError(
        f"{name}: params['label_dtype'] must be one of {sorted(_DTYPES)}, "
        f'got {label_dtype!r}.')
  feature_columns = params.get('feature_columns')
  if feature_columns is None:
    feature_columns = [c for c in header if c != label_column]
  missing = [c for c in feature_columns if c not in header]
  if missing or not feature_columns or label_column in feature_columns:
    raise InputFnError(
        f"{name}: params['feature_columns']={feature_columns!r} must be a "
        f'non-empty list of columns of the header {header}, without the '
        f'label column {label_column!r}' +
        (f'; unknown: {missing}.' if missing else '.'))

  # decode_csv wants the selected columns in file order; remember where each
  # one lands so the features can be stacked in the requested order.
  wanted = {header.index(c): c for c in [*feature_columns, label_column]}
  select_cols = sorted(wanted)
  # An empty default tensor marks a field as required.
  defaults = [
      tf.constant([], _DTYPES[label_dtype])
      if wanted[i] == label_column else tf.constant([], tf.float32)
      for i in select_cols
  ]
  position = {wanted[i]: k for k, i in enumerate(select_cols)}

  def read_lines(path):
    lines = tf.data.TextLineDataset(path).skip(1)  # the header
    return lines.filter(lambda l: tf.strings.length(tf.strings.strip(l)) > 0)

  records, by_file = _records(name, params, input_context, read_lines)

  def parse_batch(lines):
    fields = tf.io.decode_csv(lines, record_defaults=defaults,
                              field_delim=delimiter, select_cols=select_cols)
    x = tf.stack([fields[position[c]] for c in feature_columns], axis=-1)
    return {_common.FEATURES_KEY: x}, fields[position[label_column]]

  return _finish(name, params, input_context, records, by_file, parse_batch)


def infer_feature_spec(features: Mapping[str, np.ndarray],
                       labels: Optional[np.ndarray] = None,
                       *,
                       label_key: str = 'label') -> Dict[str, Dict[str, Any]]:
  """Returns the params['feature_spec'] for data written by write_tfrecords.

  Args:
    features: dict name -> array whose first dimension is the example.
    labels: optional array of labels, one per example.
    label_key: the key the labels are stored under.
  """
  arrays = dict(features)
  if labels is not None:
    arrays[label_key] = labels
  spec = {}
  for key, array in arrays.items():
    array = np.asarray(array)
    spec[key] = {'shape': list(array.shape[1:]), 'dtype': _dtype_name(array)}
  return spec


def _dtype_name(array: np.ndarray) -> str:
  kind = array.dtype.kind
  if kind == 'f':
    return 'float32'
  if kind in 'iub':
    return 'int64'
  if kind in 'SUO':
    return 'string'
  raise ValueError(f'write_tfrecords: unsupported dtype {array.dtype}.')


def _feature(value: np.ndarray, dtype_name: str) -> tf.train.Feature:
  flat = np.asarray(value).reshape(-1)
  if dtype_name == 'float32':
    return tf.train.Feature(float_list=tf.train.FloatList(value=flat))
  if dtype_name == 'int64':
    return tf.train.Feature(int64_list=tf.train.Int64List(value=flat))
  return tf.train.Feature(bytes_list=tf.train.BytesList(
      value=[v.encode('utf-8') if isinstance(v, str) else bytes(v)
             for v in flat]))


def write_tfrecords(path: str,
                    features: Mapping[str, Sequence[Any]],
                    labels: Optional[Sequence[Any]] = None,
                    *,
                    label_key: str = 'label') -> str:
  """Writes one tf.train.Example per example to the TFRecord file `path`.

  Floats are stored as float32, integers and bools as int64, str/bytes as
  bytes; multi-dimensional values are flattened (parse them back with the
  spec from `infer_feature_spec`, which records their shape).

  Args:
    path: the file to write (overwritten).
    features: dict name -> array whose first dimension is the example.
    labels: optional labels, one per example, stored under `label_key`.
    label_key: the key for the labels; must not also be a features key.

  Returns:
    `path`.

  Raises:
    ValueError: arrays with different numbers of examples, a label_key that
      clashes with a feature, or an unsupported dtype.
  """
  arrays = {k: np.asarray(v) for k, v in features.items()}
  if labels is not None:
    if label_key in arrays:
      raise ValueError(
          f'write_tfrecords: label_key={label_key!r} is also a features key.')
    arrays[label_key] = np.asarray(labels)
  counts = {k: len(a) for k, a in arrays.items()}
  if len(set(counts.values())) > 1:
    raise ValueError(
        f'write_tfrecords: the arrays have different numbers of examples: '
        f'{counts}.')
  dtypes = {k: _dtype_name(a) for k, a in arrays.items()}
  num_examples = next(iter(counts.values()), 0)
  with tf.io.TFRecordWriter(os.fspath(path)) as writer:
    for i in range(num_examples):
      example = tf.train.Example(features=tf.train.Features(feature={
          k: _feature(a[i], dtypes[k]) for k, a in arrays.items()}))
      writer.write(example.SerializeToString())
  return os.fspath(path)
