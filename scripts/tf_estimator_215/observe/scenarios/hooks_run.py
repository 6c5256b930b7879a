"""Each hook class run in a train, as programs use them: what it makes
training do (steps, stops, files, log lines) and what it returns."""

import numpy as np
import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def _model_fn(features, labels, mode, params):
  """common.tf1_model_fn, plus the training hooks `params['hooks'](loss)`
  returns (hooks that need the model's tensors)."""
  spec = common.tf1_model_fn(features, labels, mode, params, None)
  if mode == tf.estimator.ModeKeys.TRAIN and 'hooks' in params:
    spec = spec._replace(training_hooks=params['hooks'](spec.loss))
  return spec


def _train(rec, label, hooks=None, steps=4, model_hooks=None, **params):
  """Trains a fresh estimator `steps` steps with the hooks `hooks()`
  makes (made in the recorded call: some refuse eager execution); records
  what train returned, the step reached and the model_dir's files."""
  if model_hooks:
    params['hooks'] = model_hooks
  est = tf.estimator.Estimator(
      _model_fn, rec.path(label.replace(' ', '_')), params=params,
      config=common.run_config(None, save_summary_steps=2))
  rec.call(f'{label}: train', lambda: est.train(
      common.input_fn(), steps=steps, hooks=hooks() if hooks else None))
  rec.call(f'{label}: global_step', est.get_variable_value, 'global_step')
  rec.files(f'{label}: model_dir', est.model_dir)
  return est


def _tensor_hooks(rec):
  final = []

  def final_ops(loss):
    final.append(tf.estimator.FinalOpsHook({'loss': loss, 'two': tf.constant(
        2)}))
    return final
  _train(rec, 'FinalOpsHook', model_hooks=final_ops)
  rec.value('final_ops_values', final[0].final_ops_values, exact=False)
  _train(rec, 'LoggingTensorHook', model_hooks=lambda loss: [
      tf.estimator.LoggingTensorHook({'loss': loss}, every_n_iter=2),
      tf.estimator.LoggingTensorHook([loss], every_n_secs=100, at_end=True,
                                     formatter=lambda values: 'formatted')])
  _train(rec, 'NanTensorHook', model_hooks=lambda loss: [
      tf.estimator.NanTensorHook(loss * np.nan)])
  try:
    _train(rec, 'NanTensorHook caught', model_hooks=lambda loss: [
        tf.estimator.NanTensorHook(loss * np.nan)]).train(
            common.input_fn(), steps=1)
    rec.value('NanLossDuringTrainingError caught', False)
  except tf.estimator.NanLossDuringTrainingError as error:
    rec.value('NanLossDuringTrainingError caught', [error, str(error)])
  _train(rec, 'NanTensorHook no fail', model_hooks=lambda loss: [
      tf.estimator.NanTensorHook(loss * np.nan, fail_on_nan_loss=False)])

  def feed(loss):
    extra = tf.compat.v1.placeholder_with_default(0.0, [], name='extra')
    tf.compat.v1.add_to_collection('fed', extra)
    return [tf.estimator.FeedFnHook(lambda: {extra: 1.0})]
  _train(rec, 'FeedFnHook', model_hooks=feed)


def run(rec):
  _tensor_hooks(rec)
  _train(rec, 'StopAtStepHook num_steps', hooks=lambda: [
      tf.estimator.StopAtStepHook(num_steps=2)], steps=None)
  _train(rec, 'StopAtStepHook last_step', hooks=lambda: [
      tf.estimator.StopAtStepHook(last_step=3)], steps=None)
  _train(rec, 'StepCounterHook', hooks=lambda: [tf.estimator.StepCounterHook(
      every_n_steps=1, output_dir=rec.path('counter'))])
  rec.files('StepCounterHook output_dir', rec.path('counter'))
  _train(rec, 'SummarySaverHook', model_hooks=lambda loss: [
      tf.estimator.SummarySaverHook(
          save_steps=1, output_dir=rec.path('summaries'),
          summary_op=tf.compat.v1.summary.merge_all())], steps=3)
  rec.files('SummarySaverHook output_dir', rec.path('summaries'))
  listener = common.RecordingListener()
  _train(rec, 'CheckpointSaverHook', hooks=lambda: [
      tf.estimator.CheckpointSaverHook(rec.path('saver'), save_steps=2,
                                       listeners=[listener])])
  rec.raw('CheckpointSaverHook listener calls', listener.calls)
  rec.files('CheckpointSaverHook dir', rec.path('saver'))
  _train(rec, 'GlobalStepWaiterHook', hooks=lambda: [
      tf.estimator.GlobalStepWaiterHook(0)])
  _train(rec, 'ProfilerHook', hooks=lambda: [tf.estimator.ProfilerHook(
      save_steps=2, output_dir=rec.path('profile'))])
  rec.value('ProfilerHook files', sorted(
      tf.io.gfile.listdir(rec.path('profile')))
            if tf.io.gfile.exists(rec.path('profile')) else None)
  stopper = StoppingListener()
  est = tf.estimator.Estimator(common.tf1_model_fn, rec.path('stopper'),
                               params={}, config=common.run_config(
                                   None, save_checkpoints_steps=2))
  rec.call('saving listener returning True: train', est.train,
           common.input_fn(), steps=6, saving_listeners=[stopper])
  rec.raw('saving listener returning True: calls', stopper.calls)
  rec.call('saving listener returning True: global_step',
           est.get_variable_value, 'global_step')


class StoppingListener(common.RecordingListener):
  """Asks training to stop after the second save (returns True)."""

  def after_save(self, session, global_step_value):
    super().after_save(session, global_step_value)
    return global_step_value >= 2
