"""Generated tabular data of the kind wide & deep models were built for.

Every input_fn returns a `tf.data.Dataset` of (features, labels) where
features is a dict:

    'age'        float32 [b]   uniform in [18, 80)
    'hours'      float32 [b]   uniform in [10, 70)
    'education'  string  [b]   one of EDUCATION
    'occupation' string  [b]   one of 40 generated names ('job_0', ...)
    'region'     int64   [b]   an id in [0, 100)

and labels are int64 [b], 1 with the probability of a fixed logistic rule
over all five features (crosses included), so a linear model with crossed
columns and a DNN both have something to learn. The same params always give
the same data (numpy seeded by params['seed'], default 0).

Params (besides the common ones in `input_fns/__init__.py`): num_examples
(default 2000), seed, shuffle (default True), num_epochs.
"""

from typing import Any, Mapping, Optional

import numpy as np
import tensorflow as tf

from . import _common

EDUCATION = ('none', 'primary', 'secondary', 'bachelors', 'masters',
             'doctorate', 'vocational', 'other')
NUM_OCCUPATIONS = 40
NUM_REGIONS = 100


def _generate(num_examples: int, seed: int):
  rng = np.random.default_rng(seed)
  age = rng.uniform(18, 80, num_examples).astype(np.float32)
  hours = rng.uniform(10, 70, num_examples).astype(np.float32)
  education = rng.integers(0, len(EDUCATION), num_examples)
  occupation = rng.integers(0, NUM_OCCUPATIONS, num_examples)
  region = rng.integers(0, NUM_REGIONS, num_examples)
  # The rule: fixed weights per value, drawn from their own seed.
  weights = np.random.default_rng(1234)
  w_education = weights.normal(0, 1, len(EDUCATION))
  w_occupation = weights.normal(0, 1, NUM_OCCUPATIONS)
  w_cross = weights.normal(0, 1, (len(EDUCATION), NUM_OCCUPATIONS))
  w_region = weights.normal(0, 0.5, NUM_REGIONS)
  logit = (0.04 * (age - 45) + 0.03 * (hours - 40) + w_education[education] +
           w_occupation[occupation] + w_cross[education, occupation] +
           w_region[region])
  labels = (rng.uniform(size=num_examples) <
            1 / (1 + np.exp(-logit))).astype(np.int64)
  features = {
      'age': age,
      'hours': hours,
      'education': np.array(EDUCATION, dtype=object)[education].astype(bytes),
      'occupation': np.array([f'job_{i}'.encode() for i in occupation]),
      'region': region.astype(np.int64),
  }
  return features, labels


def _input_fn(name, params, input_context, *, seed_offset, repeat_default):
  params = _common.check_params(name, params)
  num_examples = _common.int_param(name, params, 'num_examples', 2000)
  seed = _common.int_param(name, params, 'seed', 0, minimum=0) + seed_offset
  features, labels = _generate(num_examples, seed)
  dataset = tf.data.Dataset.from_tensor_slices((features, labels))
  shuffle = _common.bool_param(name, params, 'shuffle', repeat_default)
  return _common.shard_and_batch(
      dataset, name=name, params=params, input_context=input_context,
      epochs=_common.num_epochs(name, params, repeat_default=repeat_default),
      shuffle_buffer=num_examples if shuffle else 0, seed=seed)


def train_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """The training data, repeated and shuffled (see the module docstring)."""
  return _input_fn('input_fns.tabular.train_input_fn', params, input_context,
                   seed_offset=0, repeat_default=True)


def eval_input_fn(
    params: Optional[Mapping[str, Any]],
    input_context: Optional[tf.distribute.InputContext] = None
) -> tf.data.Dataset:
  """Held-out data from another seed, one pass, in order."""
  return _input_fn('input_fns.tabular.eval_input_fn', params, input_context,
                   seed_offset=10_000, repeat_default=False)


def _standardized(low: float, high: float):
  """A normalizer_fn to mean 0 and variance 1 for values uniform in
  [low, high), the generator's ranges."""
  mean, std = (low + high) / 2, (high - low) / 12 ** 0.5

  def normalize(values):
    return (values - mean) / std

  return normalize


def feature_columns():
  """The columns a wide & deep model uses on this data:
  (wide columns, deep columns).

  The deep side reads age and hours standardized, next to embeddings of
  values near 1: raw (ages up to 80), the binary's wide & deep model ended
  400 steps at eval AUC 0.48-0.66 on three seeds and 2,000 steps at
  0.66-0.76; standardized, at 0.57-0.71 and 0.75-0.78. The wide side
  buckets the raw age.
  """
  fc = tf.feature_column
  age = fc.numeric_column('age')
  hours = fc.numeric_column('hours',
                            normalizer_fn=_standardized(10.0, 70.0))
  deep_age = fc.numeric_column('age', normalizer_fn=_standardized(18.0, 80.0))
  education = fc.categorical_column_with_vocabulary_list('education',
                                                         EDUCATION)
  occupation = fc.categorical_column_with_hash_bucket('occupation', 50)
  region = fc.categorical_column_with_identity('region', NUM_REGIONS)
  age_buckets = fc.bucketized_column(age, [25, 35, 45, 55, 65])
  wide = [education, occupation, region, age_buckets,
          fc.crossed_column(['education', 'occupation'], 200)]
  deep = [deep_age, hours, fc.indicator_column(education),
          fc.embedding_column(occupation, 8), fc.embedding_column(region, 8)]
  return wide, deep
