r"""tf.estimator 2.15's time series estimators on a tiny generated series:
the programs, and the figures estimator_rt's must reproduce.

    .venv-tf215/bin/python -m scripts.tf_estimator_215.timeseries_reference

Importable under both TensorFlow 2.15 and 2.21 (here after
`estimator_rt.compat.install()`): the programs build 2.15's classes from
their module paths (`tensorflow_estimator.python.estimator.canned.
timeseries`), so tests/test_timeseries.py runs the same code here.

Three programs (two TimeSeriesRegressors of ARModels: the normal
likelihood loss with an exogenous feature, the squared loss with two
periodicities; and an LSTMAutoRegressor) train on the windows of a
24-point series. Run as a script (under 2.15 only), each trains
TRAIN_STEPS steps from scratch (graph seed 3); the newest checkpoint is
kept as a model_dir under tests/data/tf_estimator_215/timeseries/<program>/
(what estimator_rt must compute from: a graph seed's initial values depend
on how many ops the graph held before each initializer, which differs
between any two builders of the graph, 2.15's own TF1 and TF2 modes
included), and from it the script records:

  - evaluate() on the whole series: 2.15's metrics (loss, average_loss,
    the in-sample mean, covariance and observed values, their times, the
    end state `start_tuple` but for the LSTMAutoRegressor);
  - for a TimeSeriesRegressor, predict() from the evaluation's end state,
    and its export with build_raw_serving_input_receiver_fn: the
    signatures, and what saved_model_utils' cold_start_filter,
    filter_continuation and predict_continuation (from a filtering and from
    the evaluation) return on it (2.15's module needs its `numpy` given back
    for the first two: see `_saved_model_utils`);
  - for the LSTMAutoRegressor, its one-shot export
    (build_one_shot_parsing_serving_input_receiver_fn): the signature and
    its predictions for tf.Examples;
  - the checkpoint's variables (name, shape, sum and sum of squares), and,
    trained on to CONTINUED_STEPS, the variables and evaluation then.

2.15 ran these classes with TF1 behaviour only: its tests of them are
`run_v1_only`, and under TF2 behaviour its evaluate() fails (an identity
metric's variable of shape [] assigned the predictions; estimator_rt's
head gives the variable the shape of its first update). So the reference
runs under `tf.compat.v1.disable_v2_behavior()`, as 2.15's tests did.
Everything goes to tests/data/tf_estimator_215/timeseries/reference.json.
"""

import os
import shutil

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215 import canned_reference as common

FIXTURE_ROOT = os.path.join(os.path.dirname(common.FIXTURE_ROOT),
                            'timeseries')
_TIMESERIES = 'tensorflow_estimator.python.estimator.canned.timeseries'
SERIES_LENGTH = 24
INPUT_WINDOW = 4
OUTPUT_WINDOW = 2
WINDOW = INPUT_WINDOW + OUTPUT_WINDOW
BATCH = 4
TRAIN_STEPS = 12
CONTINUED_STEPS = 20
SEED = 3
# The exogenous feature's key.
EXOGENOUS = 'exogenous'


def _module(name: str):
  import importlib  # pylint: disable=g-import-not-at-top
  return importlib.import_module(f'{_TIMESERIES}.{name}')


# The programs whose model reads the exogenous feature (the others are
# given none).
WITH_EXOGENOUS = ('regressor_normal', 'lstm_autoregressor')


def series(name: str):
  """{'times': [24] int64 (every other integer), 'values': [24, 1] and, for
  a program of WITH_EXOGENOUS, 'exogenous': [24, 1]} float32: a noisy
  periodic series and a feature."""
  rng = np.random.RandomState(7)
  times = 2 * np.arange(SERIES_LENGTH, dtype=np.int64)
  exogenous = np.cos(times / 5.).astype(np.float32)[:, None]
  values = (np.sin(times / 3.) + 0.5 * exogenous[:, 0] +
            0.1 * rng.normal(size=SERIES_LENGTH)).astype(np.float32)[:, None]
  whole = {'times': times, 'values': values}
  if name in WITH_EXOGENOUS:
    whole[EXOGENOUS] = exogenous
  return whole


def input_fns(name: str):
  """(train, eval) input_fns of program `name`: every window of WINDOW
  times of the series, in order, repeated, in batches of BATCH; and the
  whole series as one batch of one. Features only (the time series heads
  take no labels)."""
  whole = series(name)

  def train():
    starts = range(SERIES_LENGTH - WINDOW + 1)
    windows = {key: np.stack([value[s:s + WINDOW] for s in starts])
               for key, value in whole.items()}
    return tf.data.Dataset.from_tensor_slices(windows).repeat().batch(BATCH)

  def evaluate():
    return tf.data.Dataset.from_tensors(
        {key: value[None] for key, value in whole.items()})

  return train, evaluate


def future(steps: int):
  """(times [steps] after the series, the exogenous feature there [steps,
  1])."""
  times = 2 * np.arange(SERIES_LENGTH, SERIES_LENGTH + steps, dtype=np.int64)
  return times, np.cos(times / 5.).astype(np.float32)[:, None]


def predict_input_fn(name: str, state):
  """A batch of one: the 6 times after the series, from `state` (an
  evaluation's end state, batch first)."""
  times, exogenous = future(6)
  features = {'times': times[None],
              'start_tuple': tuple(np.asarray(s) for s in state)}
  if name in WITH_EXOGENOUS:
    features[EXOGENOUS] = exogenous[None]
  return lambda: tf.data.Dataset.from_tensors(features)


def exogenous_columns():
  return [tf.feature_column.numeric_column(EXOGENOUS)]


def _lstm(num_units):
  import functools  # pylint: disable=g-import-not-at-top
  return functools.partial(_module('ar_model').LSTMPredictionModel,
                           num_units=num_units)


def _programs():
  """name -> builder(model_dir, config) of the program's estimator."""
  ar_model = _module('ar_model')
  estimators = _module('estimators')
  return {
      # An ARModel with an exogenous feature and the normal likelihood loss.
      'regressor_normal': lambda d, c: estimators.TimeSeriesRegressor(
          model=ar_model.ARModel(
              periodicities=8, input_window_size=INPUT_WINDOW,
              output_window_size=OUTPUT_WINDOW, num_features=1,
              num_time_buckets=4,
              exogenous_feature_columns=exogenous_columns(),
              prediction_model_factory=_lstm(4)),
          model_dir=d, config=c),
      # Two periodicities, the squared loss (evaluated unscaled), no
      # exogenous feature.
      'regressor_squared': lambda d, c: estimators.TimeSeriesRegressor(
          model=ar_model.ARModel(
              periodicities=(6, 10), input_window_size=INPUT_WINDOW,
              output_window_size=OUTPUT_WINDOW, num_features=1,
              num_time_buckets=3, loss=ar_model.ARModel.SQUARED_LOSS,
              prediction_model_factory=_lstm(3)),
          optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.05),
          model_dir=d, config=c),
      'lstm_autoregressor': lambda d, c: estimators.LSTMAutoRegressor(
          periodicities=8, input_window_size=INPUT_WINDOW,
          output_window_size=OUTPUT_WINDOW, num_features=1,
          extra_feature_columns=exogenous_columns(), num_timesteps=4,
          num_units=4, model_dir=d, config=c),
  }


PROGRAMS = ('regressor_normal', 'regressor_squared', 'lstm_autoregressor')


def build(name: str, model_dir: str, run_config_class):
  """Program `name`'s estimator in `model_dir` (`run_config_class`: the
  RunConfig of the tf.estimator in use)."""
  config = run_config_class(tf_random_seed=SEED,
                            save_checkpoints_steps=1000,
                            save_summary_steps=1000)
  return _programs()[name](model_dir, config)


def _jsonable(value):
  if isinstance(value, dict):
    return {str(k): _jsonable(v) for k, v in value.items()}
  if isinstance(value, (tuple, list)):
    return [_jsonable(v) for v in value]
  if isinstance(value, bytes):
    return value.decode()
  if value is None or isinstance(value, str):
    return value
  array = np.asarray(value)
  if array.dtype.kind in 'iu':
    return array.astype(np.int64).tolist()
  if array.dtype.kind == 'b':
    return array.tolist()
  return array.astype(np.float64).tolist()


def variables(model_dir: str):
  """{name: [shape, sum, sum of squares]} of the newest checkpoint's
  variables."""
  reader = tf.train.load_checkpoint(model_dir)
  found = {}
  for name, shape in tf.train.list_variables(model_dir):
    value = np.asarray(reader.get_tensor(name))
    if value.dtype.kind in 'fiu':
      value = value.astype(np.float64)
      found[name] = [list(shape), float(value.sum()),
                     float((value ** 2).sum())]
    else:
      found[name] = [list(shape), None, None]
  return found


def signatures(meta_graph):
  """{signature key: {'inputs': {key: [dtype, shape]}, 'outputs': ...,
  'method': method name}} of a MetaGraphDef."""

  def described(tensors):
    return {key: [tf.dtypes.as_dtype(info.dtype).name,
                  None if info.tensor_shape.unknown_rank else
                  [d.size for d in info.tensor_shape.dim]]
            for key, info in sorted(tensors.items())}

  return {key: {'inputs': described(sig.inputs),
                'outputs': described(sig.outputs),
                'method': sig.method_name}
          for key, sig in sorted(meta_graph.signature_def.items())}


def _saved_model_utils():
  """The saved_model_utils module, with 2.15's own breakage undone: its
  `remove_undocumented()` call deleted the module's `numpy` (a public name
  its docstring does not list), so in 2.15 cold_start_filter and
  filter_continuation raise "NameError: name 'numpy' is not defined" (its
  one test of them is disabled). The reference gives the name back, as the
  module's code means; estimator_rt's module needs nothing."""
  module = _module('saved_model_utils')
  if 'numpy' not in vars(module) and 'tensorflow_estimator' in str(
      getattr(module, '__file__', '')):
    module.numpy = np
  return module


def serve_filtering(name: str, export_dir: str, evaluation):
  """What saved_model_utils computes on a raw export: cold-start filtering
  of the first 12 points, filtering on with the next 6, predictions after
  that and after the evaluation."""
  saved_model_utils = _saved_model_utils()
  whole = series(name)
  first = {key: value[:12] for key, value in whole.items()}
  following = {key: value[12:18][None] for key, value in whole.items()}
  times, exogenous = future(3)
  with_exogenous = name in WITH_EXOGENOUS
  results = {}
  with tf.Graph().as_default():
    with tf.compat.v1.Session() as session:
      meta_graph = tf.compat.v1.saved_model.load(
          session, [tf.saved_model.SERVING], export_dir)
      results['signatures'] = signatures(meta_graph)
      cold = saved_model_utils.cold_start_filter(
          signatures=meta_graph, session=session, features=first)
      results['cold_start_filter'] = cold
      filtered = saved_model_utils.filter_continuation(
          continue_from=cold, signatures=meta_graph, session=session,
          features=following)
      results['filter_continuation'] = filtered
      results['predict_after_filtering'] = (
          saved_model_utils.predict_continuation(
              continue_from=filtered, signatures=meta_graph, session=session,
              steps=3, exogenous_features=(
                  {EXOGENOUS: whole[EXOGENOUS][18:21][None]}
                  if with_exogenous else None)))
      results['predict_after_evaluation'] = (
          saved_model_utils.predict_continuation(
              continue_from=evaluation, signatures=meta_graph,
              session=session, times=times[None], exogenous_features=(
                  {EXOGENOUS: exogenous[None]} if with_exogenous else None)))
  return results


def one_shot_examples(filtering_length: int, prediction_length: int):
  """Serialized tf.Examples of the series' first points: times and
  exogenous for filtering + prediction, values for filtering."""
  whole = series('lstm_autoregressor')
  total = filtering_length + prediction_length
  example = tf.train.Example(features=tf.train.Features(feature={
      'times': tf.train.Feature(int64_list=tf.train.Int64List(
          value=whole['times'][:total])),
      'values': tf.train.Feature(float_list=tf.train.FloatList(
          value=whole['values'][:filtering_length, 0])),
      EXOGENOUS: tf.train.Feature(float_list=tf.train.FloatList(
          value=whole[EXOGENOUS][:total, 0])),
  }))
  return [example.SerializeToString()]


def serve_one_shot(export_dir: str):
  """The one-shot export's signatures and its predictions for 8 filtered
  points and 4 predicted."""
  with tf.Graph().as_default():
    with tf.compat.v1.Session() as session:
      meta_graph = tf.compat.v1.saved_model.load(
          session, [tf.saved_model.SERVING], export_dir)
      signature = meta_graph.signature_def[
          tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
      outputs = {key: session.graph.as_graph_element(info.name)
                 for key, info in signature.outputs.items()}
      feed = {session.graph.as_graph_element(
          signature.inputs['examples'].name): one_shot_examples(8, 4)}
      return {'signatures': signatures(meta_graph),
              'predictions': session.run(outputs, feed)}


def record_checkpoint(name: str, model_dir: str):
  """What program `name` computes from the checkpoint in `model_dir`:
  evaluate() on the whole series, and, for a TimeSeriesRegressor,
  predict() from the evaluation's end state and its raw export served by
  saved_model_utils; for the LSTMAutoRegressor its one-shot export called
  with tf.Examples."""
  estimator = build(name, model_dir, _run_config_class())
  _, eval_input_fn = input_fns(name)
  evaluation = estimator.evaluate(eval_input_fn, steps=1)
  record = {'evaluation': evaluation}
  export_base = model_dir + '_export'
  if name == 'lstm_autoregressor':
    receiver = estimator.build_one_shot_parsing_serving_input_receiver_fn(
        filtering_length=8, prediction_length=4)
    record['one_shot'] = serve_one_shot(
        _as_str(estimator.export_saved_model(export_base, receiver)))
  else:
    record['predictions'] = list(estimator.predict(
        predict_input_fn(name, evaluation['start_tuple'])))
    receiver = estimator.build_raw_serving_input_receiver_fn()
    record['serving'] = serve_filtering(
        name, _as_str(estimator.export_saved_model(export_base, receiver)),
        evaluation)
  return _jsonable(record)


def train(name: str, model_dir: str, max_steps: int):
  """Trains program `name` in `model_dir` up to global step `max_steps`."""
  train_input_fn, _ = input_fns(name)
  build(name, model_dir, _run_config_class()).train(train_input_fn,
                                                     max_steps=max_steps)


def _run_config_class():
  from tensorflow_estimator.python.estimator import run_config  # pylint: disable=g-import-not-at-top
  return run_config.RunConfig


def _as_str(path):
  return path.decode() if isinstance(path, bytes) else path


def _reference(name: str, work: str):
  """Program `name` trained TRAIN_STEPS steps from scratch, its checkpoint
  kept as FIXTURE_ROOT/name: its variables, what it computes as kept, and
  trained on to CONTINUED_STEPS, its variables and evaluation."""
  model_dir = os.path.join(work, name)
  train(name, model_dir, TRAIN_STEPS)
  fixture = os.path.join(FIXTURE_ROOT, name)
  common.keep_checkpoint(model_dir, fixture)
  record = {'variables': variables(fixture)}
  kept = model_dir + '_kept'
  shutil.copytree(fixture, kept)
  record['kept'] = record_checkpoint(name, kept)
  continued = model_dir + '_continued'
  shutil.copytree(fixture, continued)
  train(name, continued, CONTINUED_STEPS)
  _, eval_input_fn = input_fns(name)
  record['continued'] = _jsonable({
      'variables': variables(continued),
      'evaluation': build(name, continued, _run_config_class()).evaluate(
          eval_input_fn, steps=1)})
  return record


def main():
  # As 2.15's tests of these classes ran (see the module docstring).
  tf.compat.v1.disable_v2_behavior()
  common.write_reference(
      fixture_root=FIXTURE_ROOT,
      command='.venv-tf215/bin/python -m scripts.tf_estimator_215.'
      'timeseries_reference',
      names=PROGRAMS, record=_reference)


if __name__ == '__main__':
  main()
