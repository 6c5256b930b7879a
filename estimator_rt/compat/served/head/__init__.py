"""tf.estimator 2.15's `head` package (the TF2 heads), served over
estimator_rt.estimator.head."""
