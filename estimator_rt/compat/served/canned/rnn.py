"""tensorflow_estimator.python.estimator.canned.rnn, over estimator_rt's
RNN estimators (estimator_rt/estimator/canned/rnn.py).

RNNClassifier and RNNEstimator are the public names (module_paths.json).
Here are the others 2.15's module had and its tests use: the Keras model
`RNNModel`, `USE_DEFAULT`, the cell and layer tables and the builders.
The builders read the tables from this module when called, so replacing
`_CELL_TYPE_TO_LAYER_MAPPING` or `_CELL_TYPES` here (as 2.15's tests do)
changes what they build.
"""

import sys

from estimator_rt.estimator.canned import rnn as _rnn

_DEFAULT_LEARNING_RATE = _rnn.DEFAULT_LEARNING_RATE
_DEFAULT_CLIP_NORM = _rnn.DEFAULT_CLIP_NORM
_SIMPLE_RNN_KEY = _rnn.SIMPLE_RNN
_LSTM_KEY = _rnn.LSTM
_GRU_KEY = _rnn.GRU
USE_DEFAULT = _rnn.USE_DEFAULT

_CELL_TYPE_TO_LAYER_MAPPING = _rnn.layer_classes()
_CELL_TYPES = _rnn.cell_classes()

RNNModel = _rnn.rnn_model_class()


def _tables():
  module = sys.modules[__name__]
  return module._CELL_TYPE_TO_LAYER_MAPPING, module._CELL_TYPES  # pylint: disable=protected-access


def _single_rnn_cell(units, cell_type):
  """A cell of `units` units of `cell_type` (a name in `_CELL_TYPES` or a
  class taking `units`)."""
  return _rnn.single_rnn_cell(units, cell_type, _tables()[1])


def _make_rnn_cell_fn(units, cell_type=_SIMPLE_RNN_KEY):
  """A function returning one cell per entry of `units`."""
  return _rnn.make_rnn_cell_fn(units, cell_type, _tables()[1])


def _verify_rnn_cell_input(rnn_cell_fn, units, cell_type):
  """ValueError if `rnn_cell_fn` comes with `units` or `cell_type`."""
  _rnn.verify_rnn_cell_input(rnn_cell_fn, units, cell_type)


def _make_rnn_layer(rnn_cell_fn, units, cell_type, return_sequences):
  """The RNN layer RNNEstimator builds (see estimator_rt.estimator.canned.rnn)."""
  layers, cells = _tables()
  return _rnn.make_rnn_layer(rnn_cell_fn, units, cell_type, return_sequences,
                             layers=layers, cells=cells)


def _get_rnn_estimator_spec(features, labels, mode, head, rnn_model,
                            optimizer, return_sequences):
  """The head's EstimatorSpec for `rnn_model`'s logits (2.15's
  signature)."""
  return _rnn.rnn_estimator_spec(features, labels, mode, head, rnn_model,
                                 optimizer, return_sequences)
