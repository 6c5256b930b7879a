"""`add_metrics`: an Estimator with more evaluation metrics, as tf.estimator's."""

import inspect
from typing import Callable

from estimator_rt import user_fns
from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys

_METRIC_FN_ARGS = ('predictions', 'features', 'labels', 'config')


def add_metrics(estimator, metric_fn: Callable):
  """A new Estimator (same model_dir, config, params, warm start) whose
  EVAL mode also reports what `metric_fn` returns.

  Args:
    estimator: an Estimator.
    metric_fn: takes any of `predictions`, `features`, `labels`, `config`
      by name and returns {name: metric}: a Keras metric whose state it
      updated, or a `(value, update_op)` pair. A name the model_fn also
      reports is replaced, as in tf.estimator.

  Raises:
    UserInputError: `metric_fn` takes another argument.
  """
  try:
    args = list(inspect.signature(metric_fn).parameters)
  except (TypeError, ValueError) as e:
    raise UserInputError(
        f'add_metrics: metric_fn={metric_fn!r} is not a function.') from e
  unknown = [a for a in args if a not in _METRIC_FN_ARGS]
  if unknown:
    raise UserInputError(
        f'add_metrics: metric_fn {user_fns.fn_name(metric_fn)} takes '
        f'{unknown}; it may only take {list(_METRIC_FN_ARGS)}.')
  model_fn = estimator.model_fn

  def model_fn_with_metrics(features, labels, mode, params, config):
    spec = user_fns.call_model_fn(model_fn, features, labels, mode, params,
                                  config)
    if mode != ModeKeys.EVAL:
      return spec
    values = {'predictions': spec.predictions, 'features': features,
              'labels': labels, 'config': config}
    metrics = dict(spec.eval_metric_ops)
    metrics.update(metric_fn(**{a: values[a] for a in args}))
    return spec._replace(eval_metric_ops=metrics)

  return estimator.with_model_fn(model_fn_with_metrics)
