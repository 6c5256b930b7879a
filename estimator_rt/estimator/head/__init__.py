"""tf.estimator 2.15's heads, for canned estimators and custom model_fns:

    head = estimator_rt.estimator.head.BinaryClassHead()
    def model_fn(features, labels, mode):
      logits = ...
      return head.create_estimator_spec(features=features, mode=mode,
                                        labels=labels, logits=logits,
                                        train_op_fn=...)

In a TF1-style model_fn (graph engine) pass `optimizer=` a Keras 2 optimizer
(`tf_keras.optimizers.legacy.*`) and `trainable_variables=`, or
`train_op_fn=`; in a TF2 model_fn (eager engine) pass a Keras 3 optimizer.
See base_head.py (what every head does) and metrics.py (how metrics follow
the engine).
"""

from estimator_rt.estimator.head.base_head import Head
from estimator_rt.estimator.head.binary_class_head import BinaryClassHead
from estimator_rt.estimator.head.keys import MetricKeys
from estimator_rt.estimator.head.keys import PredictionKeys
from estimator_rt.estimator.head.multi_class_head import MultiClassHead
from estimator_rt.estimator.head.multi_head import MultiHead
from estimator_rt.estimator.head.multi_label_head import MultiLabelHead
from estimator_rt.estimator.head.regression_head import LogisticRegressionHead
from estimator_rt.estimator.head.regression_head import PoissonRegressionHead
from estimator_rt.estimator.head.regression_head import RegressionHead
from estimator_rt.estimator.head.sequential_head import SequentialHead
from estimator_rt.estimator.head.sequential_head import SequentialHeadWrapper
