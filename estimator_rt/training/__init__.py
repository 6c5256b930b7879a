"""Training: the outer loop and its policies, and the two engines that run a model_fn.

  - `engine_choice`: which engine runs a model_fn (the model_fn's first
    real call decides, without a setting).
  - `engine`: the `Engine` interface both engines implement, and the
    training prologue they share; `eager/` (TF2 model_fns in compiled
    loops) and `graph/` (TF1-style model_fns in a tf.Graph and a monitored
    session) implement it.
  - `controller`: the outer loop for both engines: how many steps each
    inner loop runs, and what happens between loops (hooks, logging,
    summaries, checkpoints, divergence, preemption, agreement);
    `divergence`: what counts as diverged weights, for both engines.
  - `hooks`, `per_loop_hooks`, `early_stopping`: code that runs between
    loops (tf.estimator's SessionRunHooks where their meaning survives).
  - `graph_files`: the files tf.estimator wrote about a training graph.

Data flows down: `Estimator` asks `engine_choice` for an engine, the engine
builds the input (`inputs`), the strategy (`cluster`) and the model, and
hands its inner loop to the controller; exports go through `export`.

May import: `cluster`, `inputs`, `export`, `core`. Imported by `estimator`
and the entry points.
"""
