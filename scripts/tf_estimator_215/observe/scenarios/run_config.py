"""RunConfig: its properties by default and after `replace`, which values
each argument takes, and what a TF_CONFIG cluster makes of it."""

import json
import os

import numpy as np
import tensorflow as tf

PROPERTIES = (
    'checkpoint_save_graph_def', 'cluster_spec', 'device_fn',
    'eval_distribute', 'evaluation_master', 'experimental_max_worker_delay_secs',
    'global_id_in_cluster', 'is_chief', 'keep_checkpoint_every_n_hours',
    'keep_checkpoint_max', 'log_step_count_steps', 'master', 'model_dir',
    'num_ps_replicas', 'num_worker_replicas', 'protocol',
    'save_checkpoints_secs', 'save_checkpoints_steps', 'save_summary_steps',
    'service', 'session_config', 'session_creation_timeout_secs', 'task_id',
    'task_type', 'tf_random_seed', 'train_distribute')
CANDIDATES = (1, 2.0, 0, -1, np.int64(3), np.float32(2.5), None, '5', [],
              True)
ARGUMENTS = ('tf_random_seed', 'save_summary_steps', 'save_checkpoints_steps',
             'save_checkpoints_secs', 'keep_checkpoint_max',
             'keep_checkpoint_every_n_hours', 'log_step_count_steps',
             'session_creation_timeout_secs',
             'experimental_max_worker_delay_secs', 'model_dir', 'protocol',
             'checkpoint_save_graph_def', 'session_config', 'device_fn')


def _properties(config) -> dict:
  out = {}
  for name in PROPERTIES:
    try:
      value = getattr(config, name)
      out[name] = repr(value) if name in ('cluster_spec',) else value
    except Exception as error:  # pylint: disable=broad-except
      out[name] = error
  return out


def _with_tf_config(rec, label, cluster, task):
  os.environ['TF_CONFIG'] = json.dumps({'cluster': cluster, 'task': task})
  try:
    config = rec.call(label, tf.estimator.RunConfig)
    if config is not None:
      rec.value(label + ': properties', _properties(config))
  finally:
    del os.environ['TF_CONFIG']


def run(rec):
  config = tf.estimator.RunConfig()
  rec.value('default properties', _properties(config))
  rec.value('default session_config', str(config.session_config))
  changed = rec.call('replace', config.replace, model_dir=rec.path('m'),
                     save_checkpoints_steps=10, save_checkpoints_secs=None,
                     tf_random_seed=3)
  if changed is not None:
    rec.value('replaced properties', _properties(changed))
  rec.call('replace both checkpoint settings', config.replace,
           save_checkpoints_steps=10, save_checkpoints_secs=10)
  rec.call('replace an unknown property', config.replace, nope=1)
  rec.call('replace cluster_spec', config.replace, cluster_spec=None)
  for argument in ARGUMENTS:
    rec.accepts(f'RunConfig({argument}=...)',
                lambda v, a=argument: tf.estimator.RunConfig(**{a: v}),
                CANDIDATES, view=lambda c, a=argument: getattr(c, a))
  rec.call('steps and secs both', tf.estimator.RunConfig,
           save_checkpoints_steps=5, save_checkpoints_secs=5)
  rec.call('tf.compat.v1.estimator.RunConfig', lambda: _properties(
      tf.compat.v1.estimator.RunConfig(model_dir=rec.path('v1'))))
  cluster = {'chief': ['host0:2222'], 'worker': ['host1:2222', 'host2:2222'],
             'ps': ['host3:2222']}
  _with_tf_config(rec, 'TF_CONFIG chief', cluster, {'type': 'chief',
                                                    'index': 0})
  _with_tf_config(rec, 'TF_CONFIG worker 1', cluster, {'type': 'worker',
                                                       'index': 1})
  _with_tf_config(rec, 'TF_CONFIG evaluator', cluster, {'type': 'evaluator',
                                                        'index': 0})
  _with_tf_config(rec, 'TF_CONFIG master', {'master': ['host0:2222']},
                  {'type': 'master', 'index': 0})
  _with_tf_config(rec, 'TF_CONFIG bad index', cluster, {'type': 'worker',
                                                        'index': 5})
