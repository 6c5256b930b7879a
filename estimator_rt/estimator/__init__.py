"""What a user constructs: the Estimator, train_and_evaluate, and the estimators built on them.

  - `estimator`: `Estimator` (train, evaluate, predict, export one
    model_fn), with `overrides` (what a subclass may override),
    `protected_methods` (2.15's protected methods subclasses call),
    `warm_starting` (`WarmStartSettings`) and `extenders` (`add_metrics`).
  - `train_and_evaluate`: `TrainSpec`, `EvalSpec`, `train_and_evaluate`, and
    the part each task of a TF_CONFIG cluster plays in it; `evaluator`
    (what the evaluator task reads in model_dir) and `stand_in_tasks` (a
    task's part for an estimator the runtime does not drive).
  - `estimator_factory`: what the binary's `--model_fn` may name instead of
    a model_fn.
  - `canned/`, `head/`: tf.estimator 2.15's canned estimators and heads.
  - `keras/`: `model_to_estimator`.
  - `tpu/`: `TPUEstimator` and its helpers, run as tf.estimator ran them
    without a TPU.

May import: `training`, `cluster`, `inputs`, `export`, `core`. Imported by
the entry points only (`estimator_rt`'s public names, `main`, `compat`,
`launch`).
"""
