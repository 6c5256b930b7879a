r"""Runs scenarios in this process, in one behaviour, and writes their records.

    python -m scripts.tf_estimator_215.observe.run --behavior v1|v2 \
        --out DIR [--trace] [SCENARIO ...]

(from the repository root; no SCENARIO: all of them). `--behavior v1`
calls `tf.compat.v1.disable_v2_behavior()` before any scenario is
imported, as TF1 programs do first. Each scenario runs in a temporary
directory of its own, with TensorFlow's logging at INFO (the level at which
scripts grep the training lines), and leaves DIR/SCENARIO.BEHAVIOR.json:
its entries in order, then the process state it left. Between scenarios
the process is set back as a program starting again would find it (the
default graph reset, the FileWriterCache cleared, Keras' session cleared),
so that several scenarios can share one process: each process pays
TensorFlow's import (about 3 s of CPU) once.

`--trace` (tf.estimator 2.15 only, see trace.py) adds to each record which
public names the scenario covered.
"""

import argparse
import importlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time

import tensorflow as tf

# A scenario still running after this long is stopped (a train that
# should have stopped and did not): its record says so, the next runs.
TIME_LIMIT_SECS = 150


class ScenarioTimeout(Exception):
  pass


def _timeout(signum, frame):
  del signum, frame
  raise ScenarioTimeout(f'stopped after {TIME_LIMIT_SECS} s')


def _reset():
  """The process as the next scenario should find it."""
  tf.compat.v1.summary.FileWriterCache.clear()
  try:
    tf.compat.v1.reset_default_graph()
  except Exception:  # pylint: disable=broad-except
    pass
  try:
    tf.keras.backend.clear_session()
  except Exception:  # pylint: disable=broad-except
    pass


def run_one(name: str, behavior: str, log, tracer=None) -> dict:
  """Runs scenario `name`; returns its record."""
  from scripts.tf_estimator_215.observe import recorder  # pylint: disable=g-import-not-at-top
  module = importlib.import_module(
      f'scripts.tf_estimator_215.observe.scenarios.{name}')
  tmp = tempfile.mkdtemp(prefix='observe-')
  rec = recorder.Recorder(tmp, log)
  log.new_lines()  # what earlier scenarios printed
  started = time.time()
  if tracer:
    tracer.start()
  signal.signal(signal.SIGALRM, _timeout)
  signal.alarm(TIME_LIMIT_SECS * (3 if tracer else 1))
  try:
    module.run(rec)
  except BaseException as error:  # pylint: disable=broad-except
    rec.raw('uncaught', recorder.describe_exception(error))
  finally:
    signal.alarm(0)
    if tracer:
      tracer.stop()
  rec.state('process state at the end')
  record = {'scenario': name, 'behavior': behavior, 'entries': rec.entries,
            'seconds': round(time.time() - started, 1)}
  if tracer:
    from scripts.tf_estimator_215.observe import trace  # pylint: disable=g-import-not-at-top
    with open(module.__file__) as f:
      record['coverage'] = trace.covered(tracer, f.read())
  shutil.rmtree(tmp, ignore_errors=True)
  _reset()
  return record


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--behavior', choices=('v1', 'v2'), required=True)
  parser.add_argument('--out', required=True)
  parser.add_argument('--trace', action='store_true')
  parser.add_argument('scenarios', nargs='*')
  args = parser.parse_args(argv)
  if args.behavior == 'v1':
    tf.compat.v1.disable_v2_behavior()
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  from scripts.tf_estimator_215.observe import recorder  # pylint: disable=g-import-not-at-top
  from scripts.tf_estimator_215.observe import scenarios  # pylint: disable=g-import-not-at-top
  tracer = None
  if args.trace:
    from scripts.tf_estimator_215.observe import trace  # pylint: disable=g-import-not-at-top
    tracer = trace.Tracer()
  os.makedirs(args.out, exist_ok=True)
  log = recorder.LogCapture()
  for name in args.scenarios or scenarios.NAMES:
    log.start()
    try:
      record = run_one(name, args.behavior, log, tracer)
    finally:
      log.stop()
    path = os.path.join(args.out, f'{name}.{args.behavior}.json')
    with open(path, 'w') as f:
      json.dump(record, f, indent=1, sort_keys=False)
      f.write('\n')
    print(f'{name} {args.behavior}: {len(record["entries"])} entries, '
          f'{record["seconds"]} s', flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
