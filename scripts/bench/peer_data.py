"""The arrays the tf.estimator side trains on, written by the project's
Python.

    python -m scripts.bench.peer_data W1 /tmp/W1.npz [W2 /tmp/W2.npz ...]

The tf.estimator 2.15 environment cannot import the project, so for each
workload this saves what its input_fn draws from and the model's settings
(`write_data`), after checking that `tf_estimator_worker.make_dataset`
rebuilds the input_fn's batches from them. Exit code 0 when every file is
written; an exception (exit 1) names the workload that cannot be mirrored.
"""

import json
import sys

import numpy as np

from input_fns import digits
from scripts.bench import tf_estimator_worker
from scripts.bench import workloads
from scripts.bench.tf_estimator_worker import WORKLOADS

# Whether each workload's input_fn shuffles its examples. Those that do
# (input_fns.digits.train_input_fn, input_fns.synthetic.images_input_fn)
# shuffle the whole block, seeded by params['seed']; write_data checks that
# the pipeline rebuilt from these settings gives the input_fn's batches.
_SHUFFLED = {'W1': False, 'W2': True, 'W3': True}

# The input_fns' default params['seed'].
_DEFAULT_SEED = 0


def _one_pass_arrays(input_fn, params):
  """Returns (x, y), the block `input_fn` serves, in generation order.

  Read from one unshuffled pass with the final partial batch kept.
  """
  one_pass = input_fn(dict(params, num_epochs=1, shuffle=False,
                           drop_remainder=False))
  batches = list(one_pass.as_numpy_iterator())
  return (np.concatenate([features['x'] for features, _ in batches]),
          np.concatenate([labels for _, labels in batches]))


def _check_same_batches(project_dataset, dataset, num_batches: int) -> None:
  """Raises ValueError unless both datasets start with the same batches."""
  for index, (theirs, ours) in enumerate(zip(
      project_dataset.take(num_batches).as_numpy_iterator(),
      dataset.take(num_batches).as_numpy_iterator())):
    (their_features, their_labels), (our_features, our_labels) = theirs, ours
    if not (np.array_equal(their_features['x'], our_features['x']) and
            np.array_equal(their_labels, our_labels)):
      raise ValueError(
          f'batch {index} of the rebuilt pipeline differs from the project '
          "input_fn's: update _SHUFFLED or make_dataset to match it.")


def write_data(workload: str, path: str) -> None:
  """Saves what the tf.estimator side needs to train `workload` to `path`.

  Runs under the project's Python (the project's input_fns and Keras 3).
  The file (.npz, read without pickle) holds:

    x, y: the arrays the workload's input_fn draws its examples from, in
      the order it draws them before shuffling.
    meta: JSON of the workload, the pipeline's batch_size, shuffle_buffer
      and seed, the model_fn's params (layer sizes from the model_fn's
      DEFAULT_PARAMS; optimizer kind and hyperparameters from the bare
      side's Keras optimizer) and variable_shapes, the shapes of the bare
      model's trainable variables, which the tf.estimator model must have.

  Before saving, it checks that `make_dataset` on these arrays gives the
  same first batches (past the end of the first epoch) as the input_fn.

  Args:
    workload: 'W1', 'W2' or 'W3'.
    path: the .npz file to write.

  Raises:
    ValueError: unknown workload, an optimizer that cannot be mirrored, or
      a rebuilt pipeline that does not match the input_fn's.
  """
  if workload not in WORKLOADS:
    raise ValueError(f'workload {workload!r} is not one of {WORKLOADS}.')
  # The bare side's definitions are the reference.
  spec = workloads.WORKLOADS[workload]
  input_params = dict(spec['params'])
  if spec['input_fn'] is digits.train_input_fn:
    # Always shuffled, so no unshuffled pass to read: its split is the block.
    x, y, _, _ = digits.load_split()
  else:
    x, y = _one_pass_arrays(spec['input_fn'], input_params)
  pipeline = {
      'batch_size': input_params['batch_size'],
      'shuffle_buffer': len(y) if _SHUFFLED[workload] else 0,
      'seed': input_params.get('seed', _DEFAULT_SEED),
  }
  batches_per_epoch = -(-len(y) // pipeline['batch_size'])
  _check_same_batches(spec['input_fn'](input_params),
                      tf_estimator_worker.make_dataset(x, y, **pipeline),
                      batches_per_epoch + 2)

  model = spec['bare_model']()
  model.build((None,) + tuple(x.shape[1:]))
  meta = {
      'workload': workload,
      **pipeline,
      'params': workloads.tf1_hyperparameters(workload),
      'variable_shapes': [list(v.shape) for v in model.trainable_variables],
  }
  np.savez(path, x=x, y=y, meta=np.array(json.dumps(meta)))


def main(argv) -> int:
  """Writes `write_data(workload, path)` for each (workload, path) pair of
  `argv`."""
  if not argv or len(argv) % 2:
    raise SystemExit('usage: python -m scripts.bench.peer_data WORKLOAD PATH '
                     '[WORKLOAD PATH ...]')
  for workload, path in zip(argv[::2], argv[1::2]):
    write_data(workload, path)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
