"""What the repository keeps but does not ship: benchmarks (`bench`),
fixture makers, the Kubernetes manifest renderer, Slurm and example job
files.

A package so that `python -m scripts.bench` from the repository root finds
this checkout's modules (a namespace package would lose to any installed
top-level `scripts` package). Standard library only, and nothing imported
here: the tf.estimator 2.15 environment imports it too.
"""
