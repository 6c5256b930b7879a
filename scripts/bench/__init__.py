"""The benchmark: estimator_rt against a bare TF2 loop, its peers and
itself on loopback clusters. Run from the repository root:

    python -m scripts.bench [--rounds 3] [--workloads W1,W3] [--peers] ...

Every side runs in a fresh child process (`python -m scripts.bench.<worker>`)
that prints one result line; the parent imports nothing heavy.

Modules, each importing only those below it (never a parent):

  suite               `make bench`: every benchmark below, each ratio beside
                      the last recorded one (docs/benchmarks.json)
  figures             the suite's figures, their noise and the drops
  calls               the calls benchmark: each call on one Estimator
                      against tf.estimator 2.15
  canned              the canned estimators against tf.estimator 2.15
  __main__            the command line: runs the comparisons, prints tables
  report              summaries (medians, ratios, targets) and tables
  local_runs          one child per side of the local comparison
  distributed         the `--distributed` runs on loopback clusters
  settings            workloads, steps, peers and targets of the comparison
  processes           where children run, with what environment; running
                      one and reading its result

  worker              child: one side of one local run (bare, runtime,
                      graph, keras_fit)
  cluster_worker      child: one task of one distributed run
  calls_worker        child, under either TensorFlow: one side of the calls
                      benchmark
  canned_worker       child, under either TensorFlow: one side of the
                      canned benchmark
  peer_data           child: the arrays the tf.estimator side trains on
  loops               the loop boundaries every TensorFlow 2.21 side records
  workloads           W1-W3: the project's model_fn/input_fn and their bare
                      and TF1-style equivalents
  tf_estimator_worker child under TensorFlow 2.15 (.venv-tf215): the
                      tf.estimator side; standard library and `protocol`
                      only at the top

  protocol            standard library only: the result line, the
                      steady-state figures, the exit, shared by every child
                      and parent

Nothing is imported here: the tf.estimator 2.15 environment, which cannot
import the project, imports this package too.
"""
