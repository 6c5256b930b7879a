"""tf.estimator.export: the receivers, the receiver_fn builders, the export
outputs and their signature defs, a program's own ExportOutput."""

import tensorflow as tf


class ListOutput(tf.estimator.export.ExportOutput):
  """A program's own ExportOutput."""

  def as_signature_def(self, receiver_tensors):
    return super().as_signature_def(receiver_tensors)


def _signature(sig) -> dict:
  return {'method': sig.method_name, 'inputs': sorted(sig.inputs),
          'outputs': sorted(sig.outputs)}


def _receivers(rec):
  export = tf.estimator.export
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
  rec.call('ServingInputReceiver', export.ServingInputReceiver, {'x': x},
           {'x': x})
  rec.call('ServingInputReceiver tensor features',
           export.ServingInputReceiver, x, x)
  rec.call('ServingInputReceiver receiver not a tensor',
           export.ServingInputReceiver, {'x': x}, {'x': 1})
  rec.call('ServingInputReceiver alternatives', export.ServingInputReceiver,
           {'x': x}, {'x': x}, receiver_tensors_alternatives={'alt': x})
  rec.call('TensorServingInputReceiver', export.TensorServingInputReceiver,
           x, {'x': x})
  rec.call('TensorServingInputReceiver dict features',
           export.TensorServingInputReceiver, {'x': x}, x)
  spec = {'x': tf.io.FixedLenFeature([2], tf.float32)}
  fn = rec.call('build_parsing_serving_input_receiver_fn',
                export.build_parsing_serving_input_receiver_fn, spec,
                default_batch_size=3)
  if fn is not None:
    rec.call('parsing receiver', fn)
  fn = rec.call('build_raw_serving_input_receiver_fn',
                export.build_raw_serving_input_receiver_fn,
                {'x': tf.constant([[1.0, 2.0]])})
  if fn is not None:
    rec.call('raw receiver', fn)
  fn = rec.call('build_raw_supervised_input_receiver_fn',
                tf.estimator.experimental
                .build_raw_supervised_input_receiver_fn,
                {'x': tf.constant([[1.0, 2.0]])}, tf.constant([[1.0]]))
  if fn is not None:
    rec.call('supervised receiver', fn)


def _outputs(rec):
  export = tf.estimator.export
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x2')
  receivers = {'x': x}
  scores = tf.constant([[0.1, 0.9]])
  classes = tf.constant([['a', 'b']])
  made = {
      'ClassificationOutput': lambda: export.ClassificationOutput(
          scores=scores, classes=classes),
      'ClassificationOutput scores only': lambda: export
                                          .ClassificationOutput(scores),
      'RegressionOutput': lambda: export.RegressionOutput(tf.constant([1.0])),
      'PredictOutput': lambda: export.PredictOutput({'p': scores}),
      'PredictOutput a tensor': lambda: export.PredictOutput(scores),
      'EvalOutput': lambda: export.EvalOutput(
          loss=tf.constant(1.0), predictions={'p': scores},
          metrics={'m': tf.compat.v1.metrics.mean(tf.constant(1.0))}),
  }
  for label, make in made.items():
    output = rec.call(label, make)
    if output is None:
      continue
    for attribute in ('scores', 'classes', 'value', 'outputs', 'loss',
                      'predictions', 'metrics'):
      if hasattr(output, attribute):
        rec.value(f'{label}.{attribute}', getattr(output, attribute))
    rec.call(f'{label}.as_signature_def', lambda o=output: _signature(
        o.as_signature_def(receivers)))
  rec.call('ClassificationOutput nothing', export.ClassificationOutput)
  rec.call('ClassificationOutput int classes', export.ClassificationOutput,
           classes=tf.constant([[1]]))
  rec.call('RegressionOutput int', export.RegressionOutput, tf.constant([1]))
  rec.call('PredictOutput non-string key', export.PredictOutput,
           {1: scores})
  rec.call('ExportOutput subclass', lambda: ListOutput().as_signature_def(
      receivers))


def run(rec):
  with tf.Graph().as_default():
    _receivers(rec)
    _outputs(rec)
