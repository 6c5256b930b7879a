"""The thread pools a RunConfig's `session_config` asks for, applied to the
process.

tf.estimator 2.15 ran its graph in a session made with the user's
`session_config`, usually the process's first use of TensorFlow's runtime,
so `intra_op_parallelism_threads` and `inter_op_parallelism_threads` sized
the CPU device's pools. TensorFlow sizes the intra-op pool once per process,
when its runtime starts: here that is the eager context, which the runtime
starts before any session (choosing the engine runs the model_fn eagerly),
so a session's own setting would be silently ignored. `apply` carries the
user's counts into the eager context's configuration instead, while it can
still take them.

Why users set them: CPU jobs that run several tasks per host size the pools
to their share of the cores; and small models train faster with one
intra-op thread on TensorFlow 2.16 and later, whose fused Adam kernel
(`tf.compat.v1.train.AdamOptimizer`, the canned estimators' 'Adam') splits
even a 2,048-element variable across the intra-op pool
(docs/engines.md).
"""

from absl import logging
import tensorflow as tf

# The ConfigProto field, and the tf.config.threading setter that sizes the
# same pool in the eager context.
_SETTERS = {
    'intra_op_parallelism_threads':
        tf.config.threading.set_intra_op_parallelism_threads,
    'inter_op_parallelism_threads':
        tf.config.threading.set_inter_op_parallelism_threads,
}


def apply(session_config) -> None:
  """Sizes the process's thread pools as `session_config` asks.

  A field left at 0 (TensorFlow's choice) changes nothing. The first
  Estimator of a process to ask wins, as the first session did under
  tf.estimator 2.15. See `size_pools` for a runtime already started.

  Args:
    session_config: a `tf.compat.v1.ConfigProto`, or None.
  """
  if session_config is not None:
    size_pools({field: getattr(session_config, field) for field in _SETTERS},
               asked_by='RunConfig(session_config=...)')


def size_pools(counts, *, asked_by: str) -> None:
  """Sizes the pools to `counts` ({ConfigProto field: threads}; 0 or None:
  TensorFlow's choice).

  Once TensorFlow's runtime has started with other sizes, they can no
  longer change: this logs one warning naming the fields, their values and
  what to do, and training goes on with the pools as they are.

  Args:
    counts: threads per field of `_SETTERS`.
    asked_by: who asked, for the warning (a flag, the RunConfig).
  """
  refused = []
  for field, wanted in counts.items():
    if not wanted or wanted <= 0:
      continue
    try:
      _SETTERS[field](wanted)
    except RuntimeError:  # TensorFlow's runtime started with other sizes.
      refused.append(f'{field}={wanted}')
  if refused:
    logging.warning(
        '%s asks for %s, but TensorFlow\'s runtime already started in this '
        'process with other thread pools, which cannot change any more: '
        'training goes on with them. To have it, construct the Estimator '
        'before running any TensorFlow op, or call '
        'tf.config.threading.set_intra_op_parallelism_threads / '
        'set_inter_op_parallelism_threads at the start of the program.',
        asked_by, ', '.join(refused))
