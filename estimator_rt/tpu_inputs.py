"""What a TPU program's input_fn gives, as tf.estimator 2.15 handled it.

`Inputs` holds what an input_fn returned (features and labels, or a
dataset read through an initializable iterator); `InputsWithStoppingSignals`
marks the end of a prediction's input with a stopping batch and pads its
last batch (`StopSignals`, `PaddingSignals`); `TensorPacker` groups small
dense features into one tensor for the infeed and splits them back; and
`InputsStructureRecorder` flattens features, labels and signals into the
infeed's list of tensors and restores them, checking
TPUConfig.input_partition_dims against them. All of it is plain TensorFlow
that runs on the CPU; tf.estimator's TPU input pipeline fed its results to
the TPU infeed, which estimator_rt does not build (its served module keeps
2.15's private names for these classes).
"""

from absl import logging
import tensorflow as tf
from tensorflow.python.data.util import nest as data_nest  # pylint: disable=g-direct-tensorflow-import

from estimator_rt.errors import UserInputError

# tf.estimator's TensorPacker settings: [batch, 1] features, grouped when
# there are 5 or more of one dtype, under this key (and the dtype).
TENSOR_PACKER_SMALL_FEATURE_DIM_SIZE = 1
TENSOR_PACKER_MINIMUM_NUM_SMALL_FEATURES_TO_GROUP = 5
TENSOR_PACKER_CONCATENATED_SMALL_FEATURES_KEY = '_concatenated_small_features'


def extract_key_names(tensor_or_dict):
  """The sorted keys of a dict, [] for anything else."""
  if isinstance(tensor_or_dict, dict):
    return sorted(tensor_or_dict.keys())
  return []


class Inputs:
  """What an input_fn returned: `features` and `labels`, or a `dataset`
  read through an initializable iterator (`dataset_initializer` first)."""

  def __init__(self, features=None, labels=None, dataset=None, signals=None):
    if dataset is not None and (features is not None or labels is not None or
                                signals is not None):
      raise RuntimeError('Internal Error: Either (features and labels) or '
                         'dataset should be provided, not both.')
    self._features = features
    self._labels = labels
    self._signals = signals
    self._dataset = dataset
    self._iterator = None

  @staticmethod
  def from_input_fn(return_values):
    if isinstance(return_values, tf.data.Dataset):
      return Inputs(dataset=return_values)
    return Inputs(*Inputs._parse_inputs(return_values))

  @staticmethod
  def _parse_inputs(return_values):
    """(features, labels) of a tuple, (features, None) of anything else."""
    if isinstance(return_values, tuple):
      features, labels = return_values
      return features, labels
    return return_values, None

  @property
  def is_dataset(self):
    return self._dataset is not None

  def dataset_initializer(self):
    """The initializer of the dataset's iterator, which must run before
    `features_and_labels` is read."""
    self._iterator = tf.compat.v1.data.make_initializable_iterator(
        self._dataset)
    return self._iterator.initializer

  def features_and_labels(self):
    if self.is_dataset:
      if self._iterator is None:
        raise RuntimeError('Internal error: Must run dataset_initializer '
                           'before calling features_and_labels().')
      return Inputs._parse_inputs(self._iterator.get_next())
    return self._features, self._labels

  def signals(self):
    return self._signals

  @property
  def dataset(self):
    return self._dataset


class InputsWithStoppingSignals(Inputs):
  """A dataset's batches, each with signals: `stopping`, a [batch_size, 1]
  bool that is True only in batches appended after the input's end (the
  first batch again, so that the shapes match), and with `add_padding`
  `padding_mask`, an int32 [batch_size] that is 1 for the rows added to
  fill a short batch (all 1 in the appended batches, when
  `num_invocations_per_step` > 1 appends 2 * that - 1 of them)."""

  def __init__(self, dataset, batch_size, add_padding=False,
               num_invocations_per_step=1):
    assert dataset is not None
    marked = dataset.map(self.insert_stopping_signal(
        stop=False, batch_size=batch_size, add_padding=add_padding))
    final = dataset.take(1).map(self.insert_stopping_signal(
        stop=True, batch_size=batch_size, add_padding=add_padding))
    if num_invocations_per_step > 1:
      # Enough stopping batches that every invocation of the last step
      # sees one, however many real batches the step before took.
      final = final.repeat(2 * num_invocations_per_step - 1).map(
          mask_all_rows)
    super().__init__(dataset=marked.concatenate(final).prefetch(2))
    self._current_inputs = None

  def features_and_labels(self):
    if self._current_inputs is not None:
      raise RuntimeError(
          'Internal Error: The previous inputs have not been properly '
          'consumed. First call features_and_labels, then call signals.')
    element = self._iterator.get_next()
    self._current_inputs = element
    return element['features'], element.get('labels')

  def signals(self):
    """The signals of the batch `features_and_labels` last returned."""
    if self._current_inputs is None:
      raise RuntimeError(
          'Internal Error: The current inputs have not been properly '
          'generated. First call features_and_labels, then call signals.')
    signals = self._current_inputs['signals']
    self._current_inputs = None
    return signals

  @staticmethod
  def insert_stopping_signal(stop, batch_size, add_padding=False):
    """A dataset.map function making each element a dict of `features`,
    `labels` (when present) and `signals`."""

    def map_fn(*args):
      features, labels = Inputs._parse_inputs(args[0] if len(args) == 1
                                               else args)
      padding_mask = None
      if add_padding:
        padding_mask, features, labels = (
            PaddingSignals.pad_features_and_labels(features, labels,
                                                    batch_size))
      element = {'features': features}
      if labels is not None:
        element['labels'] = labels
      element['signals'] = StopSignals(
          stop=stop, batch_size=batch_size,
          padding_mask=padding_mask).as_dict()
      return element

    return map_fn


def mask_all_rows(element):
  signals = dict(element['signals'])
  signals['padding_mask'] = tf.ones_like(signals['padding_mask'])
  return dict(element, signals=signals)


class StopSignals:
  """The stopping signal of a batch (see InputsWithStoppingSignals)."""

  NON_STOPPING_SIGNAL = False
  STOPPING_SIGNAL = True

  def __init__(self, stop, batch_size, padding_mask=None):
    self._stop = stop
    self._batch_size = batch_size
    self._padding_mask = padding_mask

  def as_dict(self):
    fill = tf.ones if self._stop else tf.zeros
    signals = {'stopping': fill(shape=[self._batch_size, 1], dtype=tf.bool)}
    if self._padding_mask is not None:
      signals['padding_mask'] = self._padding_mask
    return signals

  @staticmethod
  def as_scalar_stopping_signal(signals):
    return tf.identity(signals['stopping'][0][0])

  @staticmethod
  def should_stop(scalar_stopping_signal):
    """Whether the signal says stop: a tensor in a graph, a bool for a
    value a hook fetched."""
    if isinstance(scalar_stopping_signal, tf.Tensor):
      return tf.math.logical_and(scalar_stopping_signal,
                                 StopSignals.STOPPING_SIGNAL)
    return bool(scalar_stopping_signal)


class PaddingSignals:
  """Pads short batches to the batch size, and slices the padding off."""

  @staticmethod
  def pad_features_and_labels(features, labels, batch_size):
    """(padding_mask, features, labels) with every tensor's batch dimension
    padded with zeros to `batch_size` (a check fails if it is larger)."""
    real_batch_size = tf.shape(PaddingSignals._find_any_tensor(features))[0]
    batch_size_tensor = tf.constant(batch_size, tf.int32)
    check = tf.compat.v1.debugging.assert_greater_equal(
        batch_size_tensor, real_batch_size,
        data=(batch_size_tensor, real_batch_size),
        message='The real batch size should not be greater than batch_size.')
    with tf.control_dependencies([check]):
      missing_count = batch_size_tensor - real_batch_size

    def pad(tensor):
      rank = len(tensor.shape)
      assert rank > 0
      padding = tf.stack([[0, missing_count]] + [[0, 0]] * (rank - 1))
      padded = tf.pad(tensor, padding)
      padded.set_shape((batch_size,) + tuple(tensor.shape[1:]))
      return padded

    features = tf.nest.map_structure(pad, features)
    if labels is not None:
      labels = tf.nest.map_structure(pad, labels)
    padding_mask = tf.concat([tf.zeros((real_batch_size,), tf.int32),
                              tf.ones((missing_count,), tf.int32)], axis=0)
    padding_mask.set_shape((batch_size,))
    return padding_mask, features, labels

  @staticmethod
  def slice_tensor_or_dict(tensor_or_dict, signals):
    """The real rows of each tensor (the padded ones sliced off), except in
    full and stopping batches, which are returned whole."""
    padding_mask = signals['padding_mask']
    batch_size = tf.shape(padding_mask)[0]

    def verify_batch_size(tensor):
      check = tf.math.equal(batch_size, tensor.shape[0])
      with tf.control_dependencies([check]):
        return tf.identity(tensor)

    def real_rows(tensor):
      assert len(tensor.shape) > 0
      real_batch_size = batch_size - tf.math.reduce_sum(padding_mask)
      return verify_batch_size(tensor)[0:real_batch_size]

    # The real rows come first: the sliced mask must be all zeros.
    no_padding_kept = tf.math.equal(
        tf.math.reduce_sum(real_rows(padding_mask)), 0)
    with tf.control_dependencies([no_padding_kept]):
      should_stop = StopSignals.should_stop(
          StopSignals.as_scalar_stopping_signal(signals))
    is_full_batch = tf.math.equal(tf.math.reduce_sum(padding_mask), 0)

    def slice_fn(tensor):
      return tf.compat.v1.cond(
          tf.math.logical_or(should_stop, is_full_batch),
          lambda: verify_batch_size(tensor), lambda: real_rows(tensor))

    return tf.nest.map_structure(slice_fn, tensor_or_dict)

  @staticmethod
  def _find_any_tensor(batch_features):
    tensors = [x for x in tf.nest.flatten(batch_features)
               if isinstance(x, tf.Tensor)]
    if not tensors:
      raise UserInputError('Cannot find any Tensor in features dict.')
    return tensors[0]


class TensorPacker:
  """tf.estimator's packing of small dense features: when a feature dict
  holds at least `minimum_num_small_features_to_group` [batch, n] tensors
  of one dtype with n <= `small_feature_dim_size`, they travel as one
  tensor (concatenated along axis 1, under
  `_concatenated_small_features_<dtype>`) and are split back after."""

  def __init__(self, small_feature_dim_size,
               minimum_num_small_features_to_group):
    self._small_feature_dim_size = small_feature_dim_size
    self._minimum_num_small_features_to_group = (
        minimum_num_small_features_to_group)

  def maybe_concatenate_features(self, features):
    """Replaces, in the dict `features`, each dtype's small features by
    their concatenation, if there are enough of them (nothing for a single
    tensor, or a dict holding anything but tensors).

    Raises:
      ValueError: the concatenation's key is already a feature.
    """
    self._small_feature_names = {}
    self._small_feature_sizes = {}
    feature_names = extract_key_names(features)
    if not feature_names:
      return
    for name in feature_names:
      tensor = features[name]
      if not isinstance(tensor, tf.Tensor):
        return  # Nested inputs are not packed.
      shape = tensor.shape.as_list()
      if (len(shape) == 2 and shape[1] is not None and
          shape[1] <= self._small_feature_dim_size):
        logging.log_first_n(logging.INFO, 'Found small feature: %s %s', 1,
                            name, shape)
        self._small_feature_names.setdefault(tensor.dtype, []).append(name)
        self._small_feature_sizes.setdefault(tensor.dtype, []).append(
            shape[1])
    for dtype in list(self._small_feature_names):
      if (len(self._small_feature_names[dtype]) <
          self._minimum_num_small_features_to_group):
        del self._small_feature_names[dtype]
        del self._small_feature_sizes[dtype]
    for dtype, names in self._small_feature_names.items():
      small = [features.pop(name) for name in names]
      key = self._get_small_feature_key(dtype)
      if key in features:
        raise UserInputError(f'{key} is reserved as feature key for '
                             'concatenated small features.')
      features[key] = tf.concat(small, axis=1)

  def maybe_split_features(self, maybe_concatenated_features):
    """Puts back, in the dict, the small features a concatenation holds."""
    for dtype, names in self._small_feature_names.items():
      concatenated = maybe_concatenated_features.pop(
          self._get_small_feature_key(dtype))
      splits = tf.split(concatenated, self._small_feature_sizes[dtype],
                        axis=1)
      maybe_concatenated_features.update(zip(names, splits))

  def _get_small_feature_key(self, dtype):
    return f'{TENSOR_PACKER_CONCATENATED_SMALL_FEATURES_KEY}_{dtype}'


class InputsStructureRecorder:
  """tf.estimator's record of the structure of a TPU program's inputs:
  `flatten_features_and_labels` packs the small features (TensorPacker)
  and flattens features, labels and signals into one list of tensors (the
  infeed's), `unflatten_features_and_labels` restores an `Inputs` from
  such a list. With TPUConfig.input_partition_dims, the first structure
  recorded is checked against them and their flattened form kept."""

  def __init__(self, input_partition_dims=None):
    self._feature_structure = {}
    self._flattened_input_dims = None
    self._feature_dims = self._label_dims = None
    if input_partition_dims:
      # TPUConfig validated them: one or two items.
      assert len(input_partition_dims) <= 2, 'must have 1 or 2 elements.'
      self._feature_dims = input_partition_dims[0]
      if len(input_partition_dims) == 2:
        self._label_dims = input_partition_dims[1]
      assert self._feature_dims is not None, (
          'input_partition_dims[0] must not be None')
    self._initialized = False

  @property
  def flattened_input_dims(self):
    assert self._initialized, 'InputsStructureRecorder is not initialized.'
    return self._flattened_input_dims

  def has_labels(self):
    return 'labels' in self._feature_structure

  def _flatten_input_dims(self, features, labels, feature_dims, label_dims):
    """The partition dims, flattened as the tensors are (None for the
    labels when they have none).

    Raises:
      ValueError: dims that do not match the structure of the features or
        labels.
    """
    try:
      flattened = data_nest.flatten_up_to(features, feature_dims)
    except TypeError as e:
      raise UserInputError(
          'TPUConfig.input_partition_dims[0] mismatched the structure of '
          f'features. input_partition_dims[0]: {feature_dims}, features '
          f'{features}. {e}') from e
    if labels is not None:
      if label_dims is not None:
        try:
          flattened.extend(data_nest.flatten_up_to(labels, label_dims))
        except TypeError as e:
          raise UserInputError(
              'TPUConfig.input_partition_dims[1] mismatched the structure of '
              f'labels. input_partition_dims[1]: {label_dims}, labels: '
              f'{labels}. {e}') from e
      else:
        flattened.extend([None] * len(data_nest.flatten(labels)))
    return flattened

  def validate_and_record_structure(self, features, labels):
    """Records the first inputs' structure (and checks the partition dims'
    keys against their keys).

    Raises:
      ValueError: partition dims whose keys are not the features' or the
        labels'.
    """
    feature_names = extract_key_names(features)
    label_names = extract_key_names(labels)
    if self._initialized:
      return
    self._initialized = True
    if self._feature_dims is None:
      return
    dims_names = extract_key_names(self._feature_dims)
    if dims_names != feature_names:
      raise UserInputError(
          'TPUConfig.input_partition_dims[0] mismatched feature keys. '
          f'Expected {feature_names}, got {dims_names}')
    label_dims_names = extract_key_names(self._label_dims)
    if self._label_dims is not None and label_dims_names != label_names:
      raise UserInputError(
          'TPUConfig.input_partition_dims[1] mismatched label keys. '
          f'Expected {label_names}, got {label_dims_names}')
    self._flattened_input_dims = self._flatten_input_dims(
        features, labels, self._feature_dims, self._label_dims)

  def flatten_features_and_labels(self, features, labels, signals=None):
    """One list of the tensors of `features` (small ones packed),
    `labels` and `signals`, in the structure recorded for unflattening."""
    self.tensor_packer = TensorPacker(
        TENSOR_PACKER_SMALL_FEATURE_DIM_SIZE,
        TENSOR_PACKER_MINIMUM_NUM_SMALL_FEATURES_TO_GROUP)
    self.tensor_packer.maybe_concatenate_features(features)
    self._feature_structure['features'] = features
    if labels is not None:
      self._feature_structure['labels'] = labels
    if signals is not None:
      self._feature_structure['signals'] = signals
    return data_nest.flatten(self._feature_structure)

  def unflatten_features_and_labels(self, flattened_inputs):
    """The `Inputs` (features with small ones split back, labels or None,
    signals) of a list `flatten_features_and_labels` made.

    Raises:
      ValueError: a list that does not fit the recorded structure.
    """
    unflattened = data_nest.pack_sequence_as(self._feature_structure,
                                             flattened_inputs)
    features = unflattened['features']
    self.tensor_packer.maybe_split_features(features)
    return Inputs(features, unflattened.get('labels'),
                  signals=unflattened.get('signals'))
