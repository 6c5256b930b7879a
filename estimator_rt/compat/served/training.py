"""tensorflow_estimator.python.estimator.training, served by estimator_rt's
own `estimator_rt.estimator.train_and_evaluate`.

That module has tf.estimator 2.15's shape and names (`train_and_evaluate`
making a `_TrainingExecutor`, `_Evaluator`, `_ContinuousEvalListener`,
`_EvalResult`, `_EvalStatus`, `_StopAtSecsHook`, `_assert_eval_spec`, ...),
so this path *is* that module object: patching one of its names (as 2.15's
tests patch `_TrainingExecutor`) changes what `train_and_evaluate` sees,
for `tf.estimator.train_and_evaluate` too.
"""

import sys

from estimator_rt.estimator import train_and_evaluate as _training

sys.modules[__name__] = _training
