"""KMeans: k-means clustering as tf.compat.v1.estimator.experimental.KMeans
(tf.estimator 2.15's canned/kmeans.py, `KMeansClustering`) built it.

The model is TensorFlow's own `clustering_ops.KMeans` training graph (still
shipped with TF 2.21, tensorflow/python/ops/clustering_ops.py), so the
variables are those 2.15's checkpoints hold: `clusters` (the centers, of
unvalidated shape, empty until initialized), `initialized`, and with mini
batches `Variable` (per-cluster counts) and, when
`mini_batch_steps_per_iteration > 1`, `clusters_updated` and
`update_in_steps`; plus `global_step`. A model_dir 2.15 trained resumes
here and one trained here resumes under 2.15.

As in 2.15:
  * The input_fn yields features only (or `(features, None)`): a float
    tensor of shape [batch, dimensions], or a dict whose tensors are
    concatenated on axis 1 in key order (or read through
    `feature_columns` with `tf.compat.v1.feature_column.input_layer`).
  * Each training step is one mini-batch update (`use_mini_batch=True`)
    or one full Lloyd iteration over the batch; the loss is the sum over
    the batch of each point's distance to its nearest center.
  * Two training hooks: `_InitializeClustersHook` runs the initialization
    op (which reads input batches) after the session is created until every
    center is chosen, and, with `relative_tolerance`,
    `_LossRelativeChangeHook` stops training once the loss changes less
    than that between steps.
  * EVAL reports `score`, the mean over batches of that summed loss;
    PREDICT yields `all_distances` and `cluster_index`, and the export has
    the signatures `all_distances`, `cluster_index` and `serving_default`
    (the cluster index), each with one output named 'output'.

Unlike the other canned estimators, KMeans' model_fn is not marked
loop-safe (estimator_rt/training/graph/in_graph_loop.py): its hooks need one
session run per training step, as in 2.15.
"""

import time
from typing import Any, Mapping

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import clustering_ops

from estimator_rt.estimator import estimator as estimator_lib
from estimator_rt.core import export_outputs as outputs_lib
from estimator_rt.estimator.canned import base
from estimator_rt.core.errors import one_line
from estimator_rt.core.errors import TaskLostError
from estimator_rt.core.errors import UserInputError
from estimator_rt.core.spec import EstimatorSpec


class _LossRelativeChangeHook(tf.compat.v1.train.SessionRunHook):
  """Requests a stop once the loss changes by less than `tolerance`
  relative to (1 + |previous loss|) from one step to the next."""

  def __init__(self, loss_tensor: tf.Tensor, tolerance: float):
    self._loss_tensor = loss_tensor
    self._tolerance = tolerance
    self._prev_loss = None

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._loss_tensor)

  def after_run(self, run_context, run_values):
    loss = run_values.results
    # 2.15 compared only once the previous loss was truthy (a loss of
    # exactly 0 starts the comparison over); kept so runs stop at the same
    # step.
    if self._prev_loss:
      change = abs(loss - self._prev_loss) / (1 + abs(self._prev_loss))
      if change < self._tolerance:
        run_context.request_stop()
    self._prev_loss = loss


# How long a non-chief task waits for the chief to choose the centers
# (bounded, so that a task whose chief is gone does not wait forever).
CHIEF_INITIALIZATION_TIMEOUT_SECS = 600


class ClusterInitializationError(UserInputError,
                                 tf.errors.InvalidArgumentError):
  """KMeans could not choose its initial centers from the input: bad user
  input (the binary exits 2), and the InvalidArgumentError of
  clustering_ops' checks that tf.estimator 2.15 let through (code catching
  it still does). Defined here rather than in errors.py, which does not
  import TensorFlow."""

  def __init__(self, message: str, node_def=None):
    # No op: str() is the message alone, without the op's stack trace.
    tf.errors.InvalidArgumentError.__init__(self, node_def, None, message)
    self.args = (message,)  # OpError leaves them empty.


class _InitializeClustersHook(tf.compat.v1.train.SessionRunHook):
  """Chooses the initial centers after the session is created: the chief
  runs `init_op` (which reads input batches) until `is_initialized_var`
  is True; other tasks wait for it."""

  def __init__(self, init_op, is_initialized_var, is_chief: bool):
    self._init_op = init_op
    self._is_initialized_var = is_initialized_var
    self._is_chief = is_chief

  def after_create_session(self, session, coord):
    del coord
    deadline = time.monotonic() + CHIEF_INITIALIZATION_TIMEOUT_SECS
    while not session.run(self._is_initialized_var):
      if not self._is_chief:
        if time.monotonic() > deadline:
          raise TaskLostError(
              'KMeans: the chief did not choose the initial cluster centers '
              f'within {CHIEF_INITIALIZATION_TIMEOUT_SECS} s; is it running? '
              'Restart the cluster.')
        time.sleep(1)
        continue
      try:
        session.run(self._init_op)
      except tf.errors.InvalidArgumentError as e:
        # clustering_ops' own checks (e.g. kmeans++ needs a first batch of
        # at least num_clusters points) fail as assertions in the graph.
        lines = [line.strip() for line in e.message.splitlines()
                 if 'assertion failed' in line.lower()]
        first = lines[0] if lines else one_line(e)
        raise ClusterInitializationError(
            f'{first}: KMeans: choosing the initial cluster centers failed '
            "(initial_clusters='kmeans_plus_plus' needs a first batch of at "
            'least num_clusters points; a tensor or array of centers must '
            'have num_clusters rows).', node_def=e.node_def) from e


def parse_features(features: Any, feature_columns) -> Any:
  """The input points as KMeans reads them from the input_fn's features: a
  dict becomes one [batch, dimensions] tensor (read through
  `feature_columns` with `tf.compat.v1.feature_column.input_layer` if
  given, else its values, tensors or array-likes of shape [batch, n],
  concatenated on axis 1 in key order); anything else is returned as it
  is (2.15's `_parse_features_if_necessary`).

  Raises:
    UserInputError: an empty dict, or (without feature_columns) a value
      that is not a dense [batch, n] tensor or array.
  """
  if not isinstance(features, Mapping):
    return features
  if not features:
    raise UserInputError(
        'KMeans: the input_fn\'s features are an empty dict; give the '
        'points as a float tensor of shape [batch, dimensions] (or a dict '
        'of [batch, 1] tensors).')
  if feature_columns:
    return tf.compat.v1.feature_column.input_layer(
        dict(features), feature_columns)
  keys = sorted(features)
  values = [_dense_feature(key, features[key]) for key in keys]
  with tf.compat.v1.colocate_with(values[0]):
    return tf.concat(values, axis=1)


def _dense_feature(key, value) -> tf.Tensor:
  """features[key] as a dense tensor of rank 2 (or unknown rank)."""
  if not tf.is_tensor(value):
    try:
      value = tf.convert_to_tensor(value)
    except (TypeError, ValueError) as e:
      raise UserInputError(
          f'KMeans: features[{key!r}] is a {type(value).__name__}; without '
          'feature_columns every feature must be a dense float tensor (or '
          'array) of shape [batch, n].') from e
  if isinstance(value, tf.SparseTensor) or value.shape.rank not in (None, 2):
    raise UserInputError(
        f'KMeans: features[{key!r}] is a {type(value).__name__} of shape '
        f'{value.shape}; without feature_columns the features are '
        'concatenated on axis 1 (in key order), so each must be dense, of '
        'shape [batch, n].')
  return value


def _points(features: Any, feature_columns) -> tf.Tensor:
  """The input points, a [batch, dimensions] float tensor, from the
  input_fn's features (see the module docstring).

  Raises:
    UserInputError: the features are not a tensor or a non-empty dict of
      tensors, or the points are not a float matrix.
  """
  points = parse_features(features, feature_columns)
  if not isinstance(points, tf.Tensor):
    raise UserInputError(
        f'KMeans: the input_fn\'s features are a {type(features).__name__}: '
        f'{features!r}; give the points as a float tensor of shape '
        '[batch, dimensions], or a dict of such tensors.')
  if not points.dtype.is_floating or points.shape.rank not in (None, 2):
    raise UserInputError(
        f'KMeans: the input points are a {points.dtype.name} tensor of shape '
        f'{points.shape}; they must be a float tensor of shape '
        '[batch, dimensions] (e.g. tf.float32).')
  return points


class KMeans(base.CannedEstimator):
  """An Estimator for k-means clustering; tf.estimator 2.15's
  `tf.compat.v1.estimator.experimental.KMeans` signature and defaults.

  See the module docstring for the input_fn, what a training step does
  and the outputs.

  Args:
    num_clusters: the number of clusters (ignored if `initial_clusters` is
      a tensor or numpy array of centers).
    model_dir: where checkpoints and summaries go.
    initial_clusters: `RANDOM_INIT` (centers drawn at random from the first
      batch(es)), `KMEANS_PLUS_PLUS_INIT` (kmeans++ on the first batch,
      which must hold at least `num_clusters` points), a tensor or array of
      centers, or a callable `f(inputs, k)` returning up to k centers.
    distance_metric: `SQUARED_EUCLIDEAN_DISTANCE` or `COSINE_DISTANCE`.
    seed: whether the initialization's random draws are seeded. As in
      2.15 (clustering_ops keeps the first of `get_seed(seed)`), the seed
      they use is RunConfig.tf_random_seed when set, else TensorFlow's
      default graph seed when `seed` is not None: the value of `seed`
      itself changes nothing. With neither, random init draws unseeded;
      kmeans++ failed in 2.15 ("Tried to convert 'seed' to a tensor") and
      here uses the default graph seed.
    use_mini_batch: mini-batch k-means; False runs one full Lloyd iteration
      per step on the step's batch.
    mini_batch_steps_per_iteration: steps whose updates accumulate before
      the centers are synced (mini-batch only).
    kmeans_plus_plus_num_retries: extra points drawn per kmeans++ sample.
    relative_tolerance: stop training once the loss changes less than this
      (relative) between steps; None never stops early.
    config: a RunConfig (runs in the graph engine).
    feature_columns: columns read with
      `tf.compat.v1.feature_column.input_layer`; None uses every feature.

  Raises:
    UserInputError: an unknown `initial_clusters` name or
      `distance_metric`.
  """

  SQUARED_EUCLIDEAN_DISTANCE = clustering_ops.SQUARED_EUCLIDEAN_DISTANCE
  COSINE_DISTANCE = clustering_ops.COSINE_DISTANCE
  RANDOM_INIT = clustering_ops.RANDOM_INIT
  KMEANS_PLUS_PLUS_INIT = clustering_ops.KMEANS_PLUS_PLUS_INIT
  SCORE = 'score'
  CLUSTER_INDEX = 'cluster_index'
  ALL_DISTANCES = 'all_distances'
  CLUSTER_CENTERS_VAR_NAME = clustering_ops.CLUSTERS_VAR_NAME

  def __init__(self,
               num_clusters,
               model_dir=None,
               initial_clusters=RANDOM_INIT,
               distance_metric=SQUARED_EUCLIDEAN_DISTANCE,
               seed=None,
               use_mini_batch=True,
               mini_batch_steps_per_iteration=1,
               kmeans_plus_plus_num_retries=2,
               relative_tolerance=None,
               config=None,
               feature_columns=None):
    initializations = (self.RANDOM_INIT, self.KMEANS_PLUS_PLUS_INIT)
    if isinstance(initial_clusters, str) and (
        initial_clusters not in initializations):
      raise UserInputError(  # 2.15's words first.
          f"Unsupported initialization algorithm '{initial_clusters}': "
          f'KMeans takes initial_clusters= one of {initializations}, a '
          'tensor or array of centers, or a callable f(inputs, k).')
    metrics = (self.SQUARED_EUCLIDEAN_DISTANCE, self.COSINE_DISTANCE)
    if distance_metric not in metrics:
      raise UserInputError(  # 2.15's words first.
          f"Unsupported distance metric '{distance_metric}': KMeans takes "
          f'distance_metric= one of {metrics}.')
    if isinstance(num_clusters, (int, np.integer)) and num_clusters < 1 and (
        isinstance(initial_clusters, str)):
      raise UserInputError(
          f'KMeans: num_clusters={num_clusters!r} must be at least 1.')
    self._distance_metric = distance_metric
    columns = list(feature_columns) if feature_columns else None

    def _model_fn(features, labels, mode, config):
      if labels is not None:
        raise UserInputError(
            f'KMeans: the {mode} input_fn yields (features, labels); KMeans '
            'takes no labels: yield only the features (or (features, None)).')
      return kmeans_model_fn(
          features, mode, config, num_clusters=num_clusters,
          initial_clusters=initial_clusters, distance_metric=distance_metric,
          seed=seed, use_mini_batch=use_mini_batch,
          mini_batch_steps_per_iteration=mini_batch_steps_per_iteration,
          kmeans_plus_plus_num_retries=kmeans_plus_plus_num_retries,
          relative_tolerance=relative_tolerance, feature_columns=columns)

    # Not CannedEstimator.__init__: it marks the model_fn loop-safe, and
    # KMeans' training hooks need one session run per step (see the module
    # docstring). The rest is the same: graph engine, no AutoGraph.
    estimator_lib.Estimator.__init__(
        self, model_fn=tf.autograph.experimental.do_not_convert(_model_fn),
        model_dir=model_dir,
        config=base.graph_engine_config(config, estimator_name='KMeans'))

  def _predict_one_key(self, input_fn, predict_key):
    for result in self.predict(input_fn=input_fn, predict_keys=[predict_key]):
      yield result[predict_key]

  def predict_cluster_index(self, input_fn):
    """Yields the index of the closest cluster center to each input point."""
    yield from self._predict_one_key(input_fn, self.CLUSTER_INDEX)

  def score(self, input_fn):
    """The sum of the distances from each point of `input_fn`'s first batch
    to its nearest center (squared Euclidean by default; unlike sklearn's
    score, not negated)."""
    return self.evaluate(input_fn=input_fn, steps=1)[self.SCORE]

  def transform(self, input_fn):
    """Yields each input point's distances to all cluster centers: the
    Euclidean distance (not its square, unlike `all_distances`) for
    SQUARED_EUCLIDEAN_DISTANCE, the cosine distance otherwise."""
    for distances in self._predict_one_key(input_fn, self.ALL_DISTANCES):
      if self._distance_metric == self.SQUARED_EUCLIDEAN_DISTANCE:
        yield np.sqrt(distances)
      else:
        yield distances

  def cluster_centers(self):
    """The cluster centers in the newest checkpoint, [num_clusters, dims]."""
    return self.get_variable_value(self.CLUSTER_CENTERS_VAR_NAME)


def kmeans_model_fn(features, mode, config, *, num_clusters,
                     initial_clusters, distance_metric, seed, use_mini_batch,
                     mini_batch_steps_per_iteration,
                     kmeans_plus_plus_num_retries, relative_tolerance,
                     feature_columns) -> EstimatorSpec:
  """KMeans' model_fn: 2.15's graph, from clustering_ops (one input shard,
  so its per-shard results are lists of one)."""
  points = _points(features, feature_columns)
  if (seed is None and initial_clusters == KMeans.KMEANS_PLUS_PLUS_INIT and
      tf.compat.v1.get_default_graph().seed is None):
    # The kmeans++ op needs a seed (see the class docstring).
    seed = 0
  (all_distances, model_predictions, losses, is_initialized, init_op,
   training_op) = clustering_ops.KMeans(
       inputs=points,
       num_clusters=num_clusters,
       initial_clusters=initial_clusters,
       distance_metric=distance_metric,
       use_mini_batch=use_mini_batch,
       mini_batch_steps_per_iteration=mini_batch_steps_per_iteration,
       random_seed=seed,
       kmeans_plus_plus_num_retries=kmeans_plus_plus_num_retries
   ).training_graph()

  loss = tf.math.reduce_sum(losses)
  tf.compat.v1.summary.scalar('loss/raw', loss)

  incr_step = tf.compat.v1.assign_add(
      tf.compat.v1.train.get_or_create_global_step(), 1)
  with tf.control_dependencies([training_op, incr_step]):
    train_op = tf.identity(loss)

  training_hooks = [
      _InitializeClustersHook(init_op, is_initialized, config.is_chief)]
  if relative_tolerance is not None:
    training_hooks.append(_LossRelativeChangeHook(loss, relative_tolerance))

  distances, cluster_index = all_distances[0], model_predictions[0]
  return EstimatorSpec(
      mode=mode,
      predictions={KMeans.ALL_DISTANCES: distances,
                   KMeans.CLUSTER_INDEX: cluster_index},
      loss=loss,
      train_op=train_op,
      eval_metric_ops={KMeans.SCORE: tf.compat.v1.metrics.mean(loss)},
      training_hooks=training_hooks,
      export_outputs={
          KMeans.ALL_DISTANCES: outputs_lib.PredictOutput(distances),
          KMeans.CLUSTER_INDEX: outputs_lib.PredictOutput(cluster_index),
          tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
              outputs_lib.PredictOutput(cluster_index),
      })
