"""MultiLabelHead: not provided by estimator_rt yet.

tf.estimator 2.15's MultiLabelHead (independent sigmoid per class, with
per-class metrics) resolves, keeps 2.15's signature, and refuses in one
line when constructed: what it computes (its keys and metric values) is not
yet written and checked against 2.15 here.
"""

from estimator_rt.errors import UserInputError

WHY = ('MultiLabelHead is not supported by estimator_rt yet (see the '
       'README\'s canned estimators section); write the sigmoid loss in a '
       'model_fn, or use BinaryClassHead per label')


class MultiLabelHead:
  """tf.estimator 2.15's MultiLabelHead signature; refuses (see above)."""

  not_yet = WHY

  def __init__(self, n_classes, weight_column=None, thresholds=None,
               label_vocabulary=None,
               loss_reduction='sum_over_batch_size', loss_fn=None,
               classes_for_class_based_metrics=None, name=None):
    del (n_classes, weight_column, thresholds, label_vocabulary,
         loss_reduction, loss_fn, classes_for_class_based_metrics, name)
    raise UserInputError(f'{WHY}.')
