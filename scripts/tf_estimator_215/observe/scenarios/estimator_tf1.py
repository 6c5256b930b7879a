"""An Estimator with a TF1-style model_fn through all its methods.

Train (with a hook and a saving listener noting their calls), the
estimator's attributes, its variables, evaluate (twice, named), predict in
both `yield_single_examples` forms and with `predict_keys`, the three
exports, and the model_dir after each.
"""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def _train(rec, est):
  hook, listener = common.RecordingHook(), common.RecordingListener()
  rec.call('train', est.train, common.input_fn(), steps=5, hooks=[hook],
           saving_listeners=[listener])
  rec.raw('train: hook calls', hook.calls)
  rec.raw('train: listener calls', listener.calls)
  rec.files('model_dir after train', est.model_dir)
  rec.call('train max_steps=7', est.train, common.input_fn(), max_steps=7)
  rec.call('train max_steps=7 again', est.train, common.input_fn(),
           max_steps=7)


def _attributes(rec, est):
  rec.value('model_dir', est.model_dir)
  rec.value('params', est.params)
  rec.value('config.tf_random_seed', est.config.tf_random_seed)
  rec.value('config.model_dir', est.config.model_dir)
  rec.value('model_fn', est.model_fn)
  rec.call('latest_checkpoint', est.latest_checkpoint)
  rec.call('get_variable_names', est.get_variable_names)
  rec.call('get_variable_value w', est.get_variable_value, 'w')
  rec.call('get_variable_value global_step', est.get_variable_value,
           'global_step')
  rec.call('get_variable_value missing', est.get_variable_value, 'nope')
  rec.call('eval_dir', est.eval_dir)
  rec.call('eval_dir named', est.eval_dir, 'other')


def _evaluate(rec, est):
  rec.call('evaluate steps=2', est.evaluate, common.input_fn(), steps=2)
  rec.call('evaluate to the end, named', est.evaluate,
           common.input_fn(repeat=False), name='other')
  first_ckpt = est.model_dir + '/model.ckpt-5'
  rec.call('evaluate checkpoint_path', est.evaluate,
           common.input_fn(repeat=False), checkpoint_path=first_ckpt)
  rec.files('model_dir after evaluate', est.model_dir)


def _predict(rec, est):
  rec.value('predict', common.first(est.predict(common.predict_input_fn)))
  rec.value('predict batches', common.first(est.predict(
      common.predict_input_fn, yield_single_examples=False)))
  rec.value('predict predict_keys', common.first(est.predict(
      common.predict_input_fn, predict_keys=['twice'])))
  rec.call('predict unknown key', lambda: list(est.predict(
      common.predict_input_fn, predict_keys=['nope'])))


def _export(rec, est):
  base = rec.path('export')
  path = rec.call('export_saved_model', est.export_saved_model, base,
                  common.serving_input_receiver_fn)
  # A TF2 Estimator has no export_savedmodel (2.15 raised on access); the
  # TF1 one has.
  rec.call('export_savedmodel', lambda: est.export_savedmodel(
      rec.path('export2'), common.serving_input_receiver_fn))
  v1 = tf.compat.v1.estimator.Estimator(common.tf1_model_fn, est.model_dir,
                                        params={})
  rec.call('v1 Estimator export_savedmodel', v1.export_savedmodel,
           rec.path('export2'), common.serving_input_receiver_fn,
           as_text=True)
  supervised = tf.estimator.experimental.build_raw_supervised_input_receiver_fn(
      {'x': tf.constant([[0.0, 0.0]])}, tf.constant([[0.0]]))
  rec.call('experimental_export_all_saved_models',
           est.experimental_export_all_saved_models, rec.path('export3'), {
               tf.estimator.ModeKeys.PREDICT: common.serving_input_receiver_fn,
               tf.estimator.ModeKeys.EVAL: supervised,
               tf.estimator.ModeKeys.TRAIN: supervised})
  rec.call('export_saved_model eval mode', est.export_saved_model,
           rec.path('export4'), supervised,
           experimental_mode=tf.estimator.ModeKeys.EVAL)
  for name in ('export', 'export2', 'export3', 'export4'):
    rec.files(f'{name} dir', rec.path(name))
  if path:
    rec.value('export path type', path)


def run(rec):
  est = tf.estimator.Estimator(
      common.tf1_model_fn, model_dir=rec.path('model'), params={'lr': 0.1},
      config=common.run_config(None, save_checkpoints_steps=5))
  _train(rec, est)
  _attributes(rec, est)
  _evaluate(rec, est)
  _predict(rec, est)
  _export(rec, est)
  rec.state('state after exports')
