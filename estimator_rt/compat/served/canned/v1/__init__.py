"""tf.estimator 2.15's `canned/v1` package, which held the v1 canned
estimators' tests only (no product module): served so that it imports, as
it did. The v1 canned estimators themselves are `tf.compat.v1.estimator.*`
(estimator_rt/canned/v1.py)."""
