"""`python -m estimator_rt.compat --check DIR...`: what of tf.estimator a
codebase uses, and whether each use runs here.

Files are scanned statically (scan.py: `ast`, the code is never imported).
Each tf.estimator name or module path found is then resolved in this
process, with the compatibility layer installed, the way the program would
reach it: the root module imported (`tensorflow`, `tensorflow_estimator`,
...), then attribute by attribute, importing a submodule where an
attribute is missing (as `import a.b.c` and `from a.b import c` do). So
the answer is whatever the layer serves when the check runs, never a list
kept beside it:

  - a real object: RUNS, or DIFFERS if differences.py documents one;
  - an object with a `not_yet` attribute (not_yet.placeholder/function, or
    anything else the layer marks as refusing): REFUSED, with that reason;
  - an AttributeError or ImportError on the way: REFUSED, with its message
    (the layer's own one line for what it does not serve).

The name reported is the prefix of what the code wrote up to the first
object that is not a module (`tf.estimator.ModeKeys.TRAIN` is a use of
`tf.estimator.ModeKeys`); when it does not resolve, up to the first part
not named as modules are (see `_failed_name_length`).
"""

import dataclasses
import importlib
import os
import types
from typing import Dict, List, Optional, Sequence, Tuple

from estimator_rt.compat import differences
from estimator_rt.compat import keras_choice
from estimator_rt.compat import program_code
from estimator_rt.compat import scan
from estimator_rt.compat import tf_breaks

RUNS = 'runs here'
DIFFERS = 'runs with a documented difference'
REFUSED = 'refused'
TF_BREAK = 'breaks on TensorFlow 2.16+'
STATUSES = (RUNS, DIFFERS, REFUSED, TF_BREAK)

# Directories no codebase means to have scanned: virtual environments
# (site-packages hold tensorflow_estimator's own source), caches, VCS data.
_SKIPPED_DIRECTORIES = ('__pycache__', 'site-packages', 'node_modules')


class CheckArgumentError(ValueError):
  """A path given to --check cannot be scanned."""


@dataclasses.dataclass(frozen=True)
class Finding:
  """One use: `name` at `path`:`line`, its status and, unless it simply
  runs, one line saying what differs or why it is refused."""
  path: str
  line: int
  name: str
  status: str
  detail: str = ''


@dataclasses.dataclass(frozen=True)
class Skipped:
  """A file that could not be scanned (a syntax error, an unreadable
  file), with the line of the error and the error."""
  path: str
  line: int
  reason: str


@dataclasses.dataclass(frozen=True)
class KerasChoice:
  """The Keras `tf.keras` is for `command` (`python FILE` for a file given,
  `pytest DIR` for a directory), and why (keras_choice.py's rule)."""
  command: str
  keras: str
  reason: str


@dataclasses.dataclass
class Result:
  """The files scanned (in order), what was found in them, those that
  could not be scanned, and the Keras each path given would run with."""
  files: List[str]
  findings: List[Finding]
  skipped: List[Skipped]
  keras: List[KerasChoice] = dataclasses.field(default_factory=list)

  def exit_code(self) -> int:
    """0 when every tf.estimator use runs (differences included), 1 when
    one is refused. TF_BREAK uses are shown, not counted: they are not
    tf.estimator's (see tf_breaks.py)."""
    return 1 if any(f.status == REFUSED for f in self.findings) else 0


def python_files(paths: Sequence[str]) -> List[str]:
  """The .py files under `paths` (directories, walked in sorted order, or
  files, taken as given).

  Raises:
    CheckArgumentError: a path does not exist, or no path was given.
  """
  if not paths:
    raise CheckArgumentError('--check needs at least one DIR to scan')
  files = []
  for path in paths:
    if os.path.isfile(path):
      files.append(path)
    elif os.path.isdir(path):
      files.extend(_walk(path))
    elif not os.path.exists(path):
      raise CheckArgumentError(f'--check: DIR {path!r} does not exist')
    else:
      raise CheckArgumentError(
          f'--check: DIR {path!r} is neither a directory nor a file')
  # A file reached twice (a DIR and a directory inside it) counts once.
  seen = set()
  unique = []
  for path in files:
    if os.path.realpath(path) not in seen:
      seen.add(os.path.realpath(path))
      unique.append(path)
  return unique


def _walk(directory: str) -> List[str]:
  found = []
  for root, directories, names in os.walk(directory):
    directories[:] = sorted(
        d for d in directories
        if not d.startswith('.') and d not in _SKIPPED_DIRECTORIES and
        not os.path.exists(os.path.join(root, d, 'pyvenv.cfg')))
    found.extend(os.path.join(root, n) for n in sorted(names)
                 if n.endswith('.py'))
  return found


def scan_file(path: str):
  """(uses, None) for a file, or (None, Skipped) if it cannot be parsed."""
  try:
    with open(path, 'rb') as f:
      source = f.read()
    return scan.scan_source(source, filename=path), None
  except SyntaxError as e:  # Includes IndentationError, TabError.
    return None, Skipped(path, e.lineno or 0, f'syntax error: {e.msg}')
  except (ValueError, OSError) as e:  # Null bytes; unreadable.
    return None, Skipped(path, 0, f'{type(e).__name__}: {_one_line(e)}')
  except RecursionError:  # A generated expression thousands deep.
    return None, Skipped(path, 0, 'nested too deeply to scan')


def display(qualified: str) -> str:
  """How a report names a qualified name: TensorFlow's API as `tf.`...,
  module paths as they are imported."""
  if qualified.startswith('tensorflow.') and not qualified.startswith(
      'tensorflow.python.'):
    return 'tf.' + qualified[len('tensorflow.'):]
  return qualified


def _one_line(error: BaseException) -> str:
  text = str(error).strip() or type(error).__name__
  return text.splitlines()[0]


def resolve(parts: Sequence[str]) -> Tuple[int, object, Optional[str]]:
  """Follows `parts` (['tensorflow', 'estimator', 'Estimator', 'train']) as
  a program would reach them.

  Returns:
    (n, object, None) if `parts[:n]` resolves to `object`, which is not a
    module unless n == len(parts); (n, None, message) if `parts[n - 1]`
    does not resolve.
  """
  try:
    value = importlib.import_module(parts[0])
  except Exception as e:  # pylint: disable=broad-except
    return 1, None, _one_line(e)
  for i in range(1, len(parts)):
    if not isinstance(value, types.ModuleType):
      return i, value, None
    try:
      value = getattr(value, parts[i])
      continue
    except AttributeError as e:
      error = e
    except Exception as e:  # pylint: disable=broad-except
      return i + 1, None, f'{type(e).__name__}: {_one_line(e)}'
    if hasattr(value, '__path__'):
      # A package: the part may be a submodule the program imports. Its
      # import error is the better message (the layer's finder says why
      # it does not serve a module path).
      try:
        value = importlib.import_module('.'.join(parts[:i + 1]))
        continue
      except ImportError as e:
        error = e
      except Exception as e:  # pylint: disable=broad-except
        return i + 1, None, f'{type(e).__name__}: {_one_line(e)}'
    return i + 1, None, _one_line(error)
  return len(parts), value, None


class Classifier:
  """Resolves qualified names through the installed compatibility layer
  (installing it: TensorFlow is imported) and gives each a status."""

  def __init__(self):
    import estimator_rt.compat  # pylint: disable=g-import-not-at-top
    estimator_rt.compat.install()
    self._differences: Dict[int, Tuple[object, str]] = {}
    for name, difference in differences.DIFFERENCES.items():
      parts = _qualified(name).split('.')
      n, value, _ = resolve(parts)
      if value is not None and n == len(parts):
        self._differences[id(value)] = (value, difference)
    self._cache: Dict[str, Tuple[str, str, str]] = {}

  def difference(self, value) -> Optional[str]:
    found = self._differences.get(id(value))
    return found[1] if found is not None and found[0] is value else None

  def classify(self, qualified: str) -> Tuple[str, str, str]:
    """(name as reported, status, detail) for a tf.estimator name."""
    if qualified not in self._cache:
      self._cache[qualified] = self._classify(qualified)
    return self._cache[qualified]

  def _classify(self, qualified: str) -> Tuple[str, str, str]:
    parts = qualified.split('.')
    n, value, message = resolve(parts)
    if value is None:
      name = display('.'.join(parts[:_failed_name_length(parts, n)]))
      in_v1 = _v1_only(parts)
      if in_v1 is not None:
        return name, REFUSED, (
            f'not in tf.estimator 2.15\'s TF2 API either (TensorFlow 2 '
            f'programs used {display(in_v1)}, which runs here)')
      if 'estimator_rt' not in message:
        message += ('; estimator_rt.compat does not serve it: use tf.estimator '
                    'or tf.compat.v1.estimator')
      return name, REFUSED, message
    name = display('.'.join(parts[:n]))
    if not isinstance(value, types.ModuleType):
      why = getattr(value, 'not_yet', None)
      if isinstance(why, str):
        return name, REFUSED, why
    difference = self.difference(value)
    if difference is not None:
      return name, DIFFERS, difference
    return name, RUNS, ''


def _v1_only(parts: Sequence[str]) -> Optional[str]:
  """The tf.compat.v1.estimator name of a TF2-namespace name that fails
  to resolve but resolves there (`tf.estimator.inputs.pandas_input_fn`:
  only TensorFlow 1's API had it), else None."""
  for prefix in (['tensorflow', 'estimator'],
                 ['tensorflow', 'compat', 'v2', 'estimator']):
    if parts[:len(prefix)] == prefix and len(parts) > len(prefix):
      v1 = ['tensorflow', 'compat', 'v1', 'estimator'] + list(
          parts[len(prefix):])
      n, value, _ = resolve(v1)
      if value is not None and n == len(v1):
        return '.'.join(v1)
  return None


def _failed_name_length(parts: Sequence[str], failed: int) -> int:
  """How many of `parts` name what the code uses when `parts[failed - 1]`
  does not resolve: up to the first part after it that is not named as
  modules are (lowercase, PEP 8), so that `...compat.v1.estimator.
  EvalSpec` and `tensorflow.python.estimator.canned.dnn` are reported
  whole, and `run_config.TaskType.WORKER` as `run_config.TaskType`."""
  end = failed
  while end < len(parts) and _module_like(parts[end - 1]):
    end += 1
  return end


def _module_like(part: str) -> bool:
  return part == part.lower() and not part.startswith('_')


def _qualified(public_name: str) -> str:
  """'tf.estimator.X' -> 'tensorflow.estimator.X'; module paths as they
  are."""
  if public_name.startswith('tf.'):
    return 'tensorflow.' + public_name[len('tf.'):]
  return public_name


def check(paths: Sequence[str]) -> Result:
  """Scans `paths` and classifies every use found.

  Raises:
    CheckArgumentError: see `python_files`.
  """
  files = python_files(paths)
  findings, skipped = [], []
  classifier = None
  for path in files:
    uses, problem = scan_file(path)
    if problem is not None:
      skipped.append(problem)
      continue
    for use in uses:
      if use.kind == scan.TF_BREAK:
        findings.append(Finding(path, use.line, display(use.qualified),
                                TF_BREAK, tf_breaks.reason(use.qualified)))
        continue
      if classifier is None:  # TensorFlow is imported only if needed.
        classifier = Classifier()
      name, status, detail = classifier.classify(use.qualified)
      findings.append(Finding(path, use.line, name, status, detail))
  return Result(files=files, findings=findings, skipped=skipped,
                keras=[keras_choice_of(path) for path in paths])


def keras_choice_of(path: str) -> KerasChoice:
  """The Keras `python PATH` (a file) or `pytest PATH` (a directory), run
  from the current directory, gets under the import hook."""
  if os.path.isfile(path):
    command, program = f'python {path}', program_code.of_main_file(path)
  else:
    command, program = f'pytest {path}', program_code.of_pytest_run([path])
  keras, reason = keras_choice.decide(program)
  return KerasChoice(command, keras, reason)
