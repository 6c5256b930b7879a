"""Synchronous training from a standalone client: in-graph replication.

TensorFlow 2 refuses MirroredStrategy over remote devices in eager mode, so
the client replicates the step itself: after connecting to the cluster, one
compiled step runs each worker's forward and backward pass on that worker's
device (`tf.device`), each on its own shard of the input read there,
averages the gradients and applies them once to the variables, which live
on the ps tasks (round robin), or on worker 0 when there is no ps. With
equal per-worker batches B this is exactly one process on batch K*B.
"""

import contextlib
import itertools
from typing import Callable, List

import tensorflow as tf

from estimator_rt.training.eager import loops
from estimator_rt.core import user_fns
from estimator_rt.cluster.tf_config import cpu_device
from estimator_rt.cluster.tf_config import PS
from estimator_rt.cluster.tf_config import TaskInfo
from estimator_rt.cluster.tf_config import WORKER
from estimator_rt.core.errors import InputFnError
from estimator_rt.core.errors import ModelFnError
from estimator_rt.inputs.pipeline import batch_size_of
from estimator_rt.inputs.pipeline import share_of_batch
from estimator_rt.inputs.pipeline import split_element


class InGraphReplication:
  """The devices of one standalone client's synchronous training.

  Args:
    task: the client's TaskInfo (standalone_client).
  """

  def __init__(self, *, task: TaskInfo):
    tf.config.experimental_connect_to_cluster(
        tf.train.ClusterSpec(task.runtime_cluster), job_name=task.task_type,
        task_index=task.task_index, make_master_device_default=False)
    self.worker_devices = [cpu_device(WORKER, i)
                           for i in range(len(task.cluster[WORKER]))]
    self.parameter_devices = (
        [cpu_device(PS, i) for i in range(task.num_ps)] or
        self.worker_devices[:1])

  @property
  def num_workers(self) -> int:
    return len(self.worker_devices)

  @contextlib.contextmanager
  def placement(self):
    """New variables go to the parameter devices, round robin."""
    devices = itertools.cycle(self.parameter_devices)

    def creator(next_creator, **kwargs):
      with tf.device(next(devices)):
        return next_creator(**kwargs)

    with tf.variable_creator_scope(creator):
      yield

  def make_iterators(self, input_fn: Callable, params: dict,
                     config) -> List:
    """One iterator per worker, created on that worker's device.

    An input_fn that takes `input_context` gets (num_workers, k) and
    batches per worker. A globally batched one is split the way
    multi_worker_mirrored splits it: with a static batch size that divides
    among the workers, it is rebatched to batch / num_workers and worker k
    takes every k-th batch (DATA sharding); otherwise (an unknown batch
    size, `.batch(64)` without drop_remainder, or one that does not divide)
    worker k takes rows [k*n/K, (k+1)*n/K) of each global batch of n rows,
    and the train loop weights each worker's gradient by its share of the
    global batch, so that the update is the one process would make on it.
    """
    iterators = []
    takes_context = user_fns.input_fn_takes_context(input_fn)
    for k, device in enumerate(self.worker_devices):
      with tf.device(device):
        if takes_context:
          dataset = user_fns.call_input_fn(
              input_fn, params, tf.distribute.InputContext(
                  self.num_workers, k, self.num_workers),
              role='train input_fn', config=config)
        else:
          dataset = _worker_share(
              user_fns.call_input_fn(input_fn, params, role='train input_fn',
                                     config=config),
              k, self.num_workers)
        iterators.append(iter(dataset))
    return iterators

  def make_train_loop(self, graph) -> loops.CompiledTrainLoop:
    """A compiled `(iterators, num_steps) -> (loss, steps, loss_finite,
    state_finite, global_step)`, like loops.make_train_loop, over the
    remote workers."""
    if not graph.uses_optimizer:
      raise ModelFnError(
          'synchronous standalone-client training needs the model_fn to '
          'return an optimizer (the client averages the gradients of all '
          'workers); a train_op cannot be replicated.')
    variables = graph.trainable_variables
    workers = self.worker_devices
    global_step = graph.global_step

    @tf.autograph.experimental.do_not_convert
    def worker_gradients(element):
      features, labels = split_element(element)
      with tf.GradientTape() as tape:
        spec = graph.call(features, labels)
        loss = tf.cast(spec.loss, tf.float32)
      equal = tf.nest.flatten(features)[0].shape[:1].is_fully_defined()
      count = None if equal else batch_size_of(features)
      return loss, tape.gradient(loss, variables), count, spec.loss_is_sum

    def run_step(iterators):
      losses, grads, counts = [], [], []
      for device, iterator in zip(workers, iterators):
        with tf.device(device):
          loss, worker_grads, count, loss_is_sum = worker_gradients(
              next(iterator))
        losses.append(loss)
        grads.append(worker_grads)
        counts.append(count)
      with tf.device(self.parameter_devices[0]):
        weights = _worker_weights(counts, loss_is_sum=loss_is_sum)
        combined = [None if g[0] is None else _weighted_sum(g, weights)
                    for g in zip(*grads)]
        graph.optimizer.apply_gradients(
            [(g, v) for g, v in zip(combined, variables) if g is not None])
        if not graph.model_fn_counts_global_step:
          global_step.assign_add(1)
        return _weighted_sum(losses, weights)

    # Each step takes from every worker's iterator itself.
    return loops.compile_train_loop(run_step, graph=graph,
                                    infinite_input=True,
                                    take=lambda iterators: iterators)


def _worker_share(dataset: tf.data.Dataset, k: int,
                  num_workers: int) -> tf.data.Dataset:
  """Worker k's part of each global batch of `dataset` (see
  InGraphReplication.make_iterators)."""
  first = tf.nest.flatten(dataset.element_spec)[0]
  if not first.shape.rank:
    raise InputFnError(
        'train input_fn: the dataset is not batched (its first component has '
        f'shape {first.shape}); synchronous standalone-client training splits '
        'each global batch among the remote workers, so batch it (or give '
        'the input_fn an input_context argument).')
  batch = first.shape[0]
  if batch is not None and batch % num_workers == 0:
    # Static and equal: every worker's batch keeps a static shape.
    return dataset.rebatch(batch // num_workers).shard(num_workers, k)

  def rows_of_worker_k(*element):
    part = share_of_batch(element, k, num_workers)
    return part if len(part) > 1 else part[0]

  return dataset.map(rows_of_worker_k)


def _worker_weights(counts, *, loss_is_sum: bool = False):
  """Each worker's share of the global batch, or None for equal shares;
  all 1 for summed losses, which add up unweighted."""
  if loss_is_sum:
    return [tf.constant(1.0)] * len(counts)
  if all(c is None for c in counts):
    return None
  counts = [tf.cast(c, tf.float32) for c in counts]
  total = tf.maximum(tf.add_n(counts), 1.0)
  return [c / total for c in counts]


def _weighted_sum(values, weights):
  """The mean of `values` (equal weights) or their weighted sum; a worker
  with no rows (weight 0) contributes 0, not the NaN of an empty mean."""
  if weights is None:
    return tf.add_n(list(values)) / len(values)
  return tf.add_n([tf.where(w > 0, v * w, tf.zeros_like(v))
                   for v, w in zip(values, weights)])
