"""train_and_evaluate locally: what it returns, the exporters' exports, the
evaluation's events, the hooks of both specs, and its refusals."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def _exporters():
  receiver = common.serving_input_receiver_fn
  return [tf.estimator.LatestExporter('latest', receiver, exports_to_keep=2),
          tf.estimator.BestExporter('best', receiver, exports_to_keep=1),
          tf.estimator.FinalExporter('final', receiver)]


def run(rec):
  est = tf.estimator.Estimator(
      common.tf1_model_fn, rec.path('model'), params={},
      config=common.run_config(None, save_checkpoints_steps=3))
  train_hook, eval_hook = common.RecordingHook(), common.RecordingHook()
  listener = common.RecordingListener()
  train_spec = tf.estimator.TrainSpec(common.input_fn(), max_steps=7,
                                      hooks=[train_hook],
                                      saving_listeners=[listener])
  eval_spec = tf.estimator.EvalSpec(common.input_fn(), steps=2,
                                    exporters=_exporters(),
                                    hooks=[eval_hook], throttle_secs=0,
                                    start_delay_secs=0)
  rec.call('train_and_evaluate', tf.estimator.train_and_evaluate, est,
           train_spec, eval_spec)
  # Which step a call sees depends on when the evaluation (at each
  # checkpoint) lands: the calls' names and order only.
  rec.raw('train hook calls', [c[0] for c in train_hook.calls])
  rec.raw('eval hook calls', eval_hook.calls)
  rec.raw('listener calls', listener.calls)
  rec.files('model_dir', est.model_dir)
  rec.call('again on the finished model_dir',
           tf.compat.v1.estimator.train_and_evaluate, est, train_spec,
           eval_spec)
  rec.call('not an estimator', tf.estimator.train_and_evaluate, 1,
           train_spec, eval_spec)
  rec.call('specs swapped', tf.estimator.train_and_evaluate, est, eval_spec,
           train_spec)
  rec.call('no checkpoint saving', tf.estimator.train_and_evaluate,
           tf.estimator.Estimator(common.tf1_model_fn, rec.path('nosave'),
                                  params={}, config=tf.estimator.RunConfig(
                                      save_checkpoints_steps=None,
                                      save_checkpoints_secs=None)),
           train_spec, tf.estimator.EvalSpec(common.input_fn(), steps=1))
  rec.state('state after')
