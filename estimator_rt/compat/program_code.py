"""The code a process runs, found without running it: the files to read to
tell whether a program, or a pytest run, uses tf.estimator.

  - A program is its main file and the modules of its own it imports,
    transitively, wherever the import statement stands (top level, a
    function, a `try`). A module is the program's own when it is found in
    one of the program's directories: the main file's, the current one,
    PYTHONPATH's and any other `sys.path` entry outside the Python
    installation and its site-packages. Installed libraries, the standard
    library and estimator_rt itself are not the program's.
  - A pytest run is its test files (`test_*.py`, `*_test.py`) and
    `conftest.py` files under the paths it was given (or the `testpaths` of
    its configuration, or the current directory), and the modules of their
    own they import, as above (each test file's package root counts as one
    of their directories, as pytest puts it on `sys.path`). estimator_rt's
    own test suite (the checkout an editable install runs from) is not: it
    tests estimator_rt's Keras 3 API beside the compatibility layer.

The files are read, never imported or run: imports are the import
statements that start a line. At
most MAX_FILES files are read.

Standard library only: startup.py loads this file alone when TensorFlow is
first imported (keras_choice.py decides from what it finds), and
`python -m estimator_rt.compat --check` uses it to say which Keras a program
will get.
"""

import os
import re
import sys

# Read at most this many files for one program (a test run over a large
# repository stops there; what was read so far decides).
MAX_FILES = 3000

# What a file that uses tf.estimator must say (`tf.estimator`, `from
# tensorflow import estimator`, `tensorflow_estimator`): a file without it
# does not use it (keras_choice.py reads the others with scan.py).
_MAY_USE_TF_ESTIMATOR = re.compile(rb'tensorflow_estimator|[.\s]estimator\b')

# Directories no program imports from and pytest does not collect
# (pytest's default `norecursedirs`, and environments' packages).
_SKIPPED_DIRECTORIES = ('__pycache__', 'site-packages', 'dist-packages',
                        'node_modules', 'build', 'dist', 'CVS', '_darcs',
                        'venv', '{arch}')
# An import statement at the start of a line: `import a.b as c, d`, `from
# .m import (x, y as z)`.
_IMPORT = re.compile(
    r'^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)'
    r'|import[ \t]+([^\n#;]*))', re.M)
_TEST_FILE = re.compile(r'^(test_.*|.*_test)\.py$')
# pytest's configuration files, in the order pytest looks for them, with
# the section that holds `testpaths`.
_PYTEST_CONFIGS = (('pytest.ini', 'pytest'), ('pyproject.toml', None),
                   ('tox.ini', 'pytest'), ('setup.cfg', 'tool:pytest'))


class Program:
  """What a process runs, as files.

  Attributes:
    description: how the process runs it ('train.py', 'pytest tests').
    files: every file read, in the order reached (the start files first).
    candidates: those of `files` that say `estimator` or
      `tensorflow_estimator` (a use of tf.estimator is among them, if any).
    complete: False if MAX_FILES stopped the search.
  """

  def __init__(self, *, description: str, files, candidates, complete):
    self.description = description
    self.files = list(files)
    self.candidates = list(candidates)
    self.complete = complete


def _real(path: str) -> str:
  return os.path.realpath(os.path.abspath(path))


def _is_under(path: str, directory: str) -> bool:
  return path == directory or path.startswith(directory.rstrip(os.sep) +
                                              os.sep)


def _not_the_programs() -> list:
  """Directories whose modules are never a program's own: the Python
  installation (its standard library and site-packages) and estimator_rt."""
  here = os.path.dirname(_real(__file__))
  prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix,
              sys.base_exec_prefix}
  return [_real(p) for p in prefixes if p] + [os.path.dirname(here)]


def _estimator_rt_checkout():
  """The source checkout estimator_rt runs from (an editable install), or
  None: its own test suite tests estimator_rt's Keras 3 API beside the
  compatibility layer, and chooses its Keras per test."""
  checkout = os.path.dirname(os.path.dirname(os.path.dirname(_real(__file__))))
  return checkout if os.path.isfile(os.path.join(checkout, 'setup.py')) else None


def own_directories(entries) -> list:
  """The entries of `entries` (sys.path-like) that hold a program's own
  modules: existing directories outside the Python installation,
  site-packages and estimator_rt, each once, in order."""
  excluded = _not_the_programs()
  found = []
  for entry in entries:
    path = _real(entry or os.curdir)
    parts = path.split(os.sep)
    if (not os.path.isdir(path) or path in found or
        'site-packages' in parts or 'dist-packages' in parts or
        any(_is_under(path, e) for e in excluded)):
      continue
    found.append(path)
  return found


def _package_root(path: str) -> str:
  """The first directory above `path` that is not a package: pytest's
  `rootdir`-less import root for a test file (its default import mode puts
  it first on sys.path)."""
  directory = os.path.dirname(path)
  while os.path.isfile(os.path.join(directory, '__init__.py')):
    parent = os.path.dirname(directory)
    if parent == directory:
      break
    directory = parent
  return directory


def _package_inits(path: str) -> list:
  """The `__init__.py` files pytest imports before the test file `path`
  (its packages', outermost first)."""
  inits = []
  directory = os.path.dirname(path)
  while os.path.isfile(os.path.join(directory, '__init__.py')):
    inits.insert(0, os.path.join(directory, '__init__.py'))
    parent = os.path.dirname(directory)
    if parent == directory:
      break
    directory = parent
  return inits


def _module_files(dotted: str, directories) -> list:
  """The files `import dotted` executes when found in one of
  `directories`: each package's `__init__.py` on the way, then the module
  (empty if none of them has it)."""
  parts = dotted.split('.')
  for directory in directories:
    files = []
    current = directory
    for i, part in enumerate(parts):
      package = os.path.join(current, part)
      module = package + '.py'
      if os.path.isdir(package):
        init = os.path.join(package, '__init__.py')
        if os.path.isfile(init):
          files.append(init)
        current = package
      elif os.path.isfile(module) and i == len(parts) - 1:
        files.append(module)
      else:
        files = None
        break
    if files is not None and (files or os.path.isdir(current)):
      return files
  return []


def _names(listed: str) -> list:
  """'a.b as c, d' (or '(x,\n y as z)') -> ['a.b', 'd'] ('x', 'y')."""
  names = []
  for item in listed.strip().strip('()').replace('\\\n', ' ').split(','):
    words = item.split()
    if words and words[0] != '*' and re.match(r'^[\w.]+$', words[0]):
      names.append(words[0])
  return names


def _imported_names(source: bytes, path: str):
  """(dotted names the file imports absolutely, (directory, dotted name)
  of its relative imports), from its import statements that start a line
  (regular expressions: a tenth of what parsing the file costs; a line in
  a string that reads as an import only makes a file of the program's
  read too)."""
  text = source.decode('utf-8', 'replace')
  absolute, relative = [], []
  for match in _IMPORT.finditer(text):
    dots, module, listed, plain = match.groups()
    if plain is not None:
      absolute.extend(_names(plain))
      continue
    names = _names(listed)
    if dots:
      base = os.path.dirname(path)
      for _ in range(len(dots) - 1):
        base = os.path.dirname(base)
      if module:
        relative.append((base, module))
      relative.extend((base, f'{module}.{n}' if module else n) for n in names)
    elif module:
      absolute.append(module)
      # `from package import module` imports the module too.
      absolute.extend(f'{module}.{n}' for n in names)
  return absolute, relative


def _read(path: str):
  try:
    with open(path, 'rb') as f:
      return f.read()
  except OSError:
    return None


def collect(start_files, directories, *, description: str) -> Program:
  """The files of a program that starts with `start_files` and imports its
  own modules from `directories` (see the module docstring)."""
  directories = list(directories)
  excluded = _not_the_programs()
  queue = [_real(f) for f in start_files]
  seen, files, candidates = set(), [], []
  while queue and len(files) < MAX_FILES:
    path = queue.pop(0)
    if path in seen or any(_is_under(path, e) for e in excluded):
      continue
    seen.add(path)
    source = _read(path)
    if source is None:
      continue
    files.append(path)
    if _MAY_USE_TF_ESTIMATOR.search(source):
      candidates.append(path)
    absolute, relative = _imported_names(source, path)
    for dotted in absolute:
      queue.extend(_module_files(dotted, directories))
    for base, dotted in relative:
      queue.extend(_module_files(dotted, [base]))
  return Program(description=description, files=files,
                 candidates=candidates, complete=not queue)


def of_main_file(main_file: str, path_entries=None) -> Program:
  """The program whose main file is `main_file`, its own modules found in
  the main file's directory and in `path_entries` (default: this process's
  sys.path)."""
  entries = [os.path.dirname(_real(main_file))] + list(
      sys.path if path_entries is None else path_entries)
  return collect([main_file], own_directories(entries),
                 description=os.path.basename(main_file))


def _testpaths(directory: str) -> list:
  """pytest's `testpaths` from the configuration file in `directory`, if
  one of them sets it."""
  for name, section in _PYTEST_CONFIGS:
    text = _read(os.path.join(directory, name))
    if text is None:
      continue
    text = text.decode('utf-8', 'replace')
    if section is None:
      section = 'tool.pytest.ini_options'
      match = re.search(r'(?ms)^\[tool\.pytest\.ini_options\](.*?)(^\[|\Z)',
                        text)
      if not match:
        continue
      found = re.search(r'(?m)^testpaths\s*=\s*(\[.*?\]|"[^"]*"|\'[^\']*\')',
                        match.group(1), re.S)
      return re.findall(r'["\']([^"\']+)["\']', found.group(1)) if found else []
    match = re.search(r'(?ms)^\[' + re.escape(section) + r'\](.*?)(^\[|\Z)',
                      text)
    if not match:
      continue  # pytest reads the next file only if this one has no section.
    found = re.search(r'(?m)^testpaths\s*=\s*(.*(\n[ \t]+.+)*)', match.group(1))
    return found.group(1).split() if found else []
  return []


def _test_files(path: str) -> list:
  """The files pytest collects under `path` (a file is itself), with the
  conftest.py files of their directories."""
  if os.path.isfile(path):
    return [path] if path.endswith('.py') else []
  found = []
  for root, directories, names in os.walk(path):
    directories[:] = sorted(
        d for d in directories
        if not d.startswith('.') and d not in _SKIPPED_DIRECTORIES and
        not d.endswith('.egg') and
        not os.path.isfile(os.path.join(root, d, 'pyvenv.cfg')))
    found.extend(os.path.join(root, n) for n in sorted(names)
                 if n == 'conftest.py' or _TEST_FILE.match(n))
    if len(found) >= MAX_FILES:
      break
  return found


def of_pytest_run(arguments, *, cwd=None, path_entries=None) -> Program:
  """The test run of `pytest ARGUMENTS` started in `cwd` (see the module
  docstring). Arguments that are not existing paths (options, their values,
  `-k` expressions) are passed over; a node id counts as its file."""
  cwd = cwd or os.getcwd()
  paths = []
  for argument in arguments:
    if argument.startswith('-'):
      continue
    path = os.path.join(cwd, argument.split('::')[0])
    if os.path.exists(path):
      paths.append(path)
  described = ' '.join(os.path.relpath(p, cwd) for p in paths)
  if not paths:
    paths = [os.path.join(cwd, p) for p in _testpaths(cwd)] or [cwd]
    paths = [p for p in paths if os.path.exists(p)]
  checkout = _estimator_rt_checkout()
  if checkout:
    paths = [p for p in paths if not _is_under(_real(p), checkout)]
  start = []
  for path in paths:
    # The conftest.py files of the directories above a path, up to `cwd`.
    directory = os.path.dirname(_real(path))
    while _is_under(directory, _real(cwd)):
      start.append(os.path.join(directory, 'conftest.py'))
      if directory == _real(cwd):
        break
      directory = os.path.dirname(directory)
    for test_file in _test_files(path):
      start.extend(_package_inits(test_file))
      start.append(test_file)
  entries = [cwd] + sorted({_package_root(_real(f)) for f in start}) + list(
      sys.path if path_entries is None else path_entries)
  return collect([f for f in start if os.path.isfile(f)],
                 own_directories(entries),
                 description=f'pytest {described}'.strip())


def _is_pytest(main_file) -> bool:
  if main_file is None:
    # pytest-xdist's workers run from `python -c`.
    return '_pytest' in sys.modules
  name = os.path.basename(main_file)
  if name in ('pytest', 'py.test', 'pytest.exe', 'py.test.exe'):
    return True
  return (name == '__main__.py' and
          os.path.basename(os.path.dirname(main_file)) == 'pytest')


def of_this_process():
  """The Program this process runs, or None when it cannot be known (an
  interactive session, `python -c`, a notebook kernel, estimator_rt's own
  binaries, a module run from an installed package)."""
  main_file = getattr(sys.modules.get('__main__'), '__file__', None)
  if _is_pytest(main_file):
    # xdist's workers do not have the run's arguments: its test paths.
    arguments = sys.argv[1:] if main_file is not None else []
    return of_pytest_run(arguments)
  if not main_file or not main_file.endswith('.py'):
    return None
  if not own_directories([os.path.dirname(main_file)]):
    return None  # Installed code, or estimator_rt's own binaries.
  return of_main_file(main_file)
