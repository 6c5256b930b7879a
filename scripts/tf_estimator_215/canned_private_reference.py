r"""tf.estimator 2.15's private canned helpers that libraries call (the v1
heads' protocol and metric helpers, the model_fns with 2.15's signatures),
run on fixed data: the figures estimator_rt must reproduce.

    .venv-tf215/bin/python scripts/tf_estimator_215/canned_private_reference.py

writes tests/data/tf_estimator_215/canned_private.json: for each case of
CASES, the numbers it gives on tf.estimator 2.15 (TF 2.15.1). The same
functions run here in tests/test_canned_private_names.py, through the
compatibility layer (the `tensorflow_estimator.python.estimator` paths).

Each case builds a graph and runs it in a session: a v1 head's evaluation
metrics (with a threshold and example weights) and its unreduced-loss
reduction NONE; the v1 metric helpers (`_auc`, `_indicator_labels_mean`,
...); and TRAIN_STEPS steps of the private model_fns (`_linear_model_fn`,
`_linear_model_fn_v2`, `_baseline_model_fn`, `_baseline_model_fn_v2`,
`_dnn_model_fn`, `_dnn_linear_combined_model_fn`) with the loss of each
step. The DNN's variables are set to fixed values by name after they are
made (its initializers are random), so its numbers also check that its
variables have 2.15's names.
"""

import json
import os

import numpy as np
import tensorflow as tf

TRAIN_STEPS = 3
OUT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))), 'tests', 'data', 'tf_estimator_215',
    'canned_private.json')

X = np.array([[1.], [2.], [3.], [4.]], np.float32)
REGRESSION_LABELS = np.array([[1.], [3.], [2.], [5.]], np.float32)
BINARY_LABELS = np.array([[1], [0], [1], [1]], np.int64)
CLASS_LABELS = np.array([[2], [0], [1], [2]], np.int64)
WEIGHTS = np.array([[1.], [2.], [1.], [.5]], np.float32)
LOGITS = np.array([[.5], [-1.], [2.], [-.3]], np.float32)
CLASS_LOGITS = np.array([[.1, .2, .7], [1., 0., -1.], [0., .5, 0.],
                         [.3, .3, .9]], np.float32)


def _modules():
  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import baseline
  from tensorflow_estimator.python.estimator.canned import dnn
  from tensorflow_estimator.python.estimator.canned import dnn_linear_combined
  from tensorflow_estimator.python.estimator.canned import head
  from tensorflow_estimator.python.estimator.canned import linear
  from tensorflow_estimator.python.estimator.head import regression_head
  # pylint: enable=g-import-not-at-top
  return dict(baseline=baseline, dnn=dnn, combined=dnn_linear_combined,
              head=head, linear=linear, regression_head=regression_head)


def _as_list(value):
  return np.asarray(value, np.float64).round(6).tolist()


def _session_values(fetches, updates=()):
  with tf.compat.v1.Session() as session:
    session.run([tf.compat.v1.global_variables_initializer(),
                 tf.compat.v1.local_variables_initializer(),
                 tf.compat.v1.tables_initializer()])
    if updates:
      session.run(list(updates))
    return session.run(fetches)


def v1_head_eval():
  """A v1 binary head's EVAL spec (threshold 0.3, weights 'w'): its loss
  and every metric's value after one update."""
  m = _modules()
  with tf.Graph().as_default():
    head = m['head']._binary_logistic_head_with_sigmoid_cross_entropy_loss(  # pylint: disable=protected-access
        weight_column='w', thresholds=[0.3])
    spec = head.create_estimator_spec(
        features={'w': tf.constant(WEIGHTS)}, mode='eval',
        logits=tf.constant(LOGITS), labels=tf.constant(BINARY_LABELS))
    values = {key: value for key, (value, _) in spec.eval_metric_ops.items()}
    values['loss'] = spec.loss
    updates = [op for _, op in spec.eval_metric_ops.values()]
    return {key: _as_list(value)
            for key, value in _session_values(values, updates).items()}


def v1_head_none_reduction():
  """A v1 multi-class head with loss_reduction NONE: create_loss's
  training loss (one per example), its unreduced loss and weights."""
  m = _modules()
  with tf.Graph().as_default():
    head = m['head']._MultiClassHeadWithSoftmaxCrossEntropyLoss(  # pylint: disable=protected-access
        3, weight_column='w',
        loss_reduction=tf.compat.v1.losses.Reduction.NONE)
    spec = head.create_loss(features={'w': tf.constant(WEIGHTS)},
                            mode='train', logits=tf.constant(CLASS_LOGITS),
                            labels=tf.constant(CLASS_LABELS))
    training, unreduced = _session_values(
        [spec.training_loss, spec.unreduced_loss])
    return {'training_loss': _as_list(training),
            'unreduced_loss': _as_list(unreduced)}


def v1_metric_helpers():
  """The v1 metric helpers on fixed predictions, labels and weights."""
  m = _modules()
  head = m['head']
  # pylint: disable=protected-access
  with tf.Graph().as_default():
    labels = tf.constant(BINARY_LABELS)
    predictions = tf.math.sigmoid(tf.constant(LOGITS))
    weights = tf.constant(WEIGHTS)
    labels_mean = head._indicator_labels_mean(labels, weights=weights)
    pairs = {
        'labels_mean': labels_mean,
        'accuracy_baseline': head._accuracy_baseline(labels_mean),
        'predictions_mean': head._predictions_mean(predictions,
                                                   weights=weights),
        'auc': head._auc(labels, predictions, weights=weights),
        'auc_pr': head._auc(labels, predictions, weights=weights,
                            curve='PR'),
        'accuracy_at_threshold': head._accuracy_at_threshold(
            labels, predictions, weights, 0.5),
        'precision_at_threshold': head._precision_at_threshold(
            labels, predictions, weights, 0.5),
        'recall_at_threshold': head._recall_at_threshold(
            labels, predictions, weights, 0.5),
    }
    # pylint: enable=protected-access
    values = {key: value for key, (value, _) in pairs.items()}
    updates = [op for _, op in pairs.values()]
    return {key: _as_list(value)
            for key, value in _session_values(values, updates).items()}


def _fixed_values(variables):
  """name -> a fixed value of each variable's shape (by its name)."""
  return {v.op.name: np.linspace(-.5, .5, int(np.prod(v.shape))).reshape(
      v.shape).astype(np.float32) for v in variables}


def _train(model_fn, labels, *, fix_variables=False):
  """TRAIN_STEPS steps of `model_fn(features, labels, mode)` on X: the loss
  before each step, and the trainable variables' names after the last."""
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    features = {'x': tf.constant(X)}
    spec = model_fn(features, tf.constant(labels), 'train')
    trainable = tf.compat.v1.trainable_variables()
    with tf.compat.v1.Session() as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.local_variables_initializer()])
      if fix_variables:
        for variable in trainable:
          variable.load(_fixed_values([variable])[variable.op.name], session)
      losses = []
      for _ in range(TRAIN_STEPS):
        loss, _ = session.run([spec.loss, spec.train_op])
        losses.append(float(loss))
      step = session.run(tf.compat.v1.train.get_global_step())
    return {'losses': _as_list(losses), 'global_step': int(step),
            'variables': sorted(v.op.name for v in trainable)}


def _columns():
  return [tf.feature_column.numeric_column('x')]


def linear_model_fn():
  m = _modules()
  head = m['head']._regression_head()  # pylint: disable=protected-access
  return _train(lambda f, l, mode: m['linear']._linear_model_fn(  # pylint: disable=protected-access
      f, l, mode, head, _columns(),
      tf.compat.v1.train.GradientDescentOptimizer(0.1), None, None),
                REGRESSION_LABELS)


def linear_model_fn_v2():
  m = _modules()
  head = m['regression_head'].RegressionHead()
  return _train(lambda f, l, mode: m['linear']._linear_model_fn_v2(  # pylint: disable=protected-access
      f, l, mode, head, _columns(), 'SGD', None), REGRESSION_LABELS)


def baseline_model_fn():
  m = _modules()
  head = m['head']._regression_head()  # pylint: disable=protected-access
  return _train(lambda f, l, mode: m['baseline']._baseline_model_fn(  # pylint: disable=protected-access
      f, l, mode, head, 'SGD'), REGRESSION_LABELS)


def baseline_model_fn_v2():
  m = _modules()
  head = m['regression_head'].RegressionHead()
  return _train(lambda f, l, mode: m['baseline']._baseline_model_fn_v2(  # pylint: disable=protected-access
      f, l, mode, head, 'SGD'), REGRESSION_LABELS)


def dnn_model_fn():
  m = _modules()
  head = m['head']._binary_logistic_head_with_sigmoid_cross_entropy_loss()  # pylint: disable=protected-access
  return _train(lambda f, l, mode: m['dnn']._dnn_model_fn(  # pylint: disable=protected-access
      f, l, mode, head, [3, 2], _columns(), optimizer='SGD'),
                BINARY_LABELS, fix_variables=True)


def dnn_linear_combined_model_fn():
  m = _modules()
  head = m['head']._regression_head()  # pylint: disable=protected-access
  return _train(
      lambda f, l, mode: m['combined']._dnn_linear_combined_model_fn(  # pylint: disable=protected-access
          f, l, mode, head, linear_feature_columns=_columns(),
          linear_optimizer='SGD', dnn_feature_columns=_columns(),
          dnn_optimizer='SGD', dnn_hidden_units=[2]),
      REGRESSION_LABELS, fix_variables=True)


def saved_model_helpers():
  """saved_model_estimator's helpers on a hand-made EVAL signature: the
  input map's keys, the metrics and predictions read from its outputs, and
  the first line of each refusal."""
  # pylint: disable=g-import-not-at-top,protected-access
  from tensorflow_estimator.python.estimator.canned import saved_model_estimator as sme
  # pylint: enable=g-import-not-at-top
  with tf.Graph().as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None, 1], name='x')
    y = tf.compat.v1.placeholder(tf.int64, [None, 1], name='y')
    signature = tf.compat.v1.saved_model.signature_def_utils.build_signature_def(
        inputs={'x': tf.compat.v1.saved_model.utils.build_tensor_info(x),
                'label': tf.compat.v1.saved_model.utils.build_tensor_info(y)},
        outputs={}, method_name='tensorflow/supervised/eval')
    features = tf.zeros([2, 1])
    labels = tf.zeros([2, 1], tf.int64)
    mapping = sme._generate_input_map(signature, {'x': features}, labels)
    refusals = []
    for bad in ({'x': tf.zeros([2, 1], tf.int32)}, {'z': features}):
      try:
        sme._generate_input_map(signature, bad, labels)
      except ValueError as e:
        refusals.append(str(e).split('\n')[0][:40])
    value, update, loss, prediction = (tf.constant(float(i))
                                       for i in range(4))
    outputs = {'metrics/auc/a/value': value, 'metrics/auc/a/update_op': update,
               'metrics/lonely/value': value, 'loss': loss,
               'predictions/p': prediction, 'other': prediction}
    extracted = sme._validate_and_extract_outputs(
        'eval', outputs, 'tensorflow/supervised/eval')
    try:
      sme._validate_and_extract_outputs('train', outputs,
                                        'tensorflow/supervised/eval')
    except RuntimeError as e:
      refusals.append(str(e).split('\n')[0])
    return {'input_map': sorted(mapping),
            'mapped_features': mapping['x'] is features,
            'loss_is_loss': extracted[0] is loss,
            'predictions': sorted(extracted[1]),
            'metrics': {k: [v[0] is value, v[1] is update]
                        for k, v in extracted[2].items()},
            'predict': sorted(sme._validate_and_extract_outputs(
                'infer', outputs, 'x')[1]),
            'refusals': refusals}


CASES = {f.__name__: f for f in (
    saved_model_helpers,
    v1_head_eval, v1_head_none_reduction, v1_metric_helpers,
    linear_model_fn, linear_model_fn_v2, baseline_model_fn,
    baseline_model_fn_v2, dnn_model_fn, dnn_linear_combined_model_fn)}


def main():
  figures = {'versions': {'tensorflow': tf.__version__}}
  for name, case in CASES.items():
    figures[name] = case()
    print(name, figures[name])
  with open(OUT, 'w') as f:
    json.dump(figures, f, indent=1, sort_keys=True)
    f.write('\n')


if __name__ == '__main__':
  main()
