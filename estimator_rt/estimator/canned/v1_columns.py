"""TF1's own feature columns (`tensorflow.python.feature_column.
feature_column._numeric_column` and its kind, the `_FeatureColumn`s of
TensorFlow 1.x) as the equal `tf.feature_column` columns, for the
tf.compat.v1.estimator canned estimators.

tf.estimator 2.15's v1 canned estimators built their input layers with
tf.compat.v1.feature_column.input_layer, which took those columns; the
models here build theirs with Keras' DenseFeatures, which takes the v2
columns only. Each TF1 column has a v2 class of the same name (without the
underscore) and the same fields, so it is rebuilt as that class. An
embedding column is refused: TF1 kept its initializer inside a closure
(`layer_creator`) that cannot be taken back out.
"""

from typing import Any, Optional, Sequence, Tuple

from tensorflow.python.feature_column import feature_column as fc_v1
from tensorflow.python.feature_column import feature_column_v2 as fc_v2
from tensorflow.python.feature_column import feature_column_v2_types as fc_types

from estimator_rt.core.errors import UserInputError

# The v2 fields a TF1 column does not have, and their value.
_NEW_FIELDS = {'file_format': None}


def _convert(value: Any, *, argument: str) -> Any:
  """`value` with TF1 columns in it (a column, or a column's field holding
  columns, as a crossed column's keys) replaced by v2 ones."""
  if isinstance(value, (list, tuple)) and not hasattr(value, '_fields'):
    return type(value)(_convert(v, argument=argument) for v in value)
  if not isinstance(value, (fc_v1._FeatureColumn, fc_types.FeatureColumn)):  # pylint: disable=protected-access
    return value
  if fc_v2.is_feature_column_v2([value]):
    return value
  # A TF1 column, or a v2 one over TF1 columns (rebuilt over v2 ones).
  name = type(value).__name__
  v2_class = getattr(fc_v2, name.lstrip('_'), None)
  fields = getattr(value, '_fields', ())
  v2_fields = getattr(v2_class, '_fields', None)
  if v2_fields is None or v2_fields[:len(fields)] != tuple(
      _renamed(f) for f in fields) or any(
          f not in _NEW_FIELDS for f in v2_fields[len(fields):]):
    raise UserInputError(
        f'{argument} holds a TensorFlow 1 feature column ({name} '
        f'{getattr(value, "name", value)!r}) that estimator_rt cannot turn '
        'into a tf.feature_column one; build it with tf.feature_column.* '
        '(the v1 canned estimators take those).')
  converted = [_convert(v, argument=argument) for v in value]
  converted += [_NEW_FIELDS[f] for f in v2_fields[len(fields):]]
  return v2_class(*converted)


def _renamed(field: str) -> str:
  # IdentityCategoricalColumn's one renamed field.
  return 'number_buckets' if field == 'num_buckets' else field


def v2_columns(columns: Optional[Sequence[Any]], *, argument: str
               ) -> Optional[Tuple[Any, ...]]:
  """`columns` with each TF1 feature column made the equal v2 column (v2
  columns, and what is no column, as they are; None stays None).

  Raises:
    UserInputError: (a ValueError) a TF1 column with no equal v2 column (an
      embedding column), naming `argument` and the column.
  """
  if columns is None:
    return None
  return tuple(_convert(c, argument=argument) for c in columns)
