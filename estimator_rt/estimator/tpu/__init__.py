"""tf.compat.v1.estimator.tpu: TPUEstimator run as tf.estimator ran it without a TPU.

  - `tpu_estimator`: `TPUEstimator`, `TPUEstimatorSpec`, `RunConfig`.
  - `context`: its TPU contexts; `system`: what it checked against the TPU
    system; `checks`: what it checked on the host while building a TPU
    program.
  - `host_calls`: TPUEstimatorSpec's `eval_metrics` and `host_call`.
  - `inputs`: what a TPU program's input_fn gives; `hooks`: its session
    helpers; `embedding`: TPU embedding configuration.

May import what `estimator_rt.estimator` may, and `estimator.estimator`.
"""
