"""Finds, statically, where a Python file uses tf.estimator.

`scan_source` parses a file with `ast` (the scanned code is never imported
or run) and returns every use of a tf.estimator name or module path, each as
the fully qualified name the code reaches (`tensorflow.estimator.Estimator`,
`tensorflow.compat.v1.estimator.inputs.numpy_input_fn`,
`tensorflow_estimator.python.estimator.canned.head._regression_head`,
`tensorflow.python.estimator.estimator`), with its line. Aliases are
resolved per file, in source order: `import tensorflow.compat.v1 as tf`
makes `tf.estimator` the v1 namespace, `from tensorflow import estimator as
tfe` makes `tfe.X` `tensorflow.estimator.X`, `tfe = tf.estimator` and `tf =
tf.compat.v1` rebind. A name a function binds (a parameter, an assignment)
shadows the module's within that function, so `def f(estimator):
estimator.train()` is not a use.

Which qualified names count is `kind_of`'s business: tf.estimator's
namespaces and module paths (`ESTIMATOR`), and a few uses known to fail on
TensorFlow 2.16+ whatever provides tf.estimator (`TF_BREAK`, see
tf_breaks.py). What this cannot see: names reached dynamically
(`getattr(tf, 'estimator')`, `importlib.import_module(...)`), relative
imports, the names a star-import binds (the import itself is reported), and
names in strings.
"""

import ast
import dataclasses
import re
from typing import Dict, Iterable, List, Optional, Sequence

from estimator_rt.compat import tf_breaks

ESTIMATOR = 'estimator'
TF_BREAK = 'tf_break'

# tf.compat.v1, tf.compat.v2 and their nestings (tf.compat.v2.compat.v1):
# all of them were namespaces holding `estimator` in TensorFlow 2.15.
_COMPAT = re.compile(r'^(\.compat\.v[12])*')


@dataclasses.dataclass(frozen=True)
class Use:
  """One use of a qualified name at `line` (1-based) of a file.

  `qualified` is the dotted name as the program reaches it, from its root
  module ('tensorflow.estimator.Estimator.train' when the code says
  `tf.estimator.Estimator.train`); `kind` is ESTIMATOR or TF_BREAK.
  """
  line: int
  column: int
  qualified: str
  kind: str


def kind_of(qualified: str) -> Optional[str]:
  """ESTIMATOR, TF_BREAK or None for a fully qualified dotted name."""
  if qualified == 'tensorflow_estimator' or qualified.startswith(
      'tensorflow_estimator.'):
    return ESTIMATOR
  if qualified.startswith('tf_keras.estimator'):
    return ESTIMATOR if _is_segment(qualified, 'tf_keras.estimator') else None
  if tf_breaks.reason(qualified) is not None:
    return TF_BREAK
  if not qualified.startswith('tensorflow.'):
    return None
  rest = qualified[len('tensorflow'):]
  if _is_segment(rest, '.python.estimator'):
    return ESTIMATOR
  rest = rest[_COMPAT.match(rest).end():]
  for namespace in ('.estimator', '.keras.estimator'):
    if _is_segment(rest, namespace):
      return ESTIMATOR
  return None


def _is_segment(dotted: str, prefix: str) -> bool:
  """Whether `dotted` is `prefix` or starts with `prefix.`."""
  return dotted == prefix or dotted.startswith(prefix + '.')


def _chain(node: ast.expr) -> Optional[List[str]]:
  """['a', 'b', 'c'] for the expression `a.b.c`; None if it is not a
  plain chain of attributes on a name."""
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  if not isinstance(node, ast.Name):
    return None
  parts.append(node.id)
  return parts[::-1]


def _stored_names(target: ast.expr) -> Iterable[str]:
  for node in ast.walk(target):
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
      yield node.id
    elif isinstance(node, ast.Starred) and isinstance(node.value, ast.Name):
      yield node.value.id


# `match` statements' nodes (Python 3.10+; the project supports 3.9).
_MATCH_CASE = getattr(ast, 'match_case', ())
_PATTERN = getattr(ast, 'pattern', ())


def _local_names(function: ast.AST) -> set:
  """The names a function binds (Python makes them local to the whole
  body), less those it declares global or nonlocal."""
  args = function.args
  names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
  names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
  declared = set()
  stack = list(function.body) if isinstance(function.body, list) else []
  while stack:
    node = stack.pop()
    if isinstance(node, (ast.Global, ast.Nonlocal)):
      declared.update(node.names)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                           ast.ClassDef)):
      names.add(node.name)  # Its body is its own scope: not walked.
      continue
    elif isinstance(node, ast.Lambda):
      continue
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
      names.update((a.asname or a.name).split('.')[0] for a in node.names
                   if a.name != '*')
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
      names.add(node.id)
    elif isinstance(node, ast.ExceptHandler) and node.name:
      names.add(node.name)
    stack.extend(ast.iter_child_nodes(node))
  return names - declared


class _Scanner:
  """Walks one module in source order, with a table of local name ->
  qualified name per scope."""

  def __init__(self):
    self.uses: List[Use] = []

  # Recording.

  def _record(self, node: ast.AST, qualified: str) -> None:
    kind = kind_of(qualified)
    if kind is not None:
      self.uses.append(Use(node.lineno, node.col_offset, qualified, kind))

  def _qualify(self, parts: Sequence[str], table: Dict[str, str]):
    root = table.get(parts[0])
    if root is None:
      return None
    return '.'.join([root] + list(parts[1:]))

  # Expressions.

  def expression(self, node: Optional[ast.AST], table: Dict[str, str]):
    """Records the uses in expression `node`: each maximal `a.b.c` chain
    whose root name the table knows."""
    if node is None:
      return
    if isinstance(node, (ast.Attribute, ast.Name)):
      parts = _chain(node)
      if parts is not None:
        if isinstance(node.ctx, ast.Load):
          qualified = self._qualify(parts, table)
          if qualified is not None:
            self._record(node, qualified)
        elif isinstance(node, ast.Attribute):
          # `tf.estimator.X = ...` assigns; what it reads is the object.
          self.expression(node.value, table)
        return
    if isinstance(node, ast.Lambda):
      self._arguments(node.args, table)
      inner = {k: v for k, v in table.items()
               if k not in _local_names(node)}
      self.expression(node.body, inner)
      return
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp,
                         ast.DictComp)):
      inner = dict(table)
      for generator in node.generators:
        self.expression(generator.iter, inner)
        for name in _stored_names(generator.target):
          inner.pop(name, None)
        for condition in generator.ifs:
          self.expression(condition, inner)
      for field in ('elt', 'key', 'value'):
        self.expression(getattr(node, field, None), inner)
      return
    if isinstance(node, ast.NamedExpr):
      self.expression(node.value, table)
      self._bind_or_forget([node.target], node.value, table)
      return
    for child in ast.iter_child_nodes(node):
      if isinstance(child, (ast.expr, ast.keyword, ast.arg) + (
          (_PATTERN,) if _PATTERN else ())):
        self.expression(child, table)

  def _arguments(self, args: ast.arguments, table: Dict[str, str]) -> None:
    """Defaults and annotations run in the enclosing scope."""
    for default in args.defaults + [d for d in args.kw_defaults if d]:
      self.expression(default, table)
    for arg in args.posonlyargs + args.args + args.kwonlyargs + [
        a for a in (args.vararg, args.kwarg) if a is not None]:
      self.expression(arg.annotation, table)

  # Bindings.

  def _bind_or_forget(self, targets, value, table: Dict[str, str]) -> None:
    """`name = tf.estimator` binds `name` to what the value names; any other
    assignment makes the name stop meaning what it meant."""
    parts = _chain(value) if value is not None else None
    qualified = self._qualify(parts, table) if parts else None
    for target in targets:
      if isinstance(target, ast.Name) and qualified is not None:
        table[target.id] = qualified
      else:
        for name in _stored_names(target):
          table.pop(name, None)

  def _import(self, node: ast.Import, table: Dict[str, str]) -> None:
    for alias in node.names:
      self._record(node, alias.name)
      if alias.asname:
        table[alias.asname] = alias.name
      else:
        root = alias.name.split('.')[0]
        table[root] = root

  def _import_from(self, node: ast.ImportFrom, table: Dict[str, str]):
    if node.level or not node.module:
      # Relative: the package is the scanned code's own.
      for alias in node.names:
        table.pop(alias.asname or alias.name, None)
      return
    for alias in node.names:
      if alias.name == '*':
        self._record(node, node.module)
        continue
      qualified = f'{node.module}.{alias.name}'
      self._record(node, qualified)
      table[alias.asname or alias.name] = qualified

  # Statements.

  def block(self, statements: Sequence[ast.stmt], table: Dict[str, str],
            outer: Dict[str, str]) -> None:
    """Scans `statements` in order; `outer` is the table a function
    defined here starts from (the enclosing function's or the module's,
    never a class body's)."""
    for statement in statements:
      self.statement(statement, table, outer)

  def _function(self, node, table: Dict[str, str],
                outer: Dict[str, str]) -> None:
    """Decorators, defaults and annotations run where the definition is
    (`table`); the body sees `outer` less the names it binds itself."""
    for decorator in node.decorator_list:
      self.expression(decorator, table)
    self._arguments(node.args, table)
    self.expression(node.returns, table)
    local = _local_names(node)
    inner = {k: v for k, v in outer.items() if k not in local}
    self.block(node.body, inner, inner)

  def statement(self, node: ast.stmt, table: Dict[str, str],
                outer: Dict[str, str]) -> None:
    if isinstance(node, ast.Import):
      self._import(node, table)
    elif isinstance(node, ast.ImportFrom):
      self._import_from(node, table)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      # The body sees the names as they are when the definition runs (a
      # simplification: it runs later, when they may have changed).
      self._function(node, table, outer)
      table.pop(node.name, None)
    elif isinstance(node, ast.ClassDef):
      for expression in node.decorator_list + node.bases + [
          k.value for k in node.keywords]:
        self.expression(expression, table)
      self.block(node.body, dict(table), outer)
      table.pop(node.name, None)
    elif isinstance(node, ast.Assign):
      self.expression(node.value, table)
      for target in node.targets:
        self.expression(target, table)
      self._bind_or_forget(node.targets, node.value, table)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
      self.expression(node.value, table)
      self.expression(node.target, table)
      self.expression(getattr(node, 'annotation', None), table)
      value = node.value if isinstance(node, ast.AnnAssign) else None
      self._bind_or_forget([node.target], value, table)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
      self.expression(node.iter, table)
      self._bind_or_forget([node.target], None, table)
      self.block(node.body, table, outer)
      self.block(node.orelse, table, outer)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
      for item in node.items:
        self.expression(item.context_expr, table)
        if item.optional_vars is not None:
          self._bind_or_forget([item.optional_vars], None, table)
      self.block(node.body, table, outer)
    elif isinstance(node, ast.Delete):
      for target in node.targets:
        if isinstance(target, ast.Name):
          table.pop(target.id, None)
        else:  # `del tf.estimator.X` or `del d[k]`: reads what it deletes in.
          self.expression(getattr(target, 'value', None), table)
    else:
      self._compound(node, table, outer)

  def _compound(self, node: ast.stmt, table: Dict[str, str],
                outer: Dict[str, str]) -> None:
    """Any other statement: its expressions, then its blocks in order
    (if/else, try/except/finally, while, match)."""
    for _, value in ast.iter_fields(node):
      values = value if isinstance(value, list) else [value]
      for item in values:
        if isinstance(item, ast.stmt):
          self.statement(item, table, outer)
        elif isinstance(item, ast.ExceptHandler):
          self.expression(item.type, table)
          if item.name:
            table.pop(item.name, None)
          self.block(item.body, table, outer)
        elif _MATCH_CASE and isinstance(item, _MATCH_CASE):
          self.expression(item.pattern, table)
          self.expression(item.guard, table)
          self.block(item.body, table, outer)
        elif isinstance(item, ast.AST):
          self.expression(item, table)


def scan_source(source, filename: str = '<source>') -> List[Use]:
  """The uses in Python source `source` (str or bytes), in line order.

  Raises:
    SyntaxError: the source does not parse (ValueError for null bytes on
      Python < 3.12).
  """
  tree = ast.parse(source, filename=filename)
  scanner = _Scanner()
  table: Dict[str, str] = {}
  scanner.block(tree.body, table, table)
  return sorted(scanner.uses, key=lambda u: (u.line, u.column))
