"""What Estimator and its methods take and refuse: constructor arguments,
`steps`/`max_steps` values, hooks, input_fns of each shape, model_fn
signatures, and the calls made before any checkpoint exists."""

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common

STEPS = (1, 2.0, 0, -1, np.int64(2), np.float32(1.0), None, '2', [])


def _constructor(rec):
  make = tf.estimator.Estimator
  rec.accepts('Estimator(model_fn=...)', lambda fn: make(
      fn, model_dir=rec.path('ctor')).model_dir,
              (None, 1, common.tf1_model_fn, lambda features: None,
               lambda features, labels, mode, nope: None))
  rec.accepts('Estimator(params=...)', lambda p: make(
      common.tf1_model_fn, rec.path('ctor'), params=p).params,
              (None, {}, {'lr': 0.1}, [], 1))
  rec.accepts('Estimator(config=...)', lambda c: make(
      common.tf1_model_fn, rec.path('ctor'), config=c).config.model_dir,
              (None, tf.estimator.RunConfig(), 1, {}))
  rec.accepts('Estimator(model_dir=...)', lambda d: type(make(
      common.tf1_model_fn, d).model_dir).__name__, (None, '', rec.path('d')))
  rec.call('model_dir differs from config.model_dir', make,
           common.tf1_model_fn, rec.path('a'),
           config=tf.estimator.RunConfig(model_dir=rec.path('b')))
  rec.accepts('Estimator(warm_start_from=...)', lambda w: make(
      common.tf1_model_fn, rec.path('ctor'), warm_start_from=w).model_dir,
              (None, rec.path('nothing'), 1))


def _input_fns(rec, est):
  x, y, _ = common.data()

  def features_labels():
    return {'x': tf.constant(x)}, tf.constant(y)

  def with_params(params, config, mode):
    return common.input_fn()().map(lambda f, l: (f, l))

  def one_tuple():
    return common.input_fn()().map(lambda f, l: ((f, l),))

  rec.call('train on (features, labels) tensors', est.train,
           features_labels, steps=1)
  rec.call('train input_fn(params, config, mode)', est.train, with_params,
           steps=1)
  rec.call('train input_fn not callable', est.train, 1, steps=1)
  rec.call('train input_fn of a 1-tuple', est.train, one_tuple, steps=1)
  rec.call('train input_fn of features only', est.train,
           lambda: {'x': tf.constant(x)}, steps=1)


def _steps(rec, est):
  # A finite input (4 batches): `None` steps train or evaluate to its end.
  rec.accepts('train(steps=...)', lambda s: est.train(
      common.input_fn(repeat=False), steps=s).get_variable_value('global_step'), STEPS)
  rec.accepts('train(max_steps=...)', lambda s: est.train(
      common.input_fn(repeat=False), max_steps=s).get_variable_value('global_step'),
              STEPS)
  rec.call('train steps and max_steps', est.train, common.input_fn(),
           steps=1, max_steps=1)
  rec.accepts('train(hooks=...)', lambda h: est.train(
      common.input_fn(), steps=1, hooks=h).latest_checkpoint(),
              (None, [], (), [1], [lambda: None]))
  rec.accepts('train(saving_listeners=...)', lambda h: est.train(
      common.input_fn(), steps=1, saving_listeners=h).latest_checkpoint(),
              (None, [], [1]))
  rec.accepts('evaluate(steps=...)', lambda s: est.evaluate(
      common.input_fn(repeat=False), steps=s)['global_step'], STEPS)
  rec.accepts('evaluate(name=...)', lambda n: est.evaluate(
      common.input_fn(), steps=1, name=n)['global_step'],
              (None, 'a', 1, ''))
  rec.accepts('evaluate(checkpoint_path=...)', lambda p: est.evaluate(
      common.input_fn(), steps=1, checkpoint_path=p)['global_step'],
              (None, rec.path('nothing'), est.model_dir))
  rec.accepts('predict(yield_single_examples=...)', lambda v: common.first(
      est.predict(common.predict_input_fn, yield_single_examples=v), 1),
              (True, False, 0, None))


def run(rec):
  _constructor(rec)
  est = tf.estimator.Estimator(common.tf1_model_fn, rec.path('fresh'),
                               params={})
  rec.call('latest_checkpoint before training', est.latest_checkpoint)
  rec.call('get_variable_names before training', est.get_variable_names)
  rec.call('evaluate before training', est.evaluate, common.input_fn(),
           steps=1)
  rec.call('predict before training', lambda: common.first(
      est.predict(common.predict_input_fn)))
  rec.call('export before training', est.export_saved_model,
           rec.path('export'), common.serving_input_receiver_fn)
  _input_fns(rec, est)
  _steps(rec, est)
  rec.files('model_dir', est.model_dir)
