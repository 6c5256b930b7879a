"""tf.estimator.experimental's stopping hooks (made from an estimator and
its evaluations) and InMemoryEvaluatorHook, run in trains."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def _estimator(rec, name):
  return tf.estimator.Estimator(
      common.tf1_model_fn, rec.path(name), params={},
      config=common.run_config(None, save_checkpoints_steps=2))


def _makers(eval_dir):
  """name -> a function making the hook for an estimator; the stop_if_*
  hooks read the evaluations of `eval_dir` (another estimator's: a hook
  made after the model_dir's first checkpoint would add a variable the
  checkpoint lacks)."""
  experimental = tf.estimator.experimental
  every = {'run_every_secs': None, 'run_every_steps': 1}
  return {
      'stop_if_higher_hook': lambda est: experimental.stop_if_higher_hook(
          est, 'loss', 0.0, eval_dir=eval_dir, **every),
      'stop_if_lower_hook': lambda est: experimental.stop_if_lower_hook(
          est, 'loss', 100.0, eval_dir=eval_dir, **every),
      'stop_if_no_decrease_hook': lambda est: tf.compat.v1.estimator
                                  .experimental.stop_if_no_decrease_hook(
                                      est, 'loss', 0, eval_dir=eval_dir,
                                      **every),
      'stop_if_no_increase_hook': lambda est: experimental
                                  .stop_if_no_increase_hook(
                                      est, 'mae', 0, eval_dir=eval_dir,
                                      min_steps=1, **every),
      'make_early_stopping_hook': lambda est: experimental
                                  .make_early_stopping_hook(
                                      est, lambda: True, **every),
  }


def _stop_if(rec):
  evaluated = _estimator(rec, 'evaluated')
  evaluated.train(common.input_fn(), steps=2)
  evaluated.evaluate(common.input_fn(), steps=1)
  for name, make in _makers(evaluated.eval_dir()).items():
    est = _estimator(rec, name)
    hook = rec.call(f'{name}: make', make, est)
    rec.call(f'{name}: train', est.train, common.input_fn(), steps=6,
             hooks=[hook] if hook else None)
    rec.call(f'{name}: global_step', est.get_variable_value, 'global_step')
  experimental = tf.estimator.experimental
  rec.call('stop_if_higher_hook both run_every', experimental
           .stop_if_higher_hook, est, 'loss', 1.0, run_every_secs=1,
           run_every_steps=1)
  rec.call('make_early_stopping_hook not callable',
           experimental.make_early_stopping_hook, est, 1)


def run(rec):
  _stop_if(rec)
  est = _estimator(rec, 'at_checkpoint')
  est.train(common.input_fn(), steps=2)
  hook = rec.call('make_stop_at_checkpoint_step_hook', tf.estimator
                  .experimental.make_stop_at_checkpoint_step_hook, est, 2,
                  wait_after_file_check_secs=0)
  rec.call('stop at checkpoint: evaluate', est.evaluate, common.input_fn(),
           steps=3, hooks=[hook] if hook else None)
  est = _estimator(rec, 'in_memory')
  in_memory = rec.call('InMemoryEvaluatorHook', tf.estimator.experimental
                       .InMemoryEvaluatorHook, est, common.input_fn(),
                       steps=2, every_n_iter=2, name='mem')
  rec.call('InMemoryEvaluatorHook: train', est.train, common.input_fn(),
           steps=4, hooks=[in_memory] if in_memory else None)
  rec.files('InMemoryEvaluatorHook: model_dir', est.model_dir)
  rec.call('InMemoryEvaluatorHook in v1 namespace',
           tf.compat.v1.estimator.experimental.InMemoryEvaluatorHook, est,
           common.input_fn(), every_n_iter=0)
