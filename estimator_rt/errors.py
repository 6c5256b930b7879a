"""Errors the runtime raises for things the user can fix.

Every error here means "your input is wrong": the binary turns them into one
clear line on stderr and exit code 2, and nothing is written to model_dir.
Errors raised by TensorFlow for other reasons propagate unchanged.
"""


class UserInputError(ValueError):
  """Bad user input: a flag, a config field, a model_fn or input_fn result.

  The message says what was wrong, where, and what to do about it.
  """


class ModelFnError(UserInputError):
  """The `model_fn` returned something the runtime cannot use."""


class InputFnError(UserInputError):
  """The `input_fn` returned something the runtime cannot use."""


class IncompatibleCheckpointError(UserInputError):
  """A checkpoint does not hold the variables the model_fn creates."""


class NanLossError(RuntimeError):
  """Training produced a NaN or infinite loss.

  Raised before the diverged weights are saved, so model_dir keeps its last
  good checkpoint.
  """
