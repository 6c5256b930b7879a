"""tf.estimator 2.15's `tpu` package (TPUEstimator and its helpers), served
over estimator_rt.estimator.tpu.tpu_estimator, which runs TPUEstimator programs without a TPU."""
