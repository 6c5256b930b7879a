"""tf.keras.estimator.model_to_estimator on a small Keras model: train,
evaluate, predict, export, the model_dir, and what it refuses."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def _model():
  inputs = tf.keras.Input(shape=(common.FEATURES,), name='x')
  outputs = tf.keras.layers.Dense(1, kernel_initializer='ones',
                                  name='out')(inputs)
  model = tf.keras.Model(inputs, outputs)
  model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss='mse',
                metrics=['mae'])
  return model


def run(rec):
  est = rec.call('model_to_estimator', lambda: tf.keras.estimator
                 .model_to_estimator(keras_model=_model(),
                                     model_dir=rec.path('model'),
                                     config=common.run_config(None)))
  if est is not None:
    rec.call('train', est.train, common.input_fn(), steps=3)
    rec.call('get_variable_names', est.get_variable_names)
    rec.call('evaluate', est.evaluate, common.input_fn(), steps=2)
    rec.call('predict', lambda: common.first(est.predict(
        common.predict_input_fn), 2))
    rec.call('export', est.export_saved_model, rec.path('export'),
             common.serving_input_receiver_fn)
    rec.files('model_dir', est.model_dir)
  rec.call('model_to_estimator nothing', tf.keras.estimator
           .model_to_estimator)
  rec.call('model_to_estimator both', lambda: tf.keras.estimator
           .model_to_estimator(keras_model=_model(), keras_model_path='nope'))
  rec.call('model_to_estimator uncompiled', lambda: tf.keras.estimator
           .model_to_estimator(keras_model=tf.keras.Sequential(
               [tf.keras.Input((2,)), tf.keras.layers.Dense(1)]),
                               model_dir=rec.path('u')))
  rec.call('checkpoint_format saver', lambda: tf.keras.estimator
           .model_to_estimator(keras_model=_model(), model_dir=rec.path(
               'saver'), checkpoint_format='saver').train(
                   common.input_fn(), steps=1).get_variable_names())
  rec.call('checkpoint_format bad', lambda: tf.keras.estimator
           .model_to_estimator(keras_model=_model(),
                               checkpoint_format='nope'))
