"""What a scenario records, step by step.

A `Recorder` holds a scenario's entries in order, each under a label unique
in the scenario: what a call returned or raised (`call`), a value
(`value`), which values an argument takes (`accepts`), the files of a
directory (`files`), the process state (`state`). Each entry also gets the
INFO lines a script greps that the process printed during it (`LogCapture`:
the process's stderr, read at the file descriptor, so that TensorFlow's
Python and C++ logging and anything else printing there are all seen).

A call that raises is recorded (`raised`: the class a program would spell,
the standard classes an `except` clause catches it by, the start of the
message) and the scenario goes on: a scenario's later steps are recorded
even where an earlier one failed.
"""

import os
import re
import sys
import tempfile

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215.observe import describe as describe_lib
from scripts.tf_estimator_215.observe import files as files_lib

describe = describe_lib.describe
# The INFO lines scripts grep, each to be printed once per event.
LOG_PATTERNS = (
    re.compile(r'loss = .*, step = '),
    re.compile(r'Saving checkpoints for '),
    re.compile(r'Loss for final step: '),
    re.compile(r'Saving dict for global step '),
    re.compile(r'global_step/sec: '),
    re.compile(r'examples/sec: '),
)
_FLOAT = re.compile(r'-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+|\bnan\b',
                    re.I)


def _float_mask(match) -> str:
  """`<f>` for a number printed as NumPy prints a float32 (its shortest
  repr: `1.1269032`, what 2.15's lines printed for float32 tensors), else
  `<f64>` (`1.1927422285079956`: a Python float or a float64): the values
  differ from run to run, how they are printed does not."""
  text = match.group(0)
  if text.lower() == 'nan':
    return '<f>'
  return '<f>' if str(np.float32(float(text))) == text else '<f64>'


def _masked_log_line(line: str) -> str:
  """The line without its timing and float values (steps stay; each float
  masked by how it is printed, see `_float_mask`)."""
  line = describe_lib.mask(line)
  line = re.sub(r'\(\d+\.\d+ sec\)', '(<t> sec)', line)
  line = re.sub(r'(sec: )\S+', r'\1<t>', line)
  return _FLOAT.sub(_float_mask, line)


class LogCapture:
  """The process's stderr (fd 2) into a file, read back in pieces."""

  def __init__(self):
    self._file = tempfile.TemporaryFile(mode='w+b')
    self._saved = None
    self._offset = 0

  def start(self):
    sys.stderr.flush()
    self._saved = os.dup(2)
    os.dup2(self._file.fileno(), 2)

  def stop(self):
    sys.stderr.flush()
    if self._saved is not None:
      os.dup2(self._saved, 2)
      os.close(self._saved)
      self._saved = None

  def new_lines(self) -> list:
    """The lines matching LOG_PATTERNS printed since the last call."""
    sys.stderr.flush()
    self._file.seek(self._offset)
    text = self._file.read().decode('utf-8', 'replace')
    self._offset += len(text.encode('utf-8'))
    return [_masked_log_line(l) for l in text.splitlines()
            if any(p.search(l) for p in LOG_PATTERNS)]

  def tail(self, size: int = 4000) -> str:
    self._file.seek(max(0, self._offset - size))
    return self._file.read().decode('utf-8', 'replace')


def describe_exception(error: BaseException) -> dict:
  """What `except` sees of `error`."""
  catches = sorted({c.__name__ for c in type(error).__mro__
                    if c.__module__ == 'builtins' and c not in (
                        object, BaseException, Exception)} |
                   {'tf.errors.' + c.__name__ for c in type(error).__mro__
                    if c.__module__.startswith('tensorflow.python.framework')
                    and issubclass(c, tf.errors.OpError)})
  return {'type': describe_lib.type_name(type(error)), 'catches': catches,
          'message': describe_lib.mask_message(error)}


_PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple,
          dict, set, frozenset)


def candidate_key(candidate) -> str:
  """How an argument value is named in an `accepts` record, alike on both
  sides: Python's plain values by repr, NumPy scalars and arrays by their
  type and str() (NumPy 2 reprs `np.float32(1.0)` where 1.x said `1.0`),
  functions by name, other objects by class only (their repr is the
  class's own, which differs between 2.15's and estimator_rt's), inside a
  container by their class's name."""
  kind = type(candidate).__name__
  if isinstance(candidate, _PLAIN):
    text = repr(candidate)
  elif isinstance(candidate, (np.generic, np.ndarray)):
    text = str(candidate)
  elif callable(candidate) and hasattr(candidate, '__qualname__'):
    text = candidate.__qualname__
  else:
    text = '<object>'
  key = re.sub(r' at 0x[0-9a-f]+', '', f'{kind}:{text}')
  # An object inside a container by its class's name: its module is
  # 2.15's or estimator_rt's (`<tensorflow_estimator.python.estimator.
  # exporter.LatestExporter object>`).
  key = re.sub(r'<(?:[\w<>]+\.)+(\w+) object>', r'<\1 object>', key)[:80]
  return describe_lib.mask(key)


class Recorder:
  """A scenario's entries, in order (`entries`: label -> entry)."""

  def __init__(self, tmp: str, log: LogCapture = None):
    self.tmp = tmp
    self.entries = {}
    self._log = log
    describe_lib.set_temp_root(tmp)
    graph = tf.compat.v1.get_default_graph()
    self._graph_start = (graph, _graph_counts(graph))

  def path(self, *parts) -> str:
    """A path under the scenario's temporary directory."""
    return os.path.join(self.tmp, *parts)

  def _add(self, label: str, entry: dict) -> None:
    if label in self.entries:
      n = 2
      while f'{label}#{n}' in self.entries:
        n += 1
      label = f'{label}#{n}'
    if self._log is not None:
      lines = self._log.new_lines()
      if lines:
        entry['log'] = lines
    self.entries[label] = entry

  def call(self, label: str, fn, *args, exact: bool = True, **kwargs):
    """Calls fn(*args, **kwargs); records what it returned or raised.

    Returns what it returned, None when it raised.
    """
    try:
      result = fn(*args, **kwargs)
    except Exception as error:  # pylint: disable=broad-except
      self._add(label, {'raised': describe_exception(error)})
      return None
    self._add(label, {'returned': describe(result, exact)})
    return result

  def value(self, label: str, value, exact: bool = True) -> None:
    self._add(label, {'value': describe(value, exact)})

  def raw(self, label: str, jsonable) -> None:
    """A JSON value the scenario made itself (e.g. a hook's calls)."""
    self._add(label, {'value': jsonable})

  def accepts(self, label: str, fn, candidates, view=None) -> None:
    """Which of `candidates` fn(candidate) takes: for each (by its repr),
    what `view(result)` (default: the result) is, or what it raised."""
    seen = {}
    for candidate in candidates:
      key = candidate_key(candidate)
      n = 2
      while key in seen:  # Two candidates of one class and no value.
        key = f'{candidate_key(candidate)}#{n}'
        n += 1
      try:
        result = fn(candidate)
        seen[key] = {'took': describe(view(result) if view else result)}
      except Exception as error:  # pylint: disable=broad-except
        seen[key] = {'refused': describe_exception(error)}
    self._add(label, {'accepts': seen})

  def files(self, label: str, directory: str) -> None:
    """The files of `directory`, events and checkpoints read back."""
    self._add(label, {'files': files_lib.listing(directory)})

  def state(self, label: str) -> None:
    self._add(label, {'state': process_state(self._graph_start)})


def _graph_counts(graph) -> dict:
  return {'ops': len(graph.get_operations()),
          'collections': {str(k): len(graph.get_collection(k))
                          for k in graph.get_all_collection_keys()}}


def process_state(start=None) -> dict:
  """The process state a tf.estimator call can leave behind. `start`: the
  default graph and its counts when the scenario began (the Recorder
  takes them when it is made):
  the ops and collection entries the scenario added to that graph are
  counted, not those earlier scenarios of the process left (a reset
  default graph is not always empty: clearing Keras' session may add
  some), so that a record does not depend on which scenarios ran before
  it in its process. A collection counts when it holds entries."""
  graph = tf.compat.v1.get_default_graph()
  cache = getattr(tf.compat.v1.summary.FileWriterCache, '_cache', {})
  counts = _graph_counts(graph)
  if start is not None and start[0] is graph:
    before = start[1]
    counts['ops'] -= before['ops']
    counts['collections'] = {
        k: n - before['collections'].get(k, 0)
        for k, n in counts['collections'].items()}
  state = {
      'executing_eagerly': tf.executing_eagerly(),
      'file_writer_cache': sorted(describe_lib.mask(k) for k in cache),
      'default_graph': {
          'ops': counts['ops'],
          'finalized': graph.finalized,
          'collections': {k: n for k, n in sorted(counts['collections']
                                                  .items()) if n},
      },
  }
  try:
    state['global_step'] = describe(tf.compat.v1.train.get_global_step())
  except Exception as error:  # pylint: disable=broad-except
    state['global_step'] = {'raised': describe_exception(error)}
  return state
