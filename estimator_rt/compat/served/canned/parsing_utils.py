"""tf.estimator 2.15's `canned/parsing_utils.py`: the parsing specs of
classifiers and regressors, in their TF2 (`*_v2`, tf.estimator's) and v1
(tf.compat.v1.estimator's) forms, estimator_rt's."""

from estimator_rt import parse_specs

classifier_parse_example_spec_v2 = parse_specs.classifier_parse_example_spec
regressor_parse_example_spec_v2 = parse_specs.regressor_parse_example_spec
classifier_parse_example_spec = parse_specs.classifier_parse_example_spec_v1
regressor_parse_example_spec = parse_specs.regressor_parse_example_spec_v1


def _add_label_and_weight_to_parsing_spec(parsing_spec, label_key, label_spec,
                                          weight_column=None):
  """`parsing_spec` (changed in place, and returned) with `label_spec` under
  `label_key` and the weight column's spec (a key or numeric column).

  Raises:
    ValueError: the label or the weight column is also a feature, or the
      weight column is not a numeric column.
  """
  return parse_specs.with_label_and_weight(
      parsing_spec, label_key=label_key, label_spec=label_spec,
      weight_column=weight_column)
