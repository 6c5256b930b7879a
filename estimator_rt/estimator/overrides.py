"""Which members of `Estimator` a subclass may override: tf.estimator 2.15's rule.

2.15's Estimator refused, when constructed, a subclass that overrides one of
its members (methods, properties, attributes of the class; private ones
included), except a few: the runtime calls its own `train`, `evaluate`,
`_call_model_fn` ..., and an override would silently not take part (or
break the runtime's own calls). As in 2.15, only the members the subclass
itself defines are checked (a user's subclass of a canned estimator may
not override `predict`, and the canned estimator's own overrides are
not the user's). Libraries that did override (AdaNet, Habana's, Horovod's
examples) override `_assert_members_are_not_overridden` to skip the
check, as 2.15 let them.
"""

from estimator_rt.core.errors import UserInputError

# 2.15's list of members a subclass may override.
ALLOWED_OVERRIDES = frozenset([
    'model_fn', '_create_and_assert_global_step', '_export_all_saved_models',
    '_tf_api_names', '_tf_api_names_v1', '_estimator_api_names',
    '_estimator_api_names_v1', '_estimator_api_constants',
    '_estimator_api_constants_v1', 'latest_checkpoint',
])

# The subclasses the runtime defines itself (the canned estimators, the
# TPUEstimator, the served modules' classes) are written with the runtime:
# 2.15 exempted its TPUEstimator, which TensorFlow owned, the same way.
_RUNTIME_PACKAGE = 'estimator_rt.'


def _is_runtime_class(cls: type) -> bool:
  """Whether `cls` is one of the runtime's own classes (2.15's exemption
  of its TPUEstimator included)."""
  return (cls.__module__.startswith(_RUNTIME_PACKAGE) or
          cls.__name__ == 'TPUEstimator')


def defined_outside_runtime(estimator: object, name: str) -> bool:
  """Whether `estimator`'s member `name` comes from a class that is not
  the runtime's (a library's or a program's subclass overrides it)."""
  owner = next((cls for cls in type(estimator).__mro__
                if name in vars(cls)), None)
  return owner is not None and not _is_runtime_class(owner)


def check_not_overridden(base: type, estimator: object) -> None:
  """Raises if `type(estimator)` overrides a member of `base`.

  Args:
    base: the Estimator class whose members are protected.
    estimator: the instance being constructed.

  Raises:
    ValueError: its class defines a member of `base` with another value,
      other than one of ALLOWED_OVERRIDES.
  """
  cls = type(estimator)
  if _is_runtime_class(cls):
    return
  members = {name for name in dir(base) if not name.startswith('__')}
  overridden = sorted(
      name for name in (members & set(vars(cls))) - ALLOWED_OVERRIDES
      if getattr(base, name) != getattr(cls, name))
  if overridden:
    raise UserInputError(
        'Subclasses of Estimator cannot override members of Estimator. '
        f'{cls} does override {overridden}: the runtime calls these members '
        'itself. Give your methods other names, or wrap the Estimator; a '
        'subclass that must override them (as AdaNet does) overrides '
        '`_assert_members_are_not_overridden` too, and then its overrides '
        'are its own responsibility.')
