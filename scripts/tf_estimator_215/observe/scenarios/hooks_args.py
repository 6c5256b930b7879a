"""The hook classes' constructors: which arguments they take and refuse;
SecondOrStepTimer's methods; a SessionRunHook subclass calling the base
class's methods."""

import numpy as np
import tensorflow as tf


def _constructors(rec):
  rec.accepts('StopAtStepHook(num_steps=...)',
              lambda v: tf.estimator.StopAtStepHook(num_steps=v),
              (1, 2.0, 0, -1, np.int64(2), None, '1'))
  rec.call('StopAtStepHook both', tf.estimator.StopAtStepHook, 1, 1)
  rec.accepts('StepCounterHook(every_n_steps=...)',
              lambda v: tf.estimator.StepCounterHook(every_n_steps=v),
              (1, 2.0, 0, None, np.int64(3)))
  rec.call('StepCounterHook both', tf.estimator.StepCounterHook, 1, 1)
  rec.accepts('CheckpointSaverHook(save_steps=...)',
              lambda v: tf.estimator.CheckpointSaverHook(rec.tmp,
                                                         save_steps=v),
              (1, 2.0, 0, None, np.int64(3)))
  rec.call('CheckpointSaverHook both', tf.estimator.CheckpointSaverHook,
           rec.tmp, save_steps=1, save_secs=1)
  rec.accepts('SummarySaverHook(save_steps=...)',
              lambda v: tf.estimator.SummarySaverHook(
                  save_steps=v, output_dir=rec.tmp,
                  summary_op=tf.constant('')), (1, 0, None))
  rec.call('SummarySaverHook neither writer nor op',
           tf.estimator.SummarySaverHook, save_steps=1)
  rec.accepts('LoggingTensorHook(every_n_iter=...)',
              lambda v: tf.estimator.LoggingTensorHook(['a'],
                                                       every_n_iter=v),
              (1, 0, -1, 2.0, None))
  rec.call('LoggingTensorHook tensors a dict of names',
           tf.estimator.LoggingTensorHook, {'a': 'b'}, every_n_iter=1)
  rec.accepts('ProfilerHook(save_steps=...)',
              lambda v: tf.estimator.ProfilerHook(save_steps=v,
                                                  output_dir=rec.tmp),
              (1, None, 0))
  rec.accepts('GlobalStepWaiterHook(wait_until_step=...)',
              tf.estimator.GlobalStepWaiterHook, (0, 1, None, 1.5))
  rec.accepts('FeedFnHook(feed_fn=...)', tf.estimator.FeedFnHook,
              (None, 1, dict))
  rec.accepts('NanTensorHook(loss_tensor=...)', tf.estimator.NanTensorHook,
              (None, 1.0))
  rec.accepts('FinalOpsHook(final_ops=...)', lambda v: type(
      tf.estimator.FinalOpsHook(v).final_ops_values).__name__,
              (None, [], {}, 1))


def _timer(rec):
  timer = tf.estimator.SecondOrStepTimer(every_steps=3)
  rec.value('last_triggered_step', timer.last_triggered_step())
  for step in (0, 1, 3, 4):
    rec.call(f'should_trigger_for_step({step})',
             timer.should_trigger_for_step, step)
    rec.call(f'update_last_triggered_step({step})',
             timer.update_last_triggered_step, step, exact=False)
  rec.value('last_triggered_step after', timer.last_triggered_step())
  rec.call('reset', timer.reset)
  rec.value('last_triggered_step after reset', timer.last_triggered_step())
  rec.call('SecondOrStepTimer both', tf.estimator.SecondOrStepTimer, 1, 1)
  rec.call('SecondOrStepTimer neither', tf.estimator.SecondOrStepTimer)
  rec.call('SecondOrStepTimer every_secs', lambda: tf.estimator
           .SecondOrStepTimer(every_secs=100).should_trigger_for_step(1))


class BaseHook(tf.estimator.SessionRunHook):
  """A hook that leaves every call to SessionRunHook's own methods."""


def run(rec):
  _constructors(rec)
  _timer(rec)
  hook = BaseHook()
  rec.call('SessionRunHook.begin', hook.begin)
  rec.call('SessionRunHook.after_create_session', hook.after_create_session,
           None, None)
  rec.call('SessionRunHook.before_run', hook.before_run, None)
  rec.call('SessionRunHook.after_run', hook.after_run, None, None)
  rec.call('SessionRunHook.end', hook.end, None)
  listener = tf.estimator.CheckpointSaverListener()
  for name, args in (('begin', ()), ('before_save', (None, 1)),
                     ('after_save', (None, 1)), ('end', (None, 1))):
    rec.call(f'CheckpointSaverListener.{name}', getattr(listener, name),
             *args)
