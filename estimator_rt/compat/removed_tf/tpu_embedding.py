"""tensorflow.python.tpu.tpu_embedding, over estimator_rt.tpu_embedding.

TensorFlow <= 2.15's configuration of TPU embedding tables, which
TPUEstimator's `embedding_config_spec` took (tf.estimator 2.15's TPU
embedding tests and programs import it); TensorFlow 2.16 removed it with
TPUEstimator. Its configuration classes are served with 2.15's validation;
`TPUEmbedding` (the tables on TPU hardware) is refused in one line.
"""

# pylint: disable=unused-import,g-bad-import-order,g-multiple-import
from estimator_rt.tpu_embedding import (
    INFERENCE, TRAINING, AdagradMomentumParameters,
    AdagradMomentumSlotVariableNames, AdagradMomentumSlotVariables,
    AdagradParameters, AdagradSlotVariableNames, AdagradSlotVariables,
    AdamParameters, AdamSlotVariableNames, AdamSlotVariables, DeviceConfig,
    EnqueueData, FeatureConfig, FrequencyEstimatorParameters,
    FrequencyEstimatorSlotVariableNames, FrequencyEstimatorSlotVariables,
    FtrlParameters, FtrlSlotVariable, FtrlSlotVariableNames,
    MomentumParameters, MomentumSlotVariableNames, MomentumSlotVariables,
    ProximalAdagradParameters, ProximalAdagradSlotVariableNames,
    ProximalAdagradSlotVariables, ProximalYogiParameters,
    ProximalYogiSlotVariableNames, ProximalYogiSlotVariables,
    RaggedEnqueueData, RMSPropParameters, RMSPropSlotVariableNames,
    RMSPropSlotVariables, StochasticGradientDescentParameters, TableConfig,
    TPUEmbedding, VariablesAndOps, _OptimizationParameters,
    get_enqueue_datas_list_from_ragged_tensors_list,
    get_enqueue_datas_list_from_sparse_tensors_list)
# pylint: enable=unused-import,g-bad-import-order,g-multiple-import
