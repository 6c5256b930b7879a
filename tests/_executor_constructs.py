"""What model_fns put in a training step, each in a 10-step loop traced
for TensorFlow's single-threaded executor: whether the eager engine's check
(`executor_choice.runs_safely`) keeps it there, and, where it does, that the
loop returns on that executor with the default executor's numbers.

    python -m tests._executor_constructs LOGDIR [NAME ...]

LOGDIR: where the summary construct writes its event files.

Run in a fresh process by tests/test_executor_choice.py, which bounds its
time: a loop the executor deadlocks on never returns. Prints one line
`CONSTRUCT {json}` per construct, flushed before the next one starts.
"""

import json
import sys

import keras
import tensorflow as tf

from estimator_rt.training.eager import executor_choice

STEPS = 10


def _optimizer_step(optimizer):
  """A step of `optimizer` on a loss of one variable (builds it)."""
  weights = tf.Variable(tf.ones([4, 3]))
  optimizer.build([weights])

  def step(_):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(weights * weights)
    optimizer.apply_gradients(zip(tape.gradient(loss, [weights]),
                                  [weights]))
    return loss

  return step


def _summary(logdir):
  writer = tf.summary.create_file_writer(logdir)

  def step(s):
    with writer.as_default(step=s), tf.summary.record_if(s % 2 == 0):
      tf.summary.scalar('x', tf.cast(s, tf.float32))
    return tf.constant(1.0)

  return step


def _lstm(_):
  keras.utils.set_random_seed(1)
  lstm = keras.layers.LSTM(4)
  x = tf.ones([2, 5, 3])
  lstm(x)
  return lambda s: tf.reduce_sum(lstm(x))


def _hash_table(_):
  table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
      tf.constant([0, 1], tf.int64), tf.constant([1.0, 2.0])), -1.0)
  return lambda s: table.lookup(s % 2)


def _sparse_embedding(_):
  embeddings = tf.Variable(tf.reshape(tf.range(40.0), [10, 4]))

  def step(s):
    ids = tf.sparse.SparseTensor([[0, 0], [1, 1]],
                                 tf.stack([s % 10, (s + 3) % 10]), [2, 2])
    return tf.reduce_sum(tf.nn.safe_embedding_lookup_sparse(
        embeddings, ids, combiner='mean'))

  return step


def _tensor_array(_):

  def step(s):
    array = tf.TensorArray(tf.float32, size=3)
    for i in range(3):
      array = array.write(i, tf.cast(s, tf.float32) * i)
    return tf.reduce_sum(array.stack())

  return step


def _batch_norm(_):
  layer = keras.layers.BatchNormalization()
  x = tf.reshape(tf.range(12.0), [4, 3])
  layer.build((4, 3))
  return lambda s: tf.reduce_sum(layer(x * tf.cast(s, tf.float32),
                                       training=True) ** 2)


def _keras(optimizer):
  return lambda _: _optimizer_step(optimizer())


# name: (builder, given LOGDIR, of the step's value from the step number;
# whether the check keeps it on the single-threaded executor).
CONSTRUCTS = {
    'adam_with_schedule': (_keras(lambda: keras.optimizers.Adam(
        keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9))), True),
    'adam_clipnorm': (_keras(lambda: keras.optimizers.Adam(
        0.1, clipnorm=1.0)), True),
    'sgd_ema': (_keras(lambda: keras.optimizers.SGD(0.1, use_ema=True)),
                True),
    'adam_accumulated': (_keras(lambda: keras.optimizers.Adam(
        0.1, gradient_accumulation_steps=2)), True),
    'summary_record_if': (_summary, True),
    'batch_norm': (_batch_norm, True),
    'lstm': (_lstm, True),
    'tensor_array': (_tensor_array, True),
    'hash_table': (_hash_table, True),
    'sparse_embedding': (_sparse_embedding, True),
    'switch_case': (lambda _: lambda s: tf.switch_case(
        tf.cast(s % 3, tf.int32),
        [lambda: tf.constant(1.0), lambda: tf.constant(2.0),
         lambda: tf.constant(3.0)]), True),
    'assert_and_print': (lambda _: lambda s: (
        tf.debugging.assert_non_negative(s),
        tf.print(s, output_stream=sys.stderr), tf.constant(1.0))[2], True),
    # Nested conds: what TensorFlow 2.21's executor deadlocks on.
    'case': (lambda _: lambda s: tf.case(
        [(s < 2, lambda: tf.constant(1.0)), (s < 4, lambda: tf.constant(2.0))],
        default=lambda: tf.constant(3.0)), False),
    'loss_scale': (_keras(lambda: keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(0.1))), False),
}


def summing_loop(step_value):
  """(`loop(n)`, a `tf.function` whose `tf.while_loop` adds
  `step_value(step)` for steps 1..n, the variable holding the sum)."""
  total = tf.Variable(0.0)
  step = tf.Variable(0, dtype=tf.int64)

  @tf.function(autograph=False)
  def loop(n):

    def body(i):
      total.assign_add(tf.cast(step_value(step.assign_add(1)), tf.float32))
      return i + 1

    return tf.while_loop(lambda i: i < n, body, [tf.constant(0)])

  return loop, total


def run(name: str, executor, logdir: str):
  """(whether the check keeps the loop on `executor`, the loop's total or
  None where it was not run) for a fresh loop of construct `name`."""
  loop, total = summing_loop(CONSTRUCTS[name][0](logdir))
  with executor_choice.executor_scope(executor):
    graph = loop.get_concrete_function(tf.TensorSpec([], tf.int32)).graph
  kept = executor is None or executor_choice.runs_safely(graph)
  if not kept:
    return False, None
  with executor_choice.executor_scope(executor):
    loop(tf.constant(STEPS))
  return True, float(total.numpy())


def main(logdir, names):
  for name in names or CONSTRUCTS:
    kept, single = run(name, executor_choice.SINGLE_THREADED, logdir)
    default = run(name, None, logdir)[1] if kept else None
    print('CONSTRUCT ' + json.dumps({
        'name': name, 'kept': kept, 'single_threaded': single,
        'default': default}), flush=True)


if __name__ == '__main__':
  main(sys.argv[1], sys.argv[2:])
