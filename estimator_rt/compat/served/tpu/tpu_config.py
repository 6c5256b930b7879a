"""tensorflow_estimator.python.estimator.tpu.tpu_config, over
estimator_rt.estimator.tpu.tpu_estimator (TPUConfig and tpu.RunConfig validate and read TF_CONFIG
as tf.estimator did)."""

# pylint: disable=unused-import,g-bad-import-order
from estimator_rt.cluster.run_config import _SERVICE_KEY
from estimator_rt.cluster.run_config import _TF_CONFIG_ENV
from estimator_rt.estimator.tpu.tpu_estimator import _tpu_job_name_from_tf_config as _get_tpu_job_name_from_tf_config
from estimator_rt.estimator.tpu.tpu_estimator import InputPipelineConfig
from estimator_rt.estimator.tpu.tpu_estimator import RunConfig
from estimator_rt.estimator.tpu.tpu_estimator import TPUConfig
# pylint: enable=unused-import,g-bad-import-order

_TPU_WORKER_JOB_NAME = 'tpu_worker_job_name'
