r"""An unseeded census-like wide & deep tf.estimator program, written as users
wrote them for tf.estimator 2.15 (public names only), for comparing what
unseeded training ends in under 2.15 and here.

    S=scripts/tf_estimator_215/unseeded
    .venv-tf215/bin/python $S/wide_deep_program.py --dir D [--seed N] [--record]
    .venv/bin/python $S/wide_deep_program.py --dir D [--seed N] [--record]

(here `tf.estimator` is served by estimator_rt's import hook). It writes an
adult-like CSV (train and test files, drawn with a fixed NumPy seed: the
data are the same in every run), trains a `DNNLinearCombinedClassifier`
(vocabulary, hash-bucket, bucketized, crossed, indicator and embedding
columns) on a shuffled `TextLineDataset` with a parallel `map`, in two
`train` calls of one epoch each (STEPS_PER_EPOCH steps), evaluates, and
prints one JSON line: the AUC and accuracy, and, for looking at where the
randomness comes from, the initial weights (read from the step-0
checkpoint) and, with `--record`, the first batch of each `train` call
(its `age` values, recorded as tf.data produces the batch). `--seed N`
sets `RunConfig(tf_random_seed=N)`.
"""

import argparse
import json
import os
import sys

import numpy as np
import tensorflow as tf

COLUMNS = ('age', 'workclass', 'education', 'education_num',
           'marital_status', 'occupation', 'relationship', 'race', 'gender',
           'capital_gain', 'capital_loss', 'hours_per_week', 'native_country',
           'income_bracket')
DEFAULTS = [[0], [''], [''], [0], [''], [''], [''], [''], [''], [0], [0],
            [0], [''], ['']]
WORKCLASS = ('Self-emp-not-inc', 'Private', 'State-gov', 'Federal-gov',
             'Local-gov', '?', 'Self-emp-inc', 'Without-pay', 'Never-worked')
EDUCATION = ('Bachelors', 'HS-grad', '11th', 'Masters', '9th',
             'Some-college', 'Assoc-acdm', 'Assoc-voc', '7th-8th',
             'Doctorate', 'Prof-school', '5th-6th', '10th', '1st-4th',
             'Preschool', '12th')
MARITAL = ('Married-civ-spouse', 'Divorced', 'Married-spouse-absent',
           'Never-married', 'Separated', 'Married-AF-spouse', 'Widowed')
RELATIONSHIP = ('Husband', 'Not-in-family', 'Wife', 'Own-child',
                'Unmarried', 'Other-relative')
OCCUPATIONS = tuple(f'occupation-{i}' for i in range(40))
COUNTRIES = tuple(f'country-{i}' for i in range(60))
RACES = ('White', 'Black', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo',
         'Other')
TRAIN_ROWS = 3200
TEST_ROWS = 1000
BATCH_SIZE = 64
STEPS_PER_EPOCH = TRAIN_ROWS // BATCH_SIZE  # 50
DATA_SEED = 20240


def _rows(rng, count):
  """`count` adult-like rows; the label depends on education, marital
  status, age, hours and capital gain, with noise."""
  age = rng.randint(17, 80, count)
  education = rng.randint(0, len(EDUCATION), count)
  marital = rng.randint(0, len(MARITAL), count)
  hours = rng.randint(10, 80, count)
  gain = np.where(rng.rand(count) < 0.1, rng.randint(1, 20000, count), 0)
  score = (0.04 * (age - 40) + 0.25 * (education % 5) +
           0.8 * (marital == 0) + 0.03 * (hours - 40) + 0.0002 * gain +
           rng.normal(0, 1.0, count))
  label = score > 1.2
  lines = []
  for i in range(count):
    lines.append(','.join(str(v) for v in (
        age[i], WORKCLASS[rng.randint(len(WORKCLASS))],
        EDUCATION[education[i]], education[i] + 1, MARITAL[marital[i]],
        OCCUPATIONS[rng.randint(len(OCCUPATIONS))],
        RELATIONSHIP[rng.randint(len(RELATIONSHIP))],
        RACES[rng.randint(len(RACES))], ('Male', 'Female')[rng.randint(2)],
        gain[i], rng.randint(0, 2) * rng.randint(0, 2000), hours[i],
        COUNTRIES[rng.randint(len(COUNTRIES))],
        '>50K' if label[i] else '<=50K')))
  return lines


def write_data(directory):
  """The train and test CSV files under `directory` (the same every run)."""
  rng = np.random.RandomState(DATA_SEED)
  paths = []
  for name, count in (('adult.data', TRAIN_ROWS), ('adult.test', TEST_ROWS)):
    path = os.path.join(directory, name)
    with open(path, 'w') as f:
      f.write('\n'.join(_rows(rng, count)) + '\n')
    paths.append(path)
  return paths


def build_columns():
  """The census example's wide and deep columns."""
  fc = tf.feature_column
  age = fc.numeric_column('age')
  education_num = fc.numeric_column('education_num')
  capital_gain = fc.numeric_column('capital_gain')
  capital_loss = fc.numeric_column('capital_loss')
  hours = fc.numeric_column('hours_per_week')
  education = fc.categorical_column_with_vocabulary_list('education',
                                                         EDUCATION)
  marital = fc.categorical_column_with_vocabulary_list('marital_status',
                                                       MARITAL)
  relationship = fc.categorical_column_with_vocabulary_list(
      'relationship', RELATIONSHIP)
  workclass = fc.categorical_column_with_vocabulary_list('workclass',
                                                         WORKCLASS)
  occupation = fc.categorical_column_with_hash_bucket('occupation', 1000)
  age_buckets = fc.bucketized_column(
      age, boundaries=[18, 25, 30, 35, 40, 45, 50, 55, 60, 65])
  wide = [education, marital, relationship, workclass, occupation,
          age_buckets,
          fc.crossed_column(['education', 'occupation'], 1000),
          fc.crossed_column([age_buckets, 'education', 'occupation'], 1000)]
  deep = [age, education_num, capital_gain, capital_loss, hours,
          fc.indicator_column(workclass), fc.indicator_column(education),
          fc.indicator_column(marital), fc.indicator_column(relationship),
          fc.embedding_column(occupation, dimension=8)]
  return wide, deep


def input_fn(data_file, num_epochs, shuffle, batch_size):
  """The census example's input_fn: a shuffled TextLineDataset, parsed by a
  parallel map."""
  def parse_csv(value):
    columns = tf.io.decode_csv(value, record_defaults=DEFAULTS)
    features = dict(zip(COLUMNS, columns))
    labels = features.pop('income_bracket')
    return features, tf.equal(labels, '>50K')
  dataset = tf.data.TextLineDataset(data_file)
  if shuffle:
    dataset = dataset.shuffle(buffer_size=TRAIN_ROWS)
  dataset = dataset.map(parse_csv, num_parallel_calls=5)
  dataset = dataset.repeat(num_epochs)
  return dataset.batch(batch_size)


def recorded(dataset, batches):
  """`dataset` (of batches) unchanged, each batch's first 16 `age` values
  appended to the list `batches` as tf.data produces it: the data order,
  seen without a per-step hook (which would take training here off the
  in-graph loop it runs in by default)."""
  def record(ages):
    batches.append([int(v) for v in ages.numpy()[:16]])
    return ages

  def with_record(features, labels):
    ages = tf.py_function(record, [features['age']], features['age'].dtype)
    ages.set_shape(features['age'].shape)
    return dict(features, age=ages), labels
  return dataset.map(with_record)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--dir', required=True)
  parser.add_argument('--seed', type=int, default=None)
  parser.add_argument('--record', action='store_true',
                      help='also record each train call\'s first batch')
  args = parser.parse_args()
  train_file, test_file = write_data(args.dir)
  wide, deep = build_columns()
  config = tf.estimator.RunConfig(tf_random_seed=args.seed,
                                  log_step_count_steps=1000)
  model = tf.estimator.DNNLinearCombinedClassifier(
      model_dir=os.path.join(args.dir, 'model'),
      linear_feature_columns=wide, dnn_feature_columns=deep,
      dnn_hidden_units=[100, 50], config=config)
  first_batches, orders = [], []
  for _ in range(2):
    batches = []

    def train_input_fn():
      dataset = input_fn(train_file, 1, True, BATCH_SIZE)
      return recorded(dataset, batches) if args.record else dataset
    model.train(input_fn=train_input_fn)
    first_batches.append(batches[0] if batches else None)
    orders.append([batch[0] for batch in batches])
  metrics = model.evaluate(
      input_fn=lambda: input_fn(test_file, 1, False, BATCH_SIZE))
  out = {'auc': float(metrics['auc']), 'accuracy': float(metrics['accuracy']),
         'global_step': int(metrics['global_step']), 'tf': tf.__version__}
  reader = tf.train.load_checkpoint(
      os.path.join(args.dir, 'model', 'model.ckpt-0'))
  out['initial'] = {
      name: [float(v) for v in np.ravel(reader.get_tensor(name))[:4]]
      for name in ('dnn/hiddenlayer_0/kernel', 'dnn/logits/kernel',
                   'dnn/input_from_feature_columns/input_layer/'
                   'occupation_embedding/embedding_weights')}
  if args.record:
    out['first_batches'] = first_batches
    # Each batch's first `age`: the whole order of each call, in brief.
    out['orders'] = orders
  print('RESULT ' + json.dumps(out))


if __name__ == '__main__':
  sys.exit(main())
