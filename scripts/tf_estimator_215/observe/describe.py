"""A value as a program sees it, as JSON that compares across TF versions.

`describe(value)` gives a dict: `type` (the public name a program would
spell, e.g. `tf.estimator.DNNClassifier`, `numpy.float32`, `float`), and
as fits the value `dtype`, `shape`, `value`, `items` (containers) or
`fields` (namedtuples and spec-like objects). What varies from run to run
is masked (`mask`): the scenario's temporary directory becomes `<TMP>`,
export timestamps `<TS>`, host names and PIDs in event file names `<HOST>`.
Values a scenario marks `exact=False` (times, random draws) keep their type
and shape only.

Graph tensors are `Tensor` on both sides (TF 2.16 renamed their class
`SymbolicTensor`, which is TensorFlow's change, not tf.estimator's), and
variables `Variable`, for the same reason.
"""

import collections
import json
import os
import re
import types

import numpy as np
import tensorflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
API_JSON = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    _HERE))), 'tests', 'data', 'tf_estimator_215', 'api.json')
# Preferred spelling when one object has several public names.
ROOTS = ('tf.estimator.', 'tf.compat.v1.estimator.', 'tf.keras.estimator.',
         'tf.compat.v2.estimator.')
# Arrays longer than this are described by their shape and a few figures.
MAX_LISTED = 24
_TS = re.compile(r'(?<![\w.])1\d{9}(?!\d)')
_EVENTS = re.compile(r'(events\.out\.tfevents\.)\d+(?:\.\d+)?\.[^/\'"\s]+')
_TEMP_ROOTS = []


def set_temp_root(path: str) -> None:
  """Masks `path` (and its real path) as `<TMP>` from now on."""
  _TEMP_ROOTS[:] = sorted({path, os.path.realpath(path)}, key=len,
                          reverse=True)


def mask(text: str) -> str:
  """`text` with the scenario's temporary dir, timestamps and event file
  hosts masked."""
  for root in _TEMP_ROOTS:
    text = text.replace(root, '<TMP>')
  text = _EVENTS.sub(r'\1<TS>.<HOST>', text)
  return _TS.sub('<TS>', text)


def mask_message(text: str, length: int = 160) -> str:
  """The start of an exception message, its numbers masked (`#`): messages
  are compared by their words."""
  # Addresses first: masked digit by digit they would keep their letters,
  # which differ from run to run (`#x#fc#dd#e#`).
  text = re.sub(r'0x[0-9a-f]+', '0x#', mask(str(text)))
  text = re.sub(r'\d+', '#', text)
  # A pandas Index of strings in a message (pandas_input_fn's) is repr'd
  # with dtype='str' by pandas 3, the pandas of the interpreter the pandas
  # scenario runs in here, and dtype='object' by pandas 2, 2.15's: the
  # library's repr, not tf.estimator's words.
  text = text.replace("dtype='str')", "dtype='object')")
  return ' '.join(text.split())[:length]


def _walk_api():
  with open(API_JSON) as f:
    names = json.load(f)['names']
  for name in sorted(names, key=lambda n: (
      [n.startswith(r) for r in ROOTS].index(True)
      if any(n.startswith(r) for r in ROOTS) else 9, n)):
    yield name


_PUBLIC = {}


def public_names() -> dict:
  """id(object) -> its preferred public name, for every name of api.json
  that resolves here (resolved once per process)."""
  if not _PUBLIC:
    _PUBLIC[None] = None
    for name in _walk_api():
      obj = resolve(name)
      if obj is not None and not isinstance(obj, types.ModuleType):
        _PUBLIC.setdefault(id(obj), (name, obj))
  return _PUBLIC


def resolve(name: str):
  """The object `name` (`tf.x.y`) names here, or None."""
  obj = tf
  try:
    for part in name.split('.')[1:]:
      obj = getattr(obj, part)
  except Exception:  # pylint: disable=broad-except
    return None
  return obj


def type_name(t: type) -> str:
  """The name a program would spell for type `t`."""
  entry = public_names().get(id(t))
  if entry is not None:
    return entry[0]
  module = (t.__module__ or '').split('.')[0]
  if module == 'builtins':
    return t.__name__
  if module == 'numpy':
    return 'numpy.' + t.__name__
  if module in ('tensorflow', 'keras', 'tf_keras'):
    return 'tf:' + t.__name__
  # A class of the implementation a program cannot name.
  return '~' + t.__name__


def _tensor(value) -> dict:
  kind = ('EagerTensor' if hasattr(value, 'numpy') and
          tf.executing_eagerly() and not _is_graph_tensor(value) else 'Tensor')
  out = {'type': kind, 'dtype': value.dtype.name,
         'shape': _shape(value.shape)}
  if kind == 'Tensor':
    out['name'] = getattr(value, 'name', None)
  else:
    out['value'] = _array(value.numpy())['value']
  return out


def _is_graph_tensor(value) -> bool:
  try:
    value.op  # pylint: disable=pointless-statement
    return not tf.executing_eagerly() or hasattr(value, 'graph') and (
        value.graph is not None)
  except AttributeError:
    return False


def _shape(shape):
  shape = tf.TensorShape(shape)
  return None if shape.rank is None else shape.as_list()


def _array(value: np.ndarray, exact: bool = True) -> dict:
  out = {'type': 'numpy.ndarray', 'dtype': str(value.dtype),
         'shape': list(value.shape)}
  if not exact:
    return out
  if value.size <= MAX_LISTED:
    out['value'] = _plain(value.tolist())
  elif value.dtype.kind in 'fiub':
    out['summary'] = {'mean': float(np.mean(value)),
                      'min': float(np.min(value)),
                      'max': float(np.max(value))}
  return out


def _plain(value):
  if isinstance(value, bytes):
    return mask(value.decode('utf-8', 'replace'))
  if isinstance(value, str):
    return mask(value)
  if isinstance(value, list):
    return [_plain(v) for v in value]
  if isinstance(value, float) and value != value:  # NaN
    return 'nan'
  if isinstance(value, float) and value in (float('inf'), -float('inf')):
    return str(value)
  return value


def describe(value, exact: bool = True) -> dict:
  """`value` as JSON: its public type and what a program reads from it."""
  t = type(value)
  if value is None or isinstance(value, (bool, int, float, str, bytes)):
    out = {'type': type_name(t)}
    if exact:
      out['value'] = _plain(value)
    return out
  if isinstance(value, (np.generic,)):
    out = {'type': 'numpy.' + t.__name__, 'dtype': str(value.dtype)}
    if exact:
      out['value'] = _plain(value.item())
    return out
  if isinstance(value, np.ndarray):
    return _array(value, exact)
  if isinstance(value, tf.dtypes.DType):
    return {'type': 'tf.DType', 'value': value.name}
  if isinstance(value, tf.TensorShape):
    return {'type': 'tf.TensorShape', 'value': _shape(value)}
  if isinstance(value, tf.Variable):
    return {'type': 'Variable', 'dtype': value.dtype.base_dtype.name,
            'shape': _shape(value.shape),
            'name': getattr(value, 'name', None)}
  if tf.is_tensor(value) and hasattr(value, 'dtype') and hasattr(
      value, 'shape'):
    if isinstance(value, tf.SparseTensor):
      return {'type': 'SparseTensor', 'dtype': value.dtype.name}
    return _tensor(value)
  return _container(value, exact)


def _container(value, exact: bool) -> dict:
  t = type(value)
  out = {'type': type_name(t)}
  if isinstance(value, BaseException):
    out['message'] = mask_message(value)
  elif isinstance(value, tuple) and hasattr(value, '_fields'):
    out['fields'] = {f: describe(getattr(value, f), exact)
                     for f in value._fields}
  elif isinstance(value, (dict, collections.abc.Mapping)):
    out['items'] = {mask(str(k)): describe(v, exact)
                    for k, v in sorted(value.items(), key=lambda kv: str(
                        kv[0]))}
  elif isinstance(value, (list, tuple, set, frozenset)):
    items = list(value)
    if isinstance(value, (set, frozenset)):
      items = sorted(items, key=str)
    out['items'] = [describe(v, exact) for v in items]
  elif isinstance(value, types.GeneratorType):
    out['type'] = 'generator'
  elif isinstance(value, type):
    out = {'type': 'type', 'value': type_name(value)}
  elif callable(value) and isinstance(value, (types.FunctionType,
                                              types.MethodType,
                                              types.BuiltinFunctionType)):
    out = {'type': 'function'}
  return out
