"""tf.estimator 2.15's `inputs.pandas_io` module, over estimator_rt.inputs.numpy_io.

`pandas_input_fn` is the runtime's (an input_fn over a DataFrame's
columns, see numpy_io.arrays_input_fn); `HAS_PANDAS` says whether pandas is
installed here (estimator_rt does not install it), and
`_get_unique_target_key` is 2.15's name for a target column that does not
clash with a feature's.
"""

import importlib.util
import uuid

from estimator_rt.inputs.numpy_io import pandas_input_fn  # pylint: disable=unused-import

HAS_PANDAS = importlib.util.find_spec('pandas') is not None


def _get_unique_target_key(features, target_column_name):
  """`target_column_name`, or, if `features` (a DataFrame) has a column of
  that name, the name with a random suffix."""
  if target_column_name in features:
    target_column_name += '_' + str(uuid.uuid4())
  return target_column_name
