"""tf.estimator's `experimental.InMemoryEvaluatorHook`: evaluation during
training in one process, a SessionRunHook of the graph engine's.
"""

import os
import tempfile

import tensorflow as tf

from estimator_rt.core.errors import UserInputError
from estimator_rt.core.mode_keys import ModeKeys
from estimator_rt.training.graph import compat as graph_compat
from estimator_rt.training.graph import model as graph_model
from estimator_rt.training.graph import placement as graph_placement


class InMemoryEvaluatorHook(tf.compat.v1.train.SessionRunHook):
  """Evaluates the training session's current variables every
  `every_n_iter` steps, before training and at its end (tf.estimator 2.15's
  `experimental.InMemoryEvaluatorHook`).

      evaluator = InMemoryEvaluatorHook(estimator, eval_input_fn)
      estimator.train(train_input_fn, hooks=[evaluator])

  A SessionRunHook: it runs in the graph engine (TF1-style model_fns,
  canned estimators), where training is a session. At each evaluation it
  saves the session's variables to a scratch checkpoint (outside model_dir,
  removed at once) and evaluates it with `estimator.evaluate` in this
  process: the summaries go to model_dir/eval (or eval_<name>) at the
  training step, as with tf.estimator, and model_dir gets no extra
  checkpoint. A TF2 model_fn (eager engine) has no session: use
  train_and_evaluate, which evaluates each new checkpoint.

  Refused as in 2.15: a cluster (it evaluates on one machine), an EVAL-mode
  Scaffold with its own saver or init_fn, saveables other than variables.
  """

  def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None,
               every_n_iter=100):
    if (every_n_iter is None or isinstance(every_n_iter, bool) or
        not isinstance(every_n_iter, int) or every_n_iter <= 0):
      raise UserInputError(
          f'invalid every_n_iter={every_n_iter!r} (InMemoryEvaluatorHook: a '
          'positive integer).')
    if (estimator.config.num_ps_replicas > 0 or
        estimator.config.num_worker_replicas > 1):
      raise UserInputError(
          'InMemoryEvaluator supports only single machine (aka Local) '
          'setting (this config has a cluster: use train_and_evaluate and '
          'an evaluator task).')
    for hook in hooks or ():
      if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
        raise UserInputError(
            'InMemoryEvaluatorHook: hooks must be SessionRunHooks, given: '
            f'{hook!r}.')
    self._estimator = estimator
    self._input_fn = input_fn
    self._steps = steps
    self._name = name
    self._hooks = list(hooks or ())
    self._every_n_iter = every_n_iter
    self._eval_dir = os.path.join(estimator.model_dir,
                                  'eval' if not name else 'eval_' + name)
    self._timer = tf.compat.v1.train.SecondOrStepTimer(
        every_steps=every_n_iter)
    self._saver = None
    self._scratch = None

  def _check_eval_scaffold(self) -> None:
    """Builds the EVAL-mode model_fn in a scratch graph (as 2.15 built its
    evaluation graph here) and refuses what cannot be fed from training."""
    estimator = self._estimator
    with tf.Graph().as_default(), graph_compat.keras_names_per_graph():
      data = graph_model.read_input(self._input_fn, estimator.params,
                                    role='eval input_fn',
                                    config=estimator.config)
      built = graph_model.build(
          model_fn=estimator.model_fn, mode=ModeKeys.EVAL,
          batches=data.next_batch, params=estimator.params,
          config=estimator.config,
          placement=graph_placement.SingleDevicePlacement())
    scaffold = built.spec.scaffold
    if scaffold is not None and scaffold.saver is not None:
      raise UserInputError(
          'InMemoryEvaluator does not support custom saver (the EVAL-mode '
          "model_fn's Scaffold has one).")
    if scaffold is not None and scaffold.init_fn is not None:
      raise UserInputError(
          'InMemoryEvaluator does not support custom init_fn (the EVAL-mode '
          "model_fn's Scaffold has one).")

  def begin(self):
    self._timer.reset()
    self._iter_count = 0
    self._check_eval_scaffold()
    self._global_step = tf.compat.v1.train.get_global_step()
    if self._global_step is None:
      raise RuntimeError('InMemoryEvaluatorHook: the training graph has no '
                         'global step.')
    # Every global variable, as tf.estimator's saver holds them (partitioned
    # ones by their full names), into a scratch directory.
    self._saver = tf.compat.v1.train.Saver(
        var_list=tf.compat.v1.global_variables(), max_to_keep=None,
        allow_empty=True)
    self._scratch = tempfile.mkdtemp(prefix='estimator_rt_in_memory_eval_')

  def after_create_session(self, session, coord):
    """Evaluates before training, as 2.15 did."""
    del coord
    if tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS):
      raise UserInputError(
          'InMemoryEvaluator does not support saveables other than global '
          'variables (the training graph has SAVEABLE_OBJECTS).')
    self._evaluate(session)

  def _evaluate(self, session) -> None:
    step = int(session.run(self._global_step))
    path = self._saver.save(
        session, os.path.join(self._scratch, 'model.ckpt'), global_step=step,
        write_meta_graph=False, write_state=False)
    try:
      self._estimator.evaluate(self._input_fn, steps=self._steps,
                               hooks=self._hooks, checkpoint_path=path,
                               name=self._name)
    finally:
      for name in tf.io.gfile.glob(path + '.*'):
        tf.io.gfile.remove(name)
    self._timer.update_last_triggered_step(self._iter_count)

  def after_run(self, run_context, run_values):
    del run_values
    self._iter_count += 1
    if self._timer.should_trigger_for_step(self._iter_count):
      self._evaluate(run_context.session)

  def end(self, session):
    """Evaluates the final model."""
    try:
      self._evaluate(session)
    finally:
      if self._scratch is not None:
        tf.io.gfile.rmtree(self._scratch)
        self._scratch = None
