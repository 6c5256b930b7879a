"""What a tf.estimator program observes, against what tf.estimator 2.15 gave
it (issue 42): return types, FileWriterCache after training, summary steps,
the arguments 2.15 took, the graph's top level, the INFO log lines.

scripts/tf_estimator_215/observables_reference.py is a plain tf.estimator
program; run under 2.15 it recorded tests/data/tf_estimator_215/
observables.json. Here it runs once, in a fresh process through the import
hook (its FileWriterCache, eager mode and logging are that process's), and
each test compares one part. The eager engine (estimator_rt's own TF2
model_fns, which 2.15 could not run) is checked in this process.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import estimator_rt as ert
from estimator_rt.core import summaries
from scripts.tf_estimator_215 import observables_reference as program

import _models as M
from conftest import REPO_ROOT

with open(program.REFERENCE_PATH) as f:
  REFERENCE = json.load(f)
EXPECTED = REFERENCE['observations']


@pytest.fixture(scope='module')
def observed(tmp_path_factory):
  """(the program's observations, its INFO log patterns), run here."""
  env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep +
             os.environ.get('PYTHONPATH', ''), TF_CPP_MIN_LOG_LEVEL='1')
  observations, stderr = program.run_program(
      str(tmp_path_factory.mktemp('observables')), env=env)
  return observations, stderr


def test_exports_return_bytes_and_evaluate_numpy_scalars_of_their_dtype(
    observed):
  """2.15: export_saved_model, experimental_export_all_saved_models and
  each exporter's export returned bytes; evaluate np.float32 metrics (the
  metric's dtype: float64, int32, int64 too) and an np.int64 global_step,
  also for Keras metric objects."""
  types = observed[0]['types']
  assert types == EXPECTED['types']
  assert types['export_saved_model'] == 'bytes'
  assert types['evaluate']['global_step'] == 'int64:int64'


def test_train_and_evaluate_returns_215s_value(observed):
  """(final metrics, each exporter's result at the final evaluation):
  two entries for two exporters after two evaluations, None for the one
  that did not export."""
  assert observed[0]['train_and_evaluate'] == EXPECTED['train_and_evaluate']
  assert observed[0]['train_and_evaluate']['exports'] == ['bytes', None]


def test_estimator_rt_train_and_evaluate_returns_every_export_path(tmp_path):
  x, y = M.make_data(32)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config(save_checkpoints_steps=2))
  metrics, exports = ert.train_and_evaluate(
      est, ert.TrainSpec(M.global_input_fn(x, y, batch_size=16), max_steps=4),
      ert.EvalSpec(M.global_input_fn(x, y, batch_size=16), steps=1,
                   throttle_secs=0, exporters=[ert.LatestExporter('l', None)]))
  assert isinstance(metrics['loss'], np.float32)
  assert [type(p) for p in exports] == [str, str]
  assert [M.saved_model_global_step(p) for p in exports] == [2, 4]


def test_the_writer_cache_holds_215s_writers_usable_in_eager_mode(observed):
  """model_dir's writer after train, the eval dir's too after evaluate; a
  summary added through it in the (eager) program lands in model_dir."""
  cache = observed[0]['writer_cache']
  assert cache == EXPECTED['writer_cache']
  assert cache['added_in_model_dir'] == [999]


@pytest.mark.parametrize('run', list(EXPECTED['summary_steps']))
def test_summaries_land_at_215s_steps(observed, run):
  """At the first step of each train() call, then every save_summary_steps;
  global_step/sec every log_step_count_steps after the first step."""
  got = observed[0]['summary_steps'][run]
  want = EXPECTED['summary_steps'][run]
  if run.startswith('tf2'):
    # This model_fn's train_op counts the global step itself, unordered
    # with 2.15's SummarySaverHook reading it in the same run, which then
    # named the step's summary one step early (1, 100, 199); the steps are
    # the TF1 model_fn's, as every other run of 2.15 shows.
    want = dict(want, loss=[1, 101, 201], my_scalar=[1, 101, 201])
  assert got == want


def test_one_event_file_per_directory_until_the_cache_is_cleared(tmp_path):
  """2.15's FileWriterCache kept one FileWriter per directory: two train()
  calls of a process appended to one event file, which began with the
  graph twice (the writer's, the CheckpointSaverHook's) and got it once
  more per later training; FileWriterCache.clear() ended the file."""
  x, y = M.make_data(32)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config())

  def graphs():
    return [sum(1 for e in tf.compat.v1.train.summary_iterator(str(p))
                if e.WhichOneof('what') == 'graph_def')
            for p in sorted(tmp_path.glob('events.out.tfevents.*'))]
  est.train(M.global_input_fn(x, y, batch_size=16), steps=2)
  est.train(M.global_input_fn(x, y, batch_size=16), steps=2)
  assert graphs() == [3]
  tf.compat.v1.summary.FileWriterCache.clear()
  est.train(M.global_input_fn(x, y, batch_size=16), steps=2)
  assert sorted(graphs()) == [2, 3]


def test_the_eager_engine_summarizes_at_the_same_steps(tmp_path):
  x, y = M.make_data(32)
  est = ert.Estimator(M.make_model_fn(), model_dir=str(tmp_path),
                      config=M.quiet_config(save_summary_steps=10,
                                            log_step_count_steps=10))
  est.train(M.global_input_fn(x, y, batch_size=16), max_steps=25)
  assert est.chosen_engine == 'eager'
  scalars = summaries.read_scalars(str(tmp_path))
  assert [s for s, _ in scalars['loss']] == [1, 11, 21]
  assert [s for s, _ in scalars['global_step/sec']] == [11, 21]


def test_float_and_numpy_counts_run_as_in_215(observed):
  """TrainSpec(max_steps=21.875) trains to 22, EvalSpec(steps=2.5)
  evaluates 3 batches, save_checkpoints_steps=2.5 saves every 3 steps,
  NumPy integers count as integers."""
  assert observed[0]['arguments'] == EXPECTED['arguments']


@pytest.mark.parametrize('value', [float('inf'), float('nan'), '5', 0.0])
def test_counts_215_ran_wrongly_are_refused_early(value):
  with pytest.raises(ert.UserInputError, match='max_steps'):
    ert.TrainSpec(lambda: None, max_steps=value)


def test_the_graph_top_level_holds_215s_names_and_one_scope(observed):
  """A TF1-style model_fn's training graph: what the runtime adds is under
  `estimator_rt/` (the checkpoints' variable names stay the model's)."""
  for where, names in observed[0]['top_level'].items():
    assert set(names) - set(EXPECTED['top_level'][where]) == {'estimator_rt'}


def test_info_lines_are_215s(observed):
  """The set of INFO lines on TensorFlow's logger (numbers, paths, times
  masked) is 2.15's, each line printed once."""
  _, stderr = observed
  assert program.log_patterns(stderr) == REFERENCE['log_patterns']
  # Once per train() call, evaluation, save, Estimator: none twice.
  assert program.log_counts(stderr) == REFERENCE['log_counts']
