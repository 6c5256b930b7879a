"""tf.estimator 2.15's `early_stopping`, its SessionRunHooks included.

2.15 returned `SessionRunHook`s: on the chief a `_StopOnPredicateHook`,
which asks `should_stop_fn` every `run_every_secs` (or `run_every_steps`)
and, when it says stop, sets a boolean variable `signal_early_stopping/STOP`
and stops; on other workers a `_CheckForStoppingHook`, which stops once it
reads that variable set. These are those hooks, usable in any monitored
session. Given to `Estimator.train`, each runs as the runtime's own early
stopping hook (`as_runtime_hook`, see engine.split_hooks), in both engines:
every task asks the predicate and synchronous workers agree on the stop.
The public names of `tf.estimator.experimental` are the runtime's hooks
(estimator_rt/early_stopping.py). `_MultiWorkerEarlyStoppingHook` is
2.15's hook for a graph under a distribution strategy (its stop variable
summed across replicas); given to `Estimator.train` it too runs as the
runtime's hook.
"""

import tensorflow as tf

from estimator_rt import early_stopping as runtime
from estimator_rt.errors import UserInputError
from estimator_rt.errors import UserTypeError

read_eval_metrics = runtime.read_eval_metrics
_summaries = runtime._summaries  # pylint: disable=protected-access
_EVENT_FILE_GLOB_PATTERN = runtime._EVENT_FILE_GLOB_PATTERN  # pylint: disable=protected-access


def _get_or_create_stop_var():
  """The graph's `signal_early_stopping/STOP` variable (a global, untrained
  boolean, False at first), made on first use."""
  with tf.compat.v1.variable_scope('signal_early_stopping',
                                   reuse=tf.compat.v1.AUTO_REUSE):
    return tf.compat.v1.get_variable(
        'STOP', shape=[], dtype=tf.bool,
        initializer=tf.compat.v1.constant_initializer(False),
        collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES],
        trainable=False)


class _StopOnPredicateHook(tf.compat.v1.train.SessionRunHook):
  """Asks `should_stop_fn()` every `run_every_secs` seconds (or every
  `run_every_steps` global steps) after a run; when it returns True, sets
  the stop variable (for `_CheckForStoppingHook`s) and stops.

  Raises:
    TypeError: `should_stop_fn` is not callable.
  """

  def __init__(self, should_stop_fn, run_every_secs=60, run_every_steps=None):
    if not callable(should_stop_fn):
      raise UserTypeError(
          '`should_stop_fn` must be callable; got '
          f'{type(should_stop_fn).__name__}: {should_stop_fn!r}.')
    self._should_stop_fn = should_stop_fn
    self._run_every_secs = run_every_secs
    self._run_every_steps = run_every_steps
    self._timer = tf.compat.v1.train.SecondOrStepTimer(
        every_secs=run_every_secs, every_steps=run_every_steps)
    self._global_step_tensor = None
    self._stop_var = None
    self._stop_op = None

  def as_runtime_hook(self):
    """What runs in the runtime's training loop in this hook's place."""
    return runtime.make_early_stopping_hook(
        None, self._should_stop_fn, self._run_every_secs,
        self._run_every_steps)

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    self._stop_var = _get_or_create_stop_var()
    self._stop_op = tf.compat.v1.assign(self._stop_var, True)

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context, run_values):
    global_step = run_values.results
    if not self._timer.should_trigger_for_step(global_step):
      return
    self._timer.update_last_triggered_step(global_step)
    if self._should_stop_fn():
      tf.compat.v1.logging.info('Requesting early stopping at global step %d',
                                global_step)
      run_context.session.run(self._stop_op)
      run_context.request_stop()


class _CheckForStoppingHook(tf.compat.v1.train.SessionRunHook):
  """Stops once the stop variable a `_StopOnPredicateHook` sets is True
  (2.15's hook for workers other than the chief).

  Args:
    runtime_hook: what runs in the runtime's training loop in its place
      (the predicate hook every task runs there; None: nothing).
  """

  def __init__(self, *, runtime_hook=None):
    self._stop_var = None
    self._runtime_hook = runtime_hook

  def as_runtime_hook(self):
    return self._runtime_hook

  def begin(self):
    self._stop_var = _get_or_create_stop_var()

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._stop_var)

  def after_run(self, run_context, run_values):
    if run_values.results:
      tf.compat.v1.logging.info('Early stopping requested, suspending run.')
      run_context.request_stop()


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60,
                             run_every_steps=None):
  """A hook that stops training once `should_stop_fn()` returns True, asked
  every `run_every_secs` seconds or `run_every_steps` steps: on the chief a
  `_StopOnPredicateHook`, elsewhere a `_CheckForStoppingHook`.

  Raises:
    TypeError: `estimator` is not an Estimator.
    ValueError: both `run_every_secs` and `run_every_steps` are set.
  """
  from estimator_rt.estimator import Estimator  # pylint: disable=g-import-not-at-top
  if not isinstance(estimator, Estimator):
    raise UserTypeError(
        '`estimator` must have type `tf.estimator.Estimator`. Got: '
        f'{type(estimator)}')
  if run_every_secs is not None and run_every_steps is not None:
    raise UserInputError(
        'Only one of `run_every_secs` and `run_every_steps` must be set; got '
        f'run_every_secs={run_every_secs!r}, '
        f'run_every_steps={run_every_steps!r}.')
  hook = _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)
  if estimator.config.is_chief:
    return hook
  return _CheckForStoppingHook(runtime_hook=hook.as_runtime_hook())


def _stop_if_threshold_crossed_hook(estimator, metric_name, threshold,
                                    higher_is_better, eval_dir, min_steps,
                                    run_every_secs, run_every_steps):
  """Stops once an evaluation at step >= `min_steps` has `metric_name`
  above (`higher_is_better`) or below `threshold` (evaluations of
  `eval_dir`, None: the estimator's)."""
  return make_early_stopping_hook(
      estimator, runtime.threshold_crossed_fn(
          eval_dir or estimator.eval_dir(), metric_name, threshold,
          min_steps, higher=higher_is_better),
      run_every_secs, run_every_steps)


def _stop_if_no_metric_improvement_hook(estimator, metric_name,
                                        max_steps_without_improvement,
                                        higher_is_better, eval_dir, min_steps,
                                        run_every_secs, run_every_steps):
  """Stops once `metric_name` went `max_steps_without_improvement` global
  steps of evaluations at steps >= `min_steps` without improving on its
  best (increasing if `higher_is_better`, else decreasing)."""
  return make_early_stopping_hook(
      estimator, runtime.no_improvement_fn(
          eval_dir or estimator.eval_dir(), metric_name,
          max_steps_without_improvement, min_steps, higher=higher_is_better),
      run_every_secs, run_every_steps)


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None,
                        min_steps=0, run_every_secs=60, run_every_steps=None):
  """Stops once an evaluation at step >= `min_steps` has `metric_name`
  above `threshold` (evaluations of `eval_dir`, default the estimator's)."""
  return _stop_if_threshold_crossed_hook(
      estimator, metric_name, threshold, True, eval_dir, min_steps,
      run_every_secs, run_every_steps)


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None,
                       min_steps=0, run_every_secs=60, run_every_steps=None):
  """Stops once an evaluation at step >= `min_steps` has `metric_name`
  below `threshold`."""
  return _stop_if_threshold_crossed_hook(
      estimator, metric_name, threshold, False, eval_dir, min_steps,
      run_every_secs, run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name,
                             max_steps_without_increase, eval_dir=None,
                             min_steps=0, run_every_secs=60,
                             run_every_steps=None):
  """Stops once `metric_name` went `max_steps_without_increase` global
  steps of evaluations without increasing on its best."""
  return _stop_if_no_metric_improvement_hook(
      estimator, metric_name, max_steps_without_increase, True, eval_dir,
      min_steps, run_every_secs, run_every_steps)


def stop_if_no_decrease_hook(estimator, metric_name,
                             max_steps_without_decrease, eval_dir=None,
                             min_steps=0, run_every_secs=60,
                             run_every_steps=None):
  """Stops once `metric_name` went `max_steps_without_decrease` global
  steps of evaluations without decreasing below its best."""
  return _stop_if_no_metric_improvement_hook(
      estimator, metric_name, max_steps_without_decrease, False, eval_dir,
      min_steps, run_every_secs, run_every_steps)


class _MultiWorkerEarlyStoppingHook(tf.compat.v1.train.SessionRunHook):
  """2.15's early stopping for a graph built under a distribution strategy
  (in its cross-replica context): every `run_every_steps` global steps it
  asks `should_stop_fn()` and adds 1 (stop) or 0 to an int32 stop variable
  summed across replicas (`signal_early_stopping/STOP`); every task stops
  once it reads it above 0.

  Raises:
    TypeError: `should_stop_fn` is not callable.
  """

  def __init__(self, should_stop_fn, run_every_steps=None):
    if not callable(should_stop_fn):
      raise UserTypeError(
          '`should_stop_fn` must be callable; got '
          f'{type(should_stop_fn).__name__}: {should_stop_fn!r}.')
    self._should_stop_fn = should_stop_fn
    self._run_every_steps = run_every_steps
    self._timer = tf.compat.v1.train.SecondOrStepTimer(
        every_secs=None, every_steps=run_every_steps)
    self._global_step_tensor = None
    self._stop_var = None
    self._stop_op = None
    self._stop_placeholder = None

  def as_runtime_hook(self):
    """What runs in the runtime's training loop in this hook's place (its
    workers agree on the stop)."""
    return runtime.make_early_stopping_hook(
        None, self._should_stop_fn, None, self._run_every_steps)

  def _get_or_create_stop_var_with_aggregation(self):
    with tf.compat.v1.variable_scope('signal_early_stopping',
                                     reuse=tf.compat.v1.AUTO_REUSE):
      return tf.compat.v1.get_variable(
          'STOP', shape=[], dtype=tf.int32,
          initializer=tf.compat.v1.constant_initializer(0),
          collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES],
          synchronization=tf.VariableSynchronization.ON_WRITE,
          aggregation=tf.compat.v1.VariableAggregation.SUM,
          trainable=False)

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    self._stop_var = self._get_or_create_stop_var_with_aggregation()

    def add_stop_value(variable):
      value = tf.compat.v1.placeholder_with_default(0, (), name='stop_value')
      if self._stop_placeholder is None:
        self._stop_placeholder = value
      return variable.assign_add(value)

    self._stop_op = tf.distribute.get_strategy().run(
        add_stop_value, args=(self._stop_var,))

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(
        {'global_step': self._global_step_tensor, 'stop': self._stop_var})

  def after_run(self, run_context, run_values):
    if run_values.results['stop'] > 0:
      tf.compat.v1.logging.info('Early stopping requested, suspending run.')
      run_context.request_stop()
      return
    global_step = run_values.results['global_step']
    if not self._timer.should_trigger_for_step(global_step):
      return
    self._timer.update_last_triggered_step(global_step)
    stop = self._should_stop_fn()
    run_context.session.run(self._stop_op,
                            feed_dict={self._stop_placeholder: int(stop)})
    if stop:
      tf.compat.v1.logging.info('Requesting early stopping at global step %d',
                                global_step)
