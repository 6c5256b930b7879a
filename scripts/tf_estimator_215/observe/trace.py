"""Which public names a scenario calls: a trace of the implementation's code.

Run with tf.estimator 2.15 (`record.py`), a `Tracer` (`sys.setprofile`)
notes every function of the implementation (files under `tensorflow_
estimator`, and the TensorFlow and Keras files some public names were
defined in) that runs, and which of them a scenario called itself: the
nearest caller that is not a decorator's wrapper (TensorFlow's
`deprecation`, `tf_decorator`, `dispatch` modules) is a scenario's code
(a scenario's function, model_fn, input_fn, hook, ...).

`covered(tracer)` maps that to api.json's names:

- a function is covered when the scenario called it;
- a class when the scenario called a method of an instance of that very
  class (its constructor included: `tf.estimator.Estimator(...)` runs the
  TF1 class's `__init__` for the TF2 class, which covers the TF2 class
  only), or subclassed it (a hook, an exporter, a head), or, for a class
  with no code of its own (`ModeKeys`, an exception class), when the
  scenario's source spells it;
- a module when a name in it is covered;
- a class's method or property (`methods`) when its code ran in the
  scenario for an instance of that class (`self`), whoever called it:
  tf.estimator itself calls a hook's `begin` or a head's
  `create_estimator_spec`, on objects the scenario made.

Names that are one object (`tf.compat.v2.estimator.X` is
`tf.estimator.X`; most hooks are the same in `tf.compat.v1.estimator`) are
covered together; `scenarios/api_surface.py` records which names are one
object, so that a difference there is a difference the comparison shows.
"""

import inspect
import json
import os
import sys
import threading
import types

_SCENARIOS = 'scripts.tf_estimator_215.observe.scenarios'
from scripts.tf_estimator_215.observe import describe as describe_lib

_WRAPPERS = tuple(os.sep + os.path.join('tensorflow', 'python', 'util', m)
                  for m in ('deprecation.py', 'tf_decorator.py',
                            'dispatch.py', 'traceback_utils.py',
                            'decorator_utils.py'))
SCENARIO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'scenarios')
# The recorder calls what a scenario hands it (`rec.call(label, fn, ...)`):
# a call made through it is the scenario's.
_TRANSPARENT = _WRAPPERS + (os.sep + os.path.join('observe', 'recorder.py'),)


class Tracer:
  """The implementation's functions that ran (`ran`) and those a
  scenario called (`direct`), each as (code, the class of its `self` or
  its `cls`, None for a function)."""

  def __init__(self, marker: str = os.sep + 'tensorflow_estimator' + os.sep):
    self.marker = marker
    # tf.estimator 2.15 served some names from TensorFlow's own modules
    # (the hooks, SessionRunArgs, VocabInfo, the export outputs) and Keras'
    # (model_to_estimator's wrapper): their files are traced too.
    self.files = _api_files()
    self.ran, self.direct = set(), set()

  def _profile(self, frame, event, _):
    if event != 'call':
      return
    code = frame.f_code
    # '<string>': the code TensorFlow's deprecation of a namedtuple class
    # (SessionRunValues) generates for its `__new__`.
    if (self.marker not in code.co_filename and
        code.co_filename not in self.files and
        code.co_filename != '<string>'):
      return
    called = (code, _self_type(frame))
    self.ran.add(called)
    caller = frame.f_back
    while caller is not None and caller.f_code.co_filename.endswith(
        _TRANSPARENT):
      caller = caller.f_back
    if caller is not None and caller.f_code.co_filename.startswith(
        SCENARIO_DIR):
      self.direct.add(called)

  def start(self):
    self.ran, self.direct = set(), set()
    threading.setprofile(self._profile)
    sys.setprofile(self._profile)

  def stop(self):
    sys.setprofile(None)
    threading.setprofile(None)


def _api_files() -> set:
  """The source files of api.json's functions and classes' methods."""
  with open(describe_lib.API_JSON) as f:
    names = json.load(f)['names']
  files = set()
  for name in names:
    obj = describe_lib.resolve(name)
    members = vars(obj).values() if isinstance(obj, type) else [obj]
    for member in members:
      code = _code(member)
      if code is not None:
        files.add(code.co_filename)
  return files


def _self_type(frame):
  """The class a method ran for (its `self`'s, or its `cls`), else None."""
  code = frame.f_code
  if not code.co_argcount or code.co_varnames[0] not in ('self', 'cls'):
    return None
  first = frame.f_locals.get(code.co_varnames[0])
  return first if isinstance(first, type) else type(first)


def _code(obj):
  """The code object of a function, method, property getter or static
  method, behind its decorators."""
  if isinstance(obj, (staticmethod, classmethod)):
    obj = obj.__func__
  if isinstance(obj, property):
    obj = obj.fget
  try:
    obj = inspect.unwrap(obj)
  except ValueError:
    pass
  return getattr(obj, '__code__', None)


def _called_on(cls: type, direct: set) -> bool:
  """A scenario called a method (its constructor included) of an instance
  of `cls` itself, or of a scenario's subclass of it."""
  own = _own_codes(cls)
  return any(t is cls or (t is None and c in own) or (
      isinstance(t, type) and issubclass(t, cls) and (
          t.__module__ or '').startswith(_SCENARIOS)) for c, t in direct)


def _own_codes(cls: type) -> set:
  return {c for c in (_code(v) for v in vars(cls).values()) if c}


def _subclassed(cls: type) -> bool:
  """A scenario defined a subclass of `cls`."""
  todo = list(type.__subclasses__(cls))
  while todo:
    sub = todo.pop()
    if (sub.__module__ or '').startswith(_SCENARIOS):
      return True
    todo += type.__subclasses__(sub)
  return False


def covered(tracer: Tracer, source: str) -> dict:
  """{'names': covered api.json names, 'methods': covered `Class.method`s}
  (see the module doc); `source`: the scenario's source text."""
  with open(describe_lib.API_JSON) as f:
    api = json.load(f)['names']
  names, methods = set(), set()
  for name, entry in api.items():
    obj = describe_lib.resolve(name)
    if obj is None or isinstance(obj, types.ModuleType):
      continue
    if isinstance(obj, type):
      if (_called_on(obj, tracer.direct) or _subclassed(obj) or
          (not _own_codes(obj) and _spelled(name, source))):
        names.add(name)
      for member in list(entry.get('methods', {})) + entry.get(
          'properties', []):
        code = _code(inspect.getattr_static(obj, member, None))
        if any(c is code and (t is None or issubclass(t, obj))
               for c, t in tracer.ran):
          methods.add(f'{name}.{member}')
    elif (_code(obj), None) in tracer.direct:
      names.add(name)
  for name, entry in api.items():
    if entry['kind'] == 'module' and any(
        n.startswith(name + '.') for n in names):
      names.add(name)
  return {'names': sorted(names), 'methods': sorted(methods)}


def _spelled(name: str, source: str) -> bool:
  """`source` spells the name's last two parts (`estimator.ModeKeys`)."""
  return '.'.join(name.split('.')[-2:]) in source
