"""Synthetic input_fns: no files, no downloads, deterministic given a seed.

Each input_fn generates one fixed block of examples with NumPy (seeded) and
serves it from memory, so the pipeline itself costs next to nothing and the
same params always give the same data. Every input_fn returns a
`tf.data.Dataset` of ({'x': features}, labels) and follows the
input_context contract of `input_fns._common.shard_and_batch`.

Params common to all three:
  batch_size: the GLOBAL batch size (required), at most num_examples.
  seed: seed of the data (and of the shuffle order) (default 0).
  repeat: True (default) repeats forever; False makes one pass.
  num_epochs: number of passes; overrides 'repeat' when given.
  drop_remainder: see `shard_and_batch` (default: True iff infinite).
"""

from typing import Any, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf

from estimator_rt.core.errors import InputFnError
from . import _common

_LINEAR_DATA = ('regression', 'constant')

# The generated block is held in memory (and drawn in float64 first): at
# most 2**26 values (512 MiB while drawing), far more than a synthetic test
# needs, and refused before anything is drawn.
MAX_VALUES = 2**26


def _check_size(name: str, params: Mapping[str, Any], num_examples: int,
                values: int) -> None:
  """Refuses, before anything is generated, a block of more than MAX_VALUES
  `values` or a batch_size larger than the block."""
  if values > MAX_VALUES:
    raise InputFnError(
        f'{name}: these params would generate {values} values '
        f"(params['num_examples']={num_examples}); at most {MAX_VALUES} are "
        'generated. Lower num_examples or the size of an example.')
  _common.global_batch_size(name, params, num_examples=num_examples,
                            data="params['num_examples']")


def _make_regression(num_features: int, num_examples: int, noise: float,
                     seed: int) -> Tuple[np.ndarray, ...]:
  rng = np.random.default_rng(seed)
  weights = rng.uniform(-1.0, 1.0, size=num_features).astype(np.float32)
  bias = np.float32(rng.uniform(-1.0, 1.0))
  x = rng.normal(size=(num_examples, num_features)).astype(np.float32)
  y = (x @ weights + bias +
       noise * rng.normal(size=num_examples)).astype(np.float32)
  return x, y, weights, bias


def linear_truth(params: Mapping[str, Any]) -> Tuple[np.ndarray, float]:
  """Returns (weights [num_features], bias) behind `linear_input_fn` data.

  Only meaningful for params['data'] == 'regression' (the default); for
  'constant' any weights with sum(w) + b == 1 fit exactly.
  """
  name = 'input_fns.synthetic.linear_truth'
  params = _common.check_params(name, params)
  _, _, weights, bias = _make_regression(
      _common.int_param(name, params, 'num_features', 1), 1,
      0.0, _common.int_param(name, params, 'seed', 0, minimum=0))
  return weights, float(bias)


def linear_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """Data for `model_fns.linear`: ({'x': float32 [b, d]}, float32 [b]).

  Params (besides the common ones in the module docstring):
    data: 'regression' (default): y = x.w + b + noise, x ~ N(0, 1), with w
      and b drawn from the seed (see `linear_truth`); or 'constant': the
      distribution-strategy README's data, x = [1.] * num_features and
      y = 1.0 for every example.
    num_features: d (default 1).
    num_examples: size of the generated block, repeated (default 1024).
    noise_stddev: standard deviation of the label noise (default 0.1).

  Raises:
    InputFnError: a param is missing or out of range.
  """
  name = 'input_fns.synthetic.linear_input_fn'
  params = _common.check_params(name, params)
  data = params.get('data', 'regression')
  if data not in _LINEAR_DATA:
    raise InputFnError(
        f"{name}: params['data'] must be one of {_LINEAR_DATA}, got "
        f'{data!r}.')
  num_features = _common.int_param(name, params, 'num_features', 1)
  num_examples = _common.int_param(name, params, 'num_examples', 1024)
  _check_size(name, params, num_examples, num_examples * (num_features + 1))
  if data == 'constant':
    x = np.ones((num_examples, num_features), np.float32)
    y = np.ones((num_examples,), np.float32)
  else:
    x, y, _, _ = _make_regression(
        num_features, num_examples,
        _common.float_param(name, params, 'noise_stddev', 0.1),
        _common.int_param(name, params, 'seed', 0, minimum=0))
  dataset = tf.data.Dataset.from_tensor_slices(({_common.FEATURES_KEY: x}, y))
  # No shuffle: the examples are i.i.d. draws already.
  return _common.shard_and_batch(
      dataset, name=name, params=params, input_context=input_context,
      epochs=_common.num_epochs(name, params, repeat_default=True))


def classification_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """Gaussian blobs: ({'x': float32 [b, num_features]}, int64 [b]).

  Each class has a center drawn uniformly from [-center_box, center_box]^d;
  an example is its class center plus N(0, cluster_std^2) noise, with the
  class drawn uniformly.

  Params (besides the common ones in the module docstring):
    num_features: d (default 20).
    n_classes: number of classes, >= 2 (default 10).
    num_examples: size of the generated block (default 1000).
    cluster_std: spread of each blob (default 1.0).
    center_box: half-width of the box the centers are drawn from
      (default 3.0).
    shuffle: reshuffle the block every epoch, seeded (default True).

  Raises:
    InputFnError: a param is missing or out of range.
  """
  name = 'input_fns.synthetic.classification_input_fn'
  params = _common.check_params(name, params)
  num_features = _common.int_param(name, params, 'num_features', 20)
  n_classes = _common.int_param(name, params, 'n_classes', 10, minimum=2)
  num_examples = _common.int_param(name, params, 'num_examples', 1000)
  cluster_std = _common.float_param(name, params, 'cluster_std', 1.0)
  center_box = _common.float_param(name, params, 'center_box', 3.0)
  seed = _common.int_param(name, params, 'seed', 0, minimum=0)
  _check_size(name, params, num_examples,
              (num_examples + n_classes) * num_features + num_examples)

  rng = np.random.default_rng(seed)
  centers = rng.uniform(-center_box, center_box, size=(n_classes,
                                                      num_features))
  labels = rng.integers(0, n_classes, size=num_examples)
  x = (centers[labels] +
       cluster_std * rng.normal(size=(num_examples, num_features)))
  dataset = tf.data.Dataset.from_tensor_slices(
      ({_common.FEATURES_KEY: x.astype(np.float32)}, labels.astype(np.int64)))
  shuffle = _common.bool_param(name, params, 'shuffle', True)
  return _common.shard_and_batch(
      dataset, name=name, params=params, input_context=input_context,
      epochs=_common.num_epochs(name, params, repeat_default=True),
      shuffle_buffer=num_examples if shuffle else 0, seed=seed)


def images_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """Random images: ({'x': float32 [b, size, size, channels]}, int64 [b]).

  Pixels are in [0, 1]: half a fixed random template of the example's class,
  half uniform noise, so a CNN can learn the classes while the data stays
  random.

  Params (besides the common ones in the module docstring):
    image_size: height and width (default 32).
    channels: default 3.
    n_classes: number of classes, >= 2 (default 10).
    num_examples: size of the generated block (default 256).
    shuffle: reshuffle the block every epoch, seeded (default True).

  Raises:
    InputFnError: a param is missing or out of range.
  """
  name = 'input_fns.synthetic.images_input_fn'
  params = _common.check_params(name, params)
  size = _common.int_param(name, params, 'image_size', 32)
  channels = _common.int_param(name, params, 'channels', 3)
  n_classes = _common.int_param(name, params, 'n_classes', 10, minimum=2)
  num_examples = _common.int_param(name, params, 'num_examples', 256)
  seed = _common.int_param(name, params, 'seed', 0, minimum=0)
  _check_size(name, params, num_examples,
              (num_examples + n_classes) * size * size * channels +
              num_examples)

  rng = np.random.default_rng(seed)
  templates = rng.uniform(size=(n_classes, size, size, channels))
  labels = rng.integers(0, n_classes, size=num_examples)
  noise = rng.uniform(size=(num_examples, size, size, channels))
  images = (0.5 * templates[labels] + 0.5 * noise).astype(np.float32)
  dataset = tf.data.Dataset.from_tensor_slices(
      ({_common.FEATURES_KEY: images}, labels.astype(np.int64)))
  shuffle = _common.bool_param(name, params, 'shuffle', True)
  return _common.shard_and_batch(
      dataset, name=name, params=params, input_context=input_context,
      epochs=_common.num_epochs(name, params, repeat_default=True),
      shuffle_buffer=num_examples if shuffle else 0, seed=seed)
