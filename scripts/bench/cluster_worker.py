"""One task of one distributed benchmark run (see scripts.bench.distributed).

    TF_CONFIG=... python -m scripts.bench.cluster_worker --side bare \
        --strategy multi_worker_mirrored --workload W2 --steps 3000
    python -m scripts.bench.cluster_worker --side client \
        --strategy parameter_server --remote_cluster '{...}' ...

Sides:

  bare: a plain TF2 program on the TF_CONFIG cluster, the reference. Under
    multi_worker_mirrored each worker builds the workload's Keras model and
    optimizer under `tf.distribute.MultiWorkerMirroredStrategy` and calls a
    `tf.function` of `strategy.run` steps over `tf.range(n)`. Under
    parameter_server the chief builds them under `ParameterServerStrategy`
    and schedules that same function on the workers through a
    `ClusterCoordinator`, splitting each loop's steps between the workers
    (as the runtime does), then joins; ps and worker tasks only run a
    `tf.distribute.Server` until they are killed.
  runtime: every task runs `estimator_rt.train_and_evaluate` from its
    TF_CONFIG, as the binary does (the parameter-server chief schedules, its
    workers and ps serve until it signals the end).
  client: a standalone client, outside the cluster, driving servers started
    by `python -m estimator_rt.run_server` (`--remote_cluster`).

All sides read the workload's input_fn with an input context (per-replica
batches, one pipeline per worker) and run loops of 1, 99, then 100 global
steps. The task that reports (the chief, worker 0 of multi_worker_mirrored,
the client) prints one `BENCH_RESULT {json}` line as scripts.bench.worker
does; the others print nothing.
"""

import argparse
import json
import os
import tempfile
import time

from absl import logging as absl_logging
import tensorflow as tf

import estimator_rt as ert
from scripts.bench.loops import BoundaryHook
from scripts.bench.loops import loop_sizes
from scripts.bench.loops import LoopRecord
from scripts.bench.loops import runtime_config
from scripts.bench.protocol import add_run_flags
from scripts.bench.protocol import check_steps
from scripts.bench.protocol import exit_at_once
from scripts.bench.protocol import write_result
from scripts.bench.workloads import WORKLOADS

_IMPORTS_DONE_WALL = time.time()

MULTI_WORKER_MIRRORED = 'multi_worker_mirrored'
PARAMETER_SERVER = 'parameter_server'


def _task():
  """(task type, index) from TF_CONFIG; ('client', 0) without one."""
  config = json.loads(os.environ.get('TF_CONFIG') or '{}')
  task = config.get('task') or {'type': 'client', 'index': 0}
  return task['type'], int(task['index'])


def _reports(strategy: str) -> bool:
  """Whether this task prints the result: the one the others follow."""
  task_type, index = _task()
  if task_type == 'client':
    return True
  if strategy == MULTI_WORKER_MIRRORED:
    return task_type == 'worker' and index == 0
  return task_type == 'chief'


def _input_fn(workload: str):
  spec = WORKLOADS[workload]
  return lambda context: spec['input_fn'](dict(spec['params']), context)


def _bare_model(workload: str, strategy):
  """The workload's model and optimizer, built under `strategy`."""
  spec = WORKLOADS[workload]
  with strategy.scope():
    model = spec['bare_model']()
    model.build((None,) + tuple(
        _input_fn(workload)(None).element_spec[0]['x'].shape[1:]))
    optimizer = spec['bare_optimizer']()
    optimizer.build(model.trainable_variables)
  return model, optimizer, spec['bare_loss']


def _bare_train_function(strategy, model, optimizer, loss_fn):
  """`train(iterator, n)`: n steps of `strategy.run`, each replica's loss
  scaled by its share of the global batch (as the runtime does), the
  reduced loss of the last step returned."""
  variables = model.trainable_variables
  replicas = strategy.num_replicas_in_sync

  def replica_step(features, labels):
    with tf.GradientTape() as tape:
      loss = loss_fn(labels, model(features['x'], training=True)) / replicas
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  @tf.function
  def train(iterator, num_steps):
    loss = tf.constant(0.0)
    for _ in tf.range(num_steps):
      features, labels = next(iterator)
      per_replica = strategy.run(replica_step, args=(features, labels))
      loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica,
                             axis=None)
    return loss

  return train


def run_bare_multi_worker(workload: str, total_steps: int, record) -> None:
  strategy = tf.distribute.MultiWorkerMirroredStrategy()
  model, optimizer, loss_fn = _bare_model(workload, strategy)
  train = _bare_train_function(strategy, model, optimizer, loss_fn)
  iterator = iter(strategy.distribute_datasets_from_function(
      _input_fn(workload)))
  step = 0
  for size in loop_sizes(total_steps):
    train(iterator, tf.constant(size, tf.int32)).numpy()
    step += size
    record(step, None)


def run_bare_parameter_server(workload: str, total_steps: int,
                              record) -> None:
  """The chief: schedules each loop's steps on the workers, split as the
  runtime splits them (see `make_coordinated_train_loop` in
  estimator_rt/training/eager/loops.py), and joins."""
  resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
  strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
  coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(
      strategy)
  num_workers = len(resolver.cluster_spec().as_dict()['worker'])
  model, optimizer, loss_fn = _bare_model(workload, strategy)
  train = _bare_train_function(strategy, model, optimizer, loss_fn)
  input_fn = _input_fn(workload)
  per_worker = coordinator.create_per_worker_dataset(
      lambda: strategy.distribute_datasets_from_function(input_fn))
  iterator = iter(per_worker)
  step = 0
  for size in loop_sizes(total_steps):
    parts = min(num_workers, size)
    scheduled = [
        coordinator.schedule(train, args=(
            iterator, tf.constant(size // parts + (i < size % parts),
                                  tf.int32)))
        for i in range(parts)]
    coordinator.join()
    for result in scheduled:
      result.fetch()
    step += size
    record(step, None)


def serve_bare() -> None:
  """A bare worker or ps: a standard server, until killed."""
  resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
  server = tf.distribute.Server(
      resolver.cluster_spec(), job_name=resolver.task_type,
      task_index=resolver.task_id, protocol='grpc', start=True)
  server.join()


def _estimator(workload: str, strategy: str, model_dir: str, total_steps: int,
               remote_cluster=None):
  spec = WORKLOADS[workload]
  return ert.Estimator(
      spec['model_fn'], model_dir=model_dir,
      config=runtime_config(total_steps, train_distribute=strategy,
                            remote_cluster=remote_cluster),
      params=dict(spec['params']))


def run_runtime(workload: str, strategy: str, total_steps: int, record, *,
                model_dir: str) -> None:
  """This task's part of `train_and_evaluate`, as the binary runs it, with
  the local runtime side's `runtime_config` (the final evaluation, one
  batch, comes after the last recorded loop)."""
  spec = WORKLOADS[workload]
  estimator = _estimator(workload, strategy, model_dir, total_steps)
  ert.train_and_evaluate(
      estimator,
      ert.TrainSpec(spec['input_fn'], max_steps=total_steps,
                    hooks=[BoundaryHook(record)]),
      ert.EvalSpec(spec['input_fn'], steps=1, exporters=()))


def run_client(workload: str, strategy: str, total_steps: int, record, *,
               model_dir: str, remote_cluster: dict) -> None:
  """A standalone client training on `remote_cluster`'s servers."""
  spec = WORKLOADS[workload]
  estimator = _estimator(workload, strategy, model_dir, total_steps,
                         remote_cluster=remote_cluster)
  estimator.train(spec['input_fn'], max_steps=total_steps,
                  hooks=[BoundaryHook(record)])


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(
      prog='python -m scripts.bench.cluster_worker',
      description=__doc__.split('\n')[0])
  parser.add_argument('--side', choices=('bare', 'runtime', 'client'),
                      required=True)
  parser.add_argument('--strategy',
                      choices=(MULTI_WORKER_MIRRORED, PARAMETER_SERVER),
                      required=True)
  add_run_flags(parser, sorted(WORKLOADS), steps_help='total global steps')
  parser.add_argument('--model_dir', default=None,
                      help='runtime and client sides: the model_dir, the '
                      'same for every task (default: a new temporary one)')
  parser.add_argument('--remote_cluster', default=None,
                      help='client side: the servers, as JSON')
  args = parser.parse_args(argv)
  check_steps(parser, args)
  if (args.side == 'client') != (args.remote_cluster is not None):
    parser.error('--remote_cluster goes with --side=client, and only there.')
  absl_logging.set_verbosity(absl_logging.INFO)

  loops = LoopRecord()
  model_dir = args.model_dir or tempfile.mkdtemp(prefix='bench_cluster_')
  task_type, _ = _task()
  if args.side == 'bare':
    if task_type in ('ps',) or (task_type == 'worker' and
                                args.strategy == PARAMETER_SERVER):
      serve_bare()
      return 0
    run = (run_bare_multi_worker if args.strategy == MULTI_WORKER_MIRRORED
           else run_bare_parameter_server)
    run(args.workload, args.steps, loops.record)
  elif args.side == 'runtime':
    run_runtime(args.workload, args.strategy, args.steps, loops.record,
                model_dir=model_dir)
  else:
    run_client(args.workload, args.strategy, args.steps, loops.record,
               model_dir=model_dir,
               remote_cluster=json.loads(args.remote_cluster))

  if _reports(args.strategy):
    write_result({
        'side': args.side, 'strategy': args.strategy,
        'workload': args.workload,
        **loops.result_fields(imports_done_wall=_IMPORTS_DONE_WALL)})
  return 0


if __name__ == '__main__':
  exit_at_once(main())
