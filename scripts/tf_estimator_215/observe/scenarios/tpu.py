"""tf.compat.v1.estimator.tpu without a TPU: TPUEstimator(use_tpu=False)
through train, evaluate, predict and export; tpu.RunConfig, TPUConfig,
InputPipelineConfig, TPUEstimatorSpec, EmbeddingConfigSpec."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common

tpu = tf.compat.v1.estimator.tpu


def model_fn(features, labels, mode, params):
  spec = common.tf1_model_fn(features, labels, mode, params, None)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tpu.TPUEstimatorSpec(mode, predictions=spec.predictions)

  def metric_fn(labels, predictions):
    return {'mae': tf.compat.v1.metrics.mean_absolute_error(labels,
                                                            predictions)}
  return tpu.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op,
                              eval_metrics=(metric_fn,
                                            [labels,
                                             spec.predictions['y']]))


def input_fn(params):
  return common.input_fn()().unbatch().batch(params['batch_size'],
                                             drop_remainder=True)


def _config(rec):
  tpu_config = rec.call('TPUConfig', tpu.TPUConfig, iterations_per_loop=2)
  rec.call('TPUConfig per_host v2', tpu.TPUConfig,
           per_host_input_for_training=tpu.InputPipelineConfig.PER_HOST_V2)
  rec.value('InputPipelineConfig', [
      tpu.InputPipelineConfig.PER_SHARD_V1, tpu.InputPipelineConfig.PER_HOST_V1,
      tpu.InputPipelineConfig.PER_HOST_V2, tpu.InputPipelineConfig.BROADCAST])
  config = rec.call('tpu.RunConfig', tpu.RunConfig, tpu_config=tpu_config,
                    model_dir=rec.path('model'), tf_random_seed=common.SEED,
                    save_checkpoints_steps=2)
  if config is not None:
    rec.value('tpu.RunConfig properties', {
        'tpu_config.iterations_per_loop': config.tpu_config
                                          .iterations_per_loop,
        'cluster': config.cluster, 'master': config.master,
        'model_dir': config.model_dir})
    rec.call('tpu.RunConfig.replace', lambda: config.replace(
        save_checkpoints_steps=3).save_checkpoints_steps)
  return config


def run(rec):
  config = _config(rec)
  est = rec.call('TPUEstimator', tpu.TPUEstimator, model_fn, config=config,
                 params={}, use_tpu=False, train_batch_size=4,
                 eval_batch_size=4, predict_batch_size=2)
  if est is not None:
    rec.call('train', est.train, input_fn, steps=4)
    rec.call('evaluate', est.evaluate, input_fn, steps=2)
    rec.call('predict', lambda: common.first(est.predict(
        lambda params: common.predict_input_fn())))
    rec.call('export', est.export_saved_model, rec.path('export'),
             common.serving_input_receiver_fn)
    rec.files('model_dir', est.model_dir)
  rec.call('TPUEstimator no batch size', tpu.TPUEstimator, model_fn,
           config=config, use_tpu=False)
  rec.call('TPUEstimator batch_size in params', tpu.TPUEstimator, model_fn,
           config=config, params={'batch_size': 4}, use_tpu=False,
           train_batch_size=4)
  with tf.Graph().as_default():
    spec = rec.call('TPUEstimatorSpec', tpu.TPUEstimatorSpec,
                    tf.estimator.ModeKeys.PREDICT,
                    predictions={'y': tf.constant([1.0])})
    if spec is not None:
      rec.call('TPUEstimatorSpec.as_estimator_spec', spec.as_estimator_spec)
  rec.call('EmbeddingConfigSpec no columns',
           tpu.experimental.EmbeddingConfigSpec)
