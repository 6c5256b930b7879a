"""A model_dir or export directory as a program finds it, read back.

`listing(directory)` maps each file's masked relative path (event files'
time and host, export timestamps masked) to what it holds:

- event files: every record's kind (`file_version`, `graph_def`,
  `meta_graph_def`, `session_log:START`, ...), each summary tag with
  the steps it was written at (`tf.compat.v1.train.summary_iterator`),
  and each tag's value kinds (`value_kind`): what a program reading the
  file finds in `value` (a `simple_value`, a `histo`, an `image`, a
  `tensor` of some dtype) and the plugin its metadata names, if any;
- the checkpoint state file `checkpoint`: its paths (relative), and the
  timestamps' count (their values vary);
- a checkpoint's `.index`: its variables and shapes (`tf.train.
  list_variables`);
- `saved_model.pb`: each MetaGraph's tags and signatures (method, inputs
  and outputs with dtypes and shapes), parsed from the file;
- other files: their presence (and size class: empty or not).
"""

import collections
import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from scripts.tf_estimator_215.observe import describe as describe_lib


def listing(directory: str) -> dict:
  """Masked relative path -> what the file holds (see the module doc)."""
  found = {}
  if not os.path.isdir(directory):
    return {'<missing>': True}
  for root, dirs, names in os.walk(directory):
    dirs.sort()
    for name in sorted(names):
      path = os.path.join(root, name)
      rel = describe_lib.mask(os.path.relpath(path, directory))
      key = rel
      n = 2
      while key in found:  # two event files of one directory
        key, n = f'{rel}#{n}', n + 1
      found[key] = _content(path, name)
    for name in dirs:
      if not os.listdir(os.path.join(root, name)):
        found[describe_lib.mask(os.path.relpath(
            os.path.join(root, name), directory)) + '/'] = 'empty dir'
  return found


def _content(path: str, name: str):
  try:
    if 'tfevents' in name:
      return _events(path)
    if name == 'checkpoint':
      return _checkpoint_state(os.path.dirname(path))
    if name.endswith('.index'):
      return {name: list(shape) for name, shape in
              tf.train.list_variables(path[:-len('.index')])}
    if name == 'saved_model.pb':
      return _saved_model(path)
  except Exception as error:  # pylint: disable=broad-except
    return {'unreadable': type(error).__name__}
  return 'file' if os.path.getsize(path) else 'empty file'


def value_kind(value) -> str:
  """What a `Summary.Value` holds, as a reader meets it: `simple_value`,
  `histo`, `image`, `audio`, or `tensor:<dtype>`, then `/<plugin>` when
  its metadata names a plugin (`tensor:float32/scalars` is what
  tf.summary.scalar writes; 2.15's own scalars are `simple_value`)."""
  kind = value.WhichOneof('value') or 'none'
  if kind == 'tensor':
    kind += ':' + tf.dtypes.as_dtype(value.tensor.dtype).name
  plugin = value.metadata.plugin_data.plugin_name
  return f'{kind}/{plugin}' if plugin else kind


def _events(path: str) -> dict:
  kinds, tags = collections.Counter(), collections.defaultdict(list)
  values = collections.defaultdict(set)
  for event in tf.compat.v1.train.summary_iterator(path):
    kind = event.WhichOneof('what')
    if kind == 'session_log':
      kind = 'session_log:' + tf.compat.v1.SessionLog.SessionStatus.Name(
          event.session_log.status)
    if kind == 'summary':
      for value in event.summary.value:
        tags[value.tag].append(int(event.step))
        values[value.tag].add(value_kind(value))
    else:
      kinds[kind] += 1
  return {'records': dict(sorted(kinds.items())), 'tags': dict(sorted(
      tags.items())), 'values': {tag: sorted(found) for tag, found in sorted(
          values.items())}}


def _checkpoint_state(directory: str) -> dict:
  state = tf.train.get_checkpoint_state(directory)
  if state is None:
    return {'state': None}

  def rel(p):
    return describe_lib.mask(os.path.relpath(p, directory) if os.path.isabs(
        p) else p)
  return {'model_checkpoint_path': rel(state.model_checkpoint_path),
          'all_model_checkpoint_paths': [
              rel(p) for p in state.all_model_checkpoint_paths],
          'timestamps': len(state.all_model_checkpoint_timestamps),
          'absolute': os.path.isabs(state.model_checkpoint_path)}


def _saved_model(path: str) -> dict:
  model = saved_model_pb2.SavedModel()
  with open(path, 'rb') as f:
    model.ParseFromString(f.read())
  graphs = {}
  for meta_graph in model.meta_graphs:
    signatures = {}
    for key, sig in sorted(meta_graph.signature_def.items()):
      signatures[key] = {
          'method': sig.method_name,
          'inputs': {k: _tensor_info(v) for k, v in sorted(
              sig.inputs.items())},
          'outputs': {k: _tensor_info(v) for k, v in sorted(
              sig.outputs.items())}}
    graphs[','.join(sorted(meta_graph.meta_info_def.tags))] = signatures
  return graphs


def _tensor_info(info) -> str:
  dtype = tf.dtypes.as_dtype(info.dtype).name if info.dtype else '?'
  if info.tensor_shape.unknown_rank:
    return dtype + '[?]'
  dims = ['?' if d.size < 0 else str(d.size) for d in info.tensor_shape.dim]
  return f'{dtype}[{",".join(dims)}]'
