"""tf.estimator 2.15's public namespaces, filled with estimator_rt's objects.

`v1()` is `tf.compat.v1.estimator`, `v2()` is `tf.estimator` (and
`tf.compat.v2.estimator`): modules whose names are tf.estimator 2.15's
(tests/data/tf_estimator_215/api.json lists them), each bound to what runs
it here:

  - the runtime's own classes and functions (Estimator, RunConfig, specs,
    exporters, train_and_evaluate, export receivers and outputs, early
    stopping, warm starting, add_metrics, parsing specs, numpy/pandas
    input_fns, TPUEstimator without a TPU, the canned estimators and heads:
    the TF2 classes in tf.estimator, the v1 ones in tf.compat.v1.estimator,
    the RNN estimators in tf.estimator.experimental);
  - TensorFlow's own where tf.estimator re-exported them (the
    SessionRunHooks of `tf.compat.v1.train`, VocabInfo).
"""

import functools
import types
from typing import Any, Dict

import tensorflow as tf


def _canned(v1: bool) -> Dict[str, Any]:
  """The canned estimators (TF2 classes for tf.estimator, the v1 ones for
  tf.compat.v1.estimator) and the heads."""
  # pylint: disable=g-import-not-at-top
  from estimator_rt.estimator.canned import baseline
  from estimator_rt.estimator.canned import dnn
  from estimator_rt.estimator.canned import dnn_linear_combined
  from estimator_rt.estimator.canned import linear
  from estimator_rt.estimator.canned import v1 as canned_v1
  from estimator_rt.estimator import head
  # pylint: enable=g-import-not-at-top
  modules = (canned_v1,) if v1 else (dnn, linear, dnn_linear_combined,
                                     baseline)
  names = {}
  for kind in ('Classifier', 'Regressor', 'Estimator'):
    for model in ('DNN', 'Linear', 'DNNLinearCombined', 'Baseline'):
      name = model + kind
      names[name] = next(getattr(m, name) for m in modules
                         if hasattr(m, name))
  for name in ('Head', 'BinaryClassHead', 'MultiClassHead', 'MultiLabelHead',
               'MultiHead', 'RegressionHead', 'PoissonRegressionHead',
               'LogisticRegressionHead'):
    names[name] = getattr(head, name)
  return names


# tf.estimator's names for TensorFlow's own SessionRunHook machinery.
_TRAIN_NAMES = (
    'CheckpointSaverHook', 'CheckpointSaverListener', 'FeedFnHook',
    'FinalOpsHook', 'GlobalStepWaiterHook', 'LoggingTensorHook',
    'NanLossDuringTrainingError', 'NanTensorHook', 'ProfilerHook',
    'SecondOrStepTimer', 'SessionRunArgs', 'SessionRunContext',
    'SessionRunHook', 'SessionRunValues', 'StepCounterHook', 'StopAtStepHook',
    'SummarySaverHook')


def _module(name: str, attributes: Dict[str, Any]) -> types.ModuleType:
  module = types.ModuleType(name, f'tf.estimator 2.15\'s {name}, resolved '
                            'to estimator_rt (see estimator_rt.compat).')
  for key, value in attributes.items():
    setattr(module, key, value)
  return module


def _common() -> Dict[str, Any]:
  """The names tf.estimator and tf.compat.v1.estimator share."""
  # pylint: disable=g-import-not-at-top
  from estimator_rt.training import early_stopping
  from estimator_rt.compat.served.hooks import hooks as served_hooks
  from estimator_rt.estimator import estimator
  from estimator_rt.core import export_outputs as outputs_lib
  from estimator_rt.export import saved_model as export
  from estimator_rt.export import exporters
  from estimator_rt.estimator import extenders
  from estimator_rt.training.graph import in_memory_evaluator
  from estimator_rt.core import mode_keys
  from estimator_rt.estimator.canned import parse_specs
  from estimator_rt.cluster import run_config
  from estimator_rt.core import spec
  from estimator_rt.estimator import train_and_evaluate as training
  from estimator_rt.estimator import warm_starting
  from estimator_rt.estimator.canned import base as canned_base
  from estimator_rt.estimator.canned import linear
  # pylint: enable=g-import-not-at-top
  names = {
      'Estimator': estimator.Estimator,
      'EstimatorSpec': spec.EstimatorSpec,
      'ModeKeys': mode_keys.ModeKeys,
      'RunConfig': run_config.RunConfig,
      'TrainSpec': training.TrainSpec,
      'EvalSpec': training.EvalSpec,
      'train_and_evaluate': training.train_and_evaluate,
      'Exporter': exporters.Exporter,
      'BestExporter': exporters.BestExporter,
      'FinalExporter': exporters.FinalExporter,
      'LatestExporter': exporters.LatestExporter,
      'VocabInfo': warm_starting.VocabInfo,
      'WarmStartSettings': warm_starting.WarmStartSettings,
      'add_metrics': extenders.add_metrics,
      'classifier_parse_example_spec': parse_specs.classifier_parse_example_spec,
      'regressor_parse_example_spec': parse_specs.regressor_parse_example_spec,
  }
  names.update({name: getattr(tf.compat.v1.train, name)
                for name in _TRAIN_NAMES})
  names['export'] = _module('estimator.export', {
      'ClassificationOutput': outputs_lib.ClassificationOutput,
      'EvalOutput': outputs_lib.EvalOutput,
      'ExportOutput': outputs_lib.ExportOutput,
      'PredictOutput': outputs_lib.PredictOutput,
      'RegressionOutput': outputs_lib.RegressionOutput,
      'ServingInputReceiver': export.ServingInputReceiver,
      'TensorServingInputReceiver': export.TensorServingInputReceiver,
      'build_parsing_serving_input_receiver_fn':
          export.build_parsing_serving_input_receiver_fn,
      'build_raw_serving_input_receiver_fn':
          export.build_raw_serving_input_receiver_fn,
  })
  names['experimental'] = {
      'InMemoryEvaluatorHook': in_memory_evaluator.InMemoryEvaluatorHook,
      'build_raw_supervised_input_receiver_fn':
          export.build_raw_supervised_input_receiver_fn,
      'call_logit_fn': canned_base.call_logit_fn,
      'LinearSDCA': linear.LinearSDCA,
      'make_early_stopping_hook': early_stopping.make_early_stopping_hook,
      # 2.15's SessionRunHooks (a chief's StopAtStepHook also stops an
      # evaluation at its step, as there).
      'make_stop_at_checkpoint_step_hook':
          served_hooks.make_stop_at_checkpoint_step_hook,
      'stop_if_higher_hook': early_stopping.stop_if_higher_hook,
      'stop_if_lower_hook': early_stopping.stop_if_lower_hook,
      'stop_if_no_decrease_hook': early_stopping.stop_if_no_decrease_hook,
      'stop_if_no_increase_hook': early_stopping.stop_if_no_increase_hook,
  }
  return names


@functools.lru_cache(maxsize=None)
def v2() -> types.ModuleType:
  """tf.estimator (and tf.compat.v2.estimator)."""
  names = _common()
  names.update(_canned(v1=False))
  experimental = dict(names['experimental'])
  from estimator_rt.estimator.canned import rnn  # pylint: disable=g-import-not-at-top
  experimental['RNNClassifier'] = rnn.RNNClassifier
  experimental['RNNEstimator'] = rnn.RNNEstimator
  names['experimental'] = _module('estimator.experimental', experimental)
  return _module('estimator', names)


@functools.lru_cache(maxsize=None)
def v1() -> types.ModuleType:
  """tf.compat.v1.estimator."""
  # pylint: disable=g-import-not-at-top
  from estimator_rt.inputs import numpy_io
  from estimator_rt.estimator.tpu import tpu_estimator as tpu
  from estimator_rt.estimator.tpu import embedding as tpu_embedding
  # pylint: enable=g-import-not-at-top
  from estimator_rt.estimator.canned import v1_model_fns  # pylint: disable=g-import-not-at-top
  from estimator_rt.estimator.canned import parse_specs  # pylint: disable=g-import-not-at-top
  names = _common()
  names.update(_canned(v1=True))
  # 2.15's v1 functions, other objects than tf.estimator's: they read the
  # columns as tf.compat.v1.feature_column does.
  names['classifier_parse_example_spec'] = (
      parse_specs.classifier_parse_example_spec_v1)
  names['regressor_parse_example_spec'] = (
      parse_specs.regressor_parse_example_spec_v1)
  experimental = dict(names['experimental'])
  from estimator_rt.estimator.canned import kmeans  # pylint: disable=g-import-not-at-top
  experimental['KMeans'] = kmeans.KMeans
  experimental['dnn_logit_fn_builder'] = v1_model_fns.dnn_logit_fn_builder
  experimental['linear_logit_fn_builder'] = (
      v1_model_fns.linear_logit_fn_builder)
  names['experimental'] = _module('estimator.experimental', experimental)
  names['inputs'] = _module('estimator.inputs', {
      'numpy_input_fn': numpy_io.numpy_input_fn,
      'pandas_input_fn': numpy_io.pandas_input_fn,
  })
  names['tpu'] = _module('estimator.tpu', {
      'InputPipelineConfig': tpu.InputPipelineConfig,
      'RunConfig': tpu.RunConfig,
      'TPUConfig': tpu.TPUConfig,
      'TPUEstimator': tpu.TPUEstimator,
      'TPUEstimatorSpec': tpu.TPUEstimatorSpec,
      'experimental': _module('estimator.tpu.experimental', {
          'EmbeddingConfigSpec': tpu_embedding.EmbeddingConfigSpec,
      }),
  })
  return _module('estimator', names)
