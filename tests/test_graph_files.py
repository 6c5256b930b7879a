"""When the training graph's files (graph.pbtxt, the event file's graph)
are written: `graph_files.written_in_background` starts writing once its
`begin` event is set (the eager engine sets it when its first loop call
ended), and at the latest when training ends."""

import os
import threading
import time

import tensorflow as tf

from estimator_rt.core import summaries
from estimator_rt.training import graph_files


def _files() -> graph_files.GraphFiles:

  @tf.function
  def double(x):
    return x * 2.0

  graph = double.get_concrete_function(tf.TensorSpec([], tf.float32)).graph
  return graph_files.GraphFiles(graph=graph, with_meta_graph=False)


def _written(directory) -> bool:
  return (os.path.exists(os.path.join(directory, 'graph.pbtxt')) and
          any(name.startswith('events.out.tfevents')
              for name in os.listdir(directory)))


def test_the_files_are_written_once_begin_is_set(tmp_path):
  begin = threading.Event()
  with graph_files.written_in_background(
      _files(), directory=str(tmp_path),
      summary_writer=summaries.ScalarWriter(str(tmp_path)), graph_file=True,
      begin=begin):
    time.sleep(0.3)  # Unbegun, the thread writes nothing (about 30 ms).
    assert not _written(tmp_path)
    begin.set()
    deadline = time.monotonic() + 30
    while not _written(tmp_path) and time.monotonic() < deadline:
      time.sleep(0.01)
    assert _written(tmp_path)


def test_the_end_of_training_writes_the_files_never_begun(tmp_path):
  with graph_files.written_in_background(
      _files(), directory=str(tmp_path),
      summary_writer=summaries.ScalarWriter(str(tmp_path)), graph_file=True,
      begin=threading.Event()):
    pass
  assert _written(tmp_path)
