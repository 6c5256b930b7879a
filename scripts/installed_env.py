r"""Makes a fresh virtual environment with estimator_rt installed from its
wheel, as a user gets it.

    python scripts/installed_env.py DIR [--pip REQUIREMENT...]

prints the new environment's Python (DIR/venv/bin/python). What it does:

  - builds this checkout's wheel (`pip wheel --no-deps --no-build-isolation`)
    from a copy of the files the wheel is made of (`WHEEL_SOURCES`), so that
    nothing is written into the checkout, into DIR/wheel;
  - makes DIR/venv (`python -m venv --without-pip`) and installs the wheel
    into it with this Python's pip (`pip --python`), `--no-deps`: its .pth
    file lands in the new site-packages as it does for a user;
  - gives it this environment's packages (TensorFlow, tf_keras, pytest, ...)
    without downloading them again: a .pth file of the new environment holds
    this environment's site-packages as a plain path line, which Python
    appends to sys.path without running the .pth files there (this
    checkout's editable install and its hook), so that the new environment's
    estimator_rt, hook and metadata are the wheel's;
  - installs `--pip` requirements (e.g. pandas==2.2.3 for
    run_public_programs.py) into the new environment.

Run the new Python without PYTHONPATH (a checkout on it would be imported
in place of the wheel), from a directory other than the checkout's.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from typing import Dict, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What setup.py builds the wheel from.
WHEEL_SOURCES = ('setup.py', 'setup.cfg', 'pyproject.toml', 'README.md',
                 'estimator_rt_compat.pth', 'estimator_rt', 'model_fns',
                 'input_fns')
# Seconds a build or an install may take (the bind guard is compiled).
TIMEOUT_SECS = 600


def clean_environment(extra: Optional[Dict[str, str]] = None
                      ) -> Dict[str, str]:
  """os.environ for a process of the new environment: no PYTHONPATH (the
  checkout would shadow the wheel), no TF_USE_LEGACY_KERAS or
  ESTIMATOR_RT_COMPAT set by the caller, and `extra`."""
  env = {k: v for k, v in os.environ.items()
         if k not in ('PYTHONPATH', 'TF_USE_LEGACY_KERAS',
                      'ESTIMATOR_RT_COMPAT', 'PYTHONHOME')}
  env.update(extra or {})
  return env


def _run(command: Sequence[str], **kwargs) -> None:
  done = subprocess.run(list(command), capture_output=True, text=True,
                        timeout=TIMEOUT_SECS, check=False, **kwargs)
  if done.returncode != 0:
    raise RuntimeError(f'{" ".join(command)} exited {done.returncode}:\n'
                       f'{done.stdout[-3000:]}\n{done.stderr[-3000:]}')


def build_wheel(out_dir: str) -> str:
  """Builds the checkout's wheel into `out_dir`; returns its path."""
  os.makedirs(out_dir, exist_ok=True)
  with tempfile.TemporaryDirectory(prefix='estimator_rt-source-') as source:
    for name in WHEEL_SOURCES:
      origin = os.path.join(REPO, name)
      if os.path.isdir(origin):
        shutil.copytree(origin, os.path.join(source, name),
                        ignore=shutil.ignore_patterns('__pycache__', '*.so',
                                                      '*.pyc'))
      else:
        shutil.copy2(origin, source)
    _run([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--no-deps',
          '--no-build-isolation', '--wheel-dir', out_dir, source],
         env=clean_environment())
  wheels = glob.glob(os.path.join(out_dir, 'estimator_rt-*.whl'))
  if len(wheels) != 1:
    raise RuntimeError(f'expected one estimator_rt wheel in {out_dir}, '
                       f'found {wheels}')
  return wheels[0]


def site_packages(python: str) -> str:
  return subprocess.run(
      [python, '-c', 'import sysconfig; print(sysconfig.get_paths()'
       '["purelib"])'], capture_output=True, text=True, check=True,
      env=clean_environment(), timeout=60).stdout.strip()


def make_environment(directory: str, *, wheel: Optional[str],
                     requirements: Sequence[str] = (),
                     name: str = 'venv') -> str:
  """A new virtual environment `directory`/`name` with `wheel` installed
  (none if None: the same environment without estimator_rt, to compare
  with; see the module docstring); returns its Python."""
  venv = os.path.join(directory, name)
  _run([sys.executable, '-m', 'venv', '--without-pip', venv])
  python = os.path.join(venv, 'bin', 'python')
  shared = sysconfig.get_paths()['purelib']
  with open(os.path.join(site_packages(python), '_shared_packages.pth'),
            'w') as f:
    # A path line, not `import site; site.addsitedir(...)`: the .pth files
    # there are not run.
    f.write(shared + '\n')
  if wheel is not None:
    _run([sys.executable, '-m', 'pip', '--python', python, 'install',
          '--quiet', '--no-deps', '--no-index', wheel],
         env=clean_environment())
  if requirements:
    _run([sys.executable, '-m', 'pip', '--python', python, 'install',
          '--quiet', *requirements], env=clean_environment())
  return python


def main(argv: Sequence[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('directory', help='where to make wheel/ and venv/')
  parser.add_argument('--pip', nargs='*', default=[], metavar='REQUIREMENT',
                      help='requirements to install into the environment')
  args = parser.parse_args(argv)
  directory = os.path.abspath(args.directory)
  wheel = build_wheel(os.path.join(directory, 'wheel'))
  print(make_environment(directory, wheel=wheel, requirements=args.pip))


if __name__ == '__main__':
  main(sys.argv[1:])
