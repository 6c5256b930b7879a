"""tf.estimator 2.15's `canned/timeseries/model_utils`: a fully connected
layer of TF1 variables, and the times to predict after a model's output."""

import numpy as np
import tensorflow as tf

from estimator_rt.compat.served.canned.timeseries import feature_keys


def fully_connected(inp, inp_size, layer_size, name, activation=tf.nn.relu,
                    dtype=tf.float32):
  """`activation(inp @ {name}_weight + {name}_bias)`, of variables in the
  current variable scope (the bias starts at zero; no activation if
  `activation` is None)."""
  weight = tf.compat.v1.get_variable(
      name=f'{name}_weight', shape=[inp_size, layer_size], dtype=dtype)
  bias = tf.compat.v1.get_variable(
      name=f'{name}_bias', shape=[layer_size],
      initializer=tf.compat.v1.initializers.zeros())
  output = tf.compat.v1.nn.xw_plus_b(inp, weight, bias)
  if activation is None:
    return output
  if not callable(activation):
    raise TypeError(f'activation={activation!r} is not callable.')
  return activation(output)


def canonicalize_times_or_steps_from_output(times, steps,
                                            previous_model_output):
  """The [batch, window] times to predict: `times` (absolute, each row
  after the last time of `previous_model_output`'s row), or the `steps`
  times after each row's last time.

  Raises:
    ValueError: both or neither of `times` and `steps`, or `times` of
      another batch size or not after the previous output.
  """
  if steps is not None and times is not None:
    raise ValueError('Only one of `steps` and `times` may be specified.')
  if steps is None and times is None:
    raise ValueError('One of `steps` and `times` must be specified.')
  previous_times = previous_model_output[feature_keys.FilteringResults.TIMES]
  if steps is not None:
    return previous_times[:, -1:] + 1 + np.arange(steps)[None, ...]
  times = np.array(times)
  if len(times.shape) != 2:
    times = times[None, ...]
  if previous_times.shape[0] != times.shape[0]:
    raise ValueError(
        '`times` must have a batch dimension matching the previous model '
        f'output (got a batch dimension of {times.shape[0]} for `times` and '
        f'{previous_times.shape[0]} for the previous model output).')
  if not (previous_times[:, -1] < times[:, 0]).all():
    raise ValueError('Prediction times must be after the corresponding '
                     'previous model output.')
  return times
