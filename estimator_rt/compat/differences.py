"""tf.estimator names that run here with a documented difference.

`python -m estimator_rt.compat --check` reports a name that resolves to one
of these objects as "runs with a documented difference", with its line. A
name is matched by the object it resolves to, so every path to that object
(`tf.estimator.RunConfig`, `tf.compat.v1.estimator.RunConfig`,
`tensorflow_estimator.python.estimator.run_config.RunConfig`) gets the
same line. Keys are public names as a program writes them; each value is
one line, taken from docs/ (moving-from-tf-estimator.md,
canned-estimators.md, differences.md). tests/test_compat_check.py
checks that every key resolves to a real object.
"""

_ESTIMATOR = (
    'TF2 model_fns run steps_per_loop steps per compiled call; a '
    'non-finite loss or weight always stops training, unsaved; a model_dir '
    'holding another model and a TF2 model_fn\'s TRAIN/EVAL SavedModel '
    'exports are refused; '
    'the learning rate is not restored from checkpoints')
_SESSION_RUN_HOOK = (
    'runs around every step in the graph engine (TF1-style model_fns, '
    'canned estimators); with a TF2 model_fn only StopAtStepHook, '
    'NanTensorHook, StepCounterHook and hooks that override begin() only '
    'run, other SessionRunHooks are refused')
_INPUT_FN = (
    'a tf.data pipeline: with shuffle=True the order differs from 2.15\'s '
    'queues; num_threads has no effect')
_V1_CANNED = (
    'the v1 classes\' summaries have the TF2 classes\' tags, and graph op '
    'names of their partitioned variables, metrics and train op differ '
    'from 2.15\'s (checkpoints and fetched tensors match)')
_KERAS_TO_ESTIMATOR = (
    'trains in the eager engine, with the compiled loss, metrics and '
    'optimizer rebuilt as their Keras 3 namesakes (a TF1 optimizer is used '
    'itself); a subclassed model starts from its weights when built (2.15 '
    'started it fresh)')
_HEAD = (
    'loss_reduction=AUTO in a TF2 model_fn on N replicas trains as one '
    'device on the global batch (2.15 left the loss undivided)')

DIFFERENCES = {
    'tf.estimator.Estimator': _ESTIMATOR,
    'tf.estimator.RunConfig': (
        'device_fn, protocol, keep_checkpoint_every_n_hours, '
        'experimental_max_worker_delay_secs, session_creation_timeout_secs '
        'have no effect (one warning); checkpoint_save_graph_def writes '
        'graph.pbtxt and, for a TF1-style model_fn, the .meta files (a TF2 '
        'model_fn\'s checkpoints are object-based: no .meta); for a TF2 '
        'model_fn eval_distribute=None evaluates with a one-process training '
        'strategy (2.15: one device); a TF_CONFIG 2.15 accepted but the '
        'runtime cannot run (a port 0 or none, a master job with other '
        'tasks, another job, evaluator index > 0) is refused when an '
        'Estimator is made; a master alone runs locally, as 2.15 ran it'),
    'tf.estimator.EvalSpec': (
        'start_delay_secs defaults to 0 (2.15: 120); the evaluator looks for '
        'new checkpoints every 0.5 s and never holds the final one back for '
        'throttle_secs'),
    'tf.estimator.train_and_evaluate': (
        'evaluates the final checkpoint and exports it as final even when '
        'the input ends early; '
        'a ps exits when the chief is done; workers start without a delay; '
        'a legacy master job with other tasks is refused (alone, it trains '
        'and evaluates locally, as in 2.15)'),
    'tf.estimator.experimental.InMemoryEvaluatorHook': (
        'runs in the graph engine (TF1-style model_fns, canned estimators), '
        'evaluating a scratch checkpoint of the session\'s variables; refused '
        'for a TF2 model_fn (use train_and_evaluate)'),
    'tf.estimator.WarmStartSettings': (
        'all of it runs for TF1-style model_fns (graph engine); a TF2 '
        'model_fn accepts only the default selection (\'.*\', no vocabulary '
        'or name maps)'),
    'tf.compat.v1.estimator.tpu.TPUEstimator': (
        'runs as tf.estimator ran it on CPU (use_tpu=False); with '
        'use_tpu=True it is built, and training, evaluating, predicting '
        'and exporting for a TPU are refused: no TPU here'),
    'tf.compat.v1.estimator.tpu.TPUConfig': (
        'its TPU settings have no effect without a TPU'),
    'tf.compat.v1.estimator.tpu.RunConfig': (
        'a RunConfig (same differences); its TPU settings have no effect '
        'without a TPU'),
    'tf.compat.v1.estimator.inputs.numpy_input_fn': _INPUT_FN,
    'tf.compat.v1.estimator.inputs.pandas_input_fn': _INPUT_FN,
    'tf.keras.estimator.model_to_estimator': _KERAS_TO_ESTIMATOR,
    'tf.compat.v1.keras.estimator.model_to_estimator': _KERAS_TO_ESTIMATOR,
    'tensorflow_estimator.python.estimator.keras_lib.model_to_estimator':
        _KERAS_TO_ESTIMATOR,
    'tf.compat.v1.estimator.DNNClassifier': _V1_CANNED,
    'tf.compat.v1.estimator.DNNRegressor': _V1_CANNED,
    'tf.compat.v1.estimator.DNNEstimator': _V1_CANNED,
    'tf.compat.v1.estimator.LinearClassifier': _V1_CANNED,
    'tf.compat.v1.estimator.LinearRegressor': _V1_CANNED,
    'tf.compat.v1.estimator.LinearEstimator': _V1_CANNED,
    'tf.compat.v1.estimator.DNNLinearCombinedClassifier': _V1_CANNED + (
        '; the linear part\'s bias and fraction_of_zero_weights summaries '
        'are not written'),
    'tf.compat.v1.estimator.DNNLinearCombinedRegressor': _V1_CANNED + (
        '; the linear part\'s bias and fraction_of_zero_weights summaries '
        'are not written'),
    'tf.compat.v1.estimator.DNNLinearCombinedEstimator': _V1_CANNED + (
        '; the linear part\'s bias and fraction_of_zero_weights summaries '
        'are not written'),
    'tf.estimator.DNNLinearCombinedClassifier': (
        'the linear part\'s bias and fraction_of_zero_weights summaries are '
        'not written'),
    'tf.estimator.DNNLinearCombinedRegressor': (
        'the linear part\'s bias and fraction_of_zero_weights summaries are '
        'not written'),
    'tf.estimator.DNNLinearCombinedEstimator': (
        'the linear part\'s bias and fraction_of_zero_weights summaries are '
        'not written'),
    'tf.estimator.BinaryClassHead': _HEAD,
    'tf.estimator.MultiClassHead': _HEAD,
    'tf.estimator.MultiLabelHead': _HEAD,
    'tf.estimator.RegressionHead': _HEAD,
    'tf.estimator.PoissonRegressionHead': _HEAD,
    'tf.estimator.LogisticRegressionHead': _HEAD,
}
DIFFERENCES.update({
    f'tf.estimator.{hook}': _SESSION_RUN_HOOK for hook in (
        'CheckpointSaverHook', 'FeedFnHook', 'FinalOpsHook',
        'GlobalStepWaiterHook', 'LoggingTensorHook', 'ProfilerHook',
        'SessionRunHook', 'SummarySaverHook')})
