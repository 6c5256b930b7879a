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
from typing import Dict, Optional, Tuple

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

# v2 name -> (value, the v1 name it came from).
_Converted = Dict[str, Tuple[object, str]]


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


def _slot_name_v2(opt_name_v1: str, var_name: str, estimator_type: str
                  ) -> Optional[str]:
  """The TF2 name of v1 slot `var_name` of `opt_name_v1` (None: dropped)."""
  suffix_v1 = var_name.rsplit('/')[-1]
  suffix_v2 = OPT_VAR_NAME_V1_TO_V2[opt_name_v1][suffix_v1]
  if suffix_v2 is None:
    return None
  # The model variable's name ends where its partition's part (DNN, linear)
  # or the slot's name (combined) begins.
  end = var_name.rfind(_PARTITION_PART.get(estimator_type, suffix_v1))
  return (f'training/{OPT_NAME_V1_TO_V2[opt_name_v1]}/{var_name[:end]}'
          f'{suffix_v2}')


def _convert_variables_in_ckpt(opt_name_v1, reader, variable_names,
                               estimator_type) -> _Converted:
  """Every variable of the checkpoint, for the TF2 class of an estimator
  trained with `opt_name_v1`: its slots renamed, Adam's beta powers as
  `beta_1`, `beta_2` (beta^step -> beta), the rest under their names."""
  converted = {}
  powers = HP_IN_CKPT.get(opt_name_v1, {})
  global_step = (reader.get_tensor('global_step')
                 if opt_name_v1 == 'Adam' else None)
  for var_name in variable_names:
    power = next((p for p in powers if p in var_name), None)
    if power is not None:
      value = np.asarray(reader.get_tensor(var_name))
      converted[powers[power]] = (
          np.power(value, 1.0 / global_step).astype(value.dtype), var_name)
    elif opt_name_v1 in var_name:
      name_v2 = _slot_name_v2(opt_name_v1, var_name, estimator_type)
      if name_v2 is not None:
        converted[name_v2] = (reader.get_tensor(var_name), var_name)
    else:
      converted[var_name] = (reader.get_tensor(var_name), var_name)
  return converted


def _hyper_parameters(opt_name_v1) -> _Converted:
  """The TF2 optimizer's hyperparameter variables, at its class's
  defaults."""
  config = __getattr__('OPT_V2_INSTANCE')[opt_name_v1].get_config()
  opt_name_v2 = OPT_NAME_V1_TO_V2[opt_name_v1]
  converted = {}
  for name in sorted(HP_IN_GRAPH[opt_name_v1]):
    name_v2 = f'training/{opt_name_v2}/{name}'
    tf.compat.v1.logging.info(
        f'Hyper parameter {name_v2} with default value {config[name]} is '
        'added.')
    converted[name_v2] = (config[name], name)
  return converted


def _combined_linear_optimizer(opt_names_v1: Dict[str, str]) -> str:
  """The v1 name of a DNN-linear-combined estimator's linear optimizer
  (SGD when it left no slots)."""
  for opt_name, var_name in opt_names_v1.items():
    if var_name.startswith(_LINEAR_PREFIX):
      return opt_name
  return 'SGD'


def _write(converted: _Converted, target_checkpoint: str) -> None:
  """A name-based checkpoint at `target_checkpoint` (with its meta graph
  and state file) holding `converted`'s values under their names."""
  with tf.Graph().as_default():
    variables = {name: tf.Variable(value, name=name)
                 for name, (value, _) in converted.items()}
    saver = tf.compat.v1.train.Saver(var_list=variables)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.initializers.global_variables())
      tf.compat.v1.logging.info(
          f'Writing checkpoint_to_path {target_checkpoint}')
      saver.save(session, target_checkpoint)


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
  del source_graph  # 2.15 parsed it and used nothing of it.
  if estimator_type not in _ESTIMATOR_TYPES:
    raise ValueError(
        f'estimator_type={estimator_type!r}: the checkpoint converter '
        f'converts the canned estimators {_ESTIMATOR_TYPES}.')
  reader = tf.compat.v1.train.NewCheckpointReader(source_checkpoint)
  variable_names = sorted(reader.get_variable_to_shape_map())
  opt_names_v1 = _v1_optimizers(variable_names)
  converted = {}
  if estimator_type == 'combined':
    if not opt_names_v1:
      raise ValueError('Two `SGD` optimizers are used in DNNLinearCombined '
                       'model, and this is not handled by the checkpoint '
                       'converter.')
    linear_opt_v1 = _combined_linear_optimizer(opt_names_v1)
    # The DNN optimizer counts steps with the global step; the linear one
    # has a step counter of its own.
    converted[f'training/{OPT_NAME_V1_TO_V2[linear_opt_v1]}/iter'] = (
        reader.get_tensor('global_step'), 'global_step')
    if len(opt_names_v1) == 1:  # The other one is SGD, which has no slots.
      opt_names_v1['SGD'] = ''
  elif not opt_names_v1:
    opt_names_v1['SGD'] = ''
  for opt_name_v1 in opt_names_v1:
    converted.update(_convert_variables_in_ckpt(
        opt_name_v1, reader, variable_names, estimator_type))
    converted.update(_hyper_parameters(opt_name_v1))
  tf.compat.v1.logging.info(
      '<----- Variable names converted (v1 --> v2): ----->')
  for name_v2, (_, name_v1) in converted.items():
    tf.compat.v1.logging.info(f'{name_v1} --> {name_v2}')
  _write(converted, target_checkpoint)


def main(argv=None):
  """2.15's command line: estimator_type source_checkpoint source_graph
  target_checkpoint."""
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
