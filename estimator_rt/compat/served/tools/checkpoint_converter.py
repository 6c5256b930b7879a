r"""tf.estimator 2.15's `tools/checkpoint_converter`: a v1 canned
estimator's checkpoint, converted for its TF2 class.

A tf.compat.v1.estimator DNN, linear or DNN-linear-combined estimator
trains with `tf.compat.v1.train` optimizers, whose slots sit beside each
variable (`dnn/hiddenlayer_0/kernel/t_0/Adagrad`; `part_0/` for the linear
model, `t_0/` for the DNN, as 2.15's v1 models partitioned their
variables); its TF2 class trains with a Keras legacy optimizer, whose slots
and hyperparameters sit under `training/<Optimizer>/`
(`training/Adagrad/dnn/hiddenlayer_0/kernel/accumulator`,
`training/Adagrad/learning_rate`). `convert_checkpoint` writes a checkpoint
holding every variable of the source under its own name, each optimizer
slot under its TF2 name (RMSProp's momentum slot is dropped, Adam's beta
powers become `beta_1`, `beta_2`), and the TF2 optimizer's
hyperparameters, so the TF2 estimator restores it and trains on.

As in 2.15: the hyperparameters take the Keras legacy optimizer's
defaults (`learning_rate` 0.001 for Adagrad, not the 0.05 the v1
estimator trained with): 2.15 looked for them in the source graph, but its
lookup never matched a node. So `source_graph` is not read here (estimator_rt
writes no graph.pbtxt; a 2.15 model_dir has one, and either path will do).
The two optimizers of a DNN-linear-combined estimator must differ (2.15's
limitation: their variables could not be told apart).

Usage, as 2.15's script:

    python -m estimator_rt.compat.served.tools.checkpoint_converter \
        dnn /tmp/model_dir/model.ckpt-100 /tmp/model_dir/graph.pbtxt \
        /tmp/converted/model.ckpt-100
"""

import argparse
import sys
from typing import Dict

import numpy as np
import tensorflow as tf

from estimator_rt.compat import finder as _finder

# The v1 optimizer names (as in their slots' names) -> the TF2 ones (as in
# `training/<name>/`).
OPT_NAME_V1_TO_V2 = {
    'Adagrad': 'Adagrad',
    'RMSProp': 'RMSprop',
    'Ftrl': 'Ftrl',
    'Adam': 'Adam',
    'SGD': 'SGD',
}

# Optimizer variables of no one model variable: v1 name part -> TF2 name.
HP_IN_CKPT = {
    'Adam': {
        'beta1_power': 'training/Adam/beta_1',
        'beta2_power': 'training/Adam/beta_2',
    },
}

# The v1 slot names -> the TF2 ones (None: the slot has no TF2 counterpart
# and is dropped).
OPT_VAR_NAME_V1_TO_V2 = {
    'Adam': {'Adam': 'm', 'Adam_1': 'v'},
    'Ftrl': {'Ftrl': 'accumulator', 'Ftrl_1': 'linear'},
    'RMSProp': {'RMSProp': 'rms', 'RMSProp_1': None},
    'Adagrad': {'Adagrad': 'accumulator'},
}

# The TF2 optimizers' hyperparameter variables.
HP_IN_GRAPH = {
    'Adam': ['decay', 'learning_rate'],
    'Ftrl': [
        'decay', 'l1_regularization_strength', 'l2_regularization_strength',
        'beta', 'learning_rate', 'learning_rate_power'
    ],
    'RMSProp': ['decay', 'learning_rate', 'momentum', 'rho'],
    'Adagrad': ['decay', 'learning_rate'],
    'SGD': ['decay', 'learning_rate', 'momentum'],
}

_ESTIMATOR_TYPES = ('dnn', 'linear', 'combined')
# Where each estimator type's v1 slot names carry the variable's partition.
_PARTITION_PART = {'dnn': 't_0', 'linear': 'part_0'}
_LINEAR_PREFIX = 'linear/linear_model/'
_LEGACY_CLASS = {'Adagrad': 'Adagrad', 'Adam': 'Adam', 'Ftrl': 'Ftrl',
                 'RMSProp': 'RMSprop', 'SGD': 'SGD'}
_v2_instances = None


def __getattr__(name):  # pylint: disable=invalid-name
  """OPT_V2_INSTANCE (2.15's default TF2 optimizer of each v1 name), made
  on first use: tf_keras loads only then."""
  global _v2_instances
  if name == 'OPT_V2_INSTANCE':
    if _v2_instances is None:
      import tf_keras  # pylint: disable=g-import-not-at-top
      _v2_instances = {
          v1: getattr(tf_keras.optimizers.legacy, cls)()
          for v1, cls in _LEGACY_CLASS.items()}
    return _v2_instances
  if name.startswith('__'):
    raise AttributeError(name)
  raise _finder.missing_name(
      'tensorflow_estimator.python.estimator.tools.checkpoint_converter', name)


def _v1_optimizers(variable_names) -> Dict[str, str]:
  """The v1 optimizers whose names the (sorted) variables carry, each with
  the last such variable (SGD has none, and is never found)."""
  found = {}
  for var_name in variable_names:
    for opt_name in OPT_NAME_V1_TO_V2:
      if opt_name in var_name:
        found[opt_name] = var_name
  return found


# The converted checkpoint is built as 2.15 built it: in a graph, one
# variable per converted value, `var_map` {v2 name: variable} and
# `var_names_map` {v2 name: the v1 name it came from}.


def _add_new_variable(initial_value, var_name_v2, var_name_v1, var_map,
                      var_names_map):
  """A variable `var_name_v2` of `initial_value`, in both maps."""
  var_map[var_name_v2] = tf.Variable(initial_value, name=var_name_v2)
  var_names_map[var_name_v2] = var_name_v1


def _add_opt_variable(opt_name_v2, var_name_v1, idx, suffix_v2, reader,
                      var_map, var_names_map):
  """v1 slot `var_name_v1`'s value as `training/<opt_name_v2>/` + its name
  up to `idx` + `suffix_v2`."""
  _add_new_variable(reader.get_tensor(var_name_v1),
                    f'training/{opt_name_v2}/{var_name_v1[:idx]}{suffix_v2}',
                    var_name_v1, var_map, var_names_map)


def _convert_variables_in_ckpt(opt_name_v1, reader, variable_names, var_map,
                               var_names_map, est_type):
  """Adds every variable of the checkpoint, for the TF2 class of an
  estimator (`est_type`) trained with `opt_name_v1`: its slots renamed (a
  slot with no TF2 counterpart dropped), Adam's beta powers as `beta_1`,
  `beta_2` (beta^step -> beta), the rest under their names."""
  powers = HP_IN_CKPT.get(opt_name_v1, {})
  global_step = (reader.get_tensor('global_step')
                 if opt_name_v1 == 'Adam' else None)
  opt_name_v2 = OPT_NAME_V1_TO_V2[opt_name_v1]
  for var_name in variable_names:
    power = next((p for p in powers if p in var_name), None)
    if power is not None:
      value = np.asarray(reader.get_tensor(var_name))
      _add_new_variable(np.power(value, 1.0 / global_step).astype(value.dtype),
                        powers[power], var_name, var_map, var_names_map)
    elif opt_name_v1 in var_name:
      suffix_v1 = var_name.rsplit('/')[-1]
      suffix_v2 = OPT_VAR_NAME_V1_TO_V2[opt_name_v1][suffix_v1]
      if suffix_v2 is not None:
        # The model variable's name ends where its partition's part (DNN,
        # linear) or the slot's name (combined) begins.
        idx = var_name.rfind(_PARTITION_PART.get(est_type, suffix_v1))
        _add_opt_variable(opt_name_v2, var_name, idx, suffix_v2, reader,
                          var_map, var_names_map)
    else:
      _add_new_variable(reader.get_tensor(var_name), var_name, var_name,
                        var_map, var_names_map)


def _convert_hyper_params_in_graph(graph_from_path, opt_name_v1, var_map,
                                   var_names_map):
  """Adds the TF2 optimizer's hyperparameter variables, at its class's
  defaults. 2.15 looked for them in the graph at `graph_from_path` first,
  but its lookup never matched a node: the graph is not read (see the
  module docstring)."""
  del graph_from_path
  config = __getattr__('OPT_V2_INSTANCE')[opt_name_v1].get_config()
  opt_name_v2 = OPT_NAME_V1_TO_V2[opt_name_v1]
  for name in sorted(HP_IN_GRAPH[opt_name_v1]):
    name_v2 = f'training/{opt_name_v2}/{name}'
    tf.compat.v1.logging.info(
        f'Hyper parameter {name_v2} with default value {config[name]} is '
        'added.')
    _add_new_variable(config[name], name_v2, name, var_map, var_names_map)


def _combined_linear_optimizer(opt_names_v1: Dict[str, str]) -> str:
  """The v1 name of a DNN-linear-combined estimator's linear optimizer
  (SGD when it left no slots)."""
  for opt_name, var_name in opt_names_v1.items():
    if var_name.startswith(_LINEAR_PREFIX):
      return opt_name
  return 'SGD'


def convert_checkpoint(estimator_type, source_checkpoint, source_graph,
                       target_checkpoint):
  """Converts a v1 canned estimator's checkpoint for its TF2 class.

  Args:
    estimator_type: 'dnn', 'linear' or 'combined' (DNN-linear-combined).
    source_checkpoint: the v1 checkpoint (`.../model.ckpt-<step>`).
    source_graph: the v1 model's graph.pbtxt: 2.15's argument, not read
      (see the module docstring).
    target_checkpoint: where the converted checkpoint goes (its directory
      gets a `checkpoint` state file naming it).

  Raises:
    ValueError: `estimator_type` is none of those, or a DNN-linear-combined
      estimator trained both parts with SGD.
  """
  if estimator_type not in _ESTIMATOR_TYPES:
    raise ValueError(
        f'estimator_type={estimator_type!r}: the checkpoint converter '
        f'converts the canned estimators {_ESTIMATOR_TYPES}.')
  reader = tf.compat.v1.train.NewCheckpointReader(source_checkpoint)
  variable_names = sorted(reader.get_variable_to_shape_map())
  opt_names_v1 = _v1_optimizers(variable_names)
  if estimator_type == 'combined' and not opt_names_v1:
    raise ValueError('Two `SGD` optimizers are used in DNNLinearCombined '
                     'model, and this is not handled by the checkpoint '
                     'converter.')
  with tf.Graph().as_default():
    var_map = {}
    var_names_map = {}
    if estimator_type == 'combined':
      linear_opt_v1 = _combined_linear_optimizer(opt_names_v1)
      # The DNN optimizer counts steps with the global step; the linear one
      # has a step counter of its own.
      _add_new_variable(
          reader.get_tensor('global_step'),
          f'training/{OPT_NAME_V1_TO_V2[linear_opt_v1]}/iter', 'global_step',
          var_map, var_names_map)
      if len(opt_names_v1) == 1:  # The other one is SGD: it has no slots.
        opt_names_v1['SGD'] = ''
    elif not opt_names_v1:
      opt_names_v1['SGD'] = ''
    for opt_name_v1 in opt_names_v1:
      _convert_variables_in_ckpt(opt_name_v1, reader, variable_names,
                                 var_map, var_names_map, estimator_type)
      _convert_hyper_params_in_graph(source_graph, opt_name_v1, var_map,
                                     var_names_map)
    tf.compat.v1.logging.info(
        '<----- Variable names converted (v1 --> v2): ----->')
    for name_v2, name_v1 in var_names_map.items():
      tf.compat.v1.logging.info(f'{name_v1} --> {name_v2}')
    saver = tf.compat.v1.train.Saver(var_list=var_map)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.initializers.global_variables())
      tf.compat.v1.logging.info(
          f'Writing checkpoint_to_path {target_checkpoint}')
      saver.save(session, target_checkpoint)


def main(_=None):
  """2.15's command line: estimator_type source_checkpoint source_graph
  target_checkpoint, from `_` (the arguments after the program's name;
  None: sys.argv's)."""
  argv = _
  parser = argparse.ArgumentParser(
      description="Converts a v1 canned estimator's checkpoint for its TF2 "
      'class (see the module docstring).')
  parser.add_argument(
      'estimator_type', choices=_ESTIMATOR_TYPES,
      help='The type of estimator to be converted: linear, dnn or combined.')
  parser.add_argument('source_checkpoint',
                      help='Path to source checkpoint file to be read in.')
  parser.add_argument('source_graph',
                      help='Path to source graph file (not read).')
  parser.add_argument('target_checkpoint',
                      help='Path to checkpoint file to be written out.')
  args = parser.parse_args(sys.argv[1:] if argv is None else argv)
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  convert_checkpoint(args.estimator_type, args.source_checkpoint,
                     args.source_graph, args.target_checkpoint)


if __name__ == '__main__':
  main()
