"""(d) An iris-style classifier on feature columns.

The shape of TensorFlow's "Creating custom estimators" guide: the feature
columns come in through `params`, `tf.compat.v1.feature_column.input_layer`
turns the feature dict into one dense tensor, `tf.compat.v1.layers.dense`
stacks the hidden layers, `tf.compat.v1.metrics.accuracy` is both an
eval_metric_op and (through its update op) a `tf.compat.v1.summary.scalar`
in training, and Adagrad minimizes with the global step. Besides the four
numeric columns the guide has, one categorical column with a vocabulary
list (an indicator column) brings a lookup table, which must be initialized
like the variables. The export parses serialized `tf.Example`s
(`build_parsing_serving_input_receiver_fn` on the columns' parse spec).

Data: 3 classes, 4 measurements each around a class mean, and a `site`
string that agrees with the class 70% of the time; fixed numpy seed.
"""

import numpy as np
import tensorflow as tf

import estimator_rt

MEASUREMENTS = ('sepal_length', 'sepal_width', 'petal_length', 'petal_width')
SITES = ('north', 'east', 'south')
CLASS_MEANS = np.array([[5.0, 3.4, 1.5, 0.2],
                        [5.9, 2.8, 4.3, 1.3],
                        [6.6, 3.0, 5.6, 2.0]])


def make_flowers(num_examples, seed):
  """Returns (features: dict of numpy columns, labels int32 [n])."""
  rng = np.random.RandomState(seed)
  labels = rng.randint(0, 3, size=num_examples)
  values = CLASS_MEANS[labels] + rng.normal(scale=0.35, size=(num_examples, 4))
  features = {name: values[:, i].astype(np.float32)
              for i, name in enumerate(MEASUREMENTS)}
  site_index = np.where(rng.uniform(size=num_examples) < 0.7, labels,
                        rng.randint(0, 3, size=num_examples))
  features['site'] = np.array(SITES, dtype=object)[site_index].astype(bytes)
  return features, labels.astype(np.int32)


TRAIN_DATA = make_flowers(240, seed=0)
EVAL_DATA = make_flowers(60, seed=1)

FEATURE_COLUMNS = (
    [tf.feature_column.numeric_column(name) for name in MEASUREMENTS] +
    [tf.feature_column.indicator_column(
        tf.feature_column.categorical_column_with_vocabulary_list(
            'site', SITES))])
PARAMS = {'feature_columns': FEATURE_COLUMNS, 'hidden_units': [10, 10],
          'n_classes': 3}


def model_fn(features, labels, mode, params):
  net = tf.compat.v1.feature_column.input_layer(features,
                                                params['feature_columns'])
  for units in params['hidden_units']:
    net = tf.compat.v1.layers.dense(net, units=units, activation=tf.nn.relu)
  logits = tf.compat.v1.layers.dense(net, params['n_classes'], activation=None)

  predicted_classes = tf.argmax(logits, 1)
  if mode == estimator_rt.ModeKeys.PREDICT:
    predictions = {
        'class_ids': predicted_classes[:, tf.newaxis],
        'probabilities': tf.nn.softmax(logits),
        'logits': logits,
    }
    return estimator_rt.EstimatorSpec(mode, predictions=predictions)

  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels,
                                                          logits=logits)
  accuracy = tf.compat.v1.metrics.accuracy(labels=labels,
                                           predictions=predicted_classes,
                                           name='acc_op')
  metrics = {'accuracy': accuracy}
  tf.compat.v1.summary.scalar('accuracy', accuracy[1])

  if mode == estimator_rt.ModeKeys.EVAL:
    return estimator_rt.EstimatorSpec(mode, loss=loss,
                                      eval_metric_ops=metrics)

  optimizer = tf.compat.v1.train.AdagradOptimizer(learning_rate=0.1)
  train_op = optimizer.minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return estimator_rt.EstimatorSpec(mode, loss=loss, train_op=train_op)


def train_input_fn(features, labels, batch_size):
  dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
  return dataset.shuffle(1000, seed=4).repeat().batch(batch_size)


def eval_input_fn(features, labels, batch_size):
  if labels is None:
    dataset = tf.data.Dataset.from_tensor_slices(dict(features))
  else:
    dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
  return dataset.batch(batch_size)


serving_input_receiver_fn = (
    estimator_rt.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(FEATURE_COLUMNS)))


def _serialized_example(features, index):
  feature = {name: tf.train.Feature(float_list=tf.train.FloatList(
      value=[features[name][index]])) for name in MEASUREMENTS}
  feature['site'] = tf.train.Feature(bytes_list=tf.train.BytesList(
      value=[features['site'][index]]))
  example = tf.train.Example(features=tf.train.Features(feature=feature))
  # latin-1 carries any bytes through JSON; run_program.py encodes it back.
  return example.SerializeToString().decode('latin-1')


SERVING_EXAMPLE = {'examples': [_serialized_example(EVAL_DATA[0], i)
                                for i in range(2)]}


def main(model_dir, train_steps=300):
  """Trains up to `train_steps`, evaluates, predicts and exports.

  Returns:
    A dict: 'eval' (evaluate's metrics), 'predictions', 'export_dir'.
  """
  classifier = estimator_rt.Estimator(
      model_fn=model_fn, model_dir=model_dir, params=PARAMS,
      config=estimator_rt.RunConfig(tf_random_seed=1, keep_checkpoint_max=1))
  classifier.train(input_fn=lambda: train_input_fn(*TRAIN_DATA, 32),
                   max_steps=train_steps)
  metrics = classifier.evaluate(input_fn=lambda: eval_input_fn(*EVAL_DATA, 32))
  first_four = {name: column[:4] for name, column in EVAL_DATA[0].items()}
  predictions = list(classifier.predict(
      input_fn=lambda: eval_input_fn(first_four, None, 4)))
  export_dir = classifier.export_saved_model(
      model_dir + '/export', serving_input_receiver_fn)
  return {'eval': metrics, 'predictions': predictions,
          'export_dir': export_dir}
