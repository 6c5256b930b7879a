"""multi_worker_mirrored on Ray Train: TensorflowTrainer calling estimator_rt.

    python -m estimator_rt.launch.ray_train --address=auto --num_workers 2 \
        --model_fn=model_fns.mlp:model_fn \
        --input_fn=input_fns.digits:train_input_fn \
        --eval_input_fn=input_fns.digits:eval_input_fn \
        --params='{"batch_size": 128}' --model_dir=/shared/run1 \
        --max_steps=2000 --save_checkpoints_steps=500

Ray Train's `ray.train.tensorflow.TensorflowTrainer` starts
`--num_workers` Ray Train workers and, before the training function runs
in each, sets its TF_CONFIG: a cluster of `worker` tasks only, at each
worker's node address and a free port, `{"cluster": {"worker": [...]},
"task": {"type": "worker", "index": <world rank>}}` (as of Ray 2.60,
`ray/train/tensorflow/config.py`). estimator_rt reads that like any
TF_CONFIG without a `chief` job: worker 0 (Ray's rank 0) is the chief,
the only writer of model_dir, and, as no evaluator task can run, it
evaluates the final checkpoint and runs the exporters after training (a
chief does not otherwise: see estimator_rt/cluster/roles.py); the other workers
save into a scratch directory that is removed at exit. The training
function here (`train_loop_per_worker`) builds an `Estimator` with
`train_distribute='multi_worker_mirrored'` and calls
`estimator_rt.train_and_evaluate` in the worker's own process; the chief
prints the final metrics. Ray forwards each worker's output to the driver
prefixed with Ray's own `(RayTrainWorker pid=...)`, not the role; each
worker logs its role once (`Running as worker:0 (chief) at ...`).

What this route cannot do, and `estimator_rt.launch.ray_job` can: ps tasks,
a separate evaluator task, parameter_server at all (Ray Train makes workers
only); restarting on estimator_rt's exit codes (Ray Train retries a failed
run as a whole, `FailureConfig(max_failures=...)`); the bind guard (the
training function runs inside Ray's worker process, which was not started
with it, so TensorFlow's server listens on every interface of the node:
keep the cluster on a private network). Also:

- Ray Train sets `TF_USE_LEGACY_KERAS=1` for Keras 2 (tf_keras); estimator_rt
  is Keras 3, so the training function unsets it before importing
  estimator_rt.
- `--model_dir` must be on storage every worker's node sees; Ray Train's
  own `storage_path` (`--storage_path`) only holds Ray's run records here:
  the checkpoints are estimator_rt's, in model_dir, and a rerun resumes
  from them.
- The flags name the model and input functions as the binary's do
  (`module.path:attr` or `path/to/file.py:attr`), and each worker imports
  them, so they must import on every node.

Exit code: 0 when Ray Train reports the run finished; 1 if it failed
(Ray's error printed); 2 for bad flags.
"""

import argparse
import json
import os
import sys
from typing import Optional, Sequence

from estimator_rt.launch.exit_policy import BAD_INPUT_EXIT_CODE


def train_loop_per_worker(config: dict) -> None:
  """Runs in every Ray Train worker, with the TF_CONFIG Ray Train set."""
  # Ray Train asks for Keras 2; estimator_rt and its model_fns use Keras 3.
  os.environ.pop('TF_USE_LEGACY_KERAS', None)
  # pylint: disable=g-import-not-at-top
  import estimator_rt as ert
  from estimator_rt.estimator import train_and_evaluate as training
  from estimator_rt.core import user_fns
  # pylint: enable=g-import-not-at-top
  print(f'TF_CONFIG from Ray Train: {os.environ.get("TF_CONFIG")}',
        flush=True)
  # An unset --save_checkpoints_steps keeps RunConfig's default schedule.
  schedule = ({} if config['save_checkpoints_steps'] is None else
              {'save_checkpoints_steps': config['save_checkpoints_steps']})
  run_config = ert.RunConfig(
      model_dir=config['model_dir'],
      train_distribute='multi_worker_mirrored',
      log_step_count_steps=config['log_step_count_steps'], **schedule)
  estimator = ert.Estimator(
      user_fns.load_callable(config['model_fn'], flag='model_fn'),
      config=run_config, params=config['params'])
  eval_spec = ert.EvalSpec(
      user_fns.load_callable(config['eval_input_fn'], flag='eval_input_fn'),
      steps=config['eval_steps'], throttle_secs=0)
  ert.train_and_evaluate(
      estimator,
      ert.TrainSpec(user_fns.load_callable(config['input_fn'],
                                           flag='input_fn'),
                    max_steps=config['max_steps']),
      eval_spec)
  if not estimator.config.is_chief:
    return
  # Ray Train's TF_CONFIG has workers only, so no evaluator task can run:
  # the chief (Ray's rank 0) evaluates the final checkpoint and exports.
  # Ray Train keeps reported metrics only with a Ray checkpoint, and the
  # checkpoints here are estimator_rt's, in model_dir: print them.
  metrics, exports = training.evaluate_final_checkpoint(estimator, eval_spec)
  print(f'Final metrics: {json.dumps(metrics, default=float)}', flush=True)
  for path in exports:
    print(f'Exported: {path}', flush=True)


def run(*, address, num_workers, cpus_per_worker, storage_path,
        train_config):
  """Runs `train_loop_per_worker` on `num_workers` Ray Train workers;
  returns Ray Train's `Result`.

  Raises:
    ray.train.TrainingFailedError: a worker failed.
  """
  # pylint: disable=g-import-not-at-top
  import ray
  from ray.train import RunConfig
  from ray.train import ScalingConfig
  from ray.train.tensorflow import TensorflowTrainer
  # pylint: enable=g-import-not-at-top
  ray.init(address=address)
  try:
    trainer = TensorflowTrainer(
        train_loop_per_worker=train_loop_per_worker,
        train_loop_config=train_config,
        scaling_config=ScalingConfig(
            num_workers=num_workers,
            resources_per_worker={'CPU': cpus_per_worker}),
        run_config=RunConfig(name='estimator_rt_mwms',
                             storage_path=storage_path))
    return trainer.fit()
  finally:
    ray.shutdown()


def _parse_args(argv) -> argparse.Namespace:
  parser = argparse.ArgumentParser(
      prog='python -m estimator_rt.launch.ray_train',
      description=__doc__.split('\n\n')[0])
  parser.add_argument('--address', default='auto',
                      help="the Ray cluster: 'auto', 'host:port' or 'local'")
  parser.add_argument('--num_workers', type=int, default=2)
  parser.add_argument('--cpus_per_worker', type=float, default=1.0)
  parser.add_argument('--storage_path', default=None,
                      help="Ray Train's run records (default: "
                      '~/ray_results)')
  parser.add_argument('--model_fn', required=True)
  parser.add_argument('--input_fn', required=True)
  parser.add_argument('--eval_input_fn', required=True)
  parser.add_argument('--params', default='{}', help='JSON')
  parser.add_argument('--model_dir', required=True)
  parser.add_argument('--max_steps', type=int, required=True)
  parser.add_argument('--save_checkpoints_steps', type=int, default=None)
  parser.add_argument('--eval_steps', type=int, default=100)
  parser.add_argument('--log_step_count_steps', type=int, default=100)
  args = parser.parse_args(argv)
  if args.num_workers < 1:
    parser.error(f'--num_workers={args.num_workers}: need 1 or more')
  if not args.cpus_per_worker > 0:
    parser.error(f'--cpus_per_worker={args.cpus_per_worker}: must be more '
                 'than 0')
  try:
    args.params = json.loads(args.params)
  except json.JSONDecodeError as e:
    parser.error(f'--params={args.params}: not JSON ({e})')
  if not isinstance(args.params, dict):
    parser.error(f'--params={json.dumps(args.params)}: give a JSON object')
  return args


def main(argv: Optional[Sequence[str]] = None) -> int:
  args = _parse_args(argv)
  try:
    import ray.train.tensorflow  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError as e:
    print(f'error: cannot import ray.train.tensorflow ({e}); install it '
          "with pip install 'estimator_rt[ray]'", file=sys.stderr)
    return BAD_INPUT_EXIT_CODE
  train_config = {
      'model_fn': args.model_fn, 'input_fn': args.input_fn,
      'eval_input_fn': args.eval_input_fn, 'params': args.params,
      'model_dir': os.path.abspath(args.model_dir),
      'max_steps': args.max_steps,
      'save_checkpoints_steps': args.save_checkpoints_steps,
      'eval_steps': args.eval_steps,
      'log_step_count_steps': args.log_step_count_steps}
  from ray.train import TrainingFailedError  # pylint: disable=g-import-not-at-top
  try:
    run(address=args.address, num_workers=args.num_workers,
        cpus_per_worker=args.cpus_per_worker,
        storage_path=args.storage_path, train_config=train_config)
  except TrainingFailedError as e:  # A worker failed, no retry left.
    print(f'error: Ray Train run failed: {e}', file=sys.stderr)
    return 1
  print('Ray Train run finished.', flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
