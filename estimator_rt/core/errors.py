"""Errors the runtime raises for things the user can fix.

Every error here means "your input is wrong": the binary turns them into one
clear line on stderr and exit code 2, and nothing is written to model_dir.
Errors raised by TensorFlow for other reasons propagate unchanged.
"""


import functools
import math
import numbers
import operator
import re
import reprlib
from typing import List, Optional, Tuple


class UserInputError(ValueError):
  """Bad user input: a flag, a config field, a model_fn or input_fn result.

  The message says what was wrong, where, and what to do about it.
  """


# The largest step count the runtime counts to: float64, in which steps/sec,
# the ETA and TensorBoard's step axis are computed, holds every integer only
# up to there, and no run is that long (2**53 steps at a million steps per
# second take 285 years). A larger count tf.estimator 2.15 took (max_steps,
# steps, the save/log/summary intervals) counts as this one (`as_count`);
# the runtime's own counts and keep_checkpoint_max (2.15's Saver refused a
# larger one) are refused above it.
MAX_COUNT = 2**53
# Counts a compiled loop receives as a tf.int32 (steps_per_loop, evaluation
# steps: see loops.py) must fit in one; an evaluation's larger `steps` (2.15
# took any) counts as this one.
MAX_INT32 = 2**31 - 1

_LIMIT_REASONS = {
    MAX_COUNT: 'the largest count a float64 holds exactly; no run is that '
               'long',
    MAX_INT32: 'it is a tf.int32 in the compiled loop',
}


def shorten(value, *, limit: int = 80) -> str:
  """repr(value) in at most about `limit` characters, for error messages.

  Long strings keep their start and end (a 'host:port' keeps its port) and
  say how long they were; big containers show their first few items; huge
  integers their size. Never raises, and costs little on any input.
  """
  if isinstance(value, int) and value.bit_length() > 128:
    return f'<an integer of {value.bit_length()} bits>'
  text_repr = reprlib.Repr()
  text_repr.maxstring = text_repr.maxother = limit
  text_repr.maxlist = text_repr.maxtuple = text_repr.maxdict = 4
  text_repr.maxset = text_repr.maxfrozenset = text_repr.maxdeque = 4
  text_repr.maxlevel = 3
  try:
    text = text_repr.repr(value)
  except Exception:  # pylint: disable=broad-except
    # A user object whose __repr__ fails must not hide the actual error.
    text = f'<{type(value).__name__} object>'
  if len(text) > limit:
    text = text[:limit - 3] + '...'
  if isinstance(value, (str, bytes)) and len(value) > limit:
    text += f' ({len(value)} characters)'
  elif isinstance(value, (list, tuple, dict)) and len(value) > 4:
    text += f' ({len(value)} items)'
  return text


def shown(value, *, limit: int = 200) -> str:
  """str(value), as tf.estimator 2.15's messages showed values
  (`'... given: {}'.format(value)`: a graph tensor as `Tensor("loss:0",
  shape=(2,), dtype=float32)`), on one line (an eager tensor's values
  span several) and cut to about `limit` characters, for the start of a
  message that 2.15's words begin. Never raises."""
  try:
    text = ' '.join(str(value).split())
  except Exception:  # pylint: disable=broad-except
    return shorten(value, limit=limit)
  return text if len(text) <= limit else text[:limit - 3] + '...'


# What TensorFlow wraps around an OpError's reason (a session's or a
# compiled function's): the header, the Python stack of the node's
# definition ("Detected at node 'save/SaveV2' defined at (most recent call
# last):" up to "Node: 'save/SaveV2'"), the node markers ("\t [[{{node
# save/SaveV2}}]]"), the input-source notes, the counts of a multi-error
# report, and str()'s "Original stack trace for 'save/SaveV2':" (the rest).
_TF_HEADER = 'Graph execution error:'
_DETECTED_RE = re.compile(r"^Detected at node '?(.+?)'? defined at \(most "
                          r'recent call last\):$')
_NODE_LINE_RE = re.compile(r"^Node: '?(.+?)'?$")
_NODE_MARK_RE = re.compile(r'\[\[\{\{node ([^}]+)\}\}\]\]')
_STACK_START = 'Original stack trace for '
_NOTE_RE = re.compile(r'^(Errors may have originated from an input operation'
                      r'\.|Input Source operations connected to node |'
                      r'In\[\d+\] |\d+ successful operations?\.|\d+ derived '
                      r'errors? ignored\.|\d+ root error\(s\) found\.)')
_FUNCTION_RE = re.compile(r'\s*\[Op:__inference_[^\]]*\]')


def _reason_lines(text: str) -> Tuple[List[str], List[str]]:
  """The lines of TensorFlow's `text` that say why, and the nodes named."""
  lines, nodes, in_stack = [], [], False
  for line in text.splitlines():
    stripped = line.strip()
    detected = _DETECTED_RE.match(stripped)
    if detected:
      in_stack = True
      nodes.append(detected.group(1))
      continue
    if in_stack:
      # The stack ends at "Node: '<name>'" (or, in a shape TensorFlow may
      # change, at the first line that is not a frame).
      if _NODE_LINE_RE.match(stripped) or not line.startswith(' '):
        in_stack = False
      if line.startswith(' ') or stripped.startswith('Node: '):
        continue
    if stripped.startswith(_STACK_START):
      break
    nodes += _NODE_MARK_RE.findall(stripped)
    stripped = _FUNCTION_RE.sub('', _NODE_MARK_RE.sub('', stripped)).strip()
    if stripped and stripped != _TF_HEADER and not _NOTE_RE.match(stripped):
      lines.append(stripped)
  return lines, nodes


def one_line(error: BaseException, *, limit: int = 300) -> str:
  """The reason `error` gives, in one line of at most about `limit`
  characters: the one place where a fault's message takes the words of
  the error under it (a save's, a restore's, a step's).

  For TensorFlow's OpErrors that is the reason TensorFlow's runtime gave
  ("/m/model.ckpt-10_temp; Permission denied"), without what TensorFlow
  wraps around it in graphs and compiled functions: the header, the stack
  of the node's definition ("Detected at node ... defined at (most recent
  call last): ..."), the node markers and the "Original stack trace"; the
  node is named once at the end ("(node save/SaveV2)"). Other errors give
  their message, whitespace joined, or their class's name if it is empty.
  A longer reason is cut and says how long it was. Never raises."""
  try:
    text = str(error)
  except Exception:  # pylint: disable=broad-except
    text = ''  # A broken __str__ must not hide the error's class.
  lines, nodes = _reason_lines(text)
  reason = ' '.join(' '.join(lines).split()) or type(error).__name__
  if nodes and nodes[0] not in reason:
    reason += f' (node {nodes[0]})'
  if len(reason) > limit:
    reason = f'{reason[:limit]}... ({len(reason)} characters)'
  return reason


def as_count(value, *, cap: int = MAX_COUNT):
  """`value` as the whole count tf.estimator 2.15 ran with: a NumPy integer
  as an int; a finite number > 0 that is not whole (a Python or NumPy
  float) as its ceiling, since 2.15's step hooks and timers (StopAtStepHook,
  SecondOrStepTimer) fired at the first step at or past it
  (`max_steps=421.875` trained to step 422, `save_checkpoints_steps=2.5`
  saved at steps 3 and 6, evaluation `steps=2.5` ran 3 batches); a count
  above `cap` as `cap`, a count no run reaches (`sys.maxsize`, a program's
  "no limit", ran on 2.15: training until its input ended, a summary or
  checkpoint never due); anything else (a bool, a string, NaN, infinity, a
  number <= 0) as it is, for the count's check to refuse. The one place of
  this rule.

  Args:
    value: the count as given.
    cap: MAX_COUNT for step counts, MAX_INT32 for a count of batches that a
      compiled loop receives as a tf.int32 (an evaluation's steps).
  """
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    return value
  if isinstance(value, numbers.Integral):
    return min(int(value), cap)
  if math.isfinite(value) and value > 0:
    return min(math.ceil(value), cap)
  return value


def check_count(where: str, value, *, allow_none: bool = True,
                allow_zero: bool = False, maximum: int = MAX_COUNT) -> None:
  """Checks that `value` is an integer in [1, maximum] (or [0, maximum], or
  None).

  Args:
    where: names the argument in the error, e.g. 'RunConfig: steps_per_loop'.
    value: the count.
    allow_none: None is accepted (the argument is optional).
    allow_zero: 0 is accepted (e.g. "0 disables").
    maximum: the largest accepted count: MAX_COUNT (2**53) for step counts,
      MAX_INT32 for counts fed to a compiled loop as a tf.int32.

  Raises:
    UserInputError: naming `where`, the value and the bound.
  """
  if value is None and allow_none:
    return
  if (isinstance(value, bool) or not isinstance(value, int) or
      value < (0 if allow_zero else 1)):
    bound = '>= 0' if allow_zero else '> 0'
    raise UserInputError(f'{where}={shorten(value)} must be an integer '
                         f'{bound}' + (' or None.' if allow_none else '.'))
  if value > maximum:
    reason = _LIMIT_REASONS.get(maximum, 'the bound for this argument')
    raise UserInputError(
        f'{where}={shorten(value)} is larger than the maximum {maximum} '
        f'({reason}); give a smaller count.')


_COMPARISONS = {'<': operator.lt, '<=': operator.le, '>': operator.gt,
                '>=': operator.ge}


def check_comparable(where: str, value, compared: str, *,
                     expected: str = 'a number or None') -> None:
  """Refuses a `value` that tf.estimator 2.15's check `value {compared} 0`
  could not compare (a string, a list, None where None is not taken) as
  the TypeError that comparison raised there: code that caught it still
  does, and the message starts with Python's words, as 2.15's did, then
  names `where` and what it takes (`expected`).

  Raises:
    UserTypeError (a TypeError): the comparison raised TypeError.
  """
  try:
    _COMPARISONS[compared](value, 0)
  except TypeError as e:
    raise UserTypeError(
        f'{e} ({where}={shorten(value)} must be {expected}).') from None
  except Exception:  # pylint: disable=broad-except
    pass  # Compared (an array's truth is asked later): the checks after say.


def check_positive_count(where: str, value, *, phrase: str,
                         maximum: int = MAX_COUNT) -> None:
  """`check_count` for a count tf.estimator 2.15 refused with `phrase`
  ('Must specify steps > 0'): a number <= 0 is refused with a message that
  starts with 2.15's phrase (code that matched it still does) and names
  `where`.

  Raises:
    UserTypeError (a TypeError): 2.15 could not compare it with 0 (see
      check_comparable).
    UserInputError: as check_count's.
  """
  if value is not None:
    check_comparable(where, value, '<=')
  if value is not None and not isinstance(value, bool) and isinstance(
      value, numbers.Real) and value <= 0:
    raise UserInputError(f'{phrase}, given: {value} ({where}={value} must be a '
                         'positive integer or None).')
  if isinstance(value, numbers.Real) and not math.isfinite(value):
    # 2.15 took it, and never stopped (inf) or stopped at once (NaN).
    raise UserInputError(f'{where}={value} must be a finite number > 0 or '
                         'None.')
  check_count(where, value, maximum=maximum)


class ModelFnError(UserInputError):
  """The `model_fn` returned something the runtime cannot use."""


# (runtime class, the user's exception class) -> their join (`raised_as`).
_JOINED_WITH_CAUSE = {}


def _make_raised_as(runtime_class: type, cause_class: type, message: str):
  return raised_as(runtime_class, message, cause_class.__new__(cause_class))


def raised_as(runtime_class: type, message: str,
              cause: BaseException) -> BaseException:
  """A `runtime_class` error of `message` about the user's function having
  raised `cause`, which is also of `cause`'s class: tf.estimator 2.15 let
  a model_fn's or input_fn's own exception through (a library's test that
  expects AttributeError from a bad model_fn still gets one), and the
  runtime's message says more. A class Python cannot join (one whose
  constructor needs more than a message) leaves `runtime_class` alone."""
  cause_class = type(cause)
  if (not isinstance(cause, Exception) or
      issubclass(runtime_class, cause_class) or
      cause_class.__module__.startswith('tensorflow')):
    return runtime_class(message)
  key = (runtime_class, cause_class)
  if key not in _JOINED_WITH_CAUSE:
    try:
      _JOINED_WITH_CAUSE[key] = type(runtime_class.__name__,
                                     (runtime_class, cause_class), {
          '__module__': __name__,
          '__qualname__': runtime_class.__name__,
          '__doc__': (f'{runtime_class.__name__}, also the '
                      f'{cause_class.__name__} the user\'s function raised.'),
          '__str__': lambda self: str(self.args[0]) if self.args else '',
          '__reduce__': lambda self: (_make_raised_as, (
              runtime_class, cause_class, str(self))),
      })
      _JOINED_WITH_CAUSE[key](message)
    except TypeError:  # Incompatible layouts, or a stricter constructor.
      _JOINED_WITH_CAUSE[key] = runtime_class
  return _JOINED_WITH_CAUSE[key](message)


class GraphModelFnError(ModelFnError):
  """The eager engine met a model_fn that does not run eagerly; `Estimator`
  then runs it in the graph engine (see engine_choice.py).

  Attributes:
    reason: what gave it away, for the log line.
    eager_error: None when the model_fn is TF1-style for certain (it used a
      graph-only API, or returned what only a session runs); otherwise it
      merely failed when called eagerly, and this is that failure, as the
      eager engine reports it where no graph is tried (a model_dir the
      eager engine wrote).
    first_batch: with `eager_error`, the shapes of the batch it failed on
      (a graph's error knows only the static ones).
  """

  def __init__(self, message: str, *, reason: str,
               eager_error: Optional[Exception] = None,
               first_batch: Optional[str] = None):
    super().__init__(message)
    self.reason = reason
    self.eager_error = eager_error
    self.first_batch = first_batch


class EagerModelFnError(ModelFnError):
  """The graph engine met a model_fn whose spec only the eager engine
  runs (a Keras optimizer for the runtime to apply, Keras 3 metric
  objects, a Keras 3 train_op); where the engine is not settled yet,
  `Estimator` then runs it in the eager engine (see engine_choice.py).
  Elsewhere it is the graph engine's refusal, in one line.

  Attributes:
    reason: what gave it away, for the log line.
  """

  def __init__(self, message: str, *, reason: str):
    super().__init__(message)
    self.reason = reason


class InputFnError(UserInputError):
  """The `input_fn` returned something the runtime cannot use."""


# Where tf.estimator 2.15 raised TypeError for bad input, these are raised:
# code that catches 2.15's exception (its tests' assertRaises(TypeError),
# libraries' `except TypeError`) still does, and the binary still exits 2.
# Their messages start with 2.15's phrase and go on with estimator_rt's.


class UserTypeError(UserInputError, TypeError):
  """Bad user input of the wrong type, where tf.estimator raised TypeError."""


class FormattedKeyError(UserInputError, KeyError):
  """A key missing from user input, where tf.estimator raised KeyError
  (2.15's `keras_lib.FormattedKeyError`: features or labels that do not
  cover a Keras model's inputs or outputs). Its str() is the message as
  written: KeyError's quotes it, hiding its line breaks."""

  def __init__(self, message):
    super().__init__(message)

  def __str__(self) -> str:
    return str(self.args[0]) if self.args else ''


class ModelFnTypeError(ModelFnError, TypeError):
  """A model_fn result of the wrong type, where tf.estimator raised
  TypeError."""


class SubclassError(UserInputError, NotImplementedError):
  """A user's subclass of a runtime class (a head) lacks a method it must
  define, where tf.estimator raised NotImplementedError."""


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


class PreemptedError(BaseException):
  """Training stopped on SIGTERM or SIGINT after saving a checkpoint.

  The binary exits with `preemption.PREEMPTED_EXIT_CODE` (143), which
  launchers read as "preempted, resumable": the same command resumes from
  the checkpoint saved at `global_step`.

  A BaseException, as SystemExit and KeyboardInterrupt are: a stop signal
  asks the process to end, and a program's `except Exception:` around
  `train()` (a retry loop, a log-and-continue) must not swallow it; with
  tf.estimator 2.15 the signal ended the process or raised
  KeyboardInterrupt, which no such clause caught.

  Attributes:
    global_step: the step training stopped and saved at.
  """

  def __init__(self, message: str, *, global_step: int):
    super().__init__(message)
    self.global_step = global_step


class PreemptedInterrupt(PreemptedError, KeyboardInterrupt):
  """A PreemptedError raised for SIGINT (Ctrl-C): also a KeyboardInterrupt,
  so that a program's `except KeyboardInterrupt:` catches it, as it caught
  tf.estimator 2.15's."""


class CheckpointSaveError(RuntimeError):
  """A checkpoint could not be written (disk full, permission denied).

  What the failed save wrote is removed; the checkpoints saved before it
  are intact, so running the same command again resumes from them.
  """


class ExportWriteError(RuntimeError):
  """An export could not be written (permission denied, disk full).

  Nothing of it is left under the export base; the checkpoints it was made
  from are untouched, so exporting again once the cause is fixed works.
  """


class TaskLostError(RuntimeError):
  """Another task of the cluster (a ps holding the variables) stopped
  answering in the middle of a step.

  Nothing was saved from the step that failed: model_dir keeps the last
  checkpoint, and restarting the cluster resumes from it.
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
