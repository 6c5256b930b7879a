"""Runs a tf.estimator program, unchanged, on estimator_rt.

    python -m estimator_rt.compat PROGRAM.py [ARGS...]
    python -m estimator_rt.compat -m PACKAGE.MODULE [ARGS...]
    python -m estimator_rt.compat --check DIR [DIR...]

As `python PROGRAM.py ARGS...` (or `python -m PACKAGE.MODULE ARGS...`) would
run it: the same `sys.argv`, `__name__ == '__main__'`, the program's
directory first on `sys.path`, and its exit code (an exception that ends it
prints its traceback and exits 1), with `estimator_rt.compat.install()` done
first, so that `tf.estimator` and `tensorflow_estimator` are estimator_rt,
and `tf.keras` Keras 2 (tf_keras), as it was for the program under
TensorFlow 2.15 (set TF_USE_LEGACY_KERAS=0 to keep Keras 3).

With estimator_rt installed (its wheel, or `pip install -e`), `python
PROGRAM.py` does the same through the import hook (startup.py), which
chooses Keras 2 for tf.estimator programs where that can still be chosen
(keras_choice.py); the runner sets it before the program starts, always.

`--check DIR...` runs nothing: it lists every tf.estimator name and module
path the .py files under DIR use, with `file:line` and whether each runs
here, runs with a documented difference, or is refused (check.py), then a
summary. Exit 0 when every use runs, 1 when one is refused, 2 on bad
arguments.
"""

import os
import runpy
import sys

USAGE = ('usage: python -m estimator_rt.compat PROGRAM.py [ARGS...]\n'
         '       python -m estimator_rt.compat -m PACKAGE.MODULE [ARGS...]\n'
         '       python -m estimator_rt.compat --check DIR [DIR...]')


def _check(paths) -> None:
  """--check: prints the report; exits 0, 1 (a use is refused) or 2."""
  # pylint: disable=g-import-not-at-top
  from estimator_rt.compat import check
  from estimator_rt.compat import check_report
  # pylint: enable=g-import-not-at-top
  try:
    # Paths are checked before TensorFlow is imported: a bad one fails fast.
    result = check.check(paths)
  except check.CheckArgumentError as e:
    print(f'error: {e}', file=sys.stderr)
    sys.exit(2)
  for line in check_report.lines(result):
    print(line)
  sys.exit(result.exit_code())


def main(argv) -> None:
  if len(argv) < 2 or argv[1] in ('-h', '--help') or (
      argv[1] == '-m' and len(argv) < 3):
    print(USAGE, file=sys.stderr)
    sys.exit(2)
  # TensorFlow's C++ INFO lines drown the program's own output, as in the
  # binary; a program that wants them sets the variable itself.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')
  # A tf.estimator program was written for TensorFlow <= 2.15, where
  # tf.keras was Keras 2: it gets tf_keras as tf.keras (TensorFlow's own
  # switch, read when TensorFlow is imported), unless the caller set the
  # variable. estimator_rt itself uses Keras 3 (`import keras`) either way.
  os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')
  if argv[1] == '--check':
    # After the defaults above: a check resolves each name as the program
    # run here would see it (tf.keras.estimator is tf_keras's).
    _check(argv[2:])
  import estimator_rt.compat  # pylint: disable=g-import-not-at-top
  estimator_rt.compat.install()
  if argv[1] == '-m':
    sys.argv = [argv[2]] + argv[3:]
    runpy.run_module(argv[2], run_name='__main__', alter_sys=True)
    return
  program = argv[1]
  if not os.path.isfile(program):
    print(f'error: {program}: no such file', file=sys.stderr)
    sys.exit(2)
  sys.argv = argv[1:]
  sys.path[0] = os.path.dirname(os.path.abspath(program))
  runpy.run_path(program, run_name='__main__')


if __name__ == '__main__':
  main(sys.argv)
