"""Errors the runtime raises for things the user can fix.

Every error here means "your input is wrong": the binary turns them into one
clear line on stderr and exit code 2, and nothing is written to model_dir.
Errors raised by TensorFlow for other reasons propagate unchanged.
"""


import functools


class UserInputError(ValueError):
  """Bad user input: a flag, a config field, a model_fn or input_fn result.

  The message says what was wrong, where, and what to do about it.
  """


def check_count(where: str, value, *, allow_none: bool = True,
                allow_zero: bool = False) -> None:
  """Checks that `value` is an integer > 0 (or >= 0, or None).

  Args:
    where: names the argument in the error, e.g. 'RunConfig: steps_per_loop'.

  Raises:
    UserInputError: naming `where` and the value.
  """
  if value is None and allow_none:
    return
  if (isinstance(value, bool) or not isinstance(value, int) or
      value < (0 if allow_zero else 1)):
    bound = '>= 0' if allow_zero else '> 0'
    raise UserInputError(f'{where}={value!r} must be an integer {bound}'
                         + (' or None.' if allow_none else '.'))


class ModelFnError(UserInputError):
  """The `model_fn` returned something the runtime cannot use."""


class InputFnError(UserInputError):
  """The `input_fn` returned something the runtime cannot use."""


class IncompatibleCheckpointError(UserInputError):
  """A checkpoint does not hold the variables the model_fn creates."""


class UnusableCheckpointsError(UserInputError):
  """A directory holds checkpoints, but none of them reads back whole and
  finite. Nothing is written: the files are the user's to recover."""


class NanLossError(RuntimeError):
  """Training produced a NaN or infinite loss.

  Raised before the diverged weights are saved, so model_dir keeps its last
  good checkpoint.
  """


class CheckpointSaveError(RuntimeError):
  """A checkpoint could not be written (disk full, permission denied).

  What the failed save wrote is removed; the checkpoints saved before it
  are intact, so running the same command again resumes from them.
  """


def _user_error_in_chain(error):
  seen = set()
  while error is not None and id(error) not in seen:
    if isinstance(error, UserInputError):
      return error
    seen.add(id(error))
    error = error.__cause__ or error.__context__
  return None


def surface_user_errors(fn):
  """Wraps a compiled function so that user errors keep their type.

  An error raised while TensorFlow traces user code (a ModelFnError from a
  model_fn, say) reaches the caller wrapped in AutoGraph's StagingError,
  with the original as its context. This re-raises the original, so the
  user sees one clear error and the binary can exit with code 2.
  """

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    try:
      return fn(*args, **kwargs)
    except UserInputError:
      raise
    except Exception as e:  # pylint: disable=broad-except
      original = _user_error_in_chain(e)
      if original is None:
        raise
      raise original.with_traceback(original.__traceback__) from None

  return wrapper
