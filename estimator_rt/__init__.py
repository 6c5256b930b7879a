"""estimator_rt: a tf.estimator-style train-and-evaluate runtime on tf.distribute.

    import estimator_rt as ert
    estimator = ert.Estimator(model_fn, model_dir='/tmp/m',
                              config=ert.RunConfig(train_distribute='mirrored'),
                              params={'batch_size': 64})
    ert.train_and_evaluate(estimator,
                           ert.TrainSpec(train_input_fn, max_steps=1000),
                           ert.EvalSpec(eval_input_fn, steps=None))

The names below load on first use (PEP 562), so `import estimator_rt` does
not import TensorFlow: the binaries decide what to do (relaunch under the
bind guard, print an error) before paying for it.
"""

import importlib

# Public name -> the module that defines it.
_EXPORTS = {
    'BaselineClassifier': 'estimator_rt.estimator.canned.baseline',
    'BaselineEstimator': 'estimator_rt.estimator.canned.baseline',
    'BaselineRegressor': 'estimator_rt.estimator.canned.baseline',
    'BestExporter': 'estimator_rt.export.exporters',
    'build_parsing_serving_input_fn': 'estimator_rt.export.saved_model',
    'build_raw_serving_input_fn': 'estimator_rt.export.saved_model',
    'CheckpointSaveError': 'estimator_rt.core.errors',
    'DNNClassifier': 'estimator_rt.estimator.canned.dnn',
    'DNNEstimator': 'estimator_rt.estimator.canned.dnn',
    'DNNLinearCombinedClassifier': 'estimator_rt.estimator.canned.dnn_linear_combined',
    'DNNLinearCombinedEstimator': 'estimator_rt.estimator.canned.dnn_linear_combined',
    'DNNLinearCombinedRegressor': 'estimator_rt.estimator.canned.dnn_linear_combined',
    'DNNRegressor': 'estimator_rt.estimator.canned.dnn',
    'EarlyStoppingHook': 'estimator_rt.training.hooks',
    'Estimator': 'estimator_rt.estimator.estimator',
    'EstimatorSpec': 'estimator_rt.core.spec',
    'EvalSpec': 'estimator_rt.estimator.train_and_evaluate',
    'Exporter': 'estimator_rt.export.exporters',
    'ExportWriteError': 'estimator_rt.core.errors',
    'FinalExporter': 'estimator_rt.export.exporters',
    'get_global_step': 'estimator_rt.training.eager.model',
    'Hook': 'estimator_rt.training.hooks',
    'IncompatibleCheckpointError': 'estimator_rt.core.errors',
    'InputFnError': 'estimator_rt.core.errors',
    'LatestExporter': 'estimator_rt.export.exporters',
    'LinearClassifier': 'estimator_rt.estimator.canned.linear',
    'LinearEstimator': 'estimator_rt.estimator.canned.linear',
    'LinearRegressor': 'estimator_rt.estimator.canned.linear',
    'LoggingHook': 'estimator_rt.training.hooks',
    'LoopResult': 'estimator_rt.training.hooks',
    'ModeKeys': 'estimator_rt.core.mode_keys',
    'model_to_estimator': 'estimator_rt.estimator.keras.model_to_estimator',
    'ModelFnError': 'estimator_rt.core.errors',
    'NanLossError': 'estimator_rt.core.errors',
    'NanLossHook': 'estimator_rt.training.hooks',
    'PREEMPTED_EXIT_CODE': 'estimator_rt.cluster.preemption',
    'PreemptedError': 'estimator_rt.core.errors',
    'run_server': 'estimator_rt.cluster.server',
    'RunConfig': 'estimator_rt.cluster.run_config',
    'ServingInputReceiver': 'estimator_rt.export.saved_model',
    'StopAtStepHook': 'estimator_rt.training.hooks',
    'train_and_evaluate': 'estimator_rt.estimator.train_and_evaluate',
    'TrainSpec': 'estimator_rt.estimator.train_and_evaluate',
    'UnusableCheckpointsError': 'estimator_rt.core.errors',
    'UserInputError': 'estimator_rt.core.errors',
}

__all__ = sorted(_EXPORTS)

# Public names bound to a differently named attribute of their module:
# that module's `train_and_evaluate` is tf.estimator 2.15's (the module is
# also tensorflow_estimator's `training`), estimator_rt's returns more.
_ATTRIBUTES = {'train_and_evaluate': 'train_and_evaluate_all'}


# Submodules reachable as attributes, as tf.estimator's namespaces were
# (`estimator_rt.export.PredictOutput` like `tf.estimator.export.PredictOutput`).
_SUBMODULES = ('export',)


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f'{__name__}.{name}')
  module = _EXPORTS.get(name)
  if module is None:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  value = getattr(importlib.import_module(module), _ATTRIBUTES.get(name, name))
  # `python -m estimator_rt.run_server` is a module of the same name as
  # the function; the public name means the function.
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))


# TF1-style `tf.compat.v1.layers` are tf_keras' legacy layers from the
# moment TensorFlow is imported, whichever of the two the program imported
# first (estimator_rt/training/graph/route_on_import.py), not only once an estimator_rt
# name is used: with TensorFlow not imported yet, importing it here would
# cost every `import estimator_rt` its import time.
importlib.import_module('estimator_rt.training.graph.route_on_import'
                        ).route_when_tensorflow_loads()
