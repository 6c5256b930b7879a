"""MultiHead: several named heads on one model (tf.estimator 2.15's).

The logits are one tensor split along its last dimension among the heads
in order (or a dict by head name); labels are a dict by head name. The
training loss is the sum of the heads' losses, each times its
`head_weights` entry; predictions are keyed by (head name, prediction key)
tuples; evaluation reports each head's metrics (their keys carry the head's
name) and `loss/<head name>`; exports serve the first head's default
signature as serving_default, each head's signatures as `<name>` (its
default) and `<name>/<signature>`, and `predict` with every head's
predictions as `<name>/<key>`.
"""

from typing import Any, Dict

import tensorflow as tf

from estimator_rt import export as export_lib
from estimator_rt.errors import UserInputError
from estimator_rt.head import base_head
from estimator_rt.head import keys as keys_lib
from estimator_rt.head import metrics as metrics_lib
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.spec import EstimatorSpec

_M = keys_lib.MetricKeys


def default_export_output(export_outputs, head_name):
  """The default signature of a head's `export_outputs`: its only one, or
  its serving_default (2.15's `_default_export_output`).

  Raises:
    UserInputError: (a ValueError) several and none is serving_default.
  """
  if len(export_outputs) == 1:
    return next(iter(export_outputs.values()))
  if keys_lib.DEFAULT_SERVING_KEY in export_outputs:
    return export_outputs[keys_lib.DEFAULT_SERVING_KEY]
  raise UserInputError(
      f'{head_name} did not specify default export_outputs. '
      f'Given: {export_outputs} Suggested fix: Use one of the heads in '
      f'tf.estimator, or include key {keys_lib.DEFAULT_SERVING_KEY} in '
      'export_outputs.')


def _no_op_train_fn(loss):
  del loss
  return tf.no_op()


class MultiHead(base_head.Head):
  """Several heads trained together; tf.estimator 2.15's signature.

  Args:
    heads: a list of heads, each with a distinct `name`.
    head_weights: a float per head, its loss's weight in the sum (all 1 when
      None).

  Raises:
    ValueError: no heads, a head without a name, or head_weights of another
      length than heads.
  """

  def __init__(self, heads, head_weights=None):
    if not heads:
      raise UserInputError(
          f'Must specify heads. Given: {heads}: give at least one head.')
    if head_weights and len(head_weights) != len(heads):
      raise UserInputError(
          'heads and head_weights must have the same size. Given '
          f'len(heads): {len(heads)}. Given len(head_weights): '
          f'{len(head_weights)}.')
    for head in heads:
      if head.name is None:
        raise UserInputError(
            f'All given heads must have name specified. Given: {head}: its '
            'metric keys, predictions and labels are named by it.')
    names = [head.name for head in heads]
    if len(set(names)) != len(names):
      raise UserInputError(f'heads: names {names} must be distinct.')
    self._heads = tuple(heads)
    self._head_weights = tuple(head_weights) if head_weights else ()
    self._logits_dimension = sum(head.logits_dimension for head in heads)

  @property
  def name(self) -> str:
    """The heads' names joined by '_'."""
    return '_'.join(head.name for head in self._heads)

  @property
  def logits_dimension(self) -> int:
    """The sum of the heads' logits dimensions."""
    return self._logits_dimension

  @property
  def loss_reduction(self) -> str:
    """The heads' common loss reduction (they must agree)."""
    reductions = [head.loss_reduction for head in self._heads]
    if len(set(reductions)) > 1:
      raise UserInputError(
          'The loss_reduction must be the same for different heads. Given: '
          f'{reductions}')
    return reductions[0]

  def _split_logits(self, logits) -> Dict[str, tf.Tensor]:
    """One logits tensor as a dict by head name: consecutive slices of
    the last dimension, each head's logits_dimension wide."""
    with tf.name_scope('split_logits'):
      logits = tf.convert_to_tensor(logits)
      widths = [head.logits_dimension for head in self._heads]
      last = logits.shape[-1] if logits.shape.rank else None
      if last is not None and last != sum(widths):
        raise UserInputError(
            f'Could not split logits of shape {logits.shape.as_list()!r} '
            'among the heads with individual logits dimensions: '
            f'{widths!r}. The last dimension of the logits tensor should '
            f'equal {sum(widths)} but is {last}.')
      parts = tf.split(logits, widths, axis=-1)
      return {head.name: part for head, part in zip(self._heads, parts)}

  def _check_logits_and_labels(self, logits, labels=None):
    names = [head.name for head in self._heads]
    if isinstance(logits, dict):
      missing = sorted(set(names) - set(logits))
      if missing:
        raise UserInputError(
            f'logits has missing values for head(s): {missing}')
      logits_by_head = logits
    else:
      logits_by_head = self._split_logits(logits)
    if labels is not None:
      if not isinstance(labels, dict):
        raise UserInputError(
            f'labels must be a dict. Given: {labels} (a dict by head '
            'name).')
      missing = sorted(set(names) - set(labels))
      if missing:
        raise UserInputError(
            f'labels has missing values for head(s): {missing}')
    return logits_by_head

  def _merged_loss(self, losses, regularization_losses):
    with tf.name_scope('merge_losses'):
      if self._head_weights:
        losses = [tf.math.multiply(loss, weight)
                  for loss, weight in zip(losses, self._head_weights)]
      loss = tf.math.add_n(list(losses))
      if regularization_losses is not None:
        loss += tf.math.add_n(regularization_losses)
      return loss

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    """The weighted sum of the heads' training losses, plus
    `regularization_losses` (which regularize the whole model: each head's
    own loss has none)."""
    logits_by_head = self._check_logits_and_labels(logits, labels)
    losses = [head.loss(labels[head.name], logits_by_head[head.name],
                        features=features, mode=mode)
              for head in self._heads]
    return self._merged_loss(losses, regularization_losses)

  def predictions(self, logits, keys=None):
    """Every head's predictions, keyed by (head name, prediction key).
    (`keys` is not used, as in 2.15.)"""
    del keys
    logits_by_head = self._check_logits_and_labels(logits)
    predictions = {}
    with tf.name_scope('merge_pred'):
      for head in self._heads:
        for key, value in head.predictions(logits_by_head[head.name]).items():
          predictions[(head.name, key)] = value
    return predictions

  def metrics(self, regularization_losses=None):
    """`loss/<head name>` for each head (its loss, the mean over batches),
    and regularization_loss when `regularization_losses` is given; each
    head's own metrics are added by `update_metrics`."""
    family = metrics_lib.family()
    metrics = {}
    if regularization_losses is not None:
      metrics[self._summary_key(_M.LOSS_REGULARIZATION)] = family.Mean(
          name=_M.LOSS_REGULARIZATION)
    with tf.name_scope('merge_eval'):
      for head in self._heads:
        key = f'{_M.LOSS}/{head.name}'
        metrics[key] = family.Mean(name=key)
    return metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    """Updates the loss metrics and adds each head's metrics, updated."""
    logits_by_head = self._check_logits_and_labels(logits, labels)
    if regularization_losses is not None:
      eval_metrics[self._summary_key(_M.LOSS_REGULARIZATION)].update_state(
          tf.math.add_n(regularization_losses))
    for head in self._heads:
      head_logits = logits_by_head[head.name]
      head_labels = labels[head.name]
      eval_metrics[f'{_M.LOSS}/{head.name}'].update_state(
          head.loss(head_labels, head_logits, features=features))
      eval_metrics.update(head.update_metrics(
          head.metrics(), features, head_logits, head_labels) or {})
    return eval_metrics

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None) -> EstimatorSpec:
    """The EstimatorSpec of `mode`; see `Head.create_estimator_spec`.

    `logits` is one tensor (split among the heads) or a dict by head name;
    `labels` a dict by head name; `regularization_losses` regularize the
    merged loss.
    """
    with tf.name_scope(self.name):
      logits_by_head = self._check_logits_and_labels(logits, labels)
      predictions = self.predictions(logits_by_head)
      if mode == ModeKeys.PREDICT:
        # The heads' own PREDICT specs give their export signatures.
        specs = [head.create_estimator_spec(
            features=features, mode=mode, logits=logits_by_head[head.name])
                 for head in self._heads]
        return EstimatorSpec(
            mode=ModeKeys.PREDICT, predictions=predictions,
            export_outputs=self._merge_export_outputs(specs))
      if labels is None:
        raise UserInputError(
            f'MultiHead.create_estimator_spec: labels are None in mode '
            f'{mode!r}; give a dict by head name.')
      if mode == ModeKeys.TRAIN and metrics_lib.in_graph_engine():
        # As 2.15 did: each head's own TRAIN spec (a no-op train op),
        # which writes its loss summary (loss/<name>) and takes the root
        # name scopes 'training', 'training_1', ...; the merged train op
        # is then built under the next one, where 2.15's checkpoints have
        # the optimizer's variables (e.g. training_2/SGD/learning_rate).
        for head in self._heads:
          head.create_estimator_spec(
              features=features, mode=mode,
              logits=logits_by_head[head.name], labels=labels[head.name],
              train_op_fn=_no_op_train_fn)
      loss = self.loss(labels, logits_by_head, features=features, mode=mode,
                       regularization_losses=regularization_losses)
      if mode == ModeKeys.EVAL:
        eval_metrics = self.update_metrics(
            self.metrics(regularization_losses=regularization_losses),
            features, logits_by_head, labels,
            regularization_losses=regularization_losses)
        return EstimatorSpec(
            mode=ModeKeys.EVAL, predictions=predictions, loss=loss,
            eval_metric_ops=metrics_lib.as_eval_metric_ops(eval_metrics))
      if mode != ModeKeys.TRAIN:
        raise UserInputError(f'mode={mode} unrecognized: give one of train, '
                             'eval, infer.')
      return self._train_spec(
          loss=loss, predictions=predictions, optimizer=optimizer,
          trainable_variables=trainable_variables, train_op_fn=train_op_fn,
          update_ops=update_ops, regularization_losses=regularization_losses)

  def _summary_key(self, key: str) -> str:
    # 2.15's MultiHead names its own keys after its (joined) name.
    return f'{key}/{self.name}'

  def _write_loss_summary(self, loss, regularization_losses,
                          mean_loss=None) -> None:
    # The merged loss under plain 'loss', as 2.15 wrote it (a MultiHead has
    # no mean loss: it is no v1 head).
    del mean_loss
    if not metrics_lib.in_graph_engine():
      return
    with tf.compat.v1.name_scope(''):
      tf.compat.v1.summary.scalar(_M.LOSS, loss)
      if regularization_losses is not None:
        tf.compat.v1.summary.scalar(_M.LOSS_REGULARIZATION,
                                    tf.math.add_n(regularization_losses))

  def _merge_export_outputs(self, specs) -> Dict[str, Any]:
    """serving_default: the first head's default signature; `<name>`: each
    head's default, `<name>/<signature>` its others; predict: every head's
    predict outputs as `<name>/<key>`."""
    default = default_export_output(specs[0].export_outputs,
                                    self._heads[0].name)
    outputs = {keys_lib.DEFAULT_SERVING_KEY: default}
    merged_predict = {}
    for head, spec in zip(self._heads, specs):
      for signature, output in spec.export_outputs.items():
        name = (head.name if signature == keys_lib.DEFAULT_SERVING_KEY
                else f'{head.name}/{signature}')
        outputs[name] = output
        if (signature == keys_lib.PREDICT_SERVING_KEY and
            isinstance(output, export_lib.PredictOutput)):
          for key, value in output.outputs.items():
            merged_predict[f'{head.name}/{key}'] = value
    outputs[keys_lib.PREDICT_SERVING_KEY] = export_lib.PredictOutput(
        merged_predict)
    return outputs
