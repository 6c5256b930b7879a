"""RNNClassifier, RNNEstimator: recurrent networks over sequence feature
columns, as tf.estimator 2.15 built them (tf.estimator.experimental.*).

The network is a Keras 2 (`tf_keras`) model named 'rnn_model' (`RNNModel`):
a `SequenceFeatures` layer turns the sequence columns into a
[batch, time, depth] input and the sequence lengths, the context columns
(a `DenseFeatures` layer) are repeated along time and appended, an RNN
layer runs over it with the sequence mask, and a Dense 'logits' layer of
the head's logits_dimension reads the RNN's last output (or every step's,
with `return_sequences`). The RNN layer is, as in 2.15:

  - for an int `units` and a cell type name: Keras's LSTM, GRU or
    SimpleRNN layer of that many units;
  - otherwise `tf.keras.layers.RNN` over the cell `rnn_cell_fn()` returns,
    or over one cell per entry of `units` (`StackedRNNCells` for more than
    one) of `cell_type` ('simple_rnn' by default, or a cell class).

Built in the graph engine its variables have 2.15's names
(`rnn_model/rnn/stacked_rnn_cells/simple_rnn_cell/kernel`,
`rnn_model/logits/kernel`, `sequence_features/<column>/embedding_weights`,
...). Keras is reached through
`tf_keras.api._v2.keras`, the module `tf.keras` is under
TF_USE_LEGACY_KERAS=1, so a layer class replaced there (as 2.15's tests
do with `tf.keras.layers.Dense`) is the one used.

Training: a named optimizer gets learning rate 0.05 and gradient clipping
by norm 5.0 (2.15's defaults); an optimizer object or callable is used as
given (canned/optimizers.py: a Keras 2 legacy optimizer). The optimizer's
`iterations` is the global step, and the head builds the train op from
the optimizer and the model's trainable variables, as in 2.15.
"""

import functools
import importlib

import tensorflow as tf

from estimator_rt.estimator.canned import base
from estimator_rt.estimator.canned import optimizers
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys

DEFAULT_LEARNING_RATE = 0.05
DEFAULT_CLIP_NORM = 5.0

SIMPLE_RNN = 'simple_rnn'
LSTM = 'lstm'
GRU = 'gru'


class _UseDefault:
  """The value of an argument the caller left out (2.15's USE_DEFAULT)."""

  def __repr__(self):
    return 'USE_DEFAULT'


USE_DEFAULT = _UseDefault()


def keras():
  """Keras 2's public API: the module `tf.keras` is under
  TF_USE_LEGACY_KERAS=1 (tf_keras loads on first use)."""
  return importlib.import_module('tf_keras.api._v2.keras')


def layer_classes():
  """Cell type name -> the Keras layer made for an int `units`."""
  layers = keras().layers
  return {LSTM: layers.LSTM, GRU: layers.GRU, SIMPLE_RNN: layers.SimpleRNN}


def cell_classes():
  """Cell type name -> the Keras cell class."""
  layers = keras().layers
  return {LSTM: layers.LSTMCell, GRU: layers.GRUCell,
          SIMPLE_RNN: layers.SimpleRNNCell}


def single_rnn_cell(units, cell_type, classes=None):
  """A cell of `units` units of `cell_type` (a name in `classes`, default
  cell_classes(), or a class/callable taking `units`).

  Raises:
    ValueError: an unknown name, or what it makes has no `call` and
      `state_size`.
  """
  classes = cell_classes() if classes is None else classes
  cell_type = classes.get(cell_type, cell_type) if isinstance(
      cell_type, str) else cell_type
  if not callable(cell_type):
    raise UserInputError(
        '`cell_type` should be a class producing a RNN cell, or a string '
        f'specifying the cell type. Supported strings are: '
        f'{[SIMPLE_RNN, LSTM, GRU]}. (cell_type={cell_type!r})')
  cell = cell_type(units=units)
  if hasattr(cell, '_enable_caching_device'):
    # Variables read once per step of a tf.while: cache them (sessions).
    cell._enable_caching_device = True  # pylint: disable=protected-access
  if not hasattr(cell, 'call') or not hasattr(cell, 'state_size'):
    raise UserInputError(
        'RNN cell should have a `call` and `state_size` method. '
        f'(cell_type={cell_type!r} made {cell!r})')
  return cell


def make_rnn_cell_fn(units, cell_type=SIMPLE_RNN, classes=None):
  """A function returning one cell per entry of `units` (the cell itself
  when there is one, else the list of them)."""

  def rnn_cell_fn():
    cells = [single_rnn_cell(n, cell_type, classes) for n in units]
    return cells[0] if len(cells) == 1 else cells

  return rnn_cell_fn


def verify_rnn_cell_input(rnn_cell_fn, units, cell_type) -> None:
  """ValueError if `rnn_cell_fn` comes with `units` or `cell_type`."""
  if rnn_cell_fn and (units or cell_type is not USE_DEFAULT):
    raise UserInputError(
        'units and cell_type must not be specified when using rnn_cell_fn '
        f'(units={units!r}, cell_type={cell_type!r}).')


def make_rnn_layer(rnn_cell_fn, units, cell_type, return_sequences,
                   layers=None, cells=None):
  """The RNN layer of the module docstring; `layers` and `cells` map cell
  type names to layer and cell classes (default layer_classes() and
  cell_classes())."""
  verify_rnn_cell_input(rnn_cell_fn, units, cell_type)
  layers = layer_classes() if layers is None else layers
  if (isinstance(cell_type, str) and cell_type in layers and
      isinstance(units, int)):
    return layers[cell_type](units=units, return_sequences=return_sequences)
  if not rnn_cell_fn:
    if cell_type is USE_DEFAULT:
      cell_type = SIMPLE_RNN
    rnn_cell_fn = make_rnn_cell_fn(units, cell_type, cells)
  # A list of cells: keras's RNN stacks them (StackedRNNCells).
  return keras().layers.RNN(cell=rnn_cell_fn(),
                            return_sequences=return_sequences)


class _RNNModel:
  """Sequence input, RNN layer, logits: see estimator_rt.estimator.canned.rnn.

  `rnn_model_class()` is this on a tf_keras.Model (`RNNModel`).

  Args:
    rnn_layer: a Keras RNN layer.
    units: the logits dimension (an int).
    sequence_feature_columns: the sequence columns (or columns built on
      one, e.g. an embedding of a sequence categorical column).
    context_feature_columns: dense columns whose values are repeated at
      every step.
    activation: of the logits layer (None: the logits themselves).
    return_sequences: logits for every step (masked where padded) rather
      than for the last one.
    **kwargs: for Keras's Model (`name`, ...).

  Raises:
    ValueError: `units` is not an int.
  """

  def __init__(self, rnn_layer, units, sequence_feature_columns,
               context_feature_columns=None, activation=None,
               return_sequences=False, **kwargs):
    super().__init__(**kwargs)
    if not isinstance(units, int):
      raise UserInputError(
          f'units must be an int.  Given type: {type(units)} '
          f'(units={units!r}).')
    k = keras()
    self._return_sequences = return_sequences
    self._sequence_feature_columns = sequence_feature_columns
    self._context_feature_columns = context_feature_columns
    self._sequence_features_layer = k.experimental.SequenceFeatures(
        sequence_feature_columns)
    self._dense_features_layer = None
    if context_feature_columns:
      # 2.15's: the v1 DenseFeatures (it takes v1 columns too).
      self._dense_features_layer = importlib.import_module(
          'tf_keras.api._v1.keras').layers.DenseFeatures(
              context_feature_columns)
    self._rnn_layer = rnn_layer
    self._logits_layer = k.layers.Dense(
        units=units, activation=activation, name='logits')

  def call(self, inputs, training=None):  # pylint: disable=arguments-differ
    """The logits: [batch, logits] or, with return_sequences, [batch,
    time, logits] carrying the sequence mask as `_keras_mask`."""
    if not isinstance(inputs, dict):
      raise UserInputError(
          'inputs should be a dictionary of `Tensor`s. Given type: '
          f'{type(inputs)}')
    with tf.name_scope('sequence_input_layer'):
      sequence_input, sequence_length = self._sequence_features_layer(
          inputs, training=training)
      tf.compat.v1.summary.histogram('sequence_length', sequence_length)
      if self._dense_features_layer is not None:
        context_input = self._dense_features_layer(
            inputs, training=training)
        sequence_input = _feature_column_lib().concatenate_context_input(
            context_input, sequence_input=sequence_input)
    mask = tf.sequence_mask(sequence_length)
    outputs = self._rnn_layer(sequence_input, mask=mask,
                              training=training)
    logits = self._logits_layer(outputs)
    if self._return_sequences:
      # The mask goes with the logits: Keras losses and metrics (and the
      # sequential head) leave padded steps out.
      logits._keras_mask = mask  # pylint: disable=protected-access
    return logits

  def get_config(self):
    """The model's config: its layers' and columns' (serialized)."""
    context = self._context_feature_columns
    fc = _feature_column_lib()
    return {
        'name': self.name,
        'rnn_layer': {'class_name': type(self._rnn_layer).__name__,
                      'config': self._rnn_layer.get_config()},
        'units': self._logits_layer.units,
        'return_sequences': self._return_sequences,
        'activation': keras().activations.serialize(
            self._logits_layer.activation),
        'sequence_feature_columns': fc.serialize_feature_columns(
            self._sequence_feature_columns),
        'context_feature_columns': (
            fc.serialize_feature_columns(context) if context else None),
    }

  @classmethod
  def from_config(cls, config, custom_objects=None):
    """The RNNModel of a get_config() result."""
    config = dict(config)
    k = keras()
    fc = _feature_column_lib()
    rnn_layer = k.layers.deserialize(config.pop('rnn_layer'),
                                     custom_objects=custom_objects)
    sequence_columns = fc.deserialize_feature_columns(
        config.pop('sequence_feature_columns'),
        custom_objects=custom_objects)
    context_columns = config.pop('context_feature_columns', None)
    if context_columns:
      context_columns = fc.deserialize_feature_columns(
          context_columns, custom_objects=custom_objects)
    activation = k.activations.deserialize(
        config.pop('activation', None), custom_objects=custom_objects)
    return cls(rnn_layer=rnn_layer,
               sequence_feature_columns=sequence_columns,
               context_feature_columns=context_columns,
               activation=activation, **config)


def _feature_column_lib():
  """TensorFlow's feature_column_lib, imported on first use."""
  from tensorflow.python.feature_column import feature_column_lib  # pylint: disable=g-import-not-at-top
  return feature_column_lib


@functools.lru_cache(maxsize=None)
def rnn_model_class():
  """The Keras 2 model class `RNNModel` (made once, on first use):
  `_RNNModel` on a tf_keras.Model."""
  import tf_keras  # pylint: disable=g-import-not-at-top

  class RNNModel(_RNNModel, tf_keras.Model):
    __doc__ = _RNNModel.__doc__
    # Its own, so that its signature is the constructor's (inspect takes
    # an inherited __new__, Keras's (*args, **kwargs), over __init__).
    __init__ = _RNNModel.__init__

  return RNNModel


def training_optimizer(optimizer):
  """The Keras 2 legacy optimizer a TRAIN graph uses, its `iterations`
  the global step: a name gets 2.15's learning rate and clip norm."""
  if isinstance(optimizer, str):
    optimizer = optimizers.keras_legacy(
        optimizer, learning_rate=DEFAULT_LEARNING_RATE)
    optimizer.clipnorm = DEFAULT_CLIP_NORM
  else:
    optimizer = optimizers.keras_legacy(optimizer)
  # Hooks count steps by the global step: training advances it.
  optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  return optimizer


def rnn_estimator_spec(features, labels, mode, head, rnn_model, optimizer,
                       return_sequences):
  """The head's EstimatorSpec for `rnn_model`'s logits on `features`; in
  TRAIN the head trains the model's variables with `optimizer` (see
  training_optimizer). With `return_sequences` the head gets the sequence
  mask as feature `head.input_sequence_mask_key` unless `features` has
  one."""
  training = mode == ModeKeys.TRAIN
  optimizer = training_optimizer(optimizer) if training else None
  logits = rnn_model(features, training)
  if return_sequences and head.input_sequence_mask_key not in features:
    features = dict(features)
    features[head.input_sequence_mask_key] = logits._keras_mask  # pylint: disable=protected-access
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=optimizer,
      logits=logits, update_ops=rnn_model.updates,
      trainable_variables=rnn_model.trainable_variables)


def _is_sequential_head(head) -> bool:
  from estimator_rt.estimator.head import sequential_head  # pylint: disable=g-import-not-at-top
  return isinstance(head, sequential_head._SequentialHead)  # pylint: disable=protected-access


class RNNEstimator(base.CannedEstimator):
  """An RNN with any head: tf.estimator.experimental.RNNEstimator.

  Args: as tf.estimator 2.15's: `head`, `sequence_feature_columns`,
  `context_feature_columns`, `units` (an int, or one int per stacked
  cell), `cell_type` ('simple_rnn', 'lstm', 'gru' or a cell class),
  `rnn_cell_fn` (a cell of one's own; excludes `units` and `cell_type`),
  `return_sequences` (needs a sequential head), `model_dir`, `optimizer`
  ('Adagrad' by default) and `config`.

  Raises:
    ValueError: `rnn_cell_fn` with `units` or `cell_type`, or
      `return_sequences` with a head that is not sequential.
  """

  def __init__(self, head, sequence_feature_columns,
               context_feature_columns=None, units=None,
               cell_type=USE_DEFAULT, rnn_cell_fn=None,
               return_sequences=False, model_dir=None, optimizer='Adagrad',
               config=None):
    if return_sequences and not _is_sequential_head(head):
      raise UserInputError(
          'Provided head must be a `_SequentialHead` object when '
          f'`return_sequences` is set to True. (head={head!r}: wrap it in '
          'SequentialHeadWrapper.)')
    verify_rnn_cell_input(rnn_cell_fn, units, cell_type)

    def _model_fn(features, labels, mode, config=None):
      del config  # The model does not depend on it.
      rnn_layer = make_rnn_layer(rnn_cell_fn, units, cell_type,
                                 return_sequences)
      rnn_model = rnn_model_class()(
          rnn_layer=rnn_layer, units=head.logits_dimension,
          sequence_feature_columns=sequence_feature_columns,
          context_feature_columns=context_feature_columns,
          return_sequences=return_sequences, name='rnn_model')
      return rnn_estimator_spec(features, labels, mode, head=head,
                                rnn_model=rnn_model, optimizer=optimizer,
                                return_sequences=return_sequences)

    super().__init__(_model_fn, model_dir=model_dir, config=config)


class RNNClassifier(RNNEstimator):
  """An RNN classifier: tf.estimator.experimental.RNNClassifier.

  RNNEstimator with a BinaryClassHead (n_classes=2) or a MultiClassHead;
  with `return_sequences` that head is wrapped in a SequentialHeadWrapper
  reading the mask from feature `sequence_mask` (computed from the
  sequence lengths when the features have none). 2.15's signature and
  defaults.
  """

  def __init__(self, sequence_feature_columns, context_feature_columns=None,
               units=None, cell_type=USE_DEFAULT, rnn_cell_fn=None,
               return_sequences=False, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None,
               optimizer='Adagrad', loss_reduction=base.SUM_OVER_BATCH_SIZE,
               sequence_mask='sequence_mask', config=None):
    # pylint: disable=g-import-not-at-top
    from estimator_rt.estimator.head import head_utils
    from estimator_rt.estimator.head import sequential_head
    # pylint: enable=g-import-not-at-top
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    if return_sequences:
      head = sequential_head.SequentialHeadWrapper(
          head, sequence_length_mask=sequence_mask,
          feature_columns=weight_column)
    super().__init__(
        head, sequence_feature_columns,
        context_feature_columns=context_feature_columns, units=units,
        cell_type=cell_type, rnn_cell_fn=rnn_cell_fn,
        return_sequences=return_sequences, model_dir=model_dir,
        optimizer=optimizer, config=config)
