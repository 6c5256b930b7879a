"""tf.estimator 2.15's TPU module names as estimator_rt serves them
(tpu.tpu_estimator, tpu.tpu_context, tpu._tpu_estimator_embedding, and
TensorFlow 2.15's tensorflow.python.tpu.tpu_embedding): what each does
without a TPU, against 2.15's figures where there are figures
(tests/data/tf_estimator_215/tpu_reference.json, made by
scripts/tf_estimator_215/tpu_reference.py in tf.estimator 2.15), and the
refusals of what only a TPU runs. In-process; graph pieces in their own
tf.Graph.
"""

import importlib
import inspect
import json
import signal

import pytest
import tensorflow as tf

import estimator_rt
import estimator_rt.compat
from estimator_rt.estimator.tpu import tpu_estimator as tpu
from scripts.tf_estimator_215 import tpu_reference

estimator_rt.compat.install()

_PACKAGE = 'tensorflow_estimator.python.estimator.tpu.'
tpu_estimator = importlib.import_module(_PACKAGE + 'tpu_estimator')
tpu_context = importlib.import_module(_PACKAGE + 'tpu_context')
embedding = importlib.import_module(_PACKAGE + '_tpu_estimator_embedding')

with open(tpu_reference.REFERENCE) as f:
  REFERENCE = json.load(f)


# ------------------------------------------------ 2.15's figures, reproduced


def test_tpu_contexts_answer_as_2_15s():
  assert tpu_reference.context_answers() == REFERENCE['context']


def test_tensor_packer_packs_and_restores_as_2_15s():
  assert tpu_reference.packed_features() == REFERENCE['packed']


def test_host_call_and_eval_metrics_run_on_the_cpu_as_in_2_15(tmp_path):
  """host_call's ops run at each step (its TF2 summaries of the loss), in
  training and evaluation, and eval_metrics are the evaluation's."""
  assert (tpu_reference.host_call_program(str(tmp_path)) ==
          REFERENCE['host_call'])


def test_embedding_config_spec_without_a_tpu_embeds_on_the_cpu(tmp_path):
  """The spec is validated, then unused: the TPU embedding columns embed
  on the CPU, the same variables, loss and predictions as 2.15's."""
  assert (tpu_reference.embedding_program(str(tmp_path)) ==
          REFERENCE['embedding'])


# ---------------------------------------------------------------- refusals

REFUSED = {
    'TPUInfeedOutfeedSessionHook': 'initializes the TPU system',
    'TPUInfeedOutfeedSessionHookForPrediction': 'initializes the TPU system',
    'generate_per_core_enqueue_ops_fn_for_host': 'infeed enqueue ops',
    'generate_per_host_enqueue_ops_fn_for_host': 'infeed enqueue ops',
    'generate_per_host_v2_enqueue_ops_fn_for_host': 'infeed enqueue ops',
    'generate_broadcast_enqueue_ops_fn': 'infeed enqueue ops',
    '_train_on_tpu_system': 'replicated TPU program',
    '_eval_on_tpu_system': 'replicated TPU program',
    '_predict_on_tpu_system': 'replicated TPU program',
    'call_computation': 'TPUPartitionedCall',
    'inference_on_tpu': 'TPUPartitionedCall',
    'model_fn_inference_on_tpu': 'TPUPartitionedCall',
    '_build_computation_for_inference': 'TPUPartitionedCall',
    'export_estimator_savedmodel': 'TPU inference metagraph',
}


def test_what_only_a_tpu_runs_is_refused_in_one_line_naming_it():
  for name, why in REFUSED.items():
    refused = getattr(tpu_estimator, name)
    assert why in refused.not_yet, name
    arguments = [None] * sum(
        p.default is p.empty for p in
        inspect.signature(refused).parameters.values())
    with pytest.raises(ValueError, match=f'tpu_estimator.{name}: .*{why}'):
      refused(*arguments)
  with pytest.raises(ValueError, match='infeed enqueue ops'):
    with tf.Graph().as_default():
      pipeline = tpu_estimator._InputPipeline(lambda params: None, None,
                                              _context(mode='train'))
      pipeline.generate_infeed_enqueue_ops_and_dequeue_fn()


# -------------------------------------------------------------- contexts


def _context(use_tpu=False, master='', mode='train', **tpu_config):
  config = tpu.RunConfig(master=master,
                         tpu_config=tpu.TPUConfig(**tpu_config))
  context = tpu_context._get_tpu_context(config, 16, 8, 4, use_tpu, True,
                                         None)
  with context.with_mode(mode) as with_mode:
    return with_mode


def test_a_tpu_context_on_this_cpu_machine_finds_no_tpu_cores():
  with pytest.raises(RuntimeError, match='Cannot find any TPU cores'):
    _context(use_tpu=True).is_running_on_cpu()
  # A remote master is not contacted (2.15 retried for minutes).
  with pytest.raises(ValueError, match="master 'grpc://m:1' is not queried"):
    _ = _context(use_tpu=True, master='grpc://m:1').num_cores
  with pytest.raises(RuntimeError, match='`mode` needs to be set'):
    _ = tpu_context._InternalTPUContext(tpu.RunConfig(), 1, 1, 1,
                                        False).global_batch_size


def test_tpu_estimator_holds_2_15s_context(tmp_path):
  estimator = tpu.TPUEstimator(
      lambda features, labels, mode, params: None, use_tpu=False,
      train_batch_size=16, eval_batch_size=8,
      config=tpu.RunConfig(model_dir=str(tmp_path)))
  assert isinstance(estimator._ctx, tpu_context._InternalTPUContext)  # pylint: disable=protected-access
  with estimator._ctx.with_mode('eval') as context:  # pylint: disable=protected-access
    assert (context.is_running_on_cpu(), context.batch_size_for_input_fn,
            context.batch_size_for_model_fn) == (True, 8, 8)


def test_user_tpu_context_says_where_it_may_be_read():
  internal = _context(use_tpu=True, num_shards=1)
  from_model_fn = tpu_context.TPUContext(internal, call_from_input_fn=False)
  with pytest.raises(RuntimeError, match='must not be called from model_fn'):
    from_model_fn.current_input_fn_deployment()
  from_input_fn = tpu_context.TPUContext(internal, host_id=0)
  assert from_input_fn.current_host == 0
  assert from_input_fn.tpu_host_placement_function(0) == (
      '/replica:0/task:0/device:CPU:0')
  with pytest.raises(RuntimeError, match='must not be called from input_fn'):
    _ = from_input_fn.device_assignment


def test_replica_context_records_summaries_on_replica_zero_only():
  from tensorflow.python.ops import summary_ops_v2  # pylint: disable=g-import-not-at-top
  state = summary_ops_v2._summary_state  # pylint: disable=protected-access
  before = state.is_recording_distribution_strategy
  with tf.Graph().as_default():
    replica = tpu_context._TPUEstimatorReplicaContext(tf.constant(1))
    with replica:
      recording = state.is_recording_distribution_strategy()
      with tf.compat.v1.Session() as session:
        assert not session.run(recording)
  assert state.is_recording_distribution_strategy is before


# ------------------------------------------------------------ host calls


def test_host_calls_are_validated_as_in_2_15():
  spec = tpu.TPUEstimatorSpec
  with pytest.raises(ValueError, match='host_call should be tuple or list'):
    spec('train', host_call=lambda: None)
  with pytest.raises(ValueError, match='should have two elements'):
    spec('eval', eval_metrics=(lambda x: x,))
  with pytest.raises(TypeError, match=r'host_call\[0\] should be callable'):
    spec('train', host_call=(1, []))
  with pytest.raises(RuntimeError, match='length of tensors 2 does not '
                     'match method args of the function, which takes 1'):
    spec('eval', eval_metrics=(lambda labels: {}, [1, 2]))
  with pytest.raises(TypeError, match='must be SessionRunHook instances'):
    spec('train', training_hooks=[object()])
  with tf.Graph().as_default():
    # *args: any. (2.15 also checked the spec's fields as EstimatorSpec
    # does: a TRAIN spec needs a loss and a train_op.)
    spec('train', loss=tf.constant(1.), train_op=tf.no_op(),
         host_call=(lambda *tensors: [], [1, 2, 3]))
    with pytest.raises(ValueError, match='Missing train_op'):
      spec('train', loss=tf.constant(1.))


def test_outfeed_host_call_builds_2_15s_tpu_ops_and_refuses_v1_summaries():
  host_call = tpu_estimator._OutfeedHostCall(
      _context(use_tpu=True, num_shards=1))
  with tf.Graph().as_default():
    assert host_call.create_enqueue_op() == []
    x = tf.ones([2, 3])
    host_call.record({'host_call': (lambda x: tf.compat.v1.summary.scalar(
        'x', tf.reduce_sum(x)), [x])})
    enqueue, = host_call.create_enqueue_op()
    assert enqueue.type == 'OutfeedEnqueueTuple'
    assert list(enqueue.inputs) == [x]
    with pytest.raises(ValueError, match='Please use tf.contrib.summary'):
      host_call.create_tpu_hostcall()
  every_two = tpu_estimator._OutfeedHostCall(
      _context(use_tpu=True, num_shards=1), outfeed_every_n_steps=2)
  with tf.Graph().as_default():
    every_two.record({'eval_metrics': (lambda **t: t, {'x': tf.ones([1])})})
    with pytest.raises(ValueError, match='you must pass a tensor'):
      every_two.create_enqueue_op()


def test_host_call_hook_runs_its_ops_and_flushes_tf2_writers(tmp_path):
  with tf.Graph().as_default():
    step = tf.compat.v1.train.get_or_create_global_step()
    with tf.compat.v2.summary.create_file_writer(str(tmp_path)).as_default():
      ops = tf.compat.v2.summary.scalar('seven', 7., step=5)
    hook = tpu_estimator._OutfeedHostCallHook(ops)
    increment = tf.compat.v1.assign_add(step, 1)
    with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as session:
      session.run(increment)
  # Written by the step's run (the writer initialized by the hook), and
  # flushed at the end.
  assert tpu_reference._scalars(str(tmp_path), 'seven') == {'5': 7.0}  # pylint: disable=protected-access


# -------------------------------------------------------------- hooks


def test_examples_per_second_hook_reports_examples_and_steps(tmp_path):
  hook = tpu_estimator.ExamplesPerSecondHook(batch_size=32,
                                             output_dir=str(tmp_path))
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    hook.begin()
    hook._log_and_record(elapsed_steps=10, elapsed_time=4.0, global_step=7)  # pylint: disable=protected-access
    hook._summary_writer.flush()  # pylint: disable=protected-access
  assert tpu_reference._scalars(str(tmp_path), 'examples/sec') == {'7': 80.0}  # pylint: disable=protected-access
  assert tpu_reference._scalars(str(tmp_path), 'global_step/sec') == {  # pylint: disable=protected-access
      '7': 2.5}


def test_signal_handler_hook_restores_the_programs_handler():
  mine = lambda *args: None
  previous = signal.signal(signal.SIGINT, mine)
  try:
    hook = tpu_estimator.InstallSignalHandlerHook()
    hook.before_run(None)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL
    hook.end(None)
    assert signal.getsignal(signal.SIGINT) is mine
  finally:
    signal.signal(signal.SIGINT, previous)


def test_op_queue_contexts_feed_their_thread_until_stopped():
  seen = []

  def target(queue_context):
    seen.extend(queue_context.read_iteration_counts())

  every = tpu_estimator._OpQueueContext('every', target, ())
  once = tpu_estimator._OpSignalOnceQueueContext('once', target, ())
  for count in (3, 5):
    every.send_next_batch_signal(count)
    once.send_next_batch_signal(count * 10)
  every.join()
  once.join()
  assert sorted(seen) == [3, 5, 30]
  assert tpu_estimator._SIGNAL.STOP == -2


def test_eval_and_predict_loop_hooks_set_the_loop_and_stop():
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    signal_tensor = tf.compat.v1.placeholder_with_default(False, [])
    hooks = [tpu_estimator._SetEvalIterationsHook(5),
             tpu_estimator._StoppingPredictHook(signal_tensor)]
    iterations = tpu_estimator._create_or_get_iterations_per_loop()
    one, two = tf.constant(1), tf.constant(2)
    with tf.compat.v1.train.MonitoredSession(hooks=hooks[:1]) as session:
      assert session.run(iterations) == 5
    predictions = []
    with tf.compat.v1.train.MonitoredSession(hooks=hooks[1:]) as session:
      assert session.run(iterations) == 1
      predictions.append(session.run(one))
      predictions.append(session.run(two, feed_dict={signal_tensor: True}))
      assert session.should_stop()
  assert predictions == [1]  # The stopping batch is dropped.


# ------------------------------------------------- the TPU loops' pieces


def test_while_loop_wrappers_run_their_ops_on_the_cpu():
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    counter = tf.compat.v1.get_variable('counter', initializer=0,
                                        use_resource=True)
    loop = tpu_estimator._wrap_computation_in_while_loop(
        '/cpu:0', lambda: [counter.assign_add(1)])
    batches = tf.compat.v1.data.make_one_shot_iterator(
        tf.data.Dataset.range(6))

    def op_fn():
      value = batches.get_next()
      return {'ops': [counter.assign_add(10)],
              'signals': {'stopping': tf.fill([1, 1], value >= 3)}}

    stopping_loop = (
        tpu_estimator._wrap_computation_in_while_loop_with_stopping_signals(
            '/cpu:0', op_fn))
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      tpu_estimator._create_or_get_iterations_per_loop().load(4, session)
      assert session.run(loop) == 4
      assert session.run(stopping_loop)  # The last signal: stop.
      assert session.run(counter) == 4 + 4 * 10  # Batches 0, 1, 2, 3.


def test_small_helpers_do_what_2_15s_did():
  assert tpu_estimator._is_iterable([]) and not tpu_estimator._is_iterable(1)
  assert tpu_estimator._extract_key_names({'b': 1, 'a': 2}) == ['a', 'b']
  params = {}
  tpu_estimator._add_item_to_params(params, 'batch_size', 8)
  assert params == {'batch_size': 8}
  assert tpu_estimator.BatchConfig(2, 8, 10, [4, 8]).max_enqueued_batches == 100
  assert not tpu_estimator._check_add_preemption_hook(None)
  with tf.Graph().as_default() as graph:
    step = tpu_estimator._create_global_step(graph)
    assert step.dtype == tf.int64 and step.name == 'global_step:0'
    with pytest.raises(ValueError, match='already exists'):
      tpu_estimator._create_global_step(graph)
    tf.compat.v1.get_variable('w', initializer=[1., 2.])
    sync = tpu_estimator._sync_variables_ops(_context(mode='train'))
    assert [op.type for op in sync] == ['CheckNumerics']
    eval_step = tpu_estimator._increase_eval_step_op(tf.constant(5))
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      session.run(tf.compat.v1.local_variables_initializer())
      assert session.run(eval_step) == 4
    tpu_estimator._verify_cross_hosts_transfer_size({'x': tf.ones([4])}, '')
    big = tf.compat.v1.placeholder(tf.float32, [2**16, 2**14])
    with pytest.raises(ValueError, match='larger than the protobuf limit'):
      tpu_estimator._verify_cross_hosts_transfer_size({'x': big}, 'Big.')


def test_captured_objects_and_scaffolds_as_in_2_15():
  captured = tpu_estimator._CapturedObject()
  with pytest.raises(RuntimeError, match='not captured'):
    captured.get()
  captured.capture(None)
  with pytest.raises(RuntimeError, match='capture only once'):
    captured.capture(1)
  assert tpu_estimator._get_scaffold(captured) is None
  returns_none = tpu_estimator._CapturedObject()
  returns_none.capture(lambda: None)
  with pytest.raises(ValueError, match='scaffold_fn returns None'):
    tpu_estimator._get_scaffold(returns_none)
  with tf.Graph().as_default():
    on_tpu = tf.constant(1.)
    on_tpu.op._set_attr('_tpu_replicate',  # pylint: disable=protected-access
                        tf.compat.v1.AttrValue(s=b'cluster'))
    with pytest.raises(ValueError, match='(?s)Inside scaffold_fn: Op .* '
                       'depends on TPU computation'):
      with tpu_estimator._CapturingContext('Inside scaffold_fn'):
        tf.identity(on_tpu)


def test_model_fn_wrapper_on_the_cpu_passes_what_2_15_passed():
  seen = {}

  def model_fn(features, labels, mode, params):
    seen.update(params, mode=mode)
    return tpu.TPUEstimatorSpec(mode, loss=tf.reduce_sum(features['x']),
                                eval_metrics=(lambda x: {
                                    'm': tf.compat.v1.metrics.mean(x)},
                                              [features['x']]))

  with tf.Graph().as_default():
    wrapper = tpu_estimator._ModelFnWrapper(
        model_fn, tpu.RunConfig(), {'lr': 1}, _context(mode='eval'))
    spec = wrapper.call_without_tpu({'x': tf.ones([8, 1])}, None,
                                    is_export_mode=False)
    assert isinstance(spec, estimator_rt.EstimatorSpec)
    assert set(spec.eval_metric_ops) == {'m'}
  assert seen == {'lr': 1, 'batch_size': 8, 'use_tpu': False, 'mode': 'eval'}
  no_params = tpu_estimator._ModelFnWrapper(
      lambda features, labels: None, tpu.RunConfig(), {},
      _context(mode='eval'))
  with pytest.raises(ValueError, match='does not include params argument'):
    no_params.call_without_tpu({}, None, is_export_mode=True)


def test_inputs_structure_recorder_flattens_and_restores():
  recorder = tpu_estimator._InputPipeline.InputsStructureRecorder()
  with tf.Graph().as_default():
    features = {f'f{i}': tf.fill([2, 1], float(i)) for i in range(5)}
    labels = tf.zeros([2, 1])
    recorder.validate_and_record_structure(features, labels)
    flat = recorder.flatten_features_and_labels(
        features, labels, signals={'stopping': tf.zeros([2, 1], tf.bool)})
    assert len(flat) == 3  # The 5 small features packed into one.
    restored = recorder.unflatten_features_and_labels(flat)
    assert sorted(restored.features_and_labels()[0]) == sorted(
        f'f{i}' for i in range(5))
    assert set(restored.signals()) == {'stopping'}
  partitioned = tpu_estimator._InputPipeline.InputsStructureRecorder(
      [{'a': [1, 2]}, None])
  with pytest.raises(ValueError, match='mismatched feature keys'):
    partitioned.validate_and_record_structure({'b': tf.zeros([2])}, None)


def test_inference_computation_returns_predictions_then_export_outputs():

  def model_fn(features, mode, params):
    del params
    assert mode == 'infer'
    return tpu.TPUEstimatorSpec(mode, predictions=features * 2, export_outputs={
        'out': estimator_rt.export.PredictOutput({'y': features + 1})})

  with tf.Graph().as_default():
    x = tf.ones([2])
    computation, capture = tpu_estimator._build_tpu_computation_for_inference(
        model_fn, x, None, None, {})
    tensors = computation()
    _, outputs, _, predictions = capture.get()
    with tf.compat.v1.Session() as session:
      # As 2.15's: TPUEstimatorSpec names a lone export output
      # 'serving_default' too, as EstimatorSpec does.
      assert [list(v) for v in session.run(tensors)] == [[2., 2.]] * 3
  assert list(predictions) == ['_key_when_predictions_is_a_tensor']
  assert list(outputs) == ['out', 'serving_default']


# ------------------------------------------------------- TPU embeddings


def test_tf_2_15s_tpu_embedding_configs_are_served_validated():
  from tensorflow.python.tpu import tpu_embedding  # pylint: disable=g-import-not-at-top
  table = tpu_embedding.TableConfig(10, 4)
  assert table.combiner == 'mean' and callable(table.initializer)
  with pytest.raises(ValueError, match='vocabulary_size must >= 1'):
    tpu_embedding.TableConfig(0, 4)
  with pytest.raises(ValueError, match='combiner must be'):
    tpu_embedding.TableConfig(10, 4, combiner='max')
  with pytest.raises(ValueError, match='max_sequence_length must be zero'):
    tpu_embedding.FeatureConfig('t', max_sequence_length=-1)
  with pytest.raises(ValueError, match='initial_accumulator must be'):
    tpu_embedding.AdagradParameters(0.1, initial_accumulator=0)
  with pytest.raises(ValueError, match='beta1 must be between'):
    tpu_embedding.AdamParameters(0.1, beta1=1.)
  with pytest.raises(ValueError, match='gradient  accumulation must be'):
    tpu_embedding.StochasticGradientDescentParameters(
        0.1, use_gradient_accumulation=False, clip_gradient_max=1.)
  with pytest.raises(ValueError, match='TPU embedding tables live on TPU'):
    tpu_embedding.TPUEmbedding({}, {}, 8)


def test_embedding_config_spec_is_validated_as_in_2_15():
  spec = embedding.EmbeddingConfigSpec
  column = tf.compat.v1.tpu.experimental.embedding_column(
      tf.feature_column.categorical_column_with_identity('x', 3), 2)
  with pytest.raises(ValueError, match='Exactly one of `feature_columns`'):
    spec()
  with pytest.raises(TypeError, match='All feature columns must be '
                     'supported types'):
    spec(feature_columns=[tf.feature_column.indicator_column(
        tf.feature_column.categorical_column_with_identity('y', 3))],
         optimization_parameters=embedding.AdagradParameters(0.1))
  with pytest.raises(ValueError, match='optimization_parameters must be'):
    spec(feature_columns=[column], optimization_parameters=0.1)
  made = spec(feature_columns=[column],
              optimization_parameters=embedding.AdagradParameters(0.1))
  assert (made.feature_columns, made.tensor_core_feature_columns,
          made.partition_strategy) == ([column], [], 'div')
  with pytest.raises(ValueError, match='refers to table t2'):
    spec(feature_to_config_dict={'x': embedding.tpu_embedding.FeatureConfig(
        't2')}, table_to_config_dict={
            't1': embedding.tpu_embedding.TableConfig(3, 2)})
  estimator_api = estimator_rt.compat.resolve(
      'tf.compat.v1.estimator.tpu.experimental.EmbeddingConfigSpec')
  assert estimator_api is spec is tpu_estimator.EmbeddingConfigSpec


def test_embedding_names_and_slots_match_a_cpu_run():
  assert embedding._get_table_name_from_embedding_var_name('a') == 'tbl_a'
  assert embedding._get_embedding_var_name_from_table_name('tbl_a') == 'a'
  assert embedding._get_embedding_variable_name('', 'v') == 'v'
  assert embedding._get_embedding_variable_name('s', 'v') == 's/v'
  assert tuple(embedding._get_slot_variable_names(
      's', 'v', embedding.AdamParameters(0.1))) == ('s/v/Adam/m', 's/v/Adam/v')
  assert tuple(embedding._get_slot_variable_names(
      '', 'v', embedding.FtrlParameters(0.1))) == ('v/Ftrl', 'v/Ftrl_1')
  assert embedding._get_slot_variable_names(
      's', 'v', embedding.StochasticGradientDescentParameters(0.1)) is None
  with pytest.raises(ValueError, match='has not been added'):
    embedding._get_slot_variable_names('s', 'v', object())
  column = tf.compat.v1.tpu.experimental.embedding_column(
      tf.feature_column.categorical_column_with_identity('x', 3), 2)
  assert embedding.get_tpu_embedding_columns(
      [column, tf.feature_column.numeric_column('n')]) == [column]


def test_split_inputs_and_its_tensor_helpers():
  with tf.Graph().as_default():
    features = {'x': tf.constant([[1.]])}
    assert embedding.split_inputs(_context(mode='train'), features, None,
                                  num_cores_per_batch=2) == (features, None,
                                                             [{}, {}])
    dense = tf.constant([[0, 3], [2, 0]], tf.int64)
    sparse = embedding._maybe_dense_to_sparse(dense)
    halves = embedding._split_tensor(tf.range(4), 2)
    with tf.compat.v1.Session() as session:
      assert list(session.run(sparse).values) == [3, 2]
      assert [list(h) for h in session.run(halves)] == [[0, 1], [2, 3]]
    assert embedding._split_tensor(None, 3) == [None] * 3
    with pytest.raises(ValueError, match='cannot be split into 0 pieces'):
      embedding._split_tensor(dense, 0)
    with pytest.raises(ValueError, match='with string as values'):
      embedding._get_sparse_feature_from_feature(
          'k', {'k': tf.constant(['a'])})
    with pytest.raises(ValueError, match='has dense weights'):
      embedding._get_weights_from_features('w', {'w': tf.ones([2])})
    assert embedding._get_weights_from_features(None, {}) is None


def test_embedding_config_translates_a_spec_then_refuses_the_tpu_tables():
  columns = [tf.compat.v1.tpu.experimental.embedding_column(
      tf.feature_column.categorical_column_with_identity('x', 3), 2)]
  spec = embedding.EmbeddingConfigSpec(
      feature_columns=columns,
      optimization_parameters=embedding.AdagradParameters(0.1),
      experimental_gradient_multiplier_fn=lambda step: 2.)
  config = embedding.EmbeddingConfig(spec, 8, 8, 1, 1, tpu.RunConfig())
  assert config.has_embedding_tables()
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    with tf.compat.v1.Session() as session:
      assert session.run(config.get_grad_multiplier()) == 2.
  with pytest.raises(ValueError, match='TPU embedding tables live on TPU'):
    config.get_tpu_embedding('train')
  with pytest.raises(ValueError, match='embedding_config_spec cannot be None'):
    embedding.EmbeddingConfig(None, 8, 8, 1, 1, tpu.RunConfig())
