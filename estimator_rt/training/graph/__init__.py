"""The graph engine: TF1-style model_fns in a `tf.Graph`, as tf.estimator ran them.

  - `compat`: what TF1 code needs from today's TensorFlow (the legacy
    `tf.compat.v1.layers`, which Keras 3 dropped, come from `tf_keras`).
  - `model`: one mode of the model_fn built into a graph, replicated by a
    `placement` where the strategy asks for it.
  - `placement`: where the graph's ops and variables go for each strategy.
  - `session_loop`: the inner training loop over an open monitored session,
    driven by the same `controller.TrainController` as the eager engine's.
  - `between_graph`: sessions of parameter-server training (every task its
    own session on its own server).
  - `saved_model`: SavedModel export of the PREDICT graph.
  - `engine`: `GraphEngine`, an `engine.Engine`.
"""
