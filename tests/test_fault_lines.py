"""Every fault's last line names its cause, in both TF behaviours, against
what tf.estimator 2.15 raised for the same fault.

scripts/tf_estimator_215/faults_reference.py meets each fault for real with
a TF1-style model_fn (the graph engine here): a model_dir that stops being
writable mid-training, a file size limit below a checkpoint's size, a
model_dir not writable from the start, a truncated .data, a garbage .index,
no usable checkpoint, a NaN loss, a checkpoint missing a variable or
holding one in another shape, an export directory not writable, SIGTERM.
It ran in the 2.15 environment, one process per case, under TF2 behaviour
and after `disable_v2_behavior()` (tests/data/tf_estimator_215/
faults.json). Here it runs as a tf.estimator program, one process per
behaviour (about 15 s each), and each line must be one line without
TensorFlow's graph traceback, carry the cause, what is intact and what to
do, and, where 2.15 raised, be of 2.15's class and start with its words.
(The eager engine's lines: tests/test_model_dir_faults.py.)
"""

import json
import os
import re

import pytest

from estimator_rt.core.errors import one_line

from conftest import REPO_ROOT
from conftest import run_python

with open(os.path.join(REPO_ROOT, 'tests', 'data', 'tf_estimator_215',
                       'faults.json'), encoding='utf-8') as f:
  REFERENCE = json.load(f)

# What each fault's line (or, where training goes on, its warning) must
# say: the cause, what is intact, what to do.
SAYS = {
    'save_denied': ('Permission denied', r'intact \(newest: step 5\)',
                    'same command resumes'),
    'save_disk_full': ('File too large', r'intact \(newest: step 5\)',
                       'same command resumes'),
    'start_denied': ('Permission denied', 'nothing was written',
                     'Fix its permissions'),
    'damaged_data': ('Read less bytes than requested',
                     'using model.ckpt-5, the newest usable one'),
    'garbage_index': (r'not an sstable \(bad magic number\)',
                      'using model.ckpt-5, the newest usable one'),
    'none_usable': ('model.ckpt-0: tensor pad cannot be read',
                    'Nothing was written', 'Restore them from a backup'),
    'nan_loss': ('the loss was nan at global step 7',
                 'newest checkpoint, at step 5, is the last finite one',
                 'Lower the learning rate'),
    'restore_missing': (r"no variable\(s\) \['extra'\]", 'Nothing was written',
                        'use a new model_dir'),
    'restore_shape': (r'pad: \[10\] in the checkpoint, \[20\] here',
                      'Nothing was written', 'use a new model_dir'),
    'export_denied': ('Permission denied', 'checkpoints are untouched',
                      'export again'),
    'sigterm': (r'Preempted \(SIGTERM\) at global step 10',
                'checkpoint saved', 'Run the same command again'),
}

# Where the line is not what 2.15 raised, and why (docs/differences.md).
DIFFERENT = {
    # 2.15 stopped on the damage; the runtime trains on from the newest
    # usable checkpoint, with a warning.
    'damaged_data': 'survives', 'garbage_index': 'survives',
    # 2.15's MonitoredSession took the save's OutOfRangeError (EFBIG) for
    # the end of the input: train() returned, the steps since the last
    # save lost. 2.15 died of SIGTERM, with no line.
    'save_disk_full': 'raises', 'sigterm': 'raises',
}
# Under TF2 behaviour 2.15 restored another shape into resource variables
# and failed at the first update ("var and delta do not have the same
# shape"); the runtime refuses at the restore, as under TF1 behaviour.
DIFFERENT_TF2 = {'restore_shape': 'restore refused'}

_PATH = re.compile(r"/[^\s;:'\"()]+")
_GRAPH_TRACEBACK = ('Graph execution error', 'Detected at node',
                    'defined at (most recent call last)',
                    'Original stack trace', '[[{{node')


class _Recorded(Exception):
  """2.15's recorded message, for one_line."""


def _words(message):
  """The start of a line that must match 2.15's: its first sentence, with
  paths (temporary directories, random file names) masked."""
  line = _PATH.sub('<path>', one_line(_Recorded(message)))
  return re.split(r'\. | \(node ', line)[0]


@pytest.fixture(scope='module', params=sorted(REFERENCE))
def behavior_run(request):
  behavior = request.param
  result = run_python(
      ['-m', 'estimator_rt.compat',
       os.path.join('scripts', 'tf_estimator_215', 'faults_reference.py'),
       behavior], timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return behavior, json.loads(result.stdout.split('RESULT ', 1)[1])


@pytest.mark.parametrize('fault', sorted(SAYS))
def test_fault_line_carries_its_cause_as_2_15_raised_it(behavior_run, fault):
  behavior, here = behavior_run
  then, now = REFERENCE[behavior][fault], here[fault]
  different = DIFFERENT.get(fault) or (
      DIFFERENT_TF2.get(fault) if behavior == 'tf2' else None)
  if different == 'survives':
    assert 'ok' in now, now
    assert 'raised' in then, then
    # The warning names the checkpoint and gives 2.15's reason.
    (line,) = [w for w in now['warnings'] if w.startswith('Skipping ')]
    assert 'model.ckpt-10' in line and _words(then['message']) in line, line
  else:
    assert 'raised' in now, now
    line = now['message']
  for logged in [line] + now['warnings']:
    assert '\n' not in logged, logged
    for mark in _GRAPH_TRACEBACK:
      assert mark not in logged, logged
  for said in SAYS[fault]:
    assert re.search(said, line), (said, line)
  if different is None:
    # 2.15's class (the most derived), and its words first.
    assert then['raised'][0] in now['raised'], (then['raised'], now['raised'])
    assert _PATH.sub('<path>', line).startswith(_words(then['message'])), (
        _words(then['message']), line)
  elif different == 'raises':
    assert 'raised' not in then, then


def test_one_line_cuts_what_tensorflow_wraps_around_the_reason():
  """2.15's save failure under TF1 behaviour (as recorded) gives the OS's
  reason and the node, once, without the stack of the node's definition."""
  message = REFERENCE['tf1']['save_denied']['message']
  assert 'Detected at node' in message  # The graph traceback is there.
  line = one_line(_Recorded(message))
  assert re.fullmatch(r'/\S+/model\.ckpt-10_temp; Permission denied '
                      r'\(node save/SaveV2\)', line), line
