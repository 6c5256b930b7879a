"""tf.compat.v1.estimator.inputs.pandas_input_fn (run where pandas is
installed): calling it, training and predicting with it, what it refuses."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common

NEEDS = ('pandas',)


def run(rec):
  import pandas as pd  # pylint: disable=g-import-not-at-top
  pandas_input_fn = tf.compat.v1.estimator.inputs.pandas_input_fn
  x, y, _ = common.data()
  frame = pd.DataFrame({'a': x[:, 0], 'b': x[:, 1]})
  target = pd.Series(y[:, 0])
  fn = rec.call('pandas_input_fn', pandas_input_fn, frame, target,
                batch_size=4, shuffle=False)
  rec.call('shuffle not given', pandas_input_fn, frame, target)
  rec.call('y a DataFrame', pandas_input_fn, frame, pd.DataFrame(
      {'t': y[:, 0]}), shuffle=False)
  rec.call('index differs', pandas_input_fn, frame, target.iloc[::-1].copy(
  ).reset_index(drop=True).set_axis(range(1, len(target) + 1)),
           shuffle=False)
  rec.call('target_column in x', pandas_input_fn, frame.assign(
      target=1.0), target, shuffle=False)

  def model_fn(features, labels, mode, params):
    stacked = tf.stack([tf.cast(features['a'], tf.float32),
                        tf.cast(features['b'], tf.float32)], axis=1)
    if labels is not None:
      labels = tf.reshape(tf.cast(labels, tf.float32), [-1, 1])
    return common.tf1_model_fn({'x': stacked}, labels, mode, params, None)

  est = tf.estimator.Estimator(model_fn, rec.path('model'), params={},
                               config=common.run_config(None))
  rec.call('train with it', est.train, fn)
  rec.call('global_step', est.get_variable_value, 'global_step')
  rec.call('evaluate with it', est.evaluate, fn)
  rec.value('predict with it', common.first(est.predict(pandas_input_fn(
      frame.iloc[:3], shuffle=False, batch_size=2)), 3))
