"""tf.estimator 2.15's `inputs.numpy_io` module, over estimator_rt.inputs.numpy_io.

`numpy_input_fn` is the runtime's: the input_fn it returns is read by the
runtime as a tf.data pipeline, and returns a batch's tensors to code that
calls it in a graph, as 2.15's did (estimator_rt/inputs/numpy_io.py,
arrays_input_fn). Here too are the helpers 2.15's module had: checking `x`
and ordering its arrays, and the key a lone `y` is read under.
"""

# pylint: disable=unused-import
from estimator_rt.inputs.numpy_io import _get_unique_target_key
from estimator_rt.inputs.numpy_io import _TARGET_KEY
from estimator_rt.inputs.numpy_io import _validate_and_convert_features
from estimator_rt.inputs.numpy_io import numpy_input_fn
# pylint: enable=unused-import

# What 2.15 took as a string key (six's, on Python 3).
string_types = (str,)
