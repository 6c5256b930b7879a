"""TensorFlow modules that TensorFlow <= 2.15 shipped for tf.estimator and
2.16 removed with it, served by `estimator_rt.compat.finder` under their
TensorFlow paths (see `finder.REMOVED_TF_MODULES`) over estimator_rt."""
