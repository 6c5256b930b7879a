r"""What the import hook costs a Python process at start.

    python -m scripts.bench.startup [--runs 20] [--python PY --without PY]
        [--tensorflow]

run from the repository root. By default it builds this checkout's wheel and
makes two fresh environments that see this environment's packages
(scripts/installed_env.py): one with the wheel installed (and so its .pth
file and import hook), one without. It prints, for each:

  - the median wall time and CPU time (user and system) of `--runs` runs of
    `python -c pass` (the process started and waited for), alternating the
    two environments run by run, and the differences (the target: under 5
    ms);
  - with --tensorflow, the same for `python -c "import tensorflow"` (a
    program that never touches tf.estimator: the hook's stand-ins and
    nothing else), over `--runs` // 4 runs;
  - `python -X importtime -c pass`: the modules the one with the hook
    imports that the other does not (none expected: the hook is one file,
    loaded by the .pth line, and imports only what Python has already
    imported at start), and the modules of estimator_rt in sys.modules.

--python and --without name two existing interpreters instead (the first
with estimator_rt installed).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from scripts import installed_env


def _time(python: str, code: str):
  """(wall seconds, CPU seconds) of one `python -c code`, from start to
  exit (the CPU time is the child's own, user and system: less sensitive
  than the wall time to what else runs on the machine)."""
  start = time.perf_counter()
  child = subprocess.Popen([python, '-c', code],
                           env=installed_env.clean_environment(
                               {'TF_CPP_MIN_LOG_LEVEL': '3'}),
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
  _, status, usage = os.wait4(child.pid, 0)
  wall = time.perf_counter() - start
  child.returncode = os.waitstatus_to_exitcode(status)
  if child.returncode != 0:
    raise RuntimeError(f'{python} -c {code!r} exited {child.returncode}')
  return wall, usage.ru_utime + usage.ru_stime


def medians(pythons, code: str, runs: int):
  """{name: (median wall seconds, median CPU seconds) of `python -c
  code`}, the runs alternating between the Pythons."""
  times = {name: [] for name in pythons}
  for run in range(runs):
    order = list(pythons.items())
    if run % 2:
      order.reverse()
    for name, python in order:
      times[name].append(_time(python, code))
  return {name: (statistics.median(w for w, _ in values),
                 statistics.median(c for _, c in values))
          for name, values in times.items()}


def imported_modules(python: str):
  done = subprocess.run([python, '-X', 'importtime', '-c', 'pass'],
                        capture_output=True, text=True, check=True,
                        timeout=60, env=installed_env.clean_environment())
  return {line.split('|')[-1].strip() for line in done.stderr.splitlines()
          if line.startswith('import time:') and '|' in line} - {
              'imported package'}


def _print(found, unit: float, label: str) -> None:
  for name, (wall, cpu) in found.items():
    print(f'  {name:8s} wall {wall * unit:8.1f} {label}   CPU '
          f'{cpu * unit:8.1f} {label}')
  (wall_with, cpu_with), (wall_without, cpu_without) = (
      found['with'], found['without'])
  print(f'  the hook costs: wall {(wall_with - wall_without) * 1000:+.1f} ms,'
        f' CPU {(cpu_with - cpu_without) * 1000:+.1f} ms')


def report(pythons, *, runs: int, tensorflow: bool) -> None:
  print(f'python -c pass, median of {runs} (alternating):')
  _print(medians(pythons, 'pass', runs), 1000, 'ms')
  if tensorflow:
    tf_runs = max(3, runs // 4)
    print(f'python -c "import tensorflow", median of {tf_runs}:')
    _print(medians(pythons, 'import tensorflow', tf_runs), 1, 's')
  extra = sorted(imported_modules(pythons['with']) -
                 imported_modules(pythons['without']))
  print(f'-X importtime: modules imported only with the hook: {extra or "none"}')
  done = subprocess.run(
      [pythons['with'], '-c', 'import sys; print(sorted(m for m in '
       'sys.modules if m.split(".")[0] == "estimator_rt"))'],
      capture_output=True, text=True, check=True, timeout=60,
      env=installed_env.clean_environment())
  print(f'estimator_rt modules at start: {done.stdout.strip()}')


def main(argv) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--runs', type=int, default=20)
  parser.add_argument('--python', help='a Python with estimator_rt installed')
  parser.add_argument('--without', help='the same Python without it')
  parser.add_argument('--tensorflow', action='store_true',
                      help='also time `import tensorflow`')
  args = parser.parse_args(argv)
  if bool(args.python) != bool(args.without):
    parser.error('--python and --without go together')
  with tempfile.TemporaryDirectory(prefix='startup-bench-') as directory:
    if args.python:
      pythons = {'with': args.python, 'without': args.without}
    else:
      wheel = installed_env.build_wheel(os.path.join(directory, 'wheel'))
      pythons = {
          'with': installed_env.make_environment(directory, wheel=wheel),
          'without': installed_env.make_environment(directory, wheel=None,
                                                    name='bare')}
    # A first run of each writes its bytecode caches.
    for python in pythons.values():
      _time(python, 'pass')
    report(pythons, runs=args.runs, tensorflow=args.tensorflow)


if __name__ == '__main__':
  main(sys.argv[1:])
