"""The files tf.estimator 2.15 wrote about a training graph into model_dir,
for both engines.

Once the training session existed (its graph final, SessionRunHooks' ops
included), 2.15's CheckpointSaverHook wrote `graph.pbtxt` (the GraphDef as
text, with shapes), added the graph and a MetaGraphDef to model_dir's event
file (what TensorBoard's Graphs tab shows), and saved every checkpoint with
its MetaGraphDef beside it, `model.ckpt-<step>.meta`: the graph, the Saver
(`SaverDef`) and the collections, which
`tf.compat.v1.train.import_meta_graph` + `Saver.restore` load and run, as
programs that freeze or serve a model_dir do. `RunConfig`'s
`checkpoint_save_graph_def` switched graph.pbtxt and the .meta files off;
the event file always got the graph. The graph engine writes the same
(`GraphFiles`), computed once per training session, and the evaluation
graph into the evaluation's event file when this process first writes
there, as 2.15's summary writer of that directory did.

Under the in-graph loop (in_graph_loop.py) the graph holds the step the
model_fn built at its top level too, under the names the model_fn gave its
ops (the names 2.15's graph had): the loop's body is a copy of it. So a
program that feeds `features:0` and fetches `predictions:0` of a restored
.meta, or freezes the graph at them, works as on 2.15's.

The eager engine's training graph is its compiled loop (a `tf.function`):
it writes that graph to graph.pbtxt and to the event file, as Keras'
TensorBoard callback shows a model's training function. Its checkpoints
are object-based (`tf.train.Checkpoint`), restored by object, not by the
names of a graph's variables, so it writes no .meta: no MetaGraphDef has a
Saver that restores them (see docs/differences.md).
"""

import contextlib
import hashlib
import os
import threading
from typing import Dict, Iterator, Optional, Tuple

from absl import logging

import tensorflow as tf
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import meta_graph_pb2

from estimator_rt.core.checkpoints import META_SUFFIX
from estimator_rt.core.errors import one_line

GRAPH_FILE = 'graph.pbtxt'


class GraphFiles:
  """The graph files of one graph, made on first use: a training graph is
  final once its session exists, so one computation serves every save,
  and every training call of a kept graph (graph/kept_sessions.py) until
  an op is added to it. Safe to use from two threads
  (`written_in_background` makes them in one while training runs; a save
  waits for its .meta).

  Args:
    graph: the training (or evaluation) graph, final.
    saver: the Saver checkpoints are written with (its SaverDef goes into
      the MetaGraphDef), or None.
    with_meta_graph: whether there is a MetaGraphDef to write (not for the
      eager engine's compiled functions, see the module docstring).
  """

  def __init__(self, *, graph: tf.Graph, saver: Optional[object] = None,
               with_meta_graph: bool = True):
    self._graph = graph
    self._saver = saver
    self._with_meta_graph = with_meta_graph
    self._lock = threading.Lock()
    self._graph_def = None
    self._meta_graph_def = None
    self._meta_graph_bytes = None
    self._graph_bytes = None
    self._version = None  # The graph's version they were made of.

  @property
  def graph(self) -> tf.Graph:
    return self._graph

  @property
  def graph_def(self) -> graph_pb2.GraphDef:
    """The GraphDef, with shapes, as 2.15 wrote it."""
    with self._lock:
      if self._version != self._graph.version:  # Ops added since.
        self._graph_def = self._graph.as_graph_def(add_shapes=True)
        self._graph_bytes = self._graph_def.SerializeToString()
        self._meta_graph_def = self._meta_graph_bytes = None
        self._version = self._graph.version
      return self._graph_def

  @property
  def meta_graph_def(self) -> meta_graph_pb2.MetaGraphDef:
    """The MetaGraphDef: `graph_def`, the Saver's SaverDef, the graph's
    collections (what Saver.export_meta_graph wrote)."""
    graph_def = self.graph_def
    with self._lock:
      if self._meta_graph_def is None:
        saver_def = getattr(self._saver, 'saver_def', None)
        with self._graph.as_default():
          self._meta_graph_def = tf.compat.v1.train.export_meta_graph(
              graph_def=graph_def, saver_def=saver_def, graph=self._graph)
        self._meta_graph_bytes = self._meta_graph_def.SerializeToString()
      return self._meta_graph_def

  def for_events(self) -> Tuple[bytes, Optional[bytes]]:
    """(GraphDef, MetaGraphDef or None) serialized, for an event file
    (`summaries.ScalarWriter.write_graph`)."""
    self.graph_def  # pylint: disable=pointless-statement
    if not self._with_meta_graph:
      return self._graph_bytes, None
    self.meta_graph_def  # pylint: disable=pointless-statement
    return self._graph_bytes, self._meta_graph_bytes

  def write_graph_file(self, directory: str) -> None:
    """Writes `<directory>/graph.pbtxt` (replacing it, atomically), unless
    this process wrote this very graph there already (its text is most of
    the cost: 0.66 s for a wide & deep model's 840 nodes)."""
    path = os.path.join(directory, GRAPH_FILE)
    self.graph_def  # pylint: disable=pointless-statement
    digest = hashlib.sha256(self._graph_bytes).hexdigest()
    if _written.get(path) == digest and tf.io.gfile.exists(path):
      return
    tf.io.write_graph(self.graph_def, directory, GRAPH_FILE, as_text=True)
    _written[path] = digest

  def write_meta(self, checkpoint_prefix: str) -> None:
    """Writes `<checkpoint_prefix>.meta`, through a temporary file renamed
    into place: a reader never sees half of one."""
    self.meta_graph_def  # pylint: disable=pointless-statement
    path = checkpoint_prefix + META_SUFFIX
    temporary = f'{path}.tmp{os.getpid()}'
    with tf.io.gfile.GFile(temporary, 'wb') as f:
      f.write(self._meta_graph_bytes)
    tf.io.gfile.rename(temporary, path, overwrite=True)


# graph.pbtxt path -> digest of the GraphDef this process wrote there.
_written: Dict[str, str] = {}

# How long the end of training waits for the graph files to be written.
_WAIT_SECS = 600


@contextlib.contextmanager
def written_in_background(files: GraphFiles, *, directory: str,
                          summary_writer, graph_file: bool,
                          by_saver: bool = True,
                          begin: Optional[threading.Event] = None
                          ) -> Iterator[None]:
  """Around training: writes `files`' graph to `summary_writer` (the
  event file) and, with `graph_file`, graph.pbtxt into `directory`, in a
  thread while training runs, and waits for it at the end. A GraphDef
  and its text take about a second for a wide & deep model's graph,
  which tf.estimator 2.15 paid before its first step; its steps run in
  TensorFlow's threads meanwhile. The files are an account of the graph,
  not needed to train or resume: a failure to write them is a warning.

  A new event file gets the graph twice, as 2.15's did: its
  FileWriterCache made the directory's FileWriter with the graph, and its
  CheckpointSaverHook added it again; a file an earlier training of this
  process started (`summaries.directory_writer`) gets it once more.
  `by_saver` False: a program's CheckpointSaverHook saves instead of the
  runtime (2.15 then made none of its own), which writes graph.pbtxt and
  its graph itself: only a new file's first graph is written.

  `begin`: the thread starts writing once it is set (at the latest when
  training ends): the eager engine sets it when its first loop call ended,
  so that the writing, Python under the interpreter lock, does not slow
  the main thread's work beside that call (the step-0 save, the first
  evaluation's compilation) but runs while later loops' steps leave the
  lock free."""
  copies = (0 if summary_writer.has_file() else 1) + int(by_saver)
  graph_file = graph_file and by_saver

  def write():
    if begin is not None:
      begin.wait(_WAIT_SECS)
    try:
      for _ in range(copies):
        summary_writer.write_graph(*files.for_events())
      if graph_file:
        files.write_graph_file(directory)
    except Exception as e:  # pylint: disable=broad-except
      logging.warning('Could not write the graph to %s: %s', directory,
                      one_line(e))

  thread = threading.Thread(target=write, name='graph-files', daemon=True)
  thread.start()
  try:
    yield
  finally:
    if begin is not None:
      begin.set()
    thread.join(_WAIT_SECS)
    if thread.is_alive():
      logging.warning('Writing the graph to %s took more than %d s; going '
                      'on without waiting.', directory, _WAIT_SECS)
