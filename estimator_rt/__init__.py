"""estimator_rt: a tf.estimator-style train-and-evaluate runtime on tf.distribute."""

from estimator_rt.errors import IncompatibleCheckpointError
from estimator_rt.errors import InputFnError
from estimator_rt.errors import ModelFnError
from estimator_rt.errors import NanLossError
from estimator_rt.errors import UserInputError
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.run_config import RunConfig
from estimator_rt.spec import EstimatorSpec
