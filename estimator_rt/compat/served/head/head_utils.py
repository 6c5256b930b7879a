"""tf.estimator 2.15's `head/head_utils.py`: `binary_or_multi_class_head`,
which its canned classifiers (and libraries' own) call to pick their head,
estimator_rt's; and the module's helpers for head tests, which drive the
`tf.test.TestCase` they are given over a head's spec."""

import tensorflow as tf

# pylint: disable=unused-import
from estimator_rt.head.head_utils import binary_or_multi_class_head
from estimator_rt.head import keys as _keys

_DEFAULT_SERVING_KEY = _keys.DEFAULT_SERVING_KEY


def _initialize_variables(test_case, scaffold):
  """Finalizes `scaffold` and runs its init, ready and local-init ops in
  the test's default session, asserting what 2.15 asserted (no feed dict,
  no init_fn, a saver)."""
  scaffold.finalize()
  test_case.assertIsNone(scaffold.init_feed_dict)
  test_case.assertIsNone(scaffold.init_fn)
  scaffold.init_op.run()
  scaffold.ready_for_local_init_op.eval()
  scaffold.local_init_op.run()
  scaffold.ready_op.eval()
  test_case.assertIsNotNone(scaffold.saver)


def _assert_simple_summaries(test_case, expected_summaries, summary_str,
                             tol=1e-6):
  """Asserts that the serialized Summary `summary_str` holds exactly
  `expected_summaries` ({tag: simple value}), within `tol`."""
  summary = tf.compat.v1.summary.Summary()
  summary.ParseFromString(summary_str)
  test_case.assertAllClose(expected_summaries,
                           {v.tag: v.simple_value for v in summary.value},
                           rtol=tol, atol=tol)


def _assert_no_hooks(test_case, spec):
  """Asserts that `spec` has no training hooks."""
  test_case.assertAllEqual([], spec.training_chief_hooks)
  test_case.assertAllEqual([], spec.training_hooks)
