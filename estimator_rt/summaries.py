"""TensorBoard event files: writing scalars, and reading them back.

Training scalars go to model_dir, evaluation scalars to model_dir/eval (or
eval_<name>), as tf.estimator laid them out, so existing TensorBoard
set-ups keep working. Reading is used by early stopping (which also works
when a separate evaluator task writes the events) and by tests.
"""

import collections
import os
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf


# TensorBoard's scalar plugin marker. tf.summary.scalar would write the
# same, but needs the tensorboard package, which TensorFlow 2.21 no longer
# installs; writing the record ourselves keeps it optional.
_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name='scalars'))


def eval_dir(model_dir: str, name: Optional[str] = None) -> str:
  """Where evaluation summaries of evaluation `name` go."""
  return os.path.join(model_dir, 'eval' if not name else f'eval_{name}')


class ScalarWriter:
  """Writes scalars to one directory; the file is created on first write.

  Creating the writer lazily keeps model_dir untouched until there is
  something to write (bad input must leave model_dir as it was).
  """

  def __init__(self, logdir: str):
    self._logdir = logdir
    self._writer = None

  def write(self, scalars: Mapping[str, float], step: int) -> None:
    if self._writer is None:
      self._writer = tf.summary.create_file_writer(self._logdir)
    with self._writer.as_default():
      for name, value in scalars.items():
        tf.summary.write(name, tf.constant(value, tf.float32), step=step,
                         metadata=_SCALAR_METADATA)

  def flush(self) -> None:
    if self._writer is not None:
      self._writer.flush()

  def close(self) -> None:
    if self._writer is not None:
      self._writer.close()
      self._writer = None


def _event_files(logdir: str) -> List[str]:
  if not tf.io.gfile.isdir(logdir):
    return []
  return sorted(os.path.join(logdir, f) for f in tf.io.gfile.listdir(logdir)
                if 'tfevents' in f)


def event_files_state(logdir: str) -> Tuple[Tuple[str, int], ...]:
  """(file, size) of each event file: changes whenever anything is written."""
  return tuple((path, tf.io.gfile.stat(path).length)
               for path in _event_files(logdir))


def read_scalars(logdir: str) -> Dict[str, List[Tuple[int, float]]]:
  """Every scalar in `logdir`'s event files: tag -> [(step, value)], by step.

  Files are read in name order (creation time); a file still being written
  is read up to its last complete record.
  """
  result = collections.defaultdict(list)
  for path in _event_files(logdir):
    try:
      for record in tf.data.TFRecordDataset(path):
        event = tf.compat.v1.Event.FromString(record.numpy())
        for value in event.summary.value:
          if value.HasField('tensor'):
            number = float(np.asarray(tf.make_ndarray(value.tensor)))
          elif value.HasField('simple_value'):
            number = float(value.simple_value)
          else:
            continue
          result[value.tag].append((int(event.step), number))
    except tf.errors.DataLossError:
      continue  # A record being written right now; the next read gets it.
  return {tag: sorted(points, key=lambda p: p[0])
          for tag, points in result.items()}
