"""estimator_rt: a tf.estimator-style train-and-evaluate runtime on tf.distribute.

    import estimator_rt as ert
    estimator = ert.Estimator(model_fn, model_dir='/tmp/m',
                              config=ert.RunConfig(train_distribute='mirrored'),
                              params={'batch_size': 64})
    ert.train_and_evaluate(estimator,
                           ert.TrainSpec(train_input_fn, max_steps=1000),
                           ert.EvalSpec(eval_input_fn, steps=None))
"""

from estimator_rt.errors import IncompatibleCheckpointError
from estimator_rt.errors import InputFnError
from estimator_rt.errors import ModelFnError
from estimator_rt.errors import NanLossError
from estimator_rt.errors import UserInputError
from estimator_rt.estimator import Estimator
from estimator_rt.export import build_parsing_serving_input_fn
from estimator_rt.export import build_raw_serving_input_fn
from estimator_rt.export import ServingInputReceiver
from estimator_rt.exporters import BestExporter
from estimator_rt.exporters import Exporter
from estimator_rt.exporters import FinalExporter
from estimator_rt.exporters import LatestExporter
from estimator_rt.hooks import EarlyStoppingHook
from estimator_rt.hooks import Hook
from estimator_rt.hooks import LoggingHook
from estimator_rt.hooks import LoopResult
from estimator_rt.hooks import NanLossHook
from estimator_rt.hooks import StopAtStepHook
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.model_graph import get_global_step
from estimator_rt.run_config import RunConfig
from estimator_rt.spec import EstimatorSpec
from estimator_rt.training import EvalSpec
from estimator_rt.training import train_and_evaluate
from estimator_rt.training import TrainSpec
