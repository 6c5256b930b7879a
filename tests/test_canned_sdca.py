"""The SDCA linear optimizer's graph pieces (estimator_rt/estimator/canned/
sdca_model.py, sdca_table.py) and 2.15's module paths served over them:
the sharded example-state table, and an SDCA logistic model reaching the
optimum 2.15's sdca_ops_test.py worked out (regularized loss 0.525457),
with whole and with partitioned weights.
"""

import importlib

import pytest
import tensorflow as tf

import estimator_rt.compat
from estimator_rt.estimator.canned import sdca_model
from estimator_rt.estimator.canned import sdca_table


def test_sharded_table_keeps_the_keys_order_across_shards():
  with tf.Graph().as_default(), tf.compat.v1.Session() as session:
    table = sdca_table.ShardedDenseHashTable(
        tf.int64, tf.float32, [-1., -1.], empty_key=[0, 0],
        deleted_key=[1, 1], num_shards=3)
    keys = tf.constant([[11, 2], [13, 4], [15, 6]], tf.int64)
    session.run(table.insert(keys, tf.constant([[1., 1.], [2., 2.],
                                                [3., 3.]])))
    found = table.lookup(tf.constant([[15, 6], [12, 0], [11, 2]], tf.int64))
    assert session.run(table.size()) == 3
    assert session.run(found).tolist() == [[3., 3.], [-1., -1.], [1., 1.]]
    keys_list, _ = table.export_sharded()
    assert len(keys_list) == 3
    with pytest.raises(TypeError, match='Keys must be dtype'):
      table.lookup(tf.constant([[1, 2]], tf.int32))


def _examples():
  # Two examples, each with one 'age' and one 'gender' id; labels 0 and 1.
  columns = [sdca_model.SparseFeatureColumn([0, 1], [0, 1], [1., 1.])
             for _ in range(2)]
  return dict(sparse_features=columns, dense_features=[],
              example_weights=[1., 1.], example_labels=[0., 1.],
              example_ids=['0', '1'])


@pytest.mark.parametrize('partitioned', [False, True])
def test_logistic_sdca_reaches_2_15s_optimum(partitioned):
  with tf.Graph().as_default(), tf.compat.v1.Session() as session:
    if partitioned:
      weights = [[tf.compat.v1.Variable(tf.zeros([1]), name=f'w{i}_{p}')
                  for p in range(2)] for i in range(2)]
    else:
      weights = [tf.compat.v1.Variable(tf.zeros([2]), name=f'w{i}')
                 for i in range(2)]
    examples = _examples()
    model = sdca_model.SDCAModel(
        examples, dict(sparse_features_weights=weights,
                       dense_features_weights=[]),
        dict(symmetric_l2_regularization=1, symmetric_l1_regularization=0,
             num_table_shards=2, loss_type='logistic_loss'))
    session.run(tf.compat.v1.global_variables_initializer())
    loss = model.regularized_loss(examples)
    assert session.run(loss) == pytest.approx(0.693147, abs=1e-5)
    train_op = model.minimize()
    for _ in range(50):
      session.run(train_op)
    session.run(model.update_weights(train_op))
    assert session.run(loss) == pytest.approx(0.525457, abs=0.01)
    assert session.run(model.predictions(examples)).round().tolist() == [0, 1]
    assert session.run(model.approximate_duality_gap()) < 0.02


def test_bad_options_are_refused():
  with tf.Graph().as_default():
    variables = dict(sparse_features_weights=[tf.Variable(tf.zeros([2]))],
                     dense_features_weights=[])
    with pytest.raises(ValueError, match='Unsupported loss_type'):
      sdca_model.SDCAModel(_examples(), variables, dict(
          loss_type='l0', symmetric_l2_regularization=1,
          symmetric_l1_regularization=0))
    with pytest.raises(ValueError, match='should be positive'):
      sdca_model.SDCAModel(_examples(), variables, dict(
          loss_type='hinge_loss', symmetric_l2_regularization=0,
          symmetric_l1_regularization=0))


def test_2_15_module_paths_serve_them():
  estimator_rt.compat.install()
  utils = 'tensorflow_estimator.python.estimator.canned.linear_optimizer.' \
          'python.utils.'
  ops = importlib.import_module(utils + 'sdca_ops')
  tables = importlib.import_module(utils + 'sharded_mutable_dense_hashtable')
  assert ops._SDCAModel is sdca_model.SDCAModel  # pylint: disable=protected-access
  assert ops._SparseFeatureColumn is sdca_model.SparseFeatureColumn  # pylint: disable=protected-access
  assert tables._ShardedMutableDenseHashTable is (  # pylint: disable=protected-access
      sdca_table.ShardedDenseHashTable)


def _sdca_input_fn():
  return {'example_id': tf.constant(['1', '2', '3']),
          'price': tf.constant([[0.6], [0.8], [0.3]]),
          'country': tf.sparse.SparseTensor(
              values=['IT', 'US', 'GB'], indices=[[0, 0], [1, 3], [2, 1]],
              dense_shape=[3, 5]),
          'weights': tf.constant([[3.0], [1.0], [1.0]])}, tf.constant(
              [[1], [0], [1]])


def test_linear_classifier_trains_with_sdca_as_2_15_did(tmp_path):
  """The same program under tf.estimator 2.15 (.venv-tf215) wrote these
  variables and reached these weights (the op visits examples in a random
  order: they agree to about 1e-3) and loss 0.0334; the second train call
  resumes the example states from the checkpoint."""
  from estimator_rt.estimator.canned import linear  # pylint: disable=g-import-not-at-top
  classifier = linear.LinearClassifier(
      feature_columns=[
          tf.feature_column.numeric_column('price'),
          tf.feature_column.categorical_column_with_hash_bucket(
              'country', hash_bucket_size=5)],
      weight_column='weights', model_dir=str(tmp_path),
      optimizer=linear.LinearSDCA(example_id_column='example_id',
                                  symmetric_l2_regularization=0.01))
  classifier.train(_sdca_input_fn, steps=5)
  classifier.train(_sdca_input_fn, steps=5)
  model = 'linear/linear_model/'
  assert dict(tf.train.list_variables(str(tmp_path))) == {
      'ShardedMutableHashTable-1-of-1-keys': [131072, 2],
      'ShardedMutableHashTable-1-of-1-values': [131072, 4],
      'global_step': [],
      model + 'bias_weights': [1], model + 'bias_weights_unshrunk': [1],
      model + 'country/weights': [5, 1],
      model + 'country/weights_unshrunk': [5, 1],
      model + 'price/weights': [1, 1],
      model + 'price/weights_unshrunk': [1, 1]}
  weights = classifier.get_variable_value(model + 'country/weights')
  assert weights.ravel().tolist() == pytest.approx(
      [-4.1675, 0.0, 3.3297, 2.3724, 0.0], abs=0.02)
  assert classifier.get_variable_value(model + 'bias_weights')[0] == (
      pytest.approx(1.5347, abs=0.02))
  assert classifier.evaluate(_sdca_input_fn, steps=1)['loss'] < 0.05


def test_sdca_is_refused_where_2_15_refused_it():
  from estimator_rt.estimator.canned import linear  # pylint: disable=g-import-not-at-top
  sdca = linear.LinearSDCA(example_id_column='id')
  price = [tf.feature_column.numeric_column('price')]
  with pytest.raises(ValueError, match='multi-class setting'):
    linear.LinearClassifier(price, n_classes=3, optimizer=sdca)
  with pytest.raises(ValueError, match='one-dimensional label'):
    linear.LinearRegressor(price, label_dimension=2, optimizer=sdca)
  with pytest.raises(ValueError, match='sparse_combiner must be "sum"'):
    linear.LinearRegressor(price, optimizer=sdca, sparse_combiner='mean')
