"""tf.estimator 2.15's `canned/parsing_utils.py`: the parsing specs of
classifiers and regressors, in their TF2 (`*_v2`, tf.estimator's) and v1
(tf.compat.v1.estimator's) forms, estimator_rt's."""

from estimator_rt import parse_specs

classifier_parse_example_spec_v2 = parse_specs.classifier_parse_example_spec
regressor_parse_example_spec_v2 = parse_specs.regressor_parse_example_spec
classifier_parse_example_spec = parse_specs.classifier_parse_example_spec_v1
regressor_parse_example_spec = parse_specs.regressor_parse_example_spec_v1
