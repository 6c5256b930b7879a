"""tf.estimator 2.15's `gc`: filters choosing which path-named items to keep.

A filter takes a list of `Path`s and returns the sorted list of those it
selects; exporters keep the largest export versions and delete the rest
(`_negation` of `_largest_export_versions`). 2.15's exporters and programs
that clean export directories themselves import these private names.
"""

import collections
import heapq
import os

import tensorflow as tf
# Looked up at each call, not bound here: code (and 2.15's tests) patch
# `gfile.ListDirectory` to list a remote directory.
from tensorflow.python.platform import gfile

# One item: its full path, and the version a parser read from it (None when
# it has none).
Path = collections.namedtuple('Path', 'path export_version')


def _versioned(paths):
  return [p for p in paths if p.export_version is not None]


def _largest_export_versions(n):
  """A filter keeping the `n` paths of largest export_version (paths
  without a version are never kept)."""

  def keep(paths):
    return sorted(heapq.nlargest(n, _versioned(paths),
                                 key=lambda p: p.export_version))

  return keep


def _one_of_every_n_export_versions(n):
  """A filter keeping, of each interval of versions [0, n], (n, 2n],
  (2n, 3n], ..., the path of largest version."""

  def keep(paths):
    largest_in = {}
    for p in _versioned(paths):
      # Version 0 belongs to the first interval, (0, n] extended down.
      interval = (p.export_version - 1) // n if p.export_version else 0
      kept = largest_in.get(interval)
      if kept is None or kept.export_version < p.export_version:
        largest_in[interval] = p
    return sorted(largest_in.values())

  return keep


def _mod_export_version(n):
  """A filter keeping the paths whose export_version is a multiple of
  `n`."""

  def keep(paths):
    return sorted(p for p in paths if p.export_version % n == 0)

  return keep


def _union(lf, rf):
  """A filter keeping what either filter `lf` or `rf` keeps."""

  def keep(paths):
    return sorted(set(lf(paths)) | set(rf(paths)))

  return keep


def _negation(f):
  """A filter keeping what filter `f` does not."""

  def keep(paths):
    return sorted(set(paths) - set(f(paths)))

  return keep


def _get_paths(base_dir, parser):
  """The sorted `Path`s of the entries of directory `base_dir`, each made by
  `parser(Path(full path, None))`; entries it returns None for are left
  out. `base_dir` may be str or bytes; the paths are str."""
  base = tf.compat.as_str_any(base_dir)
  found = []
  for entry in gfile.ListDirectory(base_dir):
    # A remote (gs://) listing ends directory names with '/'.
    entry = tf.compat.as_str_any(entry).rstrip('/')
    path = parser(Path(os.path.join(base, entry), None))
    if path:
      found.append(path)
  return sorted(found)
