"""Uses known to fail on TensorFlow 2.16+ whatever provides tf.estimator.

`python -m estimator_rt.compat --check` shows these beside the tf.estimator
names, as their own kind: they are not tf.estimator's, so estimator_rt
neither runs nor refuses them, but a program that reaches one fails on
TensorFlow 2.16+ with or without estimator_rt. Each entry is a qualified
name prefix (as `import` spells it) and one line: why, and what to use.
The prefixes are matched with any `compat.v1`/`compat.v2` nesting after
`tensorflow` (`tf.compat.v1.contrib` is `tf.contrib`).
"""

import re
from typing import Optional

BREAKS = {
    'tensorflow.contrib':
        'tf.contrib was removed in TensorFlow 2.0; use its TF2 '
        'replacement (tf.compat.v1 for most of it, tf_slim for '
        'tf.contrib.slim)',
    'keras.estimator':
        'Keras 3 (`import keras` on TensorFlow 2.16+) has no estimator '
        'module; use tf.keras.estimator.model_to_estimator, which the '
        'runner serves from tf_keras',
}

_COMPAT = re.compile(r'^tensorflow(\.compat\.v[12])+(?=\.|$)')


def reason(qualified: str) -> Optional[str]:
  """The one-line reason `qualified` (a dotted name from its root module)
  fails on TensorFlow 2.16+, or None if none is known."""
  qualified = _COMPAT.sub('tensorflow', qualified)
  for prefix, why in BREAKS.items():
    if qualified == prefix or qualified.startswith(prefix + '.'):
      return why
  return None
