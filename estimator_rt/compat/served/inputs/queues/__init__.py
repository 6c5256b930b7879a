"""tf.estimator 2.15's `inputs/queues`: TF1 queue-based feeding of numpy
arrays and pandas DataFrames (feeding_functions, feeding_queue_runner), as
2.15's own input functions fed them before tf.data."""
