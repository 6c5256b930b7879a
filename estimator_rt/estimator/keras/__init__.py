"""`model_to_estimator`: an Estimator over a compiled Keras model.

  - `model_to_estimator`: the function, and the model_fn it writes.
  - `graph_models`: tf_keras models built in a `tf.Graph` (TF1 graph mode).
  - `train_op`: training where the model_fn applies the optimizers itself.
  - `learning_rates`: a tf_keras schedule or `decay` as a Keras 3 schedule.

May import what `estimator_rt.estimator` may, and `estimator.estimator`.
"""
