"""tensorflow_estimator.python.estimator.run_config, over estimator_rt.

`RunConfig` is estimator_rt's (it has 2.15's constructor, properties,
`replace` rules and TF_CONFIG reading); the module's other names are
2.15's constants and helpers, as programs and 2.15's tests use them: the
helpers are the ones RunConfig itself runs (reading a TF_CONFIG's task,
master and counts, the model_dir, validating properties and a replaced
checkpoint schedule).
"""

# pylint: disable=unused-import,g-bad-import-order
from estimator_rt.run_config import _CLUSTER_KEY
from estimator_rt.run_config import _DEFAULT_REPLACEABLE_LIST
from estimator_rt.run_config import _EVAL_SESSION_MASTER_KEY
from estimator_rt.run_config import _GRPC_SCHEME
from estimator_rt.run_config import _LOCAL_MASTER
from estimator_rt.run_config import _MODEL_DIR_KEY
from estimator_rt.run_config import _SAVE_CKPT_ERR
from estimator_rt.run_config import _SERVICE_KEY
from estimator_rt.run_config import _SESSION_MASTER_KEY
from estimator_rt.run_config import _TASK_ENV_KEY
from estimator_rt.run_config import _TASK_ID_KEY
from estimator_rt.run_config import _TASK_TYPE_KEY
from estimator_rt.run_config import _TF_CONFIG_ENV
from estimator_rt.run_config import _USE_DEFAULT
from estimator_rt.run_config import _count_ps
from estimator_rt.run_config import _count_worker
from estimator_rt.run_config import _get_eval_session_master
from estimator_rt.run_config import _get_global_id_in_cluster
from estimator_rt.run_config import _get_model_dir
from estimator_rt.run_config import _get_session_master
from estimator_rt.run_config import _validate_properties
from estimator_rt.run_config import _validate_save_ckpt_with_replaced_keys
from estimator_rt.run_config import _validate_service
from estimator_rt.run_config import _validate_task_type_and_task_id
from estimator_rt.run_config import get_default_session_config
from estimator_rt.run_config import path_to_str
from estimator_rt.run_config import RunConfig
from estimator_rt.run_config import TaskType
# pylint: enable=unused-import,g-bad-import-order

_VALID_DEVICE_FN_ARGS = set(['op'])
