"""The eager engine: TF2 model_fns, called eagerly once, run in compiled loops.

  - `model`: one mode of the model_fn (`EagerModel`): its variables, built
    by one eager call, and calls of the model_fn on them.
  - `variable_store`: hands a rebuilt model the variables of the build call.
  - `loops`: the compiled inner loops (training, evaluation, prediction).
  - `train_paths`: one object per way of running training steps (a
    strategy in this process, a parameter-server coordinator, a standalone
    client replicating in-graph over remote workers, `in_graph`).
  - `restore`: restoring and warm-starting from object-based checkpoints.
  - `engine`: `EagerEngine`, an `engine.Engine`.
"""
