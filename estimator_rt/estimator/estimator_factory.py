"""Estimator factories: what the binary's `--model_fn` may name instead of
a model_fn.

An estimator factory is `fn(config, params)` (either argument optional)
returning an `Estimator`, e.g. a canned DNNClassifier built with the
RunConfig the binary made from its flags and TF_CONFIG. It is told apart
from a model_fn by its arguments: a model_fn takes `features`, a factory
nothing but `config` and `params`.
"""

import inspect
from typing import Callable

from estimator_rt.estimator import estimator as estimator_lib
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.user_fns import declared_args
from estimator_rt.core.user_fns import fn_name

_FACTORY_ARGS = ('config', 'params')


def is_estimator_factory(fn: Callable) -> bool:
  """Whether `fn`, named where a model_fn goes, is an estimator factory."""
  if not callable(fn) or inspect.isclass(fn):
    return False
  args = declared_args(fn)
  return '*' not in args and args <= set(_FACTORY_ARGS)


def call_estimator_factory(factory: Callable, *, config, params):
  """The Estimator `factory(config, params)` builds, checked."""
  args = declared_args(factory)
  kwargs = {name: value for name, value in
            (('config', config), ('params', params)) if name in args}
  built = factory(**kwargs)
  if not isinstance(built, estimator_lib.Estimator):
    raise UserInputError(
        f'{fn_name(factory)} takes only {sorted(args) or "no arguments"}, so '
        'it was called as an estimator factory (it is not a model_fn: those '
        f'take `features`), and returned {type(built).__name__}: {built!r}; '
        'return an estimator_rt Estimator (e.g. a canned DNNClassifier built '
        'with the config given).')
  return built
