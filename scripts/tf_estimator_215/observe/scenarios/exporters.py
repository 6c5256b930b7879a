"""Exporters called directly (`export`, `name`), a program's own Exporter
subclass, BestExporter's comparison and garbage collection, and the
arguments they refuse."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


class ListingExporter(tf.estimator.Exporter):
  """An exporter of a program's own: notes what it is given."""

  def __init__(self):
    self.calls = []

  @property
  def name(self):
    return 'listing'

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    self.calls.append([export_path, checkpoint_path, sorted(eval_result),
                       is_the_final_export])
    return export_path


def _trained(rec):
  est = tf.estimator.Estimator(common.tf1_model_fn, rec.path('model'),
                               params={}, config=common.run_config(None))
  est.train(common.input_fn(), steps=3)
  return est


def run(rec):
  est = _trained(rec)
  ckpt = est.latest_checkpoint()
  results = est.evaluate(common.input_fn(), steps=1)
  receiver = common.serving_input_receiver_fn
  listing = ListingExporter()
  for exporter in (tf.estimator.LatestExporter('latest', receiver,
                                               exports_to_keep=1),
                   tf.estimator.FinalExporter('final', receiver,
                                              as_text=True),
                   tf.estimator.BestExporter('best', receiver),
                   listing):
    rec.value(f'{exporter.name}: name', exporter.name)
    for n in range(2):
      rec.call(f'{exporter.name}: export {n}', exporter.export, est,
               rec.path('exports', exporter.name), ckpt, results,
               n == 1)
    rec.files(f'{exporter.name}: exports', rec.path('exports',
                                                    exporter.name))
  rec.value('ListingExporter calls', listing.calls)
  best = tf.estimator.BestExporter(
      'best2', receiver, compare_fn=lambda best_eval_result,
      current_eval_result: True, exports_to_keep=None)
  rec.call('BestExporter compare_fn True', best.export, est,
           rec.path('exports', 'best2'), ckpt, results, False)
  rec.call('BestExporter eval_result None', best.export, est,
           rec.path('exports', 'best2'), ckpt, None, False)
  rec.call('LatestExporter exports_to_keep=0', tf.estimator.LatestExporter,
           'l', receiver, exports_to_keep=0)
  rec.call('BestExporter compare_fn None', tf.estimator.BestExporter, 'b',
           receiver, compare_fn=None)
  rec.call('BestExporter compare_fn of one argument',
           tf.estimator.BestExporter, 'b', receiver, compare_fn=lambda a: a)
  rec.call('Exporter() abstract', tf.estimator.Exporter)
