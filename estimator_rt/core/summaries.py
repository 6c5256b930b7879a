"""TensorBoard event files: writing scalars, and reading them back.

Training scalars go to model_dir, evaluation scalars to model_dir/eval (or
eval_<name>), as tf.estimator laid them out, so existing TensorBoard
set-ups keep working. Reading is used by early stopping (which also works
when a separate evaluator task writes the events) and by tests.
"""

import collections
import itertools
import os
import socket
import threading
import time
from typing import (Callable, Dict, List, Mapping, Optional, Sequence,
                    Tuple)

from absl import logging
import numpy as np
import tensorflow as tf

from estimator_rt.core import tf_log
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserTypeError


# Two writers opened in one process in the same microsecond must still get
# distinct file names.
_WRITER_IDS = itertools.count()


def eval_dir(model_dir: str, name: Optional[str] = None) -> str:
  """Where evaluation summaries of evaluation `name` go.

  Raises:
    UserTypeError (a TypeError): `name` is set and not a string, with the
      words of 2.15's TypeError (it joined 'eval_' + name).
  """
  if name and not isinstance(name, str):
    raise UserTypeError(
        f'can only concatenate str (not "{type(name).__name__}") to str '
        f'(evaluation name={shorten(name)} must be a string or None).')
  return os.path.join(model_dir, 'eval' if not name else f'eval_{name}')


class ScalarWriter:
  """Writes scalars to an event file in one directory.

  A scalar is a `simple_value` without metadata, as tf.estimator 2.15
  wrote its own (`loss`, `global_step/sec`, `examples/sec`: a
  `tf.compat.v1.summary.scalar` op's and StepCounterHook's records):
  programs read `value.simple_value` from `summary_iterator`, and
  TensorBoard shows them as scalars. The records (`Event` protos) are
  serialized in Python and appended with a TFRecordWriter: a write costs
  about 30 us, against about 0.8 ms for eager summary ops between training
  loops. The file is created on first write, so model_dir stays untouched
  until there is something to write (bad input must leave it as it was).
  """

  def __init__(self, logdir: str):
    self._logdir = logdir
    self._writer = None
    self.path = None  # The event file, once created.
    # The graph is written from a thread of its own while training runs
    # (graph_files.written_in_background).
    self._lock = threading.RLock()

  def _open(self):
    tf.io.gfile.makedirs(self._logdir)
    name = (f'events.out.tfevents.{time.time():.6f}.{socket.gethostname()}.'
            f'{os.getpid()}.{next(_WRITER_IDS)}.v2')
    self.path = os.path.join(self._logdir, name)
    self._writer = tf.io.TFRecordWriter(self.path)
    header = tf.compat.v1.Event(wall_time=time.time(),
                                file_version='brain.Event:2')
    self._writer.write(header.SerializeToString())

  def write(self, scalars: Mapping[str, float], step: int) -> None:
    with self._lock:
      if self._writer is None:
        self._open()
      values = [tf.compat.v1.Summary.Value(tag=name,
                                           simple_value=float(value))
                for name, value in scalars.items()]
      event = tf.compat.v1.Event(wall_time=time.time(), step=int(step),
                                 summary=tf.compat.v1.Summary(value=values))
      self._writer.write(event.SerializeToString())

  def write_summary(self, serialized: bytes, step: int) -> None:
    """Appends a serialized `Summary` (what a graph's `tf.compat.v1.summary`
    ops return) at `step`, in the same file as the scalars: one training
    event file per run, as TensorBoard reads best."""
    with self._lock:
      if self._writer is None:
        self._open()
      event = tf.compat.v1.Event(
          wall_time=time.time(), step=int(step),
          summary=tf.compat.v1.Summary.FromString(serialized))
      self._writer.write(event.SerializeToString())

  def write_graph(self, graph_def: bytes,
                  meta_graph_def: Optional[bytes] = None) -> None:
    """Appends a serialized GraphDef and MetaGraphDef (TensorBoard's Graphs
    tab shows the first), as tf.estimator's summary writer added them."""
    with self._lock:
      if self._writer is None:
        self._open()
      events = [tf.compat.v1.Event(wall_time=time.time(),
                                   graph_def=graph_def)]
      if meta_graph_def is not None:
        events.append(tf.compat.v1.Event(wall_time=time.time(),
                                         meta_graph_def=meta_graph_def))
      for event in events:
        self._writer.write(event.SerializeToString())

  def write_event(self, serialized: bytes) -> None:
    """Appends a serialized `Event` as it is."""
    with self._lock:
      if self._writer is None:
        self._open()
      self._writer.write(serialized)

  def has_file(self) -> bool:
    """Whether this writer's event file exists (a file removed meanwhile,
    its directory deleted and made again, is started anew at the next
    write, as TensorFlow's event writer started one)."""
    with self._lock:
      if self._writer is not None and not tf.io.gfile.exists(self.path):
        self._writer.close()
        self._writer = None
      return self._writer is not None

  def write_session_log(self, status: str, step: int,
                        checkpoint_path: str = '') -> None:
    """Appends a `SessionLog` of `status` ('START', 'CHECKPOINT') at `step`,
    as tf.estimator's hooks wrote one when training started and at each
    checkpoint. TensorBoard, meeting START at step N, drops what the event
    files hold beyond N from an earlier run that ended without a
    checkpoint there (its summaries would be stale after the resume)."""
    with self._lock:
      if self._writer is None:
        self._open()
      log = tf.compat.v1.SessionLog(
          status=tf.compat.v1.SessionLog.SessionStatus.Value(status),
          checkpoint_path=checkpoint_path)
      event = tf.compat.v1.Event(wall_time=time.time(), step=int(step),
                                 session_log=log)
      self._writer.write(event.SerializeToString())

  def flush(self) -> None:
    with self._lock:
      if self._writer is not None:
        self._writer.flush()

  def close(self) -> None:
    with self._lock:
      if self._writer is not None:
        self._writer.close()
        self._writer = None


_DIRECTORY_WRITERS: Dict[str, ScalarWriter] = {}
_DIRECTORY_LOCK = threading.Lock()


def directory_writer(logdir: str) -> ScalarWriter:
  """This process's writer of `logdir`'s event file, as tf.estimator 2.15's
  FileWriterCache kept one FileWriter per directory: the trainings and
  evaluations of a directory in one process append to one event file
  (made at the first write), until the program clears FileWriterCache
  (`FileWriterCache.clear()` closes it: the next write starts a new file,
  as there) or removes the file."""
  with _DIRECTORY_LOCK:
    writer = _DIRECTORY_WRITERS.get(logdir)
    if writer is None:
      writer = _DIRECTORY_WRITERS[logdir] = ScalarWriter(logdir)
    return writer


def _close_directory_writer(logdir: str) -> None:
  with _DIRECTORY_LOCK:
    writer = _DIRECTORY_WRITERS.pop(logdir, None)
  if writer is not None:
    writer.close()


class _DirectoryEventWriter:
  """The `EventFileWriter` of the FileWriter left in
  `tf.compat.v1.summary.FileWriterCache` for a directory the runtime wrote
  (see `leave_in_file_writer_cache`): its events go to the directory's
  event file of this process (`directory_writer`), and closing it (what
  `FileWriterCache.clear()` does) ends that file."""

  def __init__(self, logdir: str):
    self._logdir = logdir

  def get_logdir(self) -> str:
    return self._logdir

  def add_event(self, event) -> None:
    directory_writer(self._logdir).write_event(event.SerializeToString())

  def flush(self) -> None:
    directory_writer(self._logdir).flush()

  def close(self) -> None:
    _close_directory_writer(self._logdir)

  def reopen(self) -> None:
    pass


class _CachedFileWriter(tf.compat.v1.summary.FileWriter):
  """A `tf.compat.v1.summary.FileWriter` of `logdir` writing to this
  process's event file there (see `_DirectoryEventWriter`). Made without
  FileWriter's constructor, which refuses eager execution: an eager
  program reaches it through FileWriterCache after training, as it reached
  the writer tf.estimator 2.15's hooks had made in their graph."""

  def __init__(self, logdir: str):  # pylint: disable=super-init-not-called
    self._closed = False
    tf.compat.v1.summary.FileWriter.__bases__[0].__init__(
        self, _DirectoryEventWriter(logdir))


def leave_in_file_writer_cache(logdir: str) -> None:
  """Leaves a `FileWriter` of `logdir` in
  `tf.compat.v1.summary.FileWriterCache`, unless one is there, as
  tf.estimator 2.15's training (model_dir) and evaluation (its eval
  directory) did: programs then call `FileWriterCache.get(logdir)` to
  `close()` it or to add their own summaries to that directory's event
  file, also in eager mode (where making a FileWriter raises)."""
  cache = tf.compat.v1.summary.FileWriterCache
  with cache._lock:  # pylint: disable=protected-access
    if logdir not in cache._cache:  # pylint: disable=protected-access
      cache._cache[logdir] = _CachedFileWriter(logdir)  # pylint: disable=protected-access


def _event_files(logdir: str) -> List[str]:
  if not tf.io.gfile.isdir(logdir):
    return []
  return sorted(os.path.join(logdir, f) for f in tf.io.gfile.listdir(logdir)
                if 'tfevents' in f)


def event_files_state(logdir: str) -> Tuple[Tuple[str, int], ...]:
  """(file, size) of each event file: changes whenever anything is written."""
  return tuple((path, tf.io.gfile.stat(path).length)
               for path in _event_files(logdir))


def scalar_value(value: tf.compat.v1.Summary.Value) -> Optional[float]:
  """The number a summary value holds: a `simple_value` (tf.estimator's,
  ScalarWriter's and TF1 summary ops' form) or a numeric scalar tensor
  (tf.summary.scalar's); None for anything else (an image, an array, a
  string such as the checkpoint path)."""
  if value.HasField('simple_value'):
    return float(value.simple_value)
  if value.HasField('tensor'):
    array = np.asarray(tf.make_ndarray(value.tensor))
    if array.ndim == 0 and array.dtype.kind in 'biuf':
      return float(array)
  return None


def read_scalars(logdir: str) -> Dict[str, List[Tuple[int, float]]]:
  """Every scalar in `logdir`'s event files: tag -> [(step, value)], by step.

  Files are read in name order (creation time); a file still being written
  is read up to its last complete record.
  """
  result = collections.defaultdict(list)
  for path in _event_files(logdir):
    try:
      # A plain record reader, not tf.data: this also runs between the
      # graph engine's loops, whose graph is finalized.
      for record in tf.compat.v1.io.tf_record_iterator(path):
        event = tf.compat.v1.Event.FromString(record)
        for value in event.summary.value:
          number = scalar_value(value)
          if number is not None:
            result[value.tag].append((int(event.step), number))
    except tf.errors.DataLossError:
      continue  # A record being written right now; the next read gets it.
  return {tag: sorted(points, key=lambda p: p[0])
          for tag, points in result.items()}


def numpy_value(value):
  """A metric's value as tf.estimator 2.15's evaluate returned it (what a
  session gives): a NumPy scalar of the metric's dtype (`np.float32` for
  most metrics, `np.float64`, `np.int64`, ...), or a NumPy array if not
  scalar. Code calls `.item()` or reads `.dtype` on them."""
  if isinstance(value, tf.Tensor):
    value = value.numpy()
  array = np.asarray(value)
  return array[()] if array.ndim == 0 else array


def _summary_values(key: str, value) -> List[tf.compat.v1.Summary.Value]:
  """The summary values an evaluation result `value` named `key` is written
  as, by tf.estimator 2.15's rules (`_write_dict_to_summary`): a float,
  np.float32 (np.float64 is a float), int, np.int64 or np.int32 as a
  `simple_value`; bytes holding a serialized `Summary` (what a
  `tf.compat.v1.summary` op returns, e.g. an image) as its values, tagged
  `key/0`, `key/1`, ...; an array (0-d too) as a tensor; anything else
  (np.float16, np.int8, np.bool_, ...) not at all, with 2.15's warning;
  None not at all."""
  if value is None:
    return []
  if isinstance(value, (np.float32, float, np.int64, np.int32, int)):
    # A simple_value, as tf.estimator 2.15 wrote evaluation results: code
    # reading them with summary_iterator reads `simple_value` (2.15's
    # BestExporter and tests did); TensorBoard shows it as a scalar.
    return [tf.compat.v1.Summary.Value(tag=key, simple_value=float(value))]
  if isinstance(value, bytes):
    try:
      summary = tf.compat.v1.Summary.FromString(value)
    except Exception:  # pylint: disable=broad-except
      logging.warning('Skipping summary for %s, cannot parse string to '
                      'Summary.', key)
      return []
    for i, each in enumerate(summary.value):
      each.tag = f'{key}/{i}'
    return list(summary.value)
  if isinstance(value, np.ndarray):
    return [tf.compat.v1.Summary.Value(tag=key, node_name=key,
                                       tensor=tf.make_tensor_proto(value))]
  logging.warning('Skipping summary for %s, must be a float, np.float32, '
                  'np.int64, np.int32 or int or np.ndarray or a serialized '
                  'string of Summary (a %s).', key, type(value).__name__)
  return []


def _dict_summary(dictionary: Mapping[str, object]) -> bytes:
  """A serialized `Summary` of `dictionary`'s values (all but
  'global_step', each by `_summary_values`' rules)."""
  values = []
  for key, value in dictionary.items():
    if key != 'global_step':
      values.extend(_summary_values(key, value))
  return tf.compat.v1.Summary(value=values).SerializeToString()


def _append(logdir: str, serialized: Sequence[bytes], step: int,
            graph: Optional[Callable[[], Tuple[bytes, Optional[bytes]]]] = None
            ) -> None:
  """Appends the serialized Summaries at `step` to this process's event file
  of `logdir` (`directory_writer`); `graph` gives the graph a new file
  starts with, as 2.15's FileWriterCache made a directory's FileWriter with
  the graph of the moment."""
  writer = directory_writer(logdir)
  if graph is not None and not writer.has_file():
    writer.write_graph(*graph())
  for each in serialized:
    writer.write_summary(each, int(step))
  writer.flush()
  leave_in_file_writer_cache(logdir)


def write_dict(output_dir: str, dictionary: Mapping[str, object],
               step: int) -> None:
  """Writes `dictionary` (see `_dict_summary`) as one event at `step` to
  this process's event file of `output_dir` (tf.estimator's
  `_write_dict_to_summary`)."""
  _append(output_dir, [_dict_summary(dictionary)], step)


def checkpoint_path_summary(checkpoint_path: str) -> bytes:
  """A serialized `Summary` holding `checkpoint_path` as a string tensor
  tagged 'checkpoint_path', which tf.estimator wrote beside each
  evaluation's results (TensorBoard's text plugin shows it)."""
  return tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(
      tag='checkpoint_path',
      tensor=tf.make_tensor_proto(checkpoint_path, dtype=tf.string))
  ]).SerializeToString()


def write_eval_results(model_dir: str, name: Optional[str],
                       results: Mapping[str, object],
                       checkpoint_path: Optional[str] = None,
                       graph: Optional[Callable[[], Tuple[bytes, Optional[bytes]]]]
                       = None) -> None:
  """Writes an evaluation's results (all but 'global_step', see
  `write_dict`) to model_dir/eval (or eval_<name>) at its 'global_step',
  and then the path of the checkpoint evaluated, if given. `graph`: the
  evaluation graph's serialized (GraphDef, MetaGraphDef), written first
  when this process starts an event file there (called only then)."""
  step = results['global_step']
  # 2.15's `_write_dict_to_summary` and `_write_checkpoint_path_to_summary`
  # lines, in its words; its values printed with %s (a float32 metric as
  # `0.3644656`: an f-string would format it as the Python float).
  tf_log.info('Saving dict for global step %d: %s', step, ', '.join(
      '%s = %s' % (k, v) for k, v in sorted(results.items())
      if not isinstance(v, bytes)))
  # In the order of the names, as 2.15's evaluation results (its metric ops
  # were collected by sorted name) were written.
  serialized = [_dict_summary(dict(sorted(results.items())))]
  if checkpoint_path is not None:
    tf_log.info("Saving 'checkpoint_path' summary for global step %d: %s",
                step, checkpoint_path)
    serialized.append(checkpoint_path_summary(checkpoint_path))
  _append(eval_dir(model_dir, name), serialized, results['global_step'],
          graph=graph)
