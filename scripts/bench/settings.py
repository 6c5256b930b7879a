"""What the local comparison runs and what it aims for: the workloads and
their steps, the peers, the train_and_evaluate comparison, the targets.

Standard library only (the parent imports nothing heavy).
"""

import os

from scripts.bench.processes import REPO_ROOT

# The Python of tf.estimator 2.15 (TensorFlow 2.15.1, tensorflow-estimator
# 2.15.0), made by scripts/tf_estimator_215/make_venv.sh (`make
# bench-peers`): never installed by `make test`.
PEER_PYTHON = os.path.join(REPO_ROOT, '.venv-tf215', 'bin', 'python')

WORKLOADS = ('W1', 'W2', 'W3')

# Steps per run, chosen so that each child has about 5-10 s of steady state
# on a 2-core CPU machine (bare W1 6,000-14,000 steps/s, W2 3,000-5,000,
# W3 ~100). Multiples of 100, so that every loop after the first two is a
# full one.
DEFAULT_STEPS = {'W1': 60000, 'W2': 30000, 'W3': 800}

# Minimum steps/s ratio runtime/bare per workload.
SPEED_TARGETS = {'W1': 0.98, 'W2': 0.98, 'W3': 0.98}
# Most seconds the runtime's first step may come after the bare loop's.
FIRST_STEP_TARGET_S = 0.3
# The peers (--peers): Keras 3 fit with steps_per_execution=100, and
# tf.estimator 2.15 in its own environment; minimum steps/s ratios
# runtime/peer (None: no target).
PEERS = ('keras_fit', 'tf_estimator')
# The local train_and_evaluate compared with tf.estimator's (--peers with
# tf_estimator): steps, checkpoint interval, eval batches after each
# checkpoint; the most wall time runtime/tf.estimator; on which workloads.
TAE_STEPS = 2000
TAE_CHECKPOINT_EVERY = 500
TAE_EVAL_STEPS = 20
TAE_TARGET = 0.5
TAE_WORKLOADS = ('W1', 'W2')
PEER_SPEED_TARGETS = {
    'keras_fit': {'W1': 1.0, 'W2': 1.0, 'W3': 1.0},
    'tf_estimator': {'W1': 3.0, 'W2': 1.8, 'W3': None},
}
# With --engine graph (TF1-style model_fns, W1 and W2; issue 28): the
# smallest steps/s ratios runtime/bare and runtime/peer.
GRAPH_SPEED_TARGETS = {'W1': 0.8, 'W2': 0.8}
GRAPH_PEER_SPEED_TARGETS = {
    'keras_fit': {'W1': None, 'W2': None},
    'tf_estimator': {'W1': 2.0, 'W2': 2.0},
}
# Largest peak-RSS ratio runtime/bare.
MEMORY_TARGET = 1.2

DEFAULT_TIMEOUT_S = 300
