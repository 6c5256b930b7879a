"""The package's layout: imports go one way, functions stay small.

Read from the source with `ast` (nothing is imported, no TensorFlow): a
layout rule broken fails here, in a fraction of a second, naming the file,
the line and the rule.

The layers, from the top (estimator_rt/*/__init__.py say what each owns):

  entry points   estimator_rt (the public names), main, run_server,
                 compat, launch: may import anything.
  estimator      what a user constructs: Estimator, train_and_evaluate,
                 canned/, head/, keras/, tpu/.
  training       the outer loop and its policies, the two engines.
  cluster, inputs, export
                 where a run happens; its input; its SavedModels. They do
                 not import each other.
  core           errors, ModeKeys, EstimatorSpec, user functions,
                 checkpoints, summaries: imports nothing of estimator_rt.

A package imports only packages below it (its own modules too); nothing
below the entry points imports an entry point.
"""

import ast
import functools
import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent.parent / 'estimator_rt'

ENTRY_POINTS = ('estimator_rt', 'estimator_rt.main', 'estimator_rt.run_server',
                'estimator_rt.compat', 'estimator_rt.launch')
# Top to bottom; a tuple is one layer of peers that do not import each
# other.
LAYERS = (('estimator',), ('training',), ('cluster', 'inputs', 'export'),
          ('core',))
# What estimator/ holds that is built on its own top modules (Estimator,
# train_and_evaluate): those modules import none of these.
BUILT_ON_THE_ESTIMATOR = ('canned', 'head', 'keras', 'tpu')
# The two engines and the choice between them, in training/: the loop's own
# modules (controller, hooks, ...) import neither engine.
ENGINES = ('eager', 'graph', 'engine_choice')
# The bound ("A house a newcomer can find their way in").
MAX_FUNCTION_LINES = 80
MAX_TOP_LEVEL_ENTRIES = 12


def _module_name(path: pathlib.Path) -> str:
  parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix('').parts)
  if parts[-1] == '__init__':
    parts.pop()
  return '.'.join(parts)


@functools.lru_cache(maxsize=None)
def _sources():
  return tuple((path, ast.parse(path.read_text(), filename=str(path)))
               for path in sorted(PACKAGE_DIR.rglob('*.py')))


def _imported(tree: ast.AST, module: str, is_package: bool):
  """(line, dotted name) of every estimator_rt module or name `tree`
  imports: import statements anywhere (function-level ones too) and
  importlib.import_module('estimator_rt...') with a literal name."""
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield node.lineno, alias.name
    elif isinstance(node, ast.ImportFrom):
      if node.level:
        base = module.split('.')
        base = base[:len(base) - node.level + (1 if is_package else 0)]
        source = '.'.join(base + ([node.module] if node.module else []))
      else:
        source = node.module or ''
      for alias in node.names:
        yield node.lineno, f'{source}.{alias.name}'
    elif (isinstance(node, ast.Call) and
          getattr(node.func, 'attr', getattr(node.func, 'id', None)) ==
          'import_module' and node.args and
          isinstance(node.args[0], ast.Constant) and
          isinstance(node.args[0].value, str)):
      yield node.lineno, node.args[0].value


def _package_of(name: str):
  """The entry point or the top-level package `name` belongs to, else None
  (not estimator_rt's)."""
  parts = name.split('.')
  if parts[0] != 'estimator_rt':
    return None
  if len(parts) == 1 or parts[1] in ('main', 'run_server', 'compat',
                                     'launch'):
    return 'entry'
  # `from estimator_rt import X` names a module or one of the lazy names.
  return parts[1] if (PACKAGE_DIR / parts[1]).is_dir() else 'entry'


def _layer(package: str) -> int:
  return next(i for i, layer in enumerate(LAYERS) if package in layer)


def _violations():
  for path, tree in _sources():
    module = _module_name(path)
    if module.startswith(ENTRY_POINTS[1:]) or module == 'estimator_rt':
      continue
    own = _package_of(module)
    rel = path.relative_to(PACKAGE_DIR.parent)
    for line, name in _imported(tree, module, path.name == '__init__.py'):
      target = _package_of(name)
      if target is None:
        continue
      where = f'{rel}:{line} imports {name}'
      if target == 'entry':
        yield f'{where}: an entry point, from {own}/'
      elif target != own:
        if _layer(target) < _layer(own):
          yield f'{where}: {target}/ is above {own}/'
        elif _layer(target) == _layer(own):
          yield f'{where}: {target}/ and {own}/ are peers'
      elif path.name != '__init__.py':
        yield from _within(module, name, where)


def _within(module: str, name: str, where: str):
  """The one-way rules inside `estimator` and `training`, for the modules
  directly in them."""
  parts, target = module.split('.'), name.split('.')
  if len(parts) == 3 and len(target) > 2 and parts[1] == target[1]:
    if parts[1] == 'estimator' and target[2] in BUILT_ON_THE_ESTIMATOR:
      yield (f'{where}: estimator/{parts[2]}.py is what '
             f'{target[2]}/ is built on')
    if (parts[1] == 'training' and target[2] in ENGINES and
        parts[2] not in ENGINES):
      yield f'{where}: the loop ({parts[2]}.py) does not import an engine'


def test_imports_go_one_way():
  violations = list(_violations())
  assert not violations, '\n'.join(violations)


def test_the_layers_name_every_package():
  packages = {p.name for p in PACKAGE_DIR.iterdir()
              if (p / '__init__.py').is_file()}
  layered = {name for layer in LAYERS for name in layer}
  assert packages - layered == {'compat', 'launch'}
  assert layered <= packages


def test_each_package_says_what_it_owns_and_may_import():
  for init in PACKAGE_DIR.glob('*/__init__.py'):
    doc = ast.get_docstring(ast.parse(init.read_text())) or ''
    if init.parent.name in ('compat', 'launch'):
      assert doc, init
    else:
      assert 'May import' in doc, f'{init}: no "May import" in its docstring'


def test_the_top_level_is_a_short_list():
  entries = sorted(p.name for p in PACKAGE_DIR.iterdir()
                   if not p.name.startswith(('.', '__pycache__')) and
                   not p.name.endswith(('.so', '.pyc')))
  assert len(entries) <= MAX_TOP_LEVEL_ENTRIES, entries


def test_no_function_is_longer_than_80_lines():
  long = []
  for path, tree in _sources():
    for node in ast.walk(tree):
      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        lines = node.end_lineno - first + 1
        if lines > MAX_FUNCTION_LINES:
          long.append(f'{path.relative_to(PACKAGE_DIR.parent)}:{node.lineno}'
                      f' {node.name}: {lines} lines')
  assert not long, '\n'.join(long)


def test_no_two_modules_import_each_other():
  imports = {}
  modules = {_module_name(path) for path, _ in _sources()}
  for path, tree in _sources():
    module = _module_name(path)
    found = set()
    for _, name in _imported(tree, module, path.name == '__init__.py'):
      while name and name not in modules:
        name = name.rpartition('.')[0]
      if name and name != module:
        found.add(name)
    imports[module] = found
  # A package and its own module may (importing the module runs the
  # package's __init__ first anyway).
  cycles = sorted(f'{a} <-> {b}' for a, found in imports.items()
                  for b in found if a < b and a in imports.get(b, ()) and
                  not b.startswith(a + '.'))
  assert not cycles, '\n'.join(cycles)
