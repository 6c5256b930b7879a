"""classifier_parse_example_spec and regressor_parse_example_spec, and warm
starting (WarmStartSettings with a variable list, a previous name map and
a VocabInfo; a warm_start_from path)."""

import tensorflow as tf

from scripts.tf_estimator_215.observe.scenarios import common


def _parse_specs(rec):
  columns = common.columns() + [
      tf.feature_column.categorical_column_with_vocabulary_list('c', ['a'])]
  for fn in (tf.estimator.classifier_parse_example_spec,
             tf.compat.v1.estimator.classifier_parse_example_spec):
    rec.call('classifier_parse_example_spec', fn, columns, 'label')
  rec.call('classifier_parse_example_spec string labels',
           tf.estimator.classifier_parse_example_spec, columns, 'label',
           label_dtype=tf.string, weight_column='w')
  rec.call('classifier_parse_example_spec float labels',
           tf.estimator.classifier_parse_example_spec, columns, 'label',
           label_dtype=tf.float32)
  rec.call('classifier_parse_example_spec label among features',
           tf.estimator.classifier_parse_example_spec, columns, 'x')
  rec.call('regressor_parse_example_spec',
           tf.estimator.regressor_parse_example_spec, columns, 'label',
           label_dimension=2, label_default=0.0)
  rec.call('regressor_parse_example_spec v1',
           tf.compat.v1.estimator.regressor_parse_example_spec, columns,
           'label', label_dtype=tf.float64)


def _vocab_model(rec, name, vocab, warm_start_from=None):
  with open(rec.path(name + '.txt'), 'w') as f:
    f.write('\n'.join(vocab) + '\n')
  column = tf.feature_column.categorical_column_with_vocabulary_file(
      'word', rec.path(name + '.txt'), vocabulary_size=len(vocab))
  return tf.estimator.LinearClassifier(
      [column], rec.path(name), config=common.run_config(None),
      warm_start_from=warm_start_from)


def _words_input_fn():
  words = [b'a', b'b', b'c', b'a']
  return tf.data.Dataset.from_tensor_slices(
      ({'word': [[w] for w in words]}, [[1], [0], [1], [0]])).repeat().batch(
          2)


def run(rec):
  _parse_specs(rec)
  old = _vocab_model(rec, 'old', ['a', 'b', 'c'])
  old.train(_words_input_fn, steps=3)
  weights = [n for n in old.get_variable_names() if 'word/weights' in n]
  rec.value('old variables', old.get_variable_names())
  vocab_info = tf.estimator.VocabInfo(
      new_vocab=rec.path('new.txt'), new_vocab_size=3, num_oov_buckets=0,
      old_vocab=rec.path('old.txt'))
  settings = tf.estimator.WarmStartSettings(
      old.model_dir, vars_to_warm_start='.*word.*',
      var_name_to_vocab_info={weights[0]: vocab_info} if weights else None)
  new = _vocab_model(rec, 'new', ['c', 'a', 'z'], warm_start_from=settings)
  rec.call('warm started: train', new.train, _words_input_fn, steps=1)
  for name in weights:
    rec.call(f'old {name}', old.get_variable_value, name)
    rec.call(f'new {name}', new.get_variable_value, name)
  by_path = _vocab_model(rec, 'by_path', ['a', 'b', 'c'],
                         warm_start_from=old.model_dir)
  rec.call('warm_start_from a path: train', by_path.train, _words_input_fn,
           steps=1)
  for name in weights:
    rec.call(f'by_path {name}', by_path.get_variable_value, name)
  rec.call('warm start from a missing variable', lambda: tf.estimator
           .Estimator(common.tf1_model_fn, rec.path('missing'), params={},
                      warm_start_from=tf.estimator.WarmStartSettings(
                          old.model_dir, vars_to_warm_start=['w'])).train(
                              common.input_fn(), steps=1))
