r"""What a tf.estimator program observes of tf.estimator 2.15: return types,
FileWriterCache after training, summary steps, the arguments 2.15 took, the
graph's top level and its INFO log lines (issue 42).

    .venv-tf215/bin/python -m scripts.tf_estimator_215.observables_reference

runs PROGRAM (this file run as `python observables_reference.py WORKDIR`:
a plain tf.estimator program that sets TensorFlow's logger to INFO) in a
fresh process under 2.15 and writes tests/data/tf_estimator_215/
observables.json: the observations the program prints (its last stdout
line, JSON) and the set of INFO lines it logged, masked (`log_patterns`).
tests/test_observables.py runs the same program here, through the import
hook, and compares.

Observations (`observe`):
  - `types`: what export_saved_model, experimental_export_all_saved_models,
    each exporter's export and evaluate return (type names, dtypes);
  - `train_and_evaluate`: the shape of its value (two exporters, two
    evaluations, one exporter exporting nothing at the last);
  - `writer_cache`: FileWriterCache's keys after train and after evaluate,
    and whether a summary added through it in this eager program lands in
    an event file of model_dir;
  - `summary_steps`: summary tag -> steps in model_dir's event files, for a
    TF1-style model_fn, a canned estimator and a TF2-style one (a Keras
    layer, a tape), with default and other intervals, and resumed;
  - `arguments`: float and NumPy counts 2.15 took, and what it did;
  - `top_level`: the top-level node names of the graph a TF1-style
    model_fn's training wrote (graph.pbtxt, the event files' graph).
"""

import collections
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import tensorflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_PATH = os.path.join(os.path.dirname(os.path.dirname(_HERE)),
                              'tests', 'data', 'tf_estimator_215',
                              'observables.json')
_W = np.array([[1.], [-2.], [.5], [3.]], np.float32)


def _data():
  x = np.random.RandomState(0).randn(64, 4).astype(np.float32)
  return x, (x @ _W).astype(np.float32)


def input_fn():
  x, y = _data()
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(8)


def eval_input_fn():
  x, y = _data()
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(8)


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 4], name='x')
  return tf.estimator.export.ServingInputReceiver({'x': x}, {'x': x})


def tf1_model_fn(features, labels, mode):
  """TF1-style: get_variable, a v1 optimizer, v1 metrics (of several
  dtypes), a summary of its own."""
  with tf.compat.v1.variable_scope('linear'):
    w = tf.compat.v1.get_variable(
        'w', [4, 1], initializer=tf.compat.v1.zeros_initializer())
    predictions = tf.matmul(features['x'], w, name='predictions')
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={'y': predictions})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  tf.compat.v1.summary.scalar('my_scalar', loss * 2)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  batches = tf.compat.v1.get_local_variable(
      'batches', [], tf.int64, initializer=tf.compat.v1.zeros_initializer())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                    eval_metric_ops={
      'mae': tf.compat.v1.metrics.mean_absolute_error(labels, predictions),
      'batches': (batches, tf.compat.v1.assign_add(batches, 1)),
      'f64': (tf.constant(1.5, tf.float64), tf.no_op()),
      'i32': (tf.constant(3, tf.int32), tf.no_op())})


def tf2_model_fn(features, labels, mode):
  """TF2-style: a Keras layer, gradients from a tape applied by the
  train_op, Keras metrics (one float64)."""
  layer = tf.keras.layers.Dense(1, kernel_initializer='zeros')
  with tf.GradientTape() as tape:
    predictions = layer(features['x'])
    loss = tf.reduce_mean(tf.square(labels - predictions))
  tf.compat.v1.summary.scalar('my_scalar', loss * 2)
  gradients = tape.gradient(loss, layer.trainable_variables)
  global_step = tf.compat.v1.train.get_global_step()
  train_op = tf.group(
      tf.compat.v1.train.GradientDescentOptimizer(0.01).apply_gradients(
          zip(gradients, layer.trainable_variables)),
      global_step.assign_add(1))
  mae = tf.keras.metrics.MeanAbsoluteError()
  mae.update_state(labels, predictions)
  total = tf.keras.metrics.Sum(dtype=tf.float64)
  total.update_state(tf.cast(loss, tf.float64))
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                    eval_metric_ops={'mae': mae,
                                                     'total': total})


def _kind(value):
  if value is None:
    return None
  dtype = getattr(value, 'dtype', None)
  return type(value).__name__ + (f':{dtype}' if dtype is not None else '')


def _tags(logdir):
  """{summary tag: [steps]} of the event files directly in `logdir`."""
  tags = collections.defaultdict(list)
  for path in sorted(glob.glob(os.path.join(logdir, 'events.out.tfevents*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        tags[value.tag].append(int(event.step))
  return {tag: sorted(steps) for tag, steps in sorted(tags.items())}


def _values(logdir, tag):
  """[[step, value]] of `tag`'s simple values in `logdir`'s event files."""
  values = []
  for path in sorted(glob.glob(os.path.join(logdir, 'events.out.tfevents*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      values += [[int(event.step), v.simple_value]
                 for v in event.summary.value if v.tag == tag]
  return sorted(values)


def _estimator(kind, model_dir, **config):
  config = tf.estimator.RunConfig(tf_random_seed=1, **config)
  if kind == 'canned':
    return tf.estimator.DNNRegressor(
        [3], [tf.feature_column.numeric_column('x', [4])],
        model_dir=model_dir, config=config)
  model_fn = {'tf1': tf1_model_fn, 'tf2': tf2_model_fn}[kind]
  return tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config)


def _types(work):
  """What exports, exporters and evaluate return; FileWriterCache after
  train and evaluate."""
  model_dir = os.path.join(work, 'tf1')
  est = _estimator('tf1', model_dir)
  est.train(input_fn, max_steps=250)
  cache = tf.compat.v1.summary.FileWriterCache
  after_train = sorted(os.path.relpath(k, model_dir) for k in cache._cache)  # pylint: disable=protected-access
  writer = cache.get(model_dir)
  writer.add_summary(tf.compat.v1.Summary(value=[
      tf.compat.v1.Summary.Value(tag='added', simple_value=7.0)]), 999)
  writer.flush()
  metrics = est.evaluate(eval_input_fn)
  after_evaluate = sorted(os.path.relpath(k, model_dir)
                          for k in cache._cache)  # pylint: disable=protected-access
  types = {'evaluate': {k: _kind(v) for k, v in sorted(metrics.items())},
           'export_saved_model': _kind(est.export_saved_model(
               os.path.join(work, 'export'), serving_input_receiver_fn)),
           'experimental_export_all_saved_models': _kind(
               est.experimental_export_all_saved_models(
                   os.path.join(work, 'export_all'),
                   {tf.estimator.ModeKeys.PREDICT:
                        serving_input_receiver_fn}))}
  for exporter in (tf.estimator.LatestExporter('l', serving_input_receiver_fn),
                   tf.estimator.BestExporter('b', serving_input_receiver_fn),
                   tf.estimator.FinalExporter('f', serving_input_receiver_fn)):
    types[type(exporter).__name__] = _kind(exporter.export(
        est, os.path.join(work, exporter.name), est.latest_checkpoint(),
        metrics, True))
  keras = _estimator('tf2', os.path.join(work, 'keras_metrics'))
  keras.train(input_fn, max_steps=3)
  types['evaluate_keras_metrics'] = {
      k: _kind(v) for k, v in sorted(keras.evaluate(input_fn, steps=2).items())}
  cache_state = {'after_train': after_train, 'after_evaluate': after_evaluate,
                 'writer_is_a_file_writer': isinstance(
                     writer, tf.compat.v1.summary.FileWriter),
                 'added_in_model_dir': _tags(model_dir).get('added')}
  return types, cache_state, model_dir


def _train_and_evaluate(work):
  est = _estimator('tf1', os.path.join(work, 'tae'),
                   save_checkpoints_steps=10)
  never_better = lambda best_eval_result, current_eval_result: False
  value = tf.estimator.train_and_evaluate(
      est, tf.estimator.TrainSpec(input_fn, max_steps=20),
      tf.estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=0,
                            exporters=[
          tf.estimator.LatestExporter('latest', serving_input_receiver_fn),
          tf.estimator.BestExporter('best', serving_input_receiver_fn,
                                    compare_fn=never_better)]))
  if value is None or not isinstance(value, tuple):
    return {'value': _kind(value)}
  metrics, exports = value
  return {'value': f'tuple of {len(value)}',
          'metrics': {k: _kind(v) for k, v in sorted(metrics.items())},
          'exports': [_kind(e) for e in exports],
          'evaluated_steps': _tags(os.path.join(work, 'tae', 'eval'))['loss']}


# (kind, save_summary_steps, log_step_count_steps, max_steps of each train).
# Not here: save_summary_steps=0, whose global_step/sec 2.15 wrote to a
# FileWriter that nothing flushed before the program read the file.
SUMMARY_RUNS = (('tf1', 100, 100, (250,)), ('tf1', 100, 100, (40,)),
                ('tf1', 50, 30, (130,)), ('tf1', 100, 100, (150, 320)),
                ('canned', 100, 100, (250,)), ('tf2', 100, 100, (250,)))


def _summary_steps(work):
  steps = {}
  for i, (kind, every, log_every, runs) in enumerate(SUMMARY_RUNS):
    model_dir = os.path.join(work, f'summaries{i}')
    est = _estimator(kind, model_dir, save_summary_steps=every,
                     log_step_count_steps=log_every)
    for max_steps in runs:
      est.train(input_fn, max_steps=max_steps)
    tags = _tags(model_dir)
    steps[f'{kind} every={every} log_every={log_every} runs={runs}'] = tags
  return steps


def _checkpoint_steps(model_dir):
  return sorted(int(re.search(r'-(\d+)\.index$', p).group(1))
                for p in glob.glob(os.path.join(model_dir, '*.index')))


def _arguments(work):
  """What 2.15 made of float and NumPy counts."""
  done = {}

  def tae(name, train_spec, eval_spec):
    est = _estimator('tf1', os.path.join(work, name))
    tf.estimator.train_and_evaluate(est, train_spec, eval_spec)
    done[name] = {'checkpoints': _checkpoint_steps(est.model_dir),
                  'evaluated': _values(est.eval_dir(), 'batches')}

  tae('max_steps=21.875', tf.estimator.TrainSpec(input_fn, max_steps=21.875),
      tf.estimator.EvalSpec(input_fn, steps=2.5, throttle_secs=0.5,
                            start_delay_secs=np.float32(0.5)))
  tae('max_steps=np.int64(7)',
      tf.estimator.TrainSpec(input_fn, max_steps=np.int64(7)),
      tf.estimator.EvalSpec(input_fn, steps=np.int64(3),
                            throttle_secs=np.int64(1)))
  for name, config in (('save_checkpoints_steps=2.5',
                        {'save_checkpoints_steps': 2.5}),
                       ('save_checkpoints_steps=np.int64(2)',
                        {'save_checkpoints_steps': np.int64(2)}),
                       ('save_summary_steps=2.5',
                        {'save_summary_steps': 2.5})):
    est = _estimator('tf1', os.path.join(work, name), **config)
    est.train(input_fn, max_steps=np.float64(6.5))
    done[name] = {'checkpoints': _checkpoint_steps(est.model_dir),
                  'loss_summaries': _tags(est.model_dir)['loss']}
  return done


def _top_level(model_dir):
  """Top-level node names of graph.pbtxt and of the event files' graphs."""
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  graph_def = tf.compat.v1.GraphDef()
  with open(os.path.join(model_dir, 'graph.pbtxt')) as f:
    text_format.Parse(f.read(), graph_def)
  names = {'graph.pbtxt': sorted({n.name.split('/')[0]
                                  for n in graph_def.node})}
  events = set()
  for path in glob.glob(os.path.join(model_dir, 'events.out.tfevents*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      if event.graph_def:
        events.update(n.name.split('/')[0] for n in
                      tf.compat.v1.GraphDef.FromString(event.graph_def).node)
  names['events'] = sorted(events)
  return names


def observe(work):
  types, cache_state, model_dir = _types(work)
  return {'types': types, 'writer_cache': cache_state,
          'train_and_evaluate': _train_and_evaluate(work),
          'summary_steps': _summary_steps(work),
          'arguments': _arguments(work),
          'top_level': _top_level(model_dir)}


# What the INFO lines' varying parts become (paths, times, numbers).
_MASKS = ((re.compile(r'(?<=[ \'"])/[^ ,\'"]+'), 'PATH'),
          (re.compile(r'\d{4}-\d\d-\d\d[T-]\d\d:\d\d:\d\d'), 'TIME'),
          (re.compile(r'-?\d+(\.\d+)?(e[-+]?\d+)?'), 'N'))


def log_patterns(stderr: str):
  """The INFO lines TensorFlow's logger printed, masked, as a sorted set
  (a printed dict, the config, as `{...}`)."""
  patterns = set()
  for line in stderr.splitlines():
    if line.startswith('INFO:tensorflow:'):
      if '{' in line:
        line = line[:line.index('{')] + '{...}'
      for pattern, replacement in _MASKS:
        line = pattern.sub(replacement, line)
      patterns.add(line)
  return sorted(patterns)


def log_counts(stderr: str):
  """How many times some lines were logged (once per train() call, per
  evaluation, per Estimator): {line start: count}. (Not the saves: 2.15
  saved a resumed run's checkpoint again, docs/differences.md.)"""
  return {start: sum(line.startswith('INFO:tensorflow:' + start)
                     for line in stderr.splitlines())
          for start in ('Loss for final step', 'Saving dict for global step',
                        'Using config')}


def run_program(work, python=sys.executable, env=None):
  """Runs PROGRAM in a fresh process; (observations, its stderr)."""
  done = subprocess.run([python, os.path.abspath(__file__), work],
                        capture_output=True, text=True, env=env,
                        check=False, timeout=900)
  if done.returncode:
    raise RuntimeError(f'the program failed:\n{done.stderr[-3000:]}')
  return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _program(work):
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  print(json.dumps(observe(work)))


def _record():
  import tempfile  # pylint: disable=g-import-not-at-top
  observations, stderr = run_program(tempfile.mkdtemp())
  reference = {'made_with': {'tensorflow': tf.__version__},
               'observations': observations,
               'log_patterns': log_patterns(stderr),
               'log_counts': log_counts(stderr)}
  with open(REFERENCE_PATH, 'w') as f:
    json.dump(reference, f, indent=1, sort_keys=True)
    f.write('\n')
  print(f'wrote {REFERENCE_PATH}')


if __name__ == '__main__':
  if len(sys.argv) > 1:
    _program(sys.argv[1])
  else:
    _record()
