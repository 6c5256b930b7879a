"""tf.compat.v1.estimator.inputs.numpy_input_fn: what calling it and its
input_fn gives, training and predicting with it, and what it refuses."""

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def run(rec):
  numpy_input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn
  x, y, _ = common.data()
  fn = rec.call('numpy_input_fn', numpy_input_fn, {'x': x}, y, batch_size=4,
                num_epochs=1, shuffle=False)
  rec.accepts('numpy_input_fn(shuffle=...)', lambda v: type(numpy_input_fn(
      {'x': x}, y, shuffle=v)).__name__, (None, True, False, 0, 'yes'))
  rec.accepts('numpy_input_fn(batch_size=...)', lambda v: type(
      numpy_input_fn({'x': x}, y, batch_size=v, shuffle=False)).__name__,
              (1, 0, 2.0, np.int64(4), None))
  rec.accepts('numpy_input_fn(num_epochs=...)', lambda v: type(
      numpy_input_fn({'x': x}, y, num_epochs=v, shuffle=False)).__name__,
              (None, 1, 0, 2.0, -1))
  rec.call('x an array', numpy_input_fn, x, y, shuffle=False)
  rec.call('y a dict', numpy_input_fn, {'x': x}, {'y': y}, shuffle=False)
  rec.call('lengths differ', numpy_input_fn, {'x': x}, y[:3], shuffle=False)
  rec.call('y key also in x', numpy_input_fn, {'x': x}, {'x': y},
           shuffle=False)
  with tf.Graph().as_default():
    rec.call('input_fn() in a graph', fn)
  est = tf.estimator.Estimator(common.tf1_model_fn, rec.path('model'),
                               params={}, config=common.run_config(None))
  rec.call('train with it', est.train, fn)
  rec.call('global_step', est.get_variable_value, 'global_step')
  rec.call('train num_epochs=None steps=3', est.train, numpy_input_fn(
      {'x': x}, y, batch_size=4, num_epochs=None, shuffle=True), steps=3)
  # After training on shuffled batches, by type and shape only: 2.15's
  # shuffle (a RandomShuffleQueue fed by a thread) gave another order in
  # every run (evaluate's loss 0.262, 0.277, 0.309 in three runs).
  rec.call('evaluate with it', est.evaluate, fn, exact=False)
  rec.value('predict with it', common.first(est.predict(numpy_input_fn(
      {'x': x[:5]}, batch_size=2, shuffle=False)), 5), exact=False)
  rec.files('model_dir', est.model_dir)
