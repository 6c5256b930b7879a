"""tensorflow_estimator.python.estimator.tpu.tpu_estimator, over
estimator_rt.tpu.

`TPUEstimator` and `TPUEstimatorSpec` are estimator_rt's (TPUEstimator runs
as tf.estimator ran it without a TPU). The other names are tf.estimator's
helpers that programs and 2.15's tests use directly, with 2.15's
semantics: the stop-at-step hook of its training loop (with time-based
iterations_per_loop), the export-output tensor round trip, and the input
wrappers that mark the end of the input and pad the last batch.
"""

import time

from absl import logging
import tensorflow as tf

from estimator_rt import export as export_lib
from estimator_rt.compat.served.tpu.iteration_count_estimator import IterationCountEstimator
from estimator_rt.errors import UserInputError
# pylint: disable=unused-import,g-bad-import-order
from estimator_rt.tpu import _BATCH_SIZE_KEY
from estimator_rt.tpu import _CTX_KEY
from estimator_rt.tpu import _RESERVED_PARAMS_KEYS
from estimator_rt.tpu import _USE_TPU_KEY
from estimator_rt.tpu import ExportSavedModelApiVersion
from estimator_rt.tpu import TPUEstimator
from estimator_rt.tpu import TPUEstimatorSpec
# pylint: enable=unused-import,g-bad-import-order

_TPU_ESTIMATOR = 'tpu_estimator'
_ITERATIONS_PER_LOOP_VAR = 'iterations_per_loop'

# tf.estimator 2.15's switch between two ways of building a TPU program's
# per-core infeed (programs and 2.15's tests set it). There is no TPU
# program here (TPUEstimator(use_tpu=True) refuses to run one), so it
# selects nothing; it is served with 2.15's value so that code setting it
# reaches that refusal.
_WRAP_INPUT_FN_INTO_WHILE_LOOP = False


def _create_or_get_iterations_per_loop():
  """The graph's `tpu_estimator/iterations_per_loop` variable (an int32
  local resource variable, in the collection `tpu_estimator_iterations_
  per_loop`), created next to the global step if the graph has none: the
  steps the next training loop runs.

  Raises:
    RuntimeError: the collection holds more than one variable.
  """
  graph = tf.compat.v1.get_default_graph()
  collection = f'{_TPU_ESTIMATOR}_{_ITERATIONS_PER_LOOP_VAR}'
  found = graph.get_collection(collection)
  if len(found) == 1:
    return found[0]
  if found:
    raise RuntimeError('Multiple iterations_per_loop_var in collection.')
  with graph.colocate_with(tf.compat.v1.train.get_global_step()):
    with tf.compat.v1.variable_scope(_TPU_ESTIMATOR,
                                     reuse=tf.compat.v1.AUTO_REUSE):
      return tf.compat.v1.get_variable(
          _ITERATIONS_PER_LOOP_VAR, shape=[], dtype=tf.int32,
          initializer=tf.compat.v1.initializers.zeros(), trainable=False,
          collections=[collection, tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
          use_resource=True)


class _TPUStopAtStepHook(tf.compat.v1.train.SessionRunHook):
  """Stops training at a step, setting the steps of each training loop.

  Before each loop it loads min(steps left, steps per loop) into the
  iterations_per_loop variable: `iterations_per_loop_counter.value` for a
  'count' unit; for a 'seconds' unit, the steps an IterationCountEstimator
  predicts fit in that many seconds (1 at first), from the loops' measured
  times. It requests a stop once the global step (read after each run)
  reaches the final step: `final_step`, or the first step + `num_steps`.

  Raises:
    ValueError: neither or both of `num_steps` and `final_step`; a unit
      other than 'count' and 'seconds'.
  """

  def __init__(self, iterations_per_loop_counter, num_steps=None,
               final_step=None):
    if num_steps is None and final_step is None:
      raise UserInputError(
          'One of `num_steps` or `final_step` must be specified.')
    if num_steps is not None and final_step is not None:
      raise UserInputError(
          'Only one of `num_steps` or `final_step` can be specified '
          f'(num_steps={num_steps!r}, final_step={final_step!r}).')
    if iterations_per_loop_counter.unit not in ('seconds', 'count'):
      raise UserInputError(
          'Only `count` or `seconds` are accepted as the '
          '`iterations_per_loop_counter.unit` (got '
          f'{iterations_per_loop_counter.unit!r}).')
    self._iterations_per_loop_counter = iterations_per_loop_counter
    self._num_steps = num_steps
    self._final_step = final_step
    self._next_iteration_count = 1
    self._iteration_count_estimator = None
    if iterations_per_loop_counter.unit == 'seconds':
      self._iteration_count_estimator = IterationCountEstimator()
    self._start_time = time.time()

  def _next_iterations(self, global_step, final_step):
    if self._iteration_count_estimator is not None:
      per_loop = self._iteration_count_estimator.get(
          self._iterations_per_loop_counter.value)
    else:
      per_loop = self._iterations_per_loop_counter.value
    self._next_iteration_count = min(final_step - global_step, per_loop)
    return self._next_iteration_count

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    if self._global_step_tensor is None:
      raise RuntimeError('Global step should be created.')
    self._iterations_per_loop_var = _create_or_get_iterations_per_loop()

  def after_create_session(self, session, coord):
    del coord
    global_step = session.run(self._global_step_tensor)
    if self._final_step is None:
      self._final_step = global_step + self._num_steps
    self._iterations_per_loop_var.load(
        self._next_iterations(global_step, self._final_step), session=session)

  def before_run(self, run_context):
    if self._iteration_count_estimator is not None:
      self._start_time = time.time()

  def after_run(self, run_context, run_values):
    if self._iteration_count_estimator is not None:
      elapsed = time.time() - self._start_time
      logging.info('ElapsedTime: %.3f', elapsed)
      self._iteration_count_estimator.update(elapsed,
                                             self._next_iteration_count)
    # Read here, not fetched in before_run: the loop moves the step itself.
    global_step = run_context.session.run(self._global_step_tensor)
    if global_step >= self._final_step:
      run_context.request_stop()
    else:
      self._iterations_per_loop_var.load(
          self._next_iterations(global_step, self._final_step),
          session=run_context.session)


_EXPORT_OUTPUT_TYPES = (
    '`export_output` must be have type `ClassificationOutput`, '
    '`RegressionOutput`, or `PredictOutput`')


def _export_output_to_tensors(export_output):
  """The tensors of `export_output`: [scores, classes] (either may be
  None) of a ClassificationOutput, [value] of a RegressionOutput, the
  outputs' values (in their order) of a PredictOutput.

  Raises:
    ValueError: another kind of output.
  """
  if isinstance(export_output, export_lib.ClassificationOutput):
    return [export_output.scores, export_output.classes]
  if isinstance(export_output, export_lib.RegressionOutput):
    return [export_output.value]
  if isinstance(export_output, export_lib.PredictOutput):
    return list(export_output.outputs.values())
  raise UserInputError(f'{_EXPORT_OUTPUT_TYPES}; got {export_output}.')


def _clone_export_output_with_tensors(export_output, tensors):
  """An output of `export_output`'s kind over `tensors` (in the order
  `_export_output_to_tensors` lists them).

  Raises:
    ValueError: another kind of output, or a wrong number of tensors.
  """
  if isinstance(export_output, export_lib.ClassificationOutput):
    if len(tensors) != 2:
      raise UserInputError(f'tensors must be of length 2; got {len(tensors)}.')
    return export_lib.ClassificationOutput(*tensors)
  if isinstance(export_output, export_lib.RegressionOutput):
    if len(tensors) != 1:
      raise UserInputError(f'tensors must be of length 1; got {len(tensors)}')
    return export_lib.RegressionOutput(*tensors)
  if isinstance(export_output, export_lib.PredictOutput):
    return export_lib.PredictOutput(
        dict(zip(export_output.outputs.keys(), tensors)))
  raise UserInputError(f'{_EXPORT_OUTPUT_TYPES}; got {export_output}.')


class _Inputs:
  """What an input_fn returned: `features` and `labels`, or a `dataset`
  read through an initializable iterator (`dataset_initializer` first)."""

  def __init__(self, features=None, labels=None, dataset=None, signals=None):
    if dataset is not None and (features is not None or labels is not None or
                                signals is not None):
      raise RuntimeError('Internal Error: Either (features and labels) or '
                         'dataset should be provided, not both.')
    self._features = features
    self._labels = labels
    self._signals = signals
    self._dataset = dataset
    self._iterator = None

  @staticmethod
  def from_input_fn(return_values):
    if isinstance(return_values, tf.data.Dataset):
      return _Inputs(dataset=return_values)
    return _Inputs(*_Inputs._parse_inputs(return_values))

  @staticmethod
  def _parse_inputs(return_values):
    """(features, labels) of a tuple, (features, None) of anything else."""
    if isinstance(return_values, tuple):
      features, labels = return_values
      return features, labels
    return return_values, None

  @property
  def is_dataset(self):
    return self._dataset is not None

  def dataset_initializer(self):
    """The initializer of the dataset's iterator, which must run before
    `features_and_labels` is read."""
    self._iterator = tf.compat.v1.data.make_initializable_iterator(
        self._dataset)
    return self._iterator.initializer

  def features_and_labels(self):
    if self.is_dataset:
      if self._iterator is None:
        raise RuntimeError('Internal error: Must run dataset_initializer '
                           'before calling features_and_labels().')
      return _Inputs._parse_inputs(self._iterator.get_next())
    return self._features, self._labels

  def signals(self):
    return self._signals

  @property
  def dataset(self):
    return self._dataset


class _InputsWithStoppingSignals(_Inputs):
  """A dataset's batches, each with signals: `stopping`, a [batch_size, 1]
  bool that is True only in batches appended after the input's end (the
  first batch again, so that the shapes match), and with `add_padding`
  `padding_mask`, an int32 [batch_size] that is 1 for the rows added to
  fill a short batch (all 1 in the appended batches, when
  `num_invocations_per_step` > 1 appends 2 * that - 1 of them)."""

  def __init__(self, dataset, batch_size, add_padding=False,
               num_invocations_per_step=1):
    assert dataset is not None
    marked = dataset.map(self.insert_stopping_signal(
        stop=False, batch_size=batch_size, add_padding=add_padding))
    final = dataset.take(1).map(self.insert_stopping_signal(
        stop=True, batch_size=batch_size, add_padding=add_padding))
    if num_invocations_per_step > 1:
      # Enough stopping batches that every invocation of the last step
      # sees one, however many real batches the step before took.
      final = final.repeat(2 * num_invocations_per_step - 1).map(
          _mask_all_rows)
    super().__init__(dataset=marked.concatenate(final).prefetch(2))
    self._current_inputs = None

  def features_and_labels(self):
    if self._current_inputs is not None:
      raise RuntimeError(
          'Internal Error: The previous inputs have not been properly '
          'consumed. First call features_and_labels, then call signals.')
    element = self._iterator.get_next()
    self._current_inputs = element
    return element['features'], element.get('labels')

  def signals(self):
    """The signals of the batch `features_and_labels` last returned."""
    if self._current_inputs is None:
      raise RuntimeError(
          'Internal Error: The current inputs have not been properly '
          'generated. First call features_and_labels, then call signals.')
    signals = self._current_inputs['signals']
    self._current_inputs = None
    return signals

  @staticmethod
  def insert_stopping_signal(stop, batch_size, add_padding=False):
    """A dataset.map function making each element a dict of `features`,
    `labels` (when present) and `signals`."""

    def map_fn(*args):
      features, labels = _Inputs._parse_inputs(args[0] if len(args) == 1
                                               else args)
      padding_mask = None
      if add_padding:
        padding_mask, features, labels = (
            _PaddingSignals.pad_features_and_labels(features, labels,
                                                    batch_size))
      element = {'features': features}
      if labels is not None:
        element['labels'] = labels
      element['signals'] = _StopSignals(
          stop=stop, batch_size=batch_size,
          padding_mask=padding_mask).as_dict()
      return element

    return map_fn


def _mask_all_rows(element):
  signals = dict(element['signals'])
  signals['padding_mask'] = tf.ones_like(signals['padding_mask'])
  return dict(element, signals=signals)


class _StopSignals:
  """The stopping signal of a batch (see _InputsWithStoppingSignals)."""

  NON_STOPPING_SIGNAL = False
  STOPPING_SIGNAL = True

  def __init__(self, stop, batch_size, padding_mask=None):
    self._stop = stop
    self._batch_size = batch_size
    self._padding_mask = padding_mask

  def as_dict(self):
    fill = tf.ones if self._stop else tf.zeros
    signals = {'stopping': fill(shape=[self._batch_size, 1], dtype=tf.bool)}
    if self._padding_mask is not None:
      signals['padding_mask'] = self._padding_mask
    return signals

  @staticmethod
  def as_scalar_stopping_signal(signals):
    return tf.identity(signals['stopping'][0][0])

  @staticmethod
  def should_stop(scalar_stopping_signal):
    """Whether the signal says stop: a tensor in a graph, a bool for a
    value a hook fetched."""
    if isinstance(scalar_stopping_signal, tf.Tensor):
      return tf.math.logical_and(scalar_stopping_signal,
                                 _StopSignals.STOPPING_SIGNAL)
    return bool(scalar_stopping_signal)


class _PaddingSignals:
  """Pads short batches to the batch size, and slices the padding off."""

  @staticmethod
  def pad_features_and_labels(features, labels, batch_size):
    """(padding_mask, features, labels) with every tensor's batch dimension
    padded with zeros to `batch_size` (a check fails if it is larger)."""
    real_batch_size = tf.shape(_PaddingSignals._find_any_tensor(features))[0]
    batch_size_tensor = tf.constant(batch_size, tf.int32)
    check = tf.compat.v1.debugging.assert_greater_equal(
        batch_size_tensor, real_batch_size,
        data=(batch_size_tensor, real_batch_size),
        message='The real batch size should not be greater than batch_size.')
    with tf.control_dependencies([check]):
      missing_count = batch_size_tensor - real_batch_size

    def pad(tensor):
      rank = len(tensor.shape)
      assert rank > 0
      padding = tf.stack([[0, missing_count]] + [[0, 0]] * (rank - 1))
      padded = tf.pad(tensor, padding)
      padded.set_shape((batch_size,) + tuple(tensor.shape[1:]))
      return padded

    features = tf.nest.map_structure(pad, features)
    if labels is not None:
      labels = tf.nest.map_structure(pad, labels)
    padding_mask = tf.concat([tf.zeros((real_batch_size,), tf.int32),
                              tf.ones((missing_count,), tf.int32)], axis=0)
    padding_mask.set_shape((batch_size,))
    return padding_mask, features, labels

  @staticmethod
  def slice_tensor_or_dict(tensor_or_dict, signals):
    """The real rows of each tensor (the padded ones sliced off), except in
    full and stopping batches, which are returned whole."""
    padding_mask = signals['padding_mask']
    batch_size = tf.shape(padding_mask)[0]

    def verify_batch_size(tensor):
      check = tf.math.equal(batch_size, tensor.shape[0])
      with tf.control_dependencies([check]):
        return tf.identity(tensor)

    def real_rows(tensor):
      assert len(tensor.shape) > 0
      real_batch_size = batch_size - tf.math.reduce_sum(padding_mask)
      return verify_batch_size(tensor)[0:real_batch_size]

    # The real rows come first: the sliced mask must be all zeros.
    no_padding_kept = tf.math.equal(
        tf.math.reduce_sum(real_rows(padding_mask)), 0)
    with tf.control_dependencies([no_padding_kept]):
      should_stop = _StopSignals.should_stop(
          _StopSignals.as_scalar_stopping_signal(signals))
    is_full_batch = tf.math.equal(tf.math.reduce_sum(padding_mask), 0)

    def slice_fn(tensor):
      return tf.compat.v1.cond(
          tf.math.logical_or(should_stop, is_full_batch),
          lambda: verify_batch_size(tensor), lambda: real_rows(tensor))

    return tf.nest.map_structure(slice_fn, tensor_or_dict)

  @staticmethod
  def _find_any_tensor(batch_features):
    tensors = [x for x in tf.nest.flatten(batch_features)
               if isinstance(x, tf.Tensor)]
    if not tensors:
      raise UserInputError('Cannot find any Tensor in features dict.')
    return tensors[0]
