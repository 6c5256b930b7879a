"""An Estimator with a TF2-style model_fn (a Keras layer, a tape's
gradients applied by the train_op, a Keras metric, a tf.summary.scalar):
train, evaluate, predict, export, and what the model_dir holds."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def tf2_model_fn(features, labels, mode):
  layer = tf.keras.layers.Dense(1, kernel_initializer='ones')
  predictions = layer(features['x'])
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={'y': predictions})
  loss = tf.reduce_mean(tf.square(predictions - labels))
  # A TF2 summary with no default writer: 2.15 wrote nothing for it.
  tf.summary.scalar('tf2_loss', loss)
  if mode == tf.estimator.ModeKeys.EVAL:
    metric = tf.keras.metrics.MeanAbsoluteError()
    metric.update_state(labels, predictions)
    return tf.estimator.EstimatorSpec(mode, loss=loss,
                                      eval_metric_ops={'mae': metric})
  step = tf.compat.v1.train.get_or_create_global_step()
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
  train_op = optimizer.minimize(loss, global_step=step,
                                var_list=layer.trainable_variables)
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def run(rec):
  est = tf.estimator.Estimator(tf2_model_fn, rec.path('model'),
                               config=common.run_config(None))
  hook = common.RecordingHook()
  rec.call('train', est.train, common.input_fn(), steps=4, hooks=[hook])
  rec.raw('hook calls', hook.calls)
  rec.call('get_variable_names', est.get_variable_names)
  rec.call('evaluate', est.evaluate, common.input_fn(repeat=False))
  rec.value('predict', common.first(est.predict(common.predict_input_fn)))
  rec.call('export_saved_model', est.export_saved_model, rec.path('export'),
           common.serving_input_receiver_fn)
  rec.files('model_dir', est.model_dir)
  rec.files('export', rec.path('export'))
