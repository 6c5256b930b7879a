"""The model_dir holds what tf.estimator 2.15's held.

scripts/tf_estimator_215/model_dir_listing.py ran three programs under
tf.estimator 2.15 (a TF1-style model_fn, a DNNClassifier, a TF2-style
model_fn) for train(steps=30), evaluate and export, and recorded after each
what model_dir held (tests/data/tf_estimator_215/model_dir_listing.json):
graph.pbtxt, model.ckpt-0 and model.ckpt-30 with their .meta files, the
state file, the event files and the graph in them. The same function
records them here (once per module, through tf.estimator's names as
`python -m estimator_rt.compat` serves them), and every file 2.15 wrote must
be here, or be a difference docs/differences.md gives a reason for
(DOCUMENTED). In the event files, the records about the graph and the
session (the graph, the meta graph, the session logs) are compared; which
summaries a model_fn writes at which step is the summaries' business.

A program that freezes and serves a model_dir then runs in a fresh process
on the TF1-style model_dir written here, as such programs were written for
2.15's: `tf.compat.v1.train.import_meta_graph('model.ckpt-30.meta')`,
`Saver.restore`, predictions fetched by name, then the graph frozen to
constants and served from the frozen GraphDef alone.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from estimator_rt.core import checkpoints
from estimator_rt.compat import namespaces
from scripts.tf_estimator_215 import model_dir_listing as listing_lib
from conftest import REPO_ROOT
from conftest import run_python

with open(listing_lib.REFERENCE_PATH) as f:
  REFERENCE = json.load(f)['programs']

# The records of an event file compared with 2.15's.
GRAPH_RECORDS = ('graph_def', 'meta_graph_def', 'session_log:START',
                 'session_log:CHECKPOINT')
# The programs recorded here: 2.15's three, and the TF2-style one again in
# the eager engine (RunConfig(engine='eager')), which writes object-based
# checkpoints.
OURS = {name: (name, {}) for name in listing_lib.PROGRAMS}
OURS['tf2-eager'] = ('tf2', {'engine': 'eager'})
# (program, what 2.15 wrote that is not here) -> docs/differences.md's
# words giving
# the reason, in its Differences.
DOCUMENTED = {
    # The eager engine's checkpoints are object-based: no MetaGraphDef's
    # Saver restores them.
    ('tf2-eager', 'model.ckpt-0.meta'): 'writes no `.meta`',
    ('tf2-eager', 'model.ckpt-30.meta'): 'writes no `.meta`',
    ('tf2-eager', 'events.out.tfevents.*:meta_graph_def'):
        'writes no `.meta`',
    ('tf2-eager', 'eval/events.out.tfevents.*:meta_graph_def'):
        'writes no `.meta`',
}


def _documented_differences() -> str:
  with open(os.path.join(REPO_ROOT, 'docs', 'differences.md')) as f:
    return f.read()


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
  """program -> (its record, its model_dir), as estimator_rt writes them."""
  work = tmp_path_factory.mktemp('model_dirs')
  records = {}
  for ours, (program, run_config) in OURS.items():
    model_dir = str(work / ours)
    records[ours] = (listing_lib.record_program(
        namespaces.v2(), program, model_dir, **run_config), model_dir)
  return records


def _missing(theirs: dict, ours: dict) -> list:
  """What `theirs` (a listing) has that `ours` lacks: paths, and for event
  files `path:record` of GRAPH_RECORDS."""
  missing = []
  for path, what in theirs.items():
    if path not in ours:
      missing.append(path)
    elif isinstance(what, list):
      missing += [f'{path}:{record}' for record in what
                  if record in GRAPH_RECORDS and record not in ours[path]]
  return missing


@pytest.mark.parametrize('program', sorted(OURS))
@pytest.mark.parametrize('stage', listing_lib.STAGES)
def test_every_file_2_15_wrote_is_here(recorded, program, stage):
  record, _ = recorded[program]
  missing = _missing(REFERENCE[OURS[program][0]][stage], record[stage])
  undocumented = [m for m in missing if (program, m) not in DOCUMENTED]
  assert not undocumented, (
      f'{program} after {stage}: 2.15 wrote {undocumented}; ours: '
      f'{sorted(record[stage])}')


def test_the_documented_differences_are_in_the_readme():
  differences = _documented_differences()
  for key, words in DOCUMENTED.items():
    assert words in differences, (key, words)


def test_the_eager_engine_writes_the_graph_but_no_meta(recorded):
  """What the TF2-style model_dir holds whatever its steps: graph.pbtxt
  (the compiled training loop's graph), the graph in the training and
  evaluation event files, and no .meta (DOCUMENTED)."""
  record, model_dir = recorded['tf2-eager']
  listing = record['export']
  assert listing['graph.pbtxt'] == 'file'
  assert 'graph_def' in listing['events.out.tfevents.*']
  assert 'graph_def' in listing['eval/events.out.tfevents.*']
  assert not [p for p in listing if p.endswith('.meta')]
  graph_def = tf.compat.v1.GraphDef()
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(os.path.join(model_dir, 'graph.pbtxt')) as f:
    text_format.Parse(f.read(), graph_def)
  assert graph_def.library.function  # The loop's body and the step's.


@pytest.mark.parametrize('program', ['tf1', 'canned'])
def test_the_state_file_and_the_metrics_are_2_15s(recorded, program):
  """Both checkpoints are listed, and the model trained as 2.15's did."""
  record, _ = recorded[program]
  assert record['state_file'] == REFERENCE[program]['state_file'] == [
      'model.ckpt-0', 'model.ckpt-30']
  theirs = REFERENCE[program]['metrics']
  assert record['metrics'] == pytest.approx(theirs, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize('program', ['tf2', 'tf2-eager'])
def test_a_tf2_model_fn_counts_and_trains_as_2_15s_did(recorded, program):
  """The TF2-style model_fn applies its gradients with Keras 3 variables'
  assign_sub and counts the step in its train_op: both engines write
  checkpoints 0 and 30 (the step counted once), and it trained as 2.15's did
  (its weights start elsewhere: Keras 3 draws its own initial values, so its
  loss is near 2.15's, not equal; untrained it is about 3.4)."""
  record, _ = recorded[program]
  assert record['state_file'] == REFERENCE['tf2']['state_file']
  assert record['metrics']['global_step'] == 30
  assert record['metrics']['loss'] < 3 * REFERENCE['tf2']['metrics']['loss']


def test_the_graph_files_hold_the_step_at_top_level(recorded):
  """The TF1-style model trained in the in-graph loop: graph.pbtxt and the
  .meta hold its step's ops under the model_fn's names, outside the loop,
  reading the trained variables."""
  _, model_dir = recorded['tf1']
  graph_def = tf.compat.v1.GraphDef()
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(os.path.join(model_dir, 'graph.pbtxt')) as f:
    text_format.Parse(f.read(), graph_def)
  names = {node.name: node for node in graph_def.node}
  # The loop that ran, under the runtime's own name scope.
  assert 'estimator_rt/training_loop' in names
  for name in (listing_lib.FEATURES_NAME, listing_lib.PREDICTIONS_NAME,
               'IteratorGetNext', 'global_step', 'save/restore_all'):
    assert name in names, name
  meta = tf.compat.v1.MetaGraphDef()
  with tf.io.gfile.GFile(os.path.join(model_dir, 'model.ckpt-30.meta'),
                         'rb') as f:
    meta.ParseFromString(f.read())
  assert meta.saver_def.restore_op_name
  assert 'trainable_variables' in meta.collection_def
  assert ({n.name for n in meta.graph_def.node} ==
          {n.name for n in graph_def.node})


_FREEZE_AND_SERVE = '''
import json, sys
import numpy as np
import tensorflow as tf

model_dir, features_name, predictions_name = sys.argv[1:4]
x = np.array(json.loads(sys.argv[4]), np.float32)
prefix = tf.train.latest_checkpoint(model_dir)
with tf.Graph().as_default() as graph:
  saver = tf.compat.v1.train.import_meta_graph(prefix + '.meta')
  with tf.compat.v1.Session(graph=graph) as session:
    saver.restore(session, prefix)
    restored = session.run(predictions_name + ':0', {features_name + ':0': x})
    frozen = tf.compat.v1.graph_util.convert_variables_to_constants(
        session, graph.as_graph_def(), [predictions_name])
with tf.Graph().as_default() as graph:
  tf.graph_util.import_graph_def(frozen, name='')
  with tf.compat.v1.Session(graph=graph) as session:
    served = session.run(predictions_name + ':0', {features_name + ':0': x})
print(json.dumps({'checkpoint': prefix, 'restored': restored.tolist(),
                  'served': served.tolist()}))
'''


def test_a_freezing_program_serves_the_trained_model_from_the_meta(
    recorded, tmp_path):
  """In a fresh process, as a program written for 2.15's model_dirs: the
  newest checkpoint's .meta imported, the checkpoint restored, the
  predictions fetched by the model_fn's names; then frozen to constants
  and served from the frozen graph. Both give Estimator.predict's numbers."""
  _, model_dir = recorded['tf1']
  est = namespaces.v2()
  estimator, _, _ = listing_lib.build(est, 'tf1', model_dir)
  x = np.random.RandomState(7).uniform(-1, 1, (5, 4)).astype(np.float32)
  expected = [p['y'][0] for p in estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({'x': x}).batch(5))]
  script = tmp_path / 'freeze_and_serve.py'
  script.write_text(_FREEZE_AND_SERVE)
  done = run_python([str(script), model_dir, listing_lib.FEATURES_NAME,
                     listing_lib.PREDICTIONS_NAME, json.dumps(x.tolist())],
                    timeout=120)
  assert done.returncode == 0, done.stderr[-3000:]
  result = json.loads(done.stdout.strip().splitlines()[-1])
  assert result['checkpoint'] == os.path.join(model_dir, 'model.ckpt-30')
  np.testing.assert_allclose(np.ravel(result['restored']), expected,
                             rtol=1e-5)
  np.testing.assert_allclose(np.ravel(result['served']), expected, rtol=1e-5)


def test_checkpoint_save_graph_def_false_and_rotation(tmp_path):
  """checkpoint_save_graph_def=False: neither graph.pbtxt nor .meta files,
  the graph still in the event file (as in 2.15); keep_checkpoint_max
  removes the .meta files with their checkpoints."""
  est = namespaces.v2()
  off = est.Estimator(listing_lib.tf1_model_fn_for(est), config=est.RunConfig(
      model_dir=str(tmp_path / 'off'), checkpoint_save_graph_def=False))
  off.train(listing_lib.train_input_fn, steps=2)
  listing = listing_lib.listing(str(tmp_path / 'off'))
  assert 'graph.pbtxt' not in listing
  assert not [p for p in listing if p.endswith('.meta')]
  assert 'graph_def' in listing['events.out.tfevents.*']
  assert 'model.ckpt-0.index' in listing

  kept = est.Estimator(listing_lib.tf1_model_fn_for(est), config=est.RunConfig(
      model_dir=str(tmp_path / 'kept'), save_checkpoints_steps=10,
      keep_checkpoint_max=2))
  kept.train(listing_lib.train_input_fn, steps=30)
  names = sorted(n for n in os.listdir(tmp_path / 'kept')
                 if n.startswith('model.ckpt'))
  assert names == [f'model.ckpt-{step}.{suffix}' for step in (20, 30)
                   for suffix in ('data-00000-of-00001', 'index', 'meta')]


def test_a_meta_goes_with_its_checkpoint_when_faults_are_cleared(tmp_path):
  """A .meta is part of its checkpoint: set aside with a damaged one, and
  cleared up when its index is gone (a rotation or a save cut short) or
  when it is the temporary file of a write cut short."""
  model_dir = str(tmp_path)
  for step in (10, 20):
    for suffix in ('.index', '.data-00000-of-00001', '.meta'):
      with open(os.path.join(model_dir, f'model.ckpt-{step}{suffix}'),
                'w') as f:
        f.write('x')
  for leftover in ('model.ckpt-30.meta', 'model.ckpt-40.meta.tmp123',
                   'graph.pbtxt.tmp0a1b'):
    with open(os.path.join(model_dir, leftover), 'w') as f:
      f.write('x')
  removed = checkpoints.remove_leftovers(model_dir)
  assert sorted(os.path.basename(p) for p in removed) == [
      'graph.pbtxt.tmp0a1b', 'model.ckpt-30.meta', 'model.ckpt-40.meta.tmp123']
  checkpoints.set_aside([(os.path.join(model_dir, 'model.ckpt-20'),
                          'damaged')], model_dir)
  assert sorted(os.listdir(os.path.join(model_dir, 'unusable_checkpoints'))
                ) == ['model.ckpt-20.data-00000-of-00001',
                      'model.ckpt-20.index', 'model.ckpt-20.meta']
  assert sorted(n for n in os.listdir(model_dir) if n.startswith('model')
                ) == ['model.ckpt-10.data-00000-of-00001',
                      'model.ckpt-10.index', 'model.ckpt-10.meta']
