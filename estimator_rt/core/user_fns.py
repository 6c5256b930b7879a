"""Calling the user's `model_fn` and `input_fn` with the arguments they declare.

Both functions may declare only some of their optional arguments, as with
tf.estimator: `model_fn(features, labels, mode, params, config)` with
`labels`, `mode`, `params` and `config` optional, and `input_fn(params,
input_context)` with both optional. This module finds out which ones they
take and loads functions named as `module:attr` on the command line.
"""

import importlib
import importlib.util
import inspect
import os
import sys
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from estimator_rt.core import tf_log
from estimator_rt.core.errors import GraphModelFnError
from estimator_rt.core.errors import InputFnError
from estimator_rt.core.errors import one_line
from estimator_rt.core.errors import raised_as
from estimator_rt.core.errors import shorten
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.errors import UserTypeError

_MODEL_FN_ARGS = ('features', 'labels', 'mode', 'params', 'config')
# Modules `load_callable` loads from a file path get this name prefix.
_FILE_MODULE_PREFIX = '_estimator_rt_user_'


# What TensorFlow's graph-only APIs say when called eagerly (all raise
# RuntimeError): "... should be a function when eager execution is
# enabled", "tf.metrics.accuracy is not supported when eager execution is
# enabled", "tf.placeholder() is not compatible with eager execution",
# "`make_initializable_iterator()` is not supported in eager mode", ...
_GRAPH_ONLY_MARKS = ('eager execution', 'eager mode')


def graph_only_reason(error: BaseException) -> Optional[str]:
  """The first line of TensorFlow's graph-only RuntimeError in `error`'s
  chain of causes, or None if there is none."""
  seen = set()
  while error is not None and id(error) not in seen:
    seen.add(id(error))
    if isinstance(error, RuntimeError) and any(
        mark in str(error) for mark in _GRAPH_ONLY_MARKS):
      return str(error).strip().splitlines()[0]
    error = error.__cause__ or error.__context__
  return None


def fn_name(fn: Callable) -> str:
  """How errors name a user function: as it is named on the command line,
  'module.path:qualname' (or 'path/to/file.py:qualname' for a function
  loaded from a file)."""
  qualname = getattr(fn, '__qualname__', None)
  if not isinstance(qualname, str):
    return shorten(fn)
  module_name = getattr(fn, '__module__', None)
  if not isinstance(module_name, str):
    return qualname
  module = sys.modules.get(module_name)
  path = getattr(module, '__file__', None)
  if module_name.startswith(_FILE_MODULE_PREFIX) and path:
    module_name = path
  return f'{module_name}:{qualname}'


def describe_exception(error: BaseException, *, limit: int = 300) -> str:
  """'TypeName: message' on one line, the message cut to `limit` chars
  (`errors.one_line`: a TensorFlow error's reason without its graph
  traceback)."""
  message = one_line(error, limit=limit)
  kind = type(error).__name__
  return kind if message == kind else f'{kind}: {message}'


def failed_with(fn: Callable, error: BaseException, context: str) -> str:
  """The message of the error user function `fn` raised, its own words
  first (tf.estimator 2.15 let a model_fn's exception through, and code
  matched its message), then in parentheses `context` (which function
  failed, where), the error's class and the line of `fn` it came from:
  "Argument `labels` must not be None. (model_fn m:f failed in mode
  'train' (graph engine): ValueError (at m.py:12))"."""
  kind, _, own = describe_exception(error).partition(': ')
  where = f'{context}: {kind}{where_in(fn, error)}'
  return f'{own} ({where})' if own else where


def where_in(fn: Callable, error: BaseException) -> str:
  """' (at file.py:line)': the deepest frame of `error`'s traceback in the
  file that defines `fn`, or '' when none is (the error came from a
  library it called, with no line of its own below)."""
  code = getattr(inspect.unwrap(fn), '__code__', None)
  if code is None:
    return ''
  found = ''
  traceback = error.__traceback__
  while traceback is not None:
    frame_code = traceback.tb_frame.f_code
    if frame_code.co_filename == code.co_filename:
      found = (f' (at {os.path.basename(frame_code.co_filename)}:'
               f'{traceback.tb_lineno})')
    traceback = traceback.tb_next
  return found


def declared_args(fn: Callable) -> set:
  """The argument names `fn` declares ({'*'} when it takes **kwargs)."""
  try:
    params = inspect.signature(fn).parameters
  except (TypeError, ValueError):
    return set()
  if any(p.kind == p.VAR_KEYWORD for p in params.values()):
    return {'*'}
  return set(params)


def check_model_fn(model_fn: Any) -> Callable:
  """Checks that `model_fn` is callable and takes `features`; returns it.

  The messages start with tf.estimator 2.15's, which showed the function
  as str() does (`<function my_model_fn at 0x...>`).

  Raises:
    UserInputError: None, or the arguments are not a model_fn's.
    UserTypeError (a TypeError): not callable (2.15's argument reading
      raised TypeError 'unsupported callable').
  """
  if model_fn is None:
    raise UserInputError(
        'model_fn must be provided to Estimator (model_fn=None); pass a '
        'function model_fn(features, labels, mode, params).')
  if not callable(model_fn):
    raise UserTypeError(
        f'unsupported callable: model_fn={shorten(model_fn)} is not '
        'callable; pass a function model_fn(features, labels, mode, params).')
  args = declared_args(model_fn)
  if '*' not in args and 'features' not in args:
    raise UserInputError(
        f'model_fn ({model_fn}) must include features argument: it '
        f'declares {sorted(args)}. Expected model_fn(features, labels, '
        'mode, params[, config]).')
  unknown = args - set(_MODEL_FN_ARGS) - {'*'}
  sig = inspect.signature(model_fn)
  required_unknown = [
      a for a in unknown if sig.parameters[a].default is inspect.Parameter.empty
      and sig.parameters[a].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                     inspect.Parameter.KEYWORD_ONLY)]
  if required_unknown:
    raise UserInputError(
        f'model_fn ({model_fn}) has following not expected args: '
        f'{sorted(required_unknown)} (the runtime cannot supply them; it '
        f'passes only {list(_MODEL_FN_ARGS)}).')
  return model_fn


def takes_params(model_fn: Callable) -> bool:
  """Whether `model_fn` takes `params` (by name or **kwargs); True when
  its signature cannot be read (a builtin), which nothing can check."""
  args = declared_args(model_fn)
  return not args or bool({'params', '*'} & args)


def check_takes_params(model_fn: Callable, params: Any) -> None:
  """Refuses `params` for a model_fn that does not take them, as
  tf.estimator 2.15 did (params, even `{}`, exist to reach the model_fn;
  without a `params` argument they would be dropped silently).

  Raises:
    ValueError: `params` is not None and `model_fn` declares neither
      `params` nor `**kwargs`.
  """
  if params is not None and not takes_params(model_fn):
    raise UserInputError(
        f'model_fn ({model_fn}) does not include params argument, but '
        f'params ({shorten(params)}) is passed to Estimator: add a `params` '
        'argument to the model_fn, or pass params=None.')


def call_model_fn(model_fn, features, labels, mode, params, config):
  """Calls `model_fn` with the subset of arguments it declares."""
  args = declared_args(model_fn)
  kwargs = {'features': features}
  values = {'labels': labels, 'mode': mode, 'params': params,
            'config': config}
  for name, value in values.items():
    if '*' in args or name in args:
      kwargs[name] = value
    elif name == 'labels' and labels is not None:
      raise UserInputError(
          'model_fn does not take labels, but input_fn returns labels: '
          f'model_fn {fn_name(model_fn)} declares no `labels` argument. Add '
          'one, or yield only features.')
  tf_log.info('Calling model_fn.')
  spec = model_fn(**kwargs)
  tf_log.info('Done calling model_fn.')
  return spec


# The attribute of an input_fn that holds a function making its dataset,
# which the runtime reads instead of calling the input_fn:
# inputs/numpy_io.py's `arrays_input_fn`, what `numpy_input_fn` and
# `pandas_input_fn` return (functions, as tf.estimator 2.15's were).
DATASET_ATTRIBUTE = '_estimator_rt_dataset'


def dataset_of(input_fn: Callable) -> Optional[Callable[[], Any]]:
  """The function making `input_fn`'s dataset (DATASET_ATTRIBUTE), or None
  for an input_fn the runtime calls."""
  return getattr(input_fn, DATASET_ATTRIBUTE, None)


def input_fn_takes_context(input_fn: Callable) -> bool:
  """Whether `input_fn` declares `input_context` (and so shards itself)."""
  args = declared_args(input_fn)
  return 'input_context' in args


# What an input_fn is called for, from the first word of the role that
# names it in errors ('train input_fn', 'eval input_fn', ...): its `mode`.
_MODE_OF_ROLE = {'train': 'train', 'eval': 'eval', 'evaluate': 'eval',
                 'predict': 'infer', 'export': 'infer'}

# What tf.estimator took as a feature or label value besides a tensor: its
# input_fns could return NumPy arrays and Python lists or numbers (tests
# and small programs did), which the model_fn's ops turned into constants.
_ARRAY_LIKE = (np.ndarray, np.generic, int, float, bool, str, bytes)


def _leaves(value) -> list:
  """tf.nest.flatten(value), also where a dict mixes key types (2.15 took
  `{'string_key': ..., 42: ...}` features, which tf.nest cannot sort)."""
  try:
    return tf.nest.flatten(value)
  except TypeError:
    if isinstance(value, dict):
      return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
      return [leaf for item in value for leaf in _leaves(item)]
    raise


def _is_tensors(value) -> bool:
  """Features, or (features, labels), as tensors or array-likes
  (tf.estimator's other input_fn result, e.g. an iterator's get_next(), or
  constants)."""
  if isinstance(value, (str, bytes, int, float, bool)):
    return False  # A bare value is a mistake (a file name, a count).
  if (isinstance(value, (tuple, list)) and len(value) == 2 and
      value[1] is None and value[0] is not None):
    # (features, None): no labels, as a predict input_fn returned them.
    value = value[0]
  if isinstance(value, dict) and not value:
    # No features at all, as a model_fn that reads none (it makes its own
    # tensors) got them from tf.estimator: only a graph reads "nothing"
    # at every step.
    return True
  parts = _leaves(value)
  return bool(parts) and all(
      tf.is_tensor(p) or
      isinstance(p, (tf.compat.v1.SparseTensorValue,) + _ARRAY_LIKE)
      for p in parts)


def _is_constants(value) -> bool:
  """Features, or (features, labels), as NumPy arrays or Python values:
  what a graph reads again at every step is always the same."""
  return all(isinstance(p, _ARRAY_LIKE)
             for p in tf.nest.flatten(value) if p is not None)


def _lists_as_tuples(value):
  """`value` with its lists as tuples: a list of features (one array per
  model input) is a structure to tf.data, not one array to stack."""
  if isinstance(value, (list, tuple)):
    return tuple(_lists_as_tuples(v) for v in value)
  if isinstance(value, dict):
    return {k: _lists_as_tuples(v) for k, v in value.items()}
  return value


def call_input_fn(input_fn: Callable, params: dict,
                  input_context: Optional[tf.distribute.InputContext] = None,
                  *, role: str = 'input_fn', config: Any = None,
                  allow_tensors: bool = False) -> Any:
  """Calls `input_fn` and checks that it returned a `tf.data.Dataset`.

  The input_fn gets, by name, whichever of tf.estimator's arguments it
  declares: `params`, `mode` (from `role`), `config`, `input_context`.

  Args:
    input_fn: the user's function.
    params: passed as `params` if the function declares it.
    input_context: passed if the function declares `input_context`.
    role: how errors name the function (e.g. 'train input_fn'); its first
      word gives `mode`.
    config: the Estimator's RunConfig, passed as `config`.
    allow_tensors: accept features or (features, labels) as tensors instead
      of a dataset (only a graph can read them again for every step).

  Raises:
    InputFnError: `input_fn` is not callable, raised an exception (any:
      an input_fn is user code, and whatever it raises, a missing file or a
      bad param, is for its author to fix; the original is the `__cause__`)
      or did not return a Dataset.
    GraphModelFnError: it returned tensors, or raised TensorFlow's error
      for a graph-only API, and `allow_tensors` is False: the graph engine
      runs it (except constants where config.engine is 'eager': they
      become a dataset repeating them).
  """
  if not callable(input_fn):
    # Also the TypeError 2.15's argument reading raised, with its words.
    raise raised_as(InputFnError, f'unsupported callable: {role}='
                    f'{shorten(input_fn)} is not callable.', TypeError())
  args = declared_args(input_fn)
  values = {'params': params, 'input_context': input_context,
            'mode': _MODE_OF_ROLE.get(role.split()[0]),
            'config': config}
  kwargs = {name: value for name, value in values.items()
            if '*' in args or name in args}
  dataset = _called(input_fn, kwargs, role=role, allow_tensors=allow_tensors)
  if not isinstance(dataset, tf.data.Dataset) and _is_tensors(dataset):
    return _tensors_returned(dataset, input_fn, role=role, config=config,
                             allow_tensors=allow_tensors)
  if not isinstance(dataset, tf.data.Dataset):
    raise InputFnError(
        f'{role} {fn_name(input_fn)} returned {type(dataset).__name__}, not '
        'a tf.data.Dataset. Return a dataset of (features, labels) or of '
        'features, e.g. tf.data.Dataset.from_tensor_slices((x, y)).batch(b).')
  spec = dataset.element_spec
  if isinstance(spec, tuple) and len(spec) != 2:
    # 2.15's words: it took a tuple as (features, labels), any other length
    # (a 1-tuple too) refused.
    raise InputFnError(
        'input_fn should return (features, labels) as a len 2 tuple: '
        f'{role} {fn_name(input_fn)} yields tuples of {len(spec)} elements; '
        'yield (features, labels) or features alone (not in a tuple).')
  return dataset


def _called(input_fn: Callable, kwargs: dict, *, role: str,
            allow_tensors: bool) -> Any:
  """What `input_fn` returns called with `kwargs` (call_input_fn's call
  and the errors it raises for what the input_fn raised)."""
  try:
    make_dataset = dataset_of(input_fn)
    if make_dataset is not None:
      # numpy_input_fn's and pandas_input_fn's: their dataset, read fast
      # (called, they return a batch's tensors, as tf.estimator's did).
      return make_dataset()
    return input_fn(**kwargs)
  except UserInputError:
    raise  # Already says what is wrong (the bundled input_fns' checks).
  except Exception as e:  # pylint: disable=broad-except
    failed = raised_as(
        InputFnError, f'{role} {fn_name(input_fn)} raised '
        f'{describe_exception(e)}{where_in(input_fn, e)}', e)
    reason = None if allow_tensors else graph_only_reason(e)
    if reason is not None:
      # It uses an API that only a graph has (an initializable iterator,
      # a placeholder), as tf.estimator's input_fns could: the graph engine
      # runs it; where the engine is settled, this is its error.
      raise GraphModelFnError(
          str(failed), reason=f'its input_fn uses a graph-only API: {reason}',
          eager_error=failed) from e
    raise failed from e


def _tensors_returned(value: Any, input_fn: Callable, *, role: str,
                      config: Any, allow_tensors: bool) -> Any:
  """call_input_fn's answer to an input_fn that returned tensors: them
  (`allow_tensors`), a dataset repeating constants (the eager engine
  settled), or the error that sends it to the graph engine."""
  if isinstance(value, (list, tuple)) and len(value) != 2:
    raise InputFnError(
        f'input_fn should return (features, labels) as a len 2 tuple: '
        f'{role} {fn_name(input_fn)} returned a {type(value).__name__} '
        f'of {len(value)} items. Return a tf.data.Dataset of (features, '
        'labels) or of features, or (features, labels) as tensors.')
  if allow_tensors:
    return value
  if getattr(config, 'engine', None) == 'eager' and _is_constants(value):
    # Where only the eager engine may run (model_to_estimator's), the
    # graph's reading of constants at every step, as a dataset.
    return tf.data.Dataset.from_tensors(_lists_as_tuples(value)).repeat()
  raise GraphModelFnError(
      f'{role} {fn_name(input_fn)} returns tensors, not a tf.data.Dataset: '
      'only a graph reads them again at every step.',
      reason='its input_fn returns tensors, not a tf.data.Dataset')


# The model_fns and input_fns that ship with estimator_rt: top-level
# packages of a checkout, installed inside the package (setup.py), so that
# an installed estimator_rt puts no `model_fns` on sys.path.
_BUNDLED = {'model_fns': 'estimator_rt.model_fns',
            'input_fns': 'estimator_rt.input_fns'}


def bundled_fallback(module_name: str) -> str:
  """`module_name`, or the installed copy of a bundled one
  (`model_fns.mlp` -> `estimator_rt.model_fns.mlp`) when no `model_fns`
  (`input_fns`) is importable: a checkout's, or the user's own module of
  that name, wins."""
  top, dot, rest = module_name.partition('.')
  if top not in _BUNDLED or importlib.util.find_spec(top) is not None:
    return module_name
  return _BUNDLED[top] + dot + rest


def load_callable(spec: str, *, flag: str) -> Callable:
  """Loads `module.path:attr` or `path/to/file.py:attr`.

  Args:
    spec: the reference. The module part is a dotted module importable from
      sys.path (the current directory included) or a path to a .py file.
    flag: the flag or field named in errors.

  Raises:
    UserInputError: the spec is malformed, does not import, lacks the
      attribute, or the attribute is not callable.
  """
  if not isinstance(spec, str) or ':' not in spec:
    raise UserInputError(
        f'--{flag}={spec!r} must look like module.path:function or '
        'path/to/file.py:function.')
  module_part, attr = spec.rsplit(':', 1)
  if not module_part or not attr:
    raise UserInputError(
        f'--{flag}={spec!r} must look like module.path:function or '
        'path/to/file.py:function.')
  try:
    if module_part.endswith('.py') or os.sep in module_part:
      path = os.path.abspath(module_part)
      if not os.path.isfile(path):
        raise UserInputError(f'--{flag}={spec!r}: file {path} does not exist.')
      name = '_estimator_rt_user_' + os.path.splitext(
          os.path.basename(path))[0]
      module_spec = importlib.util.spec_from_file_location(name, path)
      module = importlib.util.module_from_spec(module_spec)
      sys.modules[name] = module
      module_spec.loader.exec_module(module)
    else:
      if os.getcwd() not in sys.path and '' not in sys.path:
        sys.path.insert(0, os.getcwd())
      module = importlib.import_module(bundled_fallback(module_part))
  except UserInputError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    raise UserInputError(
        f'--{flag}={spec!r}: importing {module_part!r} failed with '
        f'{type(e).__name__}: {e}') from e
  if not hasattr(module, attr):
    raise UserInputError(
        f'--{flag}={spec!r}: module {module_part!r} has no attribute '
        f'{attr!r}.')
  fn = getattr(module, attr)
  if not callable(fn):
    raise UserInputError(
        f'--{flag}={spec!r}: {attr!r} is a {type(fn).__name__}, not a '
        'function.')
  return fn
