r"""Makes the tf.estimator 2.15 fixtures in tests/data/tf_estimator_215.

    scripts/tf_estimator_215/make_venv.sh            # once: .venv-tf215
    .venv-tf215/bin/python scripts/tf_estimator_215/make_fixture.py

For each of two legacy programs (tests/legacy_programs/seed_readme.py and
tf1_classifier.py) this trains with tf.estimator itself, in a temporary
model_dir, then copies only the newest checkpoint (its `.index` and `.data`
files, and a `checkpoint` state file naming it by a relative path) into
tests/data/tf_estimator_215/<program>/: no event files, no graph.pbtxt, so
the fixture is a few KB and holds nothing but what a resume needs.

Then, from that copy, it records what estimator_rt must reproduce:
evaluate's metrics on the copied checkpoint, the variables it holds
(tf.train.list_variables), and the metrics after training on from it to a
later step. All of it goes to FIXTURE.md (for people) and fixture.json (for
tests) beside the model_dirs.

Refuses to run on TensorFlow 2.16 or later: the point is checkpoints written
by tf.estimator.
"""

import datetime
import glob
import json
import os
import platform
import random
import shutil
import sys
import tempfile
from importlib import metadata

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
FIXTURE_ROOT = os.path.join(_REPO_ROOT, 'tests', 'data', 'tf_estimator_215')
COMMAND = '.venv-tf215/bin/python scripts/tf_estimator_215/make_fixture.py'

# program -> (train max_steps for the fixture, max_steps to train on to).
# seed_readme ignores both: its train_op never advances the global step and
# its input ends after 100 elements (see the program's docstring).
PLAN = {
    'seed_readme': (None, None),
    'tf1_classifier': (20, 40),
}


def _import_programs():
  """Imports the legacy programs with `estimator_rt` meaning tf.estimator."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if tuple(int(p) for p in tf.__version__.split('.')[:2]) >= (2, 16):
    sys.exit(f'error: this is TensorFlow {tf.__version__}; run me with the '
             'tf.estimator 2.15 environment (scripts/tf_estimator_215/'
             'make_venv.sh, then .venv-tf215/bin/python)')
  sys.path.insert(0, os.path.join(_HERE, 'shim'))
  sys.path.insert(0, os.path.join(_REPO_ROOT, 'tests', 'legacy_programs'))
  import seed_readme  # pylint: disable=g-import-not-at-top
  import tf1_classifier  # pylint: disable=g-import-not-at-top
  return {'seed_readme': seed_readme, 'tf1_classifier': tf1_classifier}


def _train(program, model_dir, max_steps):
  estimator = program.make_estimator(model_dir)
  if program.__name__ == 'seed_readme':
    estimator.train(input_fn=program.input_fn)
  else:
    estimator.train(input_fn=program.train_input_fn, max_steps=max_steps)
  return estimator


def _evaluate(program, estimator, checkpoint_path=None):
  eval_input_fn = getattr(program, 'eval_input_fn', None) or program.input_fn
  metrics = estimator.evaluate(input_fn=eval_input_fn,
                               checkpoint_path=checkpoint_path)
  return {name: round(float(value), 6) if name != 'global_step'
          else int(value) for name, value in sorted(metrics.items())}


def _copy_newest_checkpoint(model_dir, fixture_dir):
  """Copies model_dir's newest checkpoint alone; returns its prefix there."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  prefix = tf.train.latest_checkpoint(model_dir)
  if os.path.exists(fixture_dir):
    shutil.rmtree(fixture_dir)
  os.makedirs(fixture_dir)
  for path in glob.glob(prefix + '.index') + glob.glob(prefix + '.data-*'):
    shutil.copy2(path, fixture_dir)
  name = os.path.basename(prefix)
  # Relative paths, so the fixture works wherever the repository is.
  with open(os.path.join(fixture_dir, 'checkpoint'), 'w') as state:
    state.write(f'model_checkpoint_path: "{name}"\n'
                f'all_model_checkpoint_paths: "{name}"\n')
  return os.path.join(fixture_dir, name)


def make_one(name, program, scratch):
  """Trains, copies and measures one fixture; returns its record."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  fixture_steps, continue_to = PLAN[name]
  trained_dir = os.path.join(scratch, name)
  _train(program, trained_dir, fixture_steps)
  fixture_dir = os.path.join(FIXTURE_ROOT, name)
  prefix = _copy_newest_checkpoint(trained_dir, fixture_dir)

  # Evaluated from the copy (the scratch model_dir only receives eval events).
  metrics = _evaluate(program, program.make_estimator(trained_dir),
                      checkpoint_path=prefix)
  record = {
      'checkpoint': os.path.basename(prefix),
      'global_step': int(tf.train.load_variable(prefix, 'global_step')),
      'eval_metrics': metrics,
      'variables': [[var, list(shape)]
                    for var, shape in tf.train.list_variables(prefix)],
      'files': {os.path.basename(p): os.path.getsize(p)
                for p in sorted(glob.glob(os.path.join(fixture_dir, '*')))},
  }
  if name == 'seed_readme':
    # Every element is x=1, y=1, so the eval loss is (kernel + bias - 1)^2.
    kernel = float(tf.train.load_variable(prefix, 'dense/kernel')[0, 0])
    bias = float(tf.train.load_variable(prefix, 'dense/bias')[0])
    record['loss_by_hand'] = round((kernel + bias - 1.) ** 2, 6)
  if continue_to is not None:
    # Training on from a copy of the fixture, as estimator_rt will.
    resumed_dir = os.path.join(scratch, name + '_resumed')
    shutil.copytree(fixture_dir, resumed_dir)
    estimator = _train(program, resumed_dir, continue_to)
    record['continued_to'] = continue_to
    record['continued_eval_metrics'] = _evaluate(program, estimator)
  return record


def _versions():
  return {
      'python': platform.python_version(),
      'tensorflow-cpu': metadata.version('tensorflow-cpu'),
      'tensorflow-estimator': metadata.version('tensorflow-estimator'),
      'keras': metadata.version('keras'),
      'numpy': metadata.version('numpy'),
  }


def _markdown(records, versions, made_at):
  lines = [
      '# tf.estimator 2.15 fixture model_dirs',
      '',
      'Checkpoints written by tf.estimator (TensorFlow 2.15, name-based '
      'TF1 `Saver` checkpoints), for estimator_rt to resume and evaluate '
      '(issue 12, item 3). Generated; do not edit by hand.',
      '',
      f'- Made by: `scripts/tf_estimator_215/make_venv.sh` then `{COMMAND}` '
      '(from the repository root)',
      f'- Made on: {made_at} UTC, {platform.machine()} '
      f'{platform.system()}',
      '- Versions: ' + ', '.join(f'{k} {v}' for k, v in versions.items()),
      '- Each directory holds only the newest checkpoint of a tf.estimator '
      'run and a `checkpoint` state file naming it by a relative path; '
      'event files and graph.pbtxt were left out on purpose.',
      '- The programs are in tests/legacy_programs/ and run unchanged under '
      'both estimators (tests/legacy_programs/README.md).',
      '- The same numbers, for tests: `fixture.json`.',
      '',
  ]
  for name, record in records.items():
    lines += [f'## {name}/', '']
    if name == 'seed_readme':
      lines += [
          'The README example trains on its 100 elements, but its '
          '`minimize(loss)` never advances the global step, so tf.estimator '
          'saves only the checkpoint it writes when the session starts '
          '(step 0, the initial weights) and never saves the trained ones: '
          'the evaluation below is of untrained weights, exactly as '
          'tf.estimator 2.15 reports it. `tf_random_seed=1` does not fix '
          'those initial weights: under TensorFlow 2.15, '
          '`tf.compat.v1.layers.Dense` takes its default initializer from '
          'Keras 2, whose unseeded initializers draw their seeds from '
          "Python's `random` (this script seeds it with 0) and ignore the "
          'graph seed. The checkpoint is the reference: every element '
          'is x=1, y=1, and the loss is (kernel + bias - 1)^2 = '
          f'{record["loss_by_hand"]} from the values stored in it.',
          '',
      ]
    else:
      steps = PLAN[name][0]
      lines += [f'Trained with `max_steps={steps}` '
                '(`tf1_classifier.make_estimator`: tf_random_seed=1, '
                'batch 32, Adagrad 0.1).', '']
    lines += [
        f'- Checkpoint: `{record["checkpoint"]}`; final global step: '
        f'**{record["global_step"]}**',
        '- `evaluate(eval input_fn)` on it: '
        f'`{json.dumps(record["eval_metrics"])}`',
    ]
    if 'continued_to' in record:
      lines.append(
          f'- Trained on from a copy of it with `max_steps='
          f'{record["continued_to"]}` under tf.estimator 2.15, then '
          f'evaluated: `{json.dumps(record["continued_eval_metrics"])}`')
    lines += ['', '| variable (tf.train.list_variables) | shape |',
              '|---|---|']
    lines += [f'| `{var}` | {shape} |' for var, shape in record['variables']]
    lines += ['', 'Files: ' + ', '.join(
        f'`{f}` ({size} B)' for f, size in record['files'].items()), '']
  return '\n'.join(lines)


def main():
  programs = _import_programs()
  # Keras 2's unseeded initializers (seed_readme's tf.compat.v1.layers.Dense)
  # take their seeds from Python's `random`, not from tf_random_seed.
  random.seed(0)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
  made_at = datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M')
  records = {}
  with tempfile.TemporaryDirectory(prefix='tf215_fixture_') as scratch:
    for name in PLAN:
      records[name] = make_one(name, programs[name], scratch)
      print(f'{name}: step {records[name]["global_step"]}, '
            f'{json.dumps(records[name]["eval_metrics"])}')
  versions = _versions()
  with open(os.path.join(FIXTURE_ROOT, 'fixture.json'), 'w') as out:
    json.dump({'command': COMMAND, 'made_at_utc': made_at,
               'versions': versions, 'model_dirs': records}, out, indent=2,
              sort_keys=True)
    out.write('\n')
  with open(os.path.join(FIXTURE_ROOT, 'FIXTURE.md'), 'w') as out:
    out.write(_markdown(records, versions, made_at))
  print(f'wrote {FIXTURE_ROOT}/{{FIXTURE.md,fixture.json,'
        f'{",".join(PLAN)}}}')


if __name__ == '__main__':
  main()
