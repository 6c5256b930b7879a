"""A used input iterator let go on a thread of its own.

Deleting a used tf.data iterator stops the pipeline's threads and waits for
them, tf.data's autotuning thread among them. That wait took 0.5-1.4 s at
the end of about half of W2's local train_and_evaluate runs here (2-core
machine), the main thread idle in the iterator's destructor while the call
that trained had nothing left to do. The graph engine replaces the
iterators it keeps on a thread of their own for the same reason
(training/graph/kept_sessions.py).

Only iterators of plain tf.data pipelines are let go so: the end of a
dataset over Python state runs the program's own code (a generator's
`finally`), which stays where and when 2.15 ran it.
"""

import threading
from typing import Any, List

import tensorflow as tf

from estimator_rt.inputs import read_once


def can_let_go(dataset: Any) -> bool:
  """Whether the iterators of `dataset` (what a loop iterates) may end on a
  thread of their own: a tf.data pipeline that runs no Python with state
  of its own."""
  return (isinstance(dataset, tf.data.Dataset) and
          not read_once.reads_python_state(dataset))


def let_go(box: List[Any]) -> None:
  """Empties `box` on a thread of its own: the iterator in it, if `box`
  held its last reference, ends there (its destructor's wait off the
  caller's thread). The caller keeps no reference of its own; if anything
  else does, the iterator ends where that one goes, as it would have
  anyway. Not a daemon thread: a program that exits right after training
  waits for the iterator's end at exit, where it waited for it inside
  `train` before, rather than leave TensorFlow's threads mid-destructor."""
  threading.Thread(target=box.clear, name='estimator_rt-input-release'
                   ).start()
