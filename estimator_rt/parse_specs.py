"""tf.estimator's parsing specs for `tf.io.parse_example`: the features of
feature columns plus the label (and the example weight)."""

from typing import Any, Dict, Iterable

import tensorflow as tf

from estimator_rt.errors import UserInputError


def _with_label_and_weight(spec: Dict[str, Any], *, label_key: str,
                           label_spec, weight_column) -> Dict[str, Any]:
  if label_key in spec:
    raise UserInputError(
        f'label_key={label_key!r} is also a feature of feature_columns; '
        'give the label another name.')
  spec = dict(spec)
  spec[label_key] = label_spec
  if weight_column is None:
    return spec
  if isinstance(weight_column, str):
    weight_column = tf.feature_column.numeric_column(weight_column)
  spec.update(tf.feature_column.make_parse_example_spec([weight_column]))
  return spec


def classifier_parse_example_spec(feature_columns: Iterable[Any],
                                  label_key: str,
                                  label_dtype=tf.int64,
                                  label_default=None,
                                  weight_column=None) -> Dict[str, Any]:
  """tf.estimator's: the parsing spec of `feature_columns`, a scalar label
  of `label_dtype` under `label_key`, and the weight column if given."""
  return _with_label_and_weight(
      tf.compat.v1.feature_column.make_parse_example_spec(feature_columns),
      label_key=label_key,
      label_spec=tf.io.FixedLenFeature((1,), label_dtype, label_default),
      weight_column=weight_column)


def regressor_parse_example_spec(feature_columns: Iterable[Any],
                                 label_key: str,
                                 label_dtype=tf.float32,
                                 label_default=None,
                                 label_dimension: int = 1,
                                 weight_column=None) -> Dict[str, Any]:
  """tf.estimator's: as `classifier_parse_example_spec`, with a float label
  of `label_dimension` values."""
  return _with_label_and_weight(
      tf.compat.v1.feature_column.make_parse_example_spec(feature_columns),
      label_key=label_key,
      label_spec=tf.io.FixedLenFeature((label_dimension,), label_dtype,
                                       label_default),
      weight_column=weight_column)

