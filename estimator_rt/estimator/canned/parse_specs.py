"""tf.estimator's parsing specs for `tf.io.parse_example`: the features of
feature columns plus the label (and the example weight).

`classifier_parse_example_spec` and `regressor_parse_example_spec` are
tf.estimator's (2.15's `tf.estimator.*`: feature columns of
`tf.feature_column`, sequence columns included); the `_v1` variants are
`tf.compat.v1.estimator`'s, which read the columns as
`tf.compat.v1.feature_column` did (2.15's `canned/parsing_utils.py` had
both).
"""

from typing import Any, Dict, Iterable

import tensorflow as tf

from estimator_rt.core.errors import UserInputError
from estimator_rt.estimator.head import checks


def _feature_spec(feature_columns, *, v1: bool) -> Dict[str, Any]:
  make = (tf.compat.v1.feature_column.make_parse_example_spec if v1 else
          tf.feature_column.make_parse_example_spec)
  return dict(make(feature_columns))


def with_label_and_weight(spec: Dict[str, Any], *, label_key: str,
                           label_spec, weight_column) -> Dict[str, Any]:
  """`spec` with the label's and the weight column's entries added.

  Raises:
    UserInputError: the label or the weight column is also a feature, or
      the weight column is not a numeric column (2.15's messages).
  """
  if label_key in spec:
    raise UserInputError(
        f'label should not be used as feature. label_key: {label_key}, '
        f'features: {spec.keys()}: give the label another name.')
  spec[label_key] = label_spec
  if weight_column is None:
    return spec
  if isinstance(weight_column, str):
    weight_column = tf.feature_column.numeric_column(weight_column)
  if not checks.is_numeric_column(weight_column):
    raise UserInputError(
        'weight_column should be an instance of '
        'tf.feature_column.numeric_column. Given type: '
        f'{type(weight_column)} value: {weight_column}')
  if weight_column.key in spec:
    raise UserInputError(
        'weight_column should not be used as feature. weight_column: '
        f'{weight_column.key}, features: {list(spec)}')
  spec.update(tf.feature_column.make_parse_example_spec([weight_column]))
  return spec


def _classifier_spec(feature_columns, label_key, label_dtype, label_default,
                     weight_column, *, v1: bool) -> Dict[str, Any]:
  return with_label_and_weight(
      _feature_spec(feature_columns, v1=v1), label_key=label_key,
      label_spec=tf.io.FixedLenFeature((1,), label_dtype, label_default),
      weight_column=weight_column)


def _regressor_spec(feature_columns, label_key, label_dtype, label_default,
                    label_dimension, weight_column, *, v1: bool
                    ) -> Dict[str, Any]:
  return with_label_and_weight(
      _feature_spec(feature_columns, v1=v1), label_key=label_key,
      label_spec=tf.io.FixedLenFeature((label_dimension,), label_dtype,
                                       label_default),
      weight_column=weight_column)


def classifier_parse_example_spec(feature_columns: Iterable[Any],
                                  label_key: str,
                                  label_dtype=tf.int64,
                                  label_default=None,
                                  weight_column=None) -> Dict[str, Any]:
  """tf.estimator's: the parsing spec of `feature_columns`, a label of
  shape (1,) and `label_dtype` under `label_key`, and the weight column (a
  key or numeric column) if given."""
  return _classifier_spec(feature_columns, label_key, label_dtype,
                          label_default, weight_column, v1=False)


def regressor_parse_example_spec(feature_columns: Iterable[Any],
                                 label_key: str,
                                 label_dtype=tf.float32,
                                 label_default=None,
                                 label_dimension: int = 1,
                                 weight_column=None) -> Dict[str, Any]:
  """tf.estimator's: as `classifier_parse_example_spec`, with a float label
  of `label_dimension` values."""
  return _regressor_spec(feature_columns, label_key, label_dtype,
                         label_default, label_dimension, weight_column,
                         v1=False)


def classifier_parse_example_spec_v1(feature_columns: Iterable[Any],
                                     label_key: str,
                                     label_dtype=tf.int64,
                                     label_default=None,
                                     weight_column=None) -> Dict[str, Any]:
  """tf.compat.v1.estimator's `classifier_parse_example_spec`: the columns
  read as tf.compat.v1.feature_column reads them."""
  return _classifier_spec(feature_columns, label_key, label_dtype,
                          label_default, weight_column, v1=True)


def regressor_parse_example_spec_v1(feature_columns: Iterable[Any],
                                    label_key: str,
                                    label_dtype=tf.float32,
                                    label_default=None,
                                    label_dimension: int = 1,
                                    weight_column=None) -> Dict[str, Any]:
  """tf.compat.v1.estimator's `regressor_parse_example_spec`."""
  return _regressor_spec(feature_columns, label_key, label_dtype,
                         label_default, label_dimension, weight_column,
                         v1=True)
