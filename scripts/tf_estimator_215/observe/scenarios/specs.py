"""The spec tuples a program builds: EstimatorSpec in each mode (and what it
refuses), TrainSpec and EvalSpec (each argument's values),
WarmStartSettings, VocabInfo, and the SessionRun* tuples and context."""

import numpy as np
import tensorflow as tf

CANDIDATES = (1, 2.0, 0, -1, np.int64(3), None, '5', [], True)


def _estimator_specs(rec):
  spec = tf.estimator.EstimatorSpec
  modes = tf.estimator.ModeKeys
  with tf.Graph().as_default():
    loss = tf.constant(1.0)
    step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.assign_add(step, 1)
    pred = tf.constant([[1.0], [2.0]])
    rec.call('EstimatorSpec PREDICT', spec, modes.PREDICT, predictions=pred)
    rec.call('EstimatorSpec PREDICT dict', spec, modes.PREDICT,
             predictions={'p': pred})
    rec.call('EstimatorSpec PREDICT no predictions', spec, modes.PREDICT)
    rec.call('EstimatorSpec TRAIN', spec, modes.TRAIN, loss=loss,
             train_op=train_op)
    rec.call('EstimatorSpec TRAIN no train_op', spec, modes.TRAIN, loss=loss)
    rec.call('EstimatorSpec TRAIN no loss', spec, modes.TRAIN,
             train_op=train_op)
    rec.call('EstimatorSpec EVAL', spec, modes.EVAL, loss=loss,
             eval_metric_ops={'m': tf.compat.v1.metrics.mean(loss)})
    rec.call('EstimatorSpec EVAL metric not a pair', spec, modes.EVAL,
             loss=loss, eval_metric_ops={'m': loss})
    rec.call('EstimatorSpec loss of shape [2]', spec, modes.EVAL, loss=pred)
    rec.call('EstimatorSpec bad mode', spec, 'nope', loss=loss)
    rec.call('EstimatorSpec python float loss', spec, modes.EVAL, loss=1.0)
    rec.call('EstimatorSpec export_outputs not ExportOutput', spec,
             modes.PREDICT, predictions=pred, export_outputs={'a': pred})
    rec.call('EstimatorSpec hooks not hooks', spec, modes.TRAIN, loss=loss,
             train_op=train_op, training_hooks=[1])
    rec.call('EstimatorSpec _replace', lambda: spec(
        modes.TRAIN, loss=loss, train_op=train_op)._replace(loss=pred))


def _train_eval_specs(rec):
  fn = lambda: None  # pylint: disable=unnecessary-lambda-assignment
  rec.call('TrainSpec', tf.estimator.TrainSpec, fn, max_steps=5)
  rec.accepts('TrainSpec(max_steps=...)',
              lambda v: tf.estimator.TrainSpec(fn, max_steps=v), CANDIDATES)
  rec.accepts('TrainSpec(hooks=...)',
              lambda v: tf.estimator.TrainSpec(fn, hooks=v),
              (None, [], (), [1], [tf.estimator.StopAtStepHook(1)]),
              view=lambda s: len(s.hooks))
  rec.accepts('TrainSpec(input_fn=...)', tf.estimator.TrainSpec,
              (None, 1, fn))
  rec.call('EvalSpec', tf.estimator.EvalSpec, fn)
  for argument in ('steps', 'start_delay_secs', 'throttle_secs', 'name'):
    rec.accepts(f'EvalSpec({argument}=...)',
                lambda v, a=argument: tf.estimator.EvalSpec(fn, **{a: v}),
                CANDIDATES, view=lambda s, a=argument: getattr(s, a))
  exporter = tf.estimator.LatestExporter('e', lambda: None)
  rec.accepts('EvalSpec(exporters=...)',
              lambda v: tf.estimator.EvalSpec(fn, exporters=v),
              (None, exporter, [exporter], [exporter, exporter], [1]),
              view=lambda s: len(s.exporters))


def _session_run(rec):
  args = rec.call('SessionRunArgs', tf.estimator.SessionRunArgs, {'a': 1})
  rec.call('SessionRunArgs full', tf.estimator.SessionRunArgs, [1],
           feed_dict={}, options=None)
  rec.call('SessionRunValues', tf.estimator.SessionRunValues, results=1,
           options=None, run_metadata=None)
  context = rec.call('SessionRunContext', tf.estimator.SessionRunContext,
                     args, None)
  if context is not None:
    rec.value('SessionRunContext before request_stop', [
        context.original_args, context.session, context.stop_requested])
    rec.call('request_stop', context.request_stop)
    rec.value('stop_requested', context.stop_requested)


def run(rec):
  _estimator_specs(rec)
  _train_eval_specs(rec)
  _session_run(rec)
  rec.call('WarmStartSettings', tf.estimator.WarmStartSettings,
           rec.path('ckpt'))
  rec.call('WarmStartSettings full', tf.estimator.WarmStartSettings,
           rec.path('ckpt'), vars_to_warm_start=['w'],
           var_name_to_prev_var_name={'w': 'old_w'})
  rec.call('WarmStartSettings no checkpoint', tf.estimator.WarmStartSettings,
           None)
  rec.call('VocabInfo', tf.estimator.VocabInfo, 'new.txt', 3, 1, 'old.txt')
  rec.call('VocabInfo full', tf.estimator.VocabInfo, 'new.txt', 3, 1,
           'old.txt', old_vocab_size=2, axis=1)
