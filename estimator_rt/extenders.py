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
  _verify_metric_fn_args(metric_fn)
  model_fn = estimator.model_fn

  def model_fn_with_metrics(features, labels, mode, params, config):
    spec = user_fns.call_model_fn(model_fn, features, labels, mode, params,
                                  config)
    if mode != ModeKeys.EVAL:
      return spec
    metrics = dict(spec.eval_metric_ops)
    metrics.update(_call_metric_fn(metric_fn, features, labels,
                                   spec.predictions, config))
    return spec._replace(eval_metric_ops=metrics)

  return estimator.with_model_fn(model_fn_with_metrics)


def _verify_metric_fn_args(metric_fn: Callable) -> None:
  """Raises UserInputError (a ValueError) if `metric_fn` is not a function
  or takes an argument other than _METRIC_FN_ARGS."""
  try:
    args = list(inspect.signature(metric_fn).parameters)
  except (TypeError, ValueError) as e:
    raise UserInputError(
        f'add_metrics: metric_fn={metric_fn!r} is not a function.') from e
  unknown = [a for a in args if a not in _METRIC_FN_ARGS]
  if unknown:
    raise UserInputError(
        f'metric_fn ({user_fns.fn_name(metric_fn)}) has following not '
        f'expected args: {unknown}; it may only take '
        f'{list(_METRIC_FN_ARGS)}.')


def _call_metric_fn(metric_fn: Callable, features, labels, predictions,
                    config):
  """`metric_fn` called with those of its arguments it declares."""
  values = {'predictions': predictions, 'features': features,
            'labels': labels, 'config': config}
  args = inspect.signature(metric_fn).parameters
  return metric_fn(**{a: values[a] for a in args})
