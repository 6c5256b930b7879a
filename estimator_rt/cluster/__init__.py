"""The cluster: where and as what this process runs.

  - `tf_config`: TF_CONFIG, parsed once and validated before anything
    starts (`TaskInfo`).
  - `run_config`: `RunConfig`, how and where an Estimator runs (its
    cluster, strategies, checkpoint and summary cadence, model_dir).
  - `roles`: the role this process plays (chief, worker, ps, evaluator,
    local), decided once from its task and strategy.
  - `strategies`: distribution strategies by name.
  - `server`: the standard TensorFlow servers of worker and ps tasks, and
    how they learn that training is over; `bind_guard` (with
    `_bind_guard.c`): a server listens on its cluster address only.
  - `preemption`: stop signals saved at the next loop boundary, and the
    exit code launchers read as "preempted, resumable".
  - `session_threads`: the thread pools a RunConfig's session_config asks
    for, applied to the process.

May import: `core`. Imported by the engines (`training`) and above.
"""
