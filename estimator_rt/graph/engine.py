"""`GraphEngine`: runs a TF1-style model_fn as tf.estimator did.

Each call builds the mode's graph afresh (`model.build`), then a
`tf.compat.v1.train.MonitoredSession` runs it one step per `session.run`,
with the model_fn's Scaffold and SessionRunHooks and the runtime's own
hooks (session_hooks.py). Checkpoints are name-based (`Saver`), which is
what tf.estimator wrote: a model_dir of tf.estimator 2.15 resumes here.

What is the same as the eager engine, and shared with it: which checkpoint
to resume from (damaged or non-finite ones are skipped, never trained over
from step 0), when and how checkpoints are saved and rotated
(`checkpoints.CheckpointSaver`), nothing written before the model and
input are built and the checkpoint is known to fit, preemption (save at
the step in flight, exit 143), eval results written as summaries under
model_dir/eval.
"""

import os
import tempfile
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

from absl import logging
import tensorflow as tf

from estimator_rt import checkpoints
from estimator_rt import export as export_lib
from estimator_rt import inputs
from estimator_rt import preemption
from estimator_rt import summaries
from estimator_rt import user_fns
from estimator_rt.errors import check_count
from estimator_rt.errors import IncompatibleCheckpointError
from estimator_rt.errors import MAX_INT32
from estimator_rt.errors import PreemptedError
from estimator_rt.errors import UserInputError
from estimator_rt.graph import between_graph
from estimator_rt.graph import compat
from estimator_rt.graph import model as model_lib
from estimator_rt.graph import placement as placement_lib
from estimator_rt.graph import saved_model
from estimator_rt.graph import session_hooks
from estimator_rt.mode_keys import ModeKeys
from estimator_rt.preemption import PREEMPTED_EXIT_CODE
from estimator_rt.run_config import RunConfig

MonitoredSession = tf.compat.v1.train.MonitoredSession
ChiefSessionCreator = tf.compat.v1.train.ChiefSessionCreator


class GraphEngine:
  """Trains, evaluates, predicts with and exports a TF1-style model_fn.

  The semantics are `Estimator`'s; where tf.estimator differed, this
  engine keeps tf.estimator's: one step per session run, `loss` in
  evaluate is the mean of the batches' losses, a Scaffold's Saver decides
  how many checkpoints are kept. One deliberate difference: a train_op
  that does not count the global step (`minimize(loss)` without
  `global_step=`) has it counted by the runtime, where tf.estimator left
  it at 0 and so never saved the trained weights.

  Args:
    model_fn: the user's model_fn (already checked).
    config: the Estimator's RunConfig, `model_dir` set.
    params: the params dict.
    warm_start_from: a model_dir or checkpoint whose trainable variables
      (by name) initialize a model_dir with no checkpoint.
    temporary_model_dir: model_dir was made up (create it 0700).
  """

  def __init__(self, *, model_fn: Callable, config: RunConfig,
               params: Dict[str, Any], warm_start_from: Optional[str],
               temporary_model_dir: bool):
    self._model_fn = model_fn
    self._config = config
    self._params = params
    self._warm_start_from = warm_start_from
    self._temporary_model_dir = temporary_model_dir
    self._features_spec = None

  @property
  def model_dir(self) -> str:
    return self._config.model_dir

  def _refuse_unsupported(self) -> None:
    config = self._config
    refusals = (
        (config.checkpoint_input,
         'checkpoint_input=True (the graph engine restarts the input from '
         'its beginning on resume, as tf.estimator did)'),
        (config.jit_compile, 'jit_compile=True'),
        (config.remote_cluster is not None,
         'remote_cluster (standalone client)'),
    )
    for refused, what in refusals:
      if refused:
        raise UserInputError(
            f'RunConfig: {what} is not supported for TF1-style model_fns '
            '(graph engine). Turn it off.')

  def _seed(self) -> None:
    if self._config.tf_random_seed is not None:
      tf.compat.v1.set_random_seed(self._config.tf_random_seed)

  # -------------------------------------------------------------- train
  def train(self, input_fn: Callable, *, hooks: Sequence[Any] = (),
            steps: Optional[int] = None, max_steps: Optional[int] = None,
            saving_listeners: Sequence[Callable] = ()) -> None:
    """See `Estimator.train`."""
    self._refuse_unsupported()
    choice = checkpoints.choose_checkpoint(self.model_dir)
    latest = choice.path
    start_step = checkpoints.checkpoint_step(latest) if latest else 0
    if max_steps is not None and start_step >= max_steps:
      logging.info('Skipping training: checkpoint %s is already at step %d '
                   '>= max_steps=%d.', latest, start_step, max_steps)
      return
    if steps is not None:
      max_steps = start_step + steps
    placement = placement_lib.make_placement(
        self._config.train_distribute, for_training=True,
        task=self._config.task_info)
    if placement.multi_worker:
      self._refuse_finite_multi_worker_input(input_fn)
    is_chief = self._config.is_chief
    with tf.Graph().as_default(), compat.keras_names_per_graph():
      self._seed()
      data = model_lib.read_input(input_fn, self._params,
                                  role='train input_fn',
                                  shard=placement.shard)
      self._features_spec = data.features_spec
      built = model_lib.build(
          model_fn=self._model_fn, mode=ModeKeys.TRAIN,
          batches=data.next_batch, params=self._params,
          config=self._config, placement=placement)
      spec = built.spec
      saver, keep = self._saver(spec.scaffold)
      if latest is not None:
        self._check_fits(latest, spec.scaffold)
      elif self._warm_start_from:
        self._warm_start()
      summary_op = None
      # Synchronous workers must all run the same fetches at every step (a
      # summary fetched on the chief alone put the workers' collectives out
      # of step): they all write summaries, the others into a scratch
      # directory, as the eager engine's workers save into one.
      summaries_dir = (self.model_dir if is_chief else
                       tempfile.mkdtemp(prefix='estimator_rt_worker_')
                       if placement.multi_worker else None)
      if summaries_dir is not None and self._config.save_summary_steps:
        tf.compat.v1.summary.scalar('loss', built.loss)
        summary_op = tf.compat.v1.summary.merge_all()
      scaffold = tf.compat.v1.train.Scaffold(
          saver=saver, summary_op=summary_op, copy_from_scaffold=spec.scaffold)
      # Everything is built and checked: from here on model_dir is written.
      self._prepare_model_dir(choice)
      writer = session_hooks.SaverWriter(saver)
      checkpoint_saver = checkpoints.CheckpointSaver(
          checkpoint=writer, directory=self.model_dir, max_to_keep=keep,
          every_steps=self._config.save_checkpoints_steps,
          every_secs=self._config.checkpoint_every_secs,
          last_saved_step=start_step if latest else None)
      preemption_hook = session_hooks.PreemptionHook(
          agreement=placement.stop_agreement())
      all_hooks = [
          session_hooks.InputInitializerHook(data.initializer),
          session_hooks.LossGuardHook(
              loss=built.loss, every_steps=self._config.log_step_count_steps,
              last_saved_step=lambda: checkpoint_saver.last_saved_step),
          preemption_hook,
      ]
      sync = placement.sync_replicas_op()
      if sync is not None:
        all_hooks.insert(0, session_hooks.RunOnceHook(sync))
      if max_steps is not None:
        all_hooks.append(tf.compat.v1.train.StopAtStepHook(
            last_step=max_steps))
      all_hooks += session_hooks.as_session_hooks(
          hooks, max_steps=max_steps, loss=built.loss)
      all_hooks += spec.training_hooks
      if summaries_dir is not None:
        if summary_op is not None:
          all_hooks.append(tf.compat.v1.train.SummarySaverHook(
              save_steps=self._config.save_summary_steps,
              output_dir=summaries_dir, scaffold=scaffold))
        if self._config.log_step_count_steps:
          all_hooks.append(tf.compat.v1.train.StepCounterHook(
              every_n_steps=self._config.log_step_count_steps,
              output_dir=summaries_dir))
      if is_chief:
        all_hooks += spec.training_chief_hooks
        # Last, so that its final save follows every other hook's end().
        all_hooks.append(session_hooks.GuardedSaverHook(
            saver=checkpoint_saver, writer=writer,
            listeners=saving_listeners))
      if placement.between_graph:
        between_graph.prepare(placement, self._config.task_info)
      if placement.between_graph and not is_chief:
        creator = between_graph.WorkerSessionCreator(
            scaffold=scaffold, master=placement.master,
            config=placement.session_config())
      else:
        creator = ChiefSessionCreator(
            scaffold=scaffold, master=placement.master,
            config=placement.session_config(),
            checkpoint_filename_with_path=latest)
        if latest is not None:
          logging.info('Restored %s (global step %d).', latest, start_step)
      try:
        with preemption.training():
          if placement.between_graph:
            between_graph.run_steps(creator, all_hooks, built.train_op,
                                    is_chief=is_chief)
          else:
            with MonitoredSession(session_creator=creator,
                                  hooks=all_hooks) as session:
              while not session.should_stop():
                session.run(built.train_op)
      finally:
        tf.compat.v1.summary.FileWriterCache.clear()
        if summaries_dir is not None and not is_chief:
          tf.io.gfile.rmtree(summaries_dir)
    final_step = preemption_hook.global_step
    if placement.between_graph and is_chief:
      # Other tasks go on stepping while the chief saves: the step that
      # counts is the one it saved at.
      final_step = checkpoint_saver.last_saved_step
    if final_step is None:
      final_step = start_step
    if preemption_hook.signal_name:
      message = (f'Preempted ({preemption_hook.signal_name}) at global step '
                 f'{final_step}: checkpoint saved; exiting with code '
                 f'{PREEMPTED_EXIT_CODE}. Run the same command again to '
                 'resume from it.')
      logging.warning(message)
      raise PreemptedError(message, global_step=final_step)
    logging.info('Training ended at global step %d (started at %d).',
                 final_step, start_step)

  def _refuse_finite_multi_worker_input(self, input_fn: Callable) -> None:
    """Synchronous workers must all run every step: one whose input ended
    would leave the others waiting in the next all-reduce."""
    try:
      dataset = user_fns.call_input_fn(input_fn, self._params, None,
                                       role='train input_fn')
      endless = (int(dataset.cardinality()) ==
                 int(tf.data.INFINITE_CARDINALITY))
    except Exception:  # pylint: disable=broad-except
      return  # The graph build reports a broken input_fn in its words.
    if not endless:
      raise UserInputError(
          f'train input_fn {user_fns.fn_name(input_fn)} returns a finite '
          'dataset; multi_worker_mirrored training of a TF1-style model_fn '
          'needs one that repeats forever (add .repeat()): workers must all '
          'run every step, and training length comes from max_steps.')

  def _saver(self, scaffold) -> tuple:
    """The Saver checkpoints are written with, and how many to keep: a
    Scaffold's own Saver and its max_to_keep win, as in tf.estimator."""
    if scaffold is not None and scaffold.saver is not None:
      return scaffold.saver, scaffold.saver.saver_def.max_to_keep
    # Rotation is CheckpointSaver's (max_to_keep=None: the Saver deletes
    # nothing itself).
    saver = tf.compat.v1.train.Saver(sharded=True, max_to_keep=None,
                                     save_relative_paths=True)
    return saver, self._config.keep_checkpoint_max

  def _check_fits(self, checkpoint_path: str, scaffold) -> None:
    """Refuses, before anything is written, a checkpoint lacking variables
    the model_fn creates (another model's model_dir)."""
    if scaffold is not None and scaffold.saver is not None:
      return  # A user's Saver may map names; its restore will tell.
    missing = model_lib.missing_from_checkpoint(
        checkpoint_path, model_lib.default_saver_names())
    if missing:
      present = sorted(tf.train.load_checkpoint(
          checkpoint_path).get_variable_to_shape_map())
      raise IncompatibleCheckpointError(
          f'model_dir {self.model_dir!r}: checkpoint {checkpoint_path} has no '
          f'variable(s) {missing[:5]}{" ..." if len(missing) > 5 else ""} that '
          f'model_fn {user_fns.fn_name(self._model_fn)} creates (it has '
          f'{present[:8]}{" ..." if len(present) > 8 else ""}). It belongs to '
          'another model: use a new model_dir. Nothing was written.')

  def _warm_start(self) -> None:
    source = checkpoints.resolve_checkpoint(self._warm_start_from,
                                            what='warm_start_from')
    present = tf.train.load_checkpoint(source).get_variable_to_shape_map()
    names = {v.op.name: v.op.name
             for v in tf.compat.v1.trainable_variables()
             if v.op.name in present}
    if not names:
      raise UserInputError(
          f'warm_start_from={self._warm_start_from!r} has none of the '
          'model\'s trainable variables by name.')
    tf.compat.v1.train.init_from_checkpoint(source, names)
    logging.info('Warm-starting %d variables from %s.', len(names), source)

  def _prepare_model_dir(self, choice: checkpoints.Choice) -> None:
    if not self._config.is_chief:
      return
    if self._temporary_model_dir:
      os.makedirs(self.model_dir, mode=0o700, exist_ok=True)  # As mkdtemp.
    tf.io.gfile.makedirs(self.model_dir)
    checkpoints.remove_leftovers(self.model_dir)
    checkpoints.set_aside(choice.skipped, self.model_dir)

  # ----------------------------------------------------------- evaluate
  def _refuse_endless(self, input_fn: Callable, role: str) -> None:
    """An input that repeats forever would make evaluation or prediction
    never end. Its cardinality is read from an eager call of input_fn
    (datasets are lazy: nothing is read); an input_fn that only works in
    a graph is not checked."""
    try:
      dataset = user_fns.call_input_fn(input_fn, self._params, None,
                                       role=role)
      endless = (int(dataset.cardinality()) ==
                 int(tf.data.INFINITE_CARDINALITY))
    except Exception:  # pylint: disable=broad-except
      return
    if endless:
      raise UserInputError(
          f'{role.split()[0]}: the input_fn repeats forever and steps=None, '
          'so it would never end; pass steps or stop repeating.')

  def _build_eval(self, input_fn: Callable):
    data = model_lib.read_input(input_fn, self._params, role='eval input_fn')
    self._features_spec = data.features_spec
    built = model_lib.build(
        model_fn=self._model_fn, mode=ModeKeys.EVAL,
        batches=data.next_batch, params=self._params, config=self._config,
        placement=placement_lib.make_placement(
            self._config.eval_distribute, for_training=False))
    return data, built

  def check_evaluation(self, input_fn: Callable, *,
                       steps: Optional[int] = None,
                       name: Optional[str] = None) -> None:
    """See `Estimator.check_evaluation`."""
    del name
    check_count('evaluate: steps', steps, maximum=MAX_INT32)
    if steps is None:
      self._refuse_endless(input_fn, 'evaluate input_fn')
    with tf.Graph().as_default(), compat.keras_names_per_graph():
      self._build_eval(input_fn)

  def evaluate(self, input_fn: Callable, *, steps: Optional[int] = None,
               hooks: Sequence[Any] = (),
               checkpoint_path: Optional[str] = None,
               name: Optional[str] = None) -> Dict[str, Any]:
    """See `Estimator.evaluate`."""
    check_count('evaluate: steps', steps, maximum=MAX_INT32)
    path = checkpoints.checkpoint_to_read(self.model_dir, checkpoint_path)
    if steps is None:
      self._refuse_endless(input_fn, 'evaluate input_fn')
    with tf.Graph().as_default(), compat.keras_names_per_graph():
      self._seed()
      data, built = self._build_eval(input_fn)
      saver, _ = self._saver(built.spec.scaffold)
      self._check_fits(path, built.spec.scaffold)
      update = tf.group(*[pair[1] for pair in built.metrics.values()])
      final = {name: pair[0] for name, pair in built.metrics.items()}
      final['global_step'] = built.global_step
      final_hook = tf.compat.v1.train.FinalOpsHook(final)
      all_hooks = ([session_hooks.InputInitializerHook(data.initializer)] +
                   session_hooks.as_session_hooks(hooks, max_steps=None,
                                                  loss=built.loss) +
                   built.spec.evaluation_hooks + [final_hook])
      scaffold = tf.compat.v1.train.Scaffold(
          saver=saver, copy_from_scaffold=built.spec.scaffold)
      creator = ChiefSessionCreator(
          scaffold=scaffold, config=placement_lib.session_config(),
          checkpoint_filename_with_path=path)
      ran = 0
      with MonitoredSession(session_creator=creator,
                            hooks=all_hooks) as session:
        while not session.should_stop() and (steps is None or ran < steps):
          session.run(update)
          ran += 1
    results = {key: summaries.python_value(value)
               for key, value in final_hook.final_ops_values.items()}
    results['global_step'] = int(results['global_step'])
    summaries.write_eval_results(self.model_dir, name, results)
    logging.info('Evaluation of %s after %d steps: %s', path, ran,
                 ', '.join(f'{k} = {v}' for k, v in results.items()))
    return results

  # ------------------------------------------------------------ predict
  def predict(self, input_fn: Callable, *,
              predict_keys: Optional[Sequence[str]] = None,
              hooks: Sequence[Any] = (),
              checkpoint_path: Optional[str] = None,
              yield_single_examples: bool = True) -> Iterator[Any]:
    """See `Estimator.predict`."""
    path = checkpoints.checkpoint_to_read(self.model_dir, checkpoint_path)
    self._refuse_endless(input_fn, 'predict input_fn')
    with tf.Graph().as_default(), compat.keras_names_per_graph():
      self._seed()
      data = model_lib.read_input(input_fn, self._params,
                                  role='predict input_fn')
      built = model_lib.build(
          model_fn=self._model_fn, mode=ModeKeys.PREDICT,
          batches=lambda: (data.next_batch()[0], None), params=self._params,
          config=self._config, placement=placement_lib.SingleDevicePlacement())
      predictions = built.predictions
      single = not isinstance(built.spec.predictions, dict)
      if predict_keys:
        unknown = set(predict_keys) - set(predictions)
        if unknown:
          raise UserInputError(
              f'predict_keys={list(predict_keys)} names {sorted(unknown)}, '
              'which the model_fn does not predict (it predicts '
              f'{sorted(predictions)}).')
        predictions = {k: predictions[k] for k in predict_keys}
      saver, _ = self._saver(built.spec.scaffold)
      self._check_fits(path, built.spec.scaffold)
      scaffold = tf.compat.v1.train.Scaffold(
          saver=saver, copy_from_scaffold=built.spec.scaffold)
      all_hooks = ([session_hooks.InputInitializerHook(data.initializer)] +
                   session_hooks.as_session_hooks(hooks, max_steps=None,
                                                  loss=None) +
                   built.spec.prediction_hooks)
      creator = ChiefSessionCreator(
          scaffold=scaffold, config=placement_lib.session_config(),
          checkpoint_filename_with_path=path)
      with MonitoredSession(session_creator=creator,
                            hooks=all_hooks) as session:
        while not session.should_stop():
          batch = session.run(predictions)
          if not yield_single_examples:
            yield batch['predictions'] if single else batch
            continue
          size = len(next(iter(batch.values())))
          for i in range(size):
            if single:
              yield batch['predictions'][i]
            else:
              yield {k: v[i] for k, v in batch.items()}

  # ------------------------------------------------------------- export
  def export_saved_model(self, export_dir_base: str, *,
                         serving_input_receiver_fn: Optional[Callable] = None,
                         checkpoint_path: Optional[str] = None,
                         input_fn: Optional[Callable] = None) -> str:
    """See `Estimator.export_saved_model`."""
    path = checkpoints.checkpoint_to_read(self.model_dir, checkpoint_path)
    if serving_input_receiver_fn is None:
      if input_fn is not None:
        dataset = user_fns.call_input_fn(input_fn, self._params, None,
                                         role='export input_fn')
        features, _ = inputs.split_element(dataset.element_spec)
        self._features_spec = features
      if self._features_spec is None:
        raise UserInputError(
            'export_saved_model: no serving_input_receiver_fn and no input_fn '
            'to infer the serving inputs from; pass one of them.')
      receiver = export_lib.receiver_from_element_spec(self._features_spec)
      serving_input_receiver_fn = lambda: receiver
    export_dir = saved_model.export(
        model_fn=self._model_fn, params=self._params, config=self._config,
        serving_input_receiver_fn=serving_input_receiver_fn,
        checkpoint_path=path, export_dir_base=export_dir_base)
    logging.info('Exported SavedModel of %s to %s', path, export_dir)
    return export_dir
