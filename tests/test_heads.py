"""tf.estimator 2.15's heads (estimator_rt.estimator.head) against tf.estimator 2.15.

Each case of scripts/tf_estimator_215/heads_reference.py (a custom model_fn:
one Dense layer with fixed initial weights, the head's
create_estimator_spec with an SGD optimizer, 5 steps on 32 generated
examples) trains, evaluates, predicts and exports here:

  - in the graph engine with the same model_fn as under 2.15 (Keras 2
    layer and legacy SGD, `optimizer.iterations` the global step): every
    case;
  - in the eager engine with its TF2 form (Keras 3 layer and SGD, the
    runtime applying the optimizer): the cases of EAGER_CASES;
  - in the graph engine with 2.15's other training paths
    (TRAIN_OP_FN_CASES: a tf.compat.v1.layers.dense layer and train_op_fn
    with tf.compat.v1.train.GradientDescentOptimizer; a Keras 2 Adagrad
    whose slots are named training/Adagrad/...).

Metrics must have 2.15's keys and values (1e-5), the first prediction its
keys and values, the graph engine's checkpoint 2.15's variable names, the
export 2.15's signatures; every export is served in one fresh process.
"""

import inspect
import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import estimator_rt as ert
from estimator_rt.estimator import head as head_lib
from estimator_rt.compat import namespaces
from estimator_rt.core.errors import ModelFnError
from estimator_rt.core.errors import UserInputError
from scripts.tf_estimator_215 import heads_reference as programs
from conftest import REPO_ROOT
from conftest import run_python

TOLERANCE = 1e-5
EAGER_CASES = ('binary', 'multiclass', 'regression', 'multilabel',
               'multihead')

# tf.estimator 2.15's figures, printed by
#   .venv-tf215/bin/python scripts/tf_estimator_215/heads_reference.py
# (TensorFlow 2.15.1, tensorflow-estimator 2.15.0); 'prediction' is the
# first example's, 'signatures' maps each signature to (its input keys,
# its output keys), 'served' what two signatures return for the first two
# examples.
REFERENCE = {'binary': {'metrics': {'accuracy': 0.5138153,
                        'accuracy/positive_threshold_0.3': 0.5028621,
                        'accuracy/positive_threshold_0.6': 0.4971379,
                        'accuracy_baseline': 0.5028621,
                        'auc': 0.500928,
                        'auc_precision_recall': 0.4591615,
                        'average_loss': 0.6993864,
                        'label/mean': 0.5028621,
                        'loss': 0.6384765,
                        'precision': 0.516513,
                        'precision/positive_threshold_0.3': 0.5028621,
                        'precision/positive_threshold_0.6': 0.0,
                        'prediction/mean': 0.4998898,
                        'recall': 0.5186852,
                        'recall/positive_threshold_0.3': 1.0,
                        'recall/positive_threshold_0.6': 0.0},
            'prediction': {'all_class_ids': [0.0, 1.0],
                           'all_classes': ['0', '1'],
                           'class_ids': [1.0],
                           'classes': ['1'],
                           'logistic': [0.513686],
                           'logits': [0.054757],
                           'probabilities': [0.486314, 0.513686]},
            'served': {'predict': {'all_class_ids': [[0.0, 1.0], [0.0, 1.0]],
                                   'all_classes': [['0', '1'], ['0', '1']],
                                   'class_ids': [[1.0], [0.0]],
                                   'classes': [['1'], ['0']],
                                   'logistic': [[0.513686], [0.453892]],
                                   'logits': [[0.054757], [-0.184957]],
                                   'probabilities': [[0.486314, 0.513686],
                                                     [0.546108, 0.453892]]},
                       'serving_default': {'classes': [['0', '1'],
                                                       ['0', '1']],
                                           'scores': [[0.486314, 0.513686],
                                                      [0.546108, 0.453892]]}},
            'signatures': {'classification': (['inputs'],
                                              ['classes', 'scores']),
                           'predict': (['examples'],
                                       ['all_class_ids', 'all_classes',
                                        'class_ids', 'classes', 'logistic',
                                        'logits', 'probabilities']),
                           'regression': (['inputs'], ['outputs']),
                           'serving_default': (['inputs'],
                                               ['classes', 'scores'])},
            'variables': ['global_step', 'logits/bias', 'logits/kernel',
                          'training/SGD/decay', 'training/SGD/learning_rate',
                          'training/SGD/momentum']},
 'logistic': {'metrics': {'average_loss': 0.7120928,
                          'label/mean': 0.5414053,
                          'loss': 0.7120928,
                          'prediction/mean': 0.5050293},
              'prediction': {'logits': [-0.010308],
                             'predictions': [0.497423]},
              'served': {'predict': {'logits': [[-0.010308], [-0.077716]],
                                     'predictions': [[0.497423], [0.480581]]},
                         'serving_default': {'outputs': [[0.497423],
                                                         [0.480581]]}},
              'signatures': {'predict': (['examples'],
                                         ['logits', 'predictions']),
                             'regression': (['inputs'], ['outputs']),
                             'serving_default': (['inputs'], ['outputs'])},
              'variables': ['global_step', 'logits/bias', 'logits/kernel',
                            'training/SGD/decay',
                            'training/SGD/learning_rate',
                            'training/SGD/momentum']},
 'multiclass': {'metrics': {'accuracy': 0.6875,
                            'average_loss': 0.9031815,
                            'loss': 0.9031815},
                'prediction': {'all_class_ids': [0.0, 1.0, 2.0],
                               'all_classes': ['a', 'b', 'c'],
                               'class_ids': [0.0],
                               'classes': ['a'],
                               'logits': [0.12442, -0.577431, -0.141493],
                               'probabilities': [0.442053, 0.219111,
                                                 0.338836]},
                'served': {'predict': {'all_class_ids': [[0.0, 1.0, 2.0],
                                                         [0.0, 1.0, 2.0]],
                                       'all_classes': [['a', 'b', 'c'],
                                                       ['a', 'b', 'c']],
                                       'class_ids': [[0.0], [1.0]],
                                       'classes': [['a'], ['b']],
                                       'logits': [[0.12442, -0.577431,
                                                   -0.141493],
                                                  [-0.13186, 0.446138,
                                                   0.098078]],
                                       'probabilities': [[0.442053, 0.219111,
                                                          0.338836],
                                                         [0.247464, 0.441097,
                                                          0.311439]]},
                           'serving_default': {'classes': [['a', 'b', 'c'],
                                                           ['a', 'b', 'c']],
                                               'scores': [[0.442053, 0.219111,
                                                           0.338836],
                                                          [0.247464, 0.441097,
                                                           0.311439]]}},
                'signatures': {'classification': (['inputs'],
                                                  ['classes', 'scores']),
                               'predict': (['examples'],
                                           ['all_class_ids', 'all_classes',
                                            'class_ids', 'classes', 'logits',
                                            'probabilities']),
                               'serving_default': (['inputs'],
                                                   ['classes', 'scores'])},
                'variables': ['global_step', 'logits/bias', 'logits/kernel',
                              'training/SGD/decay',
                              'training/SGD/learning_rate',
                              'training/SGD/momentum']},
 'multihead': {'metrics': {'accuracy/b': 0.6875,
                           'accuracy_baseline/b': 0.5625,
                           'auc/b': 0.6944444,
                           'auc_precision_recall/b': 0.654469,
                           'average_loss/b': 0.6617171,
                           'average_loss/r': 0.7223877,
                           'label/mean/b': 0.5625,
                           'label/mean/r': 0.135475,
                           'loss': 1.022911,
                           'loss/b': 0.6617171,
                           'loss/r': 0.7223877,
                           'precision/b': 0.7,
                           'prediction/mean/b': 0.51636,
                           'prediction/mean/r': 0.1097172,
                           'recall/b': 0.7777778},
               'prediction': {'b/all_class_ids': [0.0, 1.0],
                              'b/all_classes': ['0', '1'],
                              'b/class_ids': [1.0],
                              'b/classes': ['1'],
                              'b/logistic': [0.507354],
                              'b/logits': [0.02942],
                              'b/probabilities': [0.492646, 0.507354],
                              'r/predictions': [0.55009]},
               'served': {'predict': {'b/all_class_ids': [[0.0, 1.0],
                                                          [0.0, 1.0]],
                                      'b/all_classes': [['0', '1'],
                                                        ['0', '1']],
                                      'b/class_ids': [[1.0], [1.0]],
                                      'b/classes': [['1'], ['1']],
                                      'b/logistic': [[0.507354], [0.538751]],
                                      'b/logits': [[0.02942], [0.155316]],
                                      'b/probabilities': [[0.492646,
                                                           0.507354],
                                                          [0.461249,
                                                           0.538751]],
                                      'r/predictions': [[0.55009],
                                                        [-0.267004]]},
                          'serving_default': {'classes': [['0', '1'],
                                                          ['0', '1']],
                                              'scores': [[0.492646, 0.507354],
                                                         [0.461249,
                                                          0.538751]]}},
               'signatures': {'b': (['inputs'], ['classes', 'scores']),
                              'b/classification': (['inputs'],
                                                   ['classes', 'scores']),
                              'b/predict': (['examples'],
                                            ['all_class_ids', 'all_classes',
                                             'class_ids', 'classes',
                                             'logistic', 'logits',
                                             'probabilities']),
                              'b/regression': (['inputs'], ['outputs']),
                              'predict': (['examples'],
                                          ['b/all_class_ids', 'b/all_classes',
                                           'b/class_ids', 'b/classes',
                                           'b/logistic', 'b/logits',
                                           'b/probabilities',
                                           'r/predictions']),
                              'r': (['inputs'], ['outputs']),
                              'r/predict': (['examples'], ['predictions']),
                              'r/regression': (['inputs'], ['outputs']),
                              'serving_default': (['inputs'],
                                                  ['classes', 'scores'])},
               'variables': ['global_step', 'logits/bias', 'logits/kernel',
                             'training_2/SGD/decay',
                             'training_2/SGD/learning_rate',
                             'training_2/SGD/momentum']},
 'multilabel': {'metrics': {'accuracy/positive_threshold_0.4': 0.5416667,
                            'auc': 0.6595052,
                            'auc/class0': 0.3333333,
                            'auc/class2': 0.7738096,
                            'auc_precision_recall': 0.6437957,
                            'auc_precision_recall/class0': 0.4450795,
                            'auc_precision_recall/class2': 0.6865616,
                            'average_loss': 0.6623342,
                            'loss': 0.6623342,
                            'precision/positive_threshold_0.4': 0.5222222,
                            'probability_mean/class0': 0.4923756,
                            'probability_mean/class2': 0.501992,
                            'recall/positive_threshold_0.4': 0.9791667},
                'prediction': {'classes': ['0', '1', '2'],
                               'logits': [-0.171689, -0.360484, 0.02458],
                               'probabilities': [0.457183, 0.410842,
                                                 0.506145]},
                'served': {'predict': {'classes': [['0', '1', '2'],
                                                   ['0', '1', '2']],
                                       'logits': [[-0.171689, -0.360484,
                                                   0.02458],
                                                  [-0.228351, 0.432597,
                                                   0.151345]],
                                       'probabilities': [[0.457183, 0.410842,
                                                          0.506145],
                                                         [0.443159, 0.606494,
                                                          0.537764]]},
                           'serving_default': {'classes': [['0', '1', '2'],
                                                           ['0', '1', '2']],
                                               'scores': [[0.457183, 0.410842,
                                                           0.506145],
                                                          [0.443159, 0.606494,
                                                           0.537764]]}},
                'signatures': {'classification': (['inputs'],
                                                  ['classes', 'scores']),
                               'predict': (['examples'],
                                           ['classes', 'logits',
                                            'probabilities']),
                               'serving_default': (['inputs'],
                                                   ['classes', 'scores'])},
                'variables': ['global_step', 'logits/bias', 'logits/kernel',
                              'training/SGD/decay',
                              'training/SGD/learning_rate',
                              'training/SGD/momentum']},
 'poisson': {'metrics': {'average_loss': 1.255731,
                         'label/mean': 1.1875,
                         'loss': 1.255731,
                         'prediction/mean': 1.215457},
             'prediction': {'logits': [-0.036043], 'predictions': [0.964599]},
             'served': {'predict': {'logits': [[-0.036043], [0.613287]],
                                    'predictions': [[0.964599], [1.84649]]},
                        'serving_default': {'outputs': [[0.964599],
                                                        [1.84649]]}},
             'signatures': {'predict': (['examples'],
                                        ['logits', 'predictions']),
                            'regression': (['inputs'], ['outputs']),
                            'serving_default': (['inputs'], ['outputs'])},
             'variables': ['global_step', 'logits/bias', 'logits/kernel',
                           'training/SGD/decay', 'training/SGD/learning_rate',
                           'training/SGD/momentum']},
 'regression': {'metrics': {'average_loss': 0.8918356,
                            'label/mean': 0.06918332,
                            'loss': 0.8141652,
                            'prediction/mean': 0.06149584},
                'prediction': {'predictions': [0.377114, -0.35956]},
                'served': {'predict': {'predictions': [[0.377114, -0.35956],
                                                       [-0.235763,
                                                        1.082254]]},
                           'serving_default': {'outputs': [[0.377114,
                                                            -0.35956],
                                                           [-0.235763,
                                                            1.082254]]}},
                'signatures': {'predict': (['examples'], ['predictions']),
                               'regression': (['inputs'], ['outputs']),
                               'serving_default': (['inputs'], ['outputs'])},
                'variables': ['global_step', 'logits/bias', 'logits/kernel',
                              'training/SGD/decay',
                              'training/SGD/learning_rate',
                              'training/SGD/momentum']},
 'sequential': {'metrics': {'accuracy': 0.6349207,
                            'accuracy_baseline': 0.5079365,
                            'auc': 0.6149194,
                            'auc_precision_recall': 0.6345651,
                            'average_loss': 0.6803775,
                            'label/mean': 0.4920635,
                            'loss': 0.680232,
                            'precision': 0.6428571,
                            'prediction/mean': 0.4930881,
                            'recall': 0.5806451},
                'prediction': {'all_class_ids': [0.0, 1.0],
                               'all_classes': ['0', '1'],
                               'class_ids': [[0.0], [0.0], [1.0]],
                               'classes': ['0', '0', '1'],
                               'logistic': [[0.471403], [0.484301],
                                            [0.563697]],
                               'logits': [[-0.114514], [-0.062818],
                                          [0.256181]],
                               'mask': [1.0, 0.0, 0.0],
                               'probabilities': [[0.528597, 0.471403],
                                                 [0.515699, 0.484301],
                                                 [0.436303, 0.563697]]},
                'variables': ['global_step', 'logits/bias', 'logits/kernel',
                              'training/SGD/decay',
                              'training/SGD/learning_rate',
                              'training/SGD/momentum']}}

# 2.15's figures for TRAIN_OP_FN_CASES (a tf.compat.v1.layers.dense layer
# trained by train_op_fn with tf.compat.v1.train.GradientDescentOptimizer;
# a Keras 2 Adagrad through optimizer=, whose slots are training/Adagrad/*),
# printed by
#   .venv-tf215/bin/python scripts/tf_estimator_215/heads_reference.py \
#       train_op_fn
# (TensorFlow 2.15.1, tensorflow-estimator 2.15.0), in REFERENCE's form.
TRAIN_OP_FN_REFERENCE = {'binary_sgd': {'metrics': {'accuracy': 0.5138153,
                            'accuracy/positive_threshold_0.3': 0.5028621,
                            'accuracy/positive_threshold_0.6': 0.4971379,
                            'accuracy_baseline': 0.5028621,
                            'auc': 0.500928,
                            'auc_precision_recall': 0.4591615,
                            'average_loss': 0.6993864,
                            'label/mean': 0.5028621,
                            'loss': 0.6384765,
                            'precision': 0.516513,
                            'precision/positive_threshold_0.3': 0.5028621,
                            'precision/positive_threshold_0.6': 0.0,
                            'prediction/mean': 0.4998898,
                            'recall': 0.5186852,
                            'recall/positive_threshold_0.3': 1.0,
                            'recall/positive_threshold_0.6': 0.0},
                'prediction': {'all_class_ids': [0.0, 1.0],
                               'all_classes': ['0', '1'],
                               'class_ids': [1.0],
                               'classes': ['1'],
                               'logistic': [0.513686],
                               'logits': [0.054757],
                               'probabilities': [0.486314, 0.513686]},
                'variables': ['global_step',
                              'logits/bias',
                              'logits/kernel']},
 'multiclass_sgd': {'metrics': {'accuracy': 0.6875,
                                'average_loss': 0.9031815,
                                'loss': 0.9031815},
                    'prediction': {'all_class_ids': [0.0, 1.0, 2.0],
                                   'all_classes': ['a', 'b', 'c'],
                                   'class_ids': [0.0],
                                   'classes': ['a'],
                                   'logits': [0.12442,
                                              -0.577431,
                                              -0.141493],
                                   'probabilities': [0.442053,
                                                     0.219111,
                                                     0.338836]},
                    'variables': ['global_step',
                                  'logits/bias',
                                  'logits/kernel']},
 'regression_keras2_adagrad': {'metrics': {'average_loss': 1.344405,
                                           'label/mean': 0.06918332,
                                           'loss': 1.22732,
                                           'prediction/mean': 0.063559},
                               'prediction': {'predictions': [0.078081,
                                                              -0.272843]},
                               'variables': ['global_step',
                                             'logits/bias',
                                             'logits/kernel',
                                             'training/Adagrad/decay',
                                             'training/Adagrad/learning_rate',
                                             'training/Adagrad/logits/bias/accumulator',
                                             'training/Adagrad/logits/kernel/accumulator']},
 'regression_sgd': {'metrics': {'average_loss': 0.8918356,
                                'label/mean': 0.06918332,
                                'loss': 0.8141652,
                                'prediction/mean': 0.06149584},
                    'prediction': {'predictions': [0.377114, -0.35956]},
                    'variables': ['global_step',
                                  'logits/bias',
                                  'logits/kernel']}}

# 2.15's metrics after its kept model_dir (tests/data/tf_estimator_215/
# heads/<case>, at TRAIN_STEPS) trained on to CONTINUED_STEPS (same command).
CONTINUED = {'binary': {'accuracy': 0.6281207,
            'accuracy/positive_threshold_0.3': 0.5028621,
            'accuracy/positive_threshold_0.6': 0.4971379,
            'accuracy_baseline': 0.5028621,
            'auc': 0.7191082,
            'auc_precision_recall': 0.7080439,
            'average_loss': 0.6645624,
            'label/mean': 0.5028621,
            'loss': 0.6066853,
            'precision': 0.6128837,
            'precision/positive_threshold_0.3': 0.5028621,
            'precision/positive_threshold_0.6': 0.0,
            'prediction/mean': 0.5016252,
            'recall': 0.7071022,
            'recall/positive_threshold_0.3': 1.0,
            'recall/positive_threshold_0.6': 0.0},
 'multihead': {'accuracy/b': 0.75,
               'accuracy_baseline/b': 0.5625,
               'auc/b': 0.8333334,
               'auc_precision_recall/b': 0.8130637,
               'average_loss/b': 0.6260018,
               'average_loss/r': 0.4518809,
               'label/mean/b': 0.5625,
               'label/mean/r': 0.135475,
               'loss': 0.8519422,
               'loss/b': 0.6260018,
               'loss/r': 0.4518809,
               'precision/b': 0.7272727,
               'prediction/mean/b': 0.5233498,
               'prediction/mean/r': 0.1000062,
               'recall/b': 0.8888889}}

# 2.15's constructor parameters (name, default), from inspect.signature.
SIGNATURES = {
    'BinaryClassHead': [('weight_column', None), ('thresholds', None),
                        ('label_vocabulary', None),
                        ('loss_reduction', 'sum_over_batch_size'),
                        ('loss_fn', None), ('name', None)],
    'MultiClassHead': [('n_classes', '<required>'), ('weight_column', None),
                       ('label_vocabulary', None),
                       ('loss_reduction', 'sum_over_batch_size'),
                       ('loss_fn', None), ('name', None)],
    'RegressionHead': [('label_dimension', 1), ('weight_column', None),
                       ('loss_reduction', 'sum_over_batch_size'),
                       ('loss_fn', None), ('inverse_link_fn', None),
                       ('name', None)],
    'PoissonRegressionHead': [('label_dimension', 1), ('weight_column', None),
                              ('loss_reduction', 'sum_over_batch_size'),
                              ('compute_full_loss', True), ('name', None)],
    'LogisticRegressionHead': [('weight_column', None),
                               ('loss_reduction', 'sum_over_batch_size'),
                               ('name', None)],
    'MultiLabelHead': [('n_classes', '<required>'), ('weight_column', None),
                       ('thresholds', None), ('label_vocabulary', None),
                       ('loss_reduction', 'sum_over_batch_size'),
                       ('loss_fn', None),
                       ('classes_for_class_based_metrics', None),
                       ('name', None)],
    'MultiHead': [('heads', '<required>'), ('head_weights', None)],
    'SequentialHeadWrapper': [('static_head', '<required>'),
                              ('sequence_length_mask', 'sequence_length_mask'),
                              ('feature_columns', None)],
}
METHODS = {
    'loss': ['labels', 'logits', 'features', 'mode', 'regularization_losses'],
    'predictions': ['logits', 'keys'],
    'metrics': ['regularization_losses'],
    'update_metrics': ['eval_metrics', 'features', 'logits', 'labels',
                       'regularization_losses'],
    'create_estimator_spec': ['features', 'mode', 'logits', 'labels',
                              'optimizer', 'trainable_variables',
                              'train_op_fn', 'update_ops',
                              'regularization_losses'],
}


def eager_model_fn(case: str, est):
  """The reference model_fn in TF2 form: a Keras 3 Dense layer with the
  same initial weights, a Keras 3 SGD the runtime applies."""

  def model_fn(features, labels, mode):
    head = programs.make_head(case, est)
    layer = keras.layers.Dense(
        head.logits_dimension,
        kernel_initializer=keras.initializers.Constant(
            programs.initial_kernel(case)),
        bias_initializer='zeros', name='logits')
    logits = layer(features['x'])
    # Made in every mode, as tf.estimator's users made theirs: in EVAL and
    # PREDICT its variables (a Keras 3 optimizer makes them when
    # constructed) must not be taken for the model's.
    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        optimizer=keras.optimizers.SGD(programs.LEARNING_RATE))

  return model_fn


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
  """(engine, case) -> the figures of programs.run, exports not served."""
  est = namespaces.v2()
  figures = {}
  for case in programs.CASES:
    figures['graph', case] = programs.run(
        case, est, programs.graph_model_fn(case, est, tf_keras),
        str(tmp_path_factory.mktemp(f'graph_{case}')),
        export=case in programs.EXPORTED, serve=False)
  for case in EAGER_CASES:
    figures['eager', case] = programs.run(
        case, est, eager_model_fn(case, est),
        str(tmp_path_factory.mktemp(f'eager_{case}')),
        export=case in programs.EXPORTED, serve=False)
  return figures


def _assert_close(got, expected, what):
  if isinstance(expected, list):
    assert isinstance(got, list) and len(got) == len(expected), (what, got)
    for g, e in zip(got, expected):
      _assert_close(g, e, what)
  elif isinstance(expected, str):
    assert got == expected, (what, got, expected)
  else:
    # 2.15's predictions were rounded to 6 decimals.
    assert abs(got - expected) <= TOLERANCE, (what, got, expected)


def _check(figures, case, reference=None):
  expected = (reference or REFERENCE)[case]
  assert figures['global_step'] == programs.TRAIN_STEPS
  assert set(figures['metrics']) == set(expected['metrics'])
  for key, value in expected['metrics'].items():
    assert abs(figures['metrics'][key] - value) <= TOLERANCE * max(
        1., abs(value)), (case, key, figures['metrics'][key], value)
  prediction = figures['predictions'][0]
  assert set(prediction) == set(expected['prediction'])
  for key, value in expected['prediction'].items():
    _assert_close(prediction[key], value, (case, key))


@pytest.mark.parametrize('case', programs.CASES)
def test_graph_engine_gives_2_15s_figures(runs, case):
  """A TF1-style model_fn with the head (Keras 2 legacy SGD through
  create_estimator_spec's optimizer): 2.15's metric keys and values,
  prediction keys and values, and checkpoint variable names (so 2.15's
  checkpoints load: training/SGD/..., training_2/... for MultiHead)."""
  figures = runs['graph', case]
  _check(figures, case)
  assert figures['variables'] == REFERENCE[case]['variables']


@pytest.mark.parametrize('case', EAGER_CASES)
def test_eager_engine_gives_2_15s_figures(runs, case):
  """The TF2 form of the model_fn (Keras 3 layer and optimizer, Keras 3
  metrics): the same metric and prediction keys and values as 2.15, with
  an object-based checkpoint."""
  figures = runs['eager', case]
  _check(figures, case)
  assert '_CHECKPOINTABLE_OBJECT_GRAPH' in figures['variables']


@pytest.fixture(scope='module')
def train_op_fn_runs(tmp_path_factory):
  """name -> the figures of programs.run for TRAIN_OP_FN_CASES (graph
  engine, no export)."""
  est = namespaces.v2()
  return {name: programs.run(
      programs.TRAIN_OP_FN_CASES[name][0], est,
      programs.train_op_fn_model_fn(name, est, tf_keras),
      str(tmp_path_factory.mktemp(f'train_op_fn_{name}')), export=False)
          for name in programs.TRAIN_OP_FN_CASES}


@pytest.mark.parametrize('name', sorted(programs.TRAIN_OP_FN_CASES))
def test_train_op_fn_and_keras2_adagrad_give_2_15s_figures(train_op_fn_runs,
                                                           name):
  """2.15's other training paths in a TF1-style model_fn: a
  tf.compat.v1.layers.dense layer trained through train_op_fn (a
  tf.compat.v1.train.GradientDescentOptimizer advancing the global step),
  and a Keras 2 Adagrad through optimizer= (its slots named
  training/Adagrad/<variable>/accumulator, as in 2.15's checkpoints): 2.15's
  metric keys and values, first prediction and variable names."""
  figures = train_op_fn_runs[name]
  _check(figures, name, TRAIN_OP_FN_REFERENCE)
  assert figures['variables'] == TRAIN_OP_FN_REFERENCE[name]['variables']


@pytest.mark.parametrize('case', programs.FIXTURES)
def test_a_2_15_checkpoint_evaluates_and_resumes_to_2_15s_figures(tmp_path,
                                                                  case):
  """A model_dir tf.estimator 2.15 trained with the head (its name-based
  checkpoint at step 5: the layer, global_step and the Keras 2 SGD's
  training/SGD/* or, for MultiHead, training_2/SGD/* variables) evaluates
  here to 2.15's metrics, and trains on to 2.15's metrics at step 7."""
  model_dir = str(tmp_path / case)
  shutil.copytree(os.path.join(REPO_ROOT, 'tests', 'data', 'tf_estimator_215',
                               'heads', case), model_dir)
  est = namespaces.v2()
  estimator = est.Estimator(programs.graph_model_fn(case, est, tf_keras),
                            model_dir=model_dir)
  for steps, expected in ((programs.TRAIN_STEPS, REFERENCE[case]['metrics']),
                          (programs.CONTINUED_STEPS, CONTINUED[case])):
    if steps > programs.TRAIN_STEPS:
      estimator.train(programs.input_fn(case, train=True), max_steps=steps)
    metrics = estimator.evaluate(programs.input_fn(case, train=False))
    assert metrics['global_step'] == steps
    assert set(metrics) - {'global_step'} == set(expected)
    for key, value in expected.items():
      assert abs(metrics[key] - value) <= TOLERANCE, (steps, key,
                                                      metrics[key], value)


_SERVE = r'''
import json, sys
from scripts.tf_estimator_215 import heads_reference as programs
print(json.dumps({key: programs.served(path, key.split(':')[1])
                  for key, path in json.loads(sys.argv[1]).items()}))
'''


@pytest.fixture(scope='module')
def served(runs):
  """Every export served in one fresh process: '<engine>:<case>' ->
  programs.served(export_dir)."""
  dirs = {f'{engine}:{case}': figures['export_dir']
          for (engine, case), figures in runs.items()
          if 'export_dir' in figures}
  result = run_python(['-c', _SERVE, json.dumps(dirs)], timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize('engine, case', [
    ('graph', c) for c in programs.EXPORTED] + [
        ('eager', c) for c in EAGER_CASES if c in programs.EXPORTED])
def test_exports_serve_2_15s_signatures(served, engine, case):
  """The export has 2.15's signature names and output keys (classification:
  classes and scores; regression: outputs; predict: the predictions;
  MultiHead: serving_default, <head>, <head>/<signature>, predict with
  <head>/<key>), and serves 2.15's values in a fresh process. The graph
  engine's signatures also take 2.15's input keys."""
  expected = REFERENCE[case]
  got = served[f'{engine}:{case}']
  assert set(got['outputs']) == set(expected['signatures'])
  for name, (inputs, outputs) in expected['signatures'].items():
    assert sorted(got['outputs'][name]) == outputs, (name, got['outputs'])
    if engine == 'graph':
      assert got['inputs'][name] == inputs, (name, got['inputs'])
  for name, outputs in expected['served'].items():
    for key, value in outputs.items():
      _assert_close(got['outputs'][name][key], value, (engine, case, name,
                                                       key))


def test_eager_classify_signature_takes_inputs_as_2_15(served):
  assert served['eager:binary']['inputs']['classification'] == ['inputs']


def test_constructors_and_methods_have_2_15s_signatures():
  for name, parameters in SIGNATURES.items():
    cls = getattr(head_lib, name)
    got = [(p.name, '<required>' if p.default is p.empty else p.default)
           for p in list(inspect.signature(cls.__init__).parameters.values()
                         )[1:]]
    assert got == parameters, name
  for method, parameters in METHODS.items():
    for name in SIGNATURES:
      if name == 'SequentialHeadWrapper' and method == 'loss':
        continue  # 2.15's takes (logits, labels, ...) in that order.
      got = list(inspect.signature(getattr(getattr(head_lib, name),
                                           method)).parameters)[1:]
      assert got == parameters, (name, method)
  est = namespaces.v2()
  for name in ('BinaryClassHead', 'MultiClassHead', 'MultiLabelHead',
               'MultiHead', 'RegressionHead', 'PoissonRegressionHead',
               'LogisticRegressionHead'):
    assert getattr(est, name) is getattr(head_lib, name)
  assert head_lib.MetricKeys.AUC_PR == 'auc_precision_recall'
  assert head_lib.PredictionKeys.ALL_CLASS_IDS == 'all_class_ids'


def test_bad_arguments_are_named():
  """2.15's message first (programs match it), naming the value."""
  with pytest.raises(UserInputError, match='n_classes must be > 2: 2'):
    head_lib.MultiClassHead(2)
  with pytest.raises(UserInputError,
                     match='n_classes must be > 1 for multi-label '
                     r'classification\. Given: 1'):
    head_lib.MultiLabelHead(1)
  with pytest.raises(UserInputError,
                     match=r'thresholds not in \(0, 1\): \(1\.5,\)'):
    head_lib.BinaryClassHead(thresholds=[1.5])
  with pytest.raises(UserInputError, match='Invalid loss_reduction: none'):
    head_lib.RegressionHead(loss_reduction='none')
  with pytest.raises(UserInputError, match='classes_for_class_based_metrics'):
    head_lib.MultiLabelHead(3, classes_for_class_based_metrics=[3])
  with pytest.raises(UserInputError,
                     match='All given heads must have name specified'):
    head_lib.MultiHead([head_lib.BinaryClassHead()])
  with pytest.raises(UserInputError,
                     match='heads and head_weights must have the same size'):
    head_lib.MultiHead([head_lib.BinaryClassHead(name='a')], [1., 2.])
  with pytest.raises(UserInputError,
                     match='loss_fn must contain argument: logits'):
    head_lib.BinaryClassHead(loss_fn=lambda labels: labels)


def test_auto_loss_reduction_is_reduced_as_sum_over_batch_size():
  """2.15 accepted tf.losses.Reduction.AUTO ('auto') and reduced the loss
  as SUM_OVER_BATCH_SIZE (its figure on these logits: 1.1380889, the mean
  binary cross-entropy)."""
  logits = tf.constant([[1.], [-2.], [0.5]])
  labels = tf.constant([[1], [1], [0]])
  auto = head_lib.BinaryClassHead(loss_reduction='auto')
  assert auto.loss_reduction == 'auto'
  loss = float(auto.loss(labels=labels, logits=logits))
  assert abs(loss - float(head_lib.BinaryClassHead().loss(
      labels=labels, logits=logits))) < 1e-7
  assert abs(loss - 1.1380889) < 1e-6


def test_binary_or_multi_class_head_picks_as_2_15():
  from estimator_rt.estimator.head import head_utils  # pylint: disable=g-import-not-at-top
  binary = head_utils.binary_or_multi_class_head(2, 'w', ['a', 'b'], 'sum')
  assert isinstance(binary, head_lib.BinaryClassHead)
  assert (binary._weight_column, binary.loss_reduction) == ('w', 'sum')  # pylint: disable=protected-access
  multi = head_utils.binary_or_multi_class_head(
      4, None, None, 'sum_over_batch_size')
  assert isinstance(multi, head_lib.MultiClassHead)
  assert multi.logits_dimension == 4
  with pytest.raises(UserInputError, match='n_classes must be > 2: 1'):
    head_utils.binary_or_multi_class_head(1, None, None, 'sum')


def test_metric_objects_follow_the_engine():
  """A head's metrics are Keras 2 objects in a graph (which the graph
  engine takes in eval_metric_ops, as 2.15's Estimator did), Keras 3
  objects eagerly; a Keras 2 metric in an eager spec is refused by name."""
  head = head_lib.BinaryClassHead()
  assert all(isinstance(m, keras.metrics.Metric)
             for m in head.metrics().values())
  with tf.Graph().as_default():
    assert all(isinstance(m, tf_keras.metrics.Metric)
               for m in head.metrics().values())
  metric = tf_keras.metrics.Mean()
  metric.update_state(1.)
  with pytest.raises(ModelFnError, match=r"eval_metric_ops\['m'\] is a "
                     'Keras 2'):
    ert.EstimatorSpec(ert.ModeKeys.EVAL, loss=tf.constant(0.),
                      eval_metric_ops={'m': metric})


@pytest.mark.parametrize('loss_reduction', ['sum', 'sum_over_batch_size'])
def test_two_replicas_train_a_head_as_one_replica_on_the_global_batch(
    tmp_path, loss_reduction):
  """Eager engine: as 2.15 trained a head on N replicas (a summed loss's
  gradients added up, a mean's divided by N), 2 mirrored replicas on a
  global batch of 16 end where one device does on the same batches."""
  rng = np.random.RandomState(3)
  x = rng.normal(size=(64, 2)).astype(np.float32)
  y = (x @ np.array([[1.5], [-2.]], np.float32) + 0.5).astype(np.float32)

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(
        16, drop_remainder=True)

  def model_fn(features, labels, mode):
    head = head_lib.RegressionHead(loss_reduction=loss_reduction)
    logits = keras.layers.Dense(1, kernel_initializer='zeros',
                                name='logits')(features['x'])
    optimizer = (keras.optimizers.SGD(0.005) if mode == ert.ModeKeys.TRAIN
                 else None)
    return head.create_estimator_spec(features=features, mode=mode,
                                      logits=logits, labels=labels,
                                      optimizer=optimizer)

  variables = {}
  for strategy in ('default', 'mirrored'):
    est = ert.Estimator(model_fn, model_dir=str(tmp_path / strategy),
                        config=ert.RunConfig(engine='eager',
                                             train_distribute=strategy))
    est.train(input_fn, max_steps=8)
    reader = tf.train.load_checkpoint(est.latest_checkpoint())
    variables[strategy] = {
        name: reader.get_tensor(name)
        for name, _ in tf.train.list_variables(est.latest_checkpoint())
        if name.startswith('model/')}  # The kernel and bias.
  assert len(variables['default']) == 2, variables
  assert np.abs(variables['default']['model/0/.ATTRIBUTES/VARIABLE_VALUE']
                ).max() > 1e-2  # Training moved the kernel from zeros.
  for name, value in variables['default'].items():
    np.testing.assert_allclose(variables['mirrored'][name], value, rtol=1e-5,
                               atol=1e-6, err_msg=name)
