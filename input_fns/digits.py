"""Handwritten digits shipped with this package: real data with no download.

`input_fns/data/digits.csv.gz` (see the README beside it) is the file
scikit-learn's `load_digits` reads: 1797 8x8 grayscale digits, 10 classes.
Features are the 64 pixels scaled from 0..16 to [0, 1] as float32, labels
are int64 class ids.

The split is fixed: the examples are permuted once with SPLIT_SEED and the
last EVAL_FRACTION of the permutation is the eval set (359 examples), the
rest the train set (1438). Both input_fns return ({'x': float32 [b, 64]},
int64 [b]) and follow the input_context contract of
`input_fns._common.shard_and_batch`.
"""

import functools
import gzip
import os
from typing import Any, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf

from . import _common

NUM_FEATURES = 64
N_CLASSES = 10
EVAL_FRACTION = 0.2
SPLIT_SEED = 0
DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                         'digits.csv.gz')


@functools.lru_cache(maxsize=1)
def load_split() -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """Returns (x_train, y_train, x_eval, y_eval), loaded once per process.

  The arrays are read-only: they are shared by every caller through the
  cache, so a caller that modified them would change everyone's data.
  """
  with gzip.open(DATA_FILE, 'rt') as f:
    table = np.loadtxt(f, delimiter=',')  # Pixels, then the class.
  x = (table[:, :-1] / 16.0).astype(np.float32)
  y = table[:, -1].astype(np.int64)
  order = np.random.default_rng(SPLIT_SEED).permutation(len(y))
  x, y = x[order], y[order]
  num_eval = int(len(y) * EVAL_FRACTION)
  arrays = (x[:-num_eval], y[:-num_eval], x[-num_eval:], y[-num_eval:])
  for array in arrays:
    array.flags.writeable = False
  return arrays


def train_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """The train split, reshuffled every epoch, repeated, batched.

  Params:
    batch_size: the GLOBAL batch size (required), at most the 1438
      examples of the split.
    seed: shuffle seed; the same seed gives the same order (default 0).
    num_epochs: number of passes (default None: repeat forever).
    drop_remainder: see `shard_and_batch` (default: True iff infinite).

  Raises:
    InputFnError: a param is missing or out of range.
  """
  name = 'input_fns.digits.train_input_fn'
  params = _common.check_params(name, params)
  x, y, _, _ = load_split()
  _common.global_batch_size(name, params, num_examples=len(y),
                            data='the digits train split')
  dataset = tf.data.Dataset.from_tensor_slices(({_common.FEATURES_KEY: x}, y))
  return _common.shard_and_batch(
      dataset, name=name, params=params, input_context=input_context,
      epochs=_common.int_param(name, params, 'num_epochs', None),
      shuffle_buffer=len(y),
      seed=_common.int_param(name, params, 'seed', 0, minimum=0))


def eval_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """The eval split: one pass, in a fixed order, final partial batch kept.

  With an input context, pipeline i gets examples i, i + n, i + 2n, ... so
  that n pipelines together see every eval example exactly once.

  Params:
    batch_size: the GLOBAL batch size (required), at most the 359 examples
      of the split.

  Raises:
    InputFnError: 'batch_size' is missing or out of range.
  """
  name = 'input_fns.digits.eval_input_fn'
  params = _common.check_params(name, params)
  _, _, x, y = load_split()
  _common.global_batch_size(name, params, num_examples=len(y),
                            data='the digits eval split')
  dataset = tf.data.Dataset.from_tensor_slices(({_common.FEATURES_KEY: x}, y))
  return _common.shard_and_batch(
      dataset, name=name, params=params, input_context=input_context,
      epochs=1)
