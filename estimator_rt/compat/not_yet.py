"""tf.estimator names that estimator_rt does not provide: they resolve, and
using one raises one line saying so and what to use instead.

Such an object carries that line as its `not_yet` attribute; so does any
other object of the layer that refuses whatever its arguments.
`python -m estimator_rt.compat --check` reports a name resolving to one as
refused, with that line.
"""

from estimator_rt.errors import UserInputError

# The default reason, for a name given none.
CANNED = ('not supported by estimator_rt; write a model_fn, or pin '
          'TensorFlow 2.15 for this program')


def placeholder(name: str, why: str = CANNED):
  """A class named `name` whose construction (or call) raises
  UserInputError naming it and `why`."""

  def refuse(*args, **kwargs):
    del args, kwargs
    raise UserInputError(f'tf.estimator {name}: {why}.')

  return type(name.split('.')[-1], (), {
      '__init__': lambda self, *args, **kwargs: refuse(),
      '__doc__': f'Not available yet: {why}.',
      '__module__': __name__,
      'not_yet': why,
  })


def function(name: str, why: str = CANNED):
  """A function named `name` that raises like `placeholder`."""

  def refuse(*args, **kwargs):
    del args, kwargs
    raise UserInputError(f'tf.estimator {name}: {why}.')

  refuse.__name__ = name.split('.')[-1]
  refuse.not_yet = why
  return refuse
