"""The canned estimators of tf.estimator (TF2 classes): each one briefly on
tiny seeded data (train 3 steps, evaluate, predict two rows, export, its
variables), the model_dirs of three (their summaries' tags and value
kinds), and the arguments they refuse."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def estimators(est, columns, config):
  """name -> (a function making the estimator in model_dir, labels)."""
  head = est.RegressionHead()
  return {
      'BaselineClassifier': (lambda d: est.BaselineClassifier(
          d, config=config), 'class'),
      'BaselineRegressor': (lambda d: est.BaselineRegressor(
          d, config=config), 'reg'),
      'BaselineEstimator': (lambda d: est.BaselineEstimator(
          head, d, config=config), 'reg'),
      'LinearClassifier': (lambda d: est.LinearClassifier(
          columns, d, config=config), 'class'),
      'LinearRegressor': (lambda d: est.LinearRegressor(
          columns, d, config=config), 'reg'),
      'LinearEstimator': (lambda d: est.LinearEstimator(
          head, columns, d, config=config), 'reg'),
      'DNNClassifier': (lambda d: est.DNNClassifier(
          [3], columns, d, config=config), 'class'),
      'DNNRegressor': (lambda d: est.DNNRegressor(
          [3], columns, d, config=config), 'reg'),
      'DNNEstimator': (lambda d: est.DNNEstimator(
          head, [3], columns, d, config=config), 'reg'),
      'DNNLinearCombinedClassifier': (lambda d: est
                                      .DNNLinearCombinedClassifier(
                                          d, columns, dnn_feature_columns=
                                          columns, dnn_hidden_units=[3],
                                          config=config), 'class'),
      'DNNLinearCombinedRegressor': (lambda d: est
                                     .DNNLinearCombinedRegressor(
                                         d, columns, dnn_feature_columns=
                                         columns, dnn_hidden_units=[3],
                                         config=config), 'reg'),
      'DNNLinearCombinedEstimator': (lambda d: est
                                     .DNNLinearCombinedEstimator(
                                         head, d, columns,
                                         dnn_feature_columns=columns,
                                         dnn_hidden_units=[3],
                                         config=config), 'reg'),
  }


def exercise(rec, name, make, labels, model_dir):
  """Train, evaluate, predict, export and the variables of one estimator."""
  model = rec.call(f'{name}: construct', make, model_dir)
  if model is None:
    return
  rec.call(f'{name}: train', model.train, common.input_fn(labels), steps=3)
  rec.call(f'{name}: evaluate', model.evaluate, common.input_fn(labels),
           steps=1)
  rec.call(f'{name}: predict', lambda: common.first(model.predict(
      common.predict_input_fn), 2))
  rec.call(f'{name}: variables', model.get_variable_names)
  rec.call(f'{name}: global_step', model.get_variable_value, 'global_step')
  rec.value(f'{name}: attributes', [
      model.model_dir, model.params, model.config.tf_random_seed,
      callable(model.model_fn), model.latest_checkpoint(), model.eval_dir()])
  spec = tf.feature_column.make_parse_example_spec(common.columns())
  rec.call(f'{name}: export', model.export_saved_model, rec.path(
      'export', name), tf.estimator.export
           .build_parsing_serving_input_receiver_fn(spec))
  rec.files(f'{name}: export dir', rec.path('export', name))


def run(rec):
  config = common.run_config(None)
  for name, (make, labels) in estimators(tf.estimator, common.columns(),
                                         config).items():
    exercise(rec, name, make, labels, rec.path(name))
  rec.files('DNNClassifier model_dir', rec.path('DNNClassifier'))
  # Their own summaries: the linear model's bias and fraction of zero
  # weights, in wide & deep too.
  rec.files('LinearClassifier model_dir', rec.path('LinearClassifier'))
  rec.files('DNNLinearCombinedClassifier model_dir',
            rec.path('DNNLinearCombinedClassifier'))
  rec.call('DNNClassifier no hidden_units', tf.estimator.DNNClassifier, [],
           common.columns())
  rec.call('LinearClassifier n_classes=1', tf.estimator.LinearClassifier,
           common.columns(), n_classes=1)
  rec.call('DNNLinearCombinedClassifier no columns',
           tf.estimator.DNNLinearCombinedClassifier)
  rec.call('LinearRegressor optimizer name', lambda: tf.estimator
           .LinearRegressor(common.columns(), rec.path('sgd'),
                            optimizer='SGD', config=config).train(
                                common.input_fn(), steps=1)
           .get_variable_names())
