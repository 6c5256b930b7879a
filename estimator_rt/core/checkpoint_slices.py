"""The slices a checkpoint stores its partitioned tensors in, read as
TensorFlow's restore reads them.

A partitioned variable (`tf.compat.v1.fixed_size_partitioner` and the
others, v1 canned models' input layers, embedding tables) is saved by a
name-based Saver under its whole name, one stored slice per part. Its
optimizer slots are too, and they need not cover the whole: a v1 optimizer
names each part's slot after the part (`.../embedding_weights/t_0/Adagrad`
holds rows 0-3 of a [7, 4] tensor, `t_1/Adagrad` rows 4-6), so that
`get_tensor` of the key ("the whole tensor") fails with "Does not have
sufficient slices", while a restore, which asks for each part's slice,
reads it. tf.estimator 2.15's `get_variable_value` of such a key failed
the same way; its restore worked.

The index lists a sliced key's stored slices under keys of their own
(`tensor_bundle`'s `EncodeTensorNameSlice`: the name and each dimension's
start and length in TensorFlow's `OrderedCode`), which the reader shows in
its `debug_string`; `stored_slices` decodes them. `SliceReader` reads
slices (and DT_VARIANT tensors, which have no NumPy form) with the
`RestoreV2` op a restore runs, so each stored slice's CRC is verified as
when a Saver restores it.
"""

import re
from typing import Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

# The first bytes of a slice's key: OrderedCode's number 0.
_SLICE_KEY_MARK = 0
# What a session's error says after the node's traceback.
_GRAPH_ERROR_CAUSE = re.compile(r"\nNode: '[^'\n]*'\n(.*?)(?:\n\t \[\[|$)",
                                re.S)


def _read_unsigned(data: bytes, pos: int) -> Tuple[int, int]:
  """OrderedCode's `WriteNumIncreasing`: a length byte, then that many
  big-endian bytes. Returns (value, next position)."""
  length = data[pos]
  end = pos + 1 + length
  if length > 8 or end > len(data):
    raise ValueError(f'bad number at byte {pos}')
  return int.from_bytes(data[pos + 1:end], 'big'), end


def _read_signed(data: bytes, pos: int) -> Tuple[int, int]:
  """OrderedCode's `WriteSignedNumIncreasing`: the two's complement
  big-endian bytes of the value, their first L bits flipped to say the
  length L (ones for a value >= 0, zeros below). Returns (value, next
  position)."""
  mask = 0 if data[pos] & 0x80 else 0xff
  length, index = 0, pos
  # The length: the leading bits that differ from the sign, up to 10.
  while index < len(data) and length < 11:
    byte = data[index] ^ mask
    ones = 8 - (byte ^ 0xff).bit_length()
    length += ones
    if ones < 8:
      break
    index += 1
  end = pos + length
  if not 1 <= length <= 10 or end > len(data):
    raise ValueError(f'bad signed number at byte {pos}')
  bits = 8 * length
  raw = int.from_bytes(data[pos:end], 'big')
  raw ^= ((1 << length) - 1) << (bits - length)  # Clear the length bits.
  if mask:  # Negative: the bits are its two's complement.
    raw -= 1 << bits
  return raw, end


def _read_string(data: bytes, pos: int) -> Tuple[bytes, int]:
  """OrderedCode's `WriteString`: \\x00 and \\xff escaped, ended by
  \\x00\\x01."""
  out = bytearray()
  while pos + 1 < len(data):
    byte, following = data[pos], data[pos + 1]
    if byte == 0 and following == 1:
      return bytes(out), pos + 2
    if byte in (0, 0xff):
      if following != (0xff if byte == 0 else 0):
        break
      out.append(byte)
      pos += 2
    else:
      out.append(byte)
      pos += 1
  raise ValueError(f'unterminated name at byte {pos}')


def _read_slice_key(data: bytes, pos: int
                    ) -> Tuple[str, List[Tuple[int, int]], int]:
  """(tensor name, [(start, length)] per dimension, next position) of the
  slice key at `pos`; a length of -1 is the whole dimension."""
  mark, pos = _read_unsigned(data, pos)
  if mark != _SLICE_KEY_MARK:
    raise ValueError(f'not a slice key at byte {pos}')
  name, pos = _read_string(data, pos)
  dims, pos = _read_unsigned(data, pos)
  extents = []
  for _ in range(dims):
    start, pos = _read_signed(data, pos)
    length, pos = _read_signed(data, pos)
    extents.append((start, length))
  return name.decode('utf-8', 'replace'), extents, pos


def _spec(shape, extents) -> str:
  """RestoreV2's `shape_and_slices` entry: the whole shape, then each
  dimension's `start,length` (`-` for all of it)."""
  whole = ' '.join(str(int(d)) for d in shape)
  parts = ':'.join('-' if length < 0 else f'{start},{length}'
                   for start, length in extents)
  return f'{whole} {parts}'


def stored_slices(opened) -> Dict[str, List[str]]:
  """The keys of checkpoint reader `opened` that are stored in slices,
  each with its slices' `shape_and_slices` specs (in the index's order).

  Keys stored whole are not listed.

  Raises:
    ValueError: the index's listing cannot be decoded.
  """
  data = opened.debug_string()
  shapes = opened.get_variable_to_shape_map()
  found: Dict[str, List[str]] = {}
  pos = 0
  while pos < len(data):
    if data[pos] == _SLICE_KEY_MARK:
      name, extents, pos = _read_slice_key(data, pos)
      if name not in shapes:
        raise ValueError(f'a slice of {name!r}, which the index does not list')
      found.setdefault(name, []).append(_spec(shapes[name], extents))
    # What follows a key: ` (DT_FLOAT) [4,4]`, then a new line.
    end = data.find(b']\n', pos)
    if end < 0:
      raise ValueError(f'unterminated entry at byte {pos}')
    pos = end + 2
  return found


class SliceReader:
  """Reads tensors of one checkpoint with TensorFlow's `RestoreV2` op:
  stored slices by their specs, DT_VARIANT tensors whole.

  On this process's CPU, whatever the caller runs in: eagerly when the
  process runs eagerly (TF2 behaviour: about 1 ms for a few slices), else
  (`disable_v2_behavior()`) in a graph and session of its own, made at the
  first read and reused for the next ones, never in the caller's graph.

  Args:
    prefix: the checkpoint's prefix.
  """

  def __init__(self, *, prefix: str):
    self._prefix = prefix
    with tf.init_scope():
      self._eager = tf.executing_eagerly()
    self._graph = None
    self._session = None

  def _restore(self, key: str, specs: List[str], dtype: tf.DType) -> List:
    with tf.device('/cpu:0'):
      return list(tf.raw_ops.RestoreV2(
          prefix=self._prefix, tensor_names=[key] * len(specs),
          shape_and_slices=specs, dtypes=[dtype] * len(specs)))

  def _graph_ops(self, key: str, specs: List[str], dtype: tf.DType) -> List:
    if self._graph is None:
      self._graph = tf.Graph()
      config = tf.compat.v1.ConfigProto(device_count={'GPU': 0})
      # A few restore ops, run once: Grappler's passes would cost more
      # than the read.
      config.graph_options.rewrite_options.disable_meta_optimizer = True
      self._session = tf.compat.v1.Session(graph=self._graph, config=config)
    with self._graph.as_default():
      tensors = self._restore(key, specs, dtype)
    # A DT_VARIANT tensor has no NumPy form: its op is run, not fetched.
    return [t.op for t in tensors] if dtype == tf.variant else tensors

  def read(self, key: str, specs: List[str], dtype: tf.DType
           ) -> List[Optional[np.ndarray]]:
    """The slices `specs` of `key` (`['']`: the whole tensor), as arrays;
    None for a DT_VARIANT tensor, which is read (its CRC checked) but has
    no NumPy form.

    Raises:
      tf.errors.OpError: a slice cannot be read (a damaged or missing data
        file, a CRC that does not match, a slice the index lacks).
    """
    return self.read_all({key: (specs, dtype)})[key]

  def read_all(self, wanted: Dict[str, Tuple[List[str], tf.DType]]
               ) -> Dict[str, List[Optional[np.ndarray]]]:
    """`read` of each key of `wanted` (key -> (specs, dtype)); in graph
    behaviour, in one run of the session.

    Raises:
      tf.errors.OpError: as `read`, for any of them.
    """
    if not wanted:
      return {}
    if self._eager:
      with tf.init_scope():
        return {key: [None if dtype == tf.variant else t.numpy()
                      for t in self._restore(key, specs, dtype)]
                for key, (specs, dtype) in wanted.items()}
    fetches = {key: self._graph_ops(key, specs, dtype)
               for key, (specs, dtype) in wanted.items()}
    try:
      found = self._session.run(fetches)
    except tf.errors.OpError as e:
      # The reason alone, without the session's "Detected at node ...
      # defined at" traceback of this module's lines.
      reason = _GRAPH_ERROR_CAUSE.search(e.message)
      if reason is None:
        raise
      raise type(e)(e.node_def, e.op, reason.group(1)) from e
    return {key: [None if isinstance(f, tf.Operation) else value
                  for f, value in zip(fetches[key], values)]
            for key, values in found.items()}

  def close(self) -> None:
    if self._session is not None:
      self._session.close()
      self._session = None
