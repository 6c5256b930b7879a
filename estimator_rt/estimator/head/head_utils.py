"""`binary_or_multi_class_head`, the helper 2.15's canned classifiers used
to pick their head (tf.estimator 2.15's `head/head_utils.py`)."""

from estimator_rt.estimator.head import binary_class_head
from estimator_rt.estimator.head import multi_class_head


def binary_or_multi_class_head(n_classes, weight_column, label_vocabulary,
                               loss_reduction):
  """The head of an `n_classes` classifier.

  Args:
    n_classes: the number of classes: 2 gives a BinaryClassHead (one logit,
      sigmoid cross-entropy), more a MultiClassHead (softmax); fewer is
      refused by MultiClassHead, naming `n_classes`.
    weight_column: the key (or numeric_column) of the example weights.
    label_vocabulary: the label strings, or None for integer labels.
    loss_reduction: 'sum_over_batch_size', 'sum' or 'auto'.

  Returns:
    The head, made with the arguments given.
  """
  if n_classes == 2:
    return binary_class_head.BinaryClassHead(
        weight_column=weight_column, label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction)
  return multi_class_head.MultiClassHead(
      n_classes, weight_column=weight_column,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
