"""input_fn for a TensorFlow Datasets (TFDS) data set already on local disk.

It never downloads (`download=False` always: training machines may have no
network, and a job should not start fetching gigabytes as a side effect).
Prepare the data beforehand, e.g. `tfds build mnist --data_dir=DIR` on a
machine with network access, and point params['data_dir'] at DIR.

Sharding with an input context is by file, through TFDS's own
`ReadConfig(input_context=...)`. A split stored in fewer files than there
are input pipelines cannot be sharded that way (TFDS refuses), so it is
split instead with `tfds.even_splits`: each pipeline then reads its own
contiguous range of examples. Either way the pipelines together see every
example once per epoch.
"""

from typing import Any, Mapping, Optional

import tensorflow as tf
import tensorflow_datasets as tfds

from estimator_rt.core.errors import InputFnError
from . import _common

_NAME = 'input_fns.tfds.tfds_input_fn'


def _num_files(builder: tfds.core.DatasetBuilder, split: str) -> Optional[int]:
  """Files holding `split`, or None when the builder does not know."""
  try:
    return len(builder.info.splits[split].file_instructions)
  except (KeyError, ValueError):
    # The split metadata is only there once the data is prepared (and
    # TFDS's mock_data has none); TFDS itself then decides at read time.
    return None


def _num_examples(builder: tfds.core.DatasetBuilder,
                  split: str) -> Optional[int]:
  """Examples in `split` (a split expression too, e.g. 'train[:10%]') from
  the prepared data's metadata, or None when the builder does not know."""
  try:
    return int(builder.info.splits[split].num_examples) or None
  except Exception:  # pylint: disable=broad-except
    # No metadata before the data is prepared (or under TFDS's mock_data),
    # and a malformed split expression is reported by tfds.load below.
    return None


def tfds_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """Loads a prepared TFDS data set: ({'x': features}, labels) batches.

  Params:
    dataset: the TFDS name, e.g. 'mnist' or 'mnist:3.0.1' (required).
    split: a TFDS split expression, e.g. 'train' (default) or 'test[:10%]'.
    data_dir: where the prepared data lives (default None: TFDS's default,
      ~/tensorflow_datasets or $TFDS_DATA_DIR).
    feature_key: the feature returned as features['x'] (default 'image').
    label_key: the feature returned as labels (default 'label'); None gives
      a dataset of features only.
    normalize: cast uint8 features to float32 and divide by 255, giving
      values in [0, 1] (default True). Features of other dtypes need
      normalize=False and are then returned as stored.
    batch_size: the GLOBAL batch size (required): an integer in [1, 2**24],
      and at most the examples of the split when its metadata says how
      many there are (prepared data does; without it only the first bound
      is checked).
    shuffle: shuffle file order and examples (default True, which suits
      training; pass False for evaluation).
    shuffle_buffer: examples in the shuffle buffer (default 10000).
    seed: shuffle seed (default None: a different order every run).
    repeat: True (default) repeats forever; False makes one pass.
    num_epochs: number of passes; overrides 'repeat' when given.
    drop_remainder: see `input_fns._common.shard_and_batch`.

  Raises:
    InputFnError: 'dataset' missing or unknown to TFDS, its data not
      prepared in data_dir, or feature_key/label_key not among its
      features.
  """
  params = _common.check_params(_NAME, params)
  _common.global_batch_size(_NAME, params)  # Before TFDS reads anything.
  dataset_name = _common.required(_NAME, params, 'dataset')
  split = params.get('split', 'train')
  data_dir = params.get('data_dir')
  feature_key = params.get('feature_key', 'image')
  label_key = params.get('label_key', 'label')
  normalize = _common.bool_param(_NAME, params, 'normalize', True)
  shuffle = _common.bool_param(_NAME, params, 'shuffle', True)
  seed = _common.int_param(_NAME, params, 'seed', None, minimum=0)

  try:
    builder = tfds.builder(dataset_name, data_dir=data_dir)
  except tfds.core.DatasetNotFoundError as e:
    # TFDS's own message lists every registered data set; keep ours short.
    raise InputFnError(
        f"{_NAME}: params['dataset']={dataset_name!r} is not a TFDS data set "
        f'known here (data_dir={data_dir!r}). Check the name, or prepare it '
        'beforehand with `tfds build`.') from e
  features_info = builder.info.features
  for key_param, key in (('feature_key', feature_key), ('label_key',
                                                         label_key)):
    if key is not None and key not in features_info:
      raise InputFnError(
          f'{_NAME}: params[{key_param!r}]={key!r} is not a feature of '
          f'{dataset_name!r}; its features are {sorted(features_info)}.')
  if normalize and features_info[feature_key].tf_dtype != tf.uint8:
    raise InputFnError(
        f"{_NAME}: params['normalize']=True scales uint8 images, but "
        f'{dataset_name!r} feature {feature_key!r} has dtype '
        f'{features_info[feature_key].tf_dtype.name}; pass normalize=False.')

  _common.global_batch_size(
      _NAME, params, num_examples=_num_examples(builder, split),
      data=f'{dataset_name!r} split {split!r}')

  read_config = tfds.ReadConfig(shuffle_seed=seed)
  pipelines = input_context.num_input_pipelines if input_context else 1
  if pipelines > 1:
    num_files = _num_files(builder, split)
    if num_files is None or num_files >= pipelines:
      read_config = tfds.ReadConfig(shuffle_seed=seed,
                                    input_context=input_context)
    else:
      split = tfds.even_splits(split, n=pipelines)[
          input_context.input_pipeline_id]

  try:
    dataset = tfds.load(dataset_name, split=split, data_dir=data_dir,
                        download=False, as_supervised=False,
                        shuffle_files=shuffle, read_config=read_config)
  except AssertionError as e:
    # This is how TFDS says the data was never prepared in data_dir.
    if 'could not find data' not in str(e):
      raise
    raise InputFnError(
        f'{_NAME}: TFDS data set {dataset_name!r} has no prepared data in '
        f'data_dir={data_dir!r} (looked in {builder.data_dir}), and this '
        'input_fn never downloads. Prepare it beforehand, e.g. `tfds build '
        f'{dataset_name} --data_dir=DIR` on a machine with network access, '
        "and set params['data_dir'] to DIR.") from e

  def select(example):
    # Drop the other features before batching: they may not batch (ids,
    # variable-size fields) and would be read for nothing.
    if label_key is None:
      return example[feature_key]
    return example[feature_key], example[label_key]

  def to_model_inputs(*batch):
    x = tf.cast(batch[0], tf.float32) / 255.0 if normalize else batch[0]
    if label_key is None:
      return {_common.FEATURES_KEY: x}
    return {_common.FEATURES_KEY: x}, batch[1]

  dataset = dataset.map(select, num_parallel_calls=tf.data.AUTOTUNE)
  return _common.shard_and_batch(
      dataset, name=_NAME, params=params, input_context=input_context,
      epochs=_common.num_epochs(_NAME, params, repeat_default=True),
      shuffle_buffer=(_common.int_param(_NAME, params, 'shuffle_buffer',
                                        10000) if shuffle else 0),
      seed=seed, already_sharded=True, map_batch_fn=to_model_inputs)
