"""The heads' tf.estimator 2.15 behaviours that its own tests and libraries
rely on: its checks and messages (eagerly a ValueError, in a graph an
assert failing at run time), labels of another dtype than the logits,
metric pairs in a graph spec, the `_create_tpu_estimator_spec` protocol,
the v1 `_Head` module (and a library's v1 head handed the optimizer, one
short training), the parsing specs, and the private names the
compatibility layer serves. Seconds."""

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt.compat
from estimator_rt.estimator import head as head_lib
from estimator_rt.estimator.canned import parse_specs
from estimator_rt.estimator.tpu import tpu_estimator as tpu
from estimator_rt.estimator.head import base_head

estimator_rt.compat.install()


def test_labels_none_has_2_15s_message():
  head = head_lib.BinaryClassHead()
  with pytest.raises(ValueError, match=r'^You must provide a labels Tensor'):
    head.loss(labels=None, logits=np.array([[1.]], np.float32))


def test_float64_labels_are_cast_to_the_logits_float32():
  head = head_lib.RegressionHead()
  loss = head.loss(labels=np.array([[1.], [3.]], np.float64),
                   logits=np.array([[2.], [3.]], np.float32))
  assert loss.dtype == tf.float32
  assert abs(float(loss) - 0.5) < 1e-6


def test_label_out_of_range_eagerly_is_a_value_error():
  head = head_lib.BinaryClassHead()
  with pytest.raises(ValueError, match='Labels must be <= 2 - 1'):
    head.loss(labels=np.array([[2.]], np.float32),
              logits=np.array([[1.]], np.float32))


def test_label_out_of_range_in_a_graph_fails_at_run_time():
  with tf.Graph().as_default():
    labels = tf.compat.v1.placeholder(tf.int64, shape=(None, 1))
    head = head_lib.MultiClassHead(3)
    loss = head.loss(labels=labels, logits=tf.zeros([2, 3]))
    with tf.compat.v1.Session() as session:
      assert session.run(loss, {labels: [[0], [2]]}) > 0
      with pytest.raises(tf.errors.InvalidArgumentError,
                         match='Labels must be <= n_classes - 1'):
        session.run(loss, {labels: [[0], [3]]})


def test_label_shape_assert_carries_2_15s_data():
  with tf.Graph().as_default():
    labels = tf.compat.v1.placeholder(tf.float32)
    logits = tf.compat.v1.placeholder(tf.float32)
    loss = head_lib.BinaryClassHead().loss(labels=labels, logits=logits)
    with tf.compat.v1.Session() as session:
      with pytest.raises(
          tf.errors.InvalidArgumentError,
          match=r'\[expected_labels_shape: \] \[2 1\] '
          r'\[labels_shape: \] \[2 2\]'):
        session.run(loss, {labels: np.zeros([2, 2]),
                           logits: np.zeros([2, 1])})


def test_messages_start_with_2_15s_phrase():
  with pytest.raises(ValueError, match=r'^thresholds not in \(0, 1\)'):
    head_lib.BinaryClassHead(thresholds=[0.])
  with pytest.raises(ValueError, match='^Invalid loss_reduction: none'):
    head_lib.MultiClassHead(3, loss_reduction='none')
  with pytest.raises(ValueError, match='^logits shape'):
    head_lib.BinaryClassHead().predictions(np.zeros([2, 2], np.float32))
  with pytest.raises(ValueError, match='^Mismatched label shape'):
    head_lib.BinaryClassHead().loss(labels=np.zeros([2, 2]),
                                    logits=np.zeros([2, 1], np.float32))


def test_graph_eval_spec_has_metric_pairs():
  with tf.Graph().as_default():
    spec = head_lib.BinaryClassHead().create_estimator_spec(
        features={}, mode='eval', logits=tf.constant([[1.], [-1.]]),
        labels=tf.constant([[1], [1]]))
    assert all(isinstance(value, tuple) and len(value) == 2
               for value in spec.eval_metric_ops.values())
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.local_variables_initializer())
      session.run([op for _, op in spec.eval_metric_ops.values()])
      assert session.run(spec.eval_metric_ops['accuracy'][0]) == 0.5


class _TpuOnlyHead(base_head.Head):
  # A Head defines these, as 2.15's abstract properties required.
  name = None
  logits_dimension = 1
  loss_reduction = tf.losses.Reduction.SUM_OVER_BATCH_SIZE

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    return tf.constant(0.)

  def predictions(self, logits, keys=None):
    return {}

  def metrics(self, regularization_losses=None):
    return {}

  def update_metrics(self, eval_metrics, features, logits, labels,
                     mode=None, regularization_losses=None):
    return eval_metrics

  def _create_tpu_estimator_spec(self, features, mode, logits, **kwargs):
    return tpu.TPUEstimatorSpec(mode='eval', loss=tf.constant(0.))


class _NeitherHead(_TpuOnlyHead):
  _create_tpu_estimator_spec = base_head.Head._create_tpu_estimator_spec


def test_create_estimator_spec_from_a_tpu_spec():
  spec = _TpuOnlyHead().create_estimator_spec(features={}, mode='eval',
                                              logits=None)
  assert spec.mode == 'eval'
  with pytest.raises(NotImplementedError,
                     match='Subclasses of Head must implement'):
    _NeitherHead().create_estimator_spec(features={}, mode='eval',
                                         logits=None)


def test_v1_head_module_trains_with_a_v1_optimizer():
  from tensorflow.python.estimator.canned import head as v1  # pylint: disable=g-import-not-at-top
  with tf.Graph().as_default():
    step = tf.compat.v1.train.get_or_create_global_step()
    weight = tf.compat.v1.get_variable('w', initializer=[[1.]])
    logits = tf.matmul(tf.constant([[1.], [2.]]), weight)
    head = v1._regression_head()
    assert isinstance(head, v1._Head)
    loss_spec = head.create_loss({}, 'train', logits, [[2.], [3.]])
    assert isinstance(loss_spec, v1.LossSpec)
    spec = head.create_estimator_spec(
        features={}, mode='train', logits=logits, labels=[[2.], [3.]],
        optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.1))
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      assert session.run(spec.loss) == 2.  # Summed, as 2.15's v1 heads.
      session.run(spec.train_op)
      assert session.run(step) == 1


def test_a_librarys_v1_head_is_handed_the_optimizer(tmp_path):
  """2.15's v1 linear and DNN model_fns gave their head the optimizer: a
  library's head wrapping a v1 head (as TF Constrained Optimization's
  HeadV1 does, applying a constrained optimizer itself) gets a
  tf.compat.v1.train optimizer in TRAIN mode and trains with it."""
  from tensorflow.python.estimator.canned import head as v1  # pylint: disable=g-import-not-at-top
  given = []

  class Wrapping(v1._Head):  # Defined here: not one of estimator_rt's.

    def __init__(self):
      self._base = v1._binary_logistic_head_with_sigmoid_cross_entropy_loss()

    name = property(lambda self: self._base.name)
    logits_dimension = property(lambda self: self._base.logits_dimension)

    def create_loss(self, features, mode, logits, labels):
      return self._base.create_loss(features, mode, logits, labels)

    def create_estimator_spec(self, features, mode, logits, labels=None,
                              optimizer=None, train_op_fn=None,
                              regularization_losses=None):
      given.append((mode, optimizer, train_op_fn))
      if mode != 'train':
        return self._base.create_estimator_spec(features, mode, logits,
                                                labels)
      if optimizer is None:
        raise ValueError('You must provide an optimizer to the estimator.')
      return self._base.create_estimator_spec(
          features, mode, logits, labels, train_op_fn=lambda loss: (
              optimizer.minimize(
                  loss, global_step=tf.compat.v1.train.get_global_step())))

  column = tf.feature_column.numeric_column('x')
  estimator = tf.compat.v1.estimator.LinearEstimator(
      head=Wrapping(), feature_columns=[column], model_dir=str(tmp_path),
      optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.1))
  data = lambda: tf.data.Dataset.from_tensors(
      ({'x': [[1.], [-1.]]}, [[1], [0]])).repeat()
  estimator.train(data, steps=3)
  assert estimator.get_variable_value('global_step') == 3
  [(mode, optimizer, train_op_fn)] = given
  assert mode == 'train' and train_op_fn is None
  assert isinstance(optimizer, tf.compat.v1.train.GradientDescentOptimizer)


def test_v1_head_subclass_without_a_spec_is_refused():

  from tensorflow.python.estimator.canned import head as v1  # pylint: disable=g-import-not-at-top

  class Incomplete(v1._Head):
    name = 'incomplete'
    logits_dimension = 1

    def create_loss(self, features, mode, logits, labels):
      return None

  with pytest.raises(NotImplementedError,
                     match='Subclasses of _Head must implement'):
    Incomplete().create_estimator_spec(features={}, mode='eval', logits=None)


def test_parse_specs_v2_and_v1():
  sequence = tf.feature_column.sequence_numeric_column('a')
  spec = parse_specs.classifier_parse_example_spec([sequence], 'label')
  assert spec['a'] == tf.io.VarLenFeature(tf.float32)
  with pytest.raises(ValueError):
    parse_specs.classifier_parse_example_spec_v1([sequence], 'label')
  numeric = tf.feature_column.numeric_column('a')
  with pytest.raises(ValueError,
                     match='^weight_column should not be used as feature'):
    parse_specs.regressor_parse_example_spec([numeric], 'b',
                                             weight_column='a')
  with pytest.raises(ValueError, match='^label should not be used as'):
    parse_specs.regressor_parse_example_spec([numeric], 'a')


def test_private_names_are_served():
  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator import model_fn
  from tensorflow_estimator.python.estimator.canned import parsing_utils
  from tensorflow_estimator.python.estimator.head import base_head as served
  from tensorflow_estimator.python.estimator.head import sequential_head
  # pylint: enable=g-import-not-at-top
  for name in ('call_loss_fn', 'check_dense_labels_match_logits_and_reshape',
               'check_logits_final_dim', 'check_label_range',
               'update_metric_with_broadcast_weights',
               'create_eval_metrics_tuple', 'create_estimator_spec_train_op',
               'create_estimator_spec_summary'):
    assert callable(getattr(served, name)), name
  assert served.Head is head_lib.Head
  assert sequential_head.SequentialHeadWrapper is head_lib.SequentialHeadWrapper
  assert model_fn._TPUEstimatorSpec is tpu.TPUEstimatorSpec  # pylint: disable=protected-access
  assert (parsing_utils.classifier_parse_example_spec_v2 is
          parse_specs.classifier_parse_example_spec)
