"""tf.estimator 2.15's numpy_input_fn and pandas_input_fn as code calls
them itself, and the private names of their modules, as estimator_rt
serves them (estimator_rt/inputs/numpy_io.py, estimator_rt/compat/served/inputs/).
"""

import collections
import importlib
import inspect
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt.compat
from estimator_rt.core import user_fns
from scripts.tf_estimator_215 import numpy_input_fn_reference

estimator_rt.compat.install()

HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = 'tensorflow_estimator.python.estimator.'


def _served(name):
  return importlib.import_module(_PACKAGE + name)


def _numpy_input_fn(*args, **kwargs):
  return tf.compat.v1.estimator.inputs.numpy_input_fn(*args, **kwargs)


def test_an_input_fn_wrapping_numpy_input_fn_trains_as_on_2_15(tmp_path):
  """Its wrappers call numpy_input_fn's input_fn and reshape the tensors
  it returns; train, evaluate and predict give 2.15's numbers
  (scripts/tf_estimator_215/numpy_input_fn_reference.py)."""
  with open(os.path.join(HERE, 'data', 'tf_estimator_215',
                         'numpy_input_fn_wrapper.json')) as f:
    reference = json.load(f)
  result = numpy_input_fn_reference.run(str(tmp_path))
  assert result['global_step'] == reference['global_step'] == 20
  for key in ('loss', 'w', 'b'):
    assert result[key] == pytest.approx(reference[key], rel=1e-5), key
  assert result['predictions'] == pytest.approx(reference['predictions'],
                                                rel=1e-5)


def test_called_in_a_graph_it_returns_2_15s_tensors():
  x = {'b': np.arange(6.), 'a': np.arange(6) * 10}
  input_fn = _numpy_input_fn(x, np.arange(6) + 100, batch_size=4,
                             shuffle=False)
  features_only = _numpy_input_fn(np.arange(6.), batch_size=4, shuffle=False,
                                  num_epochs=None)
  with tf.Graph().as_default():
    features, labels = input_fn()
    lone = features_only()
    assert isinstance(lone, tf.Tensor)
    # A finite input's batches are up to batch_size long, as 2.15's
    # dequeue_up_to; a repeating one's exactly batch_size.
    assert labels.shape.as_list() == [None]
    assert lone.shape.as_list() == [4]
    with tf.compat.v1.Session() as session:
      first = session.run((features, labels))
      second = session.run((features, labels))
      with pytest.raises(tf.errors.OutOfRangeError):
        session.run(labels)
  assert sorted(first[0]) == ['a', 'b']
  assert list(first[1]) == [100, 101, 102, 103]
  assert list(second[0]['a']) == [40, 50]


def test_called_eagerly_it_raises_2_15s_runtime_error():
  """2.15's input_fn fed a queue, which needs a graph: its RuntimeError
  (which the runtime reads as "run this input_fn in a graph")."""
  input_fn = _numpy_input_fn(np.arange(4.), shuffle=False)
  with pytest.raises(RuntimeError, match='not compatible with eager') as e:
    input_fn()
  assert user_fns.graph_only_reason(e.value) is not None


def test_the_runtime_reads_its_dataset():
  input_fn = _numpy_input_fn({'x': np.arange(4.)}, np.arange(4),
                             batch_size=2, shuffle=False)
  dataset = user_fns.call_input_fn(input_fn, {}, role='train input_fn')
  assert isinstance(dataset, tf.data.Dataset)
  assert [list(labels.numpy()) for _, labels in dataset] == [[0, 1], [2, 3]]


def test_the_runtime_reads_pandas_input_fns_dataset():
  pandas = pytest.importorskip('pandas')
  frame_fn = tf.compat.v1.estimator.inputs.pandas_input_fn(
      pandas.DataFrame({'x': [1., 2.]}), pandas.Series([3, 4]),
      shuffle=False)
  dataset = user_fns.call_input_fn(frame_fn, {}, role='eval input_fn')
  assert [list(l.numpy()) for _, l in dataset] == [[3, 4]]


def test_a_pandas_label_column_named_as_a_feature_is_read_apart():
  # 2.15 read each label column under a key unique among x's columns.
  pandas = pytest.importorskip('pandas')
  frame_fn = tf.compat.v1.estimator.inputs.pandas_input_fn(
      pandas.DataFrame({'a': [1., 2.]}), pandas.DataFrame({'a': [3., 4.]}),
      shuffle=False)
  assert inspect.isfunction(frame_fn)
  dataset = user_fns.call_input_fn(frame_fn, {}, role='eval input_fn')
  [(features, labels)] = list(dataset)
  assert list(features['a'].numpy()) == [1., 2.]
  assert list(labels['a'].numpy()) == [3., 4.]


def test_numpy_io_helpers_are_2_15s():
  numpy_io = _served('inputs.numpy_io')
  ordered = numpy_io._validate_and_convert_features({'b': 1, 'a': 2})
  assert isinstance(ordered, collections.OrderedDict)
  assert list(ordered) == ['a', 'b']
  assert list(numpy_io._validate_and_convert_features(np.ones(2))) == [
      '__direct_np_input__']
  with pytest.raises(TypeError, match='x must be a dict or array; got list'):
    numpy_io._validate_and_convert_features([1.])
  with pytest.raises(ValueError, match='x cannot be an empty dict'):
    numpy_io._validate_and_convert_features({})
  with pytest.raises(ValueError, match='x cannot be an empty array'):
    numpy_io._validate_and_convert_features(np.ones(0))
  assert numpy_io._get_unique_target_key({'__target_key__': 1}) == (
      '__target_key___n')
  assert numpy_io.string_types == (str,)
  # A feature named as 2.15's target key does not take the labels' place.
  with tf.Graph().as_default():
    features, labels = numpy_io.numpy_input_fn(
        {'__target_key__': np.zeros(2)}, np.ones(2), shuffle=False)()
    with tf.compat.v1.Session() as session:
      got_features, got_labels = session.run((features, labels))
  assert list(got_features['__target_key__']) == [0., 0.]
  assert list(got_labels) == [1., 1.]
  with pytest.raises(ValueError, match='duplicate keys are found in both x '
                     'and y'):
    numpy_io.numpy_input_fn({'a': np.ones(2)}, {'a': np.ones(2)},
                            shuffle=False)


def test_pandas_io_helpers_are_2_15s():
  pandas_io = _served('inputs.pandas_io')
  assert pandas_io._get_unique_target_key({'x': 1}, 'target') == 'target'
  assert pandas_io._get_unique_target_key({'target': 1}, 'target').startswith(
      'target_')
